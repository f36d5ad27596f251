package taints

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/uid"
)

// Reason says why a pod is evicted.
type Reason uint8

const (
	// ReasonNotTolerated: some NoExecute taint on the pod's node is not
	// tolerated, so the pod is due at once.
	ReasonNotTolerated Reason = 1 + iota
	// ReasonTolerationExpired: every taint is tolerated, but the binding
	// toleration's TolerationSeconds ran out.
	ReasonTolerationExpired
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case ReasonNotTolerated:
		return "NotTolerated"
	case ReasonTolerationExpired:
		return "TolerationExpired"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Eviction is one pod deletion handed out by Evictor.Due. The caller sets
// DisruptionTargetCondition on the pod, deletes it (preferably with a UID
// precondition, UID being the pod the decision was made for; upstream sends
// none), and reports the outcome with DoneEviction or RetryEviction (or Done
// or Retry, which go by name only).
type Eviction struct {
	Pod  types.NamespacedName
	UID  types.UID
	Node string
	// At is the scheduled fire time (it may be before the pod was seen, with
	// UseTaintTimeAdded, or before the Due call that handed it out).
	At     time.Time
	Reason Reason
	// Attempt is 1 the first time the eviction is handed out and n+1 after
	// n calls to Retry.
	Attempt int
}

// recState is where a pod record is in its eviction's life.
type recState uint8

const (
	stIdle      recState = iota // no eviction scheduled
	stScheduled                 // in the queue (attempts > 0: a retry)
	stHandedOut                 // returned by Due, waiting for Done or Retry
	stEvicted                   // Done called: not evicted again (same UID) until DeletePod
)

// podRec is what the Evictor keeps per pod: a fixed-size record of 112
// bytes (a malloc size class; pinned by TestPodRecSize and
// TestPodRecCompact), plus a slot of the pod index; the UID is kept in its
// 16 bytes (uid.go), the tolerations are shared (tolSet). What only a pod
// with an eviction needs (its fire time, queue links, attempts) is in its
// evState, which an idle pod, nearly every pod, shares with every other
// idle pod of the Evictor.
type podRec struct {
	key      types.NamespacedName
	uid      uid.Raw    // the pod's UID (uid.go)
	node     *nodeState // the node the pod is bound to (attached to its list)
	nodePrev *podRec    // neighbours in the node's pod list
	nodeNext *podRec
	tols     *tolSet   // shared with every pod with the same tolerations; nil: none
	start    time.Time // the pod's countdown start on its node, as the caller's clock gave it
	// evState is the pod's own eviction state while it is scheduled,
	// handed out or done, and the Evictor's shared, all-zero idle one
	// (Evictor.idle, state stIdle) otherwise: it is read through rec but
	// written only once owned (Evictor.own).
	*evState
}

// evState is a pod's eviction while one is scheduled, handed out or done.
type evState struct {
	at         time.Time // fire time while scheduled or handed out
	bkt        *bucket   // fire-time bucket while queued
	prev, next *podRec   // neighbours in the bucket
	attempts   int32
	state      recState
	reason     Reason
}

// maxFreeEvStates bounds the Evictor's list of evStates kept for reuse;
// evStateBatch is how many one allocation makes.
const (
	maxFreeEvStates = 4096
	evStateBatch    = 16
)

// nodeState is what the Evictor keeps per node: its NoExecute taints and the
// pods bound to it, in the order the Evictor first saw them there (a list,
// so that removal is O(1) and the order, which decides ties among evictions
// scheduled together, never depends on removals).
type nodeState struct {
	name       string
	taints     []taintEntry
	byIdent    []int32  // indices of taints sorted by identity (key, value)
	one        [1]int32 // byIdent's storage when the node has one NoExecute taint
	head, tail *podRec
}

// Evictor is the taint eviction controller (upstream
// pkg/controller/tainteviction/taint_eviction.go, Controller, at v1.37.2)
// as a caller-driven state machine: it keeps every node's NoExecute taints
// and the pods bound to each node, decides when each pod must be deleted,
// and hands the deletions out with Due. It runs no goroutines and reads no
// clock; every time-dependent method takes now, and a now earlier than one
// already seen counts as no time elapsed.
//
// Memory: a pod costs a fixed-size record of 112 bytes and a slot of the
// pod index (about 130 bytes a pod in all, TestMemoryPerPod); a pod with an
// eviction scheduled, handed out or done costs 64 bytes more while it has
// one. Toleration lists are shared between pods with equal lists, and
// instants keep the caller's monotonic reading.
//
// The zero Evictor is not usable; call NewEvictor. An Evictor is safe for
// concurrent use: one mutex guards it, and no caller code runs under it.
type Evictor struct {
	mu    sync.Mutex
	cfg   EvictorConfig
	nodes map[string]*nodeState
	pods  podIndex // by name
	// otherUIDs are the UIDs of the records whose UID is not a canonical
	// UUID (uid.go).
	otherUIDs map[*podRec]types.UID
	tols      tolTable // interned toleration lists
	queue     *fireQueue
	last      time.Time // latest now seen

	// idle is the evState of every pod without an eviction; it stays
	// zero (TestIdleEvStateStaysZero). free keeps evStates released by
	// pods that went idle, for reuse (at most maxFreeEvStates).
	idle evState
	free []*evState

	cancelled []Cancellation // pending for AppendCancelled, at most maxCancel
	maxCancel int
	dropped   uint64 // cancellations not kept: the buffer was full
}

// Cancellation is a scheduled eviction the Evictor cancelled, reported by
// AppendCancelled: upstream's taint eviction controller records a Normal
// TaintManagerEviction Event "Cancelling deletion of Pod <namespace>/<name>"
// for each (cancelWorkWithEvent in
// pkg/controller/tainteviction/taint_eviction.go at v1.37.2).
type Cancellation struct {
	Pod  types.NamespacedName
	UID  types.UID
	Node string
	// At is the fire time the eviction was scheduled for.
	At time.Time
}

// AppendCancelled appends the scheduled evictions cancelled since the last
// call to dst, in the order they were cancelled, forgets them, and returns
// the extended slice. Only evictions that were scheduled count (as
// upstream, whose TimedWorkerQueue.CancelWork reports whether work was
// queued): a pod whose node lost its NoExecute taints, that now tolerates
// them forever, that was deleted, moved or recreated, or whose node was
// deleted, while its eviction was in the queue (a retry after a failed
// deletion included); and, as upstream's processPodOnNode cancels and
// re-adds it, a scheduled eviction brought forward to now because a taint
// is no longer tolerated. A pod with nothing scheduled, or whose eviction
// is handed out or done, yields none. A fire time moved by
// RescheduleEarlier or RescheduleRecompute is not a cancellation.
//
// Nothing is kept until KeepCancellations(max > 0) is called; past max
// pending, cancellations are only counted (CancelledDropped), so a caller
// that never drains costs bounded memory. The Evictor reuses its buffer:
// with nothing pending AppendCancelled costs O(1) and allocates nothing,
// and once the buffer has grown, recording allocates nothing either. Drain
// it after the calls that may cancel (SetNodeTaints, SetPod, DeletePod,
// DeleteNode); no caller code runs under the Evictor's lock.
func (e *Evictor) AppendCancelled(dst []Cancellation) []Cancellation {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.cancelled) == 0 {
		return dst
	}
	dst = append(dst, e.cancelled...)
	clear(e.cancelled) // drop the strings' references
	e.cancelled = e.cancelled[:0]
	return dst
}

