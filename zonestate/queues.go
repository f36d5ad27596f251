package zonestate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// RateQueue is what Queues needs of a zone's tainting queue.
// *evictionqueue.Queue[K] satisfies it for every key type K; this package
// does not import evictionqueue, so any queue with these methods will do.
type RateQueue interface {
	// SetRate changes the queue's rate to qps items per second; 0 stops it.
	SetRate(now time.Time, qps float64) error
	// Clear forgets every item.
	Clear()
	// NextDeadline is when the queue next has work, if it has any.
	NextDeadline() (time.Time, bool)
	// Len is the number of pending items.
	Len() int
}

// UnfinishedCounter is an optional method of a RateQueue:
// *evictionqueue.Queue[K] has it. Unfinished returns, read at one instant,
// the pending items plus those handed out by a Try whose callback has not
// returned, whose retry would land back in the queue.
//
// Deprecated: Queues used it to drop the queue of a zone without a
// decision once idle. It keeps every queue now, so nothing in this package
// calls Unfinished; the interface stays for callers that name it.
type UnfinishedCounter interface {
	Unfinished() int
}

// ErrNoConstructor is returned by NewQueues when it is given a nil
// constructor.
var ErrNoConstructor = errors.New("zonestate: NewQueues needs a queue constructor")

// Queues is the caller's set of per-zone tainting queues, kept in step with
// the Tracker's Decisions: Apply creates, re-rates, clears and stops queues
// exactly as the Decision documents, and NextDeadline is the earliest
// deadline over every zone. It replaces the loop every caller of Tracker
// otherwise writes (see the package documentation).
//
// A queue, once created, stays in the set, whether its zone has a decision
// or not: a zone without a decision (its nodes all excluded from disruption
// counting, or none counted this pass) keeps its pending nodes, its limiter
// and the nodes its queue remembers as done, and runs at the Decision's
// UndecidedQPS (see Apply for upstream). The set grows with the zone keys
// it has met, as upstream's map of zone tainters does.
//
// Zones are visited in sorted key order (Each, Zones, Apply), so what a
// caller derives from the set is reproducible.
//
// The zero Queues is not usable; call NewQueues. A Queues is safe for
// concurrent use: Apply and Ensure are serialized by one mutex, held while
// they call the constructor and the queues' SetRate and Clear; a second
// mutex guards the zone map and is held only to read or replace it, never
// while the constructor or a queue's method runs. The constructor and the
// queues' methods may therefore call Get, Each, Zones, NextDeadline and
// Len, but not Apply or Ensure; Each's callback may call anything. A queue
// used from several goroutines must itself be safe for concurrent use
// (*evictionqueue.Queue is).
type Queues[Q RateQueue] struct {
	applyMu  sync.Mutex // serializes Apply and Ensure
	newQueue func(now time.Time, zone string, qps float64) (Q, error)
	full     bool // InFullDisruption of the last Apply; guarded by applyMu

	// mu guards queues and list against readers. Only Apply and Ensure
	// change the set, each holding applyMu and then mu for the change, so
	// code holding applyMu may read queues and rate without mu.
	mu     sync.Mutex
	queues map[string]Q
	list   []zoneQueue[Q]     // the queues sorted by zone; replaced, never modified, on a change
	rate   map[string]float64 // the rate each queue was last given (created with, or set); applyMu
}

// NewQueues returns an empty set whose queues newQueue creates: it is called
// with the instant, the zone key and the zone's rate, and must return a
// queue running at that rate (qps 0: stopped). With evictionqueue:
//
//	qs, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
//		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
//	})
//
// It returns ErrNoConstructor when newQueue is nil.
func NewQueues[Q RateQueue](newQueue func(now time.Time, zone string, qps float64) (Q, error)) (*Queues[Q], error) {
	if newQueue == nil {
		return nil, ErrNoConstructor
	}
	return &Queues[Q]{
		newQueue: newQueue,
		queues:   make(map[string]Q),
		rate:     make(map[string]float64),
	}, nil
}

// Apply brings the set in line with d, the Decision of the last
// Tracker.Update (or UpdateCounts), at now:
//
//   - a zone of d.Zones without a queue gets one, created at the zone's
//     QPS;
//   - on d.EnteredFullDisruption every queue of the set, whether its zone
//     is in d.Zones or not, is cleared and stopped (SetRate 0), as upstream
//     handleDisruption does when it enters full disruption mode;
//   - otherwise every queue runs at its zone's QPS, or at d.UndecidedQPS
//     when its zone is not in d.Zones: SetRate(now, rate) is called for a
//     queue last given another rate (by its constructor, or a SetRate from
//     the set), so a steady decision calls no queue at all.
//
// No queue is ever dropped. The queue of a zone in d.Removed keeps what it
// holds (pending nodes, and the nodes its queue remembers as done) and runs
// at d.UndecidedQPS; if the zone comes back, its queue gets the zone's
// rate. Unlike upstream: there, handleDisruption deletes such a zone's
// state and the next pass's addPodEvictorForNewZone creates a new queue for
// it, so the pending nodes and the limiter are lost, and a node already
// tainted is queued again and spends the new queue's token.
//
// Apply continues after an error from the constructor or SetRate (a zone
// whose constructor failed gets no queue, and the next Apply that lists it,
// or Ensure, tries again; a failed SetRate is tried again by the next
// Apply) and returns every error joined, each naming its zone. It makes one
// pass over d and the set: O(Z) for Z zones, plus O(Z) per zone it
// creates (sorted key slice); in the steady state (no zone created, no rate
// changed) it allocates nothing.
func (s *Queues[Q]) Apply(now time.Time, d Decision) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()

	var errs []error
	fail := func(zone, op string, err error) {
		errs = append(errs, fmt.Errorf("zonestate: zone %q: %s: %w", zone, op, err))
	}
	s.full = d.InFullDisruption
	for _, z := range d.Zones {
		if _, ok := s.queues[z.Key]; ok {
			continue
		}
		q, err := s.newQueue(now, z.Key, z.QPS)
		if err != nil {
			fail(z.Key, "create queue", err)
			continue
		}
		s.put(z.Key, q, z.QPS)
	}

	sorted := sortedZones(d.Zones)
	next := 0                  // with sorted zones: the first one not before e.zone
	for _, e := range s.list { // sorted, so errors come in zone order
		if d.EnteredFullDisruption {
			e.q.Clear()
			if err := e.q.SetRate(now, 0); err != nil {
				fail(e.zone, "stop", err)
				continue
			}
			s.rate[e.zone] = 0
			continue
		}
		qps := d.UndecidedQPS
		if sorted { // a Tracker's are: one merge of two sorted lists
			for next < len(d.Zones) && d.Zones[next].Key < e.zone {
				next++
			}
			if next < len(d.Zones) && d.Zones[next].Key == e.zone {
				qps = d.Zones[next].QPS
			}
		} else if i := slices.IndexFunc(d.Zones, func(z ZoneDecision) bool { return z.Key == e.zone }); i >= 0 {
			qps = d.Zones[i].QPS
		}
		if s.rate[e.zone] == qps {
			continue
		}
		if err := e.q.SetRate(now, qps); err != nil {
			fail(e.zone, "set rate", err)
			continue
		}
		s.rate[e.zone] = qps
	}
	return errors.Join(errs...)
}

