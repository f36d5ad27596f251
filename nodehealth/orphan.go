package nodehealth

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// OrphanPolicy says when a node whose cloud instance is reported gone may be
// deleted, and how fast to retry a cloud that cannot answer. Every field is
// literal.
type OrphanPolicy struct {
	// Confirmations is how many NotFound answers are needed before deletion
	// (at least 1). Each Observe with ExistenceNotFound is one answer, so
	// the caller should pass one fresh cloud read per call.
	Confirmations int
	// MinNotFoundAge is how long the NotFound answers must span: deletion
	// waits until now - (first NotFound) >= MinNotFoundAge. 0: no wait.
	MinNotFoundAge time.Duration
	// UnknownBackoff is the wait after the first Unknown answer in a row;
	// each further Unknown doubles it, up to MaxUnknownBackoff. 0: no wait.
	UnknownBackoff time.Duration
	// MaxUnknownBackoff caps the Unknown backoff; it may not be smaller than
	// UnknownBackoff.
	MaxUnknownBackoff time.Duration
	// UninitializedNodeDelay is how long a node that the cloud controller
	// has not initialized yet (no spec.providerID, and the
	// node.cloudprovider.kubernetes.io/uninitialized NoSchedule taint) is
	// left alone after its creation: Observe decides OrphanUninitialized
	// without counting the cloud's answer. 0 never waits: such a node is
	// judged like any other, which is upstream's decision (MonitorNodes in
	// k8s.io/cloud-provider controllers/nodelifecycle/node_lifecycle_controller.go
	// at v1.37.2, as at v1.36.3, asks the cloud about every node that is
	// not Ready, initialized or not). Unlike upstream, DefaultOrphanPolicy
	// waits one minute, so that a node whose instance the cloud does not
	// list yet is not deleted before the cloud node controller initializes
	// it (kubernetes/kubernetes#58334; the delay was proposed upstream in
	// kubernetes/kubernetes#124825 and #127424, both closed unmerged).
	UninitializedNodeDelay time.Duration
}

// TaintUninitialized is the key of the NoSchedule taint a kubelet started
// with an external cloud provider carries until the cloud node controller
// initializes the node (k8s.io/cloud-provider/api, TaintExternalCloudProvider).
const TaintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// DefaultOrphanPolicy returns upstream-compatible values: the first NotFound
// answer deletes (1 confirmation, no minimum age), as the cloud node
// lifecycle controller does. Upstream retries a failing cloud every monitor
// period (5s) forever; the default keeps that first retry (5s) but doubles
// it up to 5m, so a broken cloud API is not hammered. Unlike upstream, an
// uninitialized node is left alone for its first minute
// (UninitializedNodeDelay; set it to 0 for upstream's decision). Upstream
// here is the cloud node lifecycle controller of k8s.io/cloud-provider
// v0.37.2 (Kubernetes v1.37.2). Its decisions differ from v0.36.3's in one
// point: cloudprovider.InstanceNotFound is matched with errors.Is rather
// than == on the legacy Instances lookups (ensureNodeExistsByProviderID),
// so a wrapped not-found now deletes the node, as ClassifyExistence always
// does (see ErrInstanceNotFound). Its parallel MonitorNodes
// (--concurrent-node-lifecycle-syncs) and its metrics are new too, both
// the caller's.
func DefaultOrphanPolicy() OrphanPolicy {
	return OrphanPolicy{Confirmations: 1, UnknownBackoff: 5 * time.Second, MaxUnknownBackoff: 5 * time.Minute,
		UninitializedNodeDelay: time.Minute}
}

