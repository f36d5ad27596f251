package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// finishedBy returns the rows that take a started pod p through a kill to
// finished.
func finishedBy(p *v1.Pod) []step {
	n := short(p.UID)
	return []step{
		{1 * s, kill(p, nil, false), "accepted"},
		{1 * s, next(), "terminating " + n + " kill g=30"},
		{1 * s, done(n, ok), "ok"},
		{1 * s, next(), "terminated " + n + " sync"},
		{1 * s, done(n, ok), "ok"},
	}
}

// TestSyncKnownPods covers upstream SyncKnownPods and removeTerminatedWorker.
func TestSyncKnownPods(t *testing.T) {
	a, b := pod("a"), pod("b")
	st := staticPod("st", "st1")
	tests := []struct {
		name  string
		steps []step
	}{
		{"finished orphan: forgotten, not returned", rows(started(a), finishedBy(a), []step{
			{2 * s, known(), "none"},
			{2 * s, upd(TypeCreate, a), "accepted"}, // the UID may be used again
			{2 * s, next(), "sync a create"},
		})},
		{"finished and desired: returned as finished (#139833)", rows(started(a), finishedBy(a), []step{
			{2 * s, known(a), "a=terminated/finished"},
			{2 * s, upd(TypeCreate, a), "restart-requested"},
		})},
		{"restart requested, not finished, desired: kept", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, upd(TypeCreate, a), "restart-requested"},
			{2 * s, known(a), "a=terminating"},
			{2 * s, next(), "terminating a kill g=30"},
		})},
		{"restart requested and finished: purged even though desired", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, upd(TypeCreate, a), "restart-requested"},
		}, finishedBy(a)[1:], []step{
			{2 * s, known(a, b), "none"},
			{2 * s, upd(TypeCreate, a), "accepted"},
			{2 * s, next(), "sync a create"},
		})},
		{"orphan never started: dropped, pending update and all", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, upd(TypeUpdate, a), "accepted"},
			{1 * s, known(), "none"},
			{1 * s, deadline(), "none"},
		}},
		{"orphan never started but seen in the runtime: kept and terminated", []step{
			{0, rtKill("r", nil), "accepted"},
			{1 * s, known(), "r=terminating/orphan/runtime"},
			{1 * s, next(), "terminating rt:r kill g=1"},
		}},
		{"orphan started: terminating at once with its pod's grace, replayed", rows(started(specGrace(a, testutil.Seconds(7))), []step{
			{0, deadline(), "+1m0s"},
			{2 * s, known(b), "a=terminating/orphan"},
			{2 * s, query("a"), "could-run,requested"},
			{2 * s, deadline(), "+2s"},
			{2 * s, next(), "terminating a sync g=7"},
		})},
		{"orphan already terminating: kept, retried with backoff, no UpdatePod needed", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, next(), "terminating a kill g=30"},
			{2 * s, done("a", failed), "ok"},
			{3 * s, known(), "a=terminating/orphan"},
			{3 * s, deadline(), "+12s"},
			{12 * s, next(), "terminating a sync g=30"},
			{13 * s, done("a", ok), "ok"},
			{13 * s, known(), "a=terminated/orphan"},
			{13 * s, next(), "terminated a sync"},
			{14 * s, done("a", ok), "ok"},
			{14 * s, known(), "none"},
		})},
		{"orphan terminated: kept until finished", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: phase(a, v1.PodSucceeded), RuntimeTerminated: true}), "accepted"},
			{0, next(), "terminated a create"},
			{1 * s, known(), "a=terminated/orphan"},
			{1 * s, done("a", failed), "ok"},
			{11 * s, next(), "terminated a sync"},
		}},
		{"config and static flags", rows(started(st), []step{
			{0, rtKill("r", nil), "accepted"},
			{0, upd(TypeCreate, b), "accepted"},
			{1 * s, known(st, b), "b=sync r=terminating/orphan/runtime st1=sync/static"},
		})},
		{"nil pods, empty UIDs and duplicates in desired are skipped", rows(started(a), []step{
			{1 * s, known(nil, &v1.Pod{}, a, a), "a=sync"},
		})},
		{"orphaned while a sync is in flight: the terminating step follows at once", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, known(), "a=terminating/orphan"},
			{1 * s, next(), "none"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, next(), "terminating a sync g=30"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, newWorkers(t), tt.steps) })
	}
}

// TestQueries covers the PodWorkers queries: answers with a record, and without
// one before and after the first SyncKnownPods.
func TestQueries(t *testing.T) {
	a := pod("a")
	st := staticPod("st", "st1")
	runSteps(t, newWorkers(t), []step{
		{0, query("x"), "could-run"},
		{0, mirrorTerminating("st_ns"), "false"},
		{0, upd(TypeCreate, a), "accepted"},
		{0, query("a"), "could-run"},
		{0, next(), "sync a create"},
		{0, kill(a, nil, false), "accepted cancel"},
		// requested but SyncWork still running: containers not yet terminating
		{0, query("a"), "could-run,requested"},
		{1 * s, done("a", ok), "ok"},
		{1 * s, next(), "terminating a kill g=30"},
		{1 * s, query("a"), "could-run,requested,containers-terminating"},
		{2 * s, done("a", ok), "ok"},
		{2 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove"},
		{2 * s, next(), "terminated a sync"},
		{3 * s, done("a", ok), "ok"},
		{3 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		{3 * s, known(st), "none"}, // the finished orphan is forgotten
		{3 * s, query("x"), "finished,containers-terminating,runtime-remove,content-remove"},
		// forgotten after finishing: "known terminated" reads false (unknown)
		{3 * s, query("a"), "finished,containers-terminating,runtime-remove,content-remove"},
		{4 * s, upd(TypeCreate, st), "accepted"},
		{4 * s, next(), "sync st1 create"},
		{4 * s, mirrorTerminating("st_ns"), "false"},
		{5 * s, upd(TypeUpdate, deleting(st, 30)), "accepted cancel"},
		{5 * s, mirrorTerminating("st_ns"), "true"},
		{5 * s, mirrorTerminating("other_ns"), "false"},
	})
}
