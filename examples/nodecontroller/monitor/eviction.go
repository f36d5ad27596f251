package monitor

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelifecycle/lifecycle/taints"
)

// EvictionPass deletes the pods whose NoExecute toleration ran out (upstream
// taint eviction controller, pkg/controller/tainteviction): DisruptionTarget
// condition, then delete with a UID precondition, on Config.Workers
// goroutines (upstream: 8). A failed deletion is retried after
// Config.EvictionRetry, never abandoned. In legacy mode the Evictor sees no
// taints and the pass has nothing to do.
//
// Unlike upstream, whose taint eviction controller does not know of full
// disruption, no pod is deleted while the cluster is in full disruption:
// from the zone decision that enters it, a pass deletes nothing (a pass in
// flight stops before its next deletion) and every due eviction is retried
// after Config.EvictionRetry; it is cancelled once its node's health taint
// is removed.
func (m *Monitor) EvictionPass(ctx context.Context, now time.Time) {
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	m.reportCancelled(now)
	if m.evictPaused.Load() {
		return
	}
	due := m.evictor.Due(now)
	if len(due) == 0 {
		return
	}
	m.forEach(len(due), func(i int) {
		ev := due[i]
		if m.evictPaused.Load() {
			m.evictor.RetryEviction(now, ev, m.cfg.EvictionRetry)
			return
		}
		cond := taints.DisruptionTargetCondition(now)
		err := m.cluster.EvictPod(ctx, ev.Pod, ev.UID, &cond)
		switch {
		case err == nil:
			m.evictor.DoneEviction(ev)
			m.emit(now, KindPodEvicted, ev.Node, ev.Pod.String(), fmt.Sprintf("%v (attempt %d)", ev.Reason, ev.Attempt))
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or the UID precondition failed: a new pod
			// with the same name is not the one this decision was for.
			m.evictor.DoneEviction(ev)
		default:
			m.evictor.RetryEviction(now, ev, m.cfg.EvictionRetry)
			m.emit(now, KindWriteFailed, ev.Node, ev.Pod.String(), "pod deletion: "+err.Error())
		}
	})
}

// reportCancelled emits a KindEvictionCancelled Event for each scheduled
// eviction the Evictor cancelled since the last report. With nothing to
// report it allocates nothing.
func (m *Monitor) reportCancelled(now time.Time) {
	if m.cfg.CancelledEvictions == 0 {
		return
	}
	for _, c := range m.evictor.AppendCancelled(nil) {
		m.emit(now, KindEvictionCancelled, c.Node, c.Pod.String(),
			"scheduled deletion cancelled (was due "+c.At.UTC().Format(time.RFC3339)+")")
	}
}
