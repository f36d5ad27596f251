package nodehealth

import (
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// Result is what one Observe call decided for one node.
//
// ObservedReady and CurrentReady may point into the node passed to Observe
// (no copy is made, so that the steady state allocates nothing), into the
// StatusUpdate of this Result, or to a condition the Tracker shares between
// calls. Callers must treat all three as read-only.
type Result struct {
	// GracePeriod is the grace that applied: Config.GracePeriod when the
	// node has a Ready condition, Config.StartupGracePeriod when it has none.
	GracePeriod time.Duration
	// ObservedReady is the Ready condition as observed, before any update.
	// For a node without a Ready condition it is a synthetic
	// {Unknown, LastHeartbeatTime = LastTransitionTime = CreationTimestamp}
	// condition, as upstream builds it. Never nil after a successful call.
	ObservedReady *v1.NodeCondition
	// CurrentReady is the Ready condition after this evaluation: the one in
	// StatusUpdate when there is one, else the node's own. It is nil when
	// the node never had a Ready condition and is not stale.
	CurrentReady *v1.NodeCondition
	// StatusUpdate, when non-nil, is a deep copy of the node's status with
	// the stale conditions turned Unknown; the caller writes it with
	// UpdateStatus. It is set only when the Ready condition changes, and
	// never while Held. When Confirm is set too, confirm it first.
	StatusUpdate *v1.NodeStatus
	// Confirm, when not zero, asks the caller to read these objects from
	// the API server and pass them to Tracker.Confirm before it acts on the
	// stale verdict (writes StatusUpdate, counts the node as not ready in
	// its zone, taints it, marks its pods): the node is stale by its cached
	// heartbeat, which may lag (Config.Confirmation). It is set on every
	// stale evaluation that is not Held, with or without a StatusUpdate:
	// upstream reads the live Lease of every node past its grace
	// (tryUpdateNodeHealth at v1.37.2), so a node already Unknown whose
	// kubelet is back holds the pass while the cache lags. A caller that
	// never calls Confirm gets the v1.36 behaviour: the write is assumed
	// made.
	Confirm LiveRead
	// Held is true while a confirmation found a cache behind the API server
	// (Tracker.Held) and the caller has not reported it caught up
	// (Tracker.CacheSynced): no node gets a StatusUpdate. Upstream skips
	// every node of such a pass (no zone count, taint or pod work).
	Held bool
	// MarkPodsNotReady is true from the Tracker's own Ready True→Unknown
	// flip until that flip is acknowledged (AckPodsNotReadyEdge, or
	// AckPodsNotReady), or until the node reports Ready=True again.
	MarkPodsNotReady bool
	// PodsNotReadyEdge identifies the flip MarkPodsNotReady stands for: the
	// now of the Observe that wrote Ready=Unknown, moved on by a nanosecond
	// past the Tracker's previous edge when time did not advance (two flips
	// at one instant, a clock stepped back), so that every flip of every
	// node has its own edge. It is zero when
	// MarkPodsNotReady is false, stays the same while the flip is pending
	// (also when the write is produced again after a failure), and differs
	// for a later flip. Compare edges with time.Time.Equal. A caller that
	// marks the pods asynchronously hands it back to AckPodsNotReadyEdge, so
	// that a late acknowledgement never clears a newer flip.
	PodsNotReadyEdge time.Time
	// Stale is true when no fresh signal arrived for longer than
	// GracePeriod: now is strictly after Deadline.
	Stale bool
	// Deadline is probe + GracePeriod: when the node goes stale if no new
	// signal arrives. The probe time is the controller-clock time of the
	// last fresh signal.
	Deadline time.Time
	// ReadyTransition is the controller-clock time at which the Tracker last
	// saw the Ready condition's LastTransitionTime change (or wrote Unknown
	// itself, or reset the node). Upstream used it for the pre-1.27
	// --pod-eviction-timeout; it drives no decision here.
	ReadyTransition time.Time
}

// Condition reasons and messages the Tracker writes on a stale node. They are
// the upstream strings, which users and tools match on.
const (
	// ReasonNeverUpdated is the reason of a condition the kubelet never posted.
	ReasonNeverUpdated = "NodeStatusNeverUpdated"
	// MessageNeverUpdated goes with ReasonNeverUpdated.
	MessageNeverUpdated = "Kubelet never posted node status."
	// ReasonStoppedPosting is the reason of a condition the kubelet stopped
	// refreshing.
	ReasonStoppedPosting = "NodeStatusUnknown"
	// MessageStoppedPosting goes with ReasonStoppedPosting.
	MessageStoppedPosting = "Kubelet stopped posting node status."
)

// staleConditionTypes are the conditions turned Unknown on a stale node, in
// upstream order. NetworkUnavailable is managed by the control plane and
// never touched, nor is any custom condition.
var staleConditionTypes = [...]v1.NodeConditionType{
	v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure,
}

// Tracker decides, pass after pass, whether each node is still sending health
// signals, and what to write when it stopped. It models the health part of
// upstream's node lifecycle controller (tryUpdateNodeHealth, Kubernetes
// v1.37.2): one record per node name, a probe time refreshed by a heartbeat
// change or a Lease renewal, and a grace period after which the node's
// conditions are written Unknown.
//
// The zero value is not usable; create one with NewTracker. A Tracker is safe
// for concurrent use: one mutex guards it, and it runs no callbacks.
type Tracker struct {
	mu    sync.Mutex
	cfg   Config
	last  time.Time // latest now seen; an earlier now is treated as this one
	nodes map[string]*record
	edge  time.Time // latest pods-not-ready edge handed out (see newEdge)

	// due holds the deadlines of the records not stale at their last
	// evaluation (NextDeadline).
	due   *heap.Heap[dueKey]
	holds [numCaches]Hold // confirm.go: active holds by Cache-1; zero Cache = none
	// synced is the last well-formed version SyncCache was given for each
	// cache (by Cache-1), to notice one going backwards.
	synced [numCaches]string
}

// record is the per-node state (upstream nodeHealthData, minus the full
// status copy: only the Ready condition is ever compared).
type record struct {
	name  string    // the node name (the key in Tracker.nodes)
	gone  bool      // dropped by Forget or replaced by Restore: a Handle to it is stale
	probe time.Time // controller clock: last fresh signal
	// deadline is the record's deadline after its last evaluation, which
	// its entry in Tracker.due never exceeds (deadline.go).
	deadline     time.Time
	transition   time.Time // controller clock: last Ready transition seen
	ready        savedReady
	lease        savedLease
	podsNotReady bool
	podsEdge     time.Time // identity of the pending flip; valid while podsNotReady

	// leaseOnly: timed by ObserveLease, a heartbeat that is not a kubelet's.
	leaseOnly bool
	// due is the record's entry in Tracker.due, kept in the record so
	// that rescheduling it reads no other memory.
	due heap.Elem[dueKey]

	// synthetic is the observed Ready condition handed out while the node
	// has none. Once published it is never modified (a new one replaces it),
	// so Results may share it without copying or racing.
	synthetic *v1.NodeCondition
	pend      pending // confirm.go: the confirmation the last Observe asked for
}

// savedReady is the saved Ready condition, as far as decisions need it.
type savedReady struct {
	present    bool
	status     v1.ConditionStatus
	heartbeat  time.Time // kubelet clock, compared for change only
	transition time.Time // kubelet clock, compared for change only
}

// savedLease is the saved Lease, as far as decisions need it.
type savedLease struct {
	present  bool
	renewSet bool      // false: the saved Lease had a nil RenewTime
	renew    time.Time // kubelet clock, compared for change only
}

// NewTracker returns an empty Tracker for cfg, or an error wrapping
// ErrInvalidConfig when a duration is negative.
func NewTracker(cfg Config) (*Tracker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Tracker{cfg: cfg, nodes: make(map[string]*record), due: newDue()}, nil
}

// Observe evaluates one node at now, given its Lease from kube-node-lease
// (nil when it has none), and records what it saw. The steps, in order:
//
//  1. No Ready condition: the observed Ready is a synthetic Unknown one and
//     the grace is StartupGracePeriod. A node first seen this way gets
//     probe = ReadyTransition = its CreationTimestamp (now when that is in
//     the future or zero). A known node forgets its saved Ready condition
//     but keeps its probe time, so a Ready condition that disappears only
//     switches the grace to StartupGracePeriod (upstream parity: its reset
//     branch for this case is unreachable). Otherwise the grace is
//     GracePeriod.
//  2. A node first seen with a Ready condition, or whose saved Ready was
//     missing, gets probe = ReadyTransition = now. A LastHeartbeatTime that
//     differs from the saved one in any way (even backwards) sets
//     probe = now, and ReadyTransition = now too when LastTransitionTime also
//     differs. An equal heartbeat changes nothing.
//  3. A Lease seen for the first time, or whose RenewTime differs from the
//     saved one in any way (even backwards), sets probe = now, as a
//     heartbeat change does. An equal RenewTime never does; a nil RenewTime
//     counts only on first sight. Unlike upstream (tryUpdateNodeHealth in
//     pkg/controller/nodelifecycle/node_lifecycle_controller.go, v1.37.2),
//     which counts only a strictly newer RenewTime, so one Lease renewed
//     with a kubelet clock running ahead starves every later correct
//     renewal until the kubelet's clock catches up. Unlike upstream, the
//     saved Lease is kept when step 2 refreshes the probe (upstream forgets
//     it there, so its next pass takes the same Lease for a first sight).
//  4. The node is stale when now is strictly after probe + grace.
//  5. If stale, Ready, MemoryPressure, DiskPressure and PIDPressure are
//     turned Unknown in a copy of the status (see StatusUpdate); the copy is
//     returned only when the Ready condition changes, that is when Ready was
//     missing or not already Unknown. Unless Held, a stale node also gets
//     Result.Confirm (Config.Confirmation), whether or not it is written.
//
// When it returns a StatusUpdate the Tracker assumes the caller writes it:
// it saves the written Ready condition, sets ReadyTransition = now and saves
// the Lease passed in as the last one seen (nil forgets it), as upstream
// does after a successful write. If the write fails the caller just
// calls Observe again on its next pass: the node in its cache still has the
// old Ready condition, so the same update is produced again (with a newer
// LastTransitionTime) and MarkPodsNotReady stays set.
//
// Errors: a nil or unnamed node (ErrInvalidNode) and a Lease named after
// another node (ErrLeaseMismatch); the Tracker is then left unchanged.
// Observe never modifies node or lease. In the steady state (a known node,
// not stale, or stale and already Unknown) it allocates nothing.
func (t *Tracker) Observe(now time.Time, node *v1.Node, lease *coordinationv1.Lease) (Result, error) {
	return t.ObserveHandle(now, nil, node, lease)
}

// Handle is a caller-held reference to one node's entry in a Tracker, for
// ObserveHandle. A caller that keeps per-node state of its own (a node
// lifecycle controller's node table) keeps a Handle in it, so that the
// Tracker finds the node's record without looking its name up: at 100,000
// nodes, that lookup's cache misses are a large part of the cost of a pass.
//
// The zero Handle is ready to use: ObserveHandle fills it in. A Handle is
// for one node of one Tracker; one that refers to another name or another
// Tracker, or to a record dropped since (Forget, Restore), is not used but
// refilled, so a stale Handle costs a lookup, never a wrong decision. The
// Tracker reads and writes a Handle only under its lock; a caller passes
// it by pointer and does not read it.
type Handle struct {
	t   *Tracker
	rec *record
}

// ObserveHandle is Observe with a Handle for the node (nil h: Observe): it
// takes the same decisions and returns the same Result, and in the steady
// state it finds the node's record through h instead of by name. On
// success it leaves h referring to the node's record; on error it leaves
// h unchanged. O(1), and it allocates nothing in the steady state.
func (t *Tracker) ObserveHandle(now time.Time, h *Handle, node *v1.Node, lease *coordinationv1.Lease) (Result, error) {
	if node == nil {
		return Result{}, fmt.Errorf("%w: nil node", ErrInvalidNode)
	}
	if node.Name == "" {
		return Result{}, fmt.Errorf("%w: node has no name", ErrInvalidNode)
	}
	if lease != nil && lease.Name != "" && lease.Name != node.Name {
		return Result{}, fmt.Errorf("%w: lease %q observed for node %q", ErrLeaseMismatch, lease.Name, node.Name)
	}
	current := findCondition(node.Status.Conditions, v1.NodeReady)

	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	rec := t.lookup(h, node.Name)

	var res Result
	observed := current
	if current == nil {
		// Step 1, Ready missing.
		res.GracePeriod = t.cfg.StartupGracePeriod
		if rec == nil {
			// Unlike upstream, a creation time in the future (clock skew)
			// or missing is read as now: it can neither postpone the first
			// deadline nor make a node stale at first sight.
			// The creation time is read against now once and kept on
			// now's clock (see onClock): the startup grace then runs on
			// the monotonic clock.
			start := onClock(node.CreationTimestamp.Time, now)
			rec = t.add(&record{name: node.Name, probe: start, transition: start})
		} else {
			rec.ready = savedReady{}
		}
		observed = rec.syntheticReady(node.CreationTimestamp)
	} else {
		// Steps 1 and 2, Ready present.
		res.GracePeriod = t.cfg.GracePeriod
		switch {
		case rec == nil:
			rec = t.add(&record{name: node.Name, probe: now, transition: now, ready: saveReady(current)})
		case !rec.ready.present:
			rec.probe, rec.transition = now, now
			rec.ready = saveReady(current)
		case !rec.ready.heartbeat.Equal(current.LastHeartbeatTime.Time):
			if !rec.ready.transition.Equal(current.LastTransitionTime.Time) {
				rec.transition = now
			}
			rec.probe = now
			rec.ready = saveReady(current)
		}
	}

	if rec.leaseOnly {
		rec.leaseOnly = false // a heartbeat timed by ObserveLease is a node from now on
	}

	// Step 3: the Lease.
	if lease != nil && rec.lease.renewedBy(lease) {
		rec.lease = saveLease(lease)
		rec.probe = now
	}

	// Steps 4 to 6.
	if rec.pend.read != 0 {
		// A new Observe supersedes an unanswered confirmation. (A
		// pending with no read is all zero: leaving it alone keeps its
		// cache lines clean in the steady state.)
		rec.pend = pending{}
	}
	res.Held = t.holding()
	res.ObservedReady = observed
	res.CurrentReady = current
	res.Deadline = rec.probe.Add(res.GracePeriod)
	if now.After(res.Deadline) {
		res.Stale = true
		if !res.Held {
			// Confirmed whatever the Ready status: upstream reads the live
			// Lease whenever a node is past its grace (tryUpdateNodeHealth).
			res.Confirm = t.expectConfirm(rec, node, lease)
		}
		if !res.Held && (current == nil || current.Status != v1.ConditionUnknown) {
			rec.pend.assume(rec)
			st := staleStatus(now, node)
			res.StatusUpdate = st
			res.CurrentReady = findCondition(st.Conditions, v1.NodeReady)
			if observed.Status == v1.ConditionTrue && !rec.podsNotReady {
				rec.podsNotReady, rec.podsEdge = true, t.newEdge(now)
				if rec.pend.assumed {
					rec.pend.flipped, rec.pend.flipEdge = true, rec.podsEdge
				}
			}
			// Step 7: the caller writes it; record it as upstream does after
			// a successful write (probe kept, lease = the observed one).
			rec.ready = saveReady(res.CurrentReady)
			rec.transition = now
			rec.lease = saveLease(lease)
		}
	}
	if rec.podsNotReady && res.CurrentReady != nil && res.CurrentReady.Status == v1.ConditionTrue {
		rec.podsNotReady = false // the kubelet is back and manages its pods
	}
	res.MarkPodsNotReady = rec.podsNotReady
	if rec.podsNotReady {
		res.PodsNotReadyEdge = rec.podsEdge
	}
	res.ReadyTransition = rec.transition
	t.schedule(rec, res.Deadline, res.Stale)
	if h != nil {
		h.t, h.rec = t, rec
	}
	return res, nil
}

// lookup returns the record of name, through h when it refers to it, or
// nil. Called with t.mu held.
func (t *Tracker) lookup(h *Handle, name string) *record {
	if h != nil && h.t == t && h.rec != nil && !h.rec.gone && h.rec.name == name {
		return h.rec
	}
	return t.nodes[name]
}

// add stores rec, a new record for rec.name, replacing (and marking gone)
// any record of that name. Called with t.mu held.
func (t *Tracker) add(rec *record) *record {
	if old := t.nodes[rec.name]; old != nil {
		t.unschedule(old)
		old.gone = true
	}
	t.nodes[rec.name] = rec
	return rec
}

// AckPodsNotReady records that the caller has marked every pod of the node
// NotReady (PodNotReadyStatus written for each), which clears
// MarkPodsNotReady, whichever flip is pending. Use it only when the
// acknowledgement comes before the node's next Observe (the caller marks
// the pods inline, in the pass that read the Result); a caller that marks
// pods asynchronously (a worker pool) must use AckPodsNotReadyEdge, or its
// late acknowledgement of one flip clears a newer flip whose pods are then
// never marked. Unknown names are ignored.
func (t *Tracker) AckPodsNotReady(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec := t.nodes[name]; rec != nil {
		rec.podsNotReady = false
	}
}

// AckPodsNotReadyEdge records that the caller has marked every pod of the
// node NotReady for the flip edge (Result.PodsNotReadyEdge), and clears
// MarkPodsNotReady only if that flip is still the pending one. It reports
// whether it cleared the edge: false for an unknown node, no pending flip,
// or a newer flip (whose pods the caller still has to mark). Safe for
// callers that acknowledge at any time.
func (t *Tracker) AckPodsNotReadyEdge(name string, edge time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.nodes[name]
	if rec == nil || !rec.podsNotReady || !rec.podsEdge.Equal(edge) {
		return false
	}
	rec.podsNotReady = false
	return true
}

// ResetProbes gives every known node a fresh grace period: probe =
// ReadyTransition = now. The caller uses it when the cluster leaves full
// disruption (zonestate's ExitedFullDisruption), as upstream does. It drops
// every unanswered confirmation (Confirm then returns ErrNotPending: the
// caller does not write Unknown for a node that has just been given a fresh
// grace). O(n).
func (t *Tracker) ResetProbes(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	for _, rec := range t.nodes {
		rec.pend = pending{} // no Unknown write for a node given a fresh grace
		rec.probe, rec.transition = now, now
		t.schedule(rec, now.Add(t.grace(rec)), false)
	}
}

// Forget drops everything known about the node (call it when the Node object
// is deleted). A later Observe of the same name starts from first sight.
func (t *Tracker) Forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec := t.nodes[name]; rec != nil {
		t.unschedule(rec)
		rec.gone = true
		delete(t.nodes, name)
	}
}

