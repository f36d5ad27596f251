package controller

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// TestCachedPodRoundTrip: what the cache keeps reads back as the trimmed
// pod, and the store keys and indexes it like the pod.
func TestCachedPodRoundTrip(t *testing.T) {
	p := fullPod()
	cp := newTrimmer().pod(p)
	key, err := cache.MetaNamespaceKeyFunc(cp)
	must(t, err)
	if key != "default/web-0" {
		t.Errorf("key = %q, want default/web-0", key)
	}
	node, nn, ok := podKey(cp)
	mustEqual(t, "podKey", []any{node, nn, ok}, []any{"node-a", types.NamespacedName{Namespace: "default", Name: "web-0"}, true})
	mustEqual(t, "owner references", cp.GetOwnerReferences(), []metav1.OwnerReference{p.OwnerReferences[1]})
	if s := unsafe.Sizeof(cachedPod{}); s > 256 {
		t.Errorf("cachedPod is %d bytes, want at most 256 (a v1.Pod struct is %d)", s, unsafe.Sizeof(v1.Pod{}))
	}
}

// cachedBytesPerPod is the heap a store of n pods (keyed as the pod
// informer's, with the controller's podsByNode) holds per pod, with
// transform applied.
func cachedBytesPerPod(n int, transform func(any) (any, error)) float64 {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	byNode := newPodsByNode()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		p := fullPod()
		p.Name, p.UID = fmt.Sprintf("web-%06d", i), types.UID(fmt.Sprintf("0c6a5b2e-4f1d-4d7e-9a3b-%012d", i))
		p.Spec.NodeName = fmt.Sprintf("node-%04d", i/30)
		obj, _ := transform(p)
		_ = store.Add(obj)
		node, key, _ := podKey(obj)
		byNode.add(node, key)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(store)
	runtime.KeepAlive(byNode)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkCachedPodMemory reports the live heap per cached pod: the whole
// pod without managed fields (what kube-controller-manager caches) against
// the trimmed one.
func BenchmarkCachedPodMemory(b *testing.B) {
	const n = 30000
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"whole-pod", stripManagedFields},
		{"trimmed", newTrimmer().transform},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var per float64
			for b.Loop() {
				per = cachedBytesPerPod(n, tc.transform)
			}
			b.ReportMetric(per, "heap-B/pod")
		})
	}
}
