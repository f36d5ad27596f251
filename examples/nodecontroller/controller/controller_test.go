package controller_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

const (
	unreachableNoExecute = "node.kubernetes.io/unreachable:NoExecute"
	unreachableNoSched   = "node.kubernetes.io/unreachable:NoSchedule"
)

var errInjected = errors.New("injected API error")

// cluster3 is three Ready nodes in one zone with Leases renewed at the epoch,
// and pods on node a: bare (no toleration), defaults (the admission's 300s),
// short (30s for unreachable, then the defaults), forever (tolerates
// everything); and a pod on b.
func cluster3() []runtime.Object {
	objs := []runtime.Object{}
	for _, n := range []string{"a", "b", "c"} {
		objs = append(objs, readyNode(n, "z1"), lease(n))
	}
	return append(objs,
		pod("bare", "a", false),
		pod("defaults", "a", true),
		pod("short", "a", true, v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(30)}),
		pod("forever", "a", false, v1.Toleration{Operator: v1.TolerationOpExists}),
		pod("elsewhere", "b", true),
	)
}

// liveExcept renews the Lease of every node but the dead ones every 10s.
func liveExcept(f *fixture, dead ...string) func(time.Duration) {
	return func(at time.Duration) {
		if at%(10*time.Second) != 0 {
			return
		}
	next:
		for _, n := range []string{"a", "b", "c"} {
			for _, d := range dead {
				if n == d {
					continue next
				}
			}
			f.renew(n)
		}
	}
}

// TestSilentNodeTaintedAndEvicted is the whole story through informers and
// the fake clientset: node a stops renewing its Lease at t=0, is written
// Unknown at the first monitor pass after the 50s grace period (55s), gets
// both unreachable taints, its pods are marked Ready=False, the pod without
// toleration gets DisruptionTarget and is deleted with a UID precondition at
// once, the 30s pod at 85s, and the tolerating pods stay.
func TestSilentNodeTaintedAndEvicted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	f.pass(true) // t=0: every node first seen
	f.advance(50*time.Second, liveExcept(f, "a"))
	if got := nodeReady(f.node("a")); got != v1.ConditionTrue {
		t.Fatalf("node a Ready at 50s = %v, want True", got)
	}
	f.advance(55*time.Second, liveExcept(f, "a"))

	a := f.node("a")
	if got := nodeReady(a); got != v1.ConditionUnknown {
		t.Errorf("node a Ready at 55s = %v, want Unknown", got)
	}
	for _, tk := range []struct {
		key    string
		effect v1.TaintEffect
	}{{v1.TaintNodeUnreachable, v1.TaintEffectNoExecute}, {v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule}} {
		if !hasTaint(a, tk.key, tk.effect) {
			t.Errorf("node a taints = %v, want %s:%s", a.Spec.Taints, tk.key, tk.effect)
		}
	}
	if p := f.pod("bare"); p != nil {
		t.Errorf("pod bare = %v, want deleted at 55s", p.Status.Conditions)
	}
	for _, name := range []string{"defaults", "short", "forever"} {
		if p := f.pod(name); p == nil || podReady(p) != v1.ConditionFalse {
			t.Errorf("pod %s = %v, want kept with Ready=False", name, p)
		}
	}
	if p := f.pod("elsewhere"); p == nil || podReady(p) != v1.ConditionTrue {
		t.Errorf("pod elsewhere = %v, want Ready=True on a live node", p)
	}
	for _, tt := range []struct {
		name      string
		got, want time.Duration
	}{
		{"node-unknown a", f.first(monitor.KindNodeUnknown, "a", "", ""), 55 * time.Second},
		{"NoExecute taint on a", f.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute), 55 * time.Second},
		{"NoSchedule taint on a", f.first(monitor.KindTaintAdded, "a", "", unreachableNoSched), 55 * time.Second},
		{"pods-not-ready a", f.first(monitor.KindPodsNotReady, "a", "", ""), 55 * time.Second},
		{"pod-evicted bare", f.first(monitor.KindPodEvicted, "", "default/bare", ""), 55 * time.Second},
		{"node-unknown b", f.first(monitor.KindNodeUnknown, "b", "", ""), -1},
	} {
		if tt.got != tt.want {
			t.Errorf("%s at %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	// The eviction: DisruptionTarget patched on the status, then a delete
	// carrying the pod's UID as precondition.
	var sawCondition bool
	for _, a := range f.actions("patch", "pods", "status") {
		if a.(k8stesting.PatchAction).GetName() == "bare" {
			sawCondition = true
		}
	}
	if !sawCondition {
		t.Errorf("no DisruptionTarget status patch of pod bare")
	}
	var deletes []string
	for _, a := range f.actions("delete", "pods", "") {
		d := a.(k8stesting.DeleteActionImpl)
		uid := "<none>"
		if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil {
			uid = string(*p.UID)
		}
		deletes = append(deletes, d.Name+" uid="+uid)
	}
	if want := "[bare uid=uid-bare]"; fmt.Sprint(deletes) != want {
		t.Errorf("pod deletes = %v, want %s", deletes, want)
	}

	f.advance(80*time.Second, liveExcept(f, "a"))
	if f.pod("short") == nil {
		t.Errorf("pod short deleted by 80s, want it kept until 85s")
	}
	f.advance(85*time.Second, liveExcept(f, "a"))
	if f.pod("short") != nil {
		t.Errorf("pod short still there at 85s, want deleted 30s after the taint")
	}
	if got := f.first(monitor.KindPodEvicted, "", "default/short", ""); got != 85*time.Second {
		t.Errorf("pod-evicted short at %v, want 85s", got)
	}
	if f.pod("defaults") == nil || f.pod("forever") == nil {
		t.Errorf("tolerating pods deleted before their toleration ran out")
	}
}

// TestLeaseResumesTaintsRemoved: when the kubelet comes back (Lease renewed,
// Ready=True written), the NoSchedule taint goes on the node update event and
// the NoExecute one at the next monitor pass; the pending 300s eviction is
// cancelled.
func TestLeaseResumesTaintsRemoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	f.pass(true)
	f.advance(100*time.Second, liveExcept(f, "a"))
	if !hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Fatalf("node a not tainted at 100s: %v", f.node("a").Spec.Taints)
	}
	f.clock.Step(time.Second) // 101s: the kubelet is back
	f.renew("a")
	f.setReady("a", v1.ConditionTrue)
	f.settle()
	if a := f.node("a"); hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule) || !hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Errorf("taints right after Ready=True = %v, want NoSchedule gone (node event), NoExecute kept until the monitor pass", a.Spec.Taints)
	}
	f.clock.Step(4 * time.Second) // 105s: monitor pass
	f.pass(true)
	if a := f.node("a"); len(a.Spec.Taints) != 0 {
		t.Errorf("taints at 105s = %v, want none", a.Spec.Taints)
	}
	if got := f.first(monitor.KindTaintRemoved, "a", "", unreachableNoExecute); got != 105*time.Second {
		t.Errorf("NoExecute taint removed at %v, want 105s", got)
	}
	f.advance(400*time.Second, liveExcept(f))
	if f.pod("defaults") == nil {
		t.Errorf("pod defaults evicted after the node came back")
	}
}

