package zonestate_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// newEvictionQueues is a Queues of evictionqueues, burst 1.
func newEvictionQueues(t *testing.T) *zonestate.Queues[*evictionqueue.Queue[string]] {
	t.Helper()
	qs, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestQueuesUndecidedZoneRemembersTaintedNode runs a caller's loop over a
// zone x whose nodes are all excluded from disruption counting, so x never
// has a decision, next to a counted zone a. Each 5s pass queues every
// unhealthy node its zone's queue does not know (Ensure for x), then
// applies the decision; a tainting pass runs every second. x1 is Unknown
// from the start, x2 from 30s.
//
// x1 must be tainted once: its queue remembers it as done, as upstream's
// queue does while it lives. Queues used to drop x's queue whenever it was
// idle, so every other pass found x1 unknown to a new queue, queued it
// again, and its write-free attempt took the token: at 30s x1 was queued
// ahead of x2 and x2 waited for the next token, at 40s.
func TestQueuesUndecidedZoneRemembersTaintedNode(t *testing.T) {
	const x = "r:\x00:x"
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := zonestate.DefaultPolicy()
	tr, _ := zonestate.NewTracker(policy)
	qs := newEvictionQueues(t)
	tainted := map[string]bool{}
	attempts := map[string]int{}
	firstTaint := map[string]time.Duration{}
	unknown := func(node string, el time.Duration) bool { return node == "x1" || el >= 30*time.Second }

	for el := time.Duration(0); el <= 60*time.Second; el += time.Second {
		now := epoch.Add(el)
		if el%(5*time.Second) == 0 {
			for _, node := range []string{"x1", "x2"} {
				if !unknown(node, el) {
					continue
				}
				if q, ok := qs.Get(x); ok && q.State(node) != evictionqueue.KeyAbsent {
					continue // waiting, or done and still tainted
				}
				q, err := qs.Ensure(now, x, policy.EvictionQPS)
				if err != nil {
					t.Fatal(err)
				}
				q.Add(now, node, "")
			}
			a := []*v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
			if err := qs.Apply(now, tr.Update(map[string][]*v1.NodeCondition{"r:\x00:a": a})); err != nil {
				t.Fatal(err)
			}
		}
		qs.Each(func(_ string, q *evictionqueue.Queue[string]) bool {
			q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
				attempts[it.Key]++
				if !tainted[it.Key] {
					tainted[it.Key] = true
					firstTaint[it.Key] = el
				}
				return true, 0
			})
			return true
		})
	}
	if attempts["x1"] != 1 {
		t.Errorf("x1 (Unknown, tainted at 0s) let through %d times in 60s, want 1", attempts["x1"])
	}
	if got, ok := firstTaint["x2"]; !ok || got != 30*time.Second {
		t.Errorf("x2 (Unknown at 30s) tainted at %v (%v), want 30s: the token is not spent on x1 again", got, ok)
	}
}

// TestQueuesUndecidedZoneRate: a zone whose state stopped its queue (a
// small zone in partial disruption: rate 0) and whose nodes then all leave
// the disruption count runs at UndecidedQPS, as upstream's queue for such a
// zone runs at evictionLimiterQPS: the node waiting in it is tainted.
// Queues used to keep such a queue at its last rate, 0, for as long as it
// held the node: the node was never tainted. In full disruption mode the
// queue is stopped like every other, and runs again on exit.
func TestQueuesUndecidedZoneRate(t *testing.T) {
	const a, b = "r:\x00:a", "r:\x00:b"
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	qs := newEvictionQueues(t)
	cond := func(pattern string) []*v1.NodeCondition {
		var out []*v1.NodeCondition
		for _, c := range pattern {
			s := v1.ConditionTrue
			if c == 'U' {
				s = v1.ConditionUnknown
			}
			out = append(out, &v1.NodeCondition{Type: v1.NodeReady, Status: s})
		}
		return out
	}
	type pass struct {
		zones    map[string][]*v1.NodeCondition
		add      string // a node to queue in b before the pass
		wantRate float64
		wantNext bool // b's queue has work it can do
	}
	for i, p := range []pass{
		{zones: map[string][]*v1.NodeCondition{a: cond("T"), b: cond("TUUU")}, add: "b1", wantRate: 0, wantNext: false},
		{zones: map[string][]*v1.NodeCondition{a: cond("T")}, wantRate: 0.1, wantNext: true},            // b's nodes excluded
		{zones: map[string][]*v1.NodeCondition{a: cond("T")}, wantRate: 0.1, wantNext: true},            // still
		{zones: map[string][]*v1.NodeCondition{a: cond("U")}, add: "b2", wantRate: 0},                   // full disruption: cleared, stopped
		{zones: map[string][]*v1.NodeCondition{a: cond("T")}, add: "b3", wantRate: 0.1, wantNext: true}, // exit
	} {
		now := epoch.Add(time.Duration(i) * 5 * time.Second)
		if p.add != "" {
			q, err := qs.Ensure(now, b, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			q.Add(now, p.add, "")
		}
		d := tr.Update(p.zones)
		if err := qs.Apply(now, d); err != nil {
			t.Fatal(err)
		}
		q, ok := qs.Get(b)
		if !ok {
			t.Fatalf("pass %d (%q removed): b's queue dropped, want kept", i, d.Removed)
		}
		_, next := q.NextDeadline()
		if got := fmt.Sprint(q.Rate(), next); got != fmt.Sprint(p.wantRate, p.wantNext) {
			t.Errorf("pass %d (%q removed, UndecidedQPS %v): b's queue rate, has work = %s, want %v %v",
				i, d.Removed, d.UndecidedQPS, got, p.wantRate, p.wantNext)
		}
	}
}
