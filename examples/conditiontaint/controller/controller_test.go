package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubelifecycle/lifecycle/taints"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	condKD   = "KernelDeadlock"
	taintKey = "example.com/kernel-deadlock"
)

// harness is a Controller on controller-runtime's fake client and a fake
// clock; tests call the reconcilers and Step directly.
type harness struct {
	t     *testing.T
	ctl   *Controller
	c     client.Client
	clock *clocktesting.FakeClock
	rec   *events.FakeRecorder
	m     *Metrics
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Conditions = []ConditionRule{{Type: condKD, Status: "True", Taint: TaintSpec{Key: taintKey, Effect: "NoExecute"}}}
	cfg.Zones.Rate = 0.5 // one node per 2s per zone
	return cfg
}

func newHarness(t *testing.T, cfg Config, objs ...client.Object) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, interceptor.Funcs{}, objs...)
}

func newHarnessWith(t *testing.T, cfg Config, fns interceptor.Funcs, objs ...client.Object) *harness {
	t.Helper()
	c := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&v1.Node{}, &v1.Pod{}).WithInterceptorFuncs(fns).Build()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: c, clock: clocktesting.NewFakeClock(epoch), rec: events.NewFakeRecorder(1000), m: m}
	h.ctl, err = New(Options{Config: cfg, Client: c, Clock: h.clock, Recorder: h.rec, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func node(name, zone string, kernelDeadlock bool, extra ...v1.Taint) *v1.Node {
	st := v1.ConditionFalse
	if kernelDeadlock {
		st = v1.ConditionTrue
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Spec:       v1.NodeSpec{Taints: extra},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue},
			{Type: condKD, Status: st},
		}},
	}
}

// zone returns n nodes zone-0..zone-(n-1), the first sick ones with the
// condition.
func zone(name string, n, sick int) []client.Object {
	out := make([]client.Object, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("%s-%d", name, i), name, i < sick)
	}
	return out
}

func (h *harness) step() {
	h.t.Helper()
	if _, _, err := h.ctl.Step(context.Background()); err != nil {
		h.t.Fatalf("Step: %v", err)
	}
}

func (h *harness) reconcileNode(name string) {
	h.t.Helper()
	if _, err := h.ctl.ReconcileNode(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		h.t.Fatalf("ReconcileNode(%s): %v", name, err)
	}
}

func (h *harness) reconcilePod(ns, name string) {
	h.t.Helper()
	if _, err := h.ctl.ReconcilePod(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
		h.t.Fatalf("ReconcilePod(%s): %v", name, err)
	}
}

func (h *harness) evictions() reconcile.Result {
	h.t.Helper()
	res, err := h.ctl.ReconcileEvictions(context.Background(), reconcile.Request{})
	if err != nil {
		h.t.Fatalf("ReconcileEvictions: %v", err)
	}
	return res
}

