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
