package monitor

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// LiveReader is a Cluster that can also read from the API server itself,
// past its caches, and tell how far its caches have synced: what the Lease
// circuit breaker of Kubernetes v1.37 needs (KEP-5647, feature gate
// NodeControllerLeaseCircuitBreaker; see nodehealth.Tracker.Confirm). When
// the Cluster given to New implements it, MonitorPass confirms every stale
// verdict nodehealth asks it to (Config.Health.Confirmation): one live GET
// per pass for each node past its grace period, about to go Unknown or
// already Unknown (as upstream's tryUpdateNodeHealth at v1.37.2), and
// while a cache is found behind, whole passes are held (no Unknown write,
// taint, zone or pod work) until it has caught up. A Cluster without it keeps the v1.36 behaviour.
type LiveReader interface {
	// LiveLease GETs the node's Lease from the API server: (nil, nil) when
	// it does not exist.
	LiveLease(ctx context.Context, name string) (*coordinationv1.Lease, error)
	// LiveNode GETs the Node from the API server: (nil, nil) when it does
	// not exist.
	LiveNode(ctx context.Context, name string) (*v1.Node, error)
	// SyncedResourceVersion is the resourceVersion cache c has synced to
	// (upstream reads the informer store's LastStoreSyncResourceVersion);
	// "" when it cannot tell, which ends a hold on c.
	SyncedResourceVersion(c nodehealth.Cache) string
}

// KindHealthHeld is the Event of a monitor pass held because a cache is
// behind the API server. Its Detail is upstream's ConsistencyError text
// ("read version: X is not as new as written version: Y for group resource
// leases.coordination.k8s.io"), which kube-controller-manager v1.37 logs
// for each node it skips ("Update health of Node from Controller error,
// Skipping - no pods will be evicted"); Node is the node whose live read
// found it.
const KindHealthHeld Kind = "health-held"

// KindHealthHoldEnded is the Event of a hold (KindHealthHeld) that ended
// other than by its cache catching up (nodehealth.Tracker.SyncCache):
// the cache's synced resourceVersion went backwards (the informer
// relisted at a lower resourceVersion, as after etcd is restored from a
// snapshot), the hold lasted nodehealth.Config.MaxHold, or a version
// could not be compared. Detail says which (nodehealth.CacheSync.String);
// Node is the node whose live read started the hold. From this pass on
// every stale node is confirmed live again, and a cache still behind
// holds again. Upstream has no such end: its hold lasts until the cache
// reaches the version, however long.
const KindHealthHoldEnded Kind = "health-hold-ended"

// syncCaches reports to the health Tracker how far the Cluster's caches
// have synced, at the start of a pass, and reports a hold that ended
// early (KindHealthHoldEnded).
func (m *Monitor) syncCaches(now time.Time) {
	lr, ok := m.cluster.(LiveReader)
	if !ok {
		return
	}
	for _, c := range [...]nodehealth.Cache{nodehealth.CacheLease, nodehealth.CacheNode} {
		if s := m.health.SyncCache(now, c, lr.SyncedResourceVersion(c)); s.Ended.Cache != 0 && s.End != nodehealth.HoldEndSynced {
			m.emit(now, KindHealthHoldEnded, s.Ended.Node, "", s.String())
		}
	}
}

// confirm makes the live reads res asks for (a stale node's, whether it is
// about to be written Unknown or already is) and reports whether the pass
// may act on the stale verdict: write Unknown, count the node as not ready,
// taint it, mark its pods. A Cluster that cannot read live acts at once
// (the Tracker then assumes the write, as in v1.36).
func (m *Monitor) confirm(ctx context.Context, now time.Time, name string, res nodehealth.Result) bool {
	if res.Confirm == 0 {
		return true
	}
	lr, ok := m.cluster.(LiveReader)
	if !ok {
		return true
	}
	var live nodehealth.Live
	what := "lease"
	if res.Confirm.Has(nodehealth.ReadLease) {
		live.Lease, live.Err = lr.LiveLease(ctx, name)
	}
	if res.Confirm.Has(nodehealth.ReadNode) && live.Lease == nil && live.Err == nil {
		what = "node"
		live.Node, live.Err = lr.LiveNode(ctx, name)
	}
	v, err := m.health.Confirm(now, name, live)
	switch {
	case err != nil: // a Cluster answering for another node
		m.emit(now, KindWriteFailed, name, "", err.Error())
		return false
	case v == nodehealth.VerdictUnconfirmed:
		// Upstream's words (tryUpdateNodeHealth): the node is skipped.
		m.emit(now, KindWriteFailed, name, "", fmt.Sprintf("error looking up %s to verify node %s: %v", what, name, live.Err))
		return false
	}
	return v == nodehealth.VerdictStale
}

// heldPass reports whether the pass holds because a cache is behind, and
// reports it once per pass (KindHealthHeld).
func (m *Monitor) heldPass(now time.Time) bool {
	h, ok := m.health.Held()
	if ok {
		m.emitFn(Event{At: now, Kind: KindHealthHeld, Node: h.Node, Zone: m.zoneOf(h.Node), Detail: h.String()})
	}
	return ok
}
