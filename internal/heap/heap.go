// Package heap is a generic indexed binary min-heap.
//
// Unlike container/heap, the heap owns the position of every element: Push
// returns an *Elem handle that stays valid while the element is in the heap,
// so Fix and Remove of an arbitrary element cost O(log n) without a search.
// Callers keep the handle (typically in a map from key to *Elem) and mutate
// Elem.Value in place before calling Fix.
//
// A Heap is not safe for concurrent use; the packages that embed one guard it
// with their own mutex.
package heap

// Elem is one element of a Heap. Value may be changed by the caller; after a
// change that affects the order, call Heap.Fix.
type Elem[T any] struct {
	Value T
	pos   int // 1 + index in Heap.s; 0 when not in a heap, so the zero Elem is free
}

// InHeap reports whether e is currently held by a heap.
func (e *Elem[T]) InHeap() bool { return e != nil && e.pos > 0 }

// Heap is a binary min-heap of elements ordered by a caller-supplied less
// function. The zero value is not usable; call New.
type Heap[T any] struct {
	s    []*Elem[T]
	less func(a, b *T) bool
}

// New returns an empty heap ordered by less, which must be a strict weak
// order. less receives pointers so that large values are not copied.
func New[T any](less func(a, b *T) bool) *Heap[T] {
	return &Heap[T]{less: less}
}

// Len returns the number of elements. O(1).
func (h *Heap[T]) Len() int { return len(h.s) }

// Push adds v and returns its handle. O(log n); one allocation for the handle.
func (h *Heap[T]) Push(v T) *Elem[T] {
	e := &Elem[T]{Value: v}
	h.PushElem(e)
	return e
}

// PushElem adds an element that is not in any heap, reusing its storage.
// It panics if e is already in a heap (a programming error). O(log n).
func (h *Heap[T]) PushElem(e *Elem[T]) {
	if e.pos != 0 {
		panic("heap: PushElem of an element already in a heap")
	}
	h.s = append(h.s, e)
	e.pos = len(h.s)
	h.up(e.pos - 1)
}

// Peek returns the minimum element without removing it, or nil when empty. O(1).
func (h *Heap[T]) Peek() *Elem[T] {
	if len(h.s) == 0 {
		return nil
	}
	return h.s[0]
}

// Pop removes and returns the minimum element, or nil when empty. O(log n).
func (h *Heap[T]) Pop() *Elem[T] {
	if len(h.s) == 0 {
		return nil
	}
	e := h.s[0]
	h.removeAt(0)
	return e
}

// Fix restores the order after e.Value changed. It reports false, and does
// nothing, when e is not in this heap. O(log n).
func (h *Heap[T]) Fix(e *Elem[T]) bool {
	if !h.holds(e) {
		return false
	}
	if i := e.pos - 1; !h.down(i) {
		h.up(i)
	}
	return true
}

// Remove takes e out of the heap. It reports false, and does nothing, when e
// is not in this heap. O(log n).
func (h *Heap[T]) Remove(e *Elem[T]) bool {
	if !h.holds(e) {
		return false
	}
	h.removeAt(e.pos - 1)
	return true
}

// Clear removes every element. Handles of removed elements report !InHeap.
// O(n).
func (h *Heap[T]) Clear() {
	for i, e := range h.s {
		e.pos = 0
		h.s[i] = nil
	}
	h.s = h.s[:0]
}

// Each calls fn for every element in heap (not sorted) order. fn must not
// modify the heap.
func (h *Heap[T]) Each(fn func(e *Elem[T])) {
	for _, e := range h.s {
		fn(e)
	}
}

func (h *Heap[T]) holds(e *Elem[T]) bool {
	return e != nil && e.pos > 0 && e.pos <= len(h.s) && h.s[e.pos-1] == e
}

func (h *Heap[T]) removeAt(i int) {
	n := len(h.s) - 1
	e := h.s[i]
	if i != n {
		h.swap(i, n)
	}
	h.s[n] = nil
	h.s = h.s[:n]
	e.pos = 0
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *Heap[T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].pos = i + 1
	h.s[j].pos = j + 1
}

func (h *Heap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(&h.s[j].Value, &h.s[i].Value) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts the element at i0 down and reports whether it moved.
func (h *Heap[T]) down(i0 int) bool {
	n := len(h.s)
	i := i0
	for {
		l := 2*i + 1
		if l >= n || l < 0 {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(&h.s[r].Value, &h.s[l].Value) {
			j = r
		}
		if !h.less(&h.s[j].Value, &h.s[i].Value) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
