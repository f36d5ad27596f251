package evictionqueue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestAllocs pins the zero-allocation guarantees of the steady-state calls.
func TestAllocs(t *testing.T) {
	const n = 1000
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 1})
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("node-%d", i)
		q.Add(testutil.Epoch, keys[i], "")
	}
	now := testutil.Epoch
	done := func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }
	retry := func(evictionqueue.Item[string]) (bool, time.Duration) { return false, time.Minute }
	checks := []struct {
		name string
		fn   func()
	}{
		{"Try(retry)", func() { now = now.Add(time.Second); q.Try(now, retry) }},
		{"Try(done)", func() { now = now.Add(time.Second); q.Try(now, done) }},
		{"NextDeadline", func() { q.NextDeadline() }},
		{"Len", func() { q.Len() }},
		{"Contains", func() { q.Contains(keys[7]) }},
		{"State", func() { q.State(keys[8]) }},
		{"Remove", func() { q.Remove(keys[9]) }},
		{"Add(known)", func() { q.Add(now, keys[10], "") }},
	}
	for _, c := range checks {
		if got := testing.AllocsPerRun(100, c.fn); got != 0 {
			t.Errorf("AllocsPerRun(%s) = %v, want 0", c.name, got)
		}
	}
}

// TestMemoryPerItem pins the memory budget: at most 150 bytes of heap per
// pending item (the keys themselves are the caller's and not counted).
func TestMemoryPerItem(t *testing.T) {
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("node-%07d", i)
	}
	if got := bytesPerItem(keys); got > 150 {
		t.Errorf("heap per pending item = %.1f B, want <= 150", got)
	}
}
