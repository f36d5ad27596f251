package taints

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// memPods returns n pods on n/30 nodes, each with its own copy of the two
// admission-default tolerations, as an informer delivers them.
func memPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("6f1c2a34-8b9d-4e5f-a6b7-%012d", i))},
			Spec: v1.PodSpec{
				NodeName:    nodeName(i / 30),
				Tolerations: WithDefaultTolerations(nil, DefaultTolerationTime, DefaultTolerationTime),
			},
		}
	}
	return pods
}

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerPod: the Evictor keeps at most 200 bytes per pod (its
// record, its share of the pod map, and its toleration set, shared by every
// pod with the same tolerations), the pods' own strings excluded (the
// informer's objects hold them). 150,000 pods with the admission-default
// tolerations on 5,000 untainted nodes.
func TestMemoryPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MB")
	}
	const n = 150000
	pods := memPods(n)
	before := heapBytes()
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := testutil.Epoch
	for i, p := range pods {
		e.SetPod(now.Add(time.Duration(i)*time.Millisecond), p)
	}
	after := heapBytes()
	runtime.KeepAlive(pods)
	runtime.KeepAlive(e)
	per := float64(int64(after)-int64(before)) / n
	t.Logf("%.0f bytes per pod", per)
	if per > 200 {
		t.Errorf("the Evictor keeps %.0f bytes per pod, want <= 200", per)
	}
}

// TestTolerationSetsShared: pods with equal toleration lists share one set;
// a pod that changes its list moves to another set; the last user's
// departure forgets a set. Recreating, deleting and unbinding pods keep the
// counts right (check verifies them). Acquiring an existing set allocates
// nothing: a new pod with the default tolerations costs its record alone.
func TestTolerationSetsShared(t *testing.T) {
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defaults := func() []v1.Toleration {
		return WithDefaultTolerations(nil, DefaultTolerationTime, DefaultTolerationTime)
	}
	for i := range 100 {
		p := pod(fmt.Sprintf("p%d", i), nodeName(i%3), defaults()...)
		e.SetPod(testutil.Epoch, p)
	}
	if sets := tolSetsOf(e); len(sets) != 1 || sets[0].refs != 100 {
		t.Fatalf("toleration sets after 100 default pods: %d, want 1 with 100 users", len(sets))
	}
	longer := WithDefaultTolerations(nil, 600*time.Second, 600*time.Second)
	e.SetPod(testutil.Epoch, pod("p0", nodeName(0), longer...))
	e.SetPod(testutil.Epoch, pod("p1", nodeName(1)))                                                   // none
	e.SetPod(testutil.Epoch, podUID("p2", nodeName(2), "new-uid", longer...))                          // recreated
	e.DeletePod(key("p3"))                                                                             // deleted
	e.SetPod(testutil.Epoch, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p4"}}) // unbound
	if msg := e.check(); msg != "" {
		t.Fatal(msg)
	}
	if sets := tolSetsOf(e); len(sets) != 2 {
		t.Errorf("toleration sets: %d, want 2 (defaults, 600s)", len(sets))
	}
	for i := range 100 {
		e.DeletePod(key(fmt.Sprintf("p%d", i)))
	}
	if sets := tolSetsOf(e); len(sets) != 0 || len(e.tols.sets) != 0 {
		t.Errorf("toleration sets after deleting every pod: %d, want 0", len(sets))
	}
	// Collisions: sets with the same hash chain correctly.
	var tt tolTable = newTolTable()
	a, b := tt.acquire(defaults()), tt.acquire(longer)
	b.hash = a.hash // force a chain
	delete(tt.sets, tt.hash(longer))
	b.next, tt.sets[a.hash] = a, b
	if got := tt.acquire(defaults()); got != a || a.refs != 2 {
		t.Errorf("acquire through a chain: %p refs %d, want %p refs 2", got, a.refs, a)
	}
	tt.release(a)
	tt.release(a)
	if tt.sets[b.hash] != b || b.next != nil {
		t.Errorf("release of a chained set broke the chain")
	}
	tt.release(b)
	if len(tt.sets) != 0 {
		t.Errorf("sets left: %d", len(tt.sets))
	}
}

// TestSetPodNewAllocs: a new pod whose tolerations are already interned
// allocates its record and nothing else (the index grows rarely).
func TestSetPodNewAllocs(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	pods := memPods(2000)
	e.SetPod(testutil.Epoch, pods[0])
	i := 1
	allocs := testing.AllocsPerRun(1000, func() {
		e.SetPod(testutil.Epoch, pods[i])
		i++
	})
	if allocs > 1.1 {
		t.Errorf("SetPod of a new pod with interned tolerations: %v allocations, want 1 (its record)", allocs)
	}
}

// TestPodIndex checks the pod index against a map over random adds and
// removes (with backward-shift deletion and shrinking).
func TestPodIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := newPodIndex()
	ref := map[types.NamespacedName]*podRec{}
	for step := range 200000 {
		k := types.NamespacedName{Namespace: fmt.Sprintf("ns%d", r.IntN(3)), Name: fmt.Sprintf("p%d", r.IntN(5000))}
		if step > 150000 && r.IntN(4) != 0 { // drain: mostly removes
			if rec := ref[k]; rec != nil {
				x.remove(rec)
				delete(ref, k)
			}
			continue
		}
		if rec := ref[k]; rec != nil {
			if x.get(k) != rec {
				t.Fatalf("step %d: get(%v) lost", step, k)
			}
			x.remove(rec)
			delete(ref, k)
		} else {
			if x.get(k) != nil {
				t.Fatalf("step %d: get(%v) found a removed record", step, k)
			}
			rec := &podRec{key: k}
			x.put(rec)
			ref[k] = rec
		}
		if x.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(ref))
		}
	}
	for k, rec := range ref {
		if x.get(k) != rec {
			t.Fatalf("get(%v) lost at the end", k)
		}
	}
	n := 0
	x.each(func(*podRec) { n++ })
	if n != len(ref) {
		t.Errorf("each visited %d, want %d", n, len(ref))
	}
}

