package controller

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

var _ monitor.LiveReader = (*cluster)(nil)

// liveCaches is what the cluster needs for the Lease circuit breaker: the
// Lease namespace and the informers whose synced resourceVersion ends a
// hold.
type liveCaches struct {
	leaseNamespace string
	nodeInformer   cache.SharedIndexInformer
	leaseInformer  cache.SharedIndexInformer
}

// LiveLease GETs the node's Lease from the API server, through the node status client (a quorum read, as
// upstream's tryUpdateNodeHealth); NotFound is (nil, nil).
func (c *cluster) LiveLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	return nodehealth.GetLive(ctx, c.clients.NodeStatus.CoordinationV1().Leases(c.live.leaseNamespace).Get, name)
}

// LiveNode GETs the Node from the API server; NotFound is (nil, nil).
func (c *cluster) LiveNode(ctx context.Context, name string) (*v1.Node, error) {
	return nodehealth.GetLive(ctx, c.clients.NodeStatus.CoreV1().Nodes().Get, name)
}

// SyncedResourceVersion is how far the informer of cache c has synced
// (nodehealth.SyncedVersion). Upstream reads its store's
// LastStoreSyncResourceVersion (client-go v0.37); with an older client-go,
// whose stores lack it, it falls back to the informer's
// LastSyncResourceVersion, which runs at most the informer's queue ahead of
// the store (a hold may then end one event early; the next confirmation
// holds again).
func (c *cluster) SyncedResourceVersion(which nodehealth.Cache) string {
	inf := c.live.leaseInformer
	if which == nodehealth.CacheNode {
		inf = c.live.nodeInformer
	}
	if inf == nil {
		return ""
	}
	return nodehealth.SyncedVersion(inf.GetStore(), inf)
}
