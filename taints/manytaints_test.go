package taints

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestSetNodeTaintsMany: a node with 20,000 NoExecute taints, each repeated
// (broken or hostile tooling). Duplicates count once, an unchanged update
// allocates nothing, and a reordered update keeps every taint's first
// sighting (a pod tolerating one taint for 300s is still evicted 300s after
// the taint first appeared). The update used to be O(n²) in the taints
// (seconds per call at this size); BenchmarkEvictorSetNodeTaintsMany
// measures it.
func TestSetNodeTaintsMany(t *testing.T) {
	const n = 20000
	base := manyTaints(n)
	doubled := append(slices.Clone(base), base...)
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tol := []v1.Toleration{{Operator: v1.TolerationOpExists}}
	limited := tolFor("example.com/t-7", 300)
	limited.Value, limited.Operator = "v", v1.TolerationOpEqual
	e.SetPod(testutil.Epoch, pod("forever", "n1", tol...))
	e.SetPod(testutil.Epoch, pod("limited", "n1", limited, v1.Toleration{Operator: v1.TolerationOpExists, Key: "", Effect: ""}))
	e.SetNodeTaints(testutil.Epoch, "n1", doubled)
	if got := len(e.nodes["n1"].taints); got != n {
		t.Fatalf("kept %d taints, want %d (duplicates once)", got, n)
	}
	at := testutil.At(10 * time.Second)
	if allocs := testing.AllocsPerRun(3, func() { e.SetNodeTaints(at, "n1", doubled) }); allocs != 0 {
		t.Errorf("unchanged SetNodeTaints allocated %v times, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(3, func() { e.SetNodeTaints(at, "n1", base) }); allocs != 0 {
		t.Errorf("SetNodeTaints without the duplicates allocated %v times, want 0 (same set)", allocs)
	}
	reversed := slices.Clone(doubled)
	slices.Reverse(reversed)
	e.SetNodeTaints(testutil.At(100*time.Second), "n1", reversed)
	if got := len(e.nodes["n1"].taints); got != n {
		t.Fatalf("kept %d taints after reorder, want %d", got, n)
	}
	if got, want := e.nodes["n1"].taints[0].taint.Key, "example.com/t-19999"; got != want {
		t.Errorf("first kept taint %s, want %s (input order)", got, want)
	}
	for i, te := range e.nodes["n1"].taints {
		if !te.seen.Equal(testutil.Epoch) {
			t.Fatalf("taint %d %s seen at %s, want the first sighting +0s", i, te.taint.Key, rel(te.seen))
		}
	}
	if x := e.Explain(testutil.At(100*time.Second), key("limited")); x.State != EvictionScheduled || !x.At.Equal(testutil.At(300*time.Second)) {
		t.Errorf("Explain(limited) = %v at %s, want Scheduled at +300s", x.State, rel(x.At))
	}
	if x := e.Explain(testutil.At(100*time.Second), key("forever")); x.State != EvictionToleratedForever {
		t.Errorf("Explain(forever) = %v, want ToleratedForever", x.State)
	}
	// One new taint: only it is seen now.
	grown := append(slices.Clone(base), ne("example.com/extra"))
	e.SetNodeTaints(testutil.At(200*time.Second), "n1", grown)
	ts := e.nodes["n1"].taints
	if len(ts) != n+1 || !ts[n].seen.Equal(testutil.At(200*time.Second)) || !ts[0].seen.Equal(testutil.Epoch) {
		t.Errorf("after adding one taint: %d taints, new seen %s, old seen %s; want %d, +200s, +0s", len(ts), rel(ts[n].seen), rel(ts[0].seen), n+1)
	}
	if msg := e.check(); msg != "" {
		t.Error(msg)
	}
}

// TestSetNodeTaintsDuplicatesOrder: small cases of the duplicate rules,
// checked against the reference model's dedup (first of each identity, in
// input order, TimeAdded of the first).
func TestSetNodeTaintsDuplicatesOrder(t *testing.T) {
	a, b, c := ne("a"), ne("b"), ne("c")
	a2 := ne("a", "2")
	cases := []struct {
		name  string
		in    []v1.Taint
		again []v1.Taint // counts as unchanged
		want  []string
	}{
		{"no dups", []v1.Taint{a, b, c}, []v1.Taint{a, ns("x"), b, c}, []string{"a", "b", "c"}},
		{"dup later", []v1.Taint{a, b, a, c}, []v1.Taint{a, b, c, b, a}, []string{"a", "b", "c"}},
		{"dup with other TimeAdded", []v1.Taint{a, b, added(a, time.Second)}, []v1.Taint{a, b}, []string{"a", "b"}},
		{"values differ", []v1.Taint{a, a2, a}, []v1.Taint{a, a2, a2}, []string{"a", "a=2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := NewEvictor(EvictorConfig{})
			e.SetNodeTaints(testutil.Epoch, "n1", tc.in)
			var got []string
			for _, te := range e.nodes["n1"].taints {
				s := te.taint.Key
				if te.taint.Value != "" {
					s += "=" + te.taint.Value
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			if !sameNoExecute(e.nodes["n1"], tc.again) {
				t.Errorf("sameNoExecute(%v) = false, want true", tc.again)
			}
			if sameNoExecute(e.nodes["n1"], append([]v1.Taint{ne("z")}, tc.in...)) {
				t.Errorf("sameNoExecute(with a new taint) = true, want false")
			}
			if sameNoExecute(e.nodes["n1"], []v1.Taint{c, b, a}) {
				t.Errorf("sameNoExecute(reordered) = true, want false")
			}
		})
	}
}
