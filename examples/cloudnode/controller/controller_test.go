package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

var everything = labels.Everything()

// fixture is a controller on a fake clientset and a fake cloud, both on one
// fake clock.
type fixture struct {
	t      testing.TB
	ctx    context.Context
	clock  *clocktesting.FakeClock
	client *fake.Clientset
	cloud  *fakecloud.Cloud
	c      *controller.Controller
	rec    *record.FakeRecorder

	mu      sync.Mutex
	deletes []k8stesting.DeleteAction
}

// node is a node of scale set set, Ready or not.
func node(name, set string, ready v1.ConditionStatus) *v1.Node {
	n := testutil.Node(name, testutil.Epoch)
	n.UID = types.UID(name + "-uid1")
	n.ResourceVersion = "1" // the fake clientset keeps it; taint patches carry it
	n.Spec.ProviderID = fakecloud.ProviderID(set, name)
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}
	return n
}

func newFixture(t testing.TB, cfg controller.Config, cloudCfg fakecloud.Config, nodes ...*v1.Node) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(testutil.Epoch)}
	f.ctx = klog.NewContext(context.Background(), klog.Logger{})
	objs := make([]runtime.Object, 0, len(nodes))
	f.cloud = fakecloud.New(f.clock, cloudCfg)
	for _, n := range nodes {
		objs = append(objs, n)
		if n.Spec.ProviderID == "" {
			continue
		}
		set, id, err := fakecloud.ParseProviderID(n.Spec.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.cloud.AddInstance(set, id, n.Name, "zone-1"); err != nil {
			t.Fatal(err)
		}
	}
	f.client = fake.NewClientset(objs...)
	f.client.PrependReactor("delete", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		f.deletes = append(f.deletes, a.(k8stesting.DeleteAction))
		f.mu.Unlock()
		return false, nil, nil
	})
	if cfg.Recorder == nil {
		f.rec = record.NewFakeRecorder(100)
		cfg.Recorder = f.rec
	}
	c, err := controller.New(f.client, &fakecloud.Provider{API: f.cloud}, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func testConfig() controller.Config {
	cfg := controller.DefaultConfig()
	cfg.ConflictBackoff.Duration = time.Millisecond
	return cfg
}

// at moves the clock to Epoch + d.
func (f *fixture) at(d time.Duration) { f.clock.SetTime(testutil.At(d)) }

// pass waits until the cache matches the API, then makes a pass at Epoch + d.
func (f *fixture) pass(d time.Duration) {
	f.t.Helper()
	f.settle()
	f.at(d)
	f.c.Pass(f.ctx)
}

// settle waits until the controller's cache holds exactly the nodes of the
// API, with the same UID and taints (the informer is asynchronous).
func (f *fixture) settle() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f.inSync() {
		if time.Now().After(deadline) {
			f.t.Fatal("the controller's node cache did not catch up")
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *fixture) inSync() bool {
	list, err := f.client.CoreV1().Nodes().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cached, _ := f.c.Lister().List(everything)
	if len(cached) != len(list.Items) {
		return false
	}
	for i := range list.Items {
		want := &list.Items[i]
		got, err := f.c.Lister().Get(want.Name)
		if err != nil || got.UID != want.UID || !slices.Equal(got.Spec.Taints, want.Spec.Taints) ||
			!slices.Equal(got.Status.Conditions, want.Status.Conditions) {
			return false
		}
	}
	return true
}

// names returns the names of the nodes in the API, sorted.
func (f *fixture) names() []string {
	list, err := f.client.CoreV1().Nodes().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) get(name string) *v1.Node {
	f.t.Helper()
	n, err := f.client.CoreV1().Nodes().Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) setReady(name string, s v1.ConditionStatus) {
	f.t.Helper()
	n := f.get(name).DeepCopy()
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: s}}
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// events drains the recorded Events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasShutdownTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintNodeShutdown && t.Effect == v1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// incidentNodes: a1, a2, a3 in set A (a3 Ready), b1, b2 in set B, the
// others NotReady (their kubelets stopped with the instances).
func incidentNodes() []*v1.Node {
	return []*v1.Node{
		node("a1", "A", v1.ConditionFalse), node("a2", "A", v1.ConditionUnknown), node("a3", "A", v1.ConditionTrue),
		node("b1", "B", v1.ConditionFalse), node("b2", "B", v1.ConditionUnknown),
	}
}

// TestScaleSetDeleted is the incident: set A is deleted (its instances at
// once, the set after setDelay). A's NotReady nodes are deleted once two
// NotFound answers span 10s, whether the cloud answers "instance not found"
// (set still there) or "parent not found" (set gone); B's nodes stay; the
// Ready a3 stays until it is not Ready, then goes the same way. Each
// deletion records upstream's DeletingNode Event and carries a UID
// precondition.
func TestScaleSetDeleted(t *testing.T) {
	for _, setDelay := range []time.Duration{time.Hour, 0} {
		t.Run(fmt.Sprintf("setDelay=%v", setDelay), func(t *testing.T) {
			cfg := testConfig()
			cfg.Policy.Confirmations, cfg.Policy.MinNotFoundAge = 2, 10*time.Second
			f := newFixture(t, cfg, fakecloud.Config{SetDeleteDelay: setDelay}, incidentNodes()...)
			f.cloud.DeleteScaleSet("A")
			all := []string{"a1", "a2", "a3", "b1", "b2"}
			for _, step := range []struct {
				at   time.Duration
				want []string
			}{
				{0, all},               // 1st NotFound
				{5 * time.Second, all}, // 2nd, 5s < 10s
				{9 * time.Second, all}, // before NextCheck: not asked
				{10 * time.Second, []string{"a3", "b1", "b2"}}, // 3rd: a1, a2 deleted
				{15 * time.Second, []string{"a3", "b1", "b2"}},
			} {
				f.pass(step.at)
				if got := f.names(); !slices.Equal(got, step.want) {
					t.Fatalf("after the pass at %v: nodes %v, want %v", step.at, got, step.want)
				}
			}
			st := f.c.Stats()
			// a1, a2: 3 NotFound each (not asked at 9s); b1, b2: 5 Exists each.
			if got, want := st.ExistsCalls, [3]int{0, 10, 6}; got != want {
				t.Errorf("ExistsCalls = %v, want %v", got, want)
			}
			if st.NodesDeleted != 2 {
				t.Errorf("NodesDeleted = %d, want 2", st.NodesDeleted)
			}
			f.setReady("a3", v1.ConditionFalse)
			f.pass(20 * time.Second)
			f.pass(30 * time.Second)
			if got, want := f.names(), []string{"b1", "b2"}; !slices.Equal(got, want) {
				t.Fatalf("after a3 stopped being Ready: nodes %v, want %v", got, want)
			}
			for _, d := range f.deletes {
				p := d.GetDeleteOptions().Preconditions
				if p == nil || p.UID == nil || string(*p.UID) != d.GetName()+"-uid1" {
					t.Errorf("delete of %s: preconditions %+v, want UID %s-uid1", d.GetName(), p, d.GetName())
				}
			}
			var want []string
			for _, n := range []string{"a1", "a2", "a3"} {
				want = append(want, "Normal DeletingNode Deleting node "+n+" because it does not exist in the cloud provider")
			}
			if got := f.events(); !slices.Equal(got, want) {
				t.Errorf("events = %q, want %q", got, want)
			}
		})
	}
}

// TestUpstreamStyleLeavesNodesBehind: with upstream's decision the nodes
// of a gone scale set stay forever (parent not found is an error, and an
// error means "keep"), and are asked about every period.
func TestUpstreamStyleLeavesNodesBehind(t *testing.T) {
	cfg := testConfig()
	cfg.UpstreamStyle = true
	f := newFixture(t, cfg, fakecloud.Config{}, incidentNodes()...)
	f.cloud.DeleteScaleSet("A")
	for i := range 12 {
		f.pass(time.Duration(i) * 5 * time.Second)
	}
	if got, want := f.names(), []string{"a1", "a2", "a3", "b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v (none deleted)", got, want)
	}
	// a1, a2 every pass (NotFound as nodehealth classifies the error, which
	// upstream's rule reads as "keep"), b1, b2 every pass (Exists).
	if got, want := f.c.Stats().ExistsCalls, [3]int{0, 24, 24}; got != want {
		t.Errorf("ExistsCalls = %v, want %v", got, want)
	}
	if got := f.cloud.Calls()[fakecloud.CallKey{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultParentNotFound}]; got != 24 {
		t.Errorf("parent-not-found calls = %d, want 24", got)
	}
}