func (p OrphanPolicy) validate() error {
	switch {
	case p.Confirmations < 1:
		return fmt.Errorf("%w: Confirmations %d is less than 1", ErrInvalidConfig, p.Confirmations)
	case p.MinNotFoundAge < 0:
		return fmt.Errorf("%w: MinNotFoundAge %v is negative", ErrInvalidConfig, p.MinNotFoundAge)
	case p.UnknownBackoff < 0:
		return fmt.Errorf("%w: UnknownBackoff %v is negative", ErrInvalidConfig, p.UnknownBackoff)
	case p.MaxUnknownBackoff < p.UnknownBackoff:
		return fmt.Errorf("%w: MaxUnknownBackoff %v is less than UnknownBackoff %v",
			ErrInvalidConfig, p.MaxUnknownBackoff, p.UnknownBackoff)
	case p.UninitializedNodeDelay < 0:
		return fmt.Errorf("%w: UninitializedNodeDelay %v is negative", ErrInvalidConfig, p.UninitializedNodeDelay)
	}
	return nil
}

// OrphanReason says why an OrphanDecision was taken.
type OrphanReason uint8

const (
	// OrphanInvalidNode: the node was nil or had no name; nothing decided.
	OrphanInvalidNode OrphanReason = 1 + iota
	// OrphanNodeReady: the node is Ready, so it is never deleted whatever the
	// cloud says; its NotFound count and backoff are reset.
	OrphanNodeReady
	// OrphanExists: the instance exists; the NotFound count is reset.
	OrphanExists
	// OrphanCloudUnknown: the cloud could not answer; nothing counted or
	// reset, next check after the backoff.
	OrphanCloudUnknown
	// OrphanAwaitingConfirmations: NotFound, but fewer than Confirmations
	// answers so far.
	OrphanAwaitingConfirmations
	// OrphanAwaitingAge: enough NotFound answers, but they do not yet span
	// MinNotFoundAge; NextCheck is when they will.
	OrphanAwaitingAge
	// OrphanNotFound: the instance is gone, confirmed: delete the node.
	OrphanNotFound
	// OrphanUninitialized: skipped, the node is uninitialized (no
	// providerID, the TaintUninitialized taint) and younger than
	// UninitializedNodeDelay; the cloud's answer is ignored (the caller need
	// not query the cloud) and NextCheck is when the delay ends.
	OrphanUninitialized
)

var orphanReasonNames = [...]string{
	OrphanInvalidNode:           "InvalidNode",
	OrphanNodeReady:             "NodeReady",
	OrphanExists:                "Exists",
	OrphanCloudUnknown:          "CloudUnknown",
	OrphanAwaitingConfirmations: "AwaitingConfirmations",
	OrphanAwaitingAge:           "AwaitingAge",
	OrphanNotFound:              "NotFound",
	OrphanUninitialized:         "Uninitialized",
}

// String returns the reason's name, such as "NotFound" (or "OrphanReason(n)").
func (r OrphanReason) String() string {
	if int(r) < len(orphanReasonNames) && orphanReasonNames[r] != "" {
		return orphanReasonNames[r]
	}
	return "OrphanReason(" + strconv.Itoa(int(r)) + ")"
}

// OrphanDecision is what OrphanTracker.Observe decided for one node.
type OrphanDecision struct {
	// Delete is true when the caller should delete the Node object.
	Delete bool
	// Reason says why.
	Reason OrphanReason
	// NextCheck is the earliest time another cloud query for this node is
	// useful; a time not after now means "at your next regular pass".
	NextCheck time.Time
	// NotFound is the number of NotFound answers counted so far.
	NotFound int
}