// MaxCancellationsLimit is the largest max KeepCancellations accepts.
const MaxCancellationsLimit = 1 << 20

// KeepCancellations makes the Evictor keep up to max cancelled scheduled
// evictions for AppendCancelled (the facts behind upstream's "Cancelling
// deletion of Pod" event); past that many pending, further ones are only
// counted (CancelledDropped). 0, the default, keeps none. Lowering max below
// the number pending keeps those. It returns an error wrapping
// ErrInvalidConfig, and changes nothing, when max is negative or above
// MaxCancellationsLimit.
func (e *Evictor) KeepCancellations(max int) error {
	if max < 0 || max > MaxCancellationsLimit {
		return fmt.Errorf("%w: KeepCancellations(%d): max must be in [0, %d]", ErrInvalidConfig, max, MaxCancellationsLimit)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.maxCancel = max
	return nil
}

// CancelledDropped returns how many cancellations were not kept for
// AppendCancelled because the KeepCancellations maximum were pending (every
// cancellation, while it is 0). O(1).
func (e *Evictor) CancelledDropped() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}

// noteCancelled records that rec's scheduled eviction was cancelled.
func (e *Evictor) noteCancelled(rec *podRec) {
	if len(e.cancelled) >= e.maxCancel {
		e.dropped++
		return
	}
	e.cancelled = append(e.cancelled, Cancellation{Pod: rec.key, UID: e.uidOf(rec), Node: rec.node.name, At: rec.at})
}

