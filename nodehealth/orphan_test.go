package nodehealth

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type orphanStep struct {
	at   float64
	node *v1.Node
	e    Existence
	want string
}

func orphanSummary(d OrphanDecision) string {
	verb := "keep"
	if d.Delete {
		verb = "delete"
	}
	return fmt.Sprintf("%s %s next=%s notFound=%d", verb, d.Reason, rel(d.NextCheck), d.NotFound)
}

func runOrphan(t *testing.T, o *OrphanTracker, steps []orphanStep) {
	t.Helper()
	for i, s := range steps {
		if got := orphanSummary(o.Observe(sec(s.at), s.node, s.e)); got != s.want {
			t.Errorf("step %d: Observe(%gs, %s, %v) = %q, want %q", i, s.at, nodeDesc(s.node), s.e, got, s.want)
		}
	}
}

func newOrphan(t *testing.T, p OrphanPolicy) *OrphanTracker {
	t.Helper()
	o, err := NewOrphanTracker(p)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

var (
	notReady  = readyNode("n1", U, 0, 0)
	readyOne  = readyNode("n1", T, 0, 0)
	noStatus  = mkNode("n1", 0)
	notFound  = ExistenceNotFound
	unknown   = ExistenceUnknown
	exists    = ExistenceExists
	strictPol = OrphanPolicy{Confirmations: 3, MinNotFoundAge: 30 * time.Second, UnknownBackoff: 5 * time.Second, MaxUnknownBackoff: 20 * time.Second}
)

func TestOrphanDefaultPolicy(t *testing.T) {
	want := OrphanPolicy{Confirmations: 1, UnknownBackoff: 5 * time.Second, MaxUnknownBackoff: 5 * time.Minute,
		UninitializedNodeDelay: time.Minute}
	if got := DefaultOrphanPolicy(); got != want {
		t.Errorf("DefaultOrphanPolicy() = %+v, want %+v", got, want)
	}
	// Upstream parity: the first NotFound answer deletes a node that is not
	// Ready (a missing Ready condition counts as not Ready).
	runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
		{0, notReady, notFound, "delete NotFound next=0s notFound=1"},
	})
	runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
		{0, noStatus, notFound, "delete NotFound next=0s notFound=1"},
	})
}

func TestOrphanReadyNodeNeverDeleted(t *testing.T) {
	p := strictPol
	p.MinNotFoundAge = 0
	p.Confirmations = 2
	runOrphan(t, newOrphan(t, p), []orphanStep{
		{0, readyOne, notFound, "keep NodeReady next=0s notFound=0"},
		{5, readyOne, notFound, "keep NodeReady next=5s notFound=0"},
		{10, notReady, notFound, "keep AwaitingConfirmations next=10s notFound=1"},
		// Ready again: the count is reset, whatever the cloud says.
		{15, readyOne, notFound, "keep NodeReady next=15s notFound=0"},
		{20, notReady, notFound, "keep AwaitingConfirmations next=20s notFound=1"},
		{25, notReady, notFound, "delete NotFound next=25s notFound=2"},
		{30, readyOne, notFound, "keep NodeReady next=30s notFound=0"},
	})
}

func TestOrphanConfirmationsAgeAndBackoff(t *testing.T) {
	runOrphan(t, newOrphan(t, strictPol), []orphanStep{
		{0, notReady, notFound, "keep AwaitingConfirmations next=0s notFound=1"},
		// Unknown neither counts nor resets; it backs off 5s, 10s, 20s, 20s.
		{5, notReady, unknown, "keep CloudUnknown next=10s notFound=1"},
		{10, notReady, unknown, "keep CloudUnknown next=20s notFound=1"},
		{20, notReady, unknown, "keep CloudUnknown next=40s notFound=1"},
		{40, notReady, unknown, "keep CloudUnknown next=60s notFound=1"},
		{60, notReady, notFound, "keep AwaitingConfirmations next=60s notFound=2"},
		// A definitive answer reset the backoff.
		{61, notReady, unknown, "keep CloudUnknown next=66s notFound=2"},
		{65, notReady, notFound, "delete NotFound next=65s notFound=3"},
		// The record stays until Forget: a failed deletion is decided again.
		{70, notReady, notFound, "delete NotFound next=70s notFound=4"},
	})
}