// OrphanTracker decides when a node whose cloud instance is reported missing
// may be deleted (upstream's cloud node lifecycle controller, with the
// lessons of the Azure VMSS incident, kubernetes/kubernetes#95288). Rules:
//
//   - a Ready node is never deleted, and being Ready resets its count;
//   - deletion needs Confirmations NotFound answers spanning at least
//     MinNotFoundAge;
//   - an Exists answer resets the count;
//   - an Unknown answer neither counts nor resets, and sets NextCheck with
//     an exponential backoff (UnknownBackoff, doubling, capped at
//     MaxUnknownBackoff) that any Exists or NotFound answer resets;
//   - a node that is not initialized yet (no providerID and the
//     TaintUninitialized taint) is skipped while it is younger than
//     UninitializedNodeDelay (unlike upstream, which has no such delay:
//     see OrphanPolicy).
//
// Records belong to a node object, not a name: when the UID of the node
// seen under a name changes (the node was deleted and created again, and
// the Forget was missed), the old record is dropped, so a re-created node
// never inherits its predecessor's NotFound count or backoff. (Upstream
// keeps no state between passes, so it has nothing to inherit.)
//
// After a Delete decision the record stays (so a failed deletion is simply
// decided again on the next NotFound) until Forget. Nodes that are Ready or
// whose instance exists keep no record, except an uninitialized node whose
// UninitializedNodeDelay has started: it keeps the delay's end (until
// Forget, or until it is initialized and Ready or found to exist), so that
// the delay of a node with a zero or future CreationTimestamp runs once from
// its first Observe and does not start again after every Exists answer.
//
// The zero value is not usable; create one with NewOrphanTracker. An
// OrphanTracker is safe for concurrent use (one mutex; no callbacks).
type OrphanTracker struct {
	mu    sync.Mutex
	p     OrphanPolicy
	last  time.Time // latest now seen; an earlier now is treated as this one
	nodes map[string]*orphanRecord
}

type orphanRecord struct {
	uid           types.UID // the node object the record belongs to
	firstSeen     time.Time // first Observe of this object (uninitialized delay fallback)
	uninitEnd     time.Time // end of the uninitialized delay, on the caller's clock; zero until computed
	notFound      int
	firstNotFound time.Time
	unknowns      int           // Unknown answers in a row
	backoff       time.Duration // the last Unknown backoff
	nextCheck     time.Time
}

// NewOrphanTracker returns an empty OrphanTracker for p, or an error
// wrapping ErrInvalidConfig (Confirmations < 1, a negative duration, or
// MaxUnknownBackoff < UnknownBackoff).
func NewOrphanTracker(p OrphanPolicy) (*OrphanTracker, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &OrphanTracker{p: p, nodes: make(map[string]*orphanRecord)}, nil
}

