package cidrfinalizer

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// step is one row of an Index scenario: at Epoch+at, do call, and (when
// check is set) Decide(name) must give want.
type step struct {
	at   time.Duration
	do   func(x *Index)
	name string
	want want
}

func runSteps(t *testing.T, x *Index, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.do != nil {
			s.do(x)
		}
		if s.name == "" {
			continue
		}
		d, err := x.Decide(testutil.At(s.at), s.name)
		if err != nil {
			t.Fatalf("step %d: Decide(%v, %s) error %v", i, s.at, s.name, err)
		}
		if got := shape(d); !sameShape(got, s.want) {
			t.Errorf("step %d: Decide(%v, %s) = %v, want %v", i, s.at, s.name, got, s.want)
		}
	}
}

func setCIDR(c *networkingv1.ServiceCIDR) func(*Index) {
	return func(x *Index) { _ = x.SetServiceCIDR(c) }
}

func setIP(a *networkingv1.IPAddress) func(*Index) {
	return func(x *Index) { _ = x.SetIPAddress(a) }
}

func TestIndexLifecycle(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	old := e0.Add(-time.Minute)
	runSteps(t, x, []step{
		{do: setCIDR(bare(sc("a", "10.0.0.0/24"))), name: "a", want: want{action: ActionAddFinalizer, cond: condReady}},
		{do: setCIDR(ready(sc("a", "10.0.0.0/24"))), name: "a", want: want{action: ActionNone}},
		{do: setIP(ip("10.0.0.9")), name: "a", want: want{action: ActionNone}},
		{do: setCIDR(deleting(ready(sc("a", "10.0.0.0/24")), old)), name: "a",
			want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.9")}},
		// An unmanaged version of the same IPAddress no longer protects.
		{do: setIP(unmanaged("10.0.0.9")), name: "a", want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{do: setIP(ip("10.0.0.9")), name: "a", want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.9")}},
		// A new overlapping ServiceCIDR rescues the address.
		{do: setCIDR(ready(sc("b", "10.0.0.0/16"))), name: "a", want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{do: func(x *Index) { x.DeleteServiceCIDR("b") }, name: "a",
			want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.9")}},
		{do: func(x *Index) { x.DeleteIPAddress("10.0.0.9") }, name: "a",
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
	})
	if n, m := x.Len(); n != 1 || m != 0 {
		t.Errorf("Len() = %d, %d, want 1, 0", n, m)
	}
	x.DeleteServiceCIDR("a")
	x.DeleteServiceCIDR("a")      // unknown: no-op
	x.DeleteIPAddress("10.0.0.9") // unknown: no-op
	if _, err := x.Decide(e0, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Decide(deleted a) error = %v, want ErrNotFound", err)
	}
}

func TestIndexIPAddressInput(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	if err := x.SetIPAddress(nil); !errors.Is(err, ErrNilObject) {
		t.Errorf("SetIPAddress(nil) = %v, want ErrNilObject", err)
	}
	if err := x.SetServiceCIDR(nil); !errors.Is(err, ErrNilObject) {
		t.Errorf("SetServiceCIDR(nil) = %v, want ErrNilObject", err)
	}
	for _, a := range []*networkingv1.IPAddress{ip("not-an-ip"), unmanaged("10.0.0.1"), ip("fe80::1%eth0"),
		{ObjectMeta: metav1.ObjectMeta{Name: "10.0.0.2"}}} {
		if err := x.SetIPAddress(a); err != nil {
			t.Errorf("SetIPAddress(%s) = %v, want nil (ignored)", a.Name, err)
		}
	}
	if _, m := x.Len(); m != 0 {
		t.Errorf("Len() addresses = %d after ignored IPAddresses, want 0", m)
	}
	// Two names for one address are both counted; deleting one keeps the other.
	_ = x.SetIPAddress(ip("2001:db8::0001"))
	_ = x.SetIPAddress(ip("2001:db8::1"))
	_ = x.SetIPAddress(ip("2001:db8::1")) // again: no double count
	_ = x.SetServiceCIDR(deleting(ready(sc("a", "2001:db8::/64")), e0.Add(-time.Minute)))
	x.DeleteIPAddress("2001:db8::1")
	d, _ := x.Decide(e0, "a")
	if d.Action != ActionBlock || !slices.Equal(d.Blocking, addrs("2001:db8::1")) {
		t.Errorf("Decide(a) with one name left = %v, want block [2001:db8::1]", shape(d))
	}
	x.DeleteIPAddress("2001:db8::0001")
	if d, _ := x.Decide(e0, "a"); d.Action != ActionRemoveFinalizer {
		t.Errorf("Decide(a) with no name left = %v, want remove-finalizer", shape(d))
	}
}

func TestIndexMalformedServiceCIDR(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	err := x.SetServiceCIDR(sc("half", "garbage", "10.0.0.0/16"))
	if !errors.Is(err, ErrInvalidCIDR) {
		t.Fatalf("SetServiceCIDR(half) = %v, want ErrInvalidCIDR", err)
	}
	if _, err := x.Decide(e0, "half"); !errors.Is(err, ErrInvalidCIDR) {
		t.Errorf("Decide(half) error = %v, want ErrInvalidCIDR", err)
	}
	// Its valid prefix still covers, as upstream's lister-based checks do.
	_ = x.SetServiceCIDR(deleting(ready(sc("a", "10.0.0.0/24")), e0.Add(-time.Minute)))
	_ = x.SetIPAddress(ip("10.0.0.5"))
	if d, _ := x.Decide(e0, "a"); d.Action != ActionRemoveFinalizer {
		t.Errorf("Decide(a) under half = %v, want remove-finalizer", shape(d))
	}
	// Fixed: the error goes away.
	if err := x.SetServiceCIDR(sc("half", "10.0.0.0/16")); err != nil {
		t.Errorf("SetServiceCIDR(fixed half) = %v", err)
	}
	if _, err := x.Decide(e0, "half"); err != nil {
		t.Errorf("Decide(fixed half) error = %v", err)
	}
}

// TestIndexObservedDeletion: the Index remembers its first decision on a
// deleting object, so a deletionTimestamp from the future waits GracePeriod
// from then, and only the UID's own deletion keeps that memory.
func TestIndexObservedDeletion(t *testing.T) {
	future := e0.Add(time.Hour)
	x, _ := NewIndex(DefaultConfig())
	runSteps(t, x, []step{
		{do: setCIDR(deleting(ready(sc("a", "10.0.0.0/24")), future)), at: 0, name: "a",
			want: want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{at: 4 * time.Second, name: "a", want: want{action: ActionWait, requeue: 6 * time.Second, cond: condTerminating}},
		// An informer update of the same object keeps the memory.
		{do: setCIDR(deleting(withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, ReasonTerminating, MessageTerminating, e0), future)),
			at: 6 * time.Second, name: "a", want: want{action: ActionWait, requeue: 4 * time.Second}},
		{at: 10 * time.Second, name: "a", want: want{action: ActionRemoveFinalizer}},
		// A different object of the same name (new UID) starts again.
		{do: setCIDR(withUID(deleting(ready(sc("a", "10.0.0.0/24")), future), "uid-a2")), at: 20 * time.Second, name: "a",
			want: want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{at: 25 * time.Second, name: "a", want: want{action: ActionWait, requeue: 5 * time.Second, cond: condTerminating}},
		// Time going backwards counts as no time elapsed: still 5s left.
		{at: 15 * time.Second, name: "a", want: want{action: ActionWait, requeue: 5 * time.Second, cond: condTerminating}},
		{at: 30 * time.Second, name: "a", want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
	})
	// A blocked period counts as observed time: after the block the grace
	// period is already over.
	x, _ = NewIndex(DefaultConfig())
	runSteps(t, x, []step{
		{do: func(x *Index) {
			_ = x.SetServiceCIDR(deleting(ready(sc("b", "10.0.0.0/24")), future))
			_ = x.SetIPAddress(ip("10.0.0.1"))
		}, at: 0, name: "b", want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.1")}},
		{do: func(x *Index) { x.DeleteIPAddress("10.0.0.1") }, at: time.Minute, name: "b",
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
	})
}

// TestIndexRouting ports upstream's TestController_ipToCidrs and
// TestController_cidrToCidrs.
func TestIndexRouting(t *testing.T) {
	cluster := func() []*networkingv1.ServiceCIDR {
		return []*networkingv1.ServiceCIDR{
			sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"),
			sc("overlapping", "192.168.0.0/24", "2001:db2::/64"),
			sc("overlapping2", "192.168.0.0/26", "2001:db2::/96"),
			sc("unrelated", "10.0.0.0/24"),
			sc("unrelated2", "10.0.0.0/16"),
		}
	}
	ipTests := []struct {
		name  string
		cidrs []*networkingv1.ServiceCIDR
		ip    *networkingv1.IPAddress
		want  []string
	}{
		{"empty", nil, ip("192.168.0.23"), nil},
		{"one CIDR", []*networkingv1.ServiceCIDR{sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"), sc("unrelated", "10.0.0.0/24")},
			ip("192.168.0.23"), []string{"kubernetes"}},
		{"two equal CIDR", []*networkingv1.ServiceCIDR{sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"),
			sc("overlapping", "192.168.0.0/24", "2001:db2::/96"), sc("unrelated", "10.0.0.0/24")},
			ip("192.168.0.23"), []string{"kubernetes", "overlapping"}},
		{"three CIDR", cluster(), ip("192.168.0.23"), []string{"kubernetes", "overlapping", "overlapping2"}},
		{"IPv4 subnet address", cluster(), ip("192.168.0.0"), nil},
		{"IPv4 broadcast of the /26", cluster(), ip("192.168.0.63"), []string{"kubernetes", "overlapping"}},
		{"IPv6 subnet address", cluster(), ip("2001:db2::"), nil},
		{"IPv6 all-ones of the /64", cluster(), ip("2001:0db2::ffff:ffff:ffff:ffff"), []string{"kubernetes", "overlapping"}},
		{"deleting ServiceCIDRs are included", append(cluster(), deleting(sc("gone", "192.168.0.0/16"), e0)),
			ip("192.168.0.23"), []string{"gone", "kubernetes", "overlapping", "overlapping2"}},
		{"unmanaged", cluster(), unmanaged("192.168.0.23"), nil},
		{"unparsable", cluster(), ip("192.168.0.x"), nil},
		{"nil", cluster(), nil, nil},
	}
	for _, tc := range ipTests {
		x := newIndexWith(t, DefaultConfig(), tc.cidrs, nil)
		if got := x.ContainingServiceCIDRs(tc.ip); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ContainingServiceCIDRs() = %v, want %v", tc.name, got, tc.want)
		}
	}
	cidrTests := []struct {
		name  string
		cidrs []*networkingv1.ServiceCIDR
		cidr  *networkingv1.ServiceCIDR
		want  []string
	}{
		{"empty", nil, sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"), nil},
		{"one CIDR", []*networkingv1.ServiceCIDR{sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"), sc("unrelated", "10.0.0.0/24")},
			sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"), []string{"kubernetes"}},
		{"three CIDR", cluster(), sc("kubernetes", "192.168.0.0/24", "2001:db2::/64"), []string{"kubernetes", "overlapping", "overlapping2"}},
		{"IPv6 only", cluster(), sc("new", "2001:db2::/120"), []string{"kubernetes", "overlapping", "overlapping2"}},
		{"larger", cluster(), sc("new", "10.0.0.0/8"), []string{"unrelated", "unrelated2"}},
		{"malformed is skipped", cluster(), sc("new", "garbage", "10.0.0.0/28"), []string{"unrelated", "unrelated2"}},
		{"nil", cluster(), nil, nil},
	}
	for _, tc := range cidrTests {
		x := newIndexWith(t, DefaultConfig(), tc.cidrs, nil)
		if got := x.OverlappingServiceCIDRs(tc.cidr); !slices.Equal(got, tc.want) {
			t.Errorf("%s: OverlappingServiceCIDRs() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestIndexDecideAllocs pins the zero-allocation guarantee of Index.Decide
// when nothing blocks and no condition needs writing, and of SetIPAddress
// for an address the Index already holds.
func TestIndexDecideAllocs(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	_ = x.SetServiceCIDR(ready(sc("live", "10.0.0.0/16")))
	terminating := func(c *networkingv1.ServiceCIDR) *networkingv1.ServiceCIDR {
		return withReady(c, metav1.ConditionFalse, ReasonTerminating, MessageTerminating, e0)
	}
	_ = x.SetServiceCIDR(deleting(terminating(sc("waiting", "10.0.0.0/16", "2001:db8::/64")), e0))
	_ = x.SetServiceCIDR(deleting(terminating(sc("done", "10.0.0.0/24")), e0.Add(-time.Hour)))
	_ = x.SetServiceCIDR(ready(sc("c1", "10.0.0.0/17")))
	_ = x.SetServiceCIDR(ready(sc("c2", "10.0.128.0/17")))
	_ = x.SetServiceCIDR(ready(sc("c3", "2001:db8::/64")))
	for i := range 1000 {
		_ = x.SetIPAddress(ip(fmt.Sprintf("10.0.%d.%d", i/200, 1+i%200)))
		_ = x.SetIPAddress(ip(fmt.Sprintf("2001:db8::%x", i+1)))
	}
	now := testutil.At(time.Second)
	for _, name := range []string{"live", "waiting", "done"} {
		d, err := x.Decide(now, name)
		if err != nil || d.Condition != nil || len(d.Blocking) != 0 {
			t.Fatalf("Decide(%s) = %v, %v; want no condition, nothing blocking", name, shape(d), err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = x.Decide(now, name) }); n != 0 {
			t.Errorf("Decide(%s) allocates %v times, want 0", name, n)
		}
	}
	same := ip("10.0.0.7")
	if n := testing.AllocsPerRun(100, func() { _ = x.SetIPAddress(same) }); n != 0 {
		t.Errorf("SetIPAddress(known address) allocates %v times, want 0", n)
	}
	churn := ip("10.0.9.9")
	if n := testing.AllocsPerRun(100, func() { _ = x.SetIPAddress(churn); x.DeleteIPAddress(churn.Name) }); n != 0 {
		t.Errorf("SetIPAddress+DeleteIPAddress churn allocates %v times, want 0", n)
	}
}

// TestIndexConcurrent feeds and queries one Index from several goroutines;
// run with -race.
func TestIndexConcurrent(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				name := fmt.Sprintf("c%d", i%5)
				switch (g + i) % 6 {
				case 0:
					_ = x.SetServiceCIDR(deleting(sc(name, fmt.Sprintf("10.%d.0.0/16", i%5)), e0))
				case 1:
					_ = x.SetIPAddress(ip(fmt.Sprintf("10.%d.0.%d", i%5, 1+i%100)))
				case 2:
					x.DeleteIPAddress(fmt.Sprintf("10.%d.0.%d", i%5, 1+(i+50)%100))
				case 3:
					_, _ = x.Decide(testutil.At(time.Duration(i)*time.Second), name)
				case 4:
					_ = x.ContainingServiceCIDRs(ip(fmt.Sprintf("10.%d.0.9", i%5)))
					_ = x.OverlappingServiceCIDRs(sc("q", "10.0.0.0/8"))
				case 5:
					x.DeleteServiceCIDR(name)
				}
			}
		}()
	}
	wg.Wait()
}
