package nodehealth

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Confirmation selects which stale verdicts the Tracker asks its caller to
// confirm against the API server before a node is written Unknown: the
// Lease circuit breaker of Kubernetes v1.37 (KEP-5647, feature gate
// NodeControllerLeaseCircuitBreaker, Beta and on by default), which stops a
// controller whose Lease cache has fallen behind from writing every node
// Unknown (kubernetes/kubernetes#121793, #128643). The zero value is the
// default.
type Confirmation uint8

const (
	// ConfirmLeaseAndStatus asks for v1.37's live Lease read and, beyond
	// upstream, for a live Node read when the node has no Lease (its only
	// heartbeat is the Ready condition, so a stale node cache is the same
	// hole). It is the zero value and DefaultConfig's.
	ConfirmLeaseAndStatus Confirmation = iota
	// ConfirmLease asks for the live Lease read only, exactly as
	// kube-controller-manager v1.37.2 with the gate on.
	ConfirmLease
	// ConfirmNone asks for nothing: a stale node is written Unknown at once,
	// as in v1.36 (or v1.37 with NodeControllerLeaseCircuitBreaker=false).
	ConfirmNone
)

var confirmationNames = [...]string{"lease-and-status", "lease", "none"}

// String returns "lease-and-status", "lease" or "none".
func (c Confirmation) String() string {
	if int(c) < len(confirmationNames) {
		return confirmationNames[c]
	}
	return fmt.Sprintf("Confirmation(%d)", uint8(c))
}

// LiveRead is the set of objects a caller reads from the API server (not
// from its cache) to confirm that a node is stale: Result.Confirm. The zero
// value asks for nothing.
type LiveRead uint8

const (
	// ReadLease: GET the node's Lease in kube-node-lease.
	ReadLease LiveRead = 1 << iota
	// ReadNode: GET the Node. Asked (with ReadLease) only for a node that
	// has no Lease in the cache, under ConfirmLeaseAndStatus.
	ReadNode
)

// Has reports whether r includes x.
func (r LiveRead) Has(x LiveRead) bool { return r&x != 0 }

// String returns "", "lease", "node" or "lease+node".
func (r LiveRead) String() string {
	switch r {
	case 0:
		return ""
	case ReadLease:
		return "lease"
	case ReadNode:
		return "node"
	case ReadLease | ReadNode:
		return "lease+node"
	}
	return fmt.Sprintf("LiveRead(%d)", uint8(r))
}

// Live is what the caller read from the API server for Confirm.
type Live struct {
	// Lease is the live Lease when Result.Confirm has ReadLease; nil when
	// the GET answered NotFound.
	Lease *coordinationv1.Lease
	// Node is the live Node when Result.Confirm has ReadNode; nil when the
	// GET answered NotFound or was not needed (a live Lease was found).
	Node *v1.Node
	// Err is a read error other than NotFound. The node is then neither
	// written nor counted as behind (VerdictUnconfirmed), as upstream skips
	// the node for the pass ("error looking up lease to verify node").
	Err error
}

// Verdict is Confirm's answer.
type Verdict uint8

const (
	// VerdictStale: the live objects are the cached ones; the node is
	// stale. Write Result.StatusUpdate and go on as Result says.
	VerdictStale Verdict = 1 + iota
	// VerdictCacheBehind: a live object is newer than the cached one. Drop
	// the StatusUpdate and the pod work of the Result, skip the node; the
	// Tracker now holds every Unknown write until CacheSynced reports the
	// cache caught up (see Hold).
	VerdictCacheBehind
	// VerdictUnconfirmed: Live.Err was set. Drop the StatusUpdate and the
	// pod work, skip the node for this pass; nothing is held.
	VerdictUnconfirmed
)

var verdictNames = [...]string{"invalid", "stale", "cache-behind", "unconfirmed"}

// String returns "stale", "cache-behind" or "unconfirmed".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Cache names one of the caller's informer caches a hold waits on.
type Cache uint8

const (
	// CacheLease is the caller's Lease cache (kube-node-lease).
	CacheLease Cache = 1 + iota
	// CacheNode is the caller's Node cache.
	CacheNode
	numCaches = iota
)

// String returns the cache's group resource, as upstream's
// ConsistencyError prints it: "leases.coordination.k8s.io" or "nodes".
func (c Cache) String() string {
	switch c {
	case CacheLease:
		return "leases.coordination.k8s.io"
	case CacheNode:
		return "nodes"
	}
	return fmt.Sprintf("Cache(%d)", uint8(c))
}

// Hold is a confirmation's finding that a cache is behind the API server.
// While one is active no node gets a StatusUpdate and every Result has Held
// set.
type Hold struct {
	// Cache is the cache that is behind.
	Cache Cache
	// Node is the node whose confirmation found it behind.
	Node string
	// CachedVersion is the resourceVersion the cache had for that node's
	// object ("" when it had none).
	CachedVersion string
	// LiveVersion is the resourceVersion the API server had: the cache must
	// sync at least this far (CacheSynced) for the hold to end.
	LiveVersion string
	// Since is when the hold began.
	Since time.Time
}

