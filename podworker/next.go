package podworker

import "time"

// Next hands out one runnable step, the one due earliest (ties in the order
// they became runnable), and marks it in flight: the pod gets no other step
// until the caller reports this one with Complete. It returns false when no
// step is due at now; NextDeadline says when one will be. A static pod whose
// turn has not come is set aside here without a step, and a static pod that
// may never start finishes without one. O(log n); it allocates nothing.
func (w *Workers) Next(now time.Time) (Work, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.advance(now)
	for {
		e := w.queue.Peek()
		if e == nil || e.Value.readyAt.After(now) {
			return Work{}, false
		}
		w.queue.Pop()
		if work, ok := w.handOut(now, e.Value); ok {
			return work, true
		}
	}
}

// handOut turns the popped record r into its next step, or reports false
// when r turned out to have nothing to run now.
func (w *Workers) handOut(now time.Time, r *record) (Work, bool) {
	if r.finished {
		if r.leftover == nil { // defensive: not reachable while the invariants hold
			return Work{}, false
		}
		return w.fly(r, Work{UID: r.uid, Type: TerminatingWork, UpdateType: TypeKill,
			RunningPod: r.leftover, GracePeriod: r.leftoverGrace}, true), true
	}

	var u update
	replay := !r.hasPending
	switch {
	case !replay:
		u = r.pending
	case r.retry && r.hasActive:
		u = r.active
		u.typ = TypeSync
	default: // defensive: a queued record always has work
		r.retry = false
		return Work{}, false
	}

	runtimeOnly := u.pod == nil
	if !r.started && !runtimeOnly {
		if r.static {
			// The first two cases are defensive: UpdatePod finishes such
			// pods and parks blocked ones before they are queued.
			switch {
			case r.terminating && !r.observedRuntime:
				w.finishUnstarted(now, r)
				return Work{}, false
			case !r.terminating && w.blocked(r):
				r.parked = true
				return Work{}, false
			case !r.terminating:
				w.takeSlot(now, r)
			}
		}
		r.started = true
	}
	if !replay {
		r.merge(u)
		r.hasPending = false
	}
	r.retry = false

	work := Work{UID: r.uid, Type: r.workType(), UpdateType: u.typ, Pod: u.pod, MirrorPod: u.mirror}
	if runtimeOnly {
		work.RunningPod = u.running
	}
	if work.Type == TerminatingWork {
		r.startedTerminating = true
		if r.gracePtr == nil { // defensive: set whenever termination is requested
			r.setGrace(1)
		}
		work.GracePeriod = r.gracePtr
	}
	return w.fly(r, work, runtimeOnly), true
}

// fly marks r in flight with a fresh generation.
func (w *Workers) fly(r *record, work Work, runtimeOnly bool) Work {
	w.gen++
	r.gen = w.gen
	r.inFlight = true
	r.flightType = work.Type
	r.flightRuntime = runtimeOnly
	work.Generation = w.gen
	return work
}

// Complete reports the result of a step handed out by Next and schedules
// the pod's next step (upstream podWorkerLoop and completeWork in
// pkg/kubelet/pod_workers.go):
//
//   - an error (context.Canceled included) keeps the state; the same step
//     is retried at now + BackoffPeriod (or Result.RetryAfter, capped at the
//     longer of ResyncInterval and BackoffPeriod as upstream bounds its
//     error delays; or at once with Result.RetryNow), or a newer pending
//     update is handed out at once;
//   - a SyncWork step that succeeded is replayed at now + ResyncInterval,
//     unless it reported Terminal: the pod then terminates at once;
//   - a TerminatingWork step that succeeded makes the pod terminated and its
//     TerminatedWork step runnable at once; for a runtime-only pod it ends
//     the record instead;
//   - a TerminatedWork step that succeeded finishes the pod.
//
// A Work whose pod is unknown, not in flight, or in flight with another
// generation (a duplicate or stale completion) is ignored and counted in
// Stats.StaleCompletions. Only the UID and Generation of work are used.
// O(log n).
func (w *Workers) Complete(now time.Time, work Work, res Result) {
	// The delay is computed before locking: Jitter is caller code.
	var delay time.Duration
	switch {
	case res.Err != nil && res.RetryNow:
		// delay 0: at once
	case res.Err != nil && res.RetryAfter > 0:
		delay = w.jitter(min(res.RetryAfter, max(w.cfg.ResyncInterval, w.cfg.BackoffPeriod)))
	case res.Err != nil:
		delay = w.jitter(w.cfg.BackoffPeriod)
	case !res.Terminal: // used only if the step in flight is a sync
		delay = w.jitter(w.cfg.ResyncInterval)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.advance(now)

	r := w.pods[work.UID]
	if r == nil || !r.inFlight || r.gen != work.Generation {
		w.stale++
		return
	}
	r.inFlight = false
	typ := r.flightType

	if r.finished { // leftover runtime kill (#139833)
		switch {
		case res.Err != nil:
			w.schedule(now.Add(delay), r)
		case r.leftoverRenewed:
			r.leftoverRenewed = false
			w.schedule(now, r)
		default:
			r.leftover, r.leftoverGrace = nil, nil
		}
		return
	}
	if r.workType() != typ {
		// The pod changed phase while the step ran (orphaned by
		// SyncKnownPods): the next phase starts at once.
		delay = 0
	}
	if res.Err != nil {
		w.again(now, r, delay)
		return
	}
	switch typ {
	case TerminatedWork:
		w.finish(now, r)
	case TerminatingWork:
		if r.flightRuntime && !(r.hasPending && r.pending.pod != nil) {
			// A runtime-only pod has no config to clean up: forget it.
			w.deleteRecord(now, r)
			return
		}
		r.terminated = true
		w.again(now, r, 0)
	default:
		if !res.Terminal {
			w.again(now, r, delay)
			return
		}
		// Natural completion: terminate at once. Unlike upstream, the
		// grace period is computed from the pod now, so the terminating
		// step always carries one.
		if !r.terminating {
			r.terminating = true
			g, _ := effectiveGrace(r.grace, r.active.pod, nil)
			r.setGrace(g)
		}
		r.startedTerminating = true
		w.again(now, r, 0)
	}
}

// NextDeadline returns when Next will next have a step to hand out, and
// false when no step is pending (every pod is finished, in flight, or a
// static pod waiting for its turn). The time may be in the past: a step is
// due now. O(1).
func (w *Workers) NextDeadline() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.queue.Peek(); e != nil {
		return e.Value.readyAt, true
	}
	return time.Time{}, false
}