// TestTaintPatchConflictKeepsConcurrentTaint: another writer adds a taint
// between the controller's cached read and its patch. The patch carries the
// old resourceVersion, so it fails with a conflict; the retry re-reads the
// node from the API server and keeps the other writer's taint.
func TestTaintPatchConflictKeepsConcurrentTaint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	var raced atomic.Bool
	foreign := v1.Taint{Key: "example.com/maintenance", Value: "true", Effect: v1.TaintEffectNoSchedule}
	f.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" || a.(k8stesting.PatchAction).GetName() != "a" || raced.Swap(true) {
			return false, nil, nil
		}
		// The concurrent writer (inside the fake's lock, so through the
		// tracker): the node gets a new taint and a new resourceVersion.
		obj, err := f.client.Tracker().Get(nodesGVR, "", "a")
		if err != nil {
			return true, nil, err
		}
		n := obj.(*v1.Node)
		n.Spec.Taints = append(n.Spec.Taints, foreign)
		if _, _, err := f.server.store(nodesGVR, "", n); err != nil {
			return true, nil, err
		}
		return false, nil, nil // now the controller's patch, with a stale RV
	})
	f.pass(true)
	f.advance(55*time.Second, liveExcept(f, "a"))
	a := f.node("a")
	if !raced.Load() {
		t.Fatal("the concurrent writer never ran")
	}
	if !hasTaint(a, foreign.Key, foreign.Effect) {
		t.Errorf("taints = %v, want the concurrent writer's %s kept", a.Spec.Taints, foreign.Key)
	}
	if !hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule) || !hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Errorf("taints = %v, want both unreachable taints", a.Spec.Taints)
	}
	if len(f.actions("get", "nodes", "")) == 0 {
		t.Errorf("no API read of the node after the conflict")
	}
	for _, act := range f.actions("patch", "nodes", "") {
		if p := string(act.(k8stesting.PatchAction).GetPatch()); !containsRV(p) {
			t.Errorf("taint patch %s carries no resourceVersion: a blind write", p)
		}
	}
}

