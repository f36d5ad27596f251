package nodehealth

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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

// Wall times that become probe times are read against now once: the grace
// that runs on from a node's CreationTimestamp (no Ready condition yet) or
// from a restored Record is measured on the monotonic clock, so a
// wall-clock step of +10 minutes (an NTP sync right after start-up) makes
// neither node stale.
func TestWallClockStepAfterWallProbe(t *testing.T) {
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	wall := start.Round(0)
	created := mkNode("new", 0)
	created.CreationTimestamp = metav1.NewTime(wall.Add(-10 * time.Second))
	restored := readyNode("old", T, 0, 0)

	tr := newTracker(t)
	tr.Restore(start, []Record{{Name: "old", Probe: wall.Add(-10 * time.Second), ReadyTransition: wall.Add(-time.Hour),
		Ready: restored.Status.Conditions[0].DeepCopy()}})
	if res, _ := tr.Observe(start, created, nil); res.Stale {
		t.Fatal("Observe(new node) at first sight: stale, want fresh")
	}
	stepped := testutil.StepWallClock(start.Add(5*time.Second), 10*time.Minute)
	for _, n := range []*v1.Node{created, restored} {
		if res, _ := tr.Observe(stepped, n, nil); res.Stale || res.StatusUpdate != nil {
			t.Errorf("Observe(%s) 15s after its last probe, wall clock +10m: stale, want fresh", n.Name)
		}
	}
	later := stepped.Add(55 * time.Second) // 70s after both probes: past the 50s and 60s graces
	for _, n := range []*v1.Node{created, restored} {
		if res, _ := tr.Observe(later, n, nil); !res.Stale {
			t.Errorf("Observe(%s) 70s after its last probe: fresh, want stale", n.Name)
		}
	}
}
