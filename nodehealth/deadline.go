package nodehealth

import (
	"time"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// NextDeadline returns the earliest instant at which an evaluation (Observe,
// ObserveLease) of a known node decides differently without any new
// signal: one nanosecond after the earliest Deadline among the nodes that
// were not stale at their last evaluation (stale means strictly after the
// Deadline, so the Deadline itself still decides "fresh"). This is the
// strictness of the queues' NextDeadline: calling again before the instant
// changes nothing, calling at it does. A caller that sleeps until it (and
// until its other deadlines) evaluates each node once more then; the node
// found stale leaves the set until a fresh signal, ResetProbes or Restore
// puts it back. The instant may be in the past (a node went stale and has
// not been evaluated since): evaluate at once. It reports false when no
// known node can go stale without a new evaluation (none known, or every
// one stale at its last evaluation).
//
// A stale verdict that Confirm turned down (VerdictCacheBehind,
// VerdictUnconfirmed) leaves its node out of the set as well, although
// nothing was written: a caller that sleeps on NextDeadline evaluates such
// nodes again on its own period (upstream's --node-monitor-period) and when
// CacheSynced ends the hold, not at an instant given here (a past instant
// would only make it retry a failing read at once). While a hold is
// active the instant is at most its Hold.Until (Config.MaxHold), when
// SyncCache ends it.
//
// After ResetProbes or Restore, which see no Node object, a node counts
// with the shorter of GracePeriod and StartupGracePeriod until its next
// evaluation, so the instant may then be early (the evaluation at it
// changes nothing and sets the exact one), never late.
//
// The instant carries the monotonic reading of the now it was derived from.
// It allocates nothing. It costs O(log n) for each node whose deadline moved
// later since it was last the earliest (see schedule), O(1) otherwise.
func (t *Tracker) NextDeadline() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.nextDue()
	for i := range t.holds {
		if h := &t.holds[i]; h.Cache != 0 && !h.Until.IsZero() && (!ok || h.Until.Before(at)) {
			at, ok = h.Until, true
		}
	}
	return at, ok
}

// nextDue is NextDeadline for the nodes alone. Called with t.mu held.
func (t *Tracker) nextDue() (time.Time, bool) {
	for {
		e := t.due.Peek()
		if e == nil {
			return time.Time{}, false
		}
		rec := e.Value.rec
		if !e.Value.at.Before(rec.deadline) {
			return rec.deadline.Add(time.Nanosecond), true
		}
		e.Value.at = rec.deadline // moved later since: settle it now
		t.due.Fix(e)
	}
}

// dueKey is a record's entry in the deadline heap: at, the key, is at most
// the record's deadline.
type dueKey struct {
	at  time.Time
	rec *record
}

// newDue returns the empty deadline heap of a Tracker.
func newDue() *heap.Heap[dueKey] {
	return heap.New(func(a, b *dueKey) bool { return a.at.Before(b.at) })
}

// schedule records rec's deadline after an evaluation: a stale record
// leaves the heap (it changes nothing more until a new signal), any other
// one is in it. A deadline that moves earlier is the heap's key at once; one
// that moves later (a fresh heartbeat: nearly every evaluation that changes
// anything) leaves the key where it was, a lower bound that NextDeadline
// settles when it reaches the top. So a heartbeat costs O(1) instead of a
// walk down the heap, whose every level is a cache miss at 100,000 nodes.
// It allocates nothing. Called with t.mu held.
func (t *Tracker) schedule(rec *record, deadline time.Time, stale bool) {
	if stale {
		t.unschedule(rec)
		return
	}
	if !rec.deadline.Equal(deadline) {
		rec.deadline = deadline // not written when unchanged: a steady pass dirties no record
	}
	if rec.due.InHeap() {
		if deadline.Before(rec.due.Value.at) {
			rec.due.Value.at = deadline
			t.due.Fix(&rec.due)
		}
		return
	}
	rec.due.Value = dueKey{at: deadline, rec: rec}
	t.due.PushElem(&rec.due)
}

// unschedule takes rec (nil: nothing) out of the deadline heap. Called with
// t.mu held.
func (t *Tracker) unschedule(rec *record) {
	if rec != nil && rec.due.InHeap() {
		t.due.Remove(&rec.due)
	}
}

// grace returns the grace period to count from rec's probe when there is
// no node object to look at (ResetProbes, Restore). For a heartbeat timed
// by ObserveLease it is exact: GracePeriod once a Lease was seen,
// StartupGracePeriod before. For a node it depends on whether the node
// will show a Ready condition at its next Observe, which the saved state
// cannot tell (a status write of the Tracker's own may have failed), so it
// is the shorter of the two: NextDeadline is then at worst early (an
// evaluation that changes nothing and reschedules the node exactly), never
// late.
func (t *Tracker) grace(rec *record) time.Duration {
	if rec.leaseOnly {
		if rec.lease.present {
			return t.cfg.GracePeriod
		}
		return t.cfg.StartupGracePeriod
	}
	return min(t.cfg.GracePeriod, t.cfg.StartupGracePeriod)
}
