package podworker

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

const s = time.Second

// TestStateDiagram walks every row of the state diagram in the package documentation.
func TestStateDiagram(t *testing.T) {
	a := pod("a")
	st := staticPod("st", "st1")
	tests := []struct {
		name  string
		steps []step
	}{
		{"no record -> P -> S, resync after success", []step{
			{0, query("a"), "could-run"},
			{0, upd(TypeCreate, a), "accepted"},
			{0, query("a"), "could-run"},
			{0, deadline(), "+0s"},
			{0, next(), "sync a create"},
			{0, next(), "none"},
			{0, deadline(), "none"},
			{1 * s, done("a", ok), "ok"},
			{1 * s, deadline(), "+1m1s"},
			{30 * s, next(), "none"},
			{61 * s, next(), "sync a sync"},
			{62 * s, done("a", ok), "ok"},
			{62 * s, deadline(), "+2m2s"},
		}},
		{"S + update of the same UID stays S, delivered once the step completes", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{5 * s, upd(TypeUpdate, a), "accepted"},
			{5 * s, next(), "none"},
			{6 * s, done("a", ok), "ok"},
			{6 * s, deadline(), "+6s"},
			{6 * s, next(), "sync a update"},
			{7 * s, done("a", ok), "ok"},
			{7 * s, query("a"), "could-run"},
		}},
		{"S -> R by deletionTimestamp -> T -> D -> F", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, done("a", ok), "ok"},
			{10 * s, upd(TypeUpdate, deleting(a, 10)), "accepted"},
			{10 * s, query("a"), "could-run,requested"},
			{10 * s, next(), "terminating a update g=10"},
			{10 * s, query("a"), "could-run,requested,containers-terminating"},
			{11 * s, done("a", ok), "ok"},
			{11 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
			{11 * s, next(), "terminated a sync"},
			{12 * s, done("a", ok), "ok"},
			{12 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove,content-remove"},
			{12 * s, deadline(), "none"},
			{13 * s, upd(TypeUpdate, a), "ignored-finished"},
			{13 * s, next(), "none"},
		}},
		{"S -> R by terminal phase (not deleted: content kept)", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, done("a", ok), "ok"},
			{2 * s, upd(TypeUpdate, phase(a, v1.PodSucceeded)), "accepted"},
			{2 * s, next(), "terminating a update g=30"},
			{3 * s, done("a", ok), "ok"},
			{3 * s, next(), "terminated a sync"},
			{4 * s, done("a", ok), "ok"},
			{4 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		}},
		{"S -> R by kill while syncing: cancel, then terminating at once", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, kill(a, nil, false), "accepted cancel"},
			{1 * s, query("a"), "could-run,requested"},
			{1 * s, next(), "none"},
			{2 * s, done("a", Result{Err: context.Canceled}), "ok"},
			{2 * s, deadline(), "+2s"},
			{2 * s, next(), "terminating a kill g=30"},
		}},
		{"S -> R by eviction: content removable at once", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, done("a", ok), "ok"},
			{2 * s, kill(a, testutil.Seconds(5), true), "accepted"},
			{2 * s, query("a"), "could-run,requested,content-remove"},
			{2 * s, next(), "terminating a kill g=5"},
		}},
		{"S -> R by natural completion (SyncWork terminal)", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, done("a", terminal), "ok"},
			{1 * s, query("a"), "could-run,requested,containers-terminating"},
			{1 * s, next(), "terminating a sync g=30"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, next(), "terminated a sync"},
		}},
		{"S -> R by orphaning in SyncKnownPods, purged once finished", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, next(), "sync a create"},
			{1 * s, done("a", ok), "ok"},
			{2 * s, known(), "a=terminating/orphan"},
			{2 * s, next(), "terminating a sync g=30"},
			{3 * s, done("a", ok), "ok"},
			// Orphaning counts as a deletion: the content may go.
			{3 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
			{3 * s, next(), "terminated a sync"},
			{4 * s, done("a", ok), "ok"},
			{4 * s, known(), "none"},
			{4 * s, query("a"), "finished,containers-terminating,runtime-remove,content-remove"},
		}},
		{"P -> kill before start, non-static: starts straight into T", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, kill(a, nil, false), "accepted"},
			{0, next(), "terminating a kill g=30"},
			{1 * s, done("a", ok), "ok"},
			{1 * s, next(), "terminated a sync"},
		}},
		{"P -> kill before start, static: finished with no step", []step{
			{0, upd(TypeCreate, st), "accepted"},
			{0, kill(st, nil, false), "accepted"},
			{0, query("st1"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
			{0, next(), "none"},
			{0, deadline(), "none"},
		}},
		{"runtime-only kill -> T -> record deleted", []step{
			{0, rtKill("r", testutil.Seconds(1)), "accepted"},
			{0, query("r"), "could-run,requested"},
			{0, next(), "terminating rt:r kill g=1"},
			{1 * s, query("r"), "could-run,requested,containers-terminating"},
			{1 * s, done("r", ok), "ok"},
			{1 * s, query("r"), "could-run"},
			{1 * s, known(), "none"},
			{1 * s, query("r"), "finished,containers-terminating,runtime-remove,content-remove"},
		}},
		{"first sight terminal -> D -> F", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: phase(a, v1.PodFailed), RuntimeTerminated: true}), "accepted"},
			{0, query("a"), "known-terminated,requested,containers-terminating,runtime-remove"},
			{0, next(), "terminated a create"},
			{1 * s, done("a", ok), "ok"},
			{1 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		}},
		{"D stays on error and retries after backoff", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: phase(a, v1.PodFailed), RuntimeTerminated: true}), "accepted"},
			{0, next(), "terminated a create"},
			{1 * s, done("a", failed), "ok"},
			{1 * s, deadline(), "+11s"},
			{5 * s, next(), "none"},
			{11 * s, next(), "terminated a sync"},
			{12 * s, done("a", ok), "ok"},
			{12 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		}},
		{"P -> orphan never started: dropped without a step", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{1 * s, known(), "none"},
			{1 * s, next(), "none"},
			{1 * s, query("a"), "finished,containers-terminating,runtime-remove,content-remove"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, newWorkers(t), tt.steps) })
	}
}