// String describes the hold in the words of upstream's ConsistencyError
// (pkg/controller/util/consistency/consistency.go at v1.37.2), which
// kube-controller-manager logs for every node it skips.
func (h Hold) String() string {
	return fmt.Sprintf("read version: %s is not as new as written version: %s for group resource %s",
		h.CachedVersion, h.LiveVersion, h.Cache)
}

// pending is what Confirm needs of the Observe that asked for a
// confirmation: the cached versions to compare with and, when that Observe
// assumed an Unknown write, what the write replaced, to put back when the
// write is not made. It is all zero while read is 0 (no confirmation
// asked for), so Observe skips clearing it.
type pending struct {
	read        LiveRead
	leaseCached bool
	leaseRV     string
	nodeRV      string

	// assumed: Observe assumed the write; ready, transition and lease are
	// the record's before it.
	assumed    bool
	ready      savedReady
	transition time.Time
	lease      savedLease
	// flipped: the assumed write started the pods-not-ready flip flipEdge.
	flipped  bool
	flipEdge time.Time
}

// expectConfirm returns what the caller must read live before it acts on
// the stale verdict Observe is deciding for rec (writes Unknown, or counts
// an already Unknown node as not ready), and keeps what Confirm needs.
// Called with t.mu held, before Observe changes rec for a write.
func (t *Tracker) expectConfirm(rec *record, node *v1.Node, lease *coordinationv1.Lease) LiveRead {
	var read LiveRead
	switch t.cfg.Confirmation {
	case ConfirmLease:
		read = ReadLease
	case ConfirmLeaseAndStatus:
		read = ReadLease
		if lease == nil {
			read |= ReadNode
		}
	default:
		return 0
	}
	rec.pend = pending{read: read, nodeRV: node.ResourceVersion}
	if lease != nil {
		rec.pend.leaseCached, rec.pend.leaseRV = true, lease.ResourceVersion
	}
	return read
}

// assume records that Observe assumes the Unknown write of rec, asked to
// be confirmed, so that unassume can undo it. Called with t.mu held,
// before Observe changes rec for the write.
func (p *pending) assume(rec *record) {
	if p.read != 0 {
		p.assumed, p.ready, p.transition, p.lease = true, rec.ready, rec.transition, rec.lease
	}
}

