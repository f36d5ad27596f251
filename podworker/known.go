package podworker

import (
	"cmp"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SyncKnownPods reconciles the records with desired, the pods the caller's
// config holds (upstream SyncKnownPods after #113145), and
// returns the remaining records. The first call also switches the queries
// about unknown pods to their "synced" answers (see the queries).
//
// A record whose pod is not desired is an orphan, and a record flagged by
// OutcomeRestartRequested is purged once finished:
//
//   - finished (orphan or restart requested): forgotten, not returned;
//   - restart requested but not finished, still desired: kept;
//   - orphan never started (and not seen in the runtime): forgotten without
//     any step, not returned;
//   - orphan started and not terminating: starts terminating at once with
//     the grace period of its last pod (1 without one);
//   - orphan already terminating: kept; the machine keeps retrying it, with
//     backoff, until it finishes, with no further UpdatePod (the #113145
//     fix: a force-deleted pod whose termination failed no longer stays
//     Terminating).
//
// Unlike upstream, a finished record that is still desired is returned with
// Finished set (#139833), and a finished record whose leftover runtime kill
// has not succeeded yet is kept. Nil pods and pods without a UID in desired
// are skipped, duplicates count once. Changed records are processed in UID
// order, so the resulting step order is deterministic. O(n + m) for n
// records and m desired pods, plus O(k log k) for the k records it changes;
// it allocates the returned map.
func (w *Workers) SyncKnownPods(now time.Time, desired []*v1.Pod) map[types.UID]PodWorkerSync {
	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.advance(now)
	w.synced = true
	w.epoch++
	w.countDesired(desired) // marks the desired records with w.epoch

	out := make(map[types.UID]PodWorkerSync, len(w.pods))
	w.touched = w.touched[:0]
	for uid, r := range w.pods {
		r.orphan = r.syncEpoch != w.epoch
		if r.orphan || r.restartRequested {
			w.touched = append(w.touched, r)
			continue
		}
		out[uid] = r.sync()
	}
	slices.SortFunc(w.touched, func(a, b *record) int { return cmp.Compare(a.uid, b.uid) })
	for _, r := range w.touched {
		if w.removeTerminated(now, r) {
			out[r.uid] = r.sync()
		}
	}
	clear(w.touched)
	w.touched = w.touched[:0]
	return out
}

// removeTerminated applies the SyncKnownPods rules to an orphan or a record
// with a restart requested (upstream removeTerminatedWorker) and reports
// whether the record is kept.
func (w *Workers) removeTerminated(now time.Time, r *record) bool {
	if r.finished {
		if r.purgeable() {
			w.deleteRecord(now, r)
			return false
		}
		return true
	}
	if !r.orphan {
		return true // restart requested: wait until it finishes
	}
	r.deleted = true
	switch {
	case !r.started && !r.observedRuntime && !r.inFlight:
		w.deleteRecord(now, r)
		return false
	case !r.terminating:
		// Started (a record that never started was dropped above).
		r.terminating = true
		var pod *v1.Pod
		if r.hasActive {
			pod = r.active.pod
		}
		g, _ := effectiveGrace(r.grace, pod, nil)
		r.setGrace(g)
		if !r.inFlight {
			if !r.hasPending {
				r.retry = true
			}
			w.schedule(now, r)
		}
	}
	return true
}

func (r *record) sync() PodWorkerSync {
	hasConfig, static := r.config()
	return PodWorkerSync{State: r.workType(), Orphan: r.orphan, HasConfig: hasConfig, Static: static, Finished: r.finished}
}

// desiredCounts describes the desired set of the last SyncKnownPods.
type desiredCounts struct {
	desired, desiredStatic int
	active, activeStatic   int
}

// missingPod is a desired pod without a record after SyncKnownPods: a
// TypeCreate for it, if active, is a restart (UID reuse).
type missingPod struct{ static, active bool }

// countDesired marks every desired record with the current epoch, and fills
// w.desired and w.missing as they will be once SyncKnownPods has purged the
// finished records whose restart was requested.
func (w *Workers) countDesired(desired []*v1.Pod) {
	var c desiredCounts
	clear(w.missing)
	for _, p := range desired {
		if p == nil || p.UID == "" {
			continue
		}
		r := w.pods[p.UID]
		if r != nil {
			if r.syncEpoch == w.epoch {
				continue // duplicate
			}
			r.syncEpoch = w.epoch
			if r.restartRequested && r.purgeable() {
				r = nil // about to be purged
			}
		} else if _, dup := w.missing[p.UID]; dup {
			continue
		}
		static := IsStaticPod(p)
		// Upstream filterOutInactivePods: known terminated, or terminal
		// while not actively terminating, is inactive.
		active := (r == nil || !r.terminated) && !(terminalPhase(p) && (r == nil || !r.terminating))
		c.desired++
		if static {
			c.desiredStatic++
		}
		if active {
			c.active++
			if static {
				c.activeStatic++
			}
		}
		if r == nil {
			w.missing[p.UID] = missingPod{static: static, active: active}
		}
	}
	w.desired = c
}
