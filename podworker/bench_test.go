package podworker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

var benchSizes = []int{10_000, 150_000}

// BenchmarkStep measures UpdatePod + Next + Complete per step. "steady":
// updates of running pods plus the resyncs that come due. "churn": 10 % of
// the iterations kill a pod (driving it through terminating, terminated and
// finished, with 10 % of the steps failing and retried) and create a new
// one; housekeeping (SyncKnownPods over every desired pod) runs every 2,000
// iterations, included in the figure. Virtual time advances 1 ms per
// iteration. ns/step is the time per step handed out and completed.
func BenchmarkStep(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pods=%d/steady", n), func(b *testing.B) {
			w, pods := population(b, n)
			r := rand.New(rand.NewPCG(1, 2))
			now := testutil.At(time.Second)
			steps := 0
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Millisecond)
				w.UpdatePod(now, UpdateOptions{Type: TypeUpdate, Pod: pods[r.IntN(n)]})
				for {
					work, ok := w.Next(now)
					if !ok {
						break
					}
					w.Complete(now, work, Result{})
					steps++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
		})
		if n > 10_000 {
			continue // churn is specified at 10,000 pods; at 150,000 housekeeping dominates
		}
		b.Run(fmt.Sprintf("pods=%d/churn", n), func(b *testing.B) {
			benchChurn(b, n)
		})
	}
}

func benchChurn(b *testing.B, n int) {
	w, pods := population(b, n)
	r := rand.New(rand.NewPCG(3, 4))
	// pool: live pods first (desired), then free ones ready to be created.
	free := make([]*v1.Pod, 0, n)
	for i := range n {
		free = append(free, pod(fmt.Sprintf("q%06d", i)))
	}
	live := append([]*v1.Pod(nil), pods...)
	var dying []*v1.Pod
	now := testutil.At(time.Second)
	steps, iter := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		iter++
		now = now.Add(time.Millisecond)
		if r.IntN(10) == 0 && len(free) > 0 {
			i := r.IntN(len(live))
			w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: live[i]})
			dying = append(dying, live[i])
			live[i] = free[len(free)-1]
			free = free[:len(free)-1]
			w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: live[i]})
		} else {
			w.UpdatePod(now, UpdateOptions{Type: TypeUpdate, Pod: live[r.IntN(len(live))]})
		}
		for {
			work, ok := w.Next(now)
			if !ok {
				break
			}
			var res Result
			if r.IntN(10) == 0 {
				res.Err = errRuntime
			}
			w.Complete(now, work, res)
			steps++
		}
		if iter%2000 == 0 {
			w.SyncKnownPods(now, live)
			// Finished orphans were forgotten: their objects may be reused.
			kept := dying[:0]
			for _, p := range dying {
				if w.ShouldPodBeFinished(p.UID) && !w.IsPodKnownTerminated(p.UID) {
					free = append(free, p)
				} else {
					kept = append(kept, p)
				}
			}
			dying = kept
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}

// BenchmarkNextIdle measures Next when nothing is due (0 allocations).
func BenchmarkNextIdle(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, _ := population(b, n)
			now := testutil.At(time.Second)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := w.Next(now); ok {
					b.Fatal("Next() = true")
				}
			}
		})
	}
}

// BenchmarkUpdatePod measures UpdatePod of a running pod with nothing in
// flight (the pod is queued, or its queue position is kept).
func BenchmarkUpdatePod(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, pods := population(b, n)
			now := testutil.At(time.Second)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				w.UpdatePod(now, UpdateOptions{Type: TypeUpdate, Pod: pods[i%n]})
				i++
			}
		})
	}
}

// BenchmarkSyncKnownPods measures housekeeping with every pod desired and
// known (the steady state), reported per pod as well.
func BenchmarkSyncKnownPods(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, pods := population(b, n)
			now := testutil.At(time.Second)
			b.ReportAllocs()
			for b.Loop() {
				if got := w.SyncKnownPods(now, pods); len(got) != n {
					b.Fatalf("SyncKnownPods returned %d records, want %d", len(got), n)
				}
			}
			b.ReportMetric(float64(n), "pods/op")
		})
	}
}

// BenchmarkStats measures the metrics snapshot.
func BenchmarkStats(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, _ := population(b, n)
			b.ReportAllocs()
			for b.Loop() {
				_ = w.Stats()
			}
			b.ReportMetric(float64(n), "pods/op")
		})
	}
}
