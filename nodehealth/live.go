package nodehealth

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The helpers below are what every caller of the Lease circuit breaker
// writes otherwise. The package does no I/O: they call the caller's own
// getters, and never while the Tracker's lock is held.

// LeaseGetter reads a Lease from the API server: the signature of
// client-go's typed Get, so client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get
// is one.
type LeaseGetter func(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)

// NodeGetter reads a Node from the API server: the signature of
// client-go's typed Get, so client.CoreV1().Nodes().Get is one.
type NodeGetter func(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Node, error)

// ReadLive makes the live reads r asks for (Result.Confirm) for node
// name, in upstream's order, and returns them for Confirm: the Lease
// first and, when r has ReadNode, the Node only if the Lease was not
// found. NotFound is a nil object (GetLive); any other error is Live.Err
// and the reads stop there. Pass client-go's typed Get methods, which go
// to the API server, never a lister (a cache read would confirm the
// cache against itself).
//
// A read r asks for whose getter is nil is not made: Live.Err says so and
// Confirm answers VerdictUnconfirmed (the node is skipped, never written
// on a read that was not made). node may be nil when the Tracker's
// Config.Confirmation is ConfirmLease, which never asks for ReadNode. r
// = 0 reads nothing and returns the zero Live.
func ReadLive(ctx context.Context, r LiveRead, name string, lease LeaseGetter, node NodeGetter) Live {
	var live Live
	if r.Has(ReadLease) {
		if lease == nil {
			live.Err = fmt.Errorf("nodehealth: ReadLive: no LeaseGetter for the live Lease of node %q", name)
			return live
		}
		live.Lease, live.Err = GetLive(ctx, lease, name)
	}
	if r.Has(ReadNode) && live.Lease == nil && live.Err == nil {
		if node == nil {
			live.Err = fmt.Errorf("nodehealth: ReadLive: no NodeGetter for the live Node %q", name)
			return live
		}
		live.Node, live.Err = GetLive(ctx, node, name)
	}
	return live
}

// GetLive reads object name with get and empty GetOptions, and maps
// NotFound to (nil, nil), as Live wants it. Empty GetOptions (no
// resourceVersion) make a quorum read from etcd, as upstream's
// tryUpdateNodeHealth at v1.37.2 makes it; ResourceVersion "0" would be
// served from the API server's watch cache, which can lag as the
// caller's informer does. Any other error is returned as is, with a nil
// object (client-go returns an empty one).
func GetLive[T any](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (*T, error), name string) (*T, error) {
	obj, err := get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return obj, nil
}

// SyncedVersion returns how far an informer's cache has synced, for
// SyncCache and CacheSynced: the resourceVersion its store has applied
// (the store's LastStoreSyncResourceVersion, client-go v0.36 and later,
// what upstream reads), else the informer's LastSyncResourceVersion (the
// reflector's, which can run one event ahead of the store). With a
// client-go SharedInformer inf:
//
//	health.SyncCache(now, nodehealth.CacheLease, nodehealth.SyncedVersion(inf.GetStore(), inf))
//
// store is inf.GetStore() (any type: before v0.36 a cache.Store has no
// such method). A store that answers "" (client-go's AtomicFIFO feature
// off, or not synced yet) falls back to the informer too, since an empty
// version ends every hold at once. informer may be nil: "" then.
func SyncedVersion(store any, informer interface{ LastSyncResourceVersion() string }) string {
	if s, ok := store.(interface{ LastStoreSyncResourceVersion() string }); ok {
		if rv := s.LastStoreSyncResourceVersion(); rv != "" {
			return rv
		}
	}
	if informer == nil {
		return ""
	}
	return informer.LastSyncResourceVersion()
}