// TestOutageBacksOff: the cloud API fails every call for 30 minutes. No
// node is deleted; each node is asked about at 0, 5, 15, 35, 75, 155, 315s
// and then every 5m (11 calls in 30m), where upstream's decision asks every
// 5s (360 calls). After the outage the NotReady nodes of the deleted set A
// go and set B's stay. The same with 4 workers syncing the nodes at once.
func TestOutageBacksOff(t *testing.T) {
	const outage = 30 * time.Minute
	for _, tc := range []struct {
		upstream bool
		perNode  int
		workers  int
	}{{false, 11, 1}, {true, 360, 1}, {false, 11, 4}, {true, 360, 4}} {
		t.Run(fmt.Sprintf("upstream=%v/workers=%d", tc.upstream, tc.workers), func(t *testing.T) {
			cfg := testConfig()
			cfg.UpstreamStyle = tc.upstream
			cfg.ConcurrentNodeLifecycleSyncs = tc.workers
			nodes := incidentNodes()
			nodes[2] = node("a3", "A", v1.ConditionFalse)
			f := newFixture(t, cfg, fakecloud.Config{}, nodes...)
			f.cloud.Fail(outage)
			f.cloud.DeleteScaleSet("A")
			var at time.Duration
			for ; at < outage; at += cfg.MonitorPeriod {
				f.pass(at)
			}
			if got := len(f.names()); got != 5 {
				t.Fatalf("%d nodes after the outage, want 5", got)
			}
			calls := f.cloud.Calls().Total()
			if want := 5 * tc.perNode; calls != want {
				t.Errorf("calls during the outage = %d, want %d (%d per node)", calls, want, tc.perNode)
			}
			if !tc.upstream && f.c.Stats().BackingOff != 5 {
				t.Errorf("BackingOff = %d, want 5", f.c.Stats().BackingOff)
			}
			// After the outage: ours deletes within the 5m backoff; upstream
			// keeps A's nodes.
			for end := at + 6*time.Minute; at < end; at += cfg.MonitorPeriod {
				f.pass(at)
			}
			want := []string{"b1", "b2"}
			if tc.upstream {
				want = []string{"a1", "a2", "a3", "b1", "b2"}
			}
			if got := f.names(); !slices.Equal(got, want) {
				t.Errorf("nodes 6m after the outage = %v, want %v", got, want)
			}
		})
	}
}

