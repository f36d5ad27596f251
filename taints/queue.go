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
// Complexity: add O(log B) (O(1) when the bucket exists), remove O(1)
// (O(log B) when it empties the bucket), peek O(1); B ≤ n is the number of
// distinct fire times. A fireQueue is not safe for concurrent use; the
// Evictor's mutex guards it.
type fireQueue struct {
	heap    *heap.Heap[*bucket]
	buckets map[bucketKey]*bucket
	free    []*bucket // emptied buckets kept for reuse, so steady churn allocates nothing
	n       int       // scheduled evictions
}

// bucketKey identifies an instant, whatever the time.Time's location or
// monotonic reading.
type bucketKey struct {
	sec  int64
	nsec int32
}

func keyOf(t time.Time) bucketKey { return bucketKey{sec: t.Unix(), nsec: int32(t.Nanosecond())} }

func (k bucketKey) less(o bucketKey) bool {
	return k.sec < o.sec || (k.sec == o.sec && k.nsec < o.nsec)
}

// bucket is every scheduled eviction with one fire time, in FIFO order.
type bucket struct {
	key        bucketKey
	at         time.Time // the fire time, without monotonic reading
	head, tail *podRec
	n          int // evictions in the bucket
	elem       heap.Elem[*bucket]
}

// maxFreeBuckets bounds the free list.
const maxFreeBuckets = 1024

func newFireQueue() *fireQueue {
	return &fireQueue{
		heap:    heap.New(func(a, b **bucket) bool { return (*a).key.less((*b).key) }),
		buckets: make(map[bucketKey]*bucket),
	}
}

// len returns the number of scheduled evictions. O(1).
func (q *fireQueue) len() int { return q.n }

// add appends rec (not queued) to the bucket of rec.at.
func (q *fireQueue) add(rec *podRec) {
	k := keyOf(rec.at)
	b := q.buckets[k]
	if b == nil {
		if n := len(q.free); n > 0 {
			b = q.free[n-1]
			q.free[n-1] = nil
			q.free = q.free[:n-1]
		} else {
			b = &bucket{}
			b.elem.Value = b
		}
		b.key, b.at = k, rec.at.Round(0)
		q.buckets[k] = b
		q.heap.PushElem(&b.elem)
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

// drop forgets an empty (or drained) bucket.
func (q *fireQueue) drop(b *bucket) {
	q.heap.Remove(&b.elem)
	delete(q.buckets, b.key)
	b.head, b.tail, b.at, b.n = nil, nil, time.Time{}, 0
	if len(q.free) < maxFreeBuckets {
		q.free = append(q.free, b)
	}
}

// peek returns the earliest bucket, or nil. O(1).
func (q *fireQueue) peek() *bucket {
	if top := q.heap.Peek(); top != nil {
		return top.Value
	}
	return nil
}

// popBucket removes the earliest bucket and returns its evictions as a list
// linked by next, in order; the caller must unlink each with detached. The
// count of scheduled evictions drops at once.
func (q *fireQueue) popBucket() *podRec {
	b := q.peek()
	if b == nil {
		return nil
	}
	head := b.head
	for r := head; r != nil; r = r.next {
		r.bkt = nil
	}
	q.n -= b.n
	q.drop(b)
	return head
}

// detached clears r's list links and returns the next eviction of a list
// returned by popBucket.
func detached(r *podRec) *podRec {
	next := r.next
	r.prev, r.next = nil, nil
	return next
}

// each calls fn for every queued eviction (tests).
func (q *fireQueue) each(fn func(*bucket, *podRec)) {
	q.heap.Each(func(e *heap.Elem[*bucket]) {
		for r := e.Value.head; r != nil; r = r.next {
			fn(e.Value, r)
		}
	})
}
