package controller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestRepeatedReadyConditions: node a lists Ready twice or three times (an
// agent's bug; the API server accepts it) and stops renewing its Lease at
// t=0; a pod on it lists Ready as many times. Upstream's UpdateStatus turns
// the first Ready Unknown (the pod's False) and leaves the duplicates as
// they were. A strategic merge of the changed Ready together with the
// duplicates merged them all into the first Ready: the node read
// Ready=True again with a duplicate's heartbeat (a fresh grace period), so
// with two it went Unknown a grace period late, with three never, and it
// was not tainted. Here the node goes Unknown at the first monitor pass
// after the grace period (55s) with one write and stays so, is tainted,
// and both objects end exactly as upstream's PUT leaves them.
func TestRepeatedReadyConditions(t *testing.T) {
	t.Parallel()
	for _, copies := range []int{2, 3} {
		t.Run(fmt.Sprint(copies), func(t *testing.T) {
			t.Parallel()
			testRepeatedReady(t, copies)
		})
	}
}

func testRepeatedReady(t *testing.T, copies int) {
	objs := cluster3()
	a := readyNode("a", "z1")
	a.Status.Conditions = []v1.NodeCondition{
		testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, testutil.Epoch, testutil.Epoch.Add(-time.Hour)),
		testutil.NodeCondition(v1.NodeMemoryPressure, v1.ConditionFalse, testutil.Epoch, testutil.Epoch.Add(-time.Hour)),
	}
	p := pod("twice", "a", false, v1.Toleration{Operator: v1.TolerationOpExists}) // stays: its conditions are read after
	p.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(testutil.Epoch.Add(-time.Hour))},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(testutil.Epoch.Add(-2 * time.Hour))},
	}
	for i := 2; i <= copies; i++ {
		older := testutil.Epoch.Add(-time.Duration(i-1) * 30 * time.Second)
		c := testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, older, older.Add(-time.Hour))
		c.Reason = fmt.Sprint("Agent", i)
		a.Status.Conditions = append(a.Status.Conditions, c)
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(older.Add(-time.Hour)), Reason: c.Reason})
	}
	objs[0] = a
	objs = append(objs, p)
	f := newFixture(t, testConfig(), objs...)
	nodeBefore, podBefore := f.node("a").DeepCopy(), f.pod("twice").DeepCopy()

	f.pass(true)
	f.advance(170*time.Second, liveExcept(f, "a"))

	unknownAt := metav1.NewTime(testutil.Epoch.Add(55 * time.Second))
	if got := f.first(monitor.KindNodeUnknown, "a", "", ""); got != 55*time.Second {
		t.Errorf("node a written Unknown at %v, want 55s", got)
	}
	// Upstream's PUT: the first of each health condition Unknown, the
	// missing ones appended, the duplicates untouched where they were.
	want := nodeBefore.Status.DeepCopy()
	for _, i := range []int{0, 1} {
		c := &want.Conditions[i]
		c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", unknownAt
	}
	for _, ct := range []v1.NodeConditionType{v1.NodeDiskPressure, v1.NodePIDPressure} {
		want.Conditions = append(want.Conditions, v1.NodeCondition{Type: ct, Status: v1.ConditionUnknown,
			Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
			LastHeartbeatTime: nodeBefore.CreationTimestamp, LastTransitionTime: unknownAt})
	}
	na := f.node("a")
	if !equality.Semantic.DeepEqual(na.Status, *want) {
		t.Errorf("node a status at 170s =\n%s\nwant (as upstream's UpdateStatus leaves it)\n%s", jsonString(t, na.Status), jsonString(t, want))
	}
	if !hasTaint(na, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Errorf("node a taints = %v, want %s", na.Spec.Taints, unreachableNoExecute)
	}
	if n := len(f.actions("patch", "nodes", "status")); n != 1 {
		t.Errorf("%d node status writes, want 1 (the node stays Unknown)", n)
	}

	wantPod := podBefore.Status.DeepCopy()
	wantPod.Conditions[0].Status, wantPod.Conditions[0].LastTransitionTime = v1.ConditionFalse, unknownAt
	if got := f.pod("twice"); got == nil {
		t.Error("pod twice deleted, want kept (it tolerates every taint)")
	} else if !equality.Semantic.DeepEqual(got.Status, *wantPod) {
		t.Errorf("pod twice status at 170s =\n%s\nwant (as upstream's UpdateStatus leaves it)\n%s", jsonString(t, got.Status), jsonString(t, wantPod))
	}
	n := 0
	for _, act := range f.actions("patch", "pods", "status") {
		if act.(k8stesting.PatchAction).GetName() == "twice" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d status writes of pod twice, want 1", n)
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
