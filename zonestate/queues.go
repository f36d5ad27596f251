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
// Queues drops the queue of a removed zone only when it is idle: when
// Unfinished() == 0 for a queue that has the method, when Len() == 0 for
// one that has not. Len leaves out an item in flight, so with a queue that
// lacks Unfinished the caller must not run Try on a removed zone's queue
// concurrently with Apply (serialize them, for example by calling both
// from one loop), or a retry may land in a queue the set no longer holds.
type UnfinishedCounter interface {
	Unfinished() int
}

// ErrNoConstructor is returned by NewQueues when it is given a nil
// constructor.
var ErrNoConstructor = errors.New("zonestate: NewQueues needs a queue constructor")

// Queues is the caller's set of per-zone tainting queues, kept in step with
// the Tracker's Decisions: Apply creates, re-rates, clears, stops and drops
// queues exactly as the Decision documents, and NextDeadline is the earliest
// deadline over every zone. It replaces the loop every caller of Tracker
// otherwise writes (see the package documentation).
//
// Zones are visited in sorted key order (Each, Zones, Apply), so what a
// caller derives from the set is reproducible.
//
// The zero Queues is not usable; call NewQueues. A Queues is safe for
// concurrent use: Apply and Ensure are serialized by one mutex, held while
// they call the constructor and the queues' SetRate, Clear, Len and
// Unfinished; a second mutex guards the zone map and is held only to read
// or replace it, never while the constructor or a queue's method runs. The constructor
// and the queues' methods may therefore call Get, Each, Zones,
// NextDeadline and Len, but not Apply or Ensure; Each's callback may call
// anything. A queue used from several goroutines must itself be safe for
// concurrent use (*evictionqueue.Queue is).
type Queues[Q RateQueue] struct {
	applyMu  sync.Mutex // serializes Apply and Ensure
	newQueue func(now time.Time, zone string, qps float64) (Q, error)
	full     bool // InFullDisruption of the last Apply; guarded by applyMu

	// mu guards queues and list against readers. Only Apply and Ensure
	// change the set, each holding applyMu and then mu for the change, so
	// code holding applyMu may read queues, rate and absent without mu.
	mu     sync.Mutex
	queues map[string]Q
	list   []zoneQueue[Q]      // the queues sorted by zone; replaced, never modified, on a change
	rate   map[string]float64  // each queue's rate outside full disruption mode; applyMu
	absent map[string]struct{} // zones with a queue but no decision in the last Apply; applyMu
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
		absent:   make(map[string]struct{}),
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
//   - otherwise a zone whose RateChanged is set, and every zone of d.Zones
//     on d.ExitedFullDisruption, gets SetRate(now, QPS);
//   - the queue of a zone in d.Removed is dropped when it is idle: empty,
//     and with no item in flight in a Try (see UnfinishedCounter). One
//     that still holds items, or one in flight, keeps running at its last rate (upstream keeps
//     the old queue too, until the zone comes back) and is dropped by the
//     first later Apply that finds it idle while its zone is still absent,
//     so no queued node is lost and queues of zones gone for good do not
//     accumulate. If the zone comes back first, its queue is reused and gets
//     the zone's rate (its first decision has RateChanged set); unlike
//     upstream, which replaces the queue and loses its items and limiter;
//   - on d.ExitedFullDisruption a queue whose zone has no decision gets
//     back the rate it had before the mode (or the rate Ensure was asked
//     for).
//
// A queue created by Ensure for a zone that has no decision counts as
// absent in the same way.
//
// Apply continues after an error from the constructor or SetRate (a zone
// whose constructor failed gets no queue, and the next Apply that lists it,
// or Ensure, tries again) and returns every error joined, each naming its
// zone. It makes one pass over d and the set: O(Z) for Z zones, plus O(Z)
// per zone it creates or drops (sorted key slice); in the steady state (no
// zone created, dropped, stopped or restarted) it allocates nothing.
func (s *Queues[Q]) Apply(now time.Time, d Decision) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()

	var errs []error
	fail := func(zone, op string, err error) {
		errs = append(errs, fmt.Errorf("zonestate: zone %q: %s: %w", zone, op, err))
	}
	s.full = d.InFullDisruption
	for _, z := range d.Zones {
		q, ok := s.Get(z.Key)
		if !ok {
			nq, err := s.newQueue(now, z.Key, z.QPS)
			if err != nil {
				fail(z.Key, "create queue", err)
				continue
			}
			s.put(z.Key, nq, z.QPS, !d.InFullDisruption)
			continue
		}
		delete(s.absent, z.Key)
		if !d.InFullDisruption {
			s.rate[z.Key] = z.QPS
		}
		if !d.EnteredFullDisruption && (z.RateChanged || d.ExitedFullDisruption) {
			if err := q.SetRate(now, z.QPS); err != nil {
				fail(z.Key, "set rate", err)
			}
		}
	}

	for _, k := range d.Removed {
		if _, ok := s.queues[k]; ok {
			s.absent[k] = struct{}{}
		}
	}
	switch {
	case d.EnteredFullDisruption:
		for _, e := range s.list { // sorted, so errors come in zone order
			e.q.Clear()
			if err := e.q.SetRate(now, 0); err != nil {
				fail(e.zone, "stop", err)
			}
		}
	case d.ExitedFullDisruption:
		for _, e := range s.list {
			if _, ok := s.absent[e.zone]; ok {
				if r, known := s.rate[e.zone]; known {
					if err := e.q.SetRate(now, r); err != nil {
						fail(e.zone, "set rate", err)
					}
				}
			}
		}
	}

	for k := range s.absent {
		if idle(s.queues[k]) {
			s.mu.Lock()
			s.drop(k)
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// idle reports whether q has no work left: nothing pending and, when it can
// tell (UnfinishedCounter), nothing in flight either.
func idle[Q RateQueue](q Q) bool {
	if u, ok := any(q).(UnfinishedCounter); ok {
		return u.Unfinished() == 0
	}
	return q.Len() == 0
}

// Ensure returns the zone's queue, creating it at qps (through the
// constructor) when the set has none, for a caller that must queue a node
// in a zone before, or without, a decision for it (upstream creates a zone's
// queue when it first meets one of its nodes). A queue Ensure creates for a
// zone without a decision in the last Apply is dropped by a later Apply once
// it is idle and the zone still has no decision. While the last Apply was
// in full disruption mode the queue is created stopped (qps 0) and gets qps
// when an Apply exits the mode, so nothing is tainted during the mode. The
// constructor's error is returned wrapped.
func (s *Queues[Q]) Ensure(now time.Time, zone string, qps float64) (Q, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if q, ok := s.Get(zone); ok {
		return q, nil
	}
	initial := qps
	if s.full {
		initial = 0
	}
	q, err := s.newQueue(now, zone, initial)
	if err != nil {
		var zero Q
		return zero, fmt.Errorf("zonestate: zone %q: create queue: %w", zone, err)
	}
	s.put(zone, q, qps, true)
	s.absent[zone] = struct{}{}
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

// put adds the zone's queue (the set has none), and its rate outside full
// disruption mode when setRate. Called with s.applyMu held and s.mu not
// held.
func (s *Queues[Q]) put(zone string, q Q, rate float64, setRate bool) {
	if setRate {
		s.rate[zone] = rate
	}
	i, _ := find(s.list, zone)
	list := make([]zoneQueue[Q], 0, len(s.list)+1) // a new slice: readers may hold the old one
	list = append(append(append(list, s.list[:i]...), zoneQueue[Q]{zone: zone, q: q}), s.list[i:]...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[zone] = q
	s.list = list
}

// drop forgets the zone's queue. Called with s.applyMu and s.mu held.
func (s *Queues[Q]) drop(zone string) {
	delete(s.queues, zone)
	delete(s.rate, zone)
	delete(s.absent, zone)
	if i, found := find(s.list, zone); found {
		s.list = slices.Concat(s.list[:i], s.list[i+1:]) // a new slice: readers may hold the old one
	}
}
