package monitor_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestPerNodeNow: with SetNodeClock, each node written Unknown in a pass
// carries the instant read when that node was processed (upstream
// monitorNodeHealth reads the clock per node in tryUpdateNodeHealth), not the
// pass's start; without it, every node carries the pass's now.
func TestPerNodeNow(t *testing.T) {
	const step = 3 * time.Second
	for _, perNode := range []bool{false, true} {
		cfg := testConfig()
		clock, advancing := testutil.Epoch, false
		s := newSim(t, cfg)
		if perNode {
			s.m.SetNodeClock(func() time.Time { // a clock that advances during the pass
				if advancing {
					clock = clock.Add(step)
				}
				return clock
			})
		}
		nodes := []string{"a", "b", "c"}
		for _, n := range nodes {
			s.c.addNode(n, "z1", testutil.Epoch)
		}
		ctx := context.Background()
		s.m.MonitorPass(ctx, testutil.Epoch) // first sight: no kubelet heartbeat since
		start := testutil.Epoch.Add(time.Minute)
		clock, advancing = start, true
		s.m.MonitorPass(ctx, start) // every grace period has run out
		for i, n := range nodes {
			want := start
			if perNode {
				want = start.Add(time.Duration(i+1) * step)
			}
			var ready *v1.NodeCondition
			conds := s.c.node(n).Status.Conditions
			for j := range conds {
				if conds[j].Type == v1.NodeReady {
					ready = &conds[j]
				}
			}
			if ready == nil || ready.Status != v1.ConditionUnknown {
				t.Fatalf("perNode %v: node %s Ready = %+v, want Unknown", perNode, n, ready)
			}
			if got := ready.LastTransitionTime.Time; !got.Equal(want) {
				t.Errorf("perNode %v: node %s Ready lastTransitionTime = +%v, want +%v",
					perNode, n, got.Sub(testutil.Epoch), want.Sub(testutil.Epoch))
			}
		}
	}
}

// TestSteadyPassAllocationsControllerWiring is TestSteadyPassAllocations
// with the controller's wiring: a per-node clock, a node health observer
// and cancelled evictions reported. None of them allocates in a steady pass.
func TestSteadyPassAllocationsControllerWiring(t *testing.T) {
	cfg := testConfig()
	cfg.CancelledEvictions = 64
	c := newBenchCluster(t, cfg, 600, 3, 5)
	c.m.SetNodeClock(func() time.Time { return benchEpoch })
	observed := 0
	c.m.SetNodeHealthObserver(func(string, time.Duration) { observed++ })
	c.decisionPass(benchEpoch)
	if observed != 600 {
		t.Errorf("observer saw %d node health updates in a pass over 600 nodes, want 600", observed)
	}
	if n := testing.AllocsPerRun(20, func() { c.decisionPass(benchEpoch) }); n > 2 {
		t.Errorf("steady decision pass over 600 nodes: %v allocations, want at most 2", n)
	}
}