// TestThrottleRetryAfter: a 429 with Retry-After 60s is not asked again for
// 60s, although the first backoff is 5s.
func TestThrottleRetryAfter(t *testing.T) {
	f := newFixture(t, testConfig(), fakecloud.Config{}, node("b1", "B", v1.ConditionFalse))
	f.cloud.Throttle(time.Minute, time.Minute)
	for s := 0; s <= 60; s += 5 {
		f.pass(time.Duration(s) * time.Second)
	}
	calls := f.cloud.Calls()
	if got := calls[fakecloud.CallKey{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultThrottled}]; got != 1 {
		t.Errorf("throttled calls = %d, want 1 (%v)", got, calls)
	}
	if got := calls.Total(); got != 3 { // 0s throttled; 60s exists, then shutdown
		t.Errorf("calls = %d, want 3 (%v)", got, calls)
	}
}

// TestShutdownTaint: a stopped instance gets the shutdown taint; started
// again, the taint goes while the node is still NotReady (upstream waits
// for Ready). The upstream-style decision keeps it until Ready.
func TestShutdownTaint(t *testing.T) {
	for _, upstream := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream=%v", upstream), func(t *testing.T) {
			cfg := testConfig()
			cfg.UpstreamStyle = upstream
			f := newFixture(t, cfg, fakecloud.Config{}, node("b1", "B", v1.ConditionFalse))
			f.pass(0)
			if hasShutdownTaint(f.get("b1")) {
				t.Fatal("running instance: shutdown taint present")
			}
			f.cloud.SetPower("B", "b1", fakecloud.PowerStopped)
			f.pass(5 * time.Second)
			if !hasShutdownTaint(f.get("b1")) {
				t.Fatal("stopped instance: no shutdown taint")
			}
			f.pass(10 * time.Second)
			f.cloud.SetPower("B", "b1", fakecloud.PowerRunning)
			f.pass(15 * time.Second)
			if got := hasShutdownTaint(f.get("b1")); got != upstream {
				t.Fatalf("started, NotReady: shutdown taint %v, want %v", got, upstream)
			}
			f.setReady("b1", v1.ConditionTrue)
			f.pass(20 * time.Second)
			if hasShutdownTaint(f.get("b1")) {
				t.Fatal("Ready: shutdown taint still present")
			}
			if st := f.c.Stats(); st.TaintsAdded != 1 || st.TaintsRemoved != 1 {
				t.Errorf("TaintsAdded, TaintsRemoved = %d, %d, want 1, 1", st.TaintsAdded, st.TaintsRemoved)
			}
			for _, a := range f.client.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok && !strings.Contains(string(p.GetPatch()), `"resourceVersion"`) {
					t.Errorf("taint patch without resourceVersion: %s", p.GetPatch())
				}
			}
		})
	}
}

