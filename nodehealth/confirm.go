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

// Live is what the caller read from the API server for Confirm. ReadLive
// makes the reads with client-go's typed clients and fills it in.
//
// The breaker compares resourceVersions: a live object without one (what
// client-go's fake clientset returns, which assigns none) cannot show
// that the cache is behind, so under such a client the breaker never
// trips and every verdict is VerdictStale. ConfirmDetail says so
// (Confirmed.Unversioned), for the caller to log.
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
	// VerdictStale: the live objects are the cached ones (or there is no
	// live object: NotFound), or they cannot be compared because the live
	// one has no resourceVersion (Confirmed.Unversioned); the node is
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
	// Until is when the hold ends at the latest: Since + Config.MaxHold
	// (SyncCache ends it at or after Until). Zero when Config.MaxHold is
	// 0, upstream's: no limit.
	Until time.Time
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
//     until CacheSynced(CacheLease, ...) reaches the live resourceVersion
//     (beyond upstream, a hold also ends when the synced version goes
//     backwards, as after an etcd restore, or after Config.MaxHold: see
//     SyncCache);
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
// A live object without a resourceVersion cannot be compared with the
// cached one: the verdict is VerdictStale and ConfirmDetail reports
// Confirmed.Unversioned. That is what client-go's fake clientset returns
// (it assigns no resourceVersions), so a caller tested on it never sees
// the breaker trip. Unlike upstream, which compares the strings and, for
// a cached Lease that has a version and a live one without, holds every
// other pass without end (its hold on "" ends at the next check, and the
// next confirmation takes it again), such a node is written.
//
// Errors (the Tracker is left unchanged): ErrNotPending when the node's
// last Observe asked for no confirmation, or it was already answered;
// ErrLeaseMismatch or ErrInvalidNode for a live object of another node.
// Confirm allocates nothing.
func (t *Tracker) Confirm(now time.Time, name string, live Live) (Verdict, error) {
	c, err := t.ConfirmDetail(now, name, live)
	return c.Verdict, err
}

// Confirmed is ConfirmDetail's answer: Confirm's verdict and the
// comparison it rests on, for the caller's logs and metrics.
type Confirmed struct {
	// Verdict is Confirm's verdict.
	Verdict Verdict
	// Cache is the cache whose object was compared with the live one:
	// CacheLease or CacheNode; 0 when no live object was compared (the
	// live reads answered NotFound, or failed: Live.Err).
	Cache Cache
	// CachedVersion is the resourceVersion of the object the cache held
	// when the node was observed ("" when it had none), LiveVersion the
	// live object's. Both "" when Cache is 0.
	CachedVersion, LiveVersion string
	// Unversioned: the live object has no resourceVersion, so whether the
	// cache is behind cannot be told and the verdict is VerdictStale on
	// the cached heartbeat alone. A real API server always sets one;
	// client-go's fake clientset does not, so a caller tested on it never
	// sees the breaker trip. Log it ("no resourceVersion: cannot
	// compare").
	Unversioned bool
	// LiveOlder: the live object's resourceVersion is lower than the
	// cached one's. A quorum read never returns an object older than one
	// already observed, so the API server's store went back: etcd was
	// restored from a snapshot without --bump-revision. The cache holds
	// objects the server no longer has, and an informer whose watch
	// resumed from its now future resourceVersion waits (kube-apiserver
	// accepts such a watch) until as many new writes have passed it:
	// relist it (restart the informers), as Kubernetes' restore procedure
	// prescribes. The verdict is VerdictCacheBehind: the node is skipped,
	// and the hold ends at the next SyncCache, since the cache is past
	// the live version.
	LiveOlder bool
}

