package taints

import (
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// devQueue orders the DeviceEvictor's scheduled evictions by fire time, one
// heap element per pod (internal/heap). Fire times come in two kinds that
// Go orders differently after a wall-clock step: those derived from a
// taint's TimeAdded (wall clock only, as the API gives them) and those
// derived from the caller's now with Add (a Retry's delay: they keep now's
// monotonic reading). Each kind has its own lane, a heap in which every
// comparison reads the same clock; peek picks between the two heads by
// their distance from the latest now, as fireQueue does for the node
// Evictor. Ties are handed out in the order the pods were scheduled (seq).
//
// add, remove and fix are O(log n), peek O(1). Not safe for concurrent
// use; the DeviceEvictor's mutex guards it.
type devQueue struct {
	lanes [2]*heap.Heap[*devPod]
}

// devPodLess orders by fire time, then by namespace and name, so that
// the order of ties never depends on the order of (map) iteration that
// scheduled them.
func devPodLess(a, b **devPod) bool {
	x, y := (*a).ev, (*b).ev
	if !x.at.Equal(y.at) {
		return x.at.Before(y.at)
	}
	if c := strings.Compare((*a).key.Namespace, (*b).key.Namespace); c != 0 {
		return c < 0
	}
	return (*a).key.Name < (*b).key.Name
}

func newDevQueue() devQueue {
	return devQueue{lanes: [2]*heap.Heap[*devPod]{heap.New(devPodLess), heap.New(devPodLess)}}
}

func (q *devQueue) len() int { return q.lanes[0].Len() + q.lanes[1].Len() }

// add queues p (with p.ev set, not queued) at p.ev.at.
func (q *devQueue) add(p *devPod) {
	p.ev.lane = laneOf(p.ev.at)
	p.ev.elem.Value = p
	q.lanes[p.ev.lane].PushElem(&p.ev.elem)
}

// remove takes p out of the queue (a no-op when it is not queued).
func (q *devQueue) remove(p *devPod) {
	if p.ev == nil || !p.ev.elem.InHeap() {
		return
	}
	q.lanes[p.ev.lane].Remove(&p.ev.elem)
}

// peek returns the earliest queued pod, or nil; between the two lanes'
// heads the one closer to ref (the latest now) wins.
func (q *devQueue) peek(ref time.Time) *devPod {
	var m, w *devPod
	if e := q.lanes[laneMono].Peek(); e != nil {
		m = e.Value
	}
	if e := q.lanes[laneWall].Peek(); e != nil {
		w = e.Value
	}
	switch {
	case m == nil:
		return w
	case w == nil:
		return m
	case w.ev.at.Sub(ref) < m.ev.at.Sub(ref):
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
