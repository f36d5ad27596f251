package monitor

import "time"

// TaintDeadline is the earliest instant at which TaintPass has work (a zone
// queue's next admission), if any is pending. A caller that runs TaintPass
// and EvictionPass on loops of their own (so that neither waits behind the
// other's writes) sleeps each loop until its own deadline.
func (m *Monitor) TaintDeadline() (time.Time, bool) {
	return m.queues.NextDeadline()
}

// EvictionDeadline is the earliest instant at which EvictionPass has work
// (the Evictor's next due eviction), if any is pending; none while the
// cluster is in full disruption.
func (m *Monitor) EvictionDeadline() (time.Time, bool) {
	if m.evictPaused.Load() {
		return time.Time{}, false
	}
	return m.evictor.NextDeadline()
}

// DeadlineMargin is how much earlier than NextDeadline PassDue and
// NextPassTick take the passes' work to be due: evictionqueue's deadline
// may lie a nanosecond after the instant its token bucket grants a token,
// and a pass run early is harmless (one a loop running at every tick
// makes too).
const DeadlineMargin = time.Millisecond

// PassDue reports whether TaintPass or EvictionPass has work at now: a
// caller that runs the passes only when they have work (a simulation on a
// virtual clock) asks it at each TaintPeriod tick.
func (m *Monitor) PassDue(now time.Time) bool {
	dl, ok := m.NextDeadline()
	return ok && !dl.Add(-DeadlineMargin).After(now)
}

// NextPassTick returns the first tick of the grid origin + k × period
// after after (offsets from origin) at which the passes have work:
// NextDeadline, less DeadlineMargin, rounded up to the grid. ok is false
// when no work is pending.
func (m *Monitor) NextPassTick(origin time.Time, after, period time.Duration) (next time.Duration, ok bool) {
	dl, ok := m.NextDeadline()
	if !ok {
		return 0, false
	}
	next = (after/period + 1) * period
	if d := dl.Sub(origin) - DeadlineMargin; d > next {
		next = (d + period - 1) / period * period
	}
	return next, true
}
