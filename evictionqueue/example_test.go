package evictionqueue_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
)

// Example shows the whole caller loop: keys go in as nodes become
// unhealthy, and the caller sleeps until NextDeadline, calls Try and acts
// on the items it is handed. A failed action is retried; the queue never
// loses it. Here the "sleep" just moves a virtual clock.
func Example() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, err := evictionqueue.New[string](epoch, evictionqueue.DefaultConfig()) // 0.1 QPS, burst 1
	if err != nil {
		panic(err)
	}
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		q.Add(epoch, node, "")
	}
	failOnce := map[string]bool{"node-b": true}

	now := epoch
	for {
		deadline, ok := q.NextDeadline()
		if !ok {
			break // nothing pending (or the queue is stopped): wait for the next Add
		}
		if deadline.After(now) {
			now = deadline // time.Sleep(deadline.Sub(clock.Now())) in a real controller
		}
		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			if failOnce[it.Key] {
				delete(failOnce, it.Key)
				fmt.Printf("+%v %s: API error, retry in 5s\n", now.Sub(epoch), it.Key)
				return false, 5 * time.Second
			}
			fmt.Printf("+%v %s: tainted\n", now.Sub(epoch), it.Key)
			return true, 0
		})
	}
	fmt.Println("pending:", q.Len())
	// Output:
	// +0s node-a: tainted
	// +10s node-b: API error, retry in 5s
	// +20s node-c: tainted
	// +30s node-b: tainted
	// pending: 0
}

// ExampleQueue_Try adds keys and hands the due ones to a callback. A key
// reported done is remembered until Remove, so adding it again is refused.
func ExampleQueue_Try() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.Config{QPS: 10, Burst: 10})
	q.Add(epoch, "node-a", "uid-a")
	q.Add(epoch, "node-b", "uid-b")
	n := q.Try(epoch, func(it evictionqueue.Item[string]) (bool, time.Duration) {
		fmt.Println("attempt", it.Key, it.UID)
		return true, 0
	})
	fmt.Println("attempted", n)
	fmt.Println("re-add node-a:", q.Add(epoch, "node-a", "uid-a"), q.State("node-a"))
	q.Remove("node-a")
	fmt.Println("after Remove:", q.Add(epoch, "node-a", "uid-a"), q.State("node-a"))
	// Output:
	// attempt node-a uid-a
	// attempt node-b uid-b
	// attempted 2
	// re-add node-a: false done
	// after Remove: true pending
}

// ExampleQueue_Try_rateLimited shows the token bucket: at the default 0.1
// QPS with burst 1, one item is attempted at once and the next 10s later,
// however often Try is called.
func ExampleQueue_Try_rateLimited() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.DefaultConfig())
	for _, k := range []string{"a", "b", "c"} {
		q.Add(epoch, k, "")
	}
	for s := 0; s <= 20; s += 5 {
		now := epoch.Add(time.Duration(s) * time.Second)
		var got []string
		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			got = append(got, it.Key)
			return true, 0
		})
		fmt.Printf("+%ds: %v\n", s, got)
	}
	// Output:
	// +0s: [a]
	// +5s: []
	// +10s: [b]
	// +15s: []
	// +20s: [c]
}

// ExampleQueue_SetRate stops a queue (a zone in full disruption) and starts
// it again. The restarted bucket starts empty, so no burst follows.
func ExampleQueue_SetRate() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.Config{QPS: 1, Burst: 1})
	q.Add(epoch, "a", "")
	q.Add(epoch, "b", "")
	done := func(it evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }

	_ = q.SetRate(epoch, 0)
	_, ok := q.NextDeadline()
	fmt.Println("stopped: rate", q.Rate(), "attempted", q.Try(epoch.Add(time.Minute), done), "deadline", ok)

	_ = q.SetRate(epoch.Add(time.Minute), 1)
	d, _ := q.NextDeadline()
	fmt.Printf("restarted: rate %v next at +%v\n", q.Rate(), d.Sub(epoch))
	fmt.Println("attempted", q.Try(d, done))

	fmt.Println(q.SetRate(d, -1))
	// Output:
	// stopped: rate 0 attempted 0 deadline false
	// restarted: rate 1 next at +1m1s
	// attempted 1
	// evictionqueue: invalid QPS: QPS -1 is negative
}

// ExampleQueue_NextDeadline shows that the deadline is the later of the
// head's due time and the next token.
func ExampleQueue_NextDeadline() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.DefaultConfig())
	q.Add(epoch, "a", "")
	d, _ := q.NextDeadline()
	fmt.Printf("due now, token now: +%v\n", d.Sub(epoch))
	q.Try(epoch, func(it evictionqueue.Item[string]) (bool, time.Duration) { return false, 3 * time.Second })
	d, _ = q.NextDeadline()
	fmt.Printf("due at +3s, token at +10s: +%v\n", d.Sub(epoch))
	// Output:
	// due now, token now: +0s
	// due at +3s, token at +10s: +10s
}

// ExampleQueue_Add_sortedOrder: items added at one instant are attempted in
// the order they were added. An informer's List returns nodes in map order,
// different on every run, so sort them first for a reproducible tainting
// order.
func ExampleQueue_Add_sortedOrder() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.Config{QPS: 1, Burst: 1})
	unhealthy := []string{"node-c", "node-a", "node-b"} // as List returned them this time
	slices.Sort(unhealthy)
	for _, name := range unhealthy {
		q.Add(epoch, name, "")
	}
	for now := epoch; q.Len() > 0; now, _ = q.NextDeadline() {
		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			fmt.Printf("+%v taint %s\n", now.Sub(epoch), it.Key)
			return true, 0
		})
	}
	// Output:
	// +0s taint node-a
	// +1s taint node-b
	// +2s taint node-c
}

// ExampleQueue_Remove: a key reported done stays known, so the next outage
// of the same node would be refused by Add. Remove the key when the node is
// healthy again (the work no longer applies); then a new outage queues it
// afresh.
func ExampleQueue_Remove() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, _ := evictionqueue.New[string](epoch, evictionqueue.Config{QPS: 1, Burst: 1})
	taint := func(it evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }

	q.Add(epoch, "node-1", "uid-1") // first outage
	q.Try(epoch, taint)
	fmt.Println("tainted:", q.State("node-1"))
	fmt.Println("second Add without Remove:", q.Add(epoch.Add(time.Minute), "node-1", "uid-1"))

	q.Remove("node-1") // the node recovered: untainted, forget it
	fmt.Println("after Remove:", q.State("node-1"))
	fmt.Println("next outage Add:", q.Add(epoch.Add(time.Hour), "node-1", "uid-1"), q.State("node-1"))
	// Output:
	// tainted: done
	// second Add without Remove: false
	// after Remove: absent
	// next outage Add: true pending
}