func (h *harness) node(name string) *v1.Node {
	h.t.Helper()
	n := &v1.Node{}
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		h.t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

func (h *harness) tainted(name string) bool {
	for _, t := range h.node(name).Spec.Taints {
		if t.Key == taintKey {
			return true
		}
	}
	return false
}

// taintedSet lists the tainted nodes among names.
func (h *harness) taintedSet(names ...string) []string {
	var out []string
	for _, n := range names {
		if h.tainted(n) {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) setCondition(name string, st v1.ConditionStatus) {
	h.t.Helper()
	n := h.node(name)
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == condKD {
			n.Status.Conditions[i].Status = st
		}
	}
	if err := h.c.Status().Update(context.Background(), n); err != nil {
		h.t.Fatal(err)
	}
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func count(evs []string, reason string) int {
	n := 0
	for _, e := range evs {
		if strings.Contains(e, " "+reason+" ") {
			n++
		}
	}
	return n
}

func (h *harness) decisions(d string, dryRun bool) float64 {
	return testutil.ToFloat64(h.m.Decisions.WithLabelValues(d, fmt.Sprint(dryRun)))
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func TestTaintsAtZoneRate(t *testing.T) {
	objs := append(zone("a", 10, 3-1), zone("b", 10, 1)...)
	// zone a: a-0, a-1 sick (20%, under the 33% breaker); zone b: b-0.
	h := newHarness(t, testConfig(), objs...)
	h.step()
	if got := h.taintedSet(append(names("a", 10), names("b", 10)...)...); strings.Join(got, ",") != "a-0,b-0" {
		t.Fatalf("after the first pass tainted = %v, want a-0,b-0 (one per zone: each zone has its own bucket)", got)
	}
	evs := h.events()
	if count(evs, ReasonWaitingForRate) != 1 || count(evs, ReasonTainted) != 2 || count(evs, ReasonQueued) != 3 {
		t.Errorf("events = %q, want 3 queued, 2 tainted, 1 waiting for the zone rate", evs)
	}
	next, ok, _ := h.ctl.Step(context.Background())
	if !ok || !next.Equal(epoch.Add(2*time.Second)) {
		t.Errorf("Step next = %v, %v, want %v (rate 0.5/s)", next, ok, epoch.Add(2*time.Second))
	}
	h.clock.Step(1999 * time.Millisecond)
	h.step()
	if h.tainted("a-1") {
		t.Fatal("a-1 tainted before the zone rate allows")
	}
	h.clock.Step(time.Millisecond)
	h.step()
	if !h.tainted("a-1") {
		t.Fatal("a-1 not tainted when the zone rate allows")
	}
	if got := h.decisions(DecisionTainted, false); got != 3 {
		t.Errorf("decisions_total{tainted} = %v, want 3", got)
	}
	if n := h.node("a-0"); n.Spec.Taints[0].TimeAdded == nil || !n.Spec.Taints[0].TimeAdded.Time.Equal(epoch) {
		t.Errorf("a-0 taint = %+v, want TimeAdded %v", n.Spec.Taints[0], epoch)
	}
	// A second pass on a tainted node changes nothing.
	h.events()
	h.clock.Step(time.Minute)
	h.step()
	h.reconcileNode("a-0")
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("steady state events = %q, want none", evs)
	}
}

func TestBreakerHoldsZone(t *testing.T) {
	// 4 of 10 (40%) report KernelDeadlock at once: a bad rollout, not a bad
	// zone. Nothing is tainted; zone b (1 of 10) is unaffected.
	h := newHarness(t, testConfig(), append(zone("a", 10, 4), zone("b", 10, 1)...)...)
	for range 3 {
		h.step()
		h.clock.Step(10 * time.Second)
	}
	if got := h.taintedSet(names("a", 10)...); len(got) != 0 {
		t.Fatalf("tainted in the tripped zone: %v", got)
	}
	if !h.tainted("b-0") {
		t.Fatal("b-0 not tainted: the breaker is per zone")
	}
	evs := h.events()
	if got := count(evs, ReasonHeldByBreaker); got != 4 {
		t.Errorf("%d HeldByBreaker events, want 4 (one per node, not per pass): %q", got, evs)
	}
	if got := testutil.ToFloat64(h.m.Pending.WithLabelValues("a", DecisionHeldByBreaker)); got != 4 {
		t.Errorf("pending_nodes{a,held_by_breaker} = %v, want 4", got)
	}
	if got := testutil.ToFloat64(h.m.ZoneState.WithLabelValues("a", "PartialDisruption")); got != 1 {
		t.Errorf("zone_state{a,PartialDisruption} = %v, want 1", got)
	}
	// The rollout is fixed on two nodes: 2 of 10, the breaker resets and the
	// other two are tainted at the zone rate.
	h.setCondition("a-0", v1.ConditionFalse)
	h.setCondition("a-1", v1.ConditionFalse)
	h.step()
	// Leaving a stop starts with an empty bucket (upstream SwapLimiter):
	// the first taint comes one interval later.
	if evs := h.events(); count(evs, ReasonWaitingForRate) != 2 {
		t.Errorf("events = %q, want a-2 and a-3 waiting for the zone rate", evs)
	}
	h.clock.Step(2 * time.Second)
	h.step()
	if got := h.taintedSet(names("a", 10)...); strings.Join(got, ",") != "a-2" {
		t.Fatalf("after the breaker reset tainted = %v, want a-2", got)
	}
}

func TestFullDisruptionRemovesOwnTaints(t *testing.T) {
	// Every node of the only zone reports the condition: full disruption
	// mode; the controller's taint on a-0 goes, kube-controller-manager's stays.
	own := v1.Taint{Key: taintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch}}
	kcm := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch}}
	objs := zone("a", 3, 3)
	objs[0] = node("a-0", "a", true, own, kcm)
	h := newHarness(t, testConfig(), objs...)
	h.step()
	if got := h.taintedSet(names("a", 3)...); len(got) != 0 {
		t.Fatalf("tainted in full disruption mode: %v", got)
	}
	if ts := h.node("a-0").Spec.Taints; len(ts) != 1 || ts[0].Key != v1.TaintNodeUnreachable {
		t.Errorf("a-0 taints = %+v, want kube-controller-manager's only", ts)
	}
	evs := h.events()
	if count(evs, ReasonBreakerUntaint) != 1 || count(evs, ReasonHeldByBreaker) != 3 {
		t.Errorf("events = %q, want 1 removed by the breaker, 3 held", evs)
	}
	if got := testutil.ToFloat64(h.m.FullDisruption); got != 1 {
		t.Errorf("full_disruption = %v, want 1", got)
	}
}