// advance applies the time model: an earlier now than one already seen is
// treated as the latest one (no time elapsed). Called with t.mu held.
func (t *Tracker) advance(now time.Time) time.Time {
	if now.Before(t.last) {
		return t.last
	}
	t.last = now
	return now
}

// syntheticReady returns the observed Ready condition for a node without one.
func (r *record) syntheticReady(created metav1.Time) *v1.NodeCondition {
	if s := r.synthetic; s != nil && s.LastHeartbeatTime.Equal(&created) {
		return s
	}
	r.synthetic = &v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionUnknown,
		LastHeartbeatTime: created, LastTransitionTime: created,
	}
	return r.synthetic
}

// renewedBy reports whether lease is a fresh signal against the saved one:
// first sight, or a non-nil RenewTime different from the saved one (or the
// first non-nil one after a nil).
func (s savedLease) renewedBy(lease *coordinationv1.Lease) bool {
	if !s.present {
		return true
	}
	rt := lease.Spec.RenewTime
	return rt != nil && (!s.renewSet || !s.renew.Equal(rt.Time))
}

func saveReady(c *v1.NodeCondition) savedReady {
	return savedReady{present: true, status: c.Status,
		heartbeat: c.LastHeartbeatTime.Time, transition: c.LastTransitionTime.Time}
}

