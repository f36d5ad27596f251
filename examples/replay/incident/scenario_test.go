package incident

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

// TestScenarioRoundTrip exports replays as policysim scenarios and runs
// them: the same nodes go Unknown within a Lease interval and a monitor
// period of the replay, and the same pods are evicted.
func TestScenarioRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		g    *gen
		opt  ReplayOptions
	}{
		{"outage", outage(), ReplayOptions{}},
		{"shipped, grace 60s", shipped("Request"), ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=60s")}},
		{"shipped, grace 40s", shipped("Request"), ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=40s")}},
		{"stall without breaker", &gen{nodes: 6, podsPerNode: 3, duration: 7 * time.Minute, stop: "n0", stopAt: time.Second},
			ReplayOptions{Policy: policy(t, "--feature-gates=NodeControllerLeaseCircuitBreaker=false"),
				LeaseWatchStalls: []Window{{From: epoch.Add(10 * time.Second), To: epoch.Add(70 * time.Second)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, run, _ := replayLog(t, tt.g.build(), tt.opt)
			yaml := run.Scenario(h, "round-trip")
			sc, err := sim.LoadScenario("round-trip.yaml", yaml)
			if err != nil {
				t.Fatalf("LoadScenario() error = %v\n%s", err, yaml)
			}
			res, err := sim.Run(context.Background(), sc)
			if err != nil {
				t.Fatalf("sim.Run() error = %v", err)
			}
			// n<i> -> zone-a-<i>: one zone of fewer than 10 nodes.
			first := func(kind Kind, node string, ds []Decision) (time.Duration, bool) {
				for _, d := range ds {
					if d.Kind == kind && d.Node == node {
						return d.Time.Sub(h.First), true
					}
				}
				return 0, false
			}
			var simDs []Decision
			evicted := map[string]bool{}
			for _, e := range res.Entries {
				node := strings.Replace(e.Node, "zone-a-", "n", 1)
				switch e.Kind {
				case sim.KindNodeUnknown:
					simDs = append(simDs, Decision{Time: h.First.Add(e.At), Kind: KindNodeUnknown, Node: node})
				case sim.KindPodEvicted:
					evicted[node] = true
				}
			}
			tol := run.Policy.NodeMonitorPeriod + 10*time.Second
			for _, n := range h.Nodes {
				a, okA := first(KindNodeUnknown, n.Name, run.Replayed)
				b, okB := first(KindNodeUnknown, n.Name, simDs)
				if okA != okB || (okA && (a-b).Abs() > tol) {
					t.Errorf("%s: replay Unknown at %v (%v), policysim at %v (%v); want the same within %v\n%s", n.Name, a, okA, b, okB, tol, yaml)
				}
				lost := false
				for _, d := range run.Replayed {
					lost = lost || (d.Kind == KindPodEvicted && d.Node == n.Name)
				}
				if lost != evicted[n.Name] {
					t.Errorf("%s: replay evicts pods: %v, policysim: %v", n.Name, lost, evicted[n.Name])
				}
			}
		})
	}
}
