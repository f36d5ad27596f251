package taints

import (
	"time"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// fireQueue orders scheduled evictions by fire time. Evictions with the same
// fire time (typically every pod of a node tainted at one instant, with the
// same toleration) share a bucket: an indexed min-heap (internal/heap) holds
// one element per distinct fire time, and each bucket is a FIFO list of its
// pods. Ties are therefore handed out in the order the evictions got their
// current fire time, and draining k due evictions from b buckets costs
// O(b log B + k) instead of O(k log n).
//
// Fire times are kept as the caller's instants (derived from its now with
// Add), never stripped of their monotonic reading. Go compares two instants
// by their monotonic readings when both have one and by their wall clocks
// otherwise, and the two orders disagree after a wall-clock step, so the
// queue has two lanes: one for fire times with a monotonic reading (derived
// from a real clock's now) and one for those without (a fake clock's, or a
// taint's TimeAdded). Within a lane every comparison uses the same reading,
// so the heap's order is consistent; due-ness is decided per lane with
// !at.After(now). A bucket is found by its offset from the lane's base
// instant (at.Sub(base), again monotonic in the monotonic lane), the base
// being the first fire time queued in the lane since it was last empty.
//
// Complexity: add O(log B) (O(1) when the bucket exists), remove O(1)
// (O(log B) when it empties the bucket), peek O(1); B ≤ n is the number of
// distinct fire times. A fireQueue is not safe for concurrent use; the
// Evictor's mutex guards it.
type fireQueue struct {
	lanes [2]lane   // laneMono, laneWall
	free  []*bucket // emptied buckets kept for reuse, so steady churn allocates nothing
	n     int       // scheduled evictions
	drain []*bucket // scratch for Due: the due buckets, in order
}

const (
	laneMono = 0 // fire times with a monotonic reading
	laneWall = 1 // fire times without one
)

// lane is the heap and index of the buckets of one kind of instant.
type lane struct {
	heap    *heap.Heap[*bucket]
	buckets map[time.Duration]*bucket // by at.Sub(base)
	base    time.Time
}

// bucket is every scheduled eviction with one fire time, in FIFO order.
type bucket struct {
	lane       uint8
	key        time.Duration // at.Sub(lane base)
	at         time.Time     // the fire time, as the caller's clock gave it
	head, tail *podRec
	n          int // evictions in the bucket
	elem       heap.Elem[*bucket]
}

// maxFreeBuckets bounds the free list.
const maxFreeBuckets = 1024

// hasMonotonic reports whether t carries a monotonic clock reading: Round(0)
// strips the reading and changes nothing else, so the two values differ
// exactly when t has one. This compares representations on purpose; instants
// are compared with Before, After and Equal everywhere else.
func hasMonotonic(t time.Time) bool { return t != t.Round(0) }

// laneOf returns the lane for fire time t.
func laneOf(t time.Time) uint8 {
	if hasMonotonic(t) {
		return laneMono
	}
	return laneWall
}

// sameInstant reports whether a and b are the same fire time: the same lane
// and Equal (monotonic readings in the monotonic lane).
func sameInstant(a, b time.Time) bool { return laneOf(a) == laneOf(b) && a.Equal(b) }

func bucketLess(a, b **bucket) bool { return (*a).at.Before((*b).at) }

func newFireQueue() *fireQueue {
	q := &fireQueue{}
	for i := range q.lanes {
		q.lanes[i] = lane{heap: heap.New(bucketLess), buckets: make(map[time.Duration]*bucket)}
	}
	return q
}

// len returns the number of scheduled evictions. O(1).
func (q *fireQueue) len() int { return q.n }

// add appends rec (not queued) to the bucket of fire time at.
//
// Offsets in the monotonic lane are exact (monotonic readings are int64
// nanoseconds since the process started). In the wall lane they saturate
// about 292 years from the base, so two fire times that far out (a hostile
// TimeAdded, a TolerationSeconds of centuries) can share a bucket; the
// bucket then keeps the later fire time, so nothing is handed out early,
// and each eviction keeps its own At.
func (q *fireQueue) add(rec *podRec, at time.Time) {
	li := laneOf(at)
	l := &q.lanes[li]
	if len(l.buckets) == 0 {
		l.base = at
	}
	k := at.Sub(l.base)
	b := l.buckets[k]
	if b == nil {
		if n := len(q.free); n > 0 {
			b = q.free[n-1]
			q.free[n-1] = nil
			q.free = q.free[:n-1]
		} else {
			b = &bucket{}
			b.elem.Value = b
		}
		b.lane, b.key, b.at = li, k, at
		l.buckets[k] = b
		l.heap.PushElem(&b.elem)
	} else if at.After(b.at) { // a saturated offset: see above
		b.at = at
		l.heap.Fix(&b.elem)
	}
	rec.bkt, rec.prev, rec.next = b, b.tail, nil
	if b.tail != nil {
		b.tail.next = rec
	} else {
		b.head = rec
	}
	b.tail = rec
	b.n++
	q.n++
}

// remove takes rec out of its bucket; a no-op when rec is not queued.
func (q *fireQueue) remove(rec *podRec) {
	b := rec.bkt
	if b == nil {
		return
	}
	if rec.prev != nil {
		rec.prev.next = rec.next
	} else {
		b.head = rec.next
	}
	if rec.next != nil {
		rec.next.prev = rec.prev
	} else {
		b.tail = rec.prev
	}
	rec.bkt, rec.prev, rec.next = nil, nil, nil
	b.n--
	q.n--
	if b.head == nil {
		q.drop(b)
	}
}

// drop forgets an empty bucket.
func (q *fireQueue) drop(b *bucket) {
	q.unindex(b)
	q.recycle(b)
}

// unindex takes b out of its lane's heap and map.
func (q *fireQueue) unindex(b *bucket) {
	l := &q.lanes[b.lane]
	l.heap.Remove(&b.elem)
	delete(l.buckets, b.key)
}

// recycle clears b and keeps it on the free list (up to maxFreeBuckets).
func (q *fireQueue) recycle(b *bucket) {
	b.head, b.tail, b.at, b.n = nil, nil, time.Time{}, 0
	if len(q.free) < maxFreeBuckets {
		q.free = append(q.free, b)
	}
}

// peek returns the earliest bucket, or nil. Between the heads of the two
// lanes it picks the one closer to ref (the Evictor's latest now), each
// measured with Sub on its own reading, so that the choice follows the
// caller's clock whatever the wall clock did. O(1).
func (q *fireQueue) peek(ref time.Time) *bucket {
	var m, w *bucket
	if top := q.lanes[laneMono].heap.Peek(); top != nil {
		m = top.Value
	}
	if top := q.lanes[laneWall].heap.Peek(); top != nil {
		w = top.Value
	}
	switch {
	case m == nil:
		return w
	case w == nil:
		return m
	case w.at.Sub(ref) < m.at.Sub(ref):
		return w
	}
	return m
}

// popDue removes every bucket whose fire time is not after now into q.drain
// (reused), in fire-time order, and returns them with the number of
// evictions they hold. When both lanes have a due head, the one further
// past now goes first (peek, with now as the reference: the earliest head
// is due exactly when some head is, since After and Sub read the same
// clock for the same pair of instants). The
// caller takes each bucket's list (linked by next, in order, unlinked with
// detached) and then calls release.
func (q *fireQueue) popDue(now time.Time) ([]*bucket, int) {
	total := 0
	q.drain = q.drain[:0]
	for {
		b := q.peek(now)
		if b == nil || b.at.After(now) {
			return q.drain, total
		}
		q.unindex(b)
		for r := b.head; r != nil; r = r.next {
			r.bkt = nil
		}
		q.n -= b.n
		total += b.n
		q.drain = append(q.drain, b)
	}
}

// release returns the buckets of the last popDue to the free list.
func (q *fireQueue) release() {
	for i, b := range q.drain {
		q.recycle(b)
		q.drain[i] = nil
	}
	q.drain = q.drain[:0]
}

// detached clears r's list links and returns the next eviction of a list
// returned by popDue.
func detached(r *podRec) *podRec {
	next := r.next
	r.prev, r.next = nil, nil
	return next
}

// each calls fn for every queued eviction (tests).
func (q *fireQueue) each(fn func(*bucket, *podRec)) {
	for i := range q.lanes {
		q.lanes[i].heap.Each(func(e *heap.Elem[*bucket]) {
			for r := e.Value.head; r != nil; r = r.next {
				fn(e.Value, r)
			}
		})
	}
}
