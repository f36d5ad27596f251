package metrics_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// TestObserveNodeHealth: each node's health update is one observation of
// node_collector_update_node_health_duration_seconds, in seconds, in
// upstream's buckets.
func TestObserveNodeHealth(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	for _, d := range []time.Duration{500 * time.Microsecond, 3 * time.Millisecond, 2 * time.Second} {
		m.ObserveNodeHealth("a", d)
	}
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mfs {
		if f.GetName() != metrics.UpdateNodeHealthDuration {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 3 || h.GetSampleSum() != 2.0035 {
			t.Errorf("count %d sum %v, want 3 and 2.0035", h.GetSampleCount(), h.GetSampleSum())
		}
		// Buckets 0.001, 0.004, ...: one observation at or below the first, two at or below the second.
		if b := h.GetBucket(); b[0].GetCumulativeCount() != 1 || b[1].GetCumulativeCount() != 2 {
			t.Errorf("buckets %v, want 1 then 2 cumulative", b)
		}
		if len(f.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("labels %v, want none (upstream has none)", f.GetMetric()[0].GetLabel())
		}
		return
	}
	t.Errorf("%s not gathered", metrics.UpdateNodeHealthDuration)
}

// TestPassesHeld: each held monitor pass (monitor.KindHealthHeld) counts
// once in lifecycle_node_health_passes_held_total; other events do not.
func TestPassesHeld(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	for _, k := range []monitor.Kind{monitor.KindHealthHeld, monitor.KindNodeUnknown, monitor.KindHealthHeld} {
		m.OnEvent(monitor.Event{At: epoch, Kind: k, Node: "a"})
	}
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mfs {
		if f.GetName() == metrics.PassesHeld {
			if got := f.GetMetric()[0].GetCounter().GetValue(); got != 2 {
				t.Errorf("%s = %v, want 2", metrics.PassesHeld, got)
			}
			return
		}
	}
	t.Errorf("%s not gathered", metrics.PassesHeld)
}
