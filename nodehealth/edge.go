package nodehealth

import "time"

// newEdge returns the edge of a new pods-not-ready flip at now: now itself,
// or a nanosecond after the previous edge when now is not after it. Edges
// identify flips (AckPodsNotReadyEdge matches them with Equal), and now
// alone does not: the Tracker clamps a now that went backwards to the latest
// one seen, and two flips may happen at one instant (a flip made again after
// its acknowledgement, in the same pass or under a stepped-back wall clock),
// so a late acknowledgement of the first would clear the second. The edge
// keeps now's monotonic reading (Add). Called with t.mu held.
func (t *Tracker) newEdge(now time.Time) time.Time {
	if !now.After(t.edge) {
		now = t.edge.Add(time.Nanosecond)
	}
	t.edge = now
	return now
}
