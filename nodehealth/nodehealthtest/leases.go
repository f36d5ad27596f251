// Package nodehealthtest is a test fixture for callers of nodehealth: an
// in-memory store of node Leases that plays both the API server and the
// caller's Lease informer cache, with resourceVersions as etcd assigns
// them, so that the Lease circuit breaker (nodehealth.Tracker.Confirm) can
// be exercised without a cluster: the cache can stall and catch up, and
// the store can be restored to a snapshot at a lower revision, as after
// an etcd restore.
//
// It does no I/O, starts no goroutine and reads no clock: every instant
// is an argument. client-go's fake clientset is no substitute here: it
// assigns no resourceVersions, so under it the breaker never trips (see
// nodehealth.Confirmed.Unversioned).
//
// A test wires it where the caller's code reads Leases:
//
//	cached := leases.Cached(node.Name)                                // the informer's lister
//	live := nodehealth.ReadLive(ctx, res.Confirm, node.Name, leases.Get, nil) // the API server
//	health.SyncCache(now, nodehealth.CacheLease, leases.SyncedVersion())     // the informer's store
package nodehealthtest

import (
	"context"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Leases is an in-memory API server of the Leases in kube-node-lease and
// a caller's informer cache of them.
//
// The store has a revision, as etcd has: it starts at 1, and every write
// (Renew, Delete, Bump) adds one; a Lease's resourceVersion is the
// revision of its last write. The cache follows every write at once (its
// synced version is the store's revision) unless stalled: between Stall
// and Resume it keeps every Lease as it was and its synced version stays
// where it was, as behind a stalled watch. Restore puts the store back to
// a Snapshot, revision included, and the cache relists from it.
//
// The zero value is not usable; create one with New. A Leases is safe for
// concurrent use. Cached returns the stored object, which callers must
// not modify (as an informer's); Get returns a copy.
type Leases struct {
	mu      sync.Mutex
	rev     int64
	live    map[string]*coordinationv1.Lease
	cache   map[string]*coordinationv1.Lease // the live map itself unless stalled
	synced  int64
	stalled bool
}

// New returns an empty store at revision 1, its cache in sync.
func New() *Leases {
	live := map[string]*coordinationv1.Lease{}
	return &Leases{rev: 1, live: live, cache: live, synced: 1}
}

// Renew writes node name's Lease renewed at renew, as its kubelet does
// (creating it on the first call), and returns it; holder and duration
// are set as the kubelet sets them on creation.
func (l *Leases) Renew(name string, renew time.Time) *coordinationv1.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lease *coordinationv1.Lease
	if old := l.live[name]; old != nil {
		lease = old.DeepCopy()
	} else {
		secs := int32(40)
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &secs},
		}
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	l.write(name, lease)
	return lease
}

// Delete deletes node name's Lease, when it has one.
func (l *Leases) Delete(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live[name] != nil {
		l.write(name, nil)
	}
}

// Bump adds n to the revision without touching a Lease: the writes of
// every other object in etcd, which move the revision all the same.
// n < 0 counts as 0.
func (l *Leases) Bump(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rev += int64(max(n, 0))
	if !l.stalled {
		l.synced = l.rev
	}
}

// write stores lease (nil: deletes name) at a new revision. Called with
// l.mu held.
func (l *Leases) write(name string, lease *coordinationv1.Lease) {
	l.rev++
	if lease == nil {
		delete(l.live, name)
	} else {
		lease.ResourceVersion = strconv.FormatInt(l.rev, 10)
		l.live[name] = lease
	}
	if !l.stalled {
		l.synced = l.rev
	}
}

// Stall freezes the cache as it is: Cached and SyncedVersion keep
// answering what they answer now while the store moves on. Stalling a
// stalled cache changes nothing.
func (l *Leases) Stall() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stalled {
		return
	}
	l.stalled = true
	l.cache = make(map[string]*coordinationv1.Lease, len(l.live))
	for k, v := range l.live {
		l.cache[k] = v // writes replace the live objects, never modify them
	}
}

// Resume lets the cache catch up at once: it holds the store's Leases and
// has synced to its revision.
func (l *Leases) Resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stalled, l.cache, l.synced = false, l.live, l.rev
}

// Stalled reports whether the cache is stalled.
func (l *Leases) Stalled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stalled
}

// Cached returns node name's Lease as the cache holds it (nil when it
// holds none): what the caller's lister returns. Do not modify it.
func (l *Leases) Cached(name string) *coordinationv1.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cache[name]
}

// Get reads node name's Lease from the store, past the cache: the API
// server's answer, a copy. It is a nodehealth.LeaseGetter, with
// client-go's errors: NotFound for a Lease that does not exist, ctx's
// error once ctx is done. opts is ignored (every read is a quorum read).
func (l *Leases) Get(ctx context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lease := l.live[name]
	if lease == nil {
		return nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
	}
	return lease.DeepCopy(), nil
}

// SyncedVersion is the resourceVersion the cache has synced to: the
// store's revision, or the revision at which it stalled. It is what a
// caller reads with nodehealth.SyncedVersion from an informer, for
// Tracker.SyncCache.
func (l *Leases) SyncedVersion() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strconv.FormatInt(l.synced, 10)
}

// Revision is the store's revision: the resourceVersion of its last write.
func (l *Leases) Revision() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strconv.FormatInt(l.rev, 10)
}

// Snapshot is the store's state at one revision, for Restore: what
// etcdctl snapshot save keeps.
type Snapshot struct {
	rev    int64
	leases map[string]*coordinationv1.Lease
}

// Revision is the revision the snapshot was taken at.
func (s Snapshot) Revision() string { return strconv.FormatInt(s.rev, 10) }

// Snapshot returns the store's state now.
func (l *Leases) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Snapshot{rev: l.rev, leases: make(map[string]*coordinationv1.Lease, len(l.live))}
	for k, v := range l.live {
		s.leases[k] = v
	}
	return s
}

// Restore puts the store back to s, as an etcd restore from a snapshot
// does without --bump-revision: the Leases as they were, and the revision
// too, lower than every resourceVersion handed out since. The cache then
// relists (a stalled one too: its watch died with the API server that
// was restarted), so its synced version goes back to s's revision. A zero
// Snapshot empties the store at revision 1.
func (l *Leases) Restore(s Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rev = max(s.rev, 1)
	l.live = make(map[string]*coordinationv1.Lease, len(s.leases))
	for k, v := range s.leases {
		l.live[k] = v
	}
	l.stalled, l.cache, l.synced = false, l.live, l.rev
}