func saveLease(l *coordinationv1.Lease) savedLease {
	if l == nil {
		return savedLease{}
	}
	s := savedLease{present: true}
	if rt := l.Spec.RenewTime; rt != nil {
		s.renewSet, s.renew = true, rt.Time
	}
	return s
}

// findCondition returns the first condition of type ct (upstream
// GetNodeCondition: with duplicates, the first one counts), or nil.
func findCondition(cs []v1.NodeCondition, ct v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == ct {
			return &cs[i]
		}
	}
	return nil
}

// staleStatus returns a deep copy of node's status with the health
// conditions turned Unknown (upstream step 5).
func staleStatus(now time.Time, node *v1.Node) *v1.NodeStatus {
	st := node.Status.DeepCopy()
	ts := metav1.NewTime(now)
	for _, ct := range staleConditionTypes {
		c := findCondition(st.Conditions, ct)
		switch {
		case c == nil:
			st.Conditions = append(st.Conditions, v1.NodeCondition{
				Type: ct, Status: v1.ConditionUnknown,
				Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts,
			})
		case c.Status != v1.ConditionUnknown:
			c.Status = v1.ConditionUnknown
			c.Reason = ReasonStoppedPosting
			c.Message = MessageStoppedPosting
			c.LastTransitionTime = ts
		}
	}
	return st
}
