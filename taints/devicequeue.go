package taints

import (
	"time"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// devQueue orders the DeviceEvictor's scheduled evictions by fire time.
// Evictions with the same fire time (every pod of the claims a taint hits
// at once) share a bucket: an indexed min-heap (internal/heap) holds one
// element per distinct fire time, each bucket a FIFO list of its pods, so
// draining k due evictions from b buckets costs O(b log B + k), as the
// node Evictor's fireQueue (queue.go). Ties are handed out in the order
// they were scheduled, which is deterministic: claims are re-evaluated in
// the order they were first seen, and a claim's pods in theirs.
//
// Fire times come in two kinds that Go orders differently after a
// wall-clock step: those from a taint's TimeAdded (wall clock only, as the
// API gives them) and those derived from the caller's now with Add (a
// Retry's delay: they keep now's monotonic reading). Each kind has its own
// lane, in which every comparison reads the same clock; peek picks between
// the two heads by their distance from the latest now. A bucket is found by
// its offset from its lane's base instant; in the wall lane offsets
// saturate about 292 years out, and a bucket then keeps the later fire
// time, so nothing is handed out early.
//
// With a blast-radius rate (DeviceBlastRadius.QPS), an eviction due while
// its driver has no token is parked on the driver's waiting list, a
// bucket in no heap (lane laneThrottle): it still counts as queued, and
// remove takes it out as any other.
//
// Not safe for concurrent use; the DeviceEvictor's mutex guards it.
type devQueue struct {
	lanes [2]devLane
	n     int
	free  []*devBucket
}

type devLane struct {
	heap    *heap.Heap[*devBucket]
	buckets map[time.Duration]*devBucket
	base    time.Time
}

type devBucket struct {
	lane       uint8
	key        time.Duration
	at         time.Time
	head, tail *devPod
	elem       heap.Elem[*devBucket]
	drv        *devDriver // the driver of a waiting list (laneThrottle)
}

// laneThrottle marks a driver's waiting list (see devQueue).
const laneThrottle = 2

func devBucketLess(a, b **devBucket) bool { return (*a).at.Before((*b).at) }

func newDevQueue() devQueue {
	var q devQueue
	for i := range q.lanes {
		q.lanes[i] = devLane{heap: heap.New(devBucketLess), buckets: make(map[time.Duration]*devBucket)}
	}
	return q
}

func (q *devQueue) len() int { return q.n }

// add appends p (p.ev set, not queued) to the bucket of p.ev.at. O(1), or
// O(log B) for a new fire time.
func (q *devQueue) add(p *devPod) {
	at := p.ev.at
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
			b = &devBucket{}
			b.elem.Value = b
		}
		b.lane, b.key, b.at = li, k, at
		l.buckets[k] = b
		l.heap.PushElem(&b.elem)
	} else if at.After(b.at) { // a saturated offset
		b.at = at
		l.heap.Fix(&b.elem)
	}
	q.link(p, b)
}

// link appends p to b's list.
func (q *devQueue) link(p *devPod, b *devBucket) {
	p.ev.bkt, p.ev.prev, p.ev.next = b, b.tail, nil
	if b.tail != nil {
		b.tail.ev.next = p
	} else {
		b.head = p
	}
	b.tail = p
	q.n++
}

// park appends p (p.ev set, not queued) to the waiting list b. O(1).
func (q *devQueue) park(p *devPod, b *devBucket) { q.link(p, b) }

// remove takes p out of the queue (a no-op when it is not queued). O(1),
// or O(log B) when its bucket empties.
func (q *devQueue) remove(p *devPod) {
	if p.ev == nil || p.ev.bkt == nil {
		return
	}
	e := p.ev
	b := e.bkt
	if e.prev != nil {
		e.prev.ev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.ev.prev = e.prev
	} else {
		b.tail = e.prev
	}
	e.bkt, e.prev, e.next = nil, nil, nil
	q.n--
	if b.head == nil && b.lane != laneThrottle {
		l := &q.lanes[b.lane]
		l.heap.Remove(&b.elem)
		delete(l.buckets, b.key)
		b.at = time.Time{}
		if len(q.free) < maxFreeBuckets {
			q.free = append(q.free, b)
		}
	}
}

// peek returns the earliest bucket, or nil; between the two lanes' heads
// the one closer to ref (the latest now) wins. O(1).
func (q *devQueue) peek(ref time.Time) *devBucket {
	var m, w *devBucket
	if e := q.lanes[laneMono].heap.Peek(); e != nil {
		m = e.Value
	}
	if e := q.lanes[laneWall].heap.Peek(); e != nil {
		w = e.Value
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

// ruleLess orders rules by their next status check.
func ruleLess(a, b **devRule) bool {
	x, y := *a, *b
	if !x.statusAt.Equal(y.statusAt) {
		return x.statusAt.Before(y.statusAt)
	}
	return x.name < y.name
}
