package nodehealth

import (
	"testing"
	"time"
)

// TestPodsNotReadyEdgeUniquePerFlip: the edge used to be the (clamped) now of
// the flip, so when time did not advance a flip made again after an
// acknowledgement got the acknowledged flip's edge, and a late (repeated)
// acknowledgement of the first flip cleared the second, whose pods were then
// never marked. Every flip now has its own edge, also after a Restore of a
// pending one.
func TestPodsNotReadyEdgeUniquePerFlip(t *testing.T) {
	silent := readyNode("n1", T, 0, 0) // the cache still shows Ready=True
	for _, tt := range []struct {
		name   string
		second time.Time // now of the second flip's Observe
	}{
		{"same instant", sec(51)},
		{"clock stepped back", sec(40)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, restart := range []bool{false, true} {
				tr := newTracker(t)
				observeChecked(t, tr, sec(0), silent, nil)
				first, _ := observeChecked(t, tr, sec(51), silent, nil)
				if !first.MarkPodsNotReady {
					t.Fatalf("Observe(51s) MarkPodsNotReady = false, want true")
				}
				if restart { // the pending edge is restored, and later edges follow it
					snap := tr.Snapshot()
					tr = newTracker(t)
					tr.Restore(sec(51), snap)
				}
				if !tr.AckPodsNotReadyEdge("n1", first.PodsNotReadyEdge) {
					t.Fatalf("restart=%v: AckPodsNotReadyEdge(first) = false, want true", restart)
				}
				// The status write failed: the cache still has Ready=True,
				// so the flip is made again, at the same (clamped) instant.
				second, _ := observeChecked(t, tr, tt.second, silent, nil)
				if !second.MarkPodsNotReady {
					t.Fatalf("Observe(%s) MarkPodsNotReady = false, want true", rel(tt.second))
				}
				if second.PodsNotReadyEdge.Equal(first.PodsNotReadyEdge) {
					t.Errorf("restart=%v: second flip's PodsNotReadyEdge = %s, the first flip's; want a new edge",
						restart, rel(second.PodsNotReadyEdge))
				}
				if tr.AckPodsNotReadyEdge("n1", first.PodsNotReadyEdge) {
					t.Errorf("restart=%v: late AckPodsNotReadyEdge(first) = true, want false (it cleared the second flip)", restart)
				}
				again, _ := observeChecked(t, tr, tt.second, silent, nil)
				if !again.MarkPodsNotReady || !again.PodsNotReadyEdge.Equal(second.PodsNotReadyEdge) {
					t.Errorf("restart=%v: pending flip after the late ack: MarkPodsNotReady = %v, edge %s; want true, %s",
						restart, again.MarkPodsNotReady, rel(again.PodsNotReadyEdge), rel(second.PodsNotReadyEdge))
				}
				// A snapshot round-trips the pending edge.
				back := newTracker(t)
				back.Restore(sec(60), tr.Snapshot())
				if !back.AckPodsNotReadyEdge("n1", second.PodsNotReadyEdge) {
					t.Errorf("restart=%v: AckPodsNotReadyEdge(second) after Snapshot/Restore = false, want true", restart)
				}
			}
		})
	}
}
