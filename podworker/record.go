package podworker

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// ConfigSourceAnnotation is the annotation the kubelet sets on every pod to
// name the config source it came from ("api", "file", "http").
const ConfigSourceAnnotation = "kubernetes.io/config.source"

// IsStaticPod reports whether pod is a static pod: its ConfigSourceAnnotation
// is present and not "api" (upstream kubetypes.IsStaticPod). A nil pod is not
// static.
func IsStaticPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && src != "api"
}

// FullName returns the kubelet's pod full name, name + "_" + namespace, the
// key under which static pods with different UIDs exclude each other.
func FullName(name, namespace string) string { return name + "_" + namespace }

// update is one update as stored on a record (by value, so keeping it costs
// no allocation). running is set only when pod is nil.
type update struct {
	typ     UpdateType
	static  bool // IsStaticPod(pod), computed once
	pod     *v1.Pod
	mirror  *v1.Pod
	running *RunningPod
}

// record is the per-UID state (upstream podSyncStatus). Every field is
// guarded by Workers.mu.
type record struct {
	uid      types.UID
	fullname string
	// static is decided from the Pod of the update that created the record
	// (false when a runtime-only kill created it) and drives the start slot.
	static bool

	started            bool // a step other than a runtime-only one was handed out (upstream startedAt)
	terminating        bool // termination requested (upstream terminatingAt)
	startedTerminating bool // a terminating step was handed out, or the pod ended on its own
	terminated         bool // no container runs (upstream terminatedAt)
	finished           bool // cleanup done; only a leftover runtime kill is still accepted
	deleted            bool // sticky: deletionTimestamp, runtime-only kill, or orphaned
	evicted            bool // sticky: a kill with Evict
	restartRequested   bool
	observedRuntime    bool
	orphan             bool   // not in the last SyncKnownPods desired set
	syncEpoch          uint64 // SyncKnownPods call that last saw the pod desired

	grace    int64  // effective grace period once computed (≥ 1), 0 before
	gracePtr *int64 // immutable copy of grace handed out in Work

	pending    update // next update to deliver (latest wins)
	hasPending bool
	retry      bool // a machine-owned replay of active is scheduled
	active     update
	hasActive  bool

	// leftover is a runtime-only kill accepted after the pod finished
	// (#139833); leftoverRenewed records one more that arrived while it ran.
	leftover        *RunningPod
	leftoverGrace   *int64
	leftoverRenewed bool

	inFlight      bool
	gen           uint64   // generation of the step in flight
	flightType    WorkType // type of the step in flight
	flightRuntime bool     // the step in flight is runtime-only
	parked        bool     // static pod waiting for its turn; not in the heap

	readyAt time.Time
	seq     uint64
	elem    heap.Elem[*record]
}

// workType is the lifecycle phase (upstream WorkType()).
func (r *record) workType() WorkType {
	switch {
	case r.terminated:
		return TerminatedWork
	case r.terminating:
		return TerminatingWork
	}
	return SyncWork
}

// config returns the pod SyncKnownPods and Stats classify the record by
// (the last delivered config pod, else the pending one) and whether it is
// static.
func (r *record) config() (hasConfig, static bool) {
	if r.hasActive && r.active.pod != nil {
		return true, r.active.static
	}
	if r.hasPending && r.pending.pod != nil {
		return true, r.pending.static
	}
	return false, false
}

// known returns the newest config pod update known, pending first.
func (r *record) known() (update, bool) {
	if r.hasPending && r.pending.pod != nil {
		return r.pending, true
	}
	if r.hasActive && r.active.pod != nil {
		return r.active, true
	}
	return update{}, false
}

// purgeable reports whether SyncKnownPods may forget a finished record: no
// leftover runtime kill is outstanding.
func (r *record) purgeable() bool { return r.finished && !r.inFlight && r.leftover == nil }

// setGrace stores a new effective grace period and a fresh immutable copy
// for Work (one allocation, only when the value changes).
func (r *record) setGrace(g int64) {
	if g == r.grace && r.gracePtr != nil {
		return
	}
	r.grace = g
	p := new(int64)
	*p = g
	r.gracePtr = p
}

// merge records a delivered update as the last known state (upstream
// mergeLastUpdate): the Pod is kept when the new update is runtime-only, the
// RunningPod is always replaced, the MirrorPod is kept when the new update
// has none.
func (r *record) merge(u update) {
	if !r.hasActive {
		r.active = u
		r.hasActive = true
		return
	}
	if r.active.pod == nil || u.running == nil {
		r.active.pod, r.active.static = u.pod, u.static
	}
	r.active.running = u.running
	if u.mirror != nil {
		r.active.mirror = u.mirror
	}
}

// effectiveGrace computes the grace period (upstream
// calculateEffectiveGracePeriod) from the
// current value cur (0 = unset): the apiserver's deletion grace, then a kill
// override, may lower it (or set it when unset); otherwise the pod spec's
// value applies when nothing was set yet; the result is at least 1.
// Negative inputs count as 0 (immediate), which the floor turns into 1.
// Unlike upstream, a value of 0 taken from the deletion grace (a force
// delete) counts as set: upstream treats the resulting 0 as "unset", so a
// larger override in the same update replaced it and raised the period.
// shortened reports that a previously set value went down.
func effectiveGrace(cur int64, pod *v1.Pod, override *int64) (g int64, shortened bool) {
	g = cur
	set, overridden := cur != 0, false
	var fromPod *int64
	if pod != nil {
		fromPod = pod.DeletionGracePeriodSeconds
	}
	for _, p := range [2]*int64{fromPod, override} {
		if p == nil {
			continue
		}
		if v := max(*p, 0); !set || v < g {
			g, set, overridden = v, true, true
		}
	}
	if !overridden && !set && pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if g < 1 {
		g = 1
	}
	return g, cur != 0 && cur != g
}

func terminalPhase(pod *v1.Pod) bool {
	return pod != nil && (pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed)
}
