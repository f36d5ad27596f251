package sim

import (
	"slices"
	"time"
)

// Spaced Lease renewals. A kubelet that keeps running renews its Lease
// every leaseRenewInterval, and the Monitor (Config.LeaseEvents) evaluates
// a steady node at the pass after each renewal. What those renewals decide
// is only that the node is not stale: a node is stale when a pass finds its
// last heartbeat more than the grace period old. So a kubelet that no
// scenario event concerns for a while renews only every spacing (a multiple
// of the interval on its own schedule, at most the grace period less one
// monitor period), and the node stays fresh at every pass all the same.
// Before an event concerns it, it renews on every tick again, so its last
// renewal before the event (the one a stop makes the last heartbeat, from
// which its grace period runs) is the very one the kubelet makes on its
// schedule. Nothing else reads a renewal: a running kubelet's Lease
// decides nothing but freshness. Off without the shortcuts (Options.plain)
// and in scenarios with lease-watch events, whose live reads see the
// renewals themselves.

// spacing returns how far apart a steady kubelet's renewals are, or the
// renewal interval when they are not spaced.
func (s *sim) spacing() time.Duration {
	every := s.sc.Kubelet.LeaseRenewInterval.D()
	if s.opt.plain || every <= 0 || hasLeaseWatchEvents(s.sc) {
		return every
	}
	room := s.sc.Policy.NodeMonitorGracePeriod.D() - s.sc.Policy.NodeMonitorPeriod.D()
	if k := room / every; k > 1 {
		return k * every
	}
	return every
}

// eventTimes indexes the instants of the scenario events that concern each
// kubelet, for nextLease.
type eventTimes struct {
	// Node i's instants are at[start[i]:start[i+1]], sorted; next[i] is
	// the first of them not yet past.
	start, next []int
	at          []time.Duration
}

// indexEvents builds s.evTimes from the scenario's events (in time order).
func (s *sim) indexEvents() {
	n := len(s.nodes)
	x := eventTimes{start: make([]int, n+1), next: make([]int, n)}
	count := make([]int, n)
	targets := make([][]int, len(s.events))
	for i := range s.events {
		targets[i] = s.targets(&s.events[i])
		for _, j := range targets[i] {
			count[j]++
		}
	}
	for i := range n {
		x.start[i+1] = x.start[i] + count[i]
		x.next[i] = x.start[i]
	}
	x.at = make([]time.Duration, x.start[n])
	fill := slices.Clone(x.next)
	for i := range s.events {
		for _, j := range targets[i] {
			x.at[fill[j]] = s.events[i].At.D()
			fill[j]++
		}
	}
	s.evTimes = x
}

// nextEvent returns the instant of the first event at or after t that
// concerns kubelet i (never: none). t never goes back for one kubelet.
func (s *sim) nextEvent(i int, t time.Duration) time.Duration {
	x := &s.evTimes
	k := x.next[i]
	for k < x.start[i+1] && x.at[k] < t {
		k++
	}
	x.next[i] = k
	if k < x.start[i+1] {
		return x.at[k]
	}
	return never
}

// nextLease returns when kubelet i, renewing at t, renews next: after
// spacing while no event concerns it until a renewal interval after that,
// else after one interval.
func (s *sim) nextLease(i int, t time.Duration) time.Duration {
	every := s.sc.Kubelet.LeaseRenewInterval.D()
	if s.space <= every || s.nextEvent(i, t) < t+s.space+every {
		return t + every
	}
	return t + s.space
}

// skipStatus reports whether kubelet i's status post at t can be left
// out: renewals are spaced (so they alone keep the node fresh), and the
// post is not its last before an event concerns it (the next one, a status
// interval later, comes first). A post of a running kubelet changes its
// node's Ready heartbeat and nothing else; the heartbeat decides nothing
// while Lease renewals keep the node fresh, and the last post before an
// event, which leaves the heartbeat an Unknown write keeps, is made.
func (s *sim) skipStatus(i int, t time.Duration) bool {
	every := s.sc.Kubelet.LeaseRenewInterval.D()
	return s.space > every && s.nextEvent(i, t) >= t+s.sc.Kubelet.StatusUpdateInterval.D()
}

// hasLeaseWatchEvents reports whether the scenario stalls the controller's
// Lease cache: only then can a live read differ from the cache.
func hasLeaseWatchEvents(sc *Scenario) bool {
	for _, e := range sc.Events {
		if e.Action == ActionLeaseWatchStall || e.Action == ActionLeaseWatchResume {
			return true
		}
	}
	return false
}
