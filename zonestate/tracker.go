package zonestate

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Tracker is the zone disruption state machine of upstream handleDisruption:
// it remembers each zone's state and last decided tainting rate, and whether
// the cluster is in full disruption mode (no Ready node in any zone), and
// turns one monitor pass's Ready conditions into a Decision.
//
// The zero Tracker is not usable; call NewTracker. A Tracker is safe for
// concurrent use: every method takes one internal mutex, and it runs no
// callbacks. It has no notion of time: call Update once per monitor pass.
type Tracker struct {
	mu sync.Mutex

	// Policy, copied by NewTracker.
	evictionQPS, secondaryQPS float64
	largeCluster              int
	threshold                 float64
	fullQPS                   float64
	hasFullQPS                bool

	zones map[string]zoneRecord // stored state and last decided QPS per zone
	full  bool                  // InFullDisruption of the last Update that saw a zone
	keys  []string              // scratch for sorting, reused across Updates
}

// zoneRecord is what the Tracker keeps per zone between Updates.
type zoneRecord struct {
	state State
	qps   float64
}

// NewTracker validates p and returns a Tracker with no zones, not in full
// disruption mode. The policy is copied, including the value FullDisruptionQPS
// points to, so later changes to p have no effect. An invalid p yields an
// error wrapping ErrInvalidPolicy.
func NewTracker(p Policy) (*Tracker, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	t := &Tracker{
		evictionQPS:  p.EvictionQPS,
		secondaryQPS: p.SecondaryEvictionQPS,
		largeCluster: p.LargeClusterThreshold,
		threshold:    p.UnhealthyZoneThreshold,
		zones:        make(map[string]zoneRecord),
	}
	if p.FullDisruptionQPS != nil {
		t.fullQPS, t.hasFullQPS = *p.FullDisruptionQPS, true
	}
	if p.HoldFullyDisruptedZones {
		t.fullQPS, t.hasFullQPS = 0, true
	}
	return t, nil
}

// Decision is the outcome of one Tracker.Update.
type Decision struct {
	// Zones holds one entry per zone of the Update that has at least one
	// condition, sorted by Key.
	Zones []ZoneDecision
	// Removed lists, sorted, the zones the Tracker knew that are absent from
	// this Update (or present with no conditions). The Tracker forgot them:
	// if one comes back it starts again from StateInitial.
	Removed []string
	// EnteredFullDisruption is set when every zone is now fully disrupted and
	// not all were before (the previous Update was not in full disruption
	// mode, or a zone is new: any StateInitial zone counts as "was not").
	// The caller removes every node's NoExecute health taints and empties and
	// stops every tainting queue (every QPS is 0).
	EnteredFullDisruption bool
	// ExitedFullDisruption is set when the previous Update was in full
	// disruption mode and some zone now is not fully disrupted. The caller
	// gives every node a fresh grace period (nodehealth.Tracker.ResetProbes)
	// and applies each zone's QPS.
	ExitedFullDisruption bool
	// InFullDisruption is set while every zone is fully disrupted: on
	// entering and while staying; it is cleared on exit. While it is set
	// every QPS is 0. An Update with no zones leaves it as it was.
	InFullDisruption bool
	// UndecidedQPS is the tainting rate of a zone that has a queue but no
	// entry in Zones (its nodes are all excluded from disruption counting
	// by the node.kubernetes.io/exclude-disruption label, or none was
	// counted this pass): the policy's EvictionQPS, as upstream, whose
	// addPodEvictorForNewZone creates such a zone's queue at that rate and
	// whose handleDisruption never changes it; and, unlike upstream, 0
	// while InFullDisruption is set (see the package documentation).
	// Queues.Apply applies it.
	UndecidedQPS float64
}

// ZoneDecision is the decision for one zone.
type ZoneDecision struct {
	// Key is the zone key (see Key).
	Key string
	// Size is the number of conditions given for the zone, nil ones
	// included; NotReady is how many of them are not ready (see Compute).
	Size, NotReady int
	// Previous is the zone's state before this Update (StateInitial for a
	// zone the Tracker did not know); State is its state now.
	Previous, State State
	// QPS is the zone's tainting rate (nodes per second; 0 stops the queue).
	QPS float64
	// RateChanged is set when QPS differs from the rate last decided for the
	// zone, and on the zone's first decision (Previous == StateInitial), so a
	// caller that applies QPS exactly when RateChanged is set never misses a
	// zone, whatever rate it created (or kept) the zone's queue with.
	RateChanged bool
}

// Update records the Ready conditions of this monitor pass, zone key →
// current Ready condition of each counted node (nil for a node without one),
// and returns what the caller must do. It implements upstream
// handleDisruption with these differences:
//
//   - zones are decided in sorted key order and every stale zone is removed
//     (upstream stops deleting at the first non-Full zone it meets in map
//     order, leaving a random subset of stale zones behind);
//   - a zone listed with no conditions is treated as absent (upstream never
//     builds one; this keeps an all-excluded zone from blocking full
//     disruption mode);
//   - every zone's QPS is recomputed on every Update (upstream only touches a
//     zone's limiter when its state changes, so a PartialDisruption zone that
//     grows past LargeClusterThreshold keeps rate 0, and a FullDisruption
//     zone stays stopped when full disruption mode ends through a new zone);
//   - full disruption mode is a remembered bit: unlike upstream, a cluster
//     whose last not-fully-disrupted zone disappears enters the mode, and a
//     new zone with a Ready node during the mode reports an exit (upstream
//     does neither, because a removed zone is skipped and a new zone counts
//     as "was not fully disrupted");
//   - an Update with no zones at all removes every stored zone and changes
//     nothing else (upstream: "all zones are fully disrupted" is vacuously
//     true now and before, so it stays put; we do the same and keep
//     InFullDisruption as it was).
//
// Update does not retain or modify zones. It costs O(N + Z log Z) for N
// conditions in Z zones, and allocates only the returned slices.
func (t *Tracker) Update(zones map[string][]*v1.NodeCondition) Decision {
	return update(t, zones, hasConditions, conditionCounts)
}

