package podworker

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// Workers is the kubelet pod worker state machine for every pod of a node,
// driven by its caller: updates go in with UpdatePod, steps come out of Next
// and are acknowledged with Complete, and SyncKnownPods reconciles the
// records with the desired pods. It runs no goroutine and reads no clock:
// every time-dependent method takes now, and time going backwards counts as
// no time elapsed.
//
// The zero value is not usable; call New. A Workers is safe for concurrent
// use: one mutex guards all state, and Config.Jitter is called without it.
type Workers struct {
	cfg Config

	mu    sync.Mutex
	pods  map[types.UID]*record
	queue *heap.Heap[*record] // runnable records by readyAt, then seq

	startedStatic map[string]*record   // full name → the static pod allowed to run
	waitingStatic map[string][]*record // full name → static pods waiting to start, in arrival order

	synced bool      // SyncKnownPods was called at least once
	last   time.Time // latest now seen (time never goes backwards)
	gen    uint64    // last Work.Generation handed out
	seq    uint64    // FIFO tie-break in the queue

	// SyncKnownPods bookkeeping and scratch space, reused across calls.
	epoch   uint64                   // SyncKnownPods calls so far
	missing map[types.UID]missingPod // desired pods with no record after the last SyncKnownPods
	touched []*record
	desired desiredCounts

	restarted, restartedStatic uint64
	orphanedRuntime            uint64
	stale                      uint64
}

// New returns empty workers. It fails, wrapping ErrInvalidConfig, when a
// duration in cfg is negative. cfg is copied.
func New(cfg Config) (*Workers, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Workers{
		cfg:           cfg,
		pods:          map[types.UID]*record{},
		queue:         heap.New(lessReady),
		startedStatic: map[string]*record{},
		waitingStatic: map[string][]*record{},
		missing:       map[types.UID]missingPod{},
	}, nil
}

func lessReady(a, b **record) bool {
	ra, rb := *a, *b
	if !ra.readyAt.Equal(rb.readyAt) {
		return ra.readyAt.Before(rb.readyAt)
	}
	return ra.seq < rb.seq
}

// advance returns the effective now: the latest instant seen so far.
func (w *Workers) advance(now time.Time) time.Time {
	if now.After(w.last) {
		w.last = now
	}
	return w.last
}

func (w *Workers) jitter(d time.Duration) time.Duration {
	if w.cfg.Jitter == nil {
		return d
	}
	return max(w.cfg.Jitter(d), 0)
}

// normalize validates o and returns the identity of the pod it is about.
func normalize(o UpdateOptions) (uid types.UID, name, ns string, runtimeOnly bool, err error) {
	switch {
	case !o.Type.valid():
		return "", "", "", false, fmt.Errorf("%w: update type %v", ErrInvalidUpdate, o.Type)
	case o.Pod != nil:
		uid, name, ns = o.Pod.UID, o.Pod.Name, o.Pod.Namespace
	case o.RunningPod == nil:
		return "", "", "", false, fmt.Errorf("%w: neither Pod nor RunningPod is set", ErrInvalidUpdate)
	case o.Type != TypeKill:
		return "", "", "", false, fmt.Errorf("%w: runtime-only pod %s/%s with update type %v (only kill is allowed)",
			ErrInvalidUpdate, o.RunningPod.Namespace, o.RunningPod.Name, o.Type)
	default:
		uid, name, ns, runtimeOnly = o.RunningPod.UID, o.RunningPod.Name, o.RunningPod.Namespace, true
	}
	if uid == "" {
		return "", "", "", false, fmt.Errorf("%w: pod %s/%s has no UID", ErrInvalidUpdate, ns, name)
	}
	return uid, name, ns, runtimeOnly, nil
}

