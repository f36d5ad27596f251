package podworker

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// A wall-clock step of +10 minutes while 10s pass on the monotonic clock
// makes neither the 60s resync nor the 10s backoff due early.
func TestWallClockStepFiresNothingEarly(t *testing.T) {
	w := newWorkers(t)
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	w.UpdatePod(start, UpdateOptions{Type: TypeCreate, Pod: pod("a")})
	w.UpdatePod(start, UpdateOptions{Type: TypeCreate, Pod: pod("b")})
	wa, _ := w.Next(start)
	wb, _ := w.Next(start)
	w.Complete(start, wa, Result{})                // resync at +60s
	w.Complete(start, wb, Result{Err: errRuntime}) // retry at +10s
	stepped := testutil.StepWallClock(start.Add(5*time.Second), 10*time.Minute)
	if work, ok := w.Next(stepped); ok {
		t.Fatalf("Next after a +10m wall step (5s elapsed) = %v, want nothing due", work)
	}
	if work, ok := w.Next(stepped.Add(5 * time.Second)); !ok || work.UID != wb.UID {
		t.Fatalf("Next 10s after the failure = %v, %v, want pod b's retry", work, ok)
	}
}
