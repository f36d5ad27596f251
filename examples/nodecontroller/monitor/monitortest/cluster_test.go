package monitortest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/taints"
)

var _ monitor.Cluster = (*monitortest.Cluster)(nil)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func node(name, zone string, now time.Time) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelTopologyZone: zone},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
}

func pod(name, node string, now time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(now)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)},
		Status:     v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

// fill returns a cluster of nodes n0..n2 in zone z with one pod each, and a
// Monitor attached to it.
func fill(t *testing.T) (*monitortest.Cluster, *monitor.Monitor, *[]monitor.Event) {
	t.Helper()
	c := monitortest.New(epoch)
	ctx := context.Background()
	for _, n := range []string{"n2", "n0", "n1"} { // out of order on purpose
		c.AddNode(ctx, node(n, "z", epoch), monitortest.NewLease(n, epoch))
		c.AddPod(ctx, pod("p-"+n, n, epoch))
	}
	m, events := attach(t, ctx, c)
	return c, m, events
}

// attach attaches a Monitor (default config, one worker) to c and syncs it;
// the Monitor's events are appended to the slice returned.
func attach(t *testing.T, ctx context.Context, c *monitortest.Cluster) (*monitor.Monitor, *[]monitor.Event) {
	t.Helper()
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	var events []monitor.Event
	m, err := monitor.New(cfg, c, func(e monitor.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	c.Attach(m)
	c.Sync(ctx)
	return m, &events
}

// TestSilentNodeEvicted drives a Monitor over the cluster on a virtual
// clock: n0's kubelet stops at t=0, the others renew every 10s; n0 goes
// Unknown at the first pass after the 50s grace period, is tainted at once,
// and its pod is evicted 300s later.
func TestSilentNodeEvicted(t *testing.T) {
	c, m, events := fill(t)
	ctx := context.Background()
	cfg := m.Config()
	for now := epoch; !now.After(epoch.Add(6 * time.Minute)); now = now.Add(cfg.TaintPeriod) {
		el := now.Sub(epoch)
		c.SetNow(now)
		if el%(10*time.Second) == 0 {
			c.RenewLease("n1", now)
			c.RenewLease("n2", now)
		}
		if el%cfg.MonitorPeriod == 0 {
			m.MonitorPass(ctx, now)
		}
		m.TaintPass(ctx, now)
		m.EvictionPass(ctx, now)
	}
	var unknown, evicted time.Duration = -1, -1
	for _, e := range *events {
		switch {
		case e.Kind == monitor.KindNodeUnknown && unknown < 0:
			unknown = e.At.Sub(epoch)
		case e.Kind == monitor.KindPodEvicted && evicted < 0:
			evicted = e.At.Sub(epoch)
		}
	}
	if unknown != 55*time.Second || evicted != 355*time.Second {
		t.Errorf("n0 Unknown at %v, pod evicted at %v; want 55s and 5m55s", unknown, evicted)
	}
	if got := c.Evicted(); len(got) != 1 || got[0].Name != "p-n0" {
		t.Errorf("Evicted() = %v, want [default/p-n0]", got)
	}
	if got := c.Counts(); got.PodsEvicted != 1 || got.PodsMarkedNotReady != 1 {
		t.Errorf("Counts() = %+v, want 1 evicted, 1 marked not ready", got)
	}
	if c.Pod(types.NamespacedName{Namespace: "default", Name: "p-n1"}) == nil {
		t.Errorf("p-n1 gone, want it kept")
	}
}

func TestWrites(t *testing.T) {
	c, _, _ := fill(t)
	ctx := context.Background()
	if got := c.ListNodes(); len(got) != 3 || got[0].Name != "n0" || got[2].Name != "n2" {
		t.Fatalf("ListNodes() = %v, want n0, n1, n2 in name order", got)
	}
	pods := c.ListPodsOnNode("n1")
	key := types.NamespacedName{Namespace: "default", Name: "p-n1"}
	if err := c.EvictPod(ctx, key, "other-uid", nil); !apierrors.IsConflict(err) {
		t.Errorf("EvictPod(wrong UID) = %v, want a conflict", err)
	}
	c.FailEvictions(1)
	if err := c.EvictPod(ctx, key, "", nil); !errors.Is(err, monitortest.ErrInjected) {
		t.Errorf("EvictPod(injected failure) = %v, want ErrInjected", err)
	}
	var hooked *v1.Pod
	c.BeforeEvict(func(_ time.Time, p *v1.Pod) { hooked = p })
	if err := c.EvictPod(ctx, key, pods[0].UID, nil); err != nil || hooked != pods[0] {
		t.Errorf("EvictPod = %v (hook saw %v), want nil and the hook called with the pod", err, hooked)
	}
	if err := c.EvictPod(ctx, key, "", nil); !apierrors.IsNotFound(err) {
		t.Errorf("EvictPod(again) = %v, want not found", err)
	}
	if len(pods) != 1 || len(c.ListPodsOnNode("n1")) != 0 {
		t.Errorf("after eviction: old list %d pods (want 1, copy on write), new list %d (want 0)", len(pods), len(c.ListPodsOnNode("n1")))
	}
	old := c.GetNode("n1")
	st := old.Status.DeepCopy()
	st.Conditions[0].Status = v1.ConditionUnknown
	if err := c.UpdateNodeStatus(ctx, old, st); err != nil {
		t.Fatal(err)
	}
	if old.Status.Conditions[0].Status != v1.ConditionTrue || c.GetNode("n1").Status.Conditions[0].Status != v1.ConditionUnknown {
		t.Errorf("UpdateNodeStatus modified the old object or did not store the new one")
	}
	c.FailTaintWrites(1)
	taint := func(n *v1.Node) (*v1.Node, bool) { return taints.AddOrUpdate(n, taints.UnreachableTaint(), epoch) }
	if _, err := c.UpdateNodeTaints(ctx, "n1", taint); !errors.Is(err, monitortest.ErrInjected) {
		t.Errorf("UpdateNodeTaints(injected failure) = %v, want ErrInjected", err)
	}
	if n, err := c.UpdateNodeTaints(ctx, "n1", taint); err != nil || !hasTaint(n, taints.UnreachableTaint()) || !hasTaint(c.GetNode("n1"), taints.UnreachableTaint()) {
		t.Errorf("UpdateNodeTaints = %v, %v; want the node with the taint, stored", n, err)
	}
	c.SetStaleList("n1", old)
	if got := c.ListNodes()[1]; got != old {
		t.Errorf("ListNodes()[1] with a stale list = %p, want the stale object %p", got, old)
	}
	c.SetStaleList("n1", nil)
	if _, err := c.UpdateNodeTaints(ctx, "nope", taint); !apierrors.IsNotFound(err) {
		t.Errorf("UpdateNodeTaints(unknown node) = %v, want not found", err)
	}
	if err := c.UpdateNodeStatus(ctx, &v1.Node{}, st); !apierrors.IsNotFound(err) {
		t.Errorf("UpdateNodeStatus(unknown node) = %v, want not found", err)
	}
	if c.GetNode("nope") != nil || c.GetLease("nope") != nil || c.ListPodsOnNode("nope") != nil {
		t.Errorf("reads of an unknown node return something")
	}
	// The kubelet: status, pods Ready again.
	at := epoch.Add(time.Minute)
	if !c.PostNodeStatus(ctx, "n2", v1.ConditionFalse, at) {
		t.Fatal("PostNodeStatus(n2) = false")
	}
	if r := c.GetNode("n2").Status.Conditions[0]; r.Status != v1.ConditionFalse || !r.LastTransitionTime.Time.Equal(at) || r.Reason != monitortest.ReasonKubeletNotReady {
		t.Errorf("after PostNodeStatus(False): %+v", r)
	}
	p := c.Pod(types.NamespacedName{Namespace: "default", Name: "p-n2"})
	st2 := p.Status.DeepCopy()
	st2.Conditions[0].Status = v1.ConditionFalse
	if err := c.UpdatePodStatus(ctx, p, st2); err != nil {
		t.Fatal(err)
	}
	if n := c.SetPodsReady(ctx, "n2", at); n != 1 || c.Counts().PodsMarkedReady != 1 {
		t.Errorf("SetPodsReady = %d, want 1", n)
	}
	c.DeleteNode("n2")
	if c.GetNode("n2") != nil || len(c.ListNodes()) != 2 || len(c.ListPodsOnNode("n2")) != 1 {
		t.Errorf("DeleteNode(n2): node or Lease kept, or its pod lost")
	}
	n := node("n2", "z", at)
	c.PutNode(n) // no such node: ignored
	if c.GetNode("n2") != nil {
		t.Errorf("PutNode of a deleted node stored it")
	}
}

// TestRenewLeaseInPlace: a renewal moves the stored Lease's RenewTime
// without a new object or an allocation.
func TestRenewLeaseInPlace(t *testing.T) {
	c, _, _ := fill(t)
	l := c.GetLease("n0")
	now := epoch
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(10 * time.Second)
		c.RenewLease("n0", now)
	})
	if allocs != 0 {
		t.Errorf("RenewLease allocates %v times, want 0", allocs)
	}
	if got := c.GetLease("n0"); got != l || !got.Spec.RenewTime.Time.Equal(now) {
		t.Errorf("after RenewLease: Lease %p renewed %v, want %p renewed %v", got, got.Spec.RenewTime, l, now)
	}
	if c.RenewLease("nope", now) {
		t.Errorf("RenewLease(unknown node) = true")
	}
}