// UpdatePod delivers an update for one pod (upstream UpdatePod in
// pkg/kubelet/pod_workers.go). Only the latest update is kept. The pod starts terminating when the
// update carries a deletionTimestamp or a terminal phase, is a kill, or is
// about a runtime-only pod; from then on the grace period can only go down
// (upstream calculateEffectiveGracePeriod). The update is runnable at once (NextDeadline reports now)
// unless a step for the pod is in flight, in which case it is handed out as
// soon as that step completes, or the pod is a static pod waiting for its
// turn. The result says what happened; malformed input yields
// OutcomeRejected, never a panic. O(log n).
func (w *Workers) UpdatePod(now time.Time, o UpdateOptions) UpdateResult {
	uid, name, ns, runtimeOnly, err := normalize(o)
	if err != nil {
		return UpdateResult{Outcome: OutcomeRejected, Err: err}
	}
	static := IsStaticPod(o.Pod)

	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.advance(now)

	r, ok := w.pods[uid]
	first := !ok
	if first {
		r = w.newRecord(uid, name, ns, static, o)
	}

	// UID reuse: a create while termination is requested (before the
	// finished gate, as upstream, so a finished pod is flagged too).
	if !first && r.terminating && o.Type == TypeCreate {
		r.restartRequested = true
		return UpdateResult{Outcome: OutcomeRestartRequested}
	}
	if r.finished {
		if runtimeOnly {
			w.leftoverKill(now, r, o)
			return UpdateResult{Outcome: OutcomeAccepted}
		}
		return UpdateResult{Outcome: OutcomeIgnoredFinished}
	}
	if r.terminated && runtimeOnly {
		return UpdateResult{Outcome: OutcomeIgnoredTerminated}
	}

	u := update{typ: o.Type, static: static, pod: o.Pod, mirror: o.MirrorPod}
	if runtimeOnly {
		r.observedRuntime = true
		if k, ok := r.known(); ok {
			u.pod, u.static = k.pod, k.static // a config pod is known: terminate it as such
		} else {
			u.running = r.runningPod(o.RunningPod)
		}
	}
	pod := u.pod // nil only for a runtime-only pod

	became := false
	if !r.terminating {
		became = runtimeOnly || pod.DeletionTimestamp != nil || terminalPhase(pod) || o.Type == TypeKill
		if became {
			r.terminating = true
			if r.static && !r.started {
				w.removeWaiting(now, r)
			}
		}
	}
	// Sticky flags: set by any accepted update, not only at
	// the transition.
	if runtimeOnly || (pod != nil && pod.DeletionTimestamp != nil) {
		r.deleted = true
	}
	if o.Kill != nil && o.Kill.Evict && (o.Type == TypeKill || r.terminating) {
		r.evicted = true
	}

	shortened := false
	if r.terminating && !r.terminated {
		var override *int64
		if o.Kill != nil {
			override = o.Kill.GracePeriodOverride
		}
		var g int64
		g, shortened = effectiveGrace(r.grace, pod, override)
		r.setGrace(g)
	}

	// A static pod that never started and is not known to the runtime can
	// never start now: it finishes without any step (upstream
	// cleanupUnstartedPod), and its completion is observable at once.
	if r.terminating && !r.started && r.static && !r.observedRuntime && !r.inFlight {
		w.finishUnstarted(now, r)
		return UpdateResult{Outcome: OutcomeAccepted}
	}

	r.pending = u
	r.hasPending = true
	r.retry = false
	if !r.inFlight {
		w.wantRun(now, r)
	}
	return UpdateResult{Outcome: OutcomeAccepted, CancelInFlight: r.inFlight && (became || shortened)}
}