// NewEvictor returns an empty Evictor with a copy of cfg, or an error
// wrapping ErrInvalidConfig.
func NewEvictor(cfg EvictorConfig) (*Evictor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Evictor{
		cfg:   cfg,
		nodes: make(map[string]*nodeState),
		pods:  newPodIndex(),
		tols:  newTolTable(),
		queue: newFireQueue(),
	}, nil
}

// advance returns the effective now: never earlier than one already seen.
func (e *Evictor) advance(now time.Time) time.Time {
	if now.Before(e.last) {
		return e.last
	}
	e.last = now
	return now
}

// SetNodeTaints records node's taints (from a node add or update event);
// only NoExecute taints are kept, so passing node.Spec.Taints as is is
// fine. When the NoExecute taints changed, every pod on the node is
// re-evaluated at now:
//
//   - no NoExecute taint left: every scheduled eviction on the node is
//     cancelled; nothing is evicted (unlike upstream processPodOnNode in
//     pkg/controller/tainteviction/taint_eviction.go, whose empty-taints
//     path falls through to an immediate deletion);
//   - a taint some pod does not tolerate: that pod is due at now;
//   - all tolerated forever: the pod's eviction is cancelled;
//   - tolerated for a finite time: see EvictorConfig.Reschedule.
//
// A taint's countdown starts when SetNodeTaints first sees it (same key,
// value and effect, present continuously since), or at its TimeAdded with
// UseTaintTimeAdded. Mind the default after a restart: a new Evictor (a
// restarted controller, a new leader) sees every taint for the first time,
// so every pending countdown starts over, as upstream's
// (kubernetes/kubernetes#108268); set EvictorConfig.UseTaintTimeAdded to
// count from the taint's TimeAdded instead (see the UseTaintTimeAdded
// example). Taints with the same key, value and effect count once
// (the first one, with its TimeAdded); taints with the same key and effect
// but different values are kept and must each be tolerated. A TimeAdded
// after now is ignored (the first sighting counts). Unchanged taints cost a
// comparison and allocate nothing. A change costs the matching and O(1)
// queue work per pod on the node (O(log B) per new fire time).
func (e *Evictor) SetNodeTaints(now time.Time, node string, taints []v1.Taint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now = e.advance(now)
	n := e.nodes[node]
	if n == nil {
		if !anyNoExecute(taints) {
			return
		}
		n = &nodeState{name: node}
		e.nodes[node] = n
	} else if sameNoExecute(n, taints) {
		return
	}
	n.taints, n.byIdent = e.entries(now, n, taints)
	for p := n.head; p != nil; p = p.nodeNext {
		e.evaluate(now, p)
	}
	e.dropIfEmpty(n)
}

// DeleteNode forgets node's taints (a node delete event) and cancels the
// scheduled evictions of its pods, which stay tracked under that node name.
// Unlike upstream, which leaves the timers of a deleted node's pods running,
// a deleted node is treated like one without NoExecute taints; its pods are
// removed by the pod garbage collector. Evictions already handed out are
// left to Done or Retry (Retry drops them).
func (e *Evictor) DeleteNode(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[node]
	if n == nil {
		return
	}
	n.taints, n.byIdent = nil, nil
	for p := n.head; p != nil; p = p.nodeNext {
		e.cancel(p)
	}
	e.dropIfEmpty(n)
}