func containsRV(patch string) bool {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return jsonUnmarshal(patch, &p) == nil && p.Metadata.ResourceVersion != ""
}

// failFirst installs a reactor that fails the first n actions matching
// verb, resource, subresource and match with err, and returns how many it
// failed so far.
func failFirst(f *fixture, n int, verb, resource, sub string, match func(k8stesting.Action) bool, err error) *atomic.Int32 {
	var failed atomic.Int32
	f.client.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != sub || (match != nil && !match(a)) {
			return false, nil, nil
		}
		if failed.Load() >= int32(n) {
			return false, nil, nil
		}
		failed.Add(1)
		return true, nil, err
	})
	return &failed
}

// marksNotReady matches a pod status patch of the Ready condition (the
// Ready=False marking; an eviction's patch is of DisruptionTarget).
func marksNotReady(a k8stesting.Action) bool {
	pa, ok := a.(k8stesting.PatchAction)
	return ok && strings.Contains(string(pa.GetPatch()), `"type":"Ready"`)
}

// addsTaint matches a node patch that adds the taint key:effect, one the
// stored node does not have yet.
func addsTaint(f *fixture, key string, effect v1.TaintEffect) func(k8stesting.Action) bool {
	has := func(ts []v1.Taint) bool {
		for _, t := range ts {
			if t.Key == key && t.Effect == effect {
				return true
			}
		}
		return false
	}
	return func(a k8stesting.Action) bool {
		var p struct {
			Spec struct {
				Taints []v1.Taint `json:"taints"`
			} `json:"spec"`
		}
		pa := a.(k8stesting.PatchAction)
		if jsonUnmarshal(string(pa.GetPatch()), &p) != nil || !has(p.Spec.Taints) {
			return false
		}
		cur, err := f.client.Tracker().Get(nodesGVR, "", pa.GetName())
		return err == nil && !has(cur.(*v1.Node).Spec.Taints)
	}
}

// TestFailedWritesRetriedNoEvictionLost injects failures in every kind of
// write on the way: the Unknown status update, the NoSchedule and NoExecute
// taint patches (errors and conflicts), the pods' Ready=False updates and
// the pod deletions (more than upstream's 5 tries). Each is retried and in
// the end every decision is applied.
func TestFailedWritesRetriedNoEvictionLost(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Monitor.EvictionRetry = 2 * time.Second
	f := newFixture(t, cfg, cluster3()...)
	conflict := apierrors.NewConflict(nodesGVR.GroupResource(), "a", errInjected)
	statusFails := failFirst(f, 1, "patch", "nodes", "status", nil, errInjected)
	noExecFails := failFirst(f, 2, "patch", "nodes", "", addsTaint(f, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute), errInjected)
	noSchedFails := failFirst(f, 6, "patch", "nodes", "", addsTaint(f, v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule), conflict)
	podStatusFails := failFirst(f, 2, "patch", "pods", "status", marksNotReady, errInjected)
	deleteFails := failFirst(f, 7, "delete", "pods", "", nil, errInjected)

	f.pass(true)
	f.advance(55*time.Second, liveExcept(f, "a"))
	if statusFails.Load() != 1 || nodeReady(f.node("a")) != v1.ConditionTrue {
		t.Fatalf("status write at 55s: failures %d, Ready %v; want 1 failure and no write", statusFails.Load(), nodeReady(f.node("a")))
	}
	if got := f.first(monitor.KindWriteFailed, "a", "", ""); got != 55*time.Second {
		t.Errorf("first write-failed event at %v, want 55s", got)
	}
	f.advance(60*time.Second, liveExcept(f, "a"))
	if got := nodeReady(f.node("a")); got != v1.ConditionUnknown {
		t.Errorf("node a Ready at 60s = %v, want Unknown (written at the next pass)", got)
	}
	// The NoSchedule patch conflicts 6 times: the 5 attempts of one
	// RetryOnConflict, then the node event is requeued with backoff (on the
	// fake clock) and the next attempt succeeds. The NoExecute patch fails
	// twice and the node is retried from its zone queue: every attempt costs
	// a token of the zone's 0.1/s rate, so at 60s, 70s and 80s.
	f.advance(80*time.Second, liveExcept(f, "a"))
	a := f.node("a")
	if !hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) || !hasTaint(a, v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule) {
		t.Errorf("taints at 80s = %v, want both unreachable taints after the failed patches", a.Spec.Taints)
	}
	if got := f.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute); got != 80*time.Second {
		t.Errorf("NoExecute taint added at %v, want 80s (third token)", got)
	}
	if noExecFails.Load() != 2 || noSchedFails.Load() != 6 || podStatusFails.Load() != 2 {
		t.Errorf("injected failures: NoExecute %d/2, NoSchedule %d/6, pod status %d/2", noExecFails.Load(), noSchedFails.Load(), podStatusFails.Load())
	}
	for _, name := range []string{"defaults", "short", "forever"} {
		if p := f.pod(name); p == nil || podReady(p) != v1.ConditionFalse {
			t.Errorf("pod %s = %v, want Ready=False despite 2 failed updates", name, p)
		}
	}
	tainted := f.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute)
	f.advance(tainted+30*time.Second, liveExcept(f, "a"))
	if deleteFails.Load() != 7 {
		t.Errorf("pod deletion failures = %d, want 7", deleteFails.Load())
	}
	if f.pod("bare") != nil {
		t.Errorf("pod bare not deleted after 7 failed deletions")
	}
	if got, want := f.first(monitor.KindPodEvicted, "", "default/bare", ""), tainted+7*cfg.Monitor.EvictionRetry; got != want {
		t.Errorf("pod bare evicted at %v, want %v (7 failures 2s apart after the taint at %v)", got, want, tainted)
	}
}

