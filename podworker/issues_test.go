package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Regression tests for known upstream bugs, named after the
// upstream issue or pull request.

// TestIssue113145ForceDeletedPodFinishesAfterRuntimeRecovers: a force-deleted
// pod whose termination hit a runtime error stayed Terminating until the
// kubelet restarted, because nothing re-sent an update for a pod no longer in
// config. Here the machine retries by itself; the caller only keeps calling
// Next and SyncKnownPods.
func TestIssue113145ForceDeletedPodFinishesAfterRuntimeRecovers(t *testing.T) {
	a := pod("a")
	runSteps(t, newWorkers(t), rows(started(a), []step{
		{5 * s, upd(TypeUpdate, deleting(a, 0)), "accepted"}, // force delete
		{5 * s, next(), "terminating a update g=1"},
		{6 * s, done("a", failed), "ok"}, // the runtime is down
		{6 * s, known(), "a=terminating/orphan"},
		{8 * s, known(), "a=terminating/orphan"}, // housekeeping: no UpdatePod, no early retry
		{8 * s, next(), "none"},
		{16 * s, next(), "terminating a sync g=1"},
		{17 * s, done("a", failed), "ok"},
		{27 * s, next(), "terminating a sync g=1"},
		{28 * s, done("a", ok), "ok"}, // the runtime is back
		{28 * s, next(), "terminated a sync"},
		{29 * s, done("a", ok), "ok"},
		{30 * s, known(), "none"},
		{30 * s, query("a"), "finished,containers-terminating,runtime-remove,content-remove"},
		{30 * s, deadline(), "none"},
	}))
}

// TestIssue113091StaticPodDeletedWhileRuntimeDown is the node e2e companion of
// #113145: a static pod's manifest is removed while the runtime is stopped;
// the pod must finish once the runtime is back, and a new pod with the same
// full name must then start.
func TestIssue113091StaticPodDeletedWhileRuntimeDown(t *testing.T) {
	s1, s2 := staticPod("st", "s1"), staticPod("st", "s2")
	runSteps(t, newWorkers(t), rows(started(s1), []step{
		{5 * s, kill(s1, nil, false), "accepted"},
		{5 * s, known(), "s1=terminating/orphan/static"},
		{5 * s, upd(TypeCreate, s2), "accepted"},
		{5 * s, mirrorTerminating("st_ns"), "true"},
		{5 * s, drain(), "terminating s1 kill g=30"},
		{6 * s, done("s1", failed), "ok"},
		{16 * s, drain(), "terminating s1 sync g=30"},
		{17 * s, done("s1", ok), "ok"},
		{17 * s, drain(), "terminated s1 sync"},
		{18 * s, done("s1", ok), "ok"},
		{18 * s, drain(), "sync s2 create"},
		{20 * s, known(s2), "s2=sync/static"},
	}))
}

// TestIssue104648StaticPodFixedUIDRestarts: deleting and re-adding a static
// pod manifest with a fixed UID left the pod in error (1.22 regression, fixed
// by #104847 with restartRequested).
func TestIssue104648StaticPodFixedUIDRestarts(t *testing.T) {
	st := staticPod("st", "st1")
	w := newWorkers(t)
	runSteps(t, w, rows(started(st), []step{
		{1 * s, kill(st, nil, false), "accepted"},         // manifest removed
		{1 * s, upd(TypeCreate, st), "restart-requested"}, // manifest re-added, same UID
		{1 * s, known(st), "st1=terminating/static"},      // not finished: kept
		{1 * s, next(), "terminating st1 kill g=30"},
		{2 * s, done("st1", ok), "ok"},
		{2 * s, next(), "terminated st1 sync"},
		{3 * s, done("st1", ok), "ok"},
		{4 * s, known(st), "none"},               // purged so it can start again
		{4 * s, upd(TypeCreate, st), "accepted"}, // the caller re-sends the create
		{4 * s, next(), "sync st1 create"},
		{4 * s, query("st1"), "could-run"},
	}))
	if got := w.Stats().RestartedStaticPods; got != 1 {
		t.Errorf("Stats().RestartedStaticPods = %d, want 1", got)
	}
}

// TestIssue105523TerminalPodsAfterRestartAreNotActive: after a kubelet
// restart, pods that had completed were counted as active by admission
// (OutOfCpu). With RuntimeTerminated the pod is known terminated at once.
func TestIssue105523TerminalPodsAfterRestartAreNotActive(t *testing.T) {
	w := newWorkers(t) // a restarted kubelet
	done := phase(pod("done"), v1.PodSucceeded)
	running := pod("running")
	w.UpdatePod(testutil.Epoch, UpdateOptions{Type: TypeCreate, Pod: done, RuntimeTerminated: true})
	w.UpdatePod(testutil.Epoch, UpdateOptions{Type: TypeCreate, Pod: running, RuntimeTerminated: true})
	if !w.IsPodKnownTerminated(done.UID) || w.CouldHaveRunningContainers(done.UID) {
		t.Errorf("completed pod: IsPodKnownTerminated = %v, CouldHaveRunningContainers = %v, want true, false",
			w.IsPodKnownTerminated(done.UID), w.CouldHaveRunningContainers(done.UID))
	}
	if w.IsPodKnownTerminated(running.UID) {
		t.Error("running pod: IsPodKnownTerminated = true, want false (RuntimeTerminated needs a terminal phase)")
	}
	w.SyncKnownPods(testutil.Epoch, []*v1.Pod{done, running})
	if st := w.Stats(); st.ActivePods != 1 || st.DesiredPods != 2 {
		t.Errorf("Stats() active, desired = %d, %d, want 1, 2", st.ActivePods, st.DesiredPods)
	}
}

