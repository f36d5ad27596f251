package monitor_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// TestExcludedZoneTaintsOnce: zone-x's nodes are all excluded from the
// disruption count (LabelExcludeDisruption), so zone-x never has a zone
// decision; zone-1 beside it is healthy. x1's kubelet stops at 0s: x1 goes
// Unknown and is tainted at 55s. x2's stops after 20s: Unknown, and
// tainted, at 75s.
//
// zone-x's queue remembers x1 as tainted, so x1 goes through it once, and
// no UpdateNodeTaints call for it writes nothing. zonestate.Queues used to drop the queue whenever
// it was idle, so every other monitor pass found x1 unknown to a new queue
// and queued it again, and each time TaintPass spent the zone's token on
// a call that wrote nothing; at 75s x1 was queued ahead of x2, and x2 was
// tainted only at 85s.
func TestExcludedZoneTaintsOnce(t *testing.T) {
	s := newSim(t, testConfig())
	s.c.addNode("a", "zone-1", s.now)
	for _, n := range []string{"x1", "x2"} {
		node := monitortest.NewNode(n, "zone-x", s.now)
		node.Labels[monitor.LabelExcludeDisruption] = ""
		s.c.AddNode(t.Context(), node, monitortest.NewLease(n, testutil.Epoch))
	}
	zoneX := zonestate.Key(s.c.node("x1"))
	s.dead["x1"] = true
	s.runUntil(20 * time.Second)
	s.dead["x2"] = true
	s.runUntil(120 * time.Second)

	tests := []struct {
		name      string
		got, want any
	}{
		{"x1 tainted at", s.first(monitor.KindTaintAdded, "x1", "", unreachableNoExecute), 55 * time.Second},
		{"x1 taint calls that wrote nothing (tokens spent again)", s.c.taintNoops["x1"], 0},
		{"x2 tainted at", s.first(monitor.KindTaintAdded, "x2", "", unreachableNoExecute), 75 * time.Second},
		{"x2 taint calls that wrote nothing", s.c.taintNoops["x2"], 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if n, ok := s.m.Stats().QueuedByZone[zoneX]; !ok || n != 0 {
		t.Errorf("zone-x's queue after 120s: %d nodes waiting (kept %v), want kept and empty", n, ok)
	}
}

// TestExcludedZoneRunsAtEvictionRate: zone-p has four nodes; p2, p3 and p4
// stop at 0s, so at 55s zone-p is in partial disruption, small, and its
// queue stops (rate 0) with the three nodes waiting. At 60s an operator
// labels zone-p's nodes LabelExcludeDisruption: the zone leaves the
// disruption count and has no decision from then on, so its queue runs at
// EvictionQPS (zonestate.Decision.UndecidedQPS), the rate upstream's new
// queue for such a zone runs at, and the three are tainted 10s apart.
// zonestate.Queues used to keep the queue at its last rate, 0, for as long
// as it held nodes: they were never tainted.
func TestExcludedZoneRunsAtEvictionRate(t *testing.T) {
	s := newSim(t, testConfig())
	s.c.addNode("a", "zone-1", s.now)
	for _, n := range []string{"p1", "p2", "p3", "p4"} {
		s.c.addNode(n, "zone-p", s.now)
	}
	s.dead["p2"], s.dead["p3"], s.dead["p4"] = true, true, true
	s.runUntil(59 * time.Second)
	for _, n := range []string{"p2", "p3", "p4"} {
		if at := s.first(monitor.KindTaintAdded, n, "", unreachableNoExecute); at >= 0 {
			t.Fatalf("%s tainted at %v in a small zone in partial disruption, want not yet", n, at)
		}
	}
	for _, n := range []string{"p1", "p2", "p3", "p4"} {
		node := s.c.node(n).DeepCopy()
		node.Labels[monitor.LabelExcludeDisruption] = ""
		s.c.PutNode(node)
	}
	s.runUntil(120 * time.Second)
	var times []time.Duration
	for _, n := range []string{"p2", "p3", "p4"} {
		times = append(times, s.first(monitor.KindTaintAdded, n, "", unreachableNoExecute))
	}
	if want := []time.Duration{70 * time.Second, 80 * time.Second, 90 * time.Second}; !slices.Equal(times, want) {
		t.Errorf("p2, p3, p4 tainted at %v, want %v (10s apart from the first token after 60s)", times, want)
	}
}