// TestRecreatedNodeStartsFresh: node n has two of the three NotFound
// answers it needs when it is deleted and created again with a new UID; the
// next answer is the new node's first, so it is not deleted then. In
// "unseen delete" the informer never delivers the deletion (as after a
// relist): it sees an update of n to the new UID, and the OrphanTracker,
// which keys its records by UID, starts afresh by itself.
func TestRecreatedNodeStartsFresh(t *testing.T) {
	for _, unseen := range []bool{false, true} {
		t.Run(fmt.Sprintf("unseen delete=%v", unseen), func(t *testing.T) {
			cfg := testConfig()
			cfg.Policy.Confirmations = 3
			f := newFixture(t, cfg, fakecloud.Config{}, node("n", "A", v1.ConditionFalse))
			f.cloud.DeleteInstance("A", "n")
			f.pass(0)
			f.pass(5 * time.Second)
			again := node("n", "A", v1.ConditionFalse)
			again.UID = "n-uid2"
			if unseen {
				if _, err := f.client.CoreV1().Nodes().Update(f.ctx, again, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := f.client.CoreV1().Nodes().Delete(f.ctx, "n", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				f.settle()
				if _, err := f.client.CoreV1().Nodes().Create(f.ctx, again, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f.pass(10 * time.Second)
			f.pass(15 * time.Second)
			if got := f.get("n").UID; got != "n-uid2" {
				t.Fatalf("node n UID = %s, want n-uid2 (kept after its 1st and 2nd NotFound)", got)
			}
			f.pass(20 * time.Second)
			if got := f.names(); len(got) != 0 {
				t.Errorf("after the new node's 3rd NotFound: nodes %v, want none", got)
			}
		})
	}
}

// TestUninitializedWaits: a NotReady node with no providerID and the
// uninitialized taint (its instance gone) is not asked about, nor deleted,
// for UninitializedNodeDelay after its creation.
func TestUninitializedWaits(t *testing.T) {
	n := node("u", "A", v1.ConditionFalse)
	n.Spec.ProviderID = ""
	n.Spec.Taints = []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
	f := newFixture(t, testConfig(), fakecloud.Config{}, n)
	for s := 0; s < 60; s += 5 {
		f.pass(time.Duration(s) * time.Second)
	}
	if got := f.cloud.Calls().Total(); got != 0 || len(f.names()) != 1 {
		t.Fatalf("within a minute: %d calls, nodes %v; want 0 calls, u kept", got, f.names())
	}
	f.pass(time.Minute)
	if got := f.names(); len(got) != 0 {
		t.Errorf("after a minute: nodes %v, want none", got)
	}
}

// TestUninitializedFutureCreation: an uninitialized node whose
// creationTimestamp is in the future (clock skew) waits one delay from
// when the controller first saw it, not two (the tracker does not start a
// second one when the controller's ends).
func TestUninitializedFutureCreation(t *testing.T) {
	n := node("u", "A", v1.ConditionFalse)
	n.Spec.ProviderID = ""
	n.Spec.Taints = []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
	n.CreationTimestamp = metav1.NewTime(testutil.Epoch.Add(time.Hour))
	f := newFixture(t, testConfig(), fakecloud.Config{}, n)
	for s := 0; s < 60; s += 5 {
		f.pass(time.Duration(s) * time.Second)
	}
	if got := f.cloud.Calls().Total(); got != 0 || len(f.names()) != 1 {
		t.Fatalf("within a minute of first sight: %d calls, nodes %v; want 0 calls, u kept", got, f.names())
	}
	f.pass(time.Minute)
	if got := f.names(); len(got) != 0 {
		t.Errorf("a minute after first sight: nodes %v, want none", got)
	}
}

// TestReadyNodeNeverAsked: a Ready node costs no cloud call and is never
// deleted, whatever the cloud would say.
func TestReadyNodeNeverAsked(t *testing.T) {
	f := newFixture(t, testConfig(), fakecloud.Config{}, node("r", "A", v1.ConditionTrue))
	f.cloud.DeleteScaleSet("A")
	for s := 0; s < 60; s += 5 {
		f.pass(time.Duration(s) * time.Second)
	}
	if got := f.cloud.Calls().Total(); got != 0 || len(f.names()) != 1 {
		t.Errorf("%d calls, nodes %v; want 0 calls, r kept", got, f.names())
	}
}

// TestRunOnFakeClock runs the controller as main.go does (Run: a pass at
// once, then one per tick of the fake clock).
func TestRunOnFakeClock(t *testing.T) {
	cfg := testConfig()
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	cloud := fakecloud.New(clk, fakecloud.Config{})
	if _, err := cloud.AddInstance("B", "b1", "b1", "z"); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(node("a1", "A", v1.ConditionFalse), node("b1", "B", v1.ConditionFalse))
	c, err := controller.New(client, &fakecloud.Provider{API: cloud}, clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().NodesDeleted == 0 || c.Stats().Passes < 3 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("stats %+v: want a1 deleted, 3 passes", c.Stats())
		}
		if clk.HasWaiters() {
			clk.Step(cfg.MonitorPeriod)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if _, err := client.CoreV1().Nodes().Get(context.Background(), "b1", metav1.GetOptions{}); err != nil {
		t.Errorf("b1: %v, want kept", err)
	}
}

// TestNewRejects: invalid configs and nil arguments.
func TestNewRejects(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	p := &fakecloud.Provider{API: fakecloud.New(clk, fakecloud.Config{})}
	for name, mut := range map[string]func(*controller.Config){
		"period":   func(c *controller.Config) { c.MonitorPeriod = 0 },
		"policy":   func(c *controller.Config) { c.Policy.Confirmations = 0 },
		"selector": func(c *controller.Config) { c.NodeSelector = "a b" },
		"uninit":   func(c *controller.Config) { c.Policy.UninitializedNodeDelay = -1 },
	} {
		cfg := controller.DefaultConfig()
		mut(&cfg)
		if _, err := controller.New(fake.NewClientset(), p, clk, cfg); err == nil {
			t.Errorf("%s: New() = nil error, want ErrInvalidConfig", name)
		}
	}
	if _, err := controller.New(fake.NewClientset(), nil, clk, controller.DefaultConfig()); err == nil {
		t.Error("nil cloud: New() = nil error")
	}
}

// TestRunAfterStart: Run after Start (as the e2e tests do) returns when its
// context ends, although Start's context is still live: Run stops the
// informer Start started. (Run used to wait for an informer only Start's
// context could stop, and hung.)
func TestRunAfterStart(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	c, err := controller.New(fake.NewClientset(node("b1", "B", v1.ConditionTrue)),
		&fakecloud.Provider{API: fakecloud.New(clk, fakecloud.Config{})}, clk, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	base := klog.NewContext(context.Background(), klog.Logger{})
	if err := c.Start(base); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(base)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestDeleteFailed: a deletion the API server refuses (here: the UID
// precondition fails, as for a node re-created under the same name that the
// cache does not show yet) records upstream's DeletingNodeFailed Warning,
// counts a failure, and is decided again on the next NotFound.
func TestDeleteFailed(t *testing.T) {
	f := newFixture(t, testConfig(), fakecloud.Config{}, node("a1", "A", v1.ConditionFalse))
	f.cloud.DeleteInstance("A", "a1")
	refuse := true
	f.client.PrependReactor("delete", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if refuse {
			return true, nil, apierrors.NewConflict(v1.Resource("nodes"), "a1", errors.New("Precondition failed: UID in precondition: a1-uid1, UID in object meta: a1-uid2"))
		}
		return false, nil, nil
	})
	f.pass(0)
	if st := f.c.Stats(); st.DeleteFailures != 1 || st.NodesDeleted != 0 {
		t.Fatalf("DeleteFailures, NodesDeleted = %d, %d, want 1, 0", st.DeleteFailures, st.NodesDeleted)
	}
	want := []string{
		"Normal DeletingNode Deleting node a1 because it does not exist in the cloud provider",
		`Warning DeletingNodeFailed Failed deleting node a1: Operation cannot be fulfilled on nodes "a1": Precondition failed: UID in precondition: a1-uid1, UID in object meta: a1-uid2`,
	}
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	refuse = false
	f.pass(5 * time.Second)
	if got := f.names(); len(got) != 0 {
		t.Errorf("after the retry: nodes %v, want none", got)
	}
}

// TestEventsInvolvedObject: DeletingNode and DeletingNodeFailed are
// recorded on {APIVersion: v1, Kind: Node, name, UID}, as upstream's
// MonitorNodes records them (k8s.io/cloud-provider v0.37.2,
// controllers/nodelifecycle, whose Test_NodesShutdown fails on an Event
// without involvedObject.apiVersion), through a real broadcaster and
// recorder as main.go wires them.
func TestEventsInvolvedObject(t *testing.T) {
	b := record.NewBroadcaster()
	t.Cleanup(b.Shutdown)
	got := make(chan *v1.Event, 10)
	w := b.StartEventWatcher(func(e *v1.Event) { got <- e })
	t.Cleanup(w.Stop)
	cfg := testConfig()
	cfg.Recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name})
	f := newFixture(t, cfg, fakecloud.Config{}, node("a1", "A", v1.ConditionFalse))
	f.cloud.DeleteInstance("A", "a1")
	var refused atomic.Bool
	f.client.PrependReactor("delete", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if refused.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewConflict(v1.Resource("nodes"), "a1", errors.New("refused once"))
		}
		return false, nil, nil
	})
	f.pass(0)
	want := v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "a1", UID: "a1-uid1"}
	for _, reason := range []string{controller.ReasonDeletingNode, controller.ReasonDeletingNodeFailed} {
		select {
		case e := <-got:
			if e.Reason != reason || e.InvolvedObject != want {
				t.Errorf("Event %s on %+v, want %s on %+v", e.Reason, e.InvolvedObject, reason, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s Event", reason)
		}
	}
}

// TestRetryAfterCapped: a provider that asks to be called again in 100
// years is asked again after Policy.MaxUnknownBackoff (5m), as the Unknown
// backoff is capped; the node is not silenced for good. (Before the cap the
// node was never asked about again: 1 call, not 3.)
func TestRetryAfterCapped(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
	}{
		{"100 years", 100 * 365 * 24 * time.Hour},
		{"max duration", time.Duration(1<<63 - 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testConfig(), fakecloud.Config{}, node("b1", "B", v1.ConditionFalse))
			f.cloud.Throttle(time.Minute, tc.retryAfter)
			f.pass(0)
			f.pass(5*time.Minute - time.Second)
			if got := f.cloud.Calls().Total(); got != 1 {
				t.Fatalf("calls before MaxUnknownBackoff = %d, want 1 (the throttled one)", got)
			}
			f.pass(5 * time.Minute)
			// 0s throttled; 5m exists, then shutdown.
			if got := f.cloud.Calls().Total(); got != 3 {
				t.Errorf("calls after MaxUnknownBackoff = %d, want 3 (%v)", got, f.cloud.Calls())
			}
		})
	}
}

// TestNewCloudNodeLifecycleController is upstream's test of the same name
// (v1.37.2): the worker count must be at least 1; ours also has an upper
// bound, MaxConcurrentNodeLifecycleSyncs. The error names the field, the
// flag and the value.
func TestNewCloudNodeLifecycleController(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	p := &fakecloud.Provider{API: fakecloud.New(clk, fakecloud.Config{})}
	for _, tc := range []struct {
		name    string
		workers int
		wantErr bool
	}{
		{"valid workers count", 5, false},
		{"one worker", 1, false},
		{"the bound", controller.MaxConcurrentNodeLifecycleSyncs, false},
		{"workers count is 0", 0, true},
		{"workers count is negative", -5, true},
		{"above the bound", controller.MaxConcurrentNodeLifecycleSyncs + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := controller.DefaultConfig()
			cfg.ConcurrentNodeLifecycleSyncs = tc.workers
			_, err := controller.New(fake.NewClientset(), p, clk, cfg)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("New(ConcurrentNodeLifecycleSyncs=%d) = %v, want nil", tc.workers, err)
				}
				return
			}
			want := fmt.Sprintf("ConcurrentNodeLifecycleSyncs (--concurrent-node-lifecycle-syncs) = %d", tc.workers)
			if !errors.Is(err, controller.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
				t.Errorf("New(ConcurrentNodeLifecycleSyncs=%d) = %v, want ErrInvalidConfig naming %q", tc.workers, err, want)
			}
		})
	}
}