func TestOrphanMinNotFoundAge(t *testing.T) {
	runOrphan(t, newOrphan(t, OrphanPolicy{Confirmations: 1, MinNotFoundAge: time.Minute}), []orphanStep{
		{0, notReady, notFound, "keep AwaitingAge next=60s notFound=1"},
		{30, notReady, notFound, "keep AwaitingAge next=60s notFound=2"},
		{59.9, notReady, notFound, "keep AwaitingAge next=60s notFound=3"},
		{60, notReady, notFound, "delete NotFound next=60s notFound=4"},
	})
	// Confirmations and age together: the age is counted from the first
	// NotFound, the count needs every answer.
	runOrphan(t, newOrphan(t, OrphanPolicy{Confirmations: 3, MinNotFoundAge: 10 * time.Second}), []orphanStep{
		{0, notReady, notFound, "keep AwaitingConfirmations next=0s notFound=1"},
		{20, notReady, notFound, "keep AwaitingConfirmations next=20s notFound=2"},
		{21, notReady, notFound, "delete NotFound next=21s notFound=3"},
	})
}

func TestOrphanExistsResets(t *testing.T) {
	o := newOrphan(t, OrphanPolicy{Confirmations: 2})
	runOrphan(t, o, []orphanStep{
		{0, notReady, notFound, "keep AwaitingConfirmations next=0s notFound=1"},
		{5, notReady, exists, "keep Exists next=5s notFound=0"},
		{10, notReady, notFound, "keep AwaitingConfirmations next=10s notFound=1"},
		{15, notReady, notFound, "delete NotFound next=15s notFound=2"},
	})
	if _, ok := o.NextCheck("n1"); !ok {
		t.Errorf("NextCheck(n1) after a Delete decision: no record, want one")
	}
	o.Forget("n1")
	if next, ok := o.NextCheck("n1"); ok {
		t.Errorf("NextCheck(n1) after Forget = %v, true; want false", next)
	}
	runOrphan(t, o, []orphanStep{
		{20, notReady, notFound, "keep AwaitingConfirmations next=20s notFound=1"},
	})
}

func TestOrphanNextCheck(t *testing.T) {
	o := newOrphan(t, strictPol)
	if _, ok := o.NextCheck("n1"); ok {
		t.Errorf("NextCheck(unknown node) = _, true; want false")
	}
	o.Observe(sec(0), notReady, unknown)
	o.Observe(sec(5), notReady, unknown)
	if next, ok := o.NextCheck("n1"); !ok || !next.Equal(sec(15)) {
		t.Errorf("NextCheck(n1) = %s, %v; want 15s, true", rel(next), ok)
	}
	o.Observe(sec(6), notReady, exists) // no record kept for existing instances
	if _, ok := o.NextCheck("n1"); ok {
		t.Errorf("NextCheck(n1) after Exists = _, true; want false")
	}
}

func TestOrphanBadInput(t *testing.T) {
	o := newOrphan(t, DefaultOrphanPolicy())
	runOrphan(t, o, []orphanStep{
		{0, nil, notFound, "keep InvalidNode next=0s notFound=0"},
		{0, readyNode("", U, 0, 0), notFound, "keep InvalidNode next=0s notFound=0"},
		// An Existence outside the constants is Unknown.
		{0, notReady, Existence(7), "keep CloudUnknown next=5s notFound=0"},
		// Time going backwards is no time elapsed.
		{100, notReady, unknown, "keep CloudUnknown next=110s notFound=0"},
		{50, notReady, unknown, "keep CloudUnknown next=120s notFound=0"},
	})
	// Backoff doubling never overflows.
	o = newOrphan(t, OrphanPolicy{Confirmations: 1, UnknownBackoff: time.Nanosecond, MaxUnknownBackoff: math.MaxInt64})
	prev := time.Duration(0)
	for i := 0; i < 100; i++ {
		d := o.Observe(sec(0), notReady, unknown)
		if b := d.NextCheck.Sub(sec(0)); b < prev || b < 0 {
			t.Fatalf("Unknown #%d: backoff %v after %v, want non-decreasing and non-negative", i, b, prev)
		} else {
			prev = b
		}
	}
}

func TestNewOrphanTrackerValidation(t *testing.T) {
	tests := []struct {
		p       OrphanPolicy
		wantErr bool
	}{
		{DefaultOrphanPolicy(), false},
		{OrphanPolicy{Confirmations: 1}, false},
		{OrphanPolicy{}, true},
		{OrphanPolicy{Confirmations: -1}, true},
		{OrphanPolicy{Confirmations: 1, MinNotFoundAge: -1}, true},
		{OrphanPolicy{Confirmations: 1, UnknownBackoff: -1}, true},
		{OrphanPolicy{Confirmations: 1, UnknownBackoff: time.Minute, MaxUnknownBackoff: time.Second}, true},
		{OrphanPolicy{Confirmations: 1, UninitializedNodeDelay: -1}, true},
	}
	for _, tt := range tests {
		o, err := NewOrphanTracker(tt.p)
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrInvalidConfig)) || (err == nil) == (o == nil) {
			t.Errorf("NewOrphanTracker(%+v) = %v, %v; want error %v", tt.p, o, err, tt.wantErr)
		}
	}
}

