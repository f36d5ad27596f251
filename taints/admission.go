package taints

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultTolerationTime is the kube-apiserver default for
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds: 300 seconds.
const DefaultTolerationTime = 300 * time.Second

// DefaultTolerationSeconds is DefaultTolerationTime under its first name.
//
// Deprecated: use DefaultTolerationTime; a time.Duration's name does not
// carry a unit. Kept for compatibility; to be removed in v1.0.0.
//
//lint:ignore ST1011 the deprecated name is kept as it was released.
const DefaultTolerationSeconds = DefaultTolerationTime

// WithDefaultTolerations returns a copy of tol with the DefaultTolerationSeconds
// admission plugin's tolerations appended (upstream
// plugin/pkg/admission/defaulttolerationseconds/admission.go, Admit): when the pod does not
// already tolerate node.kubernetes.io/not-ready, {Key: not-ready, Operator:
// Exists, Effect: NoExecute, TolerationSeconds: notReady}, then the same for
// node.kubernetes.io/unreachable with unreachable. Not-ready comes first.
//
// "Already tolerates" is the plugin's loose rule, not ToleratesTaint: some
// toleration has key == the taint key or an empty key, and effect NoExecute
// or an empty effect; operator, value and TolerationSeconds are not looked at
// (an Equal toleration with a value that can never match still counts).
//
// The durations are truncated to whole seconds (the flags are integers);
// negative ones give negative seconds, which the Evictor treats as 0 (evict
// at once). The result never aliases tol: every element, including its
// TolerationSeconds, is a copy. A nil or empty tol gets both defaults.
func WithDefaultTolerations(tol []v1.Toleration, notReady, unreachable time.Duration) []v1.Toleration {
	needNotReady := !looselyTolerates(tol, v1.TaintNodeNotReady)
	needUnreachable := !looselyTolerates(tol, v1.TaintNodeUnreachable)
	n := len(tol)
	if needNotReady {
		n++
	}
	if needUnreachable {
		n++
	}
	out := make([]v1.Toleration, 0, n)
	for i := range tol {
		out = append(out, *tol[i].DeepCopy())
	}
	if needNotReady {
		out = append(out, defaultToleration(v1.TaintNodeNotReady, notReady))
	}
	if needUnreachable {
		out = append(out, defaultToleration(v1.TaintNodeUnreachable, unreachable))
	}
	return out
}

// looselyTolerates is the admission plugin's "already tolerates" test.
func looselyTolerates(tol []v1.Toleration, key string) bool {
	for i := range tol {
		t := &tol[i]
		if (t.Key == key || t.Key == "") && (t.Effect == v1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}

func defaultToleration(key string, d time.Duration) v1.Toleration {
	s := int64(d / time.Second)
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s}
}

// DisruptionTargetReason and DisruptionTargetMessage are the reason and
// message of the DisruptionTarget pod condition the taint eviction
// controller writes before deleting a pod.
const (
	DisruptionTargetReason  = "DeletionByTaintManager"
	DisruptionTargetMessage = "Taint manager: deleting due to NoExecute taint"
)

// DisruptionTargetCondition returns the pod condition to set (status patch)
// before deleting a pod for a NoExecute taint (upstream
// pkg/controller/tainteviction/taint_eviction.go, addConditionAndDeletePod): type
// DisruptionTarget, status True, reason DeletionByTaintManager, message
// "Taint manager: deleting due to NoExecute taint", LastTransitionTime now.
// Upstream patches only when the pod's condition differs in status, reason
// or message.
func DisruptionTargetCondition(now time.Time) v1.PodCondition {
	return v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             DisruptionTargetReason,
		Message:            DisruptionTargetMessage,
		LastTransitionTime: metav1.NewTime(now),
	}
}