// TestReadsDoNotAllocate pins the per-node reads of a monitor pass.
func TestReadsDoNotAllocate(t *testing.T) {
	c, _, _ := fill(t)
	names := []string{"n0", "n1", "n2"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			_ = c.GetLease(n)
			_ = c.GetNode(n)
			_ = c.ListPodsOnNode(n)
		}
	})
	if allocs != 0 {
		t.Errorf("GetLease/GetNode/ListPodsOnNode allocate %v times per pass, want 0", allocs)
	}
}

func hasTaint(n *v1.Node, t v1.Taint) bool {
	for _, x := range n.Spec.Taints {
		if x.MatchTaint(&t) {
			return true
		}
	}
	return false
}

// TestListNodesSharedAndStable: a list handed out is never modified by
// later writes; without writes between calls, ListNodes does not allocate.
func TestListNodesSharedAndStable(t *testing.T) {
	c, _, _ := fill(t)
	ctx := context.Background()
	first := c.ListNodes()
	n0 := first[0]
	if allocs := testing.AllocsPerRun(100, func() { _ = c.ListNodes() }); allocs != 0 {
		t.Errorf("ListNodes without writes allocates %v times, want 0", allocs)
	}
	if !c.PostNodeStatus(ctx, "n0", v1.ConditionTrue, epoch.Add(time.Minute)) {
		t.Fatal("PostNodeStatus(n0) = false")
	}
	if first[0] != n0 {
		t.Errorf("a write changed a list handed out before it")
	}
	if second := c.ListNodes(); second[0] == n0 || second[0] != c.GetNode("n0") || len(second) != 3 {
		t.Errorf("ListNodes after a write = %v, want the new n0", second)
	}
	c.DeleteNode("n1")
	if got := c.ListNodes(); len(got) != 2 || got[1].Name != "n2" {
		t.Errorf("ListNodes after deleting n1 = %v, want n0, n2", got)
	}
	c.AddNode(ctx, node("n1", "z", epoch), nil)
	if got := c.ListNodes(); len(got) != 3 || got[1].Name != "n1" {
		t.Errorf("ListNodes after re-adding n1 = %v, want n0, n1, n2", got)
	}
}

// nopReceiver receives the Cluster's events and does nothing.
type nopReceiver struct{}

func (nopReceiver) NodeChanged(context.Context, time.Time, *v1.Node) {}
func (nopReceiver) NodeDeleted(string)                               {}
func (nopReceiver) PodChanged(context.Context, time.Time, *v1.Pod)   {}
func (nopReceiver) PodDeleted(types.NamespacedName)                  {}

// TestSyncConcurrentWrites: Sync reads the nodes and pods under the
// Cluster's lock, so writes may run meanwhile (go test -race).
func TestSyncConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	c := monitortest.New(epoch)
	for _, n := range []string{"n0", "n1", "n2"} {
		c.AddNode(ctx, node(n, "z", epoch), nil)
		c.AddPod(ctx, pod("p-"+n, n, epoch))
	}
	c.Attach(nopReceiver{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			c.PostNodeStatus(ctx, "n1", v1.ConditionFalse, epoch.Add(time.Duration(i)*time.Second))
			c.AddPod(ctx, pod("p-n1", "n1", epoch))
		}
	}()
	for range 200 {
		c.Sync(ctx)
	}
	<-done
}
