package taints_test

import (
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The caller drives the Evictor: informer events go in, due evictions come
// out, and the caller deletes the pods and acknowledges. A pod with the
// admission plugin's default tolerations is deleted exactly 300s after its
// node is tainted unreachable; a pod tolerating everything stays.
func Example() {
	ev, err := taints.NewEvictor(taints.DefaultEvictorConfig())
	if err != nil {
		panic(err)
	}
	t0 := testutil.Epoch
	web := testutil.Pod("default", "web", "node-1")
	web.Spec.Tolerations = taints.WithDefaultTolerations(nil, taints.DefaultTolerationSeconds, taints.DefaultTolerationSeconds)
	agent := testutil.Pod("kube-system", "agent", "node-1")
	agent.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}} // a DaemonSet-like pod
	ev.SetPod(t0, web)
	ev.SetPod(t0, agent)

	// The node lifecycle controller taints node-1; the informer tells us.
	node := testutil.Node("node-1", t0)
	node, _ = taints.SwapHealthTaint(node, taints.UnreachableTaint(), t0)
	ev.SetNodeTaints(t0, node.Name, node.Spec.Taints)

	for now := t0; ; {
		for _, x := range ev.Due(now) {
			_ = taints.DisruptionTargetCondition(now) // patch the pod status, then delete
			fmt.Printf("+%v delete %s (%v)\n", now.Sub(t0), x.Pod, x.Reason)
			ev.Done(x.Pod) // the deletion succeeded
		}
		next, ok := ev.NextDeadline()
		if !ok {
			break
		}
		now = next // sleep until then (or until an informer event)
	}
	fmt.Println(ev.Explain(t0.Add(time.Hour), types.NamespacedName{Namespace: "kube-system", Name: "agent"}).State)
	// Output:
	// +5m0s delete default/web (TolerationExpired)
	// ToleratedForever
}

// A failed deletion is retried, never abandoned (upstream gives up after
// five quick attempts, #140639).
func ExampleEvictor_Retry() {
	ev, _ := taints.NewEvictor(taints.EvictorConfig{})
	t0 := testutil.Epoch
	ev.SetPod(t0, testutil.Pod("default", "guarded", "node-1"))
	ev.SetNodeTaints(t0, "node-1", []v1.Taint{taints.NotReadyTaint()})
	for now, failures := t0, 2; ; {
		for _, x := range ev.Due(now) {
			if failures > 0 { // say, a webhook denies the deletion
				failures--
				fmt.Printf("+%v attempt %d failed\n", now.Sub(t0), x.Attempt)
				ev.Retry(now, x.Pod, 10*time.Second)
				continue
			}
			fmt.Printf("+%v attempt %d deleted\n", now.Sub(t0), x.Attempt)
			ev.Done(x.Pod)
		}
		next, ok := ev.NextDeadline()
		if !ok {
			break
		}
		now = next
	}
	// Output:
	// +0s attempt 1 failed
	// +10s attempt 2 failed
	// +20s attempt 3 deleted
}

// DoneEviction checks the pod's UID: when a StatefulSet recreated the pod
// under the same name before the old pod's worker reported back, the late
// acknowledgement does not touch the new pod's eviction.
func ExampleEvictor_DoneEviction() {
	ev, _ := taints.NewEvictor(taints.EvictorConfig{})
	t0 := testutil.Epoch
	old := testutil.Pod("default", "web-0", "node-1")
	old.UID = "uid-1"
	ev.SetPod(t0, old)
	ev.SetNodeTaints(t0, "node-1", []v1.Taint{taints.NotReadyTaint()})
	first := ev.Due(t0)[0] // worker A deletes the old pod...

	recreated := old.DeepCopy()
	recreated.UID = "uid-2"
	ev.SetPod(t0.Add(time.Second), recreated)
	second := ev.Due(t0.Add(time.Second))[0] // ...worker B gets the new one

	ev.DoneEviction(first) // A reports late: ignored, uid-1 is gone
	fmt.Println(first.UID, second.UID, ev.Explain(t0.Add(time.Second), second.Pod).State)
	ev.DoneEviction(second)
	fmt.Println(ev.Explain(t0.Add(time.Second), second.Pod).State)
	// Output:
	// uid-1 uid-2 HandedOut
	// Done
}

func ExampleForConditions() {
	now := testutil.At(time.Minute)
	node := testutil.WithReady(testutil.Node("node-1", testutil.Epoch), v1.ConditionUnknown, testutil.Epoch, now)
	node = testutil.WithCondition(node, testutil.NodeCondition(v1.NodeDiskPressure, v1.ConditionTrue, now, now))
	node = testutil.WithTaints(node,
		v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule},    // stale
		v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute},     // not ours to touch here
		v1.Taint{Key: "example.com/dedicated", Effect: v1.TaintEffectNoSchedule}) // foreign

	add, remove := taints.ForConditions(node, now)
	for _, t := range add {
		fmt.Println("add", t.ToString())
	}
	for _, t := range remove {
		fmt.Println("remove", t.ToString())
	}
	// Output:
	// add node.kubernetes.io/unreachable:NoSchedule
	// add node.kubernetes.io/disk-pressure:NoSchedule
	// remove node.kubernetes.io/not-ready:NoSchedule
}

