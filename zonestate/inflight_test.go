package zonestate_test

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// TestQueuesKeepsQueueWithItemInFlight: Apply once dropped a removed zone's
// queue when Len() == 0, but Len leaves out the item a concurrent Try has
// handed out; its retry then landed in a queue the set no longer held, and
// the node was never tainted. The Apply here runs inside the Try callback,
// which is the interleaving of a Try and an Apply on two goroutines. (Apply
// drops no queue now; this keeps the interleaving covered.)
func TestQueuesKeepsQueueWithItemInFlight(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := qs.Apply(now, zonestate.Decision{Zones: []zonestate.ZoneDecision{{Key: "a", Size: 1, QPS: 1}}}); err != nil {
		t.Fatal(err)
	}
	q, _ := qs.Get("a")
	q.Add(now, "node-1", "uid-1")

	removed := zonestate.Decision{Removed: []string{"a"}, UndecidedQPS: 1}
	attempted := q.Try(now, func(evictionqueue.Item[string]) (bool, time.Duration) {
		if err := qs.Apply(now, removed); err != nil { // the zone's last node left meanwhile
			t.Errorf("Apply(zone a removed) = %v", err)
		}
		if _, ok := qs.Get("a"); !ok {
			t.Errorf("Get(a) after Apply(zone a removed) with an item in flight = false, want true")
		}
		return false, time.Second // the taint failed: retry
	})
	if attempted != 1 {
		t.Fatalf("Try = %d, want 1", attempted)
	}
	if got := qs.Len(); got != 1 {
		t.Errorf("Len() after the retry = %d, want 1 (the retried node)", got)
	}

	// The retry is pending and then done: the queue stays, and remembers
	// the node.
	if err := qs.Apply(now, removed); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	q.Try(now, func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 })
	if err := qs.Apply(now, zonestate.Decision{UndecidedQPS: 1}); err != nil {
		t.Fatal(err)
	}
	if got, ok := qs.Get("a"); !ok || got != q || q.State("node-1") != evictionqueue.KeyDone {
		t.Errorf("Get(a) once idle and absent: same queue %v, node-1 %v; want true, done", ok && got == q, q.State("node-1"))
	}
}
