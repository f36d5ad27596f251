package cidrfinalizer

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// checkTree verifies the AVL invariants and returns the keys in order.
func checkTree(t *testing.T, tr *addrTree) []key {
	t.Helper()
	var out []key
	var walk func(n int32) int8
	walk = func(n int32) int8 {
		if n == 0 {
			return 0
		}
		nd := tr.nodes[n]
		hl := walk(nd.left)
		out = append(out, nd.k)
		hr := walk(nd.right)
		if d := int(hl) - int(hr); d > 1 || d < -1 {
			t.Fatalf("node %v unbalanced: %d vs %d", nd.k, hl, hr)
		}
		if h := max(hl, hr) + 1; h != nd.height {
			t.Fatalf("node %v height %d, want %d", nd.k, nd.height, h)
		}
		if nd.count < 1 {
			t.Fatalf("node %v count %d", nd.k, nd.count)
		}
		return nd.height
	}
	walk(tr.root)
	if !slices.IsSortedFunc(out, key.cmp) {
		t.Fatalf("keys out of order: %v", out)
	}
	if len(out) != tr.keys {
		t.Fatalf("tree holds %d keys, counts %d", len(out), tr.keys)
	}
	return out
}

// TestAddrTreeModel runs random inserts, removes and range queries against a
// map-based multiset.
func TestAddrTreeModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := &addrTree{}
	model := map[key]int{}
	randKey := func() key { return key{lo: uint64(r.IntN(300))} }
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 5:
			k := randKey()
			tr.insert(k)
			model[k]++
		case op < 9:
			k := randKey()
			tr.remove(k)
			if model[k] > 1 {
				model[k]--
			} else {
				delete(model, k)
			}
		default:
			lo, hi := randKey(), randKey()
			if hi.less(lo) {
				lo, hi = hi, lo
			}
			var want []netip.Addr
			for k := range model {
				if !k.less(lo) && !hi.less(k) {
					want = append(want, k.addr(false))
				}
			}
			slices.SortFunc(want, netip.Addr.Compare)
			got := tr.appendIn(nil, span{lo, hi})
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: appendIn(%v..%v) = %v, want %v", step, lo, hi, got, want)
			}
			if any := tr.anyIn(span{lo, hi}); any != (len(want) > 0) {
				t.Fatalf("step %d: anyIn(%v..%v) = %v, want %v", step, lo, hi, any, len(want) > 0)
			}
		}
		if step%500 == 0 {
			keys := checkTree(t, tr)
			if len(keys) != len(model) {
				t.Fatalf("step %d: %d keys, model %d", step, len(keys), len(model))
			}
			for _, k := range keys {
				if model[k] == 0 {
					t.Fatalf("step %d: key %v not in model", step, k)
				}
			}
		}
	}
	// Remove everything: the arena is reused, the tree is empty.
	for k, n := range model {
		for range n {
			tr.remove(k)
		}
	}
	if tr.root != 0 || tr.keys != 0 {
		t.Fatalf("after removing all: root %d keys %d", tr.root, tr.keys)
	}
	size := len(tr.nodes)
	for i := range 100 {
		tr.insert(key{lo: uint64(i)})
	}
	if len(tr.nodes) != size {
		t.Errorf("inserts after removals grew the arena from %d to %d nodes", size, len(tr.nodes))
	}
	checkTree(t, tr)
}

func TestAddrTreeSequentialHeight(t *testing.T) {
	tr := &addrTree{}
	for i := range 1 << 16 {
		tr.insert(key{lo: uint64(i)})
	}
	checkTree(t, tr)
	if h := tr.nodes[tr.root].height; h > 24 { // AVL: < 1.44 log2(n+2)
		t.Errorf("height after 65536 sequential inserts = %d, want <= 24", h)
	}
	tr.clear()
	if tr.keys != 0 || tr.root != 0 {
		t.Errorf("clear() left keys %d root %d", tr.keys, tr.root)
	}
}