func ExampleDecideNoExecute() {
	now := testutil.At(time.Minute)
	unknown := testutil.NodeCondition(v1.NodeReady, v1.ConditionUnknown, testutil.Epoch, now)
	node := testutil.Node("node-1", testutil.Epoch)

	// First pass with Ready Unknown: queue the node for rate-limited tainting.
	action, taint := taints.DecideNoExecute(&unknown, node.Spec.Taints)
	fmt.Println(action, taint.ToString())

	// The zone queue lets it through: apply the taint.
	node, _ = taints.SwapHealthTaint(node, taint, now)

	// The kubelet comes back reporting Ready False: swap at once.
	notReady := testutil.NodeCondition(v1.NodeReady, v1.ConditionFalse, now, now)
	action, taint = taints.DecideNoExecute(&notReady, node.Spec.Taints)
	fmt.Println(action, taint.ToString())
	node, _ = taints.SwapHealthTaint(node, taint, now)
	fmt.Println(node.Spec.Taints[0].ToString())

	// Ready again: remove the health taints.
	ready := testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, now, now)
	action, _ = taints.DecideNoExecute(&ready, node.Spec.Taints)
	node, changed := taints.RemoveHealthTaints(node)
	fmt.Println(action, changed, len(node.Spec.Taints))
	// Output:
	// Queue node.kubernetes.io/unreachable:NoExecute
	// Swap node.kubernetes.io/not-ready:NoExecute
	// node.kubernetes.io/not-ready:NoExecute
	// Remove true 0
}

func ExampleMatchingTolerations() {
	nodeTaints := []v1.Taint{
		{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute},
		{Key: "example.com/maintenance", Effect: v1.TaintEffectNoExecute},
	}
	tolerations := []v1.Toleration{
		{Key: "example.com/maintenance", Operator: v1.TolerationOpExists, TolerationSeconds: testutil.Seconds(3600)},
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(300)},
		{Operator: v1.TolerationOpExists}, // never reached: the first match wins
	}
	all, used := taints.MatchingTolerations(nodeTaints, tolerations)
	d, forever := taints.MinTolerationTime(used)
	fmt.Println(all, len(used), d, forever)

	all, _ = taints.MatchingTolerations(append(nodeTaints, v1.Taint{Key: "other", Effect: v1.TaintEffectNoExecute}), tolerations[:2])
	fmt.Println(all)
	// Output:
	// true 2 5m0s false
	// false
}

func ExampleWithDefaultTolerations() {
	tol := []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	for _, t := range taints.WithDefaultTolerations(tol, taints.DefaultTolerationSeconds, taints.DefaultTolerationSeconds) {
		s := "forever"
		if t.TolerationSeconds != nil {
			s = fmt.Sprint(*t.TolerationSeconds, "s")
		}
		fmt.Println(t.Key, t.Operator, t.Effect, s)
	}
	// Output:
	// node.kubernetes.io/unreachable Exists NoExecute forever
	// node.kubernetes.io/not-ready Exists NoExecute 300s
}

func ExampleEvictor_Explain() {
	ev, _ := taints.NewEvictor(taints.EvictorConfig{})
	t0 := testutil.Epoch
	p := testutil.Pod("default", "db-0", "node-1")
	p.Spec.Tolerations = taints.WithDefaultTolerations(nil, 300*time.Second, 600*time.Second)
	ev.SetPod(t0, p)
	ev.SetNodeTaints(t0, "node-1", []v1.Taint{taints.UnreachableTaint(), taints.NotReadyTaint()})
	fmt.Println(ev.Explain(t0.Add(time.Minute), types.NamespacedName{Namespace: "default", Name: "db-0"}))
	fmt.Println(ev.Explain(t0, types.NamespacedName{Namespace: "default", Name: "gone"}))
	// Output:
	// pod default/db-0 on node node-1: evicted at 2026-01-01T00:05:00Z (TolerationExpired); taint node.kubernetes.io/not-ready:NoExecute tolerated for 300s by Exists node.kubernetes.io/not-ready:NoExecute from 2026-01-01T00:00:00Z
	// pod default/gone: not tracked
}

// With RescheduleEarlier, shortening a pending pod's toleration brings its
// eviction forward (upstream ignores the change, #108982).
func ExampleReschedulePolicy() {
	for _, policy := range []taints.ReschedulePolicy{taints.RescheduleNever, taints.RescheduleEarlier} {
		ev, _ := taints.NewEvictor(taints.EvictorConfig{Reschedule: policy})
		t0 := testutil.Epoch
		p := testutil.Pod("default", "a", "node-1")
		p.Spec.Tolerations = taints.WithDefaultTolerations(nil, time.Hour, time.Hour)
		ev.SetPod(t0, p)
		ev.SetNodeTaints(t0, "node-1", []v1.Taint{taints.UnreachableTaint()})
		p = p.DeepCopy()
		*p.Spec.Tolerations[1].TolerationSeconds = 300
		ev.SetPod(t0.Add(time.Minute), p)
		at, _ := ev.NextDeadline()
		fmt.Println(policy, at.Sub(t0))
	}
	// Output:
	// Never 1h0m0s
	// Earlier 5m0s
}
