package evictionqueue_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Sizes: pending items per queue.
var benchSizes = []struct {
	name string
	n    int
}{{"n=1k", 1_000}, {"n=10k", 10_000}, {"n=100k", 100_000}, {"n=1M", 1_000_000}}

// alwaysOpen is a rate limit that never denies within a benchmark (Inf is
// rejected by validation).
var alwaysOpen = evictionqueue.Config{QPS: 1e12, Burst: 1 << 40}

var benchKeys = sync.OnceValue(func() []string {
	keys := make([]string, 2_000_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("node-%07d", i)
	}
	return keys
})

func filled(b *testing.B, cfg evictionqueue.Config, keys []string) *queue {
	b.Helper()
	q, err := evictionqueue.New[string](testutil.Epoch, cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		q.Add(testutil.Epoch, k, "")
	}
	return q
}

// perItem reports the timed cost per item when each b.Loop iteration
// handles n items.
func perItem(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
}

// BenchmarkAdd fills an empty queue with n keys (growth included).
func BenchmarkAdd(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			keys := benchKeys()[:s.n]
			b.ReportAllocs()
			for b.Loop() {
				q, _ := evictionqueue.New[string](testutil.Epoch, alwaysOpen)
				for _, k := range keys {
					q.Add(testutil.Epoch, k, "")
				}
			}
			perItem(b, s.n)
		})
	}
}

// BenchmarkRemoveRandom removes every key of a full queue in random order.
// Upstream scans the heap for each removal (about 589µs per item at 100k).
func BenchmarkRemoveRandom(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			keys := benchKeys()[:s.n]
			order := rand.New(rand.NewPCG(1, 2)).Perm(s.n)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				q := filled(b, alwaysOpen, keys)
				b.StartTimer()
				for _, i := range order {
					q.Remove(keys[i])
				}
			}
			perItem(b, s.n)
		})
	}
}

// BenchmarkTryDrain drains a full queue of due items in one Try call with
// an always-open limiter.
func BenchmarkTryDrain(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			keys := benchKeys()[:s.n]
			done := func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				q := filled(b, alwaysOpen, keys)
				b.StartTimer()
				if got := q.Try(testutil.Epoch, done); got != s.n {
					b.Fatalf("Try = %d, want %d", got, s.n)
				}
			}
			perItem(b, s.n)
		})
	}
}

// BenchmarkTryRetry is the steady state of a queue of n due items: each op
// is one Try that attempts one item (one token per nanosecond) and asks for
// a retry, so the queue keeps its size.
func BenchmarkTryRetry(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			q := filled(b, evictionqueue.Config{QPS: 1e9, Burst: 1}, benchKeys()[:s.n])
			retry := func(evictionqueue.Item[string]) (bool, time.Duration) { return false, 0 }
			now := testutil.Epoch
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Nanosecond)
				if q.Try(now, retry) != 1 {
					b.Fatal("Try attempted nothing")
				}
			}
		})
	}
}

// BenchmarkChurn keeps n keys pending while one key leaves (Remove) and
// another arrives (Add) per op.
func BenchmarkChurn(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			keys := benchKeys()[:2*s.n]
			q := filled(b, alwaysOpen, keys[:s.n])
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				q.Remove(keys[i])
				q.Add(testutil.Epoch, keys[(i+s.n)%len(keys)], "")
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkNextDeadline asks for the next deadline of a queue of n items
// waiting for a token.
func BenchmarkNextDeadline(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			q := filled(b, evictionqueue.DefaultConfig(), benchKeys()[:s.n])
			q.Try(testutil.Epoch, func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 })
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := q.NextDeadline(); !ok {
					b.Fatal("no deadline")
				}
			}
		})
	}
}

// BenchmarkMemory reports the heap bytes held per pending item (keys are
// the caller's strings and not counted).
func BenchmarkMemory(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			keys := benchKeys()[:s.n]
			var per float64
			for b.Loop() {
				per = bytesPerItem(keys)
			}
			b.ReportMetric(per, "B/item")
		})
	}
}

// bytesPerItem measures the live heap growth of filling a queue with keys.
func bytesPerItem(keys []string) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	q, _ := evictionqueue.New[string](testutil.Epoch, alwaysOpen)
	for _, k := range keys {
		q.Add(testutil.Epoch, k, "")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(q)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(keys))
}
