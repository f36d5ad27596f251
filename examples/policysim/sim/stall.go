package sim

import "github.com/kubelifecycle/lifecycle/nodehealth"

// leaseConfirmation is the nodehealth confirmation mode of the policy's
// NodeControllerLeaseCircuitBreaker gate: on, the v1.37 Lease check (and
// the Node check for nodes without a Lease); off, v1.36.
func leaseConfirmation(p Policy) nodehealth.Confirmation {
	if p.NodeControllerLeaseCircuitBreaker {
		return nodehealth.ConfirmLeaseAndStatus
	}
	return nodehealth.ConfirmNone
}

// applyCache applies a scenario event aimed at the controller's cache
// rather than at kubelets, and reports whether e was one. A stall freezes
// the Leases the Monitor reads (monitortest.LeaseStall) while the kubelets
// renew on; with the circuit breaker the Monitor reads them live before
// writing Unknown and holds while the cache is behind.
func (s *sim) applyCache(e *Event) bool {
	switch e.Action {
	case ActionLeaseWatchStall:
		if !s.stall.Stalled() {
			s.stall.Stall()
			s.entries = append(s.entries, Entry{At: s.t, Kind: KindLeaseWatchStalled, Detail: "scenario: the controller's Lease watch stalls; kubelets keep renewing"})
		}
	case ActionLeaseWatchResume:
		if s.stall.Stalled() {
			s.stall.Resume()
			s.entries = append(s.entries, Entry{At: s.t, Kind: KindLeaseWatchResumed, Detail: "scenario: the controller's Lease cache catches up"})
		}
	default:
		return false
	}
	return true
}