// SetPod records a pod add or update: its node (spec.nodeName), its
// tolerations and its UID. The pod is (re-)evaluated when it is new, when
// its node or tolerations changed, and not otherwise: an update that changes
// neither costs a map lookup and a comparison and allocates nothing.
//
//   - A pod with a new UID under a known name is a new pod (recreated, e.g.
//     by a StatefulSet): the old one's record, including an eviction handed
//     out or done, is dropped, and the new pod is evaluated and evicted
//     again if it must be (#107543, #110401, #125332).
//   - A pod that moved to another node is evaluated from scratch there: its
//     old schedule is cancelled and its countdown restarts.
//   - A pod whose eviction is handed out keeps it; the new data is used by
//     Retry. A pod whose eviction is done is not scheduled again.
//   - A nil pod is ignored; a pod without spec.nodeName is not bound and is
//     forgotten like DeletePod.
//
// The tolerations are copied once per distinct list and shared: every pod
// with an equal list (same order and values; nearly every pod has the two
// admission defaults) uses the same copy, so a new pod whose list is
// already known allocates only its record. O(1) expected lookups, O(1)
// queue work (O(log B) for a new fire time) plus the matching.
func (e *Evictor) SetPod(now time.Time, pod *v1.Pod) {
	if pod == nil {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	e.mu.Lock()
	defer e.mu.Unlock()
	now = e.advance(now)
	rec := e.pods.get(key)
	nodeName := pod.Spec.NodeName
	if nodeName == "" {
		if rec != nil {
			e.forget(rec)
		}
		return
	}
	if rec != nil && !e.hasUID(rec, pod.UID) {
		e.forget(rec)
		rec = nil
	}
	if rec == nil {
		rec = &podRec{key: key, tols: e.tols.acquire(pod.Spec.Tolerations), start: e.podStart(now, pod), evState: &e.idle}
		e.setUID(rec, pod.UID)
		e.pods.put(rec)
		e.attach(rec, nodeName)
		e.evaluate(now, rec)
		return
	}
	moved := rec.node.name != nodeName
	tolChanged := !equalTolerations(rec.tols.tolerations(), pod.Spec.Tolerations)
	if !moved && !tolChanged {
		return
	}
	if tolChanged {
		old := rec.tols
		rec.tols = e.tols.acquire(pod.Spec.Tolerations)
		e.tols.release(old)
	}
	if moved {
		e.detach(rec)
		e.attach(rec, nodeName)
		e.cancel(rec)
		rec.start = e.podStart(now, pod)
	} else if e.cfg.Reschedule == RescheduleNever && !e.cfg.UseTaintTimeAdded {
		// Upstream creates a new eviction at now + seconds; restarting the
		// pod's countdown reproduces that for a pod that had none (an
		// existing one never moves under this policy anyway).
		rec.start = now
	}
	e.evaluate(now, rec)
}

// MaxReserve bounds Reserve: a larger count reserves this many pods, and
// the index grows as usual beyond it.
const MaxReserve = 1 << 24

// Reserve makes room for n pods (at most MaxReserve) in the Evictor's pod
// index, so that a first sync of n pods does not grow it step by step: each
// step reads every record again to rehash it, at millions of pods a cache
// miss each. It decides nothing and allocates O(n) at once; n <= 0 does
// nothing. Removals may shrink the index again (below 1/8 full).
func (e *Evictor) Reserve(n int) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pods.reserve(min(n, MaxReserve))
}

// DeletePod forgets the pod (a pod delete event): a scheduled eviction is
// cancelled, and an eviction handed out is forgotten (a later Done or Retry
// for key is a no-op). O(1), O(log B) when it empties a fire-time bucket.
func (e *Evictor) DeletePod(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rec := e.pods.get(key); rec != nil {
		e.forget(rec)
	}
}