// Regression for #95288 (Azure VMSS): a provider answering "parent scale
// set not found" for an instance whose group was deleted. Upstream read it
// as an unknown error and never deleted the node; here it is NotFound.
func TestIssue95288ParentNotFoundDeletesNode(t *testing.T) {
	providerErr := fmt.Errorf("azure: GetNodeNameByProviderID: list VMSS VMs: %w",
		fmt.Errorf("HTTP 404 ParentResourceNotFound: %w", ErrParentNotFound))
	e := ClassifyExistence(false, providerErr)
	if e != ExistenceNotFound {
		t.Fatalf("ClassifyExistence(false, %v) = %v, want NotFound", providerErr, e)
	}
	runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
		{0, notReady, e, "delete NotFound next=0s notFound=1"},
	})
}

// Regression for #95288, the other half: a failing cloud (throttling) is
// Unknown, never deletes, and is retried with exponential backoff instead of
// every 5s forever (each retry there forced another List, which kept the
// whole subscription throttled).
func TestIssue95288CloudErrorsBackOff(t *testing.T) {
	throttled := errors.New("HTTP 429 TooManyRequests")
	o := newOrphan(t, DefaultOrphanPolicy())
	now := sec(0)
	var gaps []time.Duration
	queries := 0
	for now.Before(sec(3600)) {
		queries++
		d := o.Observe(now, notReady, ClassifyExistence(false, throttled))
		if d.Delete || d.Reason != OrphanCloudUnknown {
			t.Fatalf("Observe(%s, throttled) = %s, want keep CloudUnknown", rel(now), orphanSummary(d))
		}
		gaps = append(gaps, d.NextCheck.Sub(now))
		now = d.NextCheck
	}
	want := "[5s 10s 20s 40s 1m20s 2m40s 5m0s 5m0s]"
	if got := fmt.Sprint(gaps[:8]); got != want {
		t.Errorf("backoff gaps = %s, want %s", got, want)
	}
	if queries > 20 {
		t.Errorf("%d cloud queries in an hour, want at most 20 (upstream: 720)", queries)
	}
}

func TestOrphanTrackerConcurrentUse(t *testing.T) {
	o := newOrphan(t, strictPol)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				name := fmt.Sprintf("n%d", (g+i)%4)
				n := readyNode(name, []v1.ConditionStatus{T, U, F}[i%3], 0, 0)
				d := o.Observe(sec(float64(i)), n, Existence(i%3))
				if d.Delete && n.Status.Conditions[0].Status == T {
					t.Errorf("Observe(Ready node) = Delete")
				}
				o.NextCheck(name)
				if i%40 == 0 {
					o.Forget(name)
				}
			}
		}(g)
	}
	wg.Wait()
}

// withUID returns a copy of n with the given UID.
func withUID(n *v1.Node, uid types.UID) *v1.Node {
	n = n.DeepCopy()
	n.UID = uid
	return n
}

// A node deleted and created again under the same name (its Forget missed,
// e.g. the delete event fell into a watch gap) must not inherit the old
// object's NotFound answers: counted by name, its first NotFound deleted it.
func TestOrphanRecreatedNodeStartsAfresh(t *testing.T) {
	p := strictPol
	p.MinNotFoundAge = 0
	old, recreated := withUID(notReady, "uid-old"), withUID(notReady, "uid-new")
	runOrphan(t, newOrphan(t, p), []orphanStep{
		{0, old, notFound, "keep AwaitingConfirmations next=0s notFound=1"},
		{5, old, notFound, "keep AwaitingConfirmations next=5s notFound=2"},
		{10, recreated, notFound, "keep AwaitingConfirmations next=10s notFound=1"},
		{15, recreated, notFound, "keep AwaitingConfirmations next=15s notFound=2"},
		{20, recreated, notFound, "delete NotFound next=20s notFound=3"},
	})
	// The Unknown backoff is per object too.
	o := newOrphan(t, strictPol)
	runOrphan(t, o, []orphanStep{
		{0, old, unknown, "keep CloudUnknown next=5s notFound=0"},
		{5, old, unknown, "keep CloudUnknown next=15s notFound=0"},
		{15, recreated, unknown, "keep CloudUnknown next=20s notFound=0"},
	})
}

// uninitializedNode is a node the cloud node controller has not initialized
// yet: no providerID, the uninitialized taint, created at created seconds.
func uninitializedNode(created float64) *v1.Node {
	n := mkNode("n1", created, rc(U, 0, 0))
	n.Spec.Taints = []v1.Taint{{Key: TaintUninitialized, Value: "true", Effect: v1.TaintEffectNoSchedule}}
	return n
}

