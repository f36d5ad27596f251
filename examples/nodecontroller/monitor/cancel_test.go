package monitor_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// TestCancelledEvictionReported: a node that recovers before its pods'
// toleration runs out has its NoExecute taint removed, and each pod whose
// eviction was scheduled gets one KindEvictionCancelled Event (upstream
// "Cancelling deletion of Pod"), when the taint removal is written; a pod
// with nothing scheduled (tolerates forever) gets none, and without
// Config.CancelledEvictions nothing is reported.
func TestCancelledEvictionReported(t *testing.T) {
	for _, keep := range []int{0, 16} {
		cfg := testConfig()
		cfg.CancelledEvictions = keep
		s := newSim(t, cfg)
		for _, n := range []string{"a", "b", "c"} {
			s.c.addNode(n, "z1", s.now)
		}
		s.c.addPod("defaults", "a", s.now, true)
		s.c.addPod("forever", "a", s.now, false, v1.Toleration{Operator: v1.TolerationOpExists})
		s.dead["a"] = true
		s.runUntil(100 * time.Second)
		s.c.setReady("a", v1.ConditionTrue, s.now)
		delete(s.dead, "a")
		s.runUntil(400 * time.Second)

		var got []monitor.Event
		for _, e := range s.events {
			if e.Kind == monitor.KindEvictionCancelled {
				got = append(got, e)
			}
		}
		if keep == 0 {
			if len(got) != 0 {
				t.Errorf("CancelledEvictions 0: %d cancellations reported, want none: %+v", len(got), got)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("%d cancellations reported, want 1 (default/defaults): %+v", len(got), got)
		}
		e := got[0]
		if e.Pod != "default/defaults" || e.Node != "a" || e.Zone == "" {
			t.Errorf("cancellation = %+v, want default/defaults on a, in its zone", e)
		}
		if at, removed := s.first(monitor.KindEvictionCancelled, "", "", ""), s.first(monitor.KindTaintRemoved, "a", "", unreachableNoExecute); at != removed {
			t.Errorf("cancellation reported at %v, want %v (the NoExecute taint's removal)", at, removed)
		}
		if got := s.first(monitor.KindPodEvicted, "", "default/defaults", ""); got != -1 {
			t.Errorf("pod evicted at %v, want never", got)
		}
	}
}

// TestCancelledEvictionsValidated: New rejects a bound out of range.
func TestCancelledEvictionsValidated(t *testing.T) {
	for _, bad := range []int{-1, 1<<20 + 1} {
		cfg := monitor.DefaultConfig()
		cfg.CancelledEvictions = bad
		if _, err := monitor.New(cfg, newTestCluster(time.Time{}), nil); err == nil {
			t.Errorf("CancelledEvictions %d accepted", bad)
		}
	}
}