// TestPodTolerationUpdateCancelsEviction: a pod update that changes only
// its tolerations reaches the Evictor: the short pod, due at 85s, made to
// tolerate unreachable forever at 60s is not evicted.
func TestPodTolerationUpdateCancelsEviction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	f.pass(true)
	f.advance(60*time.Second, liveExcept(f, "a"))
	p := f.pod("short").DeepCopy()
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].Key == v1.TaintNodeUnreachable {
			p.Spec.Tolerations[i].TolerationSeconds = nil // allowed on update
		}
	}
	if _, err := f.client.CoreV1().Pods("default").Update(f.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.advance(90*time.Second, liveExcept(f, "a"))
	if f.pod("short") == nil {
		t.Errorf("pod short evicted after it was made to tolerate unreachable forever")
	}
}

// TestEvictPodUIDPrecondition: a pod re-created under the same name is not
// touched for its predecessor's eviction: no condition patch, no delete.
func TestEvictPodUIDPrecondition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), readyNode("a", ""), lease("a"), pod("p", "a", false))
	cond := taints.DisruptionTargetCondition(f.clock.Now())
	err := f.c.Cluster().EvictPod(f.ctx, types.NamespacedName{Namespace: "default", Name: "p"}, "uid-old", &cond)
	if !apierrors.IsConflict(err) {
		t.Errorf("EvictPod(stale UID) = %v, want a conflict", err)
	}
	if f.pod("p") == nil || len(f.actions("patch", "pods", "status")) != 0 {
		t.Errorf("pod with a new UID was patched or deleted")
	}
	// Without a condition the delete itself carries the precondition.
	err = f.c.Cluster().EvictPod(f.ctx, types.NamespacedName{Namespace: "default", Name: "p"}, "uid-old", nil)
	if !apierrors.IsConflict(err) || f.pod("p") == nil {
		t.Errorf("EvictPod(stale UID, no condition) = %v, pod kept %v; want a conflict and the pod kept", err, f.pod("p") != nil)
	}
	err = f.c.Cluster().EvictPod(f.ctx, types.NamespacedName{Namespace: "default", Name: "gone"}, "uid-gone", &cond)
	if !apierrors.IsNotFound(err) {
		t.Errorf("EvictPod(missing pod) = %v, want NotFound", err)
	}
	if err := f.c.Cluster().EvictPod(f.ctx, types.NamespacedName{Namespace: "default", Name: "p"}, "uid-p", &cond); err != nil {
		t.Errorf("EvictPod(right UID) = %v, want nil", err)
	}
	if f.pod("p") != nil {
		t.Errorf("pod p not deleted")
	}
}

