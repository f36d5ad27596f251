package podworker

import "k8s.io/apimachinery/pkg/types"

// The queries below answer with upstream's names and semantics (the
// PodWorkers interface in pkg/kubelet/pod_workers.go). For a UID without a record the answer depends on whether
// SyncKnownPods was called yet: before, the workers may simply not have
// seen every pod; after, an unknown pod is one whose worker is gone. Each is
// O(1) and allocates nothing.

// query answers one of the queries for uid: known reads the
// pod's record; an unknown pod gets unknownBefore until the first
// SyncKnownPods and unknownAfter from then on.
func (w *Workers) query(uid types.UID, known func(*record) bool, unknownBefore, unknownAfter bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.pods[uid]; ok {
		return known(r)
	}
	if w.synced {
		return unknownAfter
	}
	return unknownBefore
}

// IsPodKnownTerminated reports that the pod's containers are known to be
// stopped (its TerminatingWork step succeeded, or it never started). False
// for unknown pods: a force-deleted pod that finished and was forgotten reads
// false, and so does a runtime-only pod, whose record ends with its
// successful TerminatingWork step (after the first SyncKnownPods its
// completion reads as CouldHaveRunningContainers turning false).
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.terminated }, false, false)
}

// CouldHaveRunningContainers reports that containers may run: true until
// the pod is terminated; for unknown pods true before the first
// SyncKnownPods and false after.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return !r.terminated }, true, false)
}

// ShouldPodBeFinished reports that the pod finished (its TerminatedWork
// step succeeded); for unknown pods false before the first SyncKnownPods and
// true after.
func (w *Workers) ShouldPodBeFinished(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.finished }, false, true)
}

// IsPodTerminationRequested reports that termination was requested (it may
// still be running a SyncWork step). False for unknown pods.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.terminating }, false, false)
}

// ShouldPodContainersBeTerminating reports that no new container may start:
// a TerminatingWork step was handed out, or the pod ended on its own. For
// unknown pods false before the first SyncKnownPods and true after.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.startedTerminating }, false, true)
}

// ShouldPodRuntimeBeRemoved reports that runtime resources (volumes,
// devices) may be torn down: the pod is terminated. For unknown pods false
// before the first SyncKnownPods and true after.
func (w *Workers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.terminated }, false, true)
}

// ShouldPodContentBeRemoved reports that all content of the pod may be
// removed: it was evicted, or it was deleted and is terminated. For unknown
// pods false before the first SyncKnownPods and true after. Unlike upstream,
// the deleted and evicted flags are sticky, so a terminal pod deleted later,
// or a deleting pod evicted later, counts.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return w.query(uid, func(r *record) bool { return r.evicted || (r.deleted && r.terminated) }, false, true)
}

// IsPodForMirrorPodTerminatingByFullName reports that the static pod
// currently allowed to run under fullname (see FullName) was asked to
// terminate and is not terminated yet, so its mirror pod must not be deleted
// yet.
func (w *Workers) IsPodForMirrorPodTerminatingByFullName(fullname string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.startedStatic[fullname]
	return ok && r.terminating && !r.terminated
}