// Due hands out every eviction whose fire time is not after now, each
// exactly once: until Done or Retry is called for it, it is not handed out
// again, whatever happens to its pod or node meanwhile. The order is by fire
// time; ties come in the order their fire time was set (a node's pods, when
// the node is tainted, in the order the Evictor first saw them there), so
// the order is deterministic for a given sequence of calls. It returns nil
// when nothing is due; that costs O(1) and allocates nothing. Handing out k
// evictions with b distinct fire times costs O(b log B + k), B being the
// number of distinct fire times queued.
func (e *Evictor) Due(now time.Time) []Eviction {
	e.mu.Lock()
	defer e.mu.Unlock()
	now = e.advance(now)
	bs, total := e.queue.popDue(now)
	if total == 0 {
		return nil
	}
	out := make([]Eviction, 0, total)
	for _, b := range bs {
		for r := b.head; r != nil; r = detached(r) {
			r.state = stHandedOut
			out = append(out, Eviction{Pod: r.key, UID: e.uidOf(r), Node: r.node.name, At: r.at, Reason: r.reason, Attempt: int(r.attempts) + 1})
		}
	}
	e.queue.release()
	return out
}

// Done reports that the handed-out eviction of key succeeded (the pod was
// deleted or is terminating). The pod is not evicted again while it keeps
// its UID; a new pod with the same name (another UID) is a new pod. Done is
// a no-op unless key's eviction is handed out (e.g. after DeletePod, or a
// second Done). O(1).
//
// Done identifies the eviction by name only. When several workers
// acknowledge evictions concurrently, use DoneEviction: a late Done for a
// pod that was since recreated under the same name would otherwise mark the
// new pod's eviction done if it is handed out at that moment.
func (e *Evictor) Done(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rec := e.handedOut(key, "", false); rec != nil {
		rec.state = stEvicted
	}
}

// DoneEviction is Done for the eviction x returned by Due, checked against
// the pod it was made for: it is a no-op unless x.Pod's eviction is handed
// out and the pod still has x.UID. A late acknowledgement for a pod that was
// recreated under the same name (a StatefulSet pod) therefore never touches
// the new pod's eviction, even one handed out to another worker (unlike
// upstream at v1.37.2, whose finishing worker deletes its key
// unconditionally, a replacement scheduled meanwhile included:
// getWrappedWorkerFunc in pkg/controller/tainteviction/timed_workers.go).
// O(1).
func (e *Evictor) DoneEviction(x Eviction) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rec := e.handedOut(x.Pod, x.UID, true); rec != nil {
		rec.state = stEvicted
	}
}

// Retry reports that the handed-out eviction of key failed (for example an
// admission webhook denied the deletion). The pod is re-evaluated with what
// the Evictor knows now: when it no longer needs evicting (its node lost its
// NoExecute taints, or every taint is tolerated forever) the eviction is
// dropped; otherwise it is due again at now + after (after < 0 counts as 0),
// or, with RescheduleRecompute, at the recomputed fire time if that is
// later. Unlike upstream, which gives up after 5 quick attempts (#140639),
// a failed eviction is never abandoned. Retry is a no-op unless key's
// eviction is handed out. O(log B) at most. Like Done, it identifies the
// eviction by name only; RetryEviction also checks the UID.
func (e *Evictor) Retry(now time.Time, key types.NamespacedName, after time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now = e.advance(now)
	if rec := e.handedOut(key, "", false); rec != nil {
		e.retry(now, rec, after)
	}
}

// RetryEviction is Retry for the eviction x returned by Due, checked like
// DoneEviction: a no-op unless x.Pod's eviction is handed out and the pod
// still has x.UID. O(log B) at most.
func (e *Evictor) RetryEviction(now time.Time, x Eviction, after time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now = e.advance(now)
	if rec := e.handedOut(x.Pod, x.UID, true); rec != nil {
		e.retry(now, rec, after)
	}
}

// handedOut returns key's record when its eviction is handed out (and, with
// checkUID, the pod has uid), else nil.
func (e *Evictor) handedOut(key types.NamespacedName, uid types.UID, checkUID bool) *podRec {
	rec := e.pods.get(key)
	if rec == nil || rec.state != stHandedOut || (checkUID && !e.hasUID(rec, uid)) {
		return nil
	}
	return rec
}

