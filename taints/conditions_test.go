package taints

import (
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

// renderTaints renders taints as "key:effect@+Ns" (TimeAdded when set).
func renderTaints(ts []v1.Taint) string {
	var s []string
	for i := range ts {
		x := strings.TrimPrefix(ts[i].ToString(), "node.kubernetes.io/")
		if ts[i].TimeAdded != nil {
			x += "@" + rel(ts[i].TimeAdded.Time)
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func cond(ct v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
	return testutil.NodeCondition(ct, s, testutil.Epoch, testutil.Epoch)
}

func nodeWith(conds []v1.NodeCondition, unschedulable bool, taints ...v1.Taint) *v1.Node {
	n := testutil.Node("n1", testutil.Epoch)
	n.Status.Conditions = conds
	n.Spec.Unschedulable = unschedulable
	return testutil.WithTaints(n, taints...)
}

func TestForConditions(t *testing.T) {
	const T, F, U = v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown
	now := testutil.At(10 * time.Second)
	tests := []struct {
		name        string
		node        *v1.Node
		add, remove string
	}{
		{"nil node", nil, "", ""},
		{"healthy", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T)}, false), "", ""},
		{"ready false", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, F)}, false), "not-ready:NoSchedule@+10s", ""},
		{"ready unknown", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, U)}, false), "unreachable:NoSchedule@+10s", ""},
		{"missing ready: no ready taint", nodeWith(nil, false), "", ""},
		{"missing ready: stale one removed", nodeWith(nil, false, ns(notReady)), "", "not-ready:NoSchedule"},
		{"pressures and network", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T), cond(v1.NodeMemoryPressure, T),
			cond(v1.NodeDiskPressure, T), cond(v1.NodePIDPressure, T), cond(v1.NodeNetworkUnavailable, T)}, false),
			"memory-pressure:NoSchedule@+10s disk-pressure:NoSchedule@+10s pid-pressure:NoSchedule@+10s network-unavailable:NoSchedule@+10s", ""},
		{"pressures false or unknown: none", nodeWith([]v1.NodeCondition{cond(v1.NodeMemoryPressure, F),
			cond(v1.NodeDiskPressure, U), cond(v1.NodePIDPressure, F), cond(v1.NodeNetworkUnavailable, F)}, false), "", ""},
		{"unschedulable", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T)}, true), "unschedulable:NoSchedule@+10s", ""},
		{"all seven wanted order is the table's", nodeWith([]v1.NodeCondition{cond(v1.NodeNetworkUnavailable, T), cond(v1.NodeReady, U),
			cond(v1.NodePIDPressure, T), cond(v1.NodeMemoryPressure, T), cond(v1.NodeDiskPressure, T)}, true),
			"unreachable:NoSchedule@+10s memory-pressure:NoSchedule@+10s disk-pressure:NoSchedule@+10s pid-pressure:NoSchedule@+10s network-unavailable:NoSchedule@+10s unschedulable:NoSchedule@+10s", ""},
		{"flip not-ready to unreachable", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, U)}, false, added(ns(notReady), 0)),
			"unreachable:NoSchedule@+10s", "not-ready:NoSchedule@+0s"},
		{"recovered: removed", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T), cond(v1.NodeDiskPressure, F)}, false,
			ns(unreachable), ns(v1.TaintNodeDiskPressure), ns(v1.TaintNodeUnschedulable)),
			"", "unreachable:NoSchedule disk-pressure:NoSchedule unschedulable:NoSchedule"},
		{"diff ignores value and TimeAdded", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, F)}, false,
			func() v1.Taint { x := added(ns(notReady), -time.Hour); x.Value = "x"; return x }()), "", ""},
		{"foreign, NoExecute and PreferNoSchedule never touched", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T)}, false,
			ne(notReady), ne(unreachable), v1.Taint{Key: unreachable, Effect: v1.TaintEffectPreferNoSchedule},
			ns("example.com/foreign"), v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectPreferNoSchedule}), "", ""},
		{"NoExecute does not count as current", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, F)}, false, ne(notReady)),
			"not-ready:NoSchedule@+10s", ""},
		{"duplicate taints removed once", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, T)}, false,
			added(ns(notReady), 1*time.Second), added(ns(notReady), 2*time.Second)), "", "not-ready:NoSchedule@+1s"},
		{"duplicate taints kept wanted", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, F)}, false, ns(notReady), ns(notReady)), "", ""},
		{"duplicate condition: first wins", nodeWith([]v1.NodeCondition{cond(v1.NodeReady, F), cond(v1.NodeReady, U)}, false),
			"not-ready:NoSchedule@+10s", ""},
		{"unknown condition types ignored", nodeWith([]v1.NodeCondition{{Type: "Custom", Status: T}, cond(v1.NodeReady, T)}, false), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *v1.Node
			if tt.node != nil {
				before = tt.node.DeepCopy()
			}
			add, remove := ForConditions(tt.node, now)
			if got := renderTaints(add); got != tt.add {
				t.Errorf("ForConditions() add = %q, want %q", got, tt.add)
			}
			if got := renderTaints(remove); got != tt.remove {
				t.Errorf("ForConditions() remove = %q, want %q", got, tt.remove)
			}
			if tt.node != nil && !equalNodes(before, tt.node) {
				t.Errorf("ForConditions() modified its input")
			}
			for i := range remove {
				for j := range tt.node.Spec.Taints {
					if remove[i].TimeAdded != nil && remove[i].TimeAdded == tt.node.Spec.Taints[j].TimeAdded {
						t.Errorf("ForConditions() remove[%d] shares TimeAdded with the input", i)
					}
				}
			}
		})
	}
}

