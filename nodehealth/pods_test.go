package nodehealth

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// MarkPodsNotReady (pkg/controller/util/node) for one pod.
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

func TestDisruptionTargetStatus(t *testing.T) {
	now := sec(100)
	earlier := metav1.NewTime(sec(-30))
	want := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint",
		LastTransitionTime: metav1.NewTime(now)}
	pod := func(conds ...v1.PodCondition) *v1.Pod {
		p := testutil.Pod("ns", "p", "n1")
		p.Generation = 3
		p.Status.Conditions = append([]v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}, conds...)
		return p
	}
	with := func(f func(*v1.PodCondition)) v1.PodCondition {
		c := want
		c.LastTransitionTime = earlier
		f(&c)
		return c
	}
	keepTime := func(c v1.PodCondition) v1.PodCondition { c.LastTransitionTime = earlier; return c }
	tests := []struct {
		name   string
		pod    *v1.Pod
		wantOK bool
		want   v1.PodCondition // at index 1
	}{
		{"nil pod", nil, false, v1.PodCondition{}},
		{"no condition: appended", pod(), true, want},
		{"identical True: nothing to write", pod(with(func(*v1.PodCondition) {})), false, v1.PodCondition{}},
		{"False: flipped, new transition time", pod(with(func(c *v1.PodCondition) { c.Status = v1.ConditionFalse })), true, want},
		{"True, other reason: transition time kept", pod(with(func(c *v1.PodCondition) { c.Reason = "EvictionByEvictionAPI" })), true, keepTime(want)},
		{"True, older generation", pod(with(func(c *v1.PodCondition) { c.ObservedGeneration = 2 })), true, keepTime(want)},
		{"True, probe time set", pod(with(func(c *v1.PodCondition) { c.LastProbeTime = earlier })), true, keepTime(want)},
	}
	for _, tt := range tests {
		before := tt.pod.DeepCopy()
		got, ok := DisruptionTargetStatus(now, tt.pod)
		if ok != tt.wantOK || (got != nil) != ok {
			t.Errorf("%s: DisruptionTargetStatus() = %v, %v; want ok %v", tt.name, got, ok, tt.wantOK)
			continue
		}
		if !apiequality.Semantic.DeepEqual(tt.pod, before) {
			t.Errorf("%s: DisruptionTargetStatus modified its pod", tt.name)
		}
		if !ok {
			continue
		}
		if len(got.Conditions) != 2 || !apiequality.Semantic.DeepEqual(got.Conditions[1], tt.want) ||
			!apiequality.Semantic.DeepEqual(got.Conditions[0], tt.pod.Status.Conditions[0]) {
			t.Errorf("%s: DisruptionTargetStatus().Conditions =\n%+v\nwant [Ready, %+v]", tt.name, got.Conditions, tt.want)
		}
	}
}
