package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestStaticPods covers static pod exclusion (upstream allowStaticPodStart)
// with our exact waiting list and self-wake.
func TestStaticPods(t *testing.T) {
	s1, s2, s3 := staticPod("st", "s1"), staticPod("st", "s2"), staticPod("st", "s3")
	other := staticPod("other", "o1")
	tests := []struct {
		name  string
		steps []step
	}{
		{"same full name: one at a time, next one starts by itself when the first finished", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, upd(TypeCreate, s2), "accepted"},
			{0, drain(), "sync s1 create"},
			{0, deadline(), "none"},
			{0, mirrorTerminating("st_ns"), "false"},
			{1 * s, done("s1", ok), "ok"},
			{1 * s, upd(TypeUpdate, s2), "accepted"}, // still waiting: parked again
			{1 * s, next(), "none"},
			{2 * s, kill(s1, nil, false), "accepted"},
			{2 * s, mirrorTerminating("st_ns"), "true"},
			{2 * s, drain(), "terminating s1 kill g=30"},
			{3 * s, done("s1", ok), "ok"},
			{3 * s, mirrorTerminating("st_ns"), "false"},
			{3 * s, drain(), "terminated s1 sync"}, // terminated is not enough: s2 still waits
			{4 * s, done("s1", ok), "ok"},
			{4 * s, deadline(), "+4s"},
			{4 * s, drain(), "sync s2 update"},
		}},
		{"arrival order is kept", []step{
			{0, upd(TypeCreate, s2), "accepted"},
			{0, upd(TypeCreate, s1), "accepted"},
			{0, upd(TypeUpdate, s1), "accepted"},
			{0, drain(), "sync s2 create"},
		}},
		{"different full names do not wait for each other", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, upd(TypeCreate, other), "accepted"},
			{0, drain(), "sync s1 create; sync o1 create"},
		}},
		{"a waiting pod killed before it started finishes with no step; the next one moves up", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, upd(TypeCreate, s2), "accepted"},
			{0, upd(TypeCreate, s3), "accepted"},
			{0, drain(), "sync s1 create"},
			{1 * s, upd(TypeUpdate, deleting(s2, 30)), "accepted"},
			{1 * s, query("s2"), "known-terminated,finished,requested,containers-terminating,runtime-remove,content-remove"},
			{1 * s, done("s1", ok), "ok"},
			{2 * s, kill(s1, testutil.Seconds(1), false), "accepted"},
			{2 * s, drain(), "terminating s1 kill g=1"},
			{3 * s, done("s1", ok), "ok"},
			{3 * s, drain(), "terminated s1 sync"},
			{4 * s, done("s1", ok), "ok"},
			{4 * s, drain(), "sync s3 create"},
		}},
		{"a killed head of the line hands its place to the next one", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, drain(), "sync s1 create"},
			{0, upd(TypeCreate, s2), "accepted"},
			{0, upd(TypeCreate, s3), "accepted"},
			{1 * s, done("s1", terminal), "ok"},
			{1 * s, drain(), "terminating s1 sync g=30"},
			{2 * s, done("s1", ok), "ok"},
			{2 * s, drain(), "terminated s1 sync"},
			{3 * s, kill(s2, nil, false), "accepted"},
			{3 * s, done("s1", ok), "ok"},
			{3 * s, drain(), "sync s3 create"},
		}},
		{"a waiting pod orphaned is dropped; the next one in line is woken", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, upd(TypeCreate, s2), "accepted"},
			{0, upd(TypeCreate, s3), "accepted"},
			{0, known(s3), "s3=sync/static"},
			{0, query("s1"), "finished,containers-terminating,runtime-remove,content-remove"},
			{0, drain(), "sync s3 create"},
		}},
		{"a static pod seen in the runtime is terminated even if it never started", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, drain(), "sync s1 create"},
			{0, upd(TypeCreate, s2), "accepted"},
			{1 * s, rtKill("s2", testutil.Seconds(1)), "accepted"},
			{1 * s, drain(), "terminating s2 kill g=1"},
			{2 * s, done("s2", ok), "ok"},
			{2 * s, drain(), "terminated s2 sync"},
			{2 * s, mirrorTerminating("st_ns"), "false"},
		}},
		{"a static pod first seen terminal finishes with no step, as upstream (it can never start)", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: phase(s1, v1.PodSucceeded), RuntimeTerminated: true}), "accepted"},
			{0, query("s1"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
			{0, upd(TypeCreate, s2), "accepted"},
			{0, drain(), "sync s2 create"},
		}},
		{"a restarted static pod waits until the old one finished", []step{
			{0, upd(TypeCreate, s1), "accepted"},
			{0, drain(), "sync s1 create"},
			{1 * s, done("s1", ok), "ok"},
			{2 * s, kill(s1, nil, false), "accepted"},
			{2 * s, upd(TypeCreate, s2), "accepted"},
			{2 * s, drain(), "terminating s1 kill g=30"},
			{3 * s, done("s1", failed), "ok"},
			{3 * s, deadline(), "+13s"},
			{13 * s, drain(), "terminating s1 sync g=30"},
			{14 * s, done("s1", ok), "ok"},
			{14 * s, drain(), "terminated s1 sync"},
			{15 * s, done("s1", ok), "ok"},
			{15 * s, drain(), "sync s2 create"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, newWorkers(t), tt.steps) })
	}
}

// TestStaticWaitingListIsExact: killed and forgotten pods leave the waiting
// list at once.
func TestStaticWaitingListIsExact(t *testing.T) {
	w := newWorkers(t)
	now := testutil.Epoch
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: staticPod("st", id)})
	}
	if _, ok := w.Next(now); !ok {
		t.Fatal("Next() = false, want s1's sync")
	}
	if got := w.Stats().WaitingStatic; got != 3 {
		t.Errorf("WaitingStatic = %d, want 3", got)
	}
	w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: staticPod("st", "s3")})
	w.SyncKnownPods(now, []*v1.Pod{staticPod("st", "s1"), staticPod("st", "s3"), staticPod("st", "s4")})
	if got := w.Stats().WaitingStatic; got != 1 {
		t.Errorf("WaitingStatic after a kill and an orphan = %d, want 1", got)
	}
	mustCheck(t, w)
}
