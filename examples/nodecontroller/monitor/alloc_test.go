package monitor_test

import (
	"context"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestSteadyPassAllocations pins the cost of a steady decision pass
// (MonitorPass, TaintPass, EvictionPass; every node healthy) with one
// worker: it must not allocate per node or per pod. What is left is
// zonestate.Tracker.Update's decision.
func TestSteadyPassAllocations(t *testing.T) {
	c := newLeanCluster(t, testConfig(), 600, 3, 5)
	c.decisionPass(benchEpoch)
	if n := testing.AllocsPerRun(20, func() { c.decisionPass(benchEpoch) }); n > 1 {
		t.Errorf("steady decision pass over 600 nodes: %v allocations, want at most 1", n)
	}
}

// TestMemoryPerPod measures the heap the Monitor keeps per pod (the
// Evictor's record of each pod: node, UID, tolerations, plus the pod's name
// and namespace strings, which an informer cache would share) for 50,000
// pods with the admission's default tolerations on healthy nodes, and holds
// it to a ceiling.
func TestMemoryPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 50,000 pods")
	}
	const nodes, perNode = 500, 100
	c := newLeanCluster(t, testConfig(), nodes, 3, 0)
	c.decisionPass(benchEpoch)
	before := heapInUse()
	ctx := context.Background()
	for _, n := range c.ListNodes() {
		for j := range perNode {
			c.m.PodChanged(ctx, benchEpoch, benchPod(n.Name, j))
		}
	}
	c.decisionPass(benchEpoch)
	after := heapInUse()
	per := float64(int64(after)-int64(before)) / (nodes * perNode)
	t.Logf("the Monitor keeps %.0f B per pod", per)
	if per > memoryPerPodCeiling {
		t.Errorf("the Monitor keeps %.0f B per pod, want at most %d", per, memoryPerPodCeiling)
	}
	key := types.NamespacedName{Namespace: "default", Name: "node-00000-pod-00"}
	if got := c.m.Explain(benchEpoch, key); got.Node != "node-00000" {
		t.Errorf("Explain(%v) = %+v, want the pod known on node-00000", key, got)
	}
	runtime.KeepAlive(c)
}

// memoryPerPodCeiling is TestMemoryPerPod's ceiling, with room above what
// the Evictor keeps today. The target is 200 B.
const memoryPerPodCeiling = 512

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
