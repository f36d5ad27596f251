package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodsByNode(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	c := types.NamespacedName{Namespace: "other", Name: "a"}
	type op struct {
		add    bool
		node   string
		pod    types.NamespacedName
		listOf string
		want   []types.NamespacedName
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"add and list", []op{{add: true, node: "n1", pod: a}, {add: true, node: "n1", pod: c}, {listOf: "n1", want: []types.NamespacedName{a, c}}}},
		{"add twice is one", []op{{add: true, node: "n1", pod: a}, {add: true, node: "n1", pod: a}, {listOf: "n1", want: []types.NamespacedName{a}}}},
		{"unbound not recorded", []op{{add: true, node: "", pod: a}, {listOf: "", want: nil}}},
		{"remove", []op{{add: true, node: "n1", pod: a}, {add: true, node: "n1", pod: b}, {node: "n1", pod: a}, {listOf: "n1", want: []types.NamespacedName{b}}}},
		{"remove last drops the node", []op{{add: true, node: "n1", pod: a}, {node: "n1", pod: a}, {listOf: "n1", want: nil}}},
		{"remove unknown", []op{{add: true, node: "n1", pod: a}, {node: "n2", pod: a}, {node: "n1", pod: b}, {listOf: "n1", want: []types.NamespacedName{a}}}},
		{"rebind", []op{{add: true, node: "n1", pod: a}, {node: "n1", pod: a}, {add: true, node: "n2", pod: a}, {listOf: "n1", want: nil}, {listOf: "n2", want: []types.NamespacedName{a}}}},
	}
	cmp := func(x, y types.NamespacedName) int {
		return slices.Compare([]string{x.Namespace, x.Name}, []string{y.Namespace, y.Name})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newPodsByNode()
			for i, o := range tc.ops {
				switch {
				case o.want != nil || o.listOf != "" || (!o.add && o.node == "" && o.pod == types.NamespacedName{}):
					got := x.list(o.listOf)
					slices.SortFunc(got, cmp)
					assert.Equal(t, o.want, got, "op %d: list(%q)", i, o.listOf)
				case o.add:
					x.add(o.node, o.pod)
				default:
					x.remove(o.node, o.pod)
				}
			}
		})
	}
}

// TestPodsByNodeShrinks: a node that lost most of its pods does not keep
// its largest array.
func TestPodsByNodeShrinks(t *testing.T) {
	x := newPodsByNode()
	for i := range 100 {
		x.add("n", types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)})
	}
	for i := range 95 {
		x.remove("n", types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)})
	}
	assert.Len(t, x.list("n"), 5)
	assert.LessOrEqual(t, cap(x.nodes["n"]), 2*5+8)
}
