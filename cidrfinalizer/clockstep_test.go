package cidrfinalizer

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestIndexWallClockStepKeepsGrace: the Index reads the deletionTimestamp
// against now once and measures the rest of the 10s grace period on the
// caller's monotonic clock. Deleted 2s before the first decision, the
// object still waits 3s later when the wall clock has jumped 10 minutes
// ahead, and its finalizer goes when the 10s have passed.
func TestIndexWallClockStepKeepsGrace(t *testing.T) {
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	c := deleting(ready(sc("a", "10.0.0.0/24")), start.Round(0).Add(-2*time.Second))
	x := newIndexWith(t, DefaultConfig(), []*networkingv1.ServiceCIDR{c}, nil)
	if d, err := x.Decide(start, "a"); err != nil || d.Action != ActionWait || d.RequeueAfter != 8*time.Second {
		t.Fatalf("Decide at first sight = %v, %v, %v; want Wait 8s", d.Action, d.RequeueAfter, err)
	}
	stepped := testutil.StepWallClock(start.Add(3*time.Second), 10*time.Minute)
	if d, _ := x.Decide(stepped, "a"); d.Action != ActionWait || d.RequeueAfter != 5*time.Second {
		t.Fatalf("Decide 5s after deletion, wall clock +10m = %v %v, want Wait 5s", d.Action, d.RequeueAfter)
	}
	if d, _ := x.Decide(stepped.Add(5*time.Second), "a"); d.Action != ActionRemoveFinalizer {
		t.Fatalf("Decide 10s after deletion = %v, want RemoveFinalizer", d.Action)
	}
}
