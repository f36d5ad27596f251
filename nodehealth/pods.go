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

// The DisruptionTarget condition upstream's taint eviction controller writes
// before it deletes a pod (pkg/controller/tainteviction/taint_eviction.go,
// addConditionAndDeletePod, v1.37.2).
const (
	disruptionTargetReason  = "DeletionByTaintManager"
	disruptionTargetMessage = "Taint manager: deleting due to NoExecute taint"
)

// DisruptionTargetStatus computes the status upstream's taint eviction
// controller writes before deleting a pod for a NoExecute taint
// (pkg/controller/tainteviction/taint_eviction.go, addConditionAndDeletePod,
// v1.37.2): a deep copy of the pod's status with a DisruptionTarget
// condition, status True, reason DeletionByTaintManager, message "Taint
// manager: deleting due to NoExecute taint" and ObservedGeneration the pod's
// metadata.generation. The condition is appended when the pod has none, or
// replaces the first one (as upstream UpdatePodCondition); its
// LastTransitionTime is now, or the existing one's when that was True
// already.
//
// It returns false (and nil) when there is nothing to write: a nil pod, or
// a pod whose first DisruptionTarget condition is already exactly that
// (True, same reason, message, ObservedGeneration, and no LastProbeTime).
// The caller patches the returned status (upstream: PatchPodStatus), then
// deletes the pod; on a NotFound the pod is gone. The pod is never
// modified.
func DisruptionTargetStatus(now time.Time, pod *v1.Pod) (*v1.PodStatus, bool) {
	if pod == nil {
		return nil, false
	}
	want := v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		ObservedGeneration: pod.Generation,
		Reason:             disruptionTargetReason,
		Message:            disruptionTargetMessage,
		LastTransitionTime: metav1.NewTime(now),
	}
	i := -1
	for j := range pod.Status.Conditions {
		if pod.Status.Conditions[j].Type == v1.DisruptionTarget {
			i = j
			break
		}
	}
	if i >= 0 {
		old := &pod.Status.Conditions[i]
		if old.Status == want.Status {
			want.LastTransitionTime = old.LastTransitionTime
			if old.Reason == want.Reason && old.Message == want.Message &&
				old.ObservedGeneration == want.ObservedGeneration && old.LastProbeTime.IsZero() {
				return nil, false
			}
		}
	}
	st := pod.Status.DeepCopy()
	if i < 0 {
		st.Conditions = append(st.Conditions, want)
	} else {
		st.Conditions[i] = want
	}
	return st, true
}