func TestClearedConditionRemovesTaintOnly(t *testing.T) {
	kcm := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	other := v1.Taint{Key: "example.com/other", Effect: v1.TaintEffectNoExecute}
	objs := zone("a", 10, 0)
	objs[0] = node("a-0", "a", true, kcm, other)
	h := newHarness(t, testConfig(), objs...)
	h.step()
	if !h.tainted("a-0") {
		t.Fatal("a-0 not tainted")
	}
	h.setCondition("a-0", v1.ConditionFalse)
	h.reconcileNode("a-0") // removal is immediate, not rate limited
	ts := h.node("a-0").Spec.Taints
	if len(ts) != 2 || ts[0].Key != kcm.Key || ts[1].Key != other.Key {
		t.Errorf("taints after clearing = %+v, want the two foreign taints only", ts)
	}
	if got := h.decisions(DecisionUntainted, false); got != 1 {
		t.Errorf("decisions_total{untainted} = %v, want 1", got)
	}
}

func TestClearedBeforeTurnLeavesQueue(t *testing.T) {
	h := newHarness(t, testConfig(), zone("a", 10, 2)...)
	h.step() // a-0 tainted, a-1 waits
	h.setCondition("a-1", v1.ConditionFalse)
	h.reconcileNode("a-1")
	h.clock.Step(10 * time.Second)
	h.step()
	if h.tainted("a-1") {
		t.Fatal("a-1 tainted after its condition cleared")
	}
	if got := h.ctl.queues.Len(); got != 0 {
		t.Errorf("queued = %d, want 0", got)
	}
}

func pod(name, nodeName string, tolerate *int64, forever bool) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Finalizers: []string{"test/keep"}},
		Spec:       v1.PodSpec{NodeName: nodeName},
		Status:     v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
	if tolerate != nil || forever {
		p.Spec.Tolerations = []v1.Toleration{{Key: taintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: tolerate}}
	}
	return p
}

// evicted reports whether the pod is being deleted, and checks it got the
// DisruptionTarget condition first.
func (h *harness) evicted(name string) bool {
	h.t.Helper()
	p := &v1.Pod{}
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if p.DeletionTimestamp == nil {
		return false
	}
	if len(p.Status.Conditions) != 2 || p.Status.Conditions[0].Type != v1.PodReady {
		h.t.Errorf("pod %s conditions = %+v, want Ready kept and DisruptionTarget added", name, p.Status.Conditions)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == taints.DisruptionTargetReason {
			return true
		}
	}
	h.t.Errorf("pod %s deleted without the DisruptionTarget condition: %+v", name, p.Status.Conditions)
	return true
}