// Upstream MonitorNodes skips a node that still has the uninitialized taint
// and no providerID while it is younger than one minute.
func TestOrphanUninitializedNodeDelay(t *testing.T) {
	n := uninitializedNode(0)
	withID := n.DeepCopy()
	withID.Spec.ProviderID = "aws:///eu-west-1a/i-0123"
	otherEffect := n.DeepCopy()
	otherEffect.Spec.Taints[0].Effect = v1.TaintEffectNoExecute
	runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
		{0, n, notFound, "keep Uninitialized next=60s notFound=0"},
		{59, n, notFound, "keep Uninitialized next=60s notFound=0"},
		{60, n, notFound, "delete NotFound next=60s notFound=1"},
	})
	for _, tt := range []struct {
		name string
		node *v1.Node
	}{{"with a providerID", withID}, {"NoExecute taint of that key", otherEffect}, {"no taint", notReady}} {
		t.Run(tt.name, func(t *testing.T) {
			runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
				{0, tt.node, notFound, "delete NotFound next=0s notFound=1"},
			})
		})
	}
	// Zero delay: judged at once.
	p := DefaultOrphanPolicy()
	p.UninitializedNodeDelay = 0
	runOrphan(t, newOrphan(t, p), []orphanStep{
		{0, n, notFound, "delete NotFound next=0s notFound=1"},
	})
	// A Ready node is Ready first, as upstream.
	ready := n.DeepCopy()
	ready.Status.Conditions[0].Status = T
	runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
		{0, ready, notFound, "keep NodeReady next=0s notFound=0"},
	})
	// A creation time in the future (clock skew) or zero counts from the
	// first Observe: the skip lasts one delay, not until the clock catches up.
	for _, created := range []*v1.Node{uninitializedNode(3600), func() *v1.Node {
		z := uninitializedNode(0)
		z.CreationTimestamp = metav1.Time{}
		return z
	}()} {
		runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
			{10, created, notFound, "keep Uninitialized next=70s notFound=0"},
			{69, created, notFound, "keep Uninitialized next=70s notFound=0"},
			{70, created, notFound, "delete NotFound next=70s notFound=1"},
		})
	}
}

// TestOrphanUninitializedDelayRunsOnceAfterExists: the delay of an
// uninitialized node with a zero or future CreationTimestamp counts from its
// first Observe. An Exists answer used to drop the record and with it the
// start of the delay, so the next Observe started a new delay and a NotFound
// answer after it waited another full minute (after every Exists answer).
func TestOrphanUninitializedDelayRunsOnceAfterExists(t *testing.T) {
	zero := uninitializedNode(0)
	zero.CreationTimestamp = metav1.Time{}
	for _, tt := range []struct {
		name string
		node *v1.Node
	}{{"zero CreationTimestamp", zero}, {"future CreationTimestamp", uninitializedNode(3600)}} {
		t.Run(tt.name, func(t *testing.T) {
			runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
				{10, tt.node, exists, "keep Uninitialized next=70s notFound=0"},
				{70, tt.node, exists, "keep Exists next=70s notFound=0"},
				{75, tt.node, exists, "keep Exists next=75s notFound=0"},
				{80, tt.node, notFound, "delete NotFound next=80s notFound=1"},
			})
			// Unknown answers and their backoff are still reset by Exists.
			runOrphan(t, newOrphan(t, DefaultOrphanPolicy()), []orphanStep{
				{10, tt.node, unknown, "keep Uninitialized next=70s notFound=0"},
				{70, tt.node, unknown, "keep CloudUnknown next=75s notFound=0"},
				{75, tt.node, unknown, "keep CloudUnknown next=85s notFound=0"},
				{85, tt.node, exists, "keep Exists next=85s notFound=0"},
				{86, tt.node, unknown, "keep CloudUnknown next=91s notFound=0"},
			})
		})
	}
	// A node once initialized no longer keeps a record after Exists.
	init := zero.DeepCopy()
	init.Spec.ProviderID = "aws:///eu-west-1a/i-0123"
	o := newOrphan(t, DefaultOrphanPolicy())
	runOrphan(t, o, []orphanStep{
		{10, zero, exists, "keep Uninitialized next=70s notFound=0"},
		{70, init, exists, "keep Exists next=70s notFound=0"},
	})
	if at, ok := o.NextCheck("n1"); ok {
		t.Errorf("NextCheck(n1) after Exists of an initialized node = %s, true; want no record", rel(at))
	}
}
