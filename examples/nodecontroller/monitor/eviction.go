package monitor

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
)

// EvictionPass deletes the pods whose NoExecute toleration ran out (upstream
// taint eviction controller): DisruptionTarget condition, then delete with a
// UID precondition, on Config.Workers goroutines (upstream: 8). A failed
// deletion is retried after Config.EvictionRetry, never abandoned.
func (m *Monitor) EvictionPass(ctx context.Context, now time.Time) {
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	due := m.evictor.Due(now)
	m.forEach(len(due), func(i int) {
		ev := due[i]
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

// PodChanged forwards a pod add or update: the Evictor learns its node and
// tolerations, and a pod bound to a node that is not ready is marked
// Ready=False at once (upstream processPod).
func (m *Monitor) PodChanged(ctx context.Context, now time.Time, pod *v1.Pod) {
	if pod == nil {
		return
	}
	if !m.legacy() {
		m.evictor.SetPod(now, pod)
	}
	if pod.Spec.NodeName == "" {
		return
	}
	switch m.readyStatus(pod.Spec.NodeName) {
	case v1.ConditionFalse, v1.ConditionUnknown:
		if st, ok := nodehealth.PodNotReadyStatus(now, pod); ok {
			if err := m.cluster.UpdatePodStatus(ctx, pod, st); err != nil && !apierrors.IsNotFound(err) {
				m.emit(now, KindWriteFailed, pod.Spec.NodeName, pod.Namespace+"/"+pod.Name, "pod Ready=False: "+err.Error())
			}
		}
	}
}

// PodDeleted forwards a pod deletion.
func (m *Monitor) PodDeleted(key types.NamespacedName) {
	m.evictor.DeletePod(key)
}

// NodeDeleted forwards a node deletion: its health record, queue entry and
// Evictor state are dropped.
func (m *Monitor) NodeDeleted(name string) {
	m.evictor.DeleteNode(name)
	m.health.Forget(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.nodes[name]; ok {
		if q, ok := m.queues[s.zone]; ok {
			q.Remove(name)
		}
		delete(m.nodes, name)
	}
}