func TestEvictionsByToleration(t *testing.T) {
	objs := append(zone("a", 10, 1),
		pod("none", "a-0", nil, false), pod("sixty", "a-0", ptr.To[int64](60), false),
		pod("forever", "a-0", nil, true), pod("elsewhere", "a-1", nil, false))
	h := newHarness(t, testConfig(), objs...)
	for _, p := range []string{"none", "sixty", "forever", "elsewhere"} {
		h.reconcilePod("ns", p)
	}
	h.step()
	h.reconcileNode("a-0")
	res := h.evictions()
	if !h.evicted("none") || h.evicted("sixty") || h.evicted("forever") || h.evicted("elsewhere") {
		t.Fatal("at the taint only the pod without a toleration is evicted")
	}
	if res.RequeueAfter != 60*time.Second {
		t.Errorf("RequeueAfter = %v, want 60s (the Evictor's NextDeadline)", res.RequeueAfter)
	}
	if x := h.ctl.Explain(types.NamespacedName{Namespace: "ns", Name: "sixty"}); x.State != taints.EvictionScheduled || !x.At.Equal(epoch.Add(60*time.Second)) {
		t.Errorf("Explain(sixty) = %v", x)
	}
	h.clock.Step(59 * time.Second)
	h.evictions()
	if h.evicted("sixty") {
		t.Fatal("sixty evicted before its toleration ran out")
	}
	h.clock.Step(time.Second)
	res = h.evictions()
	if !h.evicted("sixty") || h.evicted("forever") {
		t.Fatal("at 60s sixty goes and forever stays")
	}
	if res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v, want none", res.RequeueAfter)
	}
	if evs := h.events(); count(evs, ReasonEvicted) != 2 {
		t.Errorf("events = %q, want 2 %s", evs, ReasonEvicted)
	}
}

