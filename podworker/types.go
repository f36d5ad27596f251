package podworker

import (
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateType says why the caller sends an update, as upstream's
// kubetypes.SyncPodType does. Unlike upstream, whose zero value means
// "sync", the zero UpdateType is invalid: UpdatePod rejects it, so an
// UpdateOptions literal that forgets its Type is reported instead of being
// silently treated as a sync.
type UpdateType uint8

const (
	// TypeSync is a periodic or replayed sync. Work handed out for a
	// machine-owned retry or replay always carries TypeSync.
	TypeSync UpdateType = 1 + iota
	// TypeUpdate carries a changed pod object.
	TypeUpdate
	// TypeCreate announces a pod for the first time (or again, after its UID
	// was purged: see OutcomeRestartRequested).
	TypeCreate
	// TypeKill asks for the pod to be stopped (KillOptions may say why).
	TypeKill
)

// String returns "sync", "update", "create" or "kill", and
// "UpdateType(n)" for invalid values.
func (t UpdateType) String() string {
	switch t {
	case TypeSync:
		return "sync"
	case TypeUpdate:
		return "update"
	case TypeCreate:
		return "create"
	case TypeKill:
		return "kill"
	}
	return "UpdateType(" + strconv.Itoa(int(t)) + ")"
}

func (t UpdateType) valid() bool { return t >= TypeSync && t <= TypeKill }

// WorkType is the lifecycle phase of a pod as seen by the workers, and the
// kind of step Next hands out: set the pod up, stop its containers, or
// release its resources. The zero value is invalid (Work{} is "no work").
type WorkType uint8

const (
	// SyncWork: the pod should be running; the caller runs upstream's
	// SyncPod (set up, start and restart containers).
	SyncWork WorkType = 1 + iota
	// TerminatingWork: no new containers may start; the caller stops every
	// container with Work.GracePeriod (SyncTerminatingPod, or
	// SyncTerminatingRuntimePod when Work.Pod is nil and Work.RunningPod is
	// set).
	TerminatingWork
	// TerminatedWork: no container runs; the caller releases resources and
	// writes the final status (SyncTerminatedPod).
	TerminatedWork
)

// String returns "sync", "terminating" or "terminated", and "WorkType(n)"
// for invalid values.
func (t WorkType) String() string {
	switch t {
	case SyncWork:
		return "sync"
	case TerminatingWork:
		return "terminating"
	case TerminatedWork:
		return "terminated"
	}
	return "WorkType(" + strconv.Itoa(int(t)) + ")"
}

// Outcome says what UpdatePod did with an update.
type Outcome uint8

const (
	// OutcomeAccepted: the update is now the pod's pending update (or, for
	// a static pod killed before it started, the pod finished at once).
	OutcomeAccepted Outcome = 1 + iota
	// OutcomeIgnoredFinished: the pod already finished; the update is
	// dropped until SyncKnownPods purges the record.
	OutcomeIgnoredFinished
	// OutcomeRestartRequested: a TypeCreate arrived while termination was
	// already requested (UID reuse, typically a static pod with a fixed
	// UID). The update is dropped and the record is flagged; the first
	// SyncKnownPods after the pod finishes purges it so that the caller can
	// send the Create again. Unlike upstream, which only sets a flag, the
	// drop is reported.
	OutcomeRestartRequested
	// OutcomeRejected: malformed input (UpdateResult.Err says which); no
	// record was created or changed.
	OutcomeRejected
	// OutcomeIgnoredTerminated: a runtime-only kill (RunningPod) for a pod
	// whose containers already stopped and which is still being cleaned up.
	// Upstream drops it too: the runtime listing was older than the stop.
	OutcomeIgnoredTerminated
)

// String returns the outcome name in lower case ("accepted", …).
func (o Outcome) String() string {
	switch o {
	case OutcomeAccepted:
		return "accepted"
	case OutcomeIgnoredFinished:
		return "ignored-finished"
	case OutcomeRestartRequested:
		return "restart-requested"
	case OutcomeRejected:
		return "rejected"
	case OutcomeIgnoredTerminated:
		return "ignored-terminated"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// RunningPod identifies a pod known only from the container runtime (no
// config object): the caller can only kill it.
type RunningPod struct {
	UID             types.UID
	Name, Namespace string
}

// KillOptions qualify a kill. They are honoured on a TypeKill update, and on
// any update once termination was requested (a later, shorter grace period
// wins); on other updates they are ignored, as upstream does.
type KillOptions struct {
	// Evict marks the termination as an eviction: ShouldPodContentBeRemoved
	// becomes true at once. Unlike upstream the flag is sticky: a pod that is
	// already terminating for another reason still becomes evicted.
	Evict bool
	// GracePeriodOverride, when set, may shorten the grace period (upstream
	// calculateEffectiveGracePeriod). Negative values count as 0; the result is never below 1.
	GracePeriodOverride *int64
}

// UpdateOptions is one update for UpdatePod. Exactly one of Pod and
// RunningPod identifies the pod; when both are set RunningPod is ignored (as
// upstream). Pod and MirrorPod are kept by reference and handed back in Work:
// the workers never modify them, and callers must not either (informer cache
// objects are read-only by convention).
type UpdateOptions struct {
	// Type is required; the zero value is rejected.
	Type UpdateType
	// Pod is the config object. Its UID keys the record.
	Pod *v1.Pod
	// MirrorPod is the mirror of a static Pod, if any.
	MirrorPod *v1.Pod
	// RunningPod is a runtime-only pod. Only valid with Pod nil and Type
	// TypeKill.
	RunningPod *RunningPod
	// Kill qualifies a kill (see KillOptions).
	Kill *KillOptions
	// RuntimeTerminated is the caller's statement that the container runtime
	// runs nothing for this pod (no running container, no ready sandbox). It
	// matters only on the first update for a UID whose Pod is already in a
	// terminal phase (Succeeded or Failed): the pod then starts out
	// terminated, so it is not counted as active and only its cleanup step
	// (TerminatedWork) runs; a static pod, which can never start once its
	// termination is requested, finishes at once with no step, as upstream.
	// Upstream reads its pod-status cache instead (#105523, #117019).
	RuntimeTerminated bool
}

// UpdateResult reports what UpdatePod did.
type UpdateResult struct {
	Outcome Outcome
	// CancelInFlight is true when a step for this pod is in flight and this
	// update made the pod start terminating or shortened its grace period:
	// the caller should cancel the running step (its Complete, typically with
	// context.Canceled, is followed at once by the terminating step).
	// Unlike upstream it is never set when nothing is in flight.
	CancelInFlight bool
	// Err is set only with OutcomeRejected and wraps ErrInvalidUpdate.
	Err error
}

// Work is one step handed out by Next. The caller performs it and reports
// with Complete, passing the Work back unchanged.
type Work struct {
	// UID of the pod.
	UID types.UID
	// Type says which step to run.
	Type WorkType
	// UpdateType is the type of the update being delivered; TypeSync for a
	// retry, resync or replay that the machine generated itself.
	UpdateType UpdateType
	// Pod is the config object (nil only for a runtime-only pod).
	Pod *v1.Pod
	// MirrorPod is the mirror pod delivered with the update, or the last
	// known one on a replay.
	MirrorPod *v1.Pod
	// RunningPod is set, with Pod nil, when the pod is known only from the
	// runtime: run the runtime-only termination (SyncTerminatingRuntimePod).
	// It is a copy owned by the workers; do not modify it.
	RunningPod *RunningPod
	// GracePeriod is the effective grace period in seconds (≥ 1) for a
	// TerminatingWork step and nil otherwise. Unlike upstream it is also set
	// after a natural completion (SyncWork returned Terminal) and on replays.
	// The pointed-to value is never modified; do not modify it either.
	GracePeriod *int64
	// Generation identifies this hand-out; Complete ignores a Work whose
	// generation is not the pod's current in-flight one.
	Generation uint64
}

// PodRef returns the namespace and name of the pod the step is for, taken
// from Pod, or from RunningPod for a runtime-only pod, so that a caller
// names (logs, events, metrics) config and runtime-only pods alike without
// a branch. It is upstream's podUIDAndRefForUpdate
// (pkg/kubelet/pod_workers.go, v1.37.2), whose ObjectRef carries the same
// pair; the UID is Work.UID. The zero Work yields the zero NamespacedName.
// It allocates nothing.
func (w Work) PodRef() types.NamespacedName {
	switch {
	case w.Pod != nil:
		return types.NamespacedName{Namespace: w.Pod.Namespace, Name: w.Pod.Name}
	case w.RunningPod != nil:
		return types.NamespacedName{Namespace: w.RunningPod.Namespace, Name: w.RunningPod.Name}
	}
	return types.NamespacedName{}
}

// String renders the step for logs: "terminating ns/name (uid) gen=3 grace=30".
func (w Work) String() string {
	var b strings.Builder
	b.WriteString(w.Type.String())
	b.WriteByte(' ')
	if w.Pod != nil || w.RunningPod != nil {
		b.WriteString(w.PodRef().String())
		if w.Pod == nil {
			b.WriteString(" (runtime-only)")
		}
	}
	b.WriteString(" uid=" + string(w.UID))
	b.WriteString(" update=" + w.UpdateType.String())
	b.WriteString(" gen=" + strconv.FormatUint(w.Generation, 10))
	if w.GracePeriod != nil {
		b.WriteString(" grace=" + strconv.FormatInt(*w.GracePeriod, 10))
	}
	return b.String()
}

// Result is the outcome of a step, reported with Complete.
type Result struct {
	// Terminal reports, for a SyncWork step only, that the pod reached a
	// terminal phase on its own (all containers exited for good): the pod
	// moves to terminating at once. Ignored for other steps and when Err is
	// set.
	Terminal bool
	// Err is any failure, including context.Canceled after CancelInFlight.
	// The pod keeps its state and the step is retried after BackoffPeriod,
	// unless a newer update is pending, which is handed out at once.
	Err error
	// RetryAfter, when positive and Err is set, replaces BackoffPeriod for
	// this retry (Config.Jitter still applies). Upstream retries after 1 s
	// instead of 10 s when the error says "network is not ready"; the caller,
	// who knows its errors, decides here. It is capped at the longer of
	// ResyncInterval and BackoffPeriod (with the defaults, the 60 s resync):
	// upstream retries every failed step after its fixed backOffPeriod
	// (completeWork in pkg/kubelet/pod_workers.go, v1.37.2), never later
	// than a healthy pod's resync, and leaves longer back-offs (a 5-minute
	// CrashLoopBackOff or image pull back-off) to the sync itself, which
	// fails fast while they last. 0 (or negative) means BackoffPeriod.
	RetryAfter time.Duration
	// RetryNow, when Err is set, retries the step at once: no BackoffPeriod,
	// no RetryAfter, no jitter (for an error the caller knows is already
	// resolved, such as a conflict it has just refreshed). Ignored without
	// Err. The caller owns the risk of a hot loop.
	RetryNow bool
}

// PodWorkerSync describes one record in the SyncKnownPods result.
type PodWorkerSync struct {
	// State is the pod's lifecycle phase.
	State WorkType
	// Orphan is true when the pod was not in the desired set.
	Orphan bool
	// HasConfig is true when the record holds a config Pod: one handed to
	// the worker in an update that is active or pending. It is false for a
	// runtime-only pod, and also for a static pod killed before it started,
	// whose config update was never run and is dropped with the kill (as
	// upstream, where such a pod has no activeUpdate).
	HasConfig bool
	// Static is true when that Pod is a static pod.
	Static bool
	// Finished is true when the pod finished (its TerminatedWork step
	// succeeded). Such a record only stops the UID from being restarted:
	// unlike upstream, which reports it like any other known pod and so hides
	// runtime leftovers with the same UID (#139833), callers should treat a
	// runtime pod whose UID is absent or Finished as an orphan and kill it
	// with a RunningPod update.
	Finished bool
}
