package metrics_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
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
