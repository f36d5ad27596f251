package nodehealth

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// b.3: MarkPodsNotReady for one pod.
func TestPodNotReadyStatus(t *testing.T) {
	now := sec(100)
	withReady := func(s v1.ConditionStatus) *v1.Pod {
		p := testutil.Pod("ns", "p", "n1")
		p.Status.Conditions = []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(sec(-50))},
			{Type: v1.PodReady, Status: s, Reason: "R", Message: "M", LastTransitionTime: metav1.NewTime(sec(-10)),
				LastProbeTime: metav1.NewTime(sec(-5))},
		}
		return p
	}
	noReady := testutil.Pod("ns", "p", "n1")
	noReady.Status.Conditions = nil
	dup := withReady(v1.ConditionTrue)
	dup.Status.Conditions = append(dup.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
	terminal := withReady(v1.ConditionTrue)
	terminal.Status.Phase = v1.PodSucceeded

	tests := []struct {
		name   string
		pod    *v1.Pod
		wantOK bool
	}{
		{"nil pod", nil, false},
		{"no Ready condition", noReady, false},
		{"already False", withReady(v1.ConditionFalse), false},
		{"True", withReady(v1.ConditionTrue), true},
		{"Unknown", withReady(v1.ConditionUnknown), true},
		{"duplicate Ready: first only", dup, true},
		{"terminal pods are not skipped", terminal, true},
	}
	for _, tt := range tests {
		before := tt.pod.DeepCopy()
		got, ok := PodNotReadyStatus(now, tt.pod)
		if ok != tt.wantOK || (got != nil) != ok {
			t.Errorf("%s: PodNotReadyStatus() = %v, %v; want ok %v", tt.name, got, ok, tt.wantOK)
			continue
		}
		if !apiequality.Semantic.DeepEqual(tt.pod, before) {
			t.Errorf("%s: PodNotReadyStatus modified its pod", tt.name)
		}
		if !ok {
			continue
		}
		want := tt.pod.Status.DeepCopy()
		want.Conditions[1].Status = v1.ConditionFalse
		want.Conditions[1].LastTransitionTime = metav1.NewTime(now)
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: PodNotReadyStatus() =\n%+v\nwant\n%+v", tt.name, got, want)
		}
		if &got.Conditions[0] == &tt.pod.Status.Conditions[0] {
			t.Errorf("%s: PodNotReadyStatus() shares conditions with the pod", tt.name)
		}
	}
}

func TestPodNotReadyStatusAllocations(t *testing.T) {
	p := testutil.Pod("ns", "p", "n1")
	p.Status.Conditions[0].Status = v1.ConditionFalse
	if n := testing.AllocsPerRun(100, func() { PodNotReadyStatus(sec(0), p) }); n != 0 {
		t.Errorf("PodNotReadyStatus(already False) allocates %v times, want 0", n)
	}
}
