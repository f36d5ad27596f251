package controller_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
)

// steadyFixture has n nodes, synced by that many workers, every other one Ready, the others NotReady
// with running instances (each pass asks the cloud about those, as
// upstream), after a first pass.
func steadyFixture(t testing.TB, n, workers int) *fixture {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		ready := v1.ConditionTrue
		if i%2 == 1 {
			ready = v1.ConditionFalse
		}
		nodes[i] = node(fmt.Sprintf("n%05d", i), "S", ready)
	}
	cfg := controller.DefaultConfig()
	cfg.ConcurrentNodeLifecycleSyncs = workers
	f := newFixture(t, cfg, fakecloud.Config{}, nodes...)
	f.pass(0)
	return f
}

// TestPassAllocsConstant: a steady-state pass allocates a constant number
// of objects whatever the number of nodes (the cache's list and its sort),
// nothing per node.
func TestPassAllocsConstant(t *testing.T) {
	allocs := map[int]float64{}
	for _, n := range []int{10, 1000} {
		f := steadyFixture(t, n, 1)
		allocs[n] = testing.AllocsPerRun(20, func() { f.c.Pass(f.ctx) })
	}
	if allocs[10] != allocs[1000] || allocs[1000] > 4 {
		t.Errorf("allocs per pass: %v nodes=10, %v nodes=1000; want equal and at most 4", allocs[10], allocs[1000])
	}
}

// BenchmarkPass: one steady-state pass over the nodes (half Ready, half
// NotReady with running instances: 2 fake cloud calls each), one node at a
// time and on 4 workers (the fake cloud answers at once, so this measures
// the controller's overhead, not the overlap of slow calls).
func BenchmarkPass(b *testing.B) {
	for _, bc := range []struct{ n, workers int }{{100, 1}, {5000, 1}, {5000, 4}} {
		name := fmt.Sprintf("nodes=%d", bc.n)
		if bc.workers > 1 {
			name += fmt.Sprintf("/workers=%d", bc.workers)
		}
		n := bc.n
		b.Run(name, func(b *testing.B) {
			f := steadyFixture(b, n, bc.workers)
			b.ReportAllocs()
			for b.Loop() {
				f.c.Pass(f.ctx)
			}
			b.ReportMetric(float64(n), "nodes/op")
		})
	}
}
