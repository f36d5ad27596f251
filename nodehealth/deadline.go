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
// would only make it retry a failing read at once).
//
// After ResetProbes or Restore, which see no Node object, a node counts
// with the shorter of GracePeriod and StartupGracePeriod until its next
// evaluation, so the instant may then be early (the evaluation at it
// changes nothing and sets the exact one), never late.
//
// The instant carries the monotonic reading of the now it was derived from.
// O(1); it allocates nothing. Keeping it costs O(log n) per evaluation whose
// Deadline changed.
func (t *Tracker) NextDeadline() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.due.Peek()
	if e == nil {
		return time.Time{}, false
	}
	return e.Value.Add(time.Nanosecond), true
}

// newDue returns the empty deadline heap of a Tracker.
func newDue() *heap.Heap[time.Time] {
	return heap.New(func(a, b *time.Time) bool { return a.Before(*b) })
}

// schedule records rec's deadline after an evaluation: a stale record
// leaves the heap (it changes nothing more until a new signal), any other
// one is in it at deadline. It allocates nothing.
// Called with t.mu held.
func (t *Tracker) schedule(rec *record, deadline time.Time, stale bool) {
	if stale {
		t.unschedule(rec)
		return
	}
	if rec.due.InHeap() {
		if !rec.due.Value.Equal(deadline) {
			rec.due.Value = deadline
			t.due.Fix(&rec.due)
		}
		return
	}
	rec.due.Value = deadline
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