// TestEvictPodDisruptionTargetStatus: the status written before an eviction
// is upstream's (nodehealth.DisruptionTargetStatus): a DisruptionTarget
// condition that differs from it in observedGeneration or message is
// patched again; an identical one is not; a condition of another type is
// refused and the pod kept.
func TestEvictPodDisruptionTargetStatus(t *testing.T) {
	t.Parallel()
	upstream := taints.DisruptionTargetCondition(testutil.Epoch)
	tests := []struct {
		name      string
		have      *v1.PodCondition // the pod's DisruptionTarget condition, generation 3
		cond      v1.PodCondition
		wantPatch bool
		wantErr   bool
	}{
		{name: "none", cond: upstream, wantPatch: true},
		{name: "stale observedGeneration", have: &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: taints.DisruptionTargetReason, Message: taints.DisruptionTargetMessage, ObservedGeneration: 1}, cond: upstream, wantPatch: true},
		{name: "other message", have: &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: taints.DisruptionTargetReason, Message: "set by hand", ObservedGeneration: 3}, cond: upstream, wantPatch: true},
		{name: "identical", have: &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: taints.DisruptionTargetReason, Message: taints.DisruptionTargetMessage, ObservedGeneration: 3}, cond: upstream},
		{name: "not DisruptionTarget", cond: v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := pod("p", "a", false)
			p.Generation = 3
			if tt.have != nil {
				p.Status.Conditions = []v1.PodCondition{*tt.have}
			}
			f := newFixture(t, testConfig(), readyNode("a", ""), lease("a"), p)
			err := f.c.Cluster().EvictPod(f.ctx, types.NamespacedName{Namespace: "default", Name: "p"}, "uid-p", &tt.cond)
			if tt.wantErr {
				if err == nil || f.pod("p") == nil {
					t.Fatalf("EvictPod(%s) = %v, pod kept %v; want an error and the pod kept", tt.cond.Type, err, f.pod("p") != nil)
				}
				return
			}
			if err != nil {
				t.Fatalf("EvictPod = %v", err)
			}
			patches := f.actions("patch", "pods", "status")
			if got := len(patches) > 0; got != tt.wantPatch {
				t.Fatalf("status patched = %v, want %v", got, tt.wantPatch)
			}
			if !tt.wantPatch {
				return
			}
			var got v1.Pod
			if err := jsonUnmarshal(string(patches[0].(k8stesting.PatchAction).GetPatch()), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 1 {
				t.Fatalf("patched conditions %+v, want one", got.Status.Conditions)
			}
			c := got.Status.Conditions[0]
			if c.Type != v1.DisruptionTarget || c.Reason != taints.DisruptionTargetReason ||
				c.Message != taints.DisruptionTargetMessage || c.ObservedGeneration != 3 {
				t.Errorf("patched condition %+v, want upstream's with observedGeneration 3", c)
			}
		})
	}
}

// TestNewPodOnUnreachableNodeMarkedNotReady: a pod bound to a node that is
// already Unknown is marked Ready=False from its add event (upstream
// processPod). The first write fails: the pod's event is requeued with the
// workqueue's backoff and the write made again, before any monitor pass
// (upstream would wait for the pod's next event).
func TestNewPodOnUnreachableNodeMarkedNotReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	f.pass(true)
	f.advance(55*time.Second, liveExcept(f, "a"))
	fails := failFirst(f, 1, "patch", "pods", "status", func(a k8stesting.Action) bool {
		return marksNotReady(a) && a.(k8stesting.PatchAction).GetName() == "late"
	}, errInjected)
	f.create(pod("late", "a", false, v1.Toleration{Operator: v1.TolerationOpExists}))
	f.settle()
	if p := f.pod("late"); fails.Load() != 1 || p == nil || podReady(p) != v1.ConditionTrue {
		t.Fatalf("pod late after the failed write: %d failures, pod %v; want 1 and still Ready", fails.Load(), p)
	}
	f.clock.Step(time.Second) // 56s: the requeued event's backoff is over
	f.eventually("pod late Ready=False", func() bool {
		p := f.pod("late")
		return p != nil && podReady(p) == v1.ConditionFalse
	})
}

