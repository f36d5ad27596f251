package podworker

import "time"

// Static pods with the same full name never run at the same time (upstream
// allowStaticPodStart): they start one at a time in the order their first
// update arrived, and the next one starts only once the previous one
// finished. Unlike upstream, the waiting list is kept exact (a pod leaves it
// when it starts, is asked to terminate, or is forgotten) and a waiting pod
// does not poll: it is parked, and becomes runnable by itself when its turn
// comes, without another UpdatePod.

// blocked reports whether r is a static pod that may not start yet.
func (w *Workers) blocked(r *record) bool {
	if !r.static || r.started || r.terminating {
		return false
	}
	if holder, ok := w.startedStatic[r.fullname]; ok {
		return holder != r
	}
	q := w.waitingStatic[r.fullname]
	return len(q) > 0 && q[0] != r
}

// takeSlot records r as the running static pod of its full name.
func (w *Workers) takeSlot(now time.Time, r *record) {
	w.startedStatic[r.fullname] = r
	w.removeWaiting(now, r)
}

// releaseSlot frees r's full name if r holds it and wakes the next waiting
// pod.
func (w *Workers) releaseSlot(now time.Time, r *record) {
	if w.startedStatic[r.fullname] == r {
		delete(w.startedStatic, r.fullname)
		w.wake(now, r.fullname)
	}
}

// removeWaiting takes r out of its waiting list, waking the new head when r
// was first in line. O(pods with that full name).
func (w *Workers) removeWaiting(now time.Time, r *record) {
	q := w.waitingStatic[r.fullname]
	for i, x := range q {
		if x != r {
			continue
		}
		copy(q[i:], q[i+1:])
		q[len(q)-1] = nil
		q = q[:len(q)-1]
		if len(q) == 0 {
			delete(w.waitingStatic, r.fullname)
		} else {
			w.waitingStatic[r.fullname] = q
		}
		if i == 0 {
			w.wake(now, r.fullname)
		}
		return
	}
}

// wake makes the first waiting pod of fullname runnable when no pod holds
// the name.
func (w *Workers) wake(now time.Time, fullname string) {
	if _, held := w.startedStatic[fullname]; held {
		return
	}
	q := w.waitingStatic[fullname]
	if len(q) == 0 {
		return
	}
	if head := q[0]; head.parked {
		w.schedule(now, head)
	}
}