// Confirm takes what the caller read live for the node whose last Result
// asked for it (Result.Confirm) and decides whether the caller may act on
// the stale verdict: write its StatusUpdate, or count a node already
// Unknown as not ready (zone, taints, pods). Upstream's rule (tryUpdateNodeHealth in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go at v1.37.2):
//
//   - a live Lease whose resourceVersion differs from the cached one (or a
//     live Lease the cache does not have) means the cache is behind:
//     VerdictCacheBehind, and the Tracker holds every node's Unknown write
//     until CacheSynced(CacheLease, ...) reaches the live resourceVersion;
//   - beyond upstream, under ConfirmLeaseAndStatus, a node without a Lease
//     (live NotFound too) is checked the same way against the live Node, and
//     a Node cache found behind holds until CacheSynced(CacheNode, ...);
//   - a live object equal to the cached one, or NotFound: VerdictStale, the
//     write goes ahead;
//   - Live.Err: VerdictUnconfirmed, the node is skipped for this pass.
//
// On any verdict but VerdictStale the Unknown write that Observe assumed,
// if any, is undone: the saved Ready condition, ReadyTransition and Lease
// go back to what they were, and the pods-not-ready flip that write
// started is cleared if it is still pending; nothing else that happened
// since (an acknowledgement, an earlier flip) is touched. The next Observe
// decides afresh.
//
// A question is dropped (Confirm then returns ErrNotPending; the caller
// drops the write and the pod work) by the node's next Observe, by
// ObserveLease on its name (the node became a heartbeat), by ResetProbes
// (the node has a fresh grace period: its assumed write stays recorded as
// made, as for a caller that never confirms, and the next Observe of the
// unwritten node finds it fresh), and by Forget and Restore.
//
// Unlike upstream, which compares the live Lease with the Lease that last
// refreshed the node's probe, Confirm compares it with the Lease the cache
// held at that Observe: a Lease object changed without a renewal (a label,
// an owner reference) then cannot keep the Tracker holding every other
// pass. Found while reading tryUpdateNodeHealth; no upstream issue.
//
// Errors (the Tracker is left unchanged): ErrNotPending when the node's
// last Observe asked for no confirmation, or it was already answered;
// ErrLeaseMismatch or ErrInvalidNode for a live object of another node.
// Confirm allocates nothing (but for a live resourceVersion that does not
// parse found while a hold is active: see CacheSynced).
func (t *Tracker) Confirm(now time.Time, name string, live Live) (Verdict, error) {
	if live.Lease != nil && live.Lease.Name != "" && live.Lease.Name != name {
		return 0, fmt.Errorf("%w: live lease %q confirmed for node %q", ErrLeaseMismatch, live.Lease.Name, name)
	}
	if live.Node != nil && live.Node.Name != name {
		return 0, fmt.Errorf("%w: live node %q confirmed for node %q", ErrInvalidNode, live.Node.Name, name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	rec := t.nodes[name]
	if rec == nil || rec.pend.read == 0 {
		return 0, fmt.Errorf("%w: node %q", ErrNotPending, name)
	}
	p := &rec.pend
	switch {
	case live.Err != nil:
		rec.unassume()
		return VerdictUnconfirmed, nil
	case p.read.Has(ReadLease) && live.Lease != nil:
		if !p.leaseCached || live.Lease.ResourceVersion != p.leaseRV {
			t.hold(now, CacheLease, name, p.leaseRV, live.Lease.ResourceVersion)
			rec.unassume()
			return VerdictCacheBehind, nil
		}
	case p.read.Has(ReadNode) && live.Node != nil && live.Node.ResourceVersion != p.nodeRV:
		t.hold(now, CacheNode, name, p.nodeRV, live.Node.ResourceVersion)
		rec.unassume()
		return VerdictCacheBehind, nil
	}
	rec.pend = pending{}
	return VerdictStale, nil
}

// unassume undoes what the Observe that asked the question pending
// assumed (nothing when it wrote nothing): the record's Ready condition,
// ReadyTransition and Lease as they were, and the pods-not-ready flip that
// Observe started, if that flip is still pending (not acknowledged since).
// An earlier flip, pending or acknowledged, is left as it is.
func (r *record) unassume() {
	if p := &r.pend; p.assumed {
		r.ready, r.transition, r.lease = p.ready, p.transition, p.lease
		if p.flipped && r.podsNotReady && r.podsEdge.Equal(p.flipEdge) {
			r.podsNotReady = false
		}
	}
	r.pend = pending{}
}

// hold starts c's hold, or moves its target to live when that is newer (as
// upstream's consistency store keeps the newest written version). Called
// with t.mu held.
func (t *Tracker) hold(now time.Time, c Cache, node, cached, live string) {
	h := &t.holds[c-1]
	if h.Cache != 0 {
		if cmp, err := resourceversion.CompareResourceVersion(h.LiveVersion, live); err == nil && cmp >= 0 {
			return
		}
		h.Node, h.CachedVersion, h.LiveVersion = node, cached, live
		return
	}
	*h = Hold{Cache: c, Node: node, CachedVersion: cached, LiveVersion: live, Since: now}
}

// holding reports whether a hold is active. Called with t.mu held.
func (t *Tracker) holding() bool {
	for i := range t.holds {
		if t.holds[i].Cache != 0 {
			return true
		}
	}
	return false
}

// CacheSynced reports that the caller's cache c has synced up to
// resourceVersion rv: the resourceVersion its store has applied, which is
// what upstream reads (the informer store's LastStoreSyncResourceVersion,
// pkg/controller/util/consistency at v1.37.2). With client-go v0.37 read it
// from the store,
//
//	if s, ok := informer.GetStore().(interface{ LastStoreSyncResourceVersion() string }); ok {
//		rv = s.LastStoreSyncResourceVersion()
//	} else {
//		rv = informer.LastSyncResourceVersion() // older client-go
//	}
//
// not from SharedInformer.LastSyncResourceVersion, which is the reflector's
// and is set before the store has applied the event: a hold could then end
// while the cache still lacks the Lease that started it (the next
// confirmation would hold again). The fallback has that one-event window.
//
// It ends c's hold when rv is at least the hold's LiveVersion, and also,
// as upstream's consistency store does, when rv is empty (the informer
// cannot tell) or either version does not parse (a data problem must not
// block the controller forever). It reports whether the Tracker still
// holds. A caller that confirms calls it for both caches at the start of
// every pass: a hold never ends otherwise. O(1); it allocates nothing,
// except that a version which does not parse costs one small allocation
// (the error of apimachinery's resourceversion.CompareResourceVersion)
// when it ends a hold.
func (t *Tracker) CacheSynced(c Cache, rv string) (held bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c >= CacheLease && c <= CacheNode {
		if h := &t.holds[c-1]; h.Cache != 0 && syncedPast(h.LiveVersion, rv) {
			*h = Hold{}
		}
	}
	return t.holding()
}

// syncedPast reports whether a cache synced to rv has caught up with a hold
// on live: rv is empty, either does not parse, or rv >= live.
func syncedPast(live, rv string) bool {
	if rv == "" {
		return true // the informer cannot tell; no comparison (and no error) needed
	}
	cmp, err := resourceversion.CompareResourceVersion(live, rv)
	return err != nil || cmp <= 0
}

// Held returns the active hold (the Lease cache's first), if any.
func (t *Tracker) Held() (Hold, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.holds {
		if h.Cache != 0 {
			return h, true
		}
	}
	return Hold{}, false
}