// TestFailedNodeEventWriteRequeued: a NoSchedule condition taint that
// cannot be written (more conflicts than one RetryOnConflict absorbs) is
// written again from the node's requeued event after the workqueue's
// backoff, with no other event and no monitor pass in between. Upstream
// logs the failure and waits for the node's next update.
func TestFailedNodeEventWriteRequeued(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	f := newFixture(t, cfg, cluster3()...)
	f.pass(true)
	conflict := apierrors.NewConflict(nodesGVR.GroupResource(), "a", errInjected)
	fails := failFirst(f, cfg.ConflictBackoff.Steps+1, "patch", "nodes", "", addsTaint(f, v1.TaintNodeNotReady, v1.TaintEffectNoSchedule), conflict)
	f.clock.Step(time.Second)
	f.setReady("a", v1.ConditionFalse) // the kubelet reports Ready=False at 1s
	f.settle()
	if got, want := fails.Load(), int32(cfg.ConflictBackoff.Steps); got != want || hasTaint(f.node("a"), v1.TaintNodeNotReady, v1.TaintEffectNoSchedule) {
		t.Fatalf("after the node event: %d failed patches, taints %v; want %d and no not-ready taint", got, f.node("a").Spec.Taints, want)
	}
	f.clock.Step(time.Second) // 2s, still before the monitor pass at 5s
	f.eventually("the not-ready:NoSchedule taint", func() bool {
		return hasTaint(f.node("a"), v1.TaintNodeNotReady, v1.TaintEffectNoSchedule)
	})
	if got := f.first(monitor.KindTaintAdded, "a", "", "node.kubernetes.io/not-ready:NoSchedule"); got != 2*time.Second {
		t.Errorf("not-ready:NoSchedule added at %v, want 2s", got)
	}
}

// TestNodeSelector: nodes outside the selector are neither counted nor
// touched.
func TestNodeSelector(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.NodeSelector = "pool=managed"
	objs := cluster3()
	for _, o := range objs {
		if n, ok := o.(*v1.Node); ok && n.Name != "c" {
			n.Labels["pool"] = "managed"
		}
	}
	f := newFixture(t, cfg, objs...)
	f.pass(true)
	f.advance(60*time.Second, liveExcept(f, "a", "c"))
	if got := len(f.c.Cluster().ListNodes()); got != 2 {
		t.Errorf("cached nodes = %d, want 2", got)
	}
	if got := nodeReady(f.node("c")); got != v1.ConditionTrue {
		t.Errorf("unselected silent node c Ready = %v, want untouched True", got)
	}
	if got := nodeReady(f.node("a")); got != v1.ConditionUnknown {
		t.Errorf("selected silent node a Ready = %v, want Unknown", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig())
	for _, tt := range []struct {
		name string
		mod  func(*controller.Config)
	}{
		{"negative resync", func(c *controller.Config) { c.Resync = -time.Second }},
		{"negative workers", func(c *controller.Config) { c.Workers = -1 }},
		{"negative snapshot period", func(c *controller.Config) { c.SnapshotPeriod = -1 }},
		{"bad selector", func(c *controller.Config) { c.NodeSelector = "a b c" }},
		{"negative backoff", func(c *controller.Config) { c.ConflictBackoff.Duration = -1 }},
		{"bad monitor config", func(c *controller.Config) { c.Monitor.MonitorPeriod = 0 }},
		// New used to start 1e12 goroutines in Run for this one.
		{"workers beyond MaxWorkers", func(c *controller.Config) { c.Workers = 1e12 }},
		{"monitor workers beyond MaxWorkers", func(c *controller.Config) { c.Monitor.Workers = monitor.MaxWorkers + 1 }},
		{"NaN eviction rate", func(c *controller.Config) { c.Monitor.Zones.EvictionQPS = math.NaN() }},
		{"threshold above 1", func(c *controller.Config) { c.Monitor.Zones.UnhealthyZoneThreshold = 7 }},
		{"negative grace", func(c *controller.Config) { c.Monitor.Health.GracePeriod = -time.Second }},
	} {
		cfg := testConfig()
		tt.mod(&cfg)
		if _, err := controller.New(f.client, f.clock, cfg); err == nil {
			t.Errorf("New(%s) = nil error, want one", tt.name)
		} else if !errors.Is(err, controller.ErrInvalidConfig) {
			t.Errorf("New(%s) = %v, want ErrInvalidConfig", tt.name, err)
		}
		// Validate rejects what New rejects, without a client, and says
		// which field.
		if err := cfg.Validate(); !errors.Is(err, controller.ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
	if err := testConfig().Validate(); err != nil {
		t.Errorf("Validate(testConfig()) = %v", err)
	}
	if _, err := controller.New(nil, f.clock, testConfig()); !errors.Is(err, controller.ErrInvalidConfig) {
		t.Errorf("New(nil client) = %v, want ErrInvalidConfig", err)
	}
}
