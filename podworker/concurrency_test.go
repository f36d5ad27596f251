package podworker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestConcurrentUse feeds one Workers from several goroutines at once, as
// informer handlers, step runners and housekeeping would; run with -race.
func TestConcurrentUse(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Jitter = func(d time.Duration) time.Duration { return d } // called without the lock
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := make([]*v1.Pod, 50)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("c%02d", i))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				now := testutil.At(time.Duration(i) * time.Second)
				p := pods[(i*7+g)%len(pods)]
				typ := TypeUpdate
				if i%13 == 0 {
					typ = TypeKill
				}
				w.UpdatePod(now, UpdateOptions{Type: typ, Pod: p})
				if work, ok := w.Next(now); ok {
					w.Complete(now, work, Result{})
				}
				_ = w.CouldHaveRunningContainers(p.UID)
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			w.SyncKnownPods(testutil.At(time.Duration(i)*time.Second), pods)
			_ = w.Stats()
			_, _ = w.NextDeadline()
		}
	})
	wg.Wait()
	mustCheck(t, w)
}