// ZoneHealth is one zone's health from a signal of the caller's choosing (a
// custom node condition, a probe, an external inventory) for
// Tracker.UpdateCounts: Size counted nodes, of which Unhealthy are not
// healthy (what Compute calls not ready).
type ZoneHealth struct {
	// Size is the number of counted nodes in the zone. A zone with Size <= 0
	// counts as absent, as an empty condition slice does for Update.
	Size int
	// Unhealthy is how many of the Size nodes are not healthy. It is
	// clamped to [0, Size].
	Unhealthy int
}

// UpdateCounts is Update for a caller whose health signal is not the Ready
// condition: zone key → node counts. It shares Update's state machine,
// stored zones and full disruption mode (the two may even be mixed from
// pass to pass), and classifies each zone as Compute would classify Size
// conditions of which Unhealthy are not True (see Classify). Out-of-range
// counts are clamped, never an error: a zone with Size <= 0 is absent, and
// Unhealthy is clamped to [0, Size]. ZoneDecision.NotReady reports the
// clamped Unhealthy.
//
// UpdateCounts does not retain or modify zones. It costs O(Z log Z) for Z
// zones, and allocates only the returned slices.
func (t *Tracker) UpdateCounts(zones map[string]ZoneHealth) Decision {
	return update(t, zones, hasCounts, healthCounts)
}

func hasConditions(c []*v1.NodeCondition) bool { return len(c) > 0 }

func conditionCounts(c []*v1.NodeCondition) (size, notReady int) {
	return len(c), countNotReady(c)
}

func hasCounts(h ZoneHealth) bool { return h.Size > 0 }

func healthCounts(h ZoneHealth) (size, notReady int) {
	h = h.clamped()
	return h.Size, h.Unhealthy
}

// update is the state machine behind Update and UpdateCounts: present says
// whether a zone takes part in the pass, counts gives its size and the
// number of its nodes that are not ready.
func update[V any](t *Tracker, zones map[string]V, present func(V) bool, counts func(V) (size, notReady int)) Decision {
	t.mu.Lock()
	defer t.mu.Unlock()

	var d Decision
	for k := range t.zones {
		if v, ok := zones[k]; !ok || !present(v) {
			d.Removed = append(d.Removed, k)
		}
	}
	slices.Sort(d.Removed)
	for _, k := range d.Removed {
		delete(t.zones, k)
	}

	keys := t.keys[:0]
	for k, v := range zones {
		if present(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	t.keys = keys[:0] // keep the capacity for the next Update
	defer clear(keys) // but not the strings

	if len(keys) == 0 {
		d.InFullDisruption = t.full
		d.UndecidedQPS = t.undecidedRate(t.full)
		return d
	}

	d.Zones = make([]ZoneDecision, len(keys))
	allFull, anyNew := true, false
	for i, k := range keys {
		size, notReady := counts(zones[k])
		s := classify(size, notReady, t.threshold)
		prev := StateInitial
		if r, ok := t.zones[k]; ok {
			prev = r.state
		} else {
			anyNew = true
		}
		if s != StateFullDisruption {
			allFull = false
		}
		d.Zones[i] = ZoneDecision{Key: k, Size: size, NotReady: notReady, Previous: prev, State: s}
	}

	d.EnteredFullDisruption = allFull && !(t.full && !anyNew)
	d.ExitedFullDisruption = !allFull && t.full
	d.InFullDisruption = allFull
	d.UndecidedQPS = t.undecidedRate(allFull)
	t.full = allFull

	for i := range d.Zones {
		z := &d.Zones[i]
		z.QPS = t.rate(z.State, z.Size, allFull)
		r, known := t.zones[z.Key]
		z.RateChanged = !known || r.qps != z.QPS
		t.zones[z.Key] = zoneRecord{state: z.State, qps: z.QPS}
	}
	return d
}

// undecidedRate is Decision.UndecidedQPS.
func (t *Tracker) undecidedRate(inFullDisruption bool) float64 {
	if inFullDisruption {
		return 0
	}
	return t.evictionQPS
}

// rate is the tainting rate of a zone in state s with size nodes (upstream
// setLimiterInZone, HealthyQPSFunc and ReducedQPSFunc). In full disruption
// mode every rate is 0; outside it, a FullDisruption zone always has some
// other zone that is not fully disrupted.
func (t *Tracker) rate(s State, size int, inFullDisruption bool) float64 {
	if inFullDisruption {
		return 0
	}
	switch s {
	case StateNormal:
		return t.evictionQPS
	case StatePartialDisruption:
		if size > t.largeCluster {
			return t.secondaryQPS
		}
		return 0
	case StateFullDisruption:
		if t.hasFullQPS {
			return t.fullQPS
		}
		return t.evictionQPS
	}
	return 0
}
