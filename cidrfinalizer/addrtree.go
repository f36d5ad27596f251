package cidrfinalizer

import "net/netip"

// addrTree is a sorted multiset of the addresses of one family: an AVL tree
// whose nodes live in a slice (index 0 is the nil node) with a free list, so
// that steady-state inserts and removals do not allocate. Insert, remove and
// the range queries cost O(log n) (plus the number of keys reported).
// It is not safe for concurrent use; Index guards it.
type addrTree struct {
	nodes []treeNode
	free  int32 // head of the free list, linked through left; 0 when empty
	root  int32
	keys  int // distinct keys
	v6    bool
}

type treeNode struct {
	k           key
	left, right int32
	count       int32 // how many IPAddress objects have this address
	height      int8
}

func (t *addrTree) h(n int32) int8 {
	if n == 0 {
		return 0
	}
	return t.nodes[n].height
}

func (t *addrTree) alloc(k key) int32 {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, treeNode{}) // the nil node
	}
	n := t.free
	if n != 0 {
		t.free = t.nodes[n].left
	} else {
		t.nodes = append(t.nodes, treeNode{})
		n = int32(len(t.nodes) - 1)
	}
	t.nodes[n] = treeNode{k: k, count: 1, height: 1}
	t.keys++
	return n
}

func (t *addrTree) release(n int32) {
	t.nodes[n] = treeNode{left: t.free}
	t.free = n
	t.keys--
}

func (t *addrTree) fix(n int32) {
	nd := &t.nodes[n]
	hl, hr := t.h(nd.left), t.h(nd.right)
	if hl > hr {
		nd.height = hl + 1
	} else {
		nd.height = hr + 1
	}
}

func (t *addrTree) rotateRight(n int32) int32 {
	l := t.nodes[n].left
	t.nodes[n].left = t.nodes[l].right
	t.nodes[l].right = n
	t.fix(n)
	t.fix(l)
	return l
}

func (t *addrTree) rotateLeft(n int32) int32 {
	r := t.nodes[n].right
	t.nodes[n].right = t.nodes[r].left
	t.nodes[r].left = n
	t.fix(n)
	t.fix(r)
	return r
}

// balance restores the AVL property at n after one of its subtrees changed
// height by at most one, and returns the subtree's new root.
func (t *addrTree) balance(n int32) int32 {
	t.fix(n)
	l, r := t.nodes[n].left, t.nodes[n].right
	switch bf := int(t.h(l)) - int(t.h(r)); {
	case bf > 1:
		if t.h(t.nodes[l].left) < t.h(t.nodes[l].right) {
			t.nodes[n].left = t.rotateLeft(l)
		}
		return t.rotateRight(n)
	case bf < -1:
		if t.h(t.nodes[r].right) < t.h(t.nodes[r].left) {
			t.nodes[n].right = t.rotateRight(r)
		}
		return t.rotateLeft(n)
	}
	return n
}

// insert adds one occurrence of k. O(log n).
func (t *addrTree) insert(k key) { t.root = t.ins(t.root, k) }

func (t *addrTree) ins(n int32, k key) int32 {
	if n == 0 {
		return t.alloc(k)
	}
	switch c := k.cmp(t.nodes[n].k); {
	case c < 0:
		l := t.ins(t.nodes[n].left, k) // may grow t.nodes: index again below
		t.nodes[n].left = l
	case c > 0:
		r := t.ins(t.nodes[n].right, k)
		t.nodes[n].right = r
	default:
		t.nodes[n].count++
		return n
	}
	return t.balance(n)
}

// remove drops one occurrence of k, if present. O(log n).
func (t *addrTree) remove(k key) { t.root = t.del(t.root, k) }

func (t *addrTree) del(n int32, k key) int32 {
	if n == 0 {
		return 0
	}
	switch c := k.cmp(t.nodes[n].k); {
	case c < 0:
		t.nodes[n].left = t.del(t.nodes[n].left, k)
	case c > 0:
		t.nodes[n].right = t.del(t.nodes[n].right, k)
	default:
		if t.nodes[n].count > 1 {
			t.nodes[n].count--
			return n
		}
		l, r := t.nodes[n].left, t.nodes[n].right
		t.release(n)
		if l == 0 {
			return r
		}
		if r == 0 {
			return l
		}
		m, rest := t.detachMin(r)
		t.nodes[m].left, t.nodes[m].right = l, rest
		return t.balance(m)
	}
	return t.balance(n)
}

// detachMin unlinks the smallest node of the subtree n and returns it and the
// subtree's new root.
func (t *addrTree) detachMin(n int32) (m, root int32) {
	if t.nodes[n].left == 0 {
		return n, t.nodes[n].right
	}
	m, l := t.detachMin(t.nodes[n].left)
	t.nodes[n].left = l
	return m, t.balance(n)
}

// anyIn reports whether some key lies in s. O(log n).
func (t *addrTree) anyIn(s span) bool {
	n := t.root
	for n != 0 {
		nd := &t.nodes[n]
		switch {
		case nd.k.less(s.lo):
			n = nd.right
		case s.hi.less(nd.k):
			n = nd.left
		default:
			return true
		}
	}
	return false
}

// appendIn appends the keys in s, in ascending order, as addresses.
// O(log n + reported).
func (t *addrTree) appendIn(dst []netip.Addr, s span) []netip.Addr {
	return t.appendFrom(dst, t.root, s)
}

func (t *addrTree) appendFrom(dst []netip.Addr, n int32, s span) []netip.Addr {
	for n != 0 {
		nd := &t.nodes[n] // stable: nothing allocates nodes during a query
		switch {
		case nd.k.less(s.lo):
			n = nd.right
		case s.hi.less(nd.k):
			n = nd.left
		default:
			dst = t.appendFrom(dst, nd.left, s)
			dst = append(dst, nd.k.addr(t.v6))
			n = nd.right
		}
	}
	return dst
}

// clear empties the tree, keeping its storage.
func (t *addrTree) clear() {
	t.nodes = t.nodes[:0]
	t.free, t.root, t.keys = 0, 0, 0
}