func equalNodes(a, b *v1.Node) bool {
	return a.String() == b.String()
}

func TestForConditionsSteadyStateAllocatesNothing(t *testing.T) {
	node := nodeWith([]v1.NodeCondition{cond(v1.NodeReady, v1.ConditionFalse), cond(v1.NodeMemoryPressure, v1.ConditionFalse)}, false,
		ns(notReady), ne(notReady), ns("example.com/foreign"))
	now := testutil.At(time.Minute)
	if n := testing.AllocsPerRun(100, func() { ForConditions(node, now) }); n != 0 {
		t.Errorf("ForConditions(up-to-date node) allocates %v times, want 0", n)
	}
}

func TestDecideNoExecute(t *testing.T) {
	ready := func(s v1.ConditionStatus) *v1.NodeCondition { c := cond(v1.NodeReady, s); return &c }
	tests := []struct {
		ready   *v1.NodeCondition
		current []v1.Taint
		want    NoExecuteAction
		taint   string
	}{
		{nil, nil, NoExecuteNone, ""},
		{nil, []v1.Taint{ne(unreachable)}, NoExecuteNone, ""},
		{ready(v1.ConditionFalse), nil, NoExecuteQueue, "node.kubernetes.io/not-ready:NoExecute"},
		{ready(v1.ConditionFalse), []v1.Taint{ne(notReady)}, NoExecuteQueue, "node.kubernetes.io/not-ready:NoExecute"},
		{ready(v1.ConditionFalse), []v1.Taint{ne(unreachable)}, NoExecuteSwap, "node.kubernetes.io/not-ready:NoExecute"},
		{ready(v1.ConditionFalse), []v1.Taint{ns(unreachable)}, NoExecuteQueue, "node.kubernetes.io/not-ready:NoExecute"},
		{ready(v1.ConditionUnknown), nil, NoExecuteQueue, "node.kubernetes.io/unreachable:NoExecute"},
		{ready(v1.ConditionUnknown), []v1.Taint{ne(unreachable)}, NoExecuteQueue, "node.kubernetes.io/unreachable:NoExecute"},
		{ready(v1.ConditionUnknown), []v1.Taint{ns("x"), ne(notReady)}, NoExecuteSwap, "node.kubernetes.io/unreachable:NoExecute"},
		{ready(v1.ConditionTrue), nil, NoExecuteRemove, ""},
		{ready(v1.ConditionTrue), []v1.Taint{ne(notReady), ne(unreachable)}, NoExecuteRemove, ""},
		{ready("Bogus"), []v1.Taint{ne(notReady)}, NoExecuteNone, ""},
		{&v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}, nil, NoExecuteNone, ""},
		{&v1.NodeCondition{Status: v1.ConditionUnknown}, nil, NoExecuteQueue, "node.kubernetes.io/unreachable:NoExecute"},
	}
	for _, tt := range tests {
		got, taint := DecideNoExecute(tt.ready, tt.current)
		gotTaint := ""
		if taint.Key != "" {
			gotTaint = taint.ToString()
		}
		if got != tt.want || gotTaint != tt.taint || taint.TimeAdded != nil {
			status := "nil"
			if tt.ready != nil {
				status = string(tt.ready.Status)
			}
			t.Errorf("DecideNoExecute(%s, %s) = %v, %q, want %v, %q", status, renderTaints(tt.current), got, gotTaint, tt.want, tt.taint)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{NoExecuteNone.String(), "None"}, {NoExecuteQueue.String(), "Queue"}, {NoExecuteSwap.String(), "Swap"},
		{NoExecuteRemove.String(), "Remove"}, {NoExecuteAction(9).String(), "NoExecuteAction(9)"},
		{RescheduleNever.String(), "Never"}, {RescheduleEarlier.String(), "Earlier"}, {RescheduleRecompute.String(), "Recompute"},
		{ReschedulePolicy(7).String(), "ReschedulePolicy(7)"},
		{ReasonNotTolerated.String(), "NotTolerated"}, {ReasonTolerationExpired.String(), "TolerationExpired"}, {Reason(0).String(), "Reason(0)"},
		{EvictionNotTracked.String(), "NotTracked"}, {EvictionNodeNotTainted.String(), "NodeNotTainted"},
		{EvictionToleratedForever.String(), "ToleratedForever"}, {EvictionScheduled.String(), "Scheduled"},
		{EvictionDue.String(), "Due"}, {EvictionHandedOut.String(), "HandedOut"}, {EvictionRetrying.String(), "Retrying"},
		{EvictionDone.String(), "Done"}, {EvictionState(0).String(), "EvictionState(0)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}