func TestClearingCancelsEvictions(t *testing.T) {
	objs := append(zone("a", 10, 1), pod("sixty", "a-0", ptr.To[int64](60), false))
	h := newHarness(t, testConfig(), objs...)
	h.reconcilePod("ns", "sixty")
	h.step()
	h.reconcileNode("a-0")
	h.evictions()
	h.clock.Step(30 * time.Second)
	h.setCondition("a-0", v1.ConditionFalse)
	h.reconcileNode("a-0")
	if x := h.ctl.Explain(types.NamespacedName{Namespace: "ns", Name: "sixty"}); x.State != taints.EvictionNodeNotTainted {
		t.Errorf("Explain after clearing = %v, want NodeNotTainted", x)
	}
	h.clock.Step(time.Hour)
	if res := h.evictions(); res.RequeueAfter != 0 || h.evicted("sixty") {
		t.Errorf("after clearing: RequeueAfter %v, evicted %v; want nothing", res.RequeueAfter, h.evicted("sixty"))
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	cfg := testConfig()
	cfg.DryRun = true
	objs := append(zone("a", 10, 2), pod("none", "a-0", nil, false), pod("sixty", "a-0", ptr.To[int64](60), false))
	h := newHarness(t, cfg, objs...)
	h.reconcilePod("ns", "none")
	h.reconcilePod("ns", "sixty")
	rv := map[string]string{}
	for _, n := range names("a", 10) {
		rv[n] = h.node(n).ResourceVersion
	}
	h.step()
	h.reconcileNode("a-0")
	res := h.evictions()
	if res.RequeueAfter != 60*time.Second {
		t.Errorf("dry run RequeueAfter = %v, want 60s: the preview schedules as if tainted", res.RequeueAfter)
	}
	h.clock.Step(2 * time.Second)
	h.step()
	h.clock.Step(time.Minute)
	h.evictions()
	for n, v := range rv {
		if got := h.node(n).ResourceVersion; got != v {
			t.Errorf("node %s written in dry run (resourceVersion %s → %s)", n, v, got)
		}
	}
	if h.evicted("none") || h.evicted("sixty") {
		t.Error("pod deleted in dry run")
	}
	evs := h.events()
	if count(evs, ReasonWouldTaint) != 2 || count(evs, ReasonWouldEvict) != 2 || count(evs, ReasonWaitingForRate) != 1 {
		t.Errorf("dry-run events = %q, want 2 would-add, 2 would-evict, 1 waiting", evs)
	}
	if got := h.decisions(DecisionTainted, true); got != 2 {
		t.Errorf("decisions_total{tainted,dry_run=true} = %v, want 2", got)
	}
	// Clearing the condition previews the removal.
	h.setCondition("a-0", v1.ConditionFalse)
	h.reconcileNode("a-0")
	if evs := h.events(); count(evs, ReasonWouldUntaint) != 1 {
		t.Errorf("events = %q, want a would-remove", evs)
	}
}

func TestNodeSelectorAndDeletion(t *testing.T) {
	cfg := testConfig()
	cfg.NodeSelector = "pool=managed"
	n := node("x", "a", true)
	n.Labels["pool"] = "other"
	h := newHarness(t, cfg, n)
	h.step()
	h.reconcileNode("x")
	if h.tainted("x") {
		t.Fatal("node outside the selector tainted")
	}
	if err := h.c.Delete(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	h.reconcileNode("x") // NotFound: forgotten, no error
}

func TestExcludedNodesNotCounted(t *testing.T) {
	// 4 sick of 10 would trip the breaker, but two sick nodes are excluded
	// from zone health: 2 of 8 count, the zone is Normal, all 4 are tainted.
	objs := zone("a", 10, 4)
	for _, o := range objs[:2] {
		o.SetLabels(map[string]string{v1.LabelTopologyZone: "a", ExcludeDisruptionLabel: ""})
	}
	h := newHarness(t, testConfig(), objs...)
	for range 4 {
		h.step()
		h.clock.Step(2 * time.Second)
	}
	if got := h.taintedSet(names("a", 10)...); len(got) != 4 {
		t.Errorf("tainted = %v, want the 4 sick nodes", got)
	}
	if got := testutil.ToFloat64(h.m.ZoneSize.WithLabelValues("a")); got != 8 {
		t.Errorf("zone_size{a} = %v, want 8", got)
	}
}

func TestDeletedNodeLeavesQueue(t *testing.T) {
	h := newHarness(t, testConfig(), zone("a", 10, 2)...)
	h.step() // a-0 tainted, a-1 waits
	if got := h.ctl.queues.Len(); got != 1 {
		t.Fatalf("queued = %d, want 1", got)
	}
	if err := h.c.Delete(context.Background(), h.node("a-1")); err != nil {
		t.Fatal(err)
	}
	h.reconcileNode("a-1")
	if got := h.ctl.queues.Len(); got != 0 {
		t.Errorf("queued after deletion = %d, want 0", got)
	}
}

func TestHealthz(t *testing.T) {
	h := newHarness(t, testConfig(), zone("a", 3, 0)...)
	if err := h.ctl.Healthz(nil); err != nil {
		t.Errorf("Healthz before the first pass = %v, want nil (not the leader yet)", err)
	}
	h.step()
	h.clock.Step(10*h.ctl.cfg.PassPeriod.Duration + time.Minute)
	if err := h.ctl.Healthz(nil); err != nil {
		t.Errorf("Healthz at the limit = %v, want nil", err)
	}
	h.clock.Step(time.Second)
	if err := h.ctl.Healthz(nil); err == nil {
		t.Error("Healthz after a stalled loop = nil, want an error")
	}
}

func TestFailedEvictionIsRetried(t *testing.T) {
	failures := 2
	deny := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if _, ok := obj.(*v1.Pod); ok && failures > 0 {
			failures--
			return apierrors.NewForbidden(v1.Resource("pods"), obj.GetName(), fmt.Errorf("denied by a webhook"))
		}
		return c.Delete(ctx, obj, opts...)
	}}
	h := newHarnessWith(t, testConfig(), deny, append(zone("a", 10, 1), pod("none", "a-0", nil, false))...)
	h.reconcilePod("ns", "none")
	h.step()
	for attempt := 1; attempt <= 2; attempt++ {
		if res := h.evictions(); res.RequeueAfter != evictionRetryInterval || h.evicted("none") {
			t.Fatalf("attempt %d: RequeueAfter %v, evicted %v; want a retry in %v", attempt, res.RequeueAfter, h.evicted("none"), evictionRetryInterval)
		}
		if x := h.ctl.Explain(types.NamespacedName{Namespace: "ns", Name: "none"}); x.State != taints.EvictionRetrying || x.Attempts != attempt {
			t.Errorf("attempt %d: Explain = %v", attempt, x)
		}
		h.clock.Step(evictionRetryInterval)
	}
	if res := h.evictions(); res.RequeueAfter != 0 || !h.evicted("none") {
		t.Fatalf("third attempt: RequeueAfter %v, evicted %v; want done", res.RequeueAfter, h.evicted("none"))
	}
	evs := h.events()
	if count(evs, ReasonEvictionFailed) != 2 || count(evs, ReasonEvicted) != 1 {
		t.Errorf("events = %q, want 2 failures then 1 eviction", evs)
	}
	if got := h.decisions(DecisionEvictionFailed, false); got != 2 {
		t.Errorf("decisions_total{eviction_failed} = %v, want 2", got)
	}
}
