package taints

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestEvictorUIDs: every kind of UID (an API server's UUID, the one UUID
// that is the records' marker, any other string, none) is kept exactly,
// tells a re-created pod from its predecessor, and is forgotten with its
// pod.
func TestEvictorUIDs(t *testing.T) {
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := testutil.Epoch
	e.SetNodeTaints(now, "n1", []v1.Taint{{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}})
	uids := []types.UID{"6f1c2a34-8b9d-4e5f-a6b7-0123456789ab", "ffffffff-ffff-ffff-ffff-ffffffffffff", "uid-1", "6F1C2A34-8B9D-4E5F-A6B7-0123456789AB", ""}
	pod := func(name string, id types.UID) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: id}, Spec: v1.PodSpec{NodeName: "n1"}}
	}
	for i, id := range uids {
		e.SetPod(now, pod(string(rune('a'+i)), id))
	}
	due := e.Due(now)
	if len(due) != len(uids) {
		t.Fatalf("Due = %v, want %d evictions", due, len(uids))
	}
	for i, x := range due {
		if x.UID != uids[i] {
			t.Errorf("eviction %d: UID %q, want %q", i, x.UID, uids[i])
		}
		if got := e.Explain(now, x.Pod).UID; got != uids[i] {
			t.Errorf("Explain(%v).UID = %q, want %q", x.Pod, got, uids[i])
		}
		// Done for another UID is not this pod's.
		e.DoneEviction(Eviction{Pod: x.Pod, UID: uids[(i+1)%len(uids)]})
		if got := e.Explain(now, x.Pod).State; got != EvictionHandedOut {
			t.Errorf("%v after Done for another UID: %v, want still handed out", x.Pod, got)
		}
		e.DoneEviction(x)
	}
	if n := len(e.otherUIDs); n != 4 {
		t.Errorf("otherUIDs holds %d UIDs, want 4 (the marker, uid-1, the uppercase one, none)", n)
	}
	// Re-created under another UID: a new pod, evicted again; the old UID is forgotten.
	e.SetPod(now, pod("c", "uid-2"))
	if due := e.Due(now); len(due) != 1 || due[0].UID != "uid-2" {
		t.Errorf("Due after re-creating c = %v, want c with uid-2", due)
	}
	for i := range uids {
		e.DeletePod(types.NamespacedName{Namespace: "default", Name: string(rune('a' + i))})
	}
	if n := len(e.otherUIDs); n != 0 {
		t.Errorf("otherUIDs holds %d UIDs after every pod was deleted, want 0", n)
	}
	for _, id := range []types.UID{uids[0], "uid-1"} {
		p := pod("z", id)
		e.SetPod(now, p)
		if n := testing.AllocsPerRun(100, func() { e.SetPod(now, p) }); n != 0 {
			t.Errorf("SetPod of an unchanged pod with UID %q: %v allocations, want 0", id, n)
		}
	}
}
