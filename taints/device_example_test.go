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

// A GPU's driver marks it unhealthy with a NoExecute device taint; the
// claim allocated that GPU tolerates the taint for 60 seconds, so both pods
// sharing the claim are deleted 60 seconds after the taint's TimeAdded.
// The loop is the caller's: feed objects, run rule statuses and
// deletions, report outcomes, sleep until NextDeadline.
func ExampleDeviceEvictor() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := taints.NewDeviceEvictor(taints.DefaultDeviceEvictorConfig())
	if err != nil {
		panic(err)
	}

	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"}}
	slice.Spec.Driver, slice.Spec.Pool.Name = "gpu.example.com", "node-1"
	slice.Spec.Devices = []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}
	secs := int64(60)
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "shared-gpu"}}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0", Request: "gpu",
		Tolerations: []resourcev1.DeviceToleration{{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: &secs}},
	}}}}
	var pods []*v1.Pod
	for _, name := range []string{"trainer-0", "trainer-1"} {
		uid := types.UID("uid-" + name)
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: uid})
		pods = append(pods, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: uid},
			Spec:       v1.PodSpec{NodeName: "node-1", ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}},
		})
	}

	// Informer events.
	_ = d.SetSlice(t0, slice)
	_ = d.SetClaim(t0, claim)
	for _, p := range pods {
		_ = d.SetPod(t0, p)
	}
	tainted := slice.DeepCopy()
	tainted.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{{
		Key: "gpu.example.com/unhealthy", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0.Add(10 * time.Second)},
	}}
	_ = d.SetSlice(t0.Add(10*time.Second), tainted)
	fmt.Println(d.Explain(t0.Add(10*time.Second), types.NamespacedName{Namespace: "ml", Name: "trainer-0"}))

	// The worker, on a virtual clock.
	now := t0.Add(10 * time.Second)
	for {
		for _, s := range d.RuleStatuses(now) {
			fmt.Println("rule status", s.Rule, s.Condition.Reason)
		}
		for _, x := range d.Due(now) {
			// Event, DisruptionTarget condition, delete with a UID precondition.
			fmt.Printf("%s: %s %s %s (%s), due at +%v\n", now.Sub(t0), taints.DeviceEventReason, x.Pod, taints.DeviceEventEvicting, x.Taints[0], x.At.Sub(t0))
			d.Done(now, x, taints.DeviceDeleted)
		}
		for _, c := range d.AppendCancelled(nil) {
			fmt.Println(taints.DeviceEventCancelling, c.Pod)
		}
		at, ok := d.NextDeadline()
		if !ok {
			break
		}
		now = at
	}
	// Output:
	// pod ml/trainer-0: evicted at 2026-01-01T00:01:10Z; claim shared-gpu Tainted from 2026-01-01T00:01:10Z; taints: ResourceSlice node-1-gpu gpu.example.com/node-1/gpu-0 taint #0
	// 1m10s: DeviceTaintManagerEviction ml/trainer-0 Marking for deletion (ResourceSlice node-1-gpu gpu.example.com/node-1/gpu-0 taint #0), due at +1m10s
	// 1m10s: DeviceTaintManagerEviction ml/trainer-1 Marking for deletion (ResourceSlice node-1-gpu gpu.example.com/node-1/gpu-0 taint #0), due at +1m10s
}

// A DeviceTaintRule with the None effect is a dry run: nothing is
// evicted, and the rule's status says what NoExecute would do.
func ExampleDeviceEvictor_RuleStatuses() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, _ := taints.NewDeviceEvictor(taints.DefaultDeviceEvictorConfig())
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu"}}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0", Request: "gpu",
	}}}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: "uid-trainer"}}
	_ = d.SetClaim(t0, claim)
	_ = d.SetPod(t0, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "trainer", UID: "uid-trainer"},
		Spec:       v1.PodSpec{NodeName: "node-1", ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}},
	})
	pool := "node-1"
	d.SetRule(t0, taints.DeviceTaintRule{
		Name: "drain-node-1", UID: "rule-uid", Selector: &taints.DeviceTaintSelector{Pool: &pool},
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNone, TimeAdded: &metav1.Time{Time: t0}},
	})
	for _, s := range d.RuleStatuses(t0) {
		fmt.Println(s.Rule, s.Condition.Status, s.Condition.Reason)
		fmt.Println(s.Condition.Message)
	}
	fmt.Println(len(d.Due(t0.Add(time.Hour))), "evicted")
	// Output:
	// drain-node-1 False NoEffect
	// 0 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.
	// 0 evicted
}
