package monitor_test

import (
	"context"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSteadyPassAllocations pins the cost of a steady decision pass
// (MonitorPass, TaintPass, EvictionPass; every node healthy) with one
// worker: it must not allocate per node or per pod. What is left is
// zonestate.Tracker.Update's decision and the zone list TaintPass walks
// (zonestate.Queues.Each).
func TestSteadyPassAllocations(t *testing.T) {
	c := newBenchCluster(t, testConfig(), 600, 3, 5)
	c.decisionPass(benchEpoch)
	if n := testing.AllocsPerRun(20, func() { c.decisionPass(benchEpoch) }); n > 2 {
		t.Errorf("steady decision pass over 600 nodes: %v allocations, want at most 2", n)
	}
}

// TestMemoryPerPod measures the heap the Monitor keeps per pod (the
// Evictor's record of each pod) for 50,000 pods with the admission's default
// tolerations on healthy nodes: the pods themselves are built before the
// first reading and kept alive, as an informer cache keeps them, so what is
// counted is only what the Monitor adds.
func TestMemoryPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 50,000 pods")
	}
	const nodes, perNode = 500, 100
	c := newBenchCluster(t, testConfig(), nodes, 3, 0)
	c.decisionPass(benchEpoch)
	var pods []*v1.Pod
	for _, n := range c.ListNodes() {
		for j := range perNode {
			pods = append(pods, benchPod(n.Name, j))
		}
	}
	before := heapInUse()
	ctx := context.Background()
	for _, p := range pods {
		c.m.PodChanged(ctx, benchEpoch, p)
	}
	c.decisionPass(benchEpoch)
	after := heapInUse()
	per := float64(int64(after)-int64(before)) / float64(len(pods))
	t.Logf("the Monitor keeps %.0f B per pod", per)
	if per > memoryPerPodCeiling {
		t.Errorf("the Monitor keeps %.0f B per pod, want at most %d", per, memoryPerPodCeiling)
	}
	key := types.NamespacedName{Namespace: "default", Name: "node-00000-pod-00"}
	if got := c.m.Explain(benchEpoch, key); got.Node != "node-00000" {
		t.Errorf("Explain(%v) = %+v, want the pod known on node-00000", key, got)
	}
	runtime.KeepAlive(pods)
	runtime.KeepAlive(c)
}

// memoryPerPodCeiling is TestMemoryPerPod's ceiling.
const memoryPerPodCeiling = 200

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
