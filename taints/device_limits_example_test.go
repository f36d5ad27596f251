package taints_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/taints"
)

// A DeviceTaintRule with an empty selector taints every device in the
// cluster (kubernetes/kubernetes#141422): upstream deletes every pod that
// uses one. With a blast-radius breaker at 50% the DeviceEvictor holds
// the driver's evictions instead, warns about the selector, and says why
// in the rule's status, Explain and a hold change (an Event); deleting the
// rule ends the hold with nothing evicted. The breaker is judged at the
// pass (RuleStatuses, Due), on every input fed so far.
func ExampleDeviceBlastRadius() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := taints.DefaultDeviceEvictorConfig()
	cfg.BlastRadius = taints.DeviceBlastRadius{MaxShare: 0.5}
	cfg.KeepWarnings = 16
	d, err := taints.NewDeviceEvictor(cfg)
	if err != nil {
		panic(err)
	}
	for i := range 4 {
		name, pod, uid := fmt.Sprintf("gpu-%d", i), fmt.Sprintf("trainer-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Driver: "gpu.example.com", Pool: "node-1", Device: name, Request: "gpu",
		}}}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: uid}}
		_ = d.SetClaim(t0, claim)
		_ = d.SetPod(t0, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: pod, UID: uid},
			Spec:       v1.PodSpec{NodeName: "node-1", ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}},
		})
	}

	d.SetRule(t0, taints.DeviceTaintRule{
		Name: "drain", UID: "rule-uid", Selector: &taints.DeviceTaintSelector{}, // meant to name a pool
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}},
	})
	for _, w := range d.AppendWarnings(nil) {
		fmt.Println("Warning", w.Kind.Reason()+":", w.Message())
	}
	// A pass.
	for _, s := range d.RuleStatuses(t0) {
		fmt.Println("rule", s.Rule, s.Condition.Status, s.Condition.Reason+":", s.Condition.Message)
	}
	fmt.Println(len(d.Due(t0)), "evicted;", d.Explain(t0, types.NamespacedName{Namespace: "ml", Name: "trainer-0"}))
	for _, h := range d.AppendHoldChanges(nil) {
		fmt.Println("Warning", h.Reason()+":", h.Message())
	}

	// The operator deletes the rule (or, if it was meant, calls
	// ReleaseHold("gpu.example.com") to let the evictions proceed).
	d.DeleteRule(t0.Add(time.Minute), "drain")
	fmt.Println(len(d.Due(t0.Add(time.Minute))), "evicted,", len(d.AppendCancelled(nil)), "cancelled")
	for _, h := range d.AppendHoldChanges(nil) {
		fmt.Println("Normal", h.Reason()+":", h.Message())
	}
	// Output:
	// Warning DeviceTaintRuleSelectsAll: DeviceTaintRule drain: empty device selector selects every device in the cluster (taint maintenance:NoExecute).
	// rule drain True EvictionHeld: 4 pods need to be evicted in 1 namespace. 4 of them held: Evictions held: 4 of 4 allocated devices of driver gpu.example.com (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted.
	// 0 evicted; pod ml/trainer-0: not evicted: held by the blast-radius limit of driver(s) gpu.example.com; claim gpu-0 Held
	// Warning DeviceTaintEvictionHeld: Evictions held: 4 of 4 allocated devices of driver gpu.example.com (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted.
	// 0 evicted, 0 cancelled
	// Normal DeviceTaintEvictionResumed: Evictions not held: 0 of 4 allocated devices of driver gpu.example.com (0%) have an untolerated NoExecute taint.
}

// A driver's storm taints 6 of its 10 GPUs (one node each) and trips a
// breaker at 20%; the driver is then rolled back node by node. With
// ResumeShare 0 the hold lasts until the last node is rolled back: the
// pods on the GPUs still tainted half-way (when the share is back at 20%)
// are not evicted, though their taints are long past due. (ResumeShare
// 0.2, no hysteresis, would resume there and evict them at once.)
func ExampleDeviceBlastRadius_resumeShare() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := taints.DefaultDeviceEvictorConfig()
	cfg.BlastRadius = taints.DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0}
	d, err := taints.NewDeviceEvictor(cfg)
	if err != nil {
		panic(err)
	}
	slice := func(node string, tainted bool) *resourcev1.ResourceSlice {
		s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu"}}
		s.Spec.Driver, s.Spec.Pool.Name = "gpu.example.com", node
		dev := resourcev1.Device{Name: "gpu-0"}
		if tainted {
			dev.Taints = []resourcev1.DeviceTaint{{Key: "xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}}
		}
		s.Spec.Devices = []resourcev1.Device{dev}
		return s
	}
	for i := range 10 {
		node, pod, uid := fmt.Sprintf("node-%d", i), fmt.Sprintf("trainer-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		_ = d.SetSlice(t0, slice(node, false))
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: pod + "-gpu"}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Driver: "gpu.example.com", Pool: node, Device: "gpu-0", Request: "gpu",
		}}}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: uid}}
		_ = d.SetClaim(t0, claim)
		_ = d.SetPod(t0, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: pod, UID: uid},
			Spec:       v1.PodSpec{NodeName: node, ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}},
		})
	}
	for i := range 6 {
		_ = d.SetSlice(t0, slice(fmt.Sprintf("node-%d", i), true))
	}
	d.Due(t0) // a pass: the breaker trips, nothing is evicted
	for _, h := range d.AppendHoldChanges(nil) {
		fmt.Println(h.Reason()+":", h.Message())
	}
	// The roll-back, a node a minute.
	now := t0
	for i := range 6 {
		now = now.Add(time.Minute)
		_ = d.SetSlice(now, slice(fmt.Sprintf("node-%d", i), false))
		evicted := len(d.Due(now))
		l := d.DriverLimits(nil)[0]
		fmt.Printf("%v: %d of %d tainted, %s, %d evicted\n", now.Sub(t0), l.TaintedDevices, l.AllocatedDevices, l.State, evicted)
	}
	for _, h := range d.AppendHoldChanges(nil) {
		fmt.Println(h.Reason()+":", h.Message())
	}
	// Output:
	// DeviceTaintEvictionHeld: Evictions held: 6 of 10 allocated devices of driver gpu.example.com (60%) have an untolerated NoExecute taint, more than 20%; the hold ends when none is tainted.
	// 1m0s: 5 of 10 tainted, Holding, 0 evicted
	// 2m0s: 4 of 10 tainted, Holding, 0 evicted
	// 3m0s: 3 of 10 tainted, Holding, 0 evicted
	// 4m0s: 2 of 10 tainted, Holding, 0 evicted
	// 5m0s: 1 of 10 tainted, Holding, 0 evicted
	// 6m0s: 0 of 10 tainted, Armed, 0 evicted
	// DeviceTaintEvictionResumed: Evictions not held: 0 of 10 allocated devices of driver gpu.example.com (0%) have an untolerated NoExecute taint.
}
