package taints

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestPodRecCompact pins the per-pod record at 112 bytes (a malloc size
// class): the eviction fields live in an evState that only a pod with an
// eviction owns.
func TestPodRecCompact(t *testing.T) {
	if got := unsafe.Sizeof(podRec{}); got > 112 {
		t.Errorf("podRec is %d bytes, want <= 112", got)
	}
}

// TestIdleEvStateStaysZero runs random operation sequences and checks, after
// each call, that the idle evState every idle pod shares is still zero, that
// exactly the pods with an eviction (scheduled, handed out or done) own one,
// and that the reused evStates are zero and owned by no pod.
func TestIdleEvStateStaysZero(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		cfg := EvictorConfig{Reschedule: ReschedulePolicy(seed % 3), UseTaintTimeAdded: seed%2 == 1}
		e, err := NewEvictor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		now := testutil.Epoch
		for step := range 400 {
			a, b := rng.IntN(1<<16), rng.IntN(1<<16)
			now = now.Add(time.Duration(a%4) * 5 * time.Second)
			node, name := modelNodes[a%len(modelNodes)], modelPods[b%len(modelPods)]
			k := key(name)
			switch rng.IntN(8) {
			case 0:
				e.SetNodeTaints(now, node, modelTaints(b))
			case 1, 2:
				e.SetPod(now, podUID(name, node, types.UID(fmt.Sprintf("u%d", a%2)), modelTolerations(a/3+b)...))
			case 3:
				e.DeletePod(k)
			case 4:
				e.DeleteNode(node)
			case 5:
				e.Due(now)
			case 6:
				e.Done(k)
			default:
				e.Retry(now, k, time.Duration(b%3)*7*time.Second)
			}
			if msg := e.checkEvStates(); msg != "" {
				t.Fatalf("seed %d step %d: %s", seed, step, msg)
			}
			if msg := e.check(); msg != "" {
				t.Fatalf("seed %d step %d: invariant: %s", seed, step, msg)
			}
		}
	}
}

// checkEvStates returns the first violation of the evState rules, or "".
func (e *Evictor) checkEvStates() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.idle != (evState{}) {
		return fmt.Sprintf("the shared idle evState was written: %+v", e.idle)
	}
	free := map[*evState]bool{}
	for _, s := range e.free {
		if *s != (evState{}) || free[s] {
			return fmt.Sprintf("free evState %p not zero or listed twice", s)
		}
		free[s] = true
	}
	bad := ""
	e.pods.each(func(r *podRec) {
		switch {
		case bad != "":
		case r.evState == nil:
			bad = fmt.Sprintf("%s has no evState", r.key)
		case (r.state == stIdle) != (r.evState == &e.idle):
			bad = fmt.Sprintf("%s in state %d shares the idle evState: %v", r.key, r.state, r.evState == &e.idle)
		case free[r.evState]:
			bad = fmt.Sprintf("%s owns a free evState", r.key)
		}
	})
	return bad
}
