package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// memorySink keeps the last controller of BenchmarkControllerHeapPerPod
// (and its clientset) alive, so that -memprofile shows what it holds.
var memorySink []any

// BenchmarkControllerHeapPerPod reports the controller's live heap per pod
// at steady state: the slope between a cluster of 500 nodes and one of
// 1,000 (30 pods each, 4 zones, every node Ready with a fresh Lease), as
// the e2e scale test measures RSS, so that per-controller costs cancel.
// The controller is started (informers synced), every event handled and
// one monitor pass run, on a fake clock that never moves (nothing goes
// stale). The fake clientset's own copies are measured before the
// controller starts and subtracted. Profile what it holds with
//
//	go test -run '^$' -bench ControllerHeapPerPod -benchtime 1x -memprofile mem.out ./examples/nodecontroller/controller
//	go tool pprof -sample_index=inuse_space -top mem.out
func BenchmarkControllerHeapPerPod(b *testing.B) {
	const podsPerNode = 30
	sizes := []int{500, 1000}
	b.ReportAllocs()
	var heap [2]float64
	for b.Loop() {
		for i, n := range sizes {
			heap[i] = controllerHeap(b, n, podsPerNode)
		}
	}
	pods := float64((sizes[1] - sizes[0]) * podsPerNode)
	b.ReportMetric((heap[1]-heap[0])/pods, "heap-B/pod")
	b.ReportMetric(heap[1]/float64(sizes[1]*podsPerNode), "heap-B/pod@30000")
}

// controllerHeap is the live heap a started, settled controller holds for
// nodes nodes of podsPerNode pods each.
func controllerHeap(b *testing.B, nodes, podsPerNode int) float64 {
	b.Helper()
	memorySink = nil
	client := fake.NewSimpleClientset(steadyCluster(nodes, podsPerNode)...)
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	cfg := controller.DefaultConfig()
	c, err := controller.New(client, clk, cfg)
	if err != nil {
		b.Fatal(err)
	}
	before := liveHeap()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for c.ProcessEvents(ctx) > 0 {
	}
	c.MonitorPass(ctx)
	for c.ProcessEvents(ctx) > 0 {
	}
	after := liveHeap()
	c.Shutdown()
	memorySink = []any{client, c}
	return float64(after - before)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// steadyCluster is n Ready nodes in 4 zones with fresh Leases, and
// podsPerNode pods on each, shaped like the e2e scale test's (one
// container, the admission's tolerations and a 60s unreachable one, a
// zone label).
func steadyCluster(n, podsPerNode int) []k8sruntime.Object {
	objs := make([]k8sruntime.Object, 0, 2*n+n*podsPerNode)
	for i := range n {
		name := fmt.Sprintf("n-%04d", i)
		zone := fmt.Sprintf("zone-%d", i%4)
		node := readyNode(name, zone)
		objs = append(objs, node, &coordinationv1.Lease{ObjectMeta: lease(name).ObjectMeta, Spec: lease(name).Spec})
		for j := range podsPerNode {
			p := pod(fmt.Sprintf("p-%04d-%02d", i, j), name, true)
			p.Namespace = "scale"
			p.UID = types.UID(fmt.Sprintf("6f1c2a34-8b9d-4e5f-a6b7-%012d", i*podsPerNode+j))
			p.Labels = map[string]string{"zone": zone}
			p.Spec.Containers = []v1.Container{{Name: "c", Image: "registry.invalid/none:1"}}
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			objs = append(objs, p)
		}
	}
	return objs
}
