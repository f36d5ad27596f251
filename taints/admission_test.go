package taints

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

func TestWithDefaultTolerations(t *testing.T) {
	const def = "Exists node.kubernetes.io/not-ready:NoExecute/300 Exists node.kubernetes.io/unreachable:NoExecute/300"
	tests := []struct {
		name string
		tol  []v1.Toleration
		want string
	}{
		{"nil gets both, not-ready first", nil, def},
		{"unrelated kept first", []v1.Toleration{{Key: "x", Operator: v1.TolerationOpExists}},
			"Exists x:* " + def},
		{"not-ready present: only unreachable added", []v1.Toleration{tolFor(notReady, 60)},
			"Exists node.kubernetes.io/not-ready:NoExecute/60 Exists node.kubernetes.io/unreachable:NoExecute/300"},
		{"unreachable forever present", []v1.Toleration{tolForever(unreachable)},
			"Exists node.kubernetes.io/unreachable:NoExecute Exists node.kubernetes.io/not-ready:NoExecute/300"},
		{"empty key and effect tolerates both", []v1.Toleration{{Operator: v1.TolerationOpExists}}, "Exists *:*"},
		{"empty key NoExecute tolerates both", []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, "Exists *:NoExecute"},
		{"empty key NoSchedule does not", []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, "Exists *:NoSchedule " + def},
		{"loose rule: Equal with an impossible value counts", []v1.Toleration{{Key: notReady, Operator: v1.TolerationOpEqual, Value: "nope", Effect: v1.TaintEffectNoExecute}},
			"Equal node.kubernetes.io/not-ready=nope:NoExecute Exists node.kubernetes.io/unreachable:NoExecute/300"},
		{"key with empty effect counts", []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists}},
			"Exists node.kubernetes.io/unreachable:* Exists node.kubernetes.io/not-ready:NoExecute/300"},
	}
	for _, tt := range tests {
		before := renderTols(tt.tol)
		got := WithDefaultTolerations(tt.tol, DefaultTolerationTime, 300*time.Second)
		if r := renderTols(got); r != tt.want {
			t.Errorf("%s: WithDefaultTolerations(%s) = %q, want %q", tt.name, before, r, tt.want)
		}
		if renderTols(tt.tol) != before {
			t.Errorf("%s: input modified", tt.name)
		}
		for i := range tt.tol {
			if tt.tol[i].TolerationSeconds != nil && got[i].TolerationSeconds == tt.tol[i].TolerationSeconds {
				t.Errorf("%s: result shares TolerationSeconds with the input", tt.name)
			}
		}
		if len(tt.tol) > 0 && &got[0] == &tt.tol[0] {
			t.Errorf("%s: result aliases the input", tt.name)
		}
	}
	got := WithDefaultTolerations(nil, 90*time.Second+999*time.Millisecond, -time.Second)
	if r := renderTols(got); r != "Exists node.kubernetes.io/not-ready:NoExecute/90 Exists node.kubernetes.io/unreachable:NoExecute/-1" {
		t.Errorf("WithDefaultTolerations(nil, 90.999s, -1s) = %q", r)
	}
}

func TestDisruptionTargetCondition(t *testing.T) {
	now := testutil.At(5 * time.Minute)
	c := DisruptionTargetCondition(now)
	if c.Type != v1.DisruptionTarget || c.Status != v1.ConditionTrue || c.Reason != "DeletionByTaintManager" ||
		c.Message != "Taint manager: deleting due to NoExecute taint" || !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("DisruptionTargetCondition(+5m) = %+v", c)
	}
}

// TestDefaultTolerationSecondsDeprecated: the deprecated first name keeps
// working with the same value.
func TestDefaultTolerationSecondsDeprecated(t *testing.T) {
	if DefaultTolerationSeconds != DefaultTolerationTime || DefaultTolerationTime != 300*time.Second {
		t.Fatalf("DefaultTolerationSeconds = %v, DefaultTolerationTime = %v, want both 5m0s", DefaultTolerationSeconds, DefaultTolerationTime)
	}
}
