package monitor

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// PodChanged forwards a pod add or update: the Evictor learns its node and
// tolerations (taint-based mode), and a pod bound to a node that is not
// ready is marked Ready=False at once (upstream processPod).
func (m *Monitor) PodChanged(ctx context.Context, now time.Time, pod *v1.Pod) {
	if pod == nil {
		return
	}
	if m.mode.feedsEvictor() {
		m.evictor.SetPod(now, pod)
		m.reportCancelled(now)
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

// PodDeleted forwards a pod deletion. A scheduled eviction it cancels is
// reported (Config.CancelledEvictions) by the next NodeChanged, PodChanged
// or EvictionPass.
func (m *Monitor) PodDeleted(key types.NamespacedName) {
	m.evictor.DeletePod(key)
}

// ReservePods tells the Monitor that about n pods are about to be
// forwarded (an informer's initial list): the Evictor makes room for them
// at once instead of growing step by step (taints.Evictor.Reserve). It
// decides nothing.
func (m *Monitor) ReservePods(n int) {
	if m.mode.feedsEvictor() {
		m.evictor.Reserve(n)
	}
}

// markPodsNotReady is upstream MarkPodsNotReady for one node. It reports
// whether every pod was handled, so the edge can be acknowledged.
func (m *Monitor) markPodsNotReady(ctx context.Context, now time.Time, node string) bool {
	ok, marked := true, 0
	for _, pod := range m.cluster.ListPodsOnNode(node) {
		if pod.Spec.NodeName != node {
			continue
		}
		st, change := nodehealth.PodNotReadyStatus(now, pod)
		if !change {
			continue
		}
		if err := m.cluster.UpdatePodStatus(ctx, pod, st); err != nil && !apierrors.IsNotFound(err) {
			m.emit(now, KindWriteFailed, node, pod.Namespace+"/"+pod.Name, "pod Ready=False: "+err.Error())
			ok = false
			continue
		}
		marked++
	}
	if marked > 0 {
		m.emit(now, KindPodsNotReady, node, "", fmt.Sprintf("%d pods marked Ready=False", marked))
	}
	return ok
}
