package incident

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPhases: n1's kubelet posts Ready at +2m17.52s after a silence, its
// pods tolerating 30s: whether a monitor pass sees the post before their
// toleration runs out depends on the passes' phase.
func TestPhases(t *testing.T) {
	g := shipped("Request")
	g.resumeAt = 137*time.Second + 500*time.Millisecond
	evs := g.build()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := ReplayOptions{Policy: DefaultPolicy()}
	phases := PhaseOffsets(opt.Policy.NodeMonitorPeriod, 5)
	if want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}; !slices.Equal(phases, want) {
		t.Fatalf("PhaseOffsets(5s, 5) = %v, want %v", phases, want)
	}
	pr, runs, err := Phases(context.Background(), h, SliceOpener(evs), opt, phases)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 {
		t.Fatalf("Phases() returned %d runs, want 5", len(runs))
	}
	want := map[string][]time.Duration{"default/n1-web-0": {0, 3 * time.Second, 4 * time.Second}, "default/n1-web-1": {0, 3 * time.Second, 4 * time.Second}}
	if len(pr.Items) != 2 {
		t.Fatalf("Items = %+v, want the two pods saved", pr.Items)
	}
	for _, it := range pr.Items {
		if it.Outcome != "saved" || it.In != 3 || !slices.Equal(it.At, want[it.Object]) {
			t.Errorf("item %+v, want saved in phases %v (3 of 5)", it, want[it.Object])
		}
	}
}
