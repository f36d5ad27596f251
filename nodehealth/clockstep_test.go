package nodehealth

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// A wall-clock step of +10 minutes while 10s pass on the monotonic clock
// makes no node stale: the Tracker keeps the caller's monotonic reading. A
// real 60s of silence still does.
func TestWallClockStepMakesNothingStale(t *testing.T) {
	tr := newTracker(t)
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	n := readyNode("n1", T, 0, 0)
	if _, err := tr.Observe(start, n, nil); err != nil {
		t.Fatal(err)
	}
	stepped := testutil.StepWallClock(start.Add(10*time.Second), 10*time.Minute)
	res, err := tr.Observe(stepped, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stale || res.StatusUpdate != nil {
		t.Fatalf("Observe after a +10m wall step (10s elapsed): Stale=%v update=%v, want fresh", res.Stale, res.StatusUpdate != nil)
	}
	res, _ = tr.Observe(stepped.Add(51*time.Second), n, nil)
	if !res.Stale {
		t.Fatal("Observe 61s after the last signal: not stale, want stale")
	}
}

// The uninitialized-node delay is read against the server's
// CreationTimestamp once; a wall-clock step after that does not end it
// early: a node created 10s before its first Observe is still skipped 5s
// later when the wall clock has jumped 10 minutes ahead, and judged 45s
// after that.
func TestWallClockStepKeepsUninitializedDelay(t *testing.T) {
	o := newOrphan(t, DefaultOrphanPolicy())
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	n := uninitializedNode(0)
	n.CreationTimestamp = metav1.NewTime(start.Round(0).Add(-10 * time.Second))
	if d := o.Observe(start, n, ExistenceNotFound); d.Reason != OrphanUninitialized {
		t.Fatalf("Observe at first sight = %v, want Uninitialized", d.Reason)
	}
	stepped := testutil.StepWallClock(start.Add(5*time.Second), 10*time.Minute)
	if d := o.Observe(stepped, n, ExistenceNotFound); d.Reason != OrphanUninitialized || d.Delete {
		t.Fatalf("Observe 15s after creation, wall clock +10m = %v (delete %v), want Uninitialized", d.Reason, d.Delete)
	}
	if d := o.Observe(stepped.Add(45*time.Second), n, ExistenceNotFound); !d.Delete {
		t.Fatalf("Observe 60s after creation = %v, want NotFound and delete", d.Reason)
	}
}