// TestIssue117019FirstSightTerminalPodStillCleansUp: the shortcut for
// #105523 first created the record finished, so SyncTerminatedPod never ran
// and the final status was never written. The pod must get its cleanup step.
func TestIssue117019FirstSightTerminalPodStillCleansUp(t *testing.T) {
	a := phase(pod("a"), v1.PodFailed)
	runSteps(t, newWorkers(t), []step{
		{0, send(UpdateOptions{Type: TypeCreate, Pod: a, RuntimeTerminated: true}), "accepted"},
		{0, query("a"), "known-terminated,requested,containers-terminating,runtime-remove"},
		{0, next(), "terminated a create"},
		{1 * s, done("a", ok), "ok"},
		{1 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
	})
}

// TestIssue118497RejectedTerminalPodIsDeletedAfterRestart: a terminal pod that
// never started (rejected at admission) and is being deleted was not cleaned
// up after a kubelet restart. The caller sends it as a kill; it is cleaned up
// and its content is removable (unlike upstream, the deletion is recorded
// even though the pod was first seen terminated).
func TestIssue118497RejectedTerminalPodIsDeletedAfterRestart(t *testing.T) {
	a := deleting(phase(pod("a"), v1.PodFailed), 30)
	runSteps(t, newWorkers(t), []step{
		{0, send(UpdateOptions{Type: TypeKill, Pod: a, RuntimeTerminated: true}), "accepted"},
		{0, next(), "terminated a kill"},
		{1 * s, done("a", ok), "ok"},
		{1 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove,content-remove"},
		{2 * s, known(), "none"},
	})
}

// TestIssue139833FinishedPodRuntimeLeftoverIsKilled: SyncKnownPods reported
// finished desired pods as known, so runtime containers left with the same
// UID were never killed. Finished pods are reported as such, and a
// runtime-only kill for one is carried out while the record stays finished.
func TestIssue139833FinishedPodRuntimeLeftoverIsKilled(t *testing.T) {
	a := pod("a")
	w := newWorkers(t)
	runSteps(t, w, rows(started(a), finishedBy(a), []step{
		{2 * s, known(a), "a=terminated/finished"},
		{2 * s, rtKill("a", testutil.Seconds(1)), "accepted"},
		{2 * s, next(), "terminating rt:a kill g=1"},
		{2 * s, rtKill("a", testutil.Seconds(1)), "accepted"}, // seen again while the kill runs
		{3 * s, done("a", failed), "ok"},
		{3 * s, known(), "a=terminated/orphan/finished"}, // kept until the leftover is gone
		{13 * s, next(), "terminating rt:a kill g=1"},
		{14 * s, done("a", ok), "ok"},
		{14 * s, next(), "terminating rt:a kill g=1"}, // the second request
		{15 * s, done("a", ok), "ok"},
		{15 * s, next(), "none"},
		{15 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		{15 * s, upd(TypeCreate, a), "restart-requested"},
		{16 * s, known(), "none"},
	}))
	if got := w.Stats().OrphanedRuntimePods; got != 2 {
		t.Errorf("Stats().OrphanedRuntimePods = %d, want 2", got)
	}
}

// TestKillCompletionObservableOnEveryPath: a kill's completion is visible
// through IsPodKnownTerminated on every path, including a static pod that
// never started (upstream leaves its completion channels open).
func TestKillCompletionObservableOnEveryPath(t *testing.T) {
	s1, s2 := staticPod("st", "s1"), staticPod("st", "s2")
	w := newWorkers(t)
	now := testutil.Epoch
	w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: s1})
	w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: s2})
	r := w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: s2, Kill: &KillOptions{}})
	if r.Outcome != OutcomeAccepted || !w.IsPodKnownTerminated(s2.UID) || !w.ShouldPodBeFinished(s2.UID) {
		t.Errorf("kill of a waiting static pod: %v, known terminated %v, finished %v; want accepted, true, true",
			r.Outcome, w.IsPodKnownTerminated(s2.UID), w.ShouldPodBeFinished(s2.UID))
	}
	// Killing a static pod first seen already deleting: finished at once too.
	s3 := deleting(staticPod("other", "s3"), 10)
	w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: s3})
	if !w.IsPodKnownTerminated(s3.UID) {
		t.Error("static pod first seen deleting: IsPodKnownTerminated = false, want true")
	}
	mustCheck(t, w)
}