// ConfirmDetail is Confirm, and also says what it compared: the cache,
// both resourceVersions, whether the live object had none
// (Confirmed.Unversioned), which Confirm reports as VerdictStale without
// a word, and whether it was older than the cached one
// (Confirmed.LiveOlder: etcd restored from a snapshot). It decides
// exactly as Confirm and returns the same errors; it allocates nothing.
func (t *Tracker) ConfirmDetail(now time.Time, name string, live Live) (Confirmed, error) {
	if live.Lease != nil && live.Lease.Name != "" && live.Lease.Name != name {
		return Confirmed{}, fmt.Errorf("%w: live lease %q confirmed for node %q", ErrLeaseMismatch, live.Lease.Name, name)
	}
	if live.Node != nil && live.Node.Name != name {
		return Confirmed{}, fmt.Errorf("%w: live node %q confirmed for node %q", ErrInvalidNode, live.Node.Name, name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	rec := t.nodes[name]
	if rec == nil || rec.pend.read == 0 {
		return Confirmed{}, fmt.Errorf("%w: node %q", ErrNotPending, name)
	}
	p := &rec.pend
	var c Confirmed
	switch {
	case live.Err != nil:
		rec.unassume()
		return Confirmed{Verdict: VerdictUnconfirmed}, nil
	case p.read.Has(ReadLease) && live.Lease != nil:
		c = Confirmed{Cache: CacheLease, CachedVersion: p.leaseRV, LiveVersion: live.Lease.ResourceVersion}
		c.Unversioned = c.LiveVersion == ""
		c.LiveOlder = olderRV(c.LiveVersion, c.CachedVersion)
		if !c.Unversioned && (!p.leaseCached || c.LiveVersion != c.CachedVersion) {
			t.hold(now, CacheLease, name, c.CachedVersion, c.LiveVersion)
			rec.unassume()
			c.Verdict = VerdictCacheBehind
			return c, nil
		}
	case p.read.Has(ReadNode) && live.Node != nil:
		c = Confirmed{Cache: CacheNode, CachedVersion: p.nodeRV, LiveVersion: live.Node.ResourceVersion}
		c.Unversioned = c.LiveVersion == ""
		c.LiveOlder = olderRV(c.LiveVersion, c.CachedVersion)
		if !c.Unversioned && c.LiveVersion != c.CachedVersion {
			t.hold(now, CacheNode, name, c.CachedVersion, c.LiveVersion)
			rec.unassume()
			c.Verdict = VerdictCacheBehind
			return c, nil
		}
	}
	rec.pend = pending{}
	c.Verdict = VerdictStale
	return c, nil
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
		if wellFormed(h.LiveVersion) && wellFormed(live) && compareRV(h.LiveVersion, live) >= 0 {
			return
		}
		h.Node, h.CachedVersion, h.LiveVersion = node, cached, live
		return
	}
	*h = Hold{Cache: c, Node: node, CachedVersion: cached, LiveVersion: live, Since: now}
	if t.cfg.MaxHold > 0 {
		h.Until = now.Add(t.cfg.MaxHold)
	}
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

// HoldEnd says why SyncCache ended a hold.
type HoldEnd uint8

const (
	// HoldEndSynced: the cache synced to the hold's LiveVersion or past
	// it, upstream's rule.
	HoldEndSynced HoldEnd = 1 + iota
	// HoldEndUncomparable: the synced version is empty (the informer
	// cannot tell) or one of the two versions does not parse; upstream's
	// consistency store ends the hold too, so that a data problem cannot
	// block the controller.
	HoldEndUncomparable
	// HoldEndRewound: the cache's synced version went backwards (see
	// CacheSync.Rewound): it relisted at a lower resourceVersion, which
	// after an etcd restore from a snapshot may stay below the hold's
	// LiveVersion for as long as the lost writes take to come back.
	// Unlike upstream, which keeps holding.
	HoldEndRewound
	// HoldEndExpired: the hold lasted Config.MaxHold (now reached
	// Hold.Until) without the cache syncing past it. Unlike upstream,
	// which has no limit.
	HoldEndExpired
)

var holdEndNames = [...]string{"invalid", "synced", "uncomparable", "rewound", "expired"}

// String returns "synced", "uncomparable", "rewound" or "expired".
func (e HoldEnd) String() string {
	if int(e) < len(holdEndNames) {
		return holdEndNames[e]
	}
	return fmt.Sprintf("HoldEnd(%d)", uint8(e))
}

// CacheSync is what SyncCache reports.
type CacheSync struct {
	// Held reports whether a hold is still active, on any cache:
	// CacheSynced's result.
	Held bool
	// Ended is the hold on this cache that this call ended, as it was;
	// its Cache is 0 when none ended. End says why.
	Ended Hold
	End   HoldEnd
	// Rewound: the synced version is lower than the one last reported
	// for this cache (Previous). An informer's synced version only moves
	// forward, but for a relist at a lower resourceVersion: etcd restored
	// from a snapshot to a lower revision (etcdutl snapshot restore
	// without --bump-revision, or a restored data directory). Reported
	// whether or not a hold was active.
	Rewound bool
	// Previous is the version last reported for this cache before this
	// call ("" before the first that parsed); Synced is this call's.
	Previous, Synced string
}

// String describes a hold that ended other than by syncing (End is not
// HoldEndSynced), or a rewind, in a line for the caller's log; "" when
// neither happened.
func (s CacheSync) String() string {
	h := s.Ended
	switch {
	case h.Cache != 0 && s.End == HoldEndRewound:
		return fmt.Sprintf("hold on %s (waiting for version %s) ended: the cache's synced resourceVersion went back from %s to %s, as after an etcd restore from a snapshot; stale nodes are confirmed again",
			h.Cache, h.LiveVersion, s.Previous, s.Synced)
	case h.Cache != 0 && s.End == HoldEndExpired:
		return fmt.Sprintf("hold on %s (waiting for version %s, cache at %s) ended after %v: longer than MaxHold; stale nodes are confirmed again",
			h.Cache, h.LiveVersion, s.Synced, h.Until.Sub(h.Since))
	case h.Cache != 0 && s.End == HoldEndUncomparable:
		return fmt.Sprintf("hold on %s ended: synced version %q cannot be compared with %q; stale nodes are confirmed again",
			h.Cache, s.Synced, h.LiveVersion)
	case s.Rewound:
		return fmt.Sprintf("the synced resourceVersion went back from %s to %s, as after an etcd restore from a snapshot", s.Previous, s.Synced)
	}
	return ""
}

// SyncCache reports that the caller's cache c has synced up to
// resourceVersion rv at now: the resourceVersion its store has applied,
// which is what upstream reads (the informer store's
// LastStoreSyncResourceVersion, pkg/controller/util/consistency at
// v1.37.2). SyncedVersion reads it from a client-go informer. Call it for
// both caches at the start of every pass: a hold ends nowhere else.
//
// It ends c's hold, and says why (CacheSync.End):
//
//   - HoldEndSynced: rv is at least the hold's LiveVersion (upstream);
//   - HoldEndUncomparable: rv is empty (the informer cannot tell) or
//     either version does not parse, as upstream's consistency store does
//     (a data problem must not block the controller forever);
//   - HoldEndRewound: rv is lower than the version last reported for c;
//   - HoldEndExpired: now has reached Hold.Until (Config.MaxHold).
//
// Unlike upstream, the last two end a hold that would otherwise wait for
// a version the cache may never reach soon: after an etcd restore from a
// snapshot an informer that relists does so at a lower resourceVersion,
// and a hold taken before on a higher live version would end only once as
// many new writes had passed it (a restore 600,000 revisions back, at 300
// writes/s: 33 minutes), with no node written Unknown and no zone decided
// meanwhile; kube-controller-manager v1.37.2 does just that
// (examples/e2e TestEtcdRestoreWhileHeld). Ending a hold early is safe:
// every stale node is confirmed against the API server again, and a cache
// still behind holds again at once. No upstream issue.
//
// It reports whether the Tracker still holds (on any cache), and the
// hold it ended. An unknown c changes nothing. Time going backwards
// counts as no time elapsed. O(1); it allocates nothing.
func (t *Tracker) SyncCache(now time.Time, c Cache, rv string) CacheSync {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.syncCache(t.advance(now), c, rv)
}

// CacheSynced is SyncCache at the latest now the Tracker has seen
// (Observe, Confirm, SyncCache): it reports whether the Tracker still
// holds. It applies every rule of SyncCache, Config.MaxHold included
// (up to one pass late, since it cannot know now), but does not say why
// a hold ended: a caller that logs or counts the ends calls SyncCache.
//
// rv is the resourceVersion the cache's store has applied, as upstream
// reads it. With client-go, read it with SyncedVersion, or directly:
//
//	if s, ok := informer.GetStore().(interface{ LastStoreSyncResourceVersion() string }); ok {
//		rv = s.LastStoreSyncResourceVersion()
//	} else {
//		rv = informer.LastSyncResourceVersion() // client-go before v0.36
//	}
//
// not from SharedInformer.LastSyncResourceVersion alone, which is the
// reflector's and is set before the store has applied the event: a hold
// could then end while the cache still lacks the Lease that started it
// (the next confirmation would hold again). The fallback has that
// one-event window.
//
// A caller that confirms calls it (or SyncCache) for both caches at the
// start of every pass: a hold never ends otherwise. O(1); it allocates
// nothing.
func (t *Tracker) CacheSynced(c Cache, rv string) (held bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.syncCache(t.last, c, rv).Held
}

// syncCache is SyncCache. Called with t.mu held.
func (t *Tracker) syncCache(now time.Time, c Cache, rv string) CacheSync {
	var s CacheSync
	if c < CacheLease || c > CacheNode {
		s.Held = t.holding()
		return s
	}
	i := c - 1
	s.Previous, s.Synced = t.synced[i], rv
	valid := wellFormed(rv)
	if valid {
		// Both parse: compareRV cannot fail.
		s.Rewound = s.Previous != "" && compareRV(s.Previous, rv) > 0
		t.synced[i] = rv
	}
	if h := &t.holds[i]; h.Cache != 0 {
		var end HoldEnd
		switch {
		case !valid || !wellFormed(h.LiveVersion):
			end = HoldEndUncomparable
		case compareRV(h.LiveVersion, rv) <= 0:
			end = HoldEndSynced
		case s.Rewound:
			end = HoldEndRewound
		case !h.Until.IsZero() && !now.Before(h.Until):
			end = HoldEndExpired
		}
		if end != 0 {
			s.Ended, s.End = *h, end
			*h = Hold{}
		}
	}
	s.Held = t.holding()
	return s
}

// wellFormed reports whether rv is a resourceVersion that apimachinery's
// resourceversion.CompareResourceVersion accepts (a decimal integer
// without leading zeros), checked here first so that one that does not
// parse costs no error allocation.
func wellFormed(rv string) bool {
	if rv == "" || rv[0] == '0' {
		return false
	}
	for i := range len(rv) {
		if rv[i] < '0' || rv[i] > '9' {
			return false
		}
	}
	return true
}

// olderRV reports whether a is a lower resourceVersion than b, both
// well-formed.
func olderRV(a, b string) bool {
	return wellFormed(a) && wellFormed(b) && compareRV(a, b) < 0
}

// compareRV compares two resourceVersions with apimachinery's rule; 0
// when either does not parse (check wellFormed first where it matters).
func compareRV(a, b string) int {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return 0
	}
	return cmp
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