// sortedZones reports whether zones are sorted by Key, each once.
func sortedZones(zones []ZoneDecision) bool {
	for i := 1; i < len(zones); i++ {
		if zones[i-1].Key >= zones[i].Key {
			return false
		}
	}
	return true
}

// Ensure returns the zone's queue, creating it at qps (through the
// constructor) when the set has none, for a caller that must queue a node
// in a zone before, or without, a decision for it (upstream creates a zone's
// queue when it first meets one of its nodes, at evictionLimiterQPS: pass
// Policy.EvictionQPS). While the last Apply was in full disruption mode the
// queue is created stopped (qps 0), so nothing is tainted during the mode.
// From the next Apply on, the queue runs at its zone's QPS or, while its
// zone has no decision, at the Decision's UndecidedQPS. An existing queue
// is returned as it is. The constructor's error is returned wrapped.
func (s *Queues[Q]) Ensure(now time.Time, zone string, qps float64) (Q, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if q, ok := s.Get(zone); ok {
		return q, nil
	}
	if s.full {
		qps = 0
	}
	q, err := s.newQueue(now, zone, qps)
	if err != nil {
		var zero Q
		return zero, fmt.Errorf("zonestate: zone %q: create queue: %w", zone, err)
	}
	s.put(zone, q, qps)
	return q, nil
}

// Get returns the zone's queue and true, or the zero Q and false when the
// set has none. O(1).
func (s *Queues[Q]) Get(zone string) (Q, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[zone]
	return q, ok
}

// Zones returns the zone keys of the set's queues, sorted. It allocates the
// returned slice.
func (s *Queues[Q]) Zones() []string {
	s.mu.Lock()
	list := s.list
	s.mu.Unlock()
	keys := make([]string, len(list))
	for i, e := range list {
		keys[i] = e.zone
	}
	return keys
}

// Each calls fn for every zone's queue in sorted zone order, until fn
// returns false. It iterates over the set as it was when it started (so fn
// may call any method of the set, Apply included) and runs fn with no lock
// held. It allocates nothing.
func (s *Queues[Q]) Each(fn func(zone string, q Q) bool) {
	for _, e := range s.current() {
		if !fn(e.zone, e.q) {
			return
		}
	}
}

// NextDeadline returns the earliest NextDeadline of the set's queues, and
// false when no queue has one (every queue is empty or stopped). Ties go to
// the first zone in key order; the result does not depend on it. O(Z) for
// Z zones; it allocates nothing, and calls the queues with no lock held.
func (s *Queues[Q]) NextDeadline() (time.Time, bool) {
	var at time.Time
	found := false
	for _, e := range s.current() {
		if t, ok := e.q.NextDeadline(); ok && (!found || t.Before(at)) {
			at, found = t, true
		}
	}
	return at, found
}

// Len returns the number of pending items over every queue. O(Z); it
// allocates nothing, and calls the queues with no lock held.
func (s *Queues[Q]) Len() int {
	n := 0
	for _, e := range s.current() {
		n += e.q.Len()
	}
	return n
}

// current returns the set's sorted list, which is never modified.
func (s *Queues[Q]) current() []zoneQueue[Q] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list
}

// zoneQueue is one entry of the sorted list.
type zoneQueue[Q RateQueue] struct {
	zone string
	q    Q
}

// find returns the position of zone in the sorted list, and whether it is
// there.
func find[Q RateQueue](list []zoneQueue[Q], zone string) (int, bool) {
	return slices.BinarySearchFunc(list, zone, func(e zoneQueue[Q], z string) int { return strings.Compare(e.zone, z) })
}

// put adds the zone's queue (the set has none), created at rate. Called
// with s.applyMu held and s.mu not held.
func (s *Queues[Q]) put(zone string, q Q, rate float64) {
	s.rate[zone] = rate
	i, _ := find(s.list, zone)
	list := make([]zoneQueue[Q], 0, len(s.list)+1) // a new slice: readers may hold the old one
	list = append(append(append(list, s.list[:i]...), zoneQueue[Q]{zone: zone, q: q}), s.list[i:]...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[zone] = q
	s.list = list
}
