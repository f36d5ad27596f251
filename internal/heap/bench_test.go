package heap

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkHeap(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d/RemoveFix", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			h := New(lessItem)
			es := make([]*Elem[item], n)
			for i := range es {
				es[i] = h.Push(item{prio: r.IntN(n), seq: i})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e := es[r.IntN(n)]
				h.Remove(e)
				e.Value.prio = r.IntN(n)
				h.PushElem(e)
				i++
			}
		})
	}
}
