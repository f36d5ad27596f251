// Package evictionqueue is a rate-limited timed queue of unique keys: the
// caller-driven form of RateLimitedTimedQueue from the Kubernetes node
// lifecycle controller, read at v1.37.2 (its logic is unchanged since about
// 2018) in pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go.
// Upstream keeps one queue per zone and drains it every 100ms
// to add NoExecute taints to unhealthy nodes at --node-eviction-rate (0.1
// per second, burst 1), changing the rate when the zone's state changes.
//
// # Model
//
// A Queue holds keys (node names, usually). Add queues a key, due at once.
// Try hands due items, in order, to a callback while the token bucket
// allows, one token per attempt; the callback does the work (writes the
// taint) and reports whether it is done or should be retried after a delay.
// A key is accepted once per Add/Remove cycle: a done key is remembered, and
// Add refuses it, until Remove forgets it. Order is ProcessAt, then AddedAt,
// then insertion.
//
// States of one key:
//
//	state      event                                    next state
//	---------  ---------------------------------------  ----------------------------------
//	absent     Add(now, key)                            pending, due at now
//	pending    Try: due, and the bucket has a token     in flight (fn runs)
//	in flight  fn returns done                          done
//	in flight  fn returns not done (or panics)          pending, due at now + retryAfter
//	in flight  Remove(key) or Clear() while fn runs     absent (the outcome is dropped)
//	pending    Remove(key) or Clear()                   absent
//	done       Remove(key) or Clear()                   absent
//	any known  Add(now, key)                            unchanged; Add reports false
//
// Queue.State reports the state of a key; Contains reports whether it is
// known (not absent); Len and Items cover the pending items only.
//
// # Caller loop
//
// A controller feeds the queue from its handlers and drains it from one
// worker:
//
//	q, err := evictionqueue.New[string](clock.Now(), evictionqueue.DefaultConfig())
//	// node became unhealthy:      q.Add(clock.Now(), node.Name, node.UID)
//	//   (a pass over lister.List() sees map order: sort by name first
//	//   for a reproducible order; ties are attempted in Add order)
//	// node healthy or deleted:    q.Remove(node.Name)
//	//   (required: a done key is refused by Add until it is Removed)
//	// zone decision changed rate: err = q.SetRate(clock.Now(), zone.QPS)
//	for {
//		q.Try(clock.Now(), func(it evictionqueue.Item[string]) (bool, time.Duration) {
//			if err := taint(ctx, it.Key, it.UID); err != nil {
//				return false, retryDelay // not lost: retried at now + retryDelay
//			}
//			return true, 0
//		})
//		if d, ok := q.NextDeadline(); ok {
//			sleep until d, or until an Add/Remove/SetRate wakes the worker
//		} else {
//			sleep until woken (nothing pending, or the queue is stopped)
//		}
//	}
//
// Polling Try every 100ms, as upstream does, works too.
//
// # Time
//
// The queue never reads a clock: Add, Try and SetRate take now, and
// NextDeadline needs none because tokens accrue linearly. The queue keeps the
// latest now it has been given; an earlier now is treated as that instant
// (time going backwards is no time elapsed), so the token bucket never sees
// time go backwards. A bare rate.Limiter does not quite guarantee this: a
// successful AllowN at an earlier time moves its reference point back and
// later credits the same interval twice (with Burst > 1).
//
// The rule: keep the caller's now, measure with Sub and Add. The queue
// stores the now given to New as given, monotonic clock reading included,
// and every later instant as now.Sub(thatNow) in nanoseconds (16 bytes per
// item instead of 48). Go's Sub compares monotonic readings when both
// instants have one, so with a real clock (clock.Now, time.Now) elapsed time
// is measured on the monotonic clock and a wall-clock step (an NTP
// correction, a VM resume) fires nothing early: a retry 300s out stays 300s
// out even if the wall clock jumps 10 minutes ahead. Instants without a
// monotonic reading (a fake or virtual clock, times restored from storage
// or read from the API) are measured on the wall clock, which is all they
// have.
//
// The queue works with any clock, a virtual one starting at the zero
// time.Time included, for about 292 years after New. Times handed to
// callbacks and returned by Items and NextDeadline are New's now plus an
// offset: they carry its location and its monotonic reading (if any), so
// d.Sub(clock.Now()) is again measured on the monotonic clock. They are
// Equal to the instants passed in (when no wall-clock step happened in
// between), except that an instant earlier than the queue's latest (in
// particular, one before New) is replaced by the latest (see above), and an
// instant more than about 292 years after New, or a retry that would land
// there, saturates at New's now plus math.MaxInt64 nanoseconds. Pass New the
// caller's current time, not a placeholder such as time.Time{} when the
// clock is a real one.
//
// # Concurrency
//
// A Queue is safe for concurrent use: one mutex guards it, and the callback
// given to Try runs with the mutex released, so it may call any method of
// the same queue. Concurrent Try calls never hand the same item to two
// callbacks: an item leaves the queue while it is in flight.
//
// # Differences from upstream
//
// The first four fix defects found while reading upstream's code
// (rate_limited_queue.go: TimedQueue.Less, RateLimitedTimedQueue.Try,
// SwapLimiter, UniqueQueue.Remove; no upstream issue exists for them); the
// rest are improvements:
//
//   - Ties on ProcessAt are FIFO. Upstream's heap has no tie-break: four
//     adds at one instant A, B, C, D are processed A, D, C, B.
//   - Try checks that the head is due before it takes a token. Upstream
//     takes the token first and wastes it on a not-yet-due retry, delaying
//     the next due item by up to 1/QPS (10s at the default rate).
//   - SetRate(now, 0) is an explicit stop. Upstream swaps in a limiter that
//     never accepts but reports QPS 1, so a later rate of exactly 1 is taken
//     as unchanged and the zone never evicts again.
//   - Re-entrancy is defined: a callback may Remove and re-Add its own key,
//     and the new item survives. Upstream's done handling deletes the new
//     heap entry while its set keeps the key, so the re-added key is silently
//     treated as done.
//   - A retry is due exactly retryAfter later. Upstream adds 1ns to every
//     retry; here 1ns is added only to a retryAfter <= 0, which is what the
//     nanosecond is for (the same Try never attempts an item twice).
//   - Remove is O(log n) through an indexed heap; upstream scans the heap
//     linearly.
//   - NextDeadline tells the caller when to come back; upstream polls.
//   - SetRate's drain rule is kept (it prevents a burst when a zone leaves
//     full disruption) and generalised to Burst > 1: the new bucket starts
//     with the whole tokens the old one held, which for Burst 1 is exactly
//     upstream's rule. Rates are compared as float64, not float32.
//   - Invalid rates (NaN, infinite, negative) are errors; upstream treats a
//     rate <= 0 as stop.
//
// # Performance
//
// Add, Remove and each attempt of Try are O(log n); Try of a due item
// allocates nothing; a pending item costs about 110-130 bytes of heap (the
// key's own bytes excluded; pinned by TestMemoryPerItem), and a done key
// keeps its record (about the same) until Remove. Upstream's Remove scans
// its heap linearly. Benchmarks are in bench_test.go (go test -bench .
// -benchmem); the project README records their figures.
package evictionqueue
