package nodehealth

import (
	"testing"
	"time"

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