// retry applies Retry to a handed-out rec.
func (e *Evictor) retry(now time.Time, rec *podRec, after time.Duration) {
	rec.attempts++
	v := e.judgeRec(rec)
	if v.kind == vNone || v.kind == vForever {
		e.toIdle(rec)
		return
	}
	at := now.Add(max(after, 0))
	if e.cfg.Reschedule == RescheduleRecompute && v.kind == vAt && v.at.After(at) {
		at = v.at
		rec.reason = ReasonTolerationExpired
	}
	e.schedule(rec, at, rec.reason)
}

// NextDeadline returns the earliest scheduled fire time (which may already
// have passed) and true, or false when nothing is scheduled. Evictions
// handed out and not yet acknowledged do not count. O(1).
func (e *Evictor) NextDeadline() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.queue.peek(e.last)
	if b == nil {
		return time.Time{}, false
	}
	return b.at, true
}

// Len returns the number of scheduled evictions (including retries, not
// including those handed out). O(1).
func (e *Evictor) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queue.len()
}

// evaluate applies upstream's processPodOnNode decision to one pod at now,
// with the fixes and
// the reschedule policy. Handed-out and done evictions are left alone.
func (e *Evictor) evaluate(now time.Time, rec *podRec) {
	if rec.state == stHandedOut || rec.state == stEvicted {
		return
	}
	n := rec.node
	if len(n.taints) == 0 {
		e.cancel(rec)
		return
	}
	v := judge(n.taints, rec.tols.tolerations(), rec.start, e.cfg.ComparisonOperators)
	switch v.kind {
	case vForever:
		e.cancel(rec)
	case vNow:
		if rec.state == stScheduled && (rec.attempts > 0 || !rec.at.After(now)) {
			return // already due, or backing off after a failure
		}
		if rec.state == stScheduled {
			e.noteCancelled(rec) // upstream cancels it, then adds work due now
		}
		e.schedule(rec, now, ReasonNotTolerated)
	case vAt:
		if rec.state == stScheduled {
			if rec.attempts > 0 {
				return
			}
			switch e.cfg.Reschedule {
			case RescheduleNever:
				return
			case RescheduleEarlier:
				if !v.at.Before(rec.at) {
					return
				}
			}
		}
		e.schedule(rec, v.at, ReasonTolerationExpired)
	}
}

// judgeRec is judge for rec on its node.
func (e *Evictor) judgeRec(rec *podRec) verdict {
	return judge(rec.node.taints, rec.tols.tolerations(), rec.start, e.cfg.ComparisonOperators)
}

// schedule puts rec in the queue at at. An eviction whose fire time does not
// change keeps its place among ties; one that moves goes last among the
// evictions of its new fire time.
func (e *Evictor) schedule(rec *podRec, at time.Time, reason Reason) {
	if rec.state == stScheduled {
		if sameInstant(rec.at, at) {
			rec.reason = reason
			return
		}
		e.queue.remove(rec)
	}
	e.own(rec)
	rec.at, rec.reason, rec.state = at, reason, stScheduled
	e.queue.add(rec, at)
}

// own gives rec an evState of its own when it has the shared idle one.
func (e *Evictor) own(rec *podRec) {
	if rec.evState != &e.idle {
		return
	}
	if len(e.free) == 0 {
		// A batch per allocation: tainting a node schedules all its
		// pods at once.
		batch := make([]evState, evStateBatch)
		for i := range batch {
			e.free = append(e.free, &batch[i])
		}
	}
	n := len(e.free)
	rec.evState = e.free[n-1]
	e.free[n-1] = nil
	e.free = e.free[:n-1]
}

// toIdle makes rec idle (no eviction, no attempts): its own evState, if it
// has one, is cleared and kept for reuse. rec must not be queued.
func (e *Evictor) toIdle(rec *podRec) {
	s := rec.evState
	if s == &e.idle {
		return
	}
	rec.evState = &e.idle
	*s = evState{}
	if len(e.free) < maxFreeEvStates {
		e.free = append(e.free, s)
	}
}

