package monitortest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// LeaseStall is a Cluster whose Lease cache can stall, as a controller's
// Lease watch does (kubernetes/kubernetes#121793): between Stall and
// Resume, GetLease returns every Lease as it was when the stall began (a
// Lease created meanwhile is not seen) while the kubelets' renewals go on in
// the Cluster, which plays the API server. It is a monitor.LiveReader, so a
// Monitor over it confirms stale verdicts (the Lease circuit breaker of
// Kubernetes v1.37) against the Cluster itself.
//
// Resource versions model the stall only: a Lease read through the stalled
// cache has version 2k-1 during the k-th stall, a live Lease renewed since
// the stall began has 2k, and the Lease cache reports 2k-1 as synced while
// stalled and 2k once resumed. Outside stalls the cache is the Cluster: the
// same objects, so the live reads equal the cached ones. Nodes never stall.
// Safe for concurrent use, like the Cluster.
type LeaseStall struct {
	*Cluster

	mu      sync.Mutex
	stalled bool
	// stalledFast is stalled, for GetLease's look without mu (every node
	// of every pass).
	stalledFast atomic.Bool
	gen         int                              // stalls begun
	frozen      map[string]*coordinationv1.Lease // the cache's view while stalled
}

var _ monitor.LiveReader = (*LeaseStall)(nil)

// NewLeaseStall returns c with a Lease cache that can stall.
func NewLeaseStall(c *Cluster) *LeaseStall { return &LeaseStall{Cluster: c} }

// Stall freezes the Lease cache as it is now. Stalling a stalled cache
// changes nothing.
func (s *LeaseStall) Stall() {
	s.mu.Lock()
	if s.stalled {
		s.mu.Unlock()
		return
	}
	s.stalled = true
	s.stalledFast.Store(true)
	s.gen++
	rv := strconv.Itoa(2*s.gen - 1)
	s.frozen = map[string]*coordinationv1.Lease{}
	s.Cluster.mu.Lock()
	for _, rec := range s.Cluster.nodes {
		if rec.lease != nil {
			l := rec.lease.DeepCopy() // RenewLease moves the stored one in place
			l.ResourceVersion = rv
			s.frozen[rec.name] = l
		}
	}
	s.Cluster.mu.Unlock()
	s.mu.Unlock()
	s.Cluster.leasesChanged() // the cache's objects are the frozen copies now
}

// Resume lets the Lease cache catch up at once.
func (s *LeaseStall) Resume() {
	s.mu.Lock()
	s.stalled, s.frozen = false, nil
	s.stalledFast.Store(false)
	s.mu.Unlock()
	s.Cluster.leasesChanged()
}

// Stalled reports whether the Lease cache is stalled.
func (s *LeaseStall) Stalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// GetLease returns the node's Lease as the cache holds it: as it was when
// the stall began, while stalled.
func (s *LeaseStall) GetLease(name string) *coordinationv1.Lease {
	if !s.stalledFast.Load() {
		return s.Cluster.GetLease(name)
	}
	s.mu.Lock()
	if s.stalled {
		l := s.frozen[name]
		s.mu.Unlock()
		return l
	}
	s.mu.Unlock()
	return s.Cluster.GetLease(name)
}

// LiveLease returns the node's Lease as the API server has it: the cached
// one when it was not renewed since the stall began, else the current one
// at the stall's live version.
func (s *LeaseStall) LiveLease(_ context.Context, name string) (*coordinationv1.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Cluster.mu.Lock()
	defer s.Cluster.mu.Unlock()
	rec := s.Cluster.lookup(name)
	if rec == nil || rec.lease == nil {
		return nil, nil
	}
	if !s.stalled {
		return rec.lease, nil
	}
	if f := s.frozen[name]; f != nil && renewEqual(f, rec.lease) {
		return f, nil
	}
	l := rec.lease.DeepCopy()
	l.ResourceVersion = strconv.Itoa(2 * s.gen)
	return l, nil
}

// LiveNode returns the node: nodes never stall.
func (s *LeaseStall) LiveNode(_ context.Context, name string) (*v1.Node, error) {
	return s.Cluster.GetNode(name), nil
}

// SyncedResourceVersion is the version the Lease cache has synced to (see
// LeaseStall); "" for nodes and before the first stall.
func (s *LeaseStall) SyncedResourceVersion(c nodehealth.Cache) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case c != nodehealth.CacheLease || s.gen == 0:
		return ""
	case s.stalled:
		return strconv.Itoa(2*s.gen - 1)
	}
	return strconv.Itoa(2 * s.gen)
}

func renewEqual(a, b *coordinationv1.Lease) bool {
	if a.Spec.RenewTime == nil || b.Spec.RenewTime == nil {
		return a.Spec.RenewTime == b.Spec.RenewTime
	}
	return a.Spec.RenewTime.Equal(b.Spec.RenewTime)
}
