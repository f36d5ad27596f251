package monitor

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Quiet nodes (Config.LeaseEvents). A node whose evaluation found nothing
// to do is evaluated again only when something it is evaluated on can have
// changed: its Node object (a new object, which state() sees; every write
// of the Monitor's makes one), its Lease (LeaseChanged), the clock past its
// Deadline, or a zone decision that can empty or stop queues, clean nodes or
// reset grace periods (Monitor.quietGen). Until then an evaluation would find
// the same heartbeat, the same Ready condition and the same queue entry, and
// change nothing, so the pass counts the node as it did last time. Two kinds
// of node qualify: Ready and fresh, with no health taint and not queued;
// and stale, already Unknown, waiting in its zone queue or tainted, with no
// live read to make (Config.Health.Confirmation off,
// or nothing asked) and its pods marked. At 65,000 nodes whose kubelets
// renew every 10s, most of a simulated hour's evaluations are of such
// nodes.

// LeaseChanged is the Lease informer's add, update or delete event for the
// node's Lease (kube-node-lease/<name>), with Config.LeaseEvents: the next
// MonitorPass evaluates the node's health again. Without LeaseEvents it
// does nothing. It takes no time (the pass reads the Lease itself) and may
// run at any time, also during a pass.
func (m *Monitor) LeaseChanged(name string) {
	if !m.cfg.LeaseEvents {
		return
	}
	m.mu.Lock()
	s := m.leaseState(name)
	m.mu.Unlock()
	if s != nil {
		s.leaseChanged.Store(true)
	}
}

// leaseState returns the state of the node named name, or nil, trying the
// position after the last one found before the map. m.mu must be held.
func (m *Monitor) leaseState(name string) *nodeState {
	if i := m.leaseAt + 1; i < len(m.byPos) {
		if s := m.byPos[i]; s != nil && s.name == name && !s.deleted.Load() {
			m.leaseAt = i
			return s
		}
	}
	s := m.nodes[name]
	if s != nil && int(s.pos) < len(m.byPos) && m.byPos[s.pos] == s {
		m.leaseAt = int(s.pos)
	}
	return s
}

// quietState is what a node's last evaluation found, kept by the node's
// position in the pass's list (Monitor.quiet): a pass reads them in
// order, so a quiet node costs no more than its nodeState.
type quietState struct {
	s        *nodeState // the node it was found for (none: zero)
	from     *v1.Node   // the object it was evaluated on
	until    time.Time  // its Deadline (Ready and fresh)
	gen      uint32     // Monitor.quietGen then
	notReady bool       // stale and Unknown: counted not ready, no deadline
}

// stillQuiet reports whether the last evaluation of the node at position i
// holds at now, so that the pass counts it as then without evaluating it.
// If not, the node's quiet state ends: only a full evaluation that finds
// nothing to do (noteQuiet) starts one again.
func (m *Monitor) stillQuiet(now time.Time, i int, s *nodeState, node *v1.Node) bool {
	q := &m.quiet[i]
	if q.s == s && q.from == node && q.gen == m.quietGen && m.nodeNow == nil &&
		!s.leaseChanged.Load() && (q.notReady || !now.After(q.until)) {
		return true
	}
	if q.s != nil {
		*q = quietState{}
	}
	return false
}

// noteQuiet records, after a full evaluation of the node at position i,
// whether it is quiet (see above). Config.LeaseEvents only.
func (m *Monitor) noteQuiet(i int, s *nodeState, node *v1.Node, res *nodehealth.Result, r *nodeResult) {
	// observeNode comes here only with an evaluation that was not held and
	// was confirmed, on node (state() set s.from to it); settled implies
	// nothing staged for the queue.
	if m.nodeNow != nil || !r.settled || res.StatusUpdate != nil || res.Confirm != 0 || res.MarkPodsNotReady || res.CurrentReady == nil {
		return
	}
	switch status := res.CurrentReady.Status; {
	case status == v1.ConditionTrue && !res.Stale:
		m.quiet[i] = quietState{s: s, from: node, until: res.Deadline, gen: m.quietGen}
	case status == v1.ConditionUnknown && res.Stale:
		// Its queue entry stays until the node changes (zonestate.Queues
		// keeps every zone's queue, that of a zone without a decision too)
		// or a zone decision clears the queues (quietGen).
		m.quiet[i] = quietState{s: s, from: node, gen: m.quietGen, notReady: true} // stale stays stale until a new heartbeat
	}
}

// zoneStateChanged reports whether a zone decision changed any zone's
// state.
func zoneStateChanged(d zonestate.Decision) bool {
	for _, z := range d.Zones {
		if z.State != z.Previous {
			return true
		}
	}
	return false
}