// cancel takes a scheduled eviction (or retry) out of the queue.
func (e *Evictor) cancel(rec *podRec) {
	if rec.state != stScheduled {
		return
	}
	e.noteCancelled(rec)
	e.queue.remove(rec)
	e.toIdle(rec)
}

// forget drops rec entirely.
func (e *Evictor) forget(rec *podRec) {
	e.cancel(rec)
	e.toIdle(rec) // a handed-out or done eviction's state is kept for reuse
	e.detach(rec)
	e.pods.remove(rec)
	e.dropUID(rec)
	e.tols.release(rec.tols)
	rec.tols = nil
}

// attach appends rec to node's pod list. O(1).
func (e *Evictor) attach(rec *podRec, node string) {
	n := e.nodes[node]
	if n == nil {
		n = &nodeState{name: node}
		e.nodes[node] = n
	}
	rec.node, rec.nodePrev, rec.nodeNext = n, n.tail, nil
	if n.tail != nil {
		n.tail.nodeNext = rec
	} else {
		n.head = rec
	}
	n.tail = rec
}

// detach removes rec from its node's pod list. O(1).
func (e *Evictor) detach(rec *podRec) {
	n := rec.node
	if n == nil {
		return
	}
	if rec.nodePrev != nil {
		rec.nodePrev.nodeNext = rec.nodeNext
	} else if n.head == rec {
		n.head = rec.nodeNext
	}
	if rec.nodeNext != nil {
		rec.nodeNext.nodePrev = rec.nodePrev
	} else if n.tail == rec {
		n.tail = rec.nodePrev
	}
	rec.nodePrev, rec.nodeNext = nil, nil
	e.dropIfEmpty(n)
}

// dropIfEmpty forgets a node with neither taints nor pods.
func (e *Evictor) dropIfEmpty(n *nodeState) {
	if len(n.taints) == 0 && n.head == nil {
		delete(e.nodes, n.name)
	}
}

// podStart is a new pod's countdown start on its node: now, or its
// creationTimestamp (when set and not after now) with UseTaintTimeAdded.
func (e *Evictor) podStart(now time.Time, pod *v1.Pod) time.Time {
	if e.cfg.UseTaintTimeAdded {
		if c := pod.CreationTimestamp.Time; !c.IsZero() && !c.After(now) {
			return onClock(now, c)
		}
	}
	return now
}

