package taints_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/taints"
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
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node-1",
			Tolerations: taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)},
	}
	agent := &v1.Pod{ // a DaemonSet-like pod
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", UID: "uid-agent"},
		Spec:       v1.PodSpec{NodeName: "node-1", Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}}},
	}
	ev.SetPod(t0, web)
	ev.SetPod(t0, agent)

	// The node lifecycle controller taints node-1; the informer tells us.
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}}
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
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev.SetPod(t0, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "guarded", UID: "uid-guarded"},
		Spec:       v1.PodSpec{NodeName: "node-1"},
	})
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
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", UID: "uid-1"},
		Spec:       v1.PodSpec{NodeName: "node-1"},
	}
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
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: v1.NodeSpec{Taints: []v1.Taint{
			{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule},    // stale
			{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute},     // not ours to touch here
			{Key: "example.com/dedicated", Effect: v1.TaintEffectNoSchedule}, // foreign
		}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionUnknown},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue},
		}},
	}

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
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	unknown := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionUnknown}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}

	// First pass with Ready Unknown: queue the node for rate-limited tainting.
	action, taint := taints.DecideNoExecute(&unknown, node.Spec.Taints)
	fmt.Println(action, taint.ToString())

	// The zone queue lets it through: apply the taint.
	node, _ = taints.SwapHealthTaint(node, taint, now)

	// The kubelet comes back reporting Ready False: swap at once.
	notReady := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse}
	action, taint = taints.DecideNoExecute(&notReady, node.Spec.Taints)
	fmt.Println(action, taint.ToString())
	node, _ = taints.SwapHealthTaint(node, taint, now)
	fmt.Println(node.Spec.Taints[0].ToString())

	// Ready again: remove the health taints.
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue}
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
		{Key: "example.com/maintenance", Operator: v1.TolerationOpExists, TolerationSeconds: ptr.To[int64](3600)},
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
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
	for _, t := range taints.WithDefaultTolerations(tol, taints.DefaultTolerationTime, taints.DefaultTolerationTime) {
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
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-0", UID: "uid-db-0"},
		Spec:       v1.PodSpec{NodeName: "node-1", Tolerations: taints.WithDefaultTolerations(nil, 300*time.Second, 600*time.Second)},
	}
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
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", UID: "uid-a"},
			Spec:       v1.PodSpec{NodeName: "node-1", Tolerations: taints.WithDefaultTolerations(nil, time.Hour, time.Hour)},
		}
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

// The countdown of a NoExecute taint starts when the Evictor first sees the
// taint, as upstream's. After a controller restart (or a leader change) a
// new Evictor sees every taint for the first time, so every pending
// eviction starts over (kubernetes/kubernetes#108268). UseTaintTimeAdded
// counts from the taint's TimeAdded (and each pod's creationTimestamp)
// instead, so the restart changes nothing.
func ExampleEvictorConfig_useTaintTimeAdded() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tainted := t0.Add(time.Minute) // the node lifecycle controller taints node-1
	taint := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: tainted}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web", CreationTimestamp: metav1.Time{Time: t0}},
		Spec: v1.PodSpec{NodeName: "node-1",
			Tolerations: taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)},
	}
	restart := tainted.Add(4 * time.Minute) // our controller restarts, 4 minutes into the 5

	for _, cfg := range []taints.EvictorConfig{{}, {UseTaintTimeAdded: true}} {
		ev, _ := taints.NewEvictor(cfg) // the new process: it has never seen the taint
		ev.SetPod(restart, pod)
		ev.SetNodeTaints(restart, "node-1", []v1.Taint{taint})
		at, _ := ev.NextDeadline()
		fmt.Printf("UseTaintTimeAdded=%v: evicted %v after the taint\n", cfg.UseTaintTimeAdded, at.Sub(tainted))
	}
	// Output:
	// UseTaintTimeAdded=false: evicted 9m0s after the taint
	// UseTaintTimeAdded=true: evicted 5m0s after the taint
}

// ConditionTaints is ForConditions with your own table: here
// node-problem-detector's KernelDeadlock and ReadonlyFilesystem conditions
// taint the node NoSchedule. The table manages only its own taints, so it
// runs beside ForConditions (upstream's table) on the same node.
func ExampleConditionTaints() {
	table, err := taints.NewConditionTaints([]taints.ConditionTaint{
		{Type: "KernelDeadlock", Status: v1.ConditionTrue,
			Taint: v1.Taint{Key: "example.com/kernel-deadlock", Effect: v1.TaintEffectNoSchedule}},
		{Type: "ReadonlyFilesystem", Status: v1.ConditionTrue,
			Taint: v1.Taint{Key: "example.com/readonly-filesystem", Effect: v1.TaintEffectNoSchedule}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "example.com/dedicated", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue},
			{Type: "KernelDeadlock", Status: v1.ConditionTrue},
			{Type: "ReadonlyFilesystem", Status: v1.ConditionFalse},
		}},
	}
	add, remove := table.For(node, now)
	for _, t := range add {
		node, _ = taints.AddOrUpdate(node, t, now)
	}
	for _, t := range remove {
		node, _ = taints.Remove(node, t)
	}
	for _, t := range node.Spec.Taints {
		fmt.Println(t.ToString())
	}

	// The kernel recovers: the taint goes; nothing else is touched.
	node.Status.Conditions[1].Status = v1.ConditionFalse
	add, remove = table.For(node, now.Add(time.Hour))
	fmt.Println(len(add), remove[0].ToString())

	// A bad row is named.
	_, err = taints.NewConditionTaints([]taints.ConditionTaint{
		{Type: "KernelDeadlock", Status: "true", Taint: v1.Taint{Key: "example.com/kernel-deadlock", Effect: v1.TaintEffectNoSchedule}},
	})
	fmt.Println(err)
	// Output:
	// example.com/dedicated:NoSchedule
	// example.com/kernel-deadlock:NoSchedule
	// 0 example.com/kernel-deadlock:NoSchedule
	// taints: invalid condition taint table: row 0 (KernelDeadlock=true → example.com/kernel-deadlock:NoSchedule): status "true" is not True, False or Unknown
}