// TestDueAllocatesOnce: Due sizes its result once, however many evictions
// and fire times are due (it used to grow the slice by appends).
func TestDueAllocatesOnce(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	const nodes, perNode = 100, 30
	for n := range nodes {
		for i := range perNode {
			e.SetPod(testutil.Epoch, pod(fmt.Sprintf("p-%d-%d", n, i), nodeName(n), tolFor(unreachable, int64(60+i))))
		}
		e.SetNodeTaints(testutil.At(time.Duration(n)*time.Second), nodeName(n), []v1.Taint{ne(unreachable)})
	}
	// Earlier rounds (each retried at 3,000 distinct fire times) grow Due's
	// reusable scratch (the list of due buckets, the free buckets); the
	// fewest allocations of three later rounds counts (a collection running
	// meanwhile may allocate too).
	evs := e.Due(testutil.At(time.Hour))
	fewest := uint64(math.MaxUint64)
	for round := 1; round <= 5; round++ {
		now := testutil.At(time.Duration(round) * time.Hour)
		for i, x := range evs {
			e.RetryEviction(now, x, time.Duration(i)*time.Second)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		evs = e.Due(now.Add(time.Hour))
		runtime.ReadMemStats(&after)
		if round > 2 {
			fewest = min(fewest, after.Mallocs-before.Mallocs)
		}
	}
	if len(evs) != nodes*perNode {
		t.Fatalf("Due returned %d, want %d", len(evs), nodes*perNode)
	}
	if cap(evs) != len(evs) {
		t.Errorf("Due's result has cap %d for %d evictions, want it sized once", cap(evs), len(evs))
	}
	if fewest != 1 {
		t.Errorf("Due allocated %d times, want 1", fewest)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].At.Before(evs[i-1].At) {
			t.Fatalf("Due out of order at %d: %s after %s", i, rel(evs[i].At), rel(evs[i-1].At))
		}
	}
}

// TestPodRecSize pins the per-pod record at 160 bytes (a malloc size
// class), the bulk of TestMemoryPerPod's budget.
func TestPodRecSize(t *testing.T) {
	if got := unsafe.Sizeof(podRec{}); got > 160 {
		t.Errorf("podRec is %d bytes, want <= 160", got)
	}
}