// Observe records the cloud's answer e for node at now and decides. For a
// Ready node (Ready condition True) e is ignored and the caller need not
// query the cloud at all, as upstream; the same holds for an uninitialized
// node younger than UninitializedNodeDelay (OrphanUninitialized). Its age is
// measured from its CreationTimestamp; when that is zero or after now (clock
// skew), from the first Observe of the node, so a skewed timestamp cannot
// postpone the check for longer than the delay. The timestamp (a server
// wall time) is compared with now once, at the first such Observe; the end
// of the delay is then kept on the caller's clock, so a later wall-clock
// step does not end it early. A nil or unnamed node yields
// OrphanInvalidNode. An Existence value outside the three constants counts
// as Unknown. O(1).
func (o *OrphanTracker) Observe(now time.Time, node *v1.Node, e Existence) OrphanDecision {
	if node == nil || node.Name == "" {
		return OrphanDecision{Reason: OrphanInvalidNode, NextCheck: now}
	}
	ready := false
	if c := findCondition(node.Status.Conditions, v1.NodeReady); c != nil {
		ready = c.Status == v1.ConditionTrue
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	if now.Before(o.last) {
		now = o.last
	} else {
		o.last = now
	}
	rec := o.nodes[node.Name]
	if rec != nil && rec.uid != node.UID {
		rec = nil // a new object under the same name: start afresh
		delete(o.nodes, node.Name)
	}
	delay := o.p.UninitializedNodeDelay > 0 && uninitialized(node)
	if ready {
		o.reset(now, node.Name, rec, delay)
		return OrphanDecision{Reason: OrphanNodeReady, NextCheck: now}
	}
	if delay {
		if rec == nil {
			rec = &orphanRecord{uid: node.UID, firstSeen: now}
			o.nodes[node.Name] = rec
		}
		if rec.uninitEnd.IsZero() {
			start := node.CreationTimestamp.Time
			if start.IsZero() || start.After(now) {
				start = rec.firstSeen
			}
			// The server's timestamp is read against now once; the rest
			// of the delay is measured on now's (monotonic) clock.
			rec.uninitEnd = now.Add(start.Sub(now) + o.p.UninitializedNodeDelay)
		}
		if now.Before(rec.uninitEnd) {
			rec.nextCheck = rec.uninitEnd
			return OrphanDecision{Reason: OrphanUninitialized, NextCheck: rec.uninitEnd, NotFound: rec.notFound}
		}
	}
	if e == ExistenceExists {
		o.reset(now, node.Name, rec, delay)
		return OrphanDecision{Reason: OrphanExists, NextCheck: now}
	}
	if rec == nil {
		rec = &orphanRecord{uid: node.UID, firstSeen: now}
		o.nodes[node.Name] = rec
	}
	d := OrphanDecision{NextCheck: now}
	if e == ExistenceNotFound {
		rec.unknowns = 0 // the next Unknown starts the backoff afresh
		if rec.notFound == 0 {
			rec.firstNotFound = now
		}
		rec.notFound++
		switch oldEnough := rec.firstNotFound.Add(o.p.MinNotFoundAge); {
		case rec.notFound < o.p.Confirmations:
			d.Reason = OrphanAwaitingConfirmations
		case now.Before(oldEnough):
			d.Reason = OrphanAwaitingAge
			d.NextCheck = oldEnough
		default:
			d.Reason = OrphanNotFound
			d.Delete = true
		}
	} else {
		rec.unknowns++
		switch {
		case rec.unknowns == 1:
			rec.backoff = o.p.UnknownBackoff
		case rec.backoff > o.p.MaxUnknownBackoff/2:
			rec.backoff = o.p.MaxUnknownBackoff
		default:
			rec.backoff *= 2
		}
		d.Reason = OrphanCloudUnknown
		d.NextCheck = now.Add(rec.backoff)
	}
	rec.nextCheck = d.NextCheck
	d.NotFound = rec.notFound
	return d
}

// reset forgets the node's NotFound count and Unknown backoff after a Ready
// or Exists answer. The record itself goes too, unless the node is
// uninitialized (delay) and its delay has started: then only the start of
// the delay stays, so that a node without a usable CreationTimestamp does
// not start a new delay at its next Observe (each Exists answer would
// otherwise make a later NotFound wait another full delay).
func (o *OrphanTracker) reset(now time.Time, name string, rec *orphanRecord, delay bool) {
	if rec == nil {
		return
	}
	if delay && !rec.uninitEnd.IsZero() {
		*rec = orphanRecord{uid: rec.uid, firstSeen: rec.firstSeen, uninitEnd: rec.uninitEnd, nextCheck: now}
		return
	}
	delete(o.nodes, name)
}

// uninitialized reports whether the cloud node controller has not
// initialized node yet, as upstream MonitorNodes tests it: no providerID and
// a taint matching TaintUninitialized with effect NoSchedule.
func uninitialized(node *v1.Node) bool {
	if node.Spec.ProviderID != "" {
		return false
	}
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].MatchTaint(&uninitializedTaint) {
			return true
		}
	}
	return false
}

// uninitializedTaint is upstream's UninitializedTaint: MatchTaint compares
// its key and effect.
var uninitializedTaint = v1.Taint{Key: TaintUninitialized, Effect: v1.TaintEffectNoSchedule}

// NextCheck returns the NextCheck of the last decision for a node that has a
// record (a pending NotFound count or an Unknown backoff), so a caller can
// skip the cloud query while now is before it. false: no record, query at
// will.
func (o *OrphanTracker) NextCheck(name string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if rec := o.nodes[name]; rec != nil {
		return rec.nextCheck, true
	}
	return time.Time{}, false
}

// Forget drops the node's record (call it when the Node object is deleted).
func (o *OrphanTracker) Forget(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.nodes, name)
}
