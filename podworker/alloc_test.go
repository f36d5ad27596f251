package podworker

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// population returns workers holding n started pods, each resyncing in the
// future, and the pods.
func population(tb testing.TB, n int) (*Workers, []*v1.Pod) {
	tb.Helper()
	w := newWorkers(tb)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%06d", i))
		w.UpdatePod(testutil.Epoch, UpdateOptions{Type: TypeCreate, Pod: pods[i]})
	}
	for {
		work, ok := w.Next(testutil.Epoch)
		if !ok {
			break
		}
		w.Complete(testutil.Epoch, work, Result{})
	}
	return w, pods
}

// TestAllocations pins the zero-allocation guarantees of the steady state.
func TestAllocations(t *testing.T) {
	w, pods := population(t, 1000)
	now := testutil.At(time.Second)

	if n := testing.AllocsPerRun(100, func() {
		if _, ok := w.Next(now); ok {
			t.Fatal("Next() = true, want nothing due")
		}
	}); n != 0 {
		t.Errorf("Next with nothing due: %v allocs, want 0", n)
	}

	i := 0
	if n := testing.AllocsPerRun(100, func() {
		p := pods[i%len(pods)]
		i++
		w.UpdatePod(now, UpdateOptions{Type: TypeUpdate, Pod: p})
		work, ok := w.Next(now)
		if !ok {
			t.Fatal("Next() = false after an update")
		}
		w.Complete(now, work, Result{})
	}); n != 0 {
		t.Errorf("UpdatePod + Next + Complete of a running pod: %v allocs, want 0", n)
	}

	uid := pods[0].UID
	if n := testing.AllocsPerRun(100, func() {
		_ = w.IsPodKnownTerminated(uid) || w.CouldHaveRunningContainers(uid) || w.ShouldPodBeFinished(uid) ||
			w.IsPodTerminationRequested(uid) || w.ShouldPodContainersBeTerminating(uid) ||
			w.ShouldPodRuntimeBeRemoved(uid) || w.ShouldPodContentBeRemoved(uid) ||
			w.IsPodForMirrorPodTerminatingByFullName("x_ns")
		_, _ = w.NextDeadline()
	}); n != 0 {
		t.Errorf("queries: %v allocs, want 0", n)
	}

	// A pod whose termination keeps failing: retries allocate nothing.
	w, pods = population(t, 1)
	w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: pods[0]})
	at := now
	if n := testing.AllocsPerRun(100, func() {
		work, ok := w.Next(at)
		if !ok || work.Type != TerminatingWork {
			t.Fatalf("Next() = %v, %v, want a terminating step", work, ok)
		}
		w.Complete(at, work, Result{Err: errRuntime})
		at = at.Add(10 * time.Second)
		w.UpdatePod(at, UpdateOptions{Type: TypeKill, Pod: pods[0]}) // same grace: nothing new to keep
	}); n != 0 {
		t.Errorf("failing termination retries: %v allocs, want 0", n)
	}
}