// entries builds the node's new taint entries from in (its NoExecute
// taints, the first of each identity, in input order), keeping the first
// sighting of taints already present on n, and their index by identity.
// O(n log n): a sort of in's NoExecute taints by identity finds the
// duplicates, and each taint's earlier sighting is a binary search in n's
// index.
func (e *Evictor) entries(now time.Time, n *nodeState, in []v1.Taint) ([]taintEntry, []int32) {
	var buf [16]int32
	pos := buf[:0] // positions in in of NoExecute taints
	for i := range in {
		if in[i].Effect == v1.TaintEffectNoExecute {
			pos = append(pos, int32(i))
		}
	}
	if len(pos) == 0 {
		return nil, nil
	}
	// Sort by identity, then position: the first of each run is the one
	// that counts.
	slices.SortFunc(pos, func(a, b int32) int {
		if c := compareIdentity(&in[a], &in[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	uniq := pos[:1]
	for _, p := range pos[1:] {
		if compareIdentity(&in[uniq[len(uniq)-1]], &in[p]) != 0 {
			uniq = append(uniq, p)
		}
	}
	// uniq is sorted by identity; the entries keep input order.
	var buf2 [16]int32
	byPos := append(buf2[:0], uniq...)
	slices.Sort(byPos)
	out := make([]taintEntry, len(byPos))
	for k, p := range byPos {
		t := &in[p]
		var old *taintEntry
		if j := findIdentity(n.taints, n.byIdent, t); j >= 0 {
			old = &n.taints[j]
		}
		seen := now
		if old != nil {
			seen = old.seen
		}
		start := seen
		if e.cfg.UseTaintTimeAdded && t.TimeAdded != nil {
			if ta := t.TimeAdded.Time; !ta.IsZero() && !ta.After(now) {
				// Placed on the caller's clock once, when first seen with this
				// TimeAdded, so that a later wall-clock step moves nothing.
				if old != nil && old.taint.TimeAdded != nil && old.taint.TimeAdded.Time.Equal(ta) {
					start = old.start
				} else {
					start = onClock(now, ta)
				}
			}
		}
		out[k] = taintEntry{taint: copyTaint(*t), seen: seen, start: start}
	}
	if len(uniq) == 1 {
		return out, n.one[:] // n.one[0] is always 0
	}
	byIdent := make([]int32, len(uniq))
	for g, p := range uniq {
		k, _ := slices.BinarySearch(byPos, p)
		byIdent[g] = int32(k)
	}
	return out, byIdent
}

// compareIdentity orders NoExecute taints by the Evictor's identity: key,
// then value (the effect is the same).
func compareIdentity(a, b *v1.Taint) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}

// findIdentity returns the index in entries of the taint with t's identity,
// or -1, by binary search in byIdent (entries' indices sorted by identity).
// O(log n), no allocation.
func findIdentity(entries []taintEntry, byIdent []int32, t *v1.Taint) int {
	lo, hi := 0, len(byIdent)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if compareIdentity(&entries[byIdent[mid]].taint, t) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(byIdent) && compareIdentity(&entries[byIdent[lo]].taint, t) == 0 {
		return int(byIdent[lo])
	}
	return -1
}

// anyNoExecute reports whether in holds a NoExecute taint.
func anyNoExecute(in []v1.Taint) bool {
	for i := range in {
		if in[i].Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// sameNoExecute reports whether the NoExecute taints of in (deduplicated as
// entries does) equal n's, in order, TimeAdded included. No allocation;
// O(n) when in repeats n's taints in order, O(n log n) at worst: a taint
// that does not match the next stored one is a duplicate only if its
// identity is among the stored taints already matched (a binary search).
func sameNoExecute(n *nodeState, in []v1.Taint) bool {
	stored := n.taints
	k := 0
	for i := range in {
		t := &in[i]
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if k < len(stored) && sameTaint(&stored[k].taint, t) {
			k++
			continue
		}
		if j := findIdentity(stored, n.byIdent, t); j >= 0 && j < k {
			continue // repeats an earlier taint: counted once
		}
		return false
	}
	return k == len(stored)
}

// copyTolerations deep-copies tol with two allocations at most.
func copyTolerations(tol []v1.Toleration) []v1.Toleration {
	if len(tol) == 0 {
		return nil
	}
	out := make([]v1.Toleration, len(tol))
	copy(out, tol)
	n := 0
	for i := range tol {
		if tol[i].TolerationSeconds != nil {
			n++
		}
	}
	if n > 0 {
		secs := make([]int64, 0, n)
		for i := range out {
			if s := out[i].TolerationSeconds; s != nil {
				secs = append(secs, *s)
				out[i].TolerationSeconds = &secs[len(secs)-1]
			}
		}
	}
	return out
}

// equalTolerations compares two toleration lists, order included, by value.
func equalTolerations(a, b []v1.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Key != y.Key || x.Operator != y.Operator || x.Value != y.Value || x.Effect != y.Effect {
			return false
		}
		if (x.TolerationSeconds == nil) != (y.TolerationSeconds == nil) {
			return false
		}
		if x.TolerationSeconds != nil && *x.TolerationSeconds != *y.TolerationSeconds {
			return false
		}
	}
	return true
}

// onClock returns the wall-clock instant t (a TimeAdded or a
// creationTimestamp, read from the API) as an instant on now's clock: now
// moved back by how far t is behind now in wall time. When now carries a
// monotonic reading the result does too, so deadlines derived from it are
// measured on the monotonic clock and a later wall-clock step fires nothing
// early. On a fake clock it is t itself (in now's location).
func onClock(now, t time.Time) time.Time {
	return now.Add(t.Sub(now))
}
