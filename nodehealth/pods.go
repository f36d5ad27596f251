package nodehealth

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodNotReadyStatus computes upstream's MarkPodsNotReady for one pod: a deep
// copy of the pod's status with its Ready condition set to False, Reason and
// Message kept, and LastTransitionTime = now. It returns false (and nil) when
// there is nothing to write: a nil pod, a pod without a Ready condition, or
// one already False. With duplicate Ready conditions only the first is
// changed, as upstream. Terminal pods are not skipped (upstream parity).
//
// The caller selects the pods (those whose spec.nodeName is the node, from
// its pod informer's index), writes each returned status with UpdateStatus
// (NotFound meaning the pod is gone), and calls Tracker.AckPodsNotReady once
// every pod of the node is done. The pod is never modified.
func PodNotReadyStatus(now time.Time, pod *v1.Pod) (*v1.PodStatus, bool) {
	if pod == nil {
		return nil, false
	}
	i := -1
	for j := range pod.Status.Conditions {
		if pod.Status.Conditions[j].Type == v1.PodReady {
			i = j
			break
		}
	}
	if i < 0 || pod.Status.Conditions[i].Status == v1.ConditionFalse {
		return nil, false
	}
	st := pod.Status.DeepCopy()
	c := &st.Conditions[i]
	c.Status = v1.ConditionFalse
	c.LastTransitionTime = metav1.NewTime(now)
	return st, true
}
