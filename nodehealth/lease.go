package nodehealth

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeaseResult is what one ObserveLease call decided for one heartbeat.
type LeaseResult struct {
	// GracePeriod is the grace that applied: Config.GracePeriod once a
	// Lease has been seen, Config.StartupGracePeriod before.
	GracePeriod time.Duration
	// Renewed is true when this call counted a fresh signal: the first
	// Lease seen, or a RenewTime different from the one seen before.
	Renewed bool
	// Stale is true when no fresh signal arrived for longer than
	// GracePeriod: now is strictly after Deadline.
	Stale bool
	// Expired is true on the one call that first found the heartbeat stale
	// since its last fresh signal (or since ResetProbes or Restore): the
	// edge on which to act, as the StatusUpdate of a node's first stale
	// evaluation is. Later stale calls report Stale only.
	Expired bool
	// Deadline is probe + GracePeriod: when the heartbeat goes stale if no
	// new signal arrives. The probe time is the controller-clock time of the
	// last fresh signal (of the first call, before any Lease is seen).
	Deadline time.Time
}

// ObserveLease evaluates at now a heartbeat that is not a kubelet's: a
// Lease that some agent of yours renews (in any namespace, under any name),
// tracked under name. It times the Lease exactly as Observe times a node's
// Lease, with no Node object: first sight, or a RenewTime that differs in
// any way from the saved one, is a fresh signal (probe = now); the
// heartbeat is stale strictly after probe + grace. lease may be nil (none
// exists yet, or it was deleted): a name first seen without a Lease starts
// its StartupGracePeriod at now, and once a Lease has been seen a nil one
// is simply no signal. Nothing is written and no pods-not-ready edge is
// set: what a stale heartbeat means is the caller's to decide (Expired marks
// the call to act on).
//
// Heartbeats share the Tracker's names, grace periods, NextDeadline,
// ResetProbes, Forget, Snapshot and Restore with nodes; use a Tracker of
// their own (with their own Config: GracePeriod is typically a few times
// the Lease's leaseDurationSeconds) unless the names cannot collide. A name
// timed by Observe is timed by ObserveLease from then on, and back; such a
// name's unanswered confirmation is dropped (Confirm returns ErrNotPending).
//
// Errors: an empty name (ErrInvalidNode); the Tracker is then left
// unchanged. ObserveLease never modifies lease. O(log n) when the Deadline
// changes, O(1) otherwise; it allocates only a name's first record.
func (t *Tracker) ObserveLease(now time.Time, name string, lease *coordinationv1.Lease) (LeaseResult, error) {
	if name == "" {
		return LeaseResult{}, fmt.Errorf("%w: ObserveLease with an empty name", ErrInvalidNode)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	rec := t.nodes[name]
	if rec == nil {
		rec = t.add(&record{name: name, probe: now, transition: now})
	}
	if !rec.leaseOnly {
		// A node record becomes a heartbeat: its Ready condition and
		// pods-not-ready edge no longer apply.
		// A confirmation it asked for no longer applies either.
		rec.leaseOnly, rec.ready, rec.podsNotReady, rec.synthetic = true, savedReady{}, false, nil
		rec.pend = pending{}
	}
	var res LeaseResult
	if lease != nil && rec.lease.renewedBy(lease) {
		rec.lease = saveLease(lease)
		rec.probe = now
		res.Renewed = true
	}
	res.GracePeriod = t.grace(rec)
	res.Deadline = rec.probe.Add(res.GracePeriod)
	res.Stale = now.After(res.Deadline)
	res.Expired = res.Stale && rec.due.InHeap()
	t.schedule(rec, res.Deadline, res.Stale)
	return res, nil
}
