package taints

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

func withValue(t v1.Taint, v string) v1.Taint { t.Value = v; return t }

func TestAddOrUpdate(t *testing.T) {
	now := testutil.At(time.Minute)
	foreign := ns("example.com/foreign")
	tests := []struct {
		name    string
		taints  []v1.Taint
		add     v1.Taint
		want    string
		changed bool
	}{
		{"append NoExecute gets TimeAdded now", []v1.Taint{foreign}, ne(unreachable),
			"example.com/foreign:NoSchedule unreachable:NoExecute@+60s", true},
		{"append NoSchedule keeps no TimeAdded", nil, ns(notReady), "not-ready:NoSchedule", true},
		{"explicit TimeAdded kept", nil, added(ne(unreachable), 5*time.Second), "unreachable:NoExecute@+5s", true},
		{"identical existing: no change", []v1.Taint{foreign, added(ne(unreachable), 5*time.Second)}, added(ne(unreachable), 5*time.Second),
			"example.com/foreign:NoSchedule unreachable:NoExecute@+5s", false},
		{"identical NoSchedule without TimeAdded: no change", []v1.Taint{ns(notReady)}, ns(notReady), "not-ready:NoSchedule", false},
		{"re-assert NoExecute without TimeAdded keeps the existing one", []v1.Taint{added(ne(unreachable), 5*time.Second)}, ne(unreachable),
			"unreachable:NoExecute@+5s", false},
		{"existing NoExecute without TimeAdded gets one", []v1.Taint{ne(unreachable)}, ne(unreachable), "unreachable:NoExecute@+60s", true},
		{"different TimeAdded replaced in place", []v1.Taint{added(ne(unreachable), 5*time.Second), foreign}, added(ne(unreachable), 9*time.Second),
			"unreachable:NoExecute@+9s example.com/foreign:NoSchedule", true},
		{"different value replaced, TimeAdded refreshed", []v1.Taint{added(withValue(ne(unreachable), "a"), 5*time.Second)}, withValue(ne(unreachable), "b"),
			"unreachable=b:NoExecute@+60s", true},
		{"same key other effect is another taint", []v1.Taint{ns(unreachable)}, ne(unreachable),
			"unreachable:NoSchedule unreachable:NoExecute@+60s", true},
		{"duplicates collapsed", []v1.Taint{added(ne(unreachable), 5*time.Second), foreign, added(ne(unreachable), 5*time.Second)},
			added(ne(unreachable), 5*time.Second), "unreachable:NoExecute@+5s example.com/foreign:NoSchedule", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := testutil.WithTaints(testutil.Node("n1", testutil.Epoch), tt.taints...)
			before := node.DeepCopy()
			addCopy := *tt.add.DeepCopy()
			got, changed := AddOrUpdate(node, tt.add, now)
			if r := renderTaints(got.Spec.Taints); r != tt.want || changed != tt.changed {
				t.Errorf("AddOrUpdate(%s, %s) = %q, %v, want %q, %v", renderTaints(tt.taints), tt.add.ToString(), r, changed, tt.want, tt.changed)
			}
			if !equalNodes(node, before) || !sameTaint(&addCopy, &tt.add) {
				t.Errorf("AddOrUpdate modified its input")
			}
			if changed {
				if got == node {
					t.Fatalf("AddOrUpdate changed but returned the input node")
				}
				for i := range got.Spec.Taints {
					ta := got.Spec.Taints[i].TimeAdded
					if ta == nil {
						continue
					}
					if ta == tt.add.TimeAdded {
						t.Errorf("result shares TimeAdded with the argument")
					}
					for j := range node.Spec.Taints {
						if ta == node.Spec.Taints[j].TimeAdded {
							t.Errorf("result shares TimeAdded with the input node")
						}
					}
				}
			} else if got != node {
				t.Errorf("AddOrUpdate without change returned a copy")
			}
		})
	}
	if n, ok := AddOrUpdate(nil, ne(unreachable), now); n != nil || ok {
		t.Errorf("AddOrUpdate(nil) = %v, %v, want nil, false", n, ok)
	}
}