// gatedCloud holds every InstanceExists call until want calls are in flight
// at once (or 10s have passed), and records the most in flight.
type gatedCloud struct {
	*fakecloud.Provider
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	release  chan struct{}
	released bool
}

func (g *gatedCloud) InstanceExists(ctx context.Context, n *v1.Node) (bool, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && !g.released {
		close(g.release)
		g.released = true
	}
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-time.After(10 * time.Second):
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return g.Provider.InstanceExists(ctx, n)
}

// TestConcurrentNodeLifecycleSyncs: with 4 workers a pass over 8 NotReady
// nodes has 4 InstanceExists calls in flight at once (upstream's
// ParallelizeUntil), never more; with 1, one at a time. Every node is
// synced either way.
func TestConcurrentNodeLifecycleSyncs(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testutil.Epoch)
			cloud := fakecloud.New(clk, fakecloud.Config{})
			var nodes []runtime.Object
			for i := range 8 {
				n := node(fmt.Sprintf("n%d", i), "S", v1.ConditionFalse)
				nodes = append(nodes, n)
				if _, err := cloud.AddInstance("S", n.Name, n.Name, "z"); err != nil {
					t.Fatal(err)
				}
			}
			g := &gatedCloud{Provider: &fakecloud.Provider{API: cloud}, want: workers, release: make(chan struct{})}
			cfg := testConfig()
			cfg.ConcurrentNodeLifecycleSyncs = workers
			c, err := controller.New(fake.NewClientset(nodes...), g, clk, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
			defer cancel()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Shutdown()
			c.Pass(ctx)
			if g.most != workers {
				t.Errorf("InstanceExists calls in flight at most %d, want %d", g.most, workers)
			}
			if got := c.Stats().ExistsCalls[1]; got != 8 {
				t.Errorf("Exists answers = %d, want 8 (every node)", got)
			}
		})
	}
}
