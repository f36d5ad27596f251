package controller

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
)

// liveHeap is the live heap after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestTrimForgetsChangingMessages: a node condition message that changes
// at every update is not kept by the trimmer once the cache has moved on.
// The intern table was bounded by count only (65,536 strings), so 600
// updates of one node's 32 KiB message kept about 20 MiB live, and 30,000
// distinct 600-byte messages 19 MiB; what the cache itself holds (the last
// node) is 32 KiB.
func TestTrimForgetsChangingMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		updates int
		size    int
		max     uint64 // live heap the trimmer may keep after the updates
	}{
		{"600 updates of a 32 KiB message", 600, 32 << 10, 2 << 20},
		{"30,000 updates of a 600-byte message", 30000, 600, 2*maxInternedBytes + 3<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTrimmer()
			n := fullNode()
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: "ExampleDiagnostics", Status: v1.ConditionTrue})
			before := liveHeap()
			var cached *v1.Node // what the informer's store holds: the last trimmed copy
			buf := []byte(strings.Repeat("x", tc.size))
			for i := range tc.updates {
				copy(buf, fmt.Sprintf("update %d: ", i))
				n.Status.Conditions[1].Message = string(buf)
				cached = tr.node(n)
			}
			n.Status.Conditions[1].Message = ""
			after := liveHeap()
			runtime.KeepAlive(tr)
			runtime.KeepAlive(cached)
			kept := int64(after) - int64(before)
			t.Logf("%d updates of a %d-byte message: %.2f MiB kept live", tc.updates, tc.size, float64(kept)/(1<<20))
			if kept > int64(tc.max) {
				t.Errorf("%d updates of a %d-byte message keep %.2f MiB live, want at most %.2f MiB",
					tc.updates, tc.size, float64(kept)/(1<<20), float64(tc.max)/(1<<20))
			}
		})
	}
}

// TestInternTableBounded: whatever goes through them, the intern tables
// hold at most two generations' bytes by their own count; a value in use
// stays shared across generations; one no longer seen is forgotten.
func TestInternTableBounded(t *testing.T) {
	tr := newTrimmer()
	hot := tr.str("node-a")
	for i := range 200000 {
		s := fmt.Sprintf("message %d %s", i, strings.Repeat("y", i%900))
		if got := tr.str(s); got != s {
			t.Fatalf("str(%q) = %q", s, got)
		}
		if i%1000 == 0 {
			if got := tr.str(strings.Clone("node-a")); unsafe.StringData(got) != unsafe.StringData(hot) {
				t.Fatalf("after %d strings: node-a is interned anew, want the copy in use kept", i)
			}
		}
		if b := tr.strs.bytes(); b > 2*maxInternedBytes {
			t.Fatalf("after %d strings: the string table holds %d bytes, want at most %d", i, b, 2*maxInternedBytes)
		}
		if n := len(tr.strs.cur) + len(tr.strs.prev); n > 2*maxInterned {
			t.Fatalf("after %d strings: the string table holds %d strings, want at most %d", i, n, 2*maxInterned)
		}
	}
	if _, ok := tr.strs.get("message 0 "); ok {
		t.Error("the first string is still interned after many generations")
	}
	long := strings.Repeat("z", maxInternLen+1)
	if got := tr.str(long); unsafe.StringData(got) != unsafe.StringData(long) {
		t.Error("a string longer than maxInternLen was copied, want it kept as given")
	}
	if _, ok := tr.strs.get(long); ok {
		t.Error("a string longer than maxInternLen was interned")
	}

	// Distinct toleration lists (a hostile pod template per pod).
	for i := range 20000 {
		ts := make([]v1.Toleration, 1+i%40)
		for j := range ts {
			ts[j] = v1.Toleration{Key: fmt.Sprintf("example.com/key-%d-%d", i, j), Operator: v1.TolerationOpExists}
		}
		tr.tols(ts)
		if b := tr.tolerations.bytes(); b > 2*maxInternedBytes {
			t.Fatalf("after %d toleration lists: the table holds %d bytes, want at most %d", i, b, 2*maxInternedBytes)
		}
	}
}

// TestInternHitAllocatesNothing: the steady state (a string or toleration
// list seen before) allocates nothing, in either generation.
func TestInternHitAllocatesNothing(t *testing.T) {
	tr := newTrimmer()
	s := strings.Clone("kubelet is posting ready status")
	tr.str(s)
	if n := testing.AllocsPerRun(100, func() { tr.str(s) }); n != 0 {
		t.Errorf("str of an interned string: %v allocations, want 0", n)
	}
}
