package heap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct {
	prio int
	seq  int // tie-break so the order is total and comparable with the model
}

func lessItem(a, b *item) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.seq < b.seq
}

func cmpItem(a, b *Elem[item]) int {
	switch {
	case lessItem(&a.Value, &b.Value):
		return -1
	case lessItem(&b.Value, &a.Value):
		return 1
	}
	return 0
}

// TestModel drives the heap and a sorted slice with the same random
// operations and checks that they agree after every step.
func TestModel(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		h := New(lessItem)
		var model []*Elem[item] // kept sorted
		seq := 0
		for step := 0; step < 2000; step++ {
			switch op := r.IntN(6); {
			case op <= 1: // Push
				seq++
				e := h.Push(item{prio: r.IntN(50), seq: seq})
				i, _ := slices.BinarySearchFunc(model, e, cmpItem)
				model = slices.Insert(model, i, e)
			case op == 2: // Pop
				got := h.Pop()
				if len(model) == 0 {
					if got != nil {
						t.Fatalf("seed %d step %d: Pop() on empty = %v, want nil", seed, step, got.Value)
					}
					continue
				}
				if got != model[0] {
					t.Fatalf("seed %d step %d: Pop() = %v, want %v", seed, step, got.Value, model[0].Value)
				}
				if got.InHeap() {
					t.Fatalf("seed %d step %d: popped element still InHeap", seed, step)
				}
				model = model[1:]
			case op == 3 && len(model) > 0: // Fix after changing a random element
				i := r.IntN(len(model))
				e := model[i]
				model = slices.Delete(model, i, i+1)
				e.Value.prio = r.IntN(50)
				if !h.Fix(e) {
					t.Fatalf("seed %d step %d: Fix of a held element = false", seed, step)
				}
				j, _ := slices.BinarySearchFunc(model, e, cmpItem)
				model = slices.Insert(model, j, e)
			case op == 4 && len(model) > 0: // Remove a random element, then again
				i := r.IntN(len(model))
				e := model[i]
				model = slices.Delete(model, i, i+1)
				if !h.Remove(e) {
					t.Fatalf("seed %d step %d: Remove of a held element = false", seed, step)
				}
				if h.Remove(e) || h.Fix(e) {
					t.Fatalf("seed %d step %d: Remove/Fix of a removed element = true", seed, step)
				}
			case op == 5 && r.IntN(50) == 0: // rare Clear
				h.Clear()
				for _, e := range model {
					if e.InHeap() {
						t.Fatalf("seed %d step %d: element InHeap after Clear", seed, step)
					}
				}
				model = model[:0]
			}
			if h.Len() != len(model) {
				t.Fatalf("seed %d step %d: Len() = %d, want %d", seed, step, h.Len(), len(model))
			}
			if len(model) > 0 && h.Peek() != model[0] {
				t.Fatalf("seed %d step %d: Peek() = %v, want %v", seed, step, h.Peek().Value, model[0].Value)
			}
		}
		// Drain: the heap must yield exactly the model order.
		for i, want := range model {
			if got := h.Pop(); got != want {
				t.Fatalf("seed %d drain %d: Pop() = %v, want %v", seed, i, got.Value, want.Value)
			}
		}
		if h.Peek() != nil || h.Pop() != nil {
			t.Fatalf("seed %d: heap not empty after drain", seed)
		}
	}
}

func TestForeignAndZeroElem(t *testing.T) {
	a, b := New(lessItem), New(lessItem)
	e := a.Push(item{prio: 1})
	b.Push(item{prio: 2})
	if b.Fix(e) || b.Remove(e) {
		t.Fatal("Fix/Remove of an element of another heap = true, want false")
	}
	var zero Elem[item]
	if zero.InHeap() || a.Remove(&zero) || a.Fix(&zero) || a.Fix(nil) || a.Remove(nil) {
		t.Fatal("zero or nil element treated as held")
	}
	a.PushElem(&zero)
	if !zero.InHeap() || a.Len() != 2 || a.Peek() != &zero {
		t.Fatalf("PushElem(zero): InHeap=%v Len=%d", zero.InHeap(), a.Len())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("PushElem of a held element did not panic")
		}
	}()
	a.PushElem(e)
}

func TestEach(t *testing.T) {
	h := New(lessItem)
	for i := range 10 {
		h.Push(item{prio: 10 - i})
	}
	sum := 0
	h.Each(func(e *Elem[item]) { sum += e.Value.prio })
	if sum != 55 {
		t.Fatalf("Each visited sum %d, want 55", sum)
	}
}

func TestPopFixAllocs(t *testing.T) {
	h := New(lessItem)
	es := make([]*Elem[item], 1000)
	for i := range es {
		es[i] = h.Push(item{prio: i})
	}
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		e := h.Pop()
		e.Value.prio += 1000
		h.PushElem(e)
		es[n%len(es)].Value.prio--
		h.Fix(es[n%len(es)])
		n++
	})
	if allocs != 0 {
		t.Fatalf("Pop+PushElem+Fix allocates %v per run, want 0", allocs)
	}
}