func TestRemove(t *testing.T) {
	foreign := ns("example.com/foreign")
	tests := []struct {
		name    string
		taints  []v1.Taint
		remove  v1.Taint
		want    string
		changed bool
	}{
		{"absent", []v1.Taint{foreign}, ne(unreachable), "example.com/foreign:NoSchedule", false},
		{"empty", nil, ne(unreachable), "", false},
		{"removed, value ignored", []v1.Taint{withValue(ne(unreachable), "x"), foreign}, ne(unreachable), "example.com/foreign:NoSchedule", true},
		{"other effect untouched", []v1.Taint{ns(unreachable), ne(unreachable)}, ne(unreachable), "unreachable:NoSchedule", true},
		{"duplicates all removed", []v1.Taint{ne(unreachable), foreign, ne(unreachable)}, ne(unreachable), "example.com/foreign:NoSchedule", true},
	}
	for _, tt := range tests {
		node := testutil.WithTaints(testutil.Node("n1", testutil.Epoch), tt.taints...)
		before := node.DeepCopy()
		got, changed := Remove(node, tt.remove)
		if r := renderTaints(got.Spec.Taints); r != tt.want || changed != tt.changed {
			t.Errorf("%s: Remove(%s, %s) = %q, %v, want %q, %v", tt.name, renderTaints(tt.taints), tt.remove.ToString(), r, changed, tt.want, tt.changed)
		}
		if !equalNodes(node, before) {
			t.Errorf("%s: Remove modified its input", tt.name)
		}
		if changed == (got == node) {
			t.Errorf("%s: Remove returned the input node = %v with changed = %v", tt.name, got == node, changed)
		}
	}
	if n, ok := Remove(nil, ne(unreachable)); n != nil || ok {
		t.Errorf("Remove(nil) = %v, %v, want nil, false", n, ok)
	}
}

func TestSwapAndRemoveHealthTaints(t *testing.T) {
	now := testutil.At(time.Minute)
	foreign := ns("example.com/foreign")
	tests := []struct {
		name    string
		taints  []v1.Taint
		do      func(n *v1.Node) (*v1.Node, bool)
		want    string
		changed bool
	}{
		{"swap unreachable for not-ready", []v1.Taint{foreign, added(ne(unreachable), 0)},
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, NotReadyTaint(), now) },
			"example.com/foreign:NoSchedule not-ready:NoExecute@+60s", true},
		{"swap not-ready for unreachable", []v1.Taint{added(ne(notReady), 0)},
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, UnreachableTaint(), now) },
			"unreachable:NoExecute@+60s", true},
		{"queue pass on an untainted node adds", nil,
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, UnreachableTaint(), now) },
			"unreachable:NoExecute@+60s", true},
		{"already in place: no change", []v1.Taint{added(ne(unreachable), 0)},
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, UnreachableTaint(), now) },
			"unreachable:NoExecute@+0s", false},
		{"NoSchedule twin untouched", []v1.Taint{ns(notReady)},
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, UnreachableTaint(), now) },
			"not-ready:NoSchedule unreachable:NoExecute@+60s", true},
		{"other taint only added", []v1.Taint{ne(notReady)},
			func(n *v1.Node) (*v1.Node, bool) { return SwapHealthTaint(n, ne("example.com/x"), now) },
			"not-ready:NoExecute example.com/x:NoExecute@+60s", true},
		{"remove both", []v1.Taint{ne(notReady), foreign, ne(unreachable), ns(unreachable)},
			func(n *v1.Node) (*v1.Node, bool) { return RemoveHealthTaints(n) },
			"example.com/foreign:NoSchedule unreachable:NoSchedule", true},
		{"remove none present", []v1.Taint{foreign},
			func(n *v1.Node) (*v1.Node, bool) { return RemoveHealthTaints(n) },
			"example.com/foreign:NoSchedule", false},
	}
	for _, tt := range tests {
		node := testutil.WithTaints(testutil.Node("n1", testutil.Epoch), tt.taints...)
		before := node.DeepCopy()
		got, changed := tt.do(node)
		if r := renderTaints(got.Spec.Taints); r != tt.want || changed != tt.changed {
			t.Errorf("%s: got %q, %v, want %q, %v", tt.name, r, changed, tt.want, tt.changed)
		}
		if !equalNodes(node, before) {
			t.Errorf("%s: modified its input", tt.name)
		}
	}
	if n, ok := SwapHealthTaint(nil, NotReadyTaint(), now); n != nil || ok {
		t.Errorf("SwapHealthTaint(nil) = %v, %v", n, ok)
	}
	if n, ok := RemoveHealthTaints(nil); n != nil || ok {
		t.Errorf("RemoveHealthTaints(nil) = %v, %v", n, ok)
	}
}

func TestAddOrUpdateUnchangedAllocatesNothing(t *testing.T) {
	node := testutil.WithTaints(testutil.Node("n1", testutil.Epoch), ns("a"), added(ne(unreachable), 0))
	clean := testutil.WithTaints(testutil.Node("n2", testutil.Epoch), ns("a"))
	now := testutil.At(time.Minute)
	if n := testing.AllocsPerRun(100, func() {
		AddOrUpdate(node, ne(unreachable), now)
		AddOrUpdate(node, ns("a"), now)
		Remove(node, ne(notReady))
		RemoveHealthTaints(clean)
		SwapHealthTaint(node, UnreachableTaint(), now)
	}); n != 0 {
		t.Errorf("unchanged AddOrUpdate/Remove/RemoveHealthTaints/SwapHealthTaint allocate %v times, want 0", n)
	}
}