// newRecord creates and registers the record for a UID seen for the first
// time.
func (w *Workers) newRecord(uid types.UID, name, ns string, static bool, o UpdateOptions) *record {
	r := &record{uid: uid, fullname: FullName(name, ns)}
	r.elem.Value = r
	if o.Pod != nil {
		r.static = static
		// First-sight terminal pod: the caller states that
		// nothing runs, so the pod starts out terminated and only its
		// cleanup step runs.
		if o.RuntimeTerminated && terminalPhase(o.Pod) {
			r.terminating, r.startedTerminating, r.terminated = true, true, true
		}
		if m, ok := w.missing[uid]; ok && m.active && o.Type == TypeCreate {
			delete(w.missing, uid)
			w.restarted++
			if m.static {
				w.restartedStatic++
			}
		}
	} else {
		w.orphanedRuntime++
	}
	w.pods[uid] = r
	if r.static && !r.terminating {
		w.waitingStatic[r.fullname] = append(w.waitingStatic[r.fullname], r)
	}
	return r
}

// runningPod returns an immutable copy of rp, reusing the record's current
// one when it is equal (no allocation on repeated kills).
func (r *record) runningPod(rp *RunningPod) *RunningPod {
	for _, have := range [2]*RunningPod{r.pending.running, r.active.running} {
		if have != nil && *have == *rp {
			return have
		}
	}
	c := *rp
	return &c
}

// leftoverKill accepts a runtime-only kill for a finished pod: containers
// with its UID are still running (#139833). The record stays finished (so
// the UID is still not restarted) and a runtime-only TerminatingWork step is
// handed out until it succeeds.
func (w *Workers) leftoverKill(now time.Time, r *record, o UpdateOptions) {
	w.orphanedRuntime++
	r.observedRuntime = true
	if r.leftover == nil || *r.leftover != *o.RunningPod {
		c := *o.RunningPod
		r.leftover = &c
	}
	var override *int64
	if o.Kill != nil {
		override = o.Kill.GracePeriodOverride
	}
	g, _ := effectiveGrace(0, nil, override)
	if r.leftoverGrace == nil || *r.leftoverGrace != g {
		p := new(int64)
		*p = g
		r.leftoverGrace = p
	}
	if r.inFlight {
		r.leftoverRenewed = true
		return
	}
	w.schedule(now, r)
}

// wantRun makes a record with work runnable, or parks it when it is a static
// pod that may not start yet.
func (w *Workers) wantRun(now time.Time, r *record) {
	if w.blocked(r) {
		w.queue.Remove(&r.elem)
		r.parked = true
		return
	}
	w.schedule(now, r)
}

// schedule makes r runnable at at, or earlier if it already is. O(log n).
func (w *Workers) schedule(at time.Time, r *record) {
	r.parked = false
	if r.elem.InHeap() {
		if at.Before(r.readyAt) {
			r.readyAt = at
			w.queue.Fix(&r.elem)
		}
		return
	}
	r.readyAt = at
	w.seq++
	r.seq = w.seq
	w.queue.PushElem(&r.elem)
}

func (w *Workers) unschedule(r *record) {
	w.queue.Remove(&r.elem)
	r.parked = false
	r.hasPending = false
	r.retry = false
}

// again schedules the next step after a completed one: a pending update at
// once, otherwise a replay of the last update after delay.
func (w *Workers) again(now time.Time, r *record, delay time.Duration) {
	if r.hasPending {
		w.schedule(now, r)
		return
	}
	r.retry = true
	w.schedule(now.Add(delay), r)
}

// finish marks r finished after its cleanup step (or without any step).
func (w *Workers) finish(now time.Time, r *record) {
	r.terminating, r.terminated, r.finished = true, true, true
	w.unschedule(r)
	w.releaseSlot(now, r)
}

// finishUnstarted finishes a static pod that never started.
func (w *Workers) finishUnstarted(now time.Time, r *record) {
	r.startedTerminating = true
	w.removeWaiting(now, r)
	w.finish(now, r)
}

// deleteRecord forgets r entirely.
func (w *Workers) deleteRecord(now time.Time, r *record) {
	w.unschedule(r)
	r.inFlight = false
	delete(w.pods, r.uid)
	if r.static {
		w.removeWaiting(now, r)
		w.releaseSlot(now, r)
	}
}
