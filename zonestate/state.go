package zonestate

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// State is the disruption state of one zone, as upstream's ZoneState.
//
// The zero State is invalid: no function of this package returns it, so a
// zero value in a decision can only be a programming error. StateInitial
// marks a zone the Tracker has not decided on before (it appears only as
// ZoneDecision.Previous); Compute returns one of the other three.
type State uint8

const (
	// StateInitial is the state of a zone seen for the first time: upstream
	// stores it for a zone discovered in the current monitor pass. Compute
	// never returns it.
	StateInitial State = 1 + iota
	// StateNormal: the zone has Ready nodes and fewer not-ready nodes than
	// the unhealthy threshold asks for.
	StateNormal
	// StatePartialDisruption: at least 3 nodes, and at least the unhealthy
	// fraction of the zone, are not ready, but some node is Ready.
	StatePartialDisruption
	// StateFullDisruption: the zone has nodes and none of them is Ready.
	StateFullDisruption
)

// String returns the upstream name of s ("Initial", "Normal",
// "PartialDisruption", "FullDisruption"), or "State(n)" for an invalid value.
func (s State) String() string {
	switch s {
	case StateInitial:
		return "Initial"
	case StateNormal:
		return "Normal"
	case StatePartialDisruption:
		return "PartialDisruption"
	case StateFullDisruption:
		return "FullDisruption"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Compute classifies one zone from the current Ready conditions of its
// counted nodes (upstream ComputeZoneState) and returns the number of nodes
// that are not ready together with the zone's state:
//
//   - a node is ready only if its condition is non-nil and True; a nil
//     condition (the node has no Ready condition yet), False and Unknown all
//     count as not ready;
//   - no ready node and at least one not-ready node: StateFullDisruption;
//   - more than 2 not-ready nodes and notReady/(notReady+ready) >=
//     unhealthyThreshold: StatePartialDisruption;
//   - otherwise StateNormal, including for an empty list.
//
// The ratio is computed exactly as upstream does, in float32 (both counts and
// the threshold are converted to float32 before dividing and comparing), so
// decisions are bit-for-bit those of kube-controller-manager. For thresholds
// given as whole percentages this is the same as exact arithmetic on any zone
// of up to 10,000 nodes (pinned by a test); it differs only when the
// threshold is within a float32 rounding step (about 6e-8) of the ratio,
// e.g. threshold 0.7000000001 with 7 of 10 not ready is PartialDisruption.
//
// Compute does not validate unhealthyThreshold (the Tracker's Policy does): a
// NaN threshold never yields PartialDisruption, a threshold <= 0 yields it
// whenever more than 2 nodes are not ready and one is ready.
//
// Compute allocates nothing and runs in O(len(ready)).
func Compute(ready []*v1.NodeCondition, unhealthyThreshold float64) (notReady int, s State) {
	notReady = countNotReady(ready)
	return notReady, classify(len(ready), notReady, unhealthyThreshold)
}

// Classify is Compute on counts: the state of a zone of h.Size counted
// nodes of which h.Unhealthy are not healthy, for a health signal other than
// the Ready condition. Counts are clamped as Tracker.UpdateCounts does
// (Size < 0 counts as 0, Unhealthy is clamped to [0, Size]); a zone of no
// nodes is StateNormal. Classify allocates nothing.
func Classify(h ZoneHealth, unhealthyThreshold float64) State {
	h = h.clamped()
	return classify(h.Size, h.Unhealthy, unhealthyThreshold)
}

// clamped returns h with Size >= 0 and Unhealthy in [0, Size].
func (h ZoneHealth) clamped() ZoneHealth {
	h.Size = max(h.Size, 0)
	h.Unhealthy = min(max(h.Unhealthy, 0), h.Size)
	return h
}

// countNotReady counts the conditions that are nil or not True.
func countNotReady(ready []*v1.NodeCondition) int {
	readyCount := 0
	for _, c := range ready {
		if c != nil && c.Status == v1.ConditionTrue {
			readyCount++
		}
	}
	return len(ready) - readyCount
}

// classify is upstream ComputeZoneState on counts, with its float32 ratio.
func classify(size, notReady int, unhealthyThreshold float64) State {
	readyCount := size - notReady
	switch {
	case readyCount == 0 && notReady > 0:
		return StateFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+readyCount) >= float32(unhealthyThreshold):
		return StatePartialDisruption
	default:
		return StateNormal
	}
}
