package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Repeated conditions. A node lists Ready more than once (an agent's bug,
// or a hostile one: the API server accepts it, in a PUT of the status), and
// so does a pod on it. Upstream's UpdateStatus turns the first Ready Unknown
// (the pod's False) and leaves the duplicates where they were; every reader
// (upstream's GetNodeCondition and GetPodCondition, nodehealth, the
// monitor, taints) takes the first. The controller used to send a
// strategic-merge patch that carried the changed Ready and every duplicate:
// the API server merged them all into the first Ready, so the node read
// Ready=True again with a duplicate's heartbeat (a fresh grace period).
// With two Ready the next write went through (the first then equal to the
// duplicate, which was no longer sent): Unknown a grace period late, with
// the duplicate's heartbeat and reason; with three, the first took the
// last duplicate's values, then the other's, and so on: never Unknown,
// never tainted, and the pod rewritten at every event, never Ready=False.
//
//  1. The API server's strategic merge, on two nodes the controller does
//     not select: the old patch (changed Ready and duplicate) leaves the
//     duplicate's values in the first Ready; a patch of another type moves
//     the duplicate next to the first (so no strategic merge of the list
//     can leave it as a PUT does).
//  2. Nodes dup2 and dup3 (Ready twice and three times, a pressure
//     condition after the first) stop renewing their Leases: the
//     controller writes each Unknown once, they stay Unknown, get both
//     unreachable taints, and their pods (Ready as many times) go
//     Ready=False, each with one write.
//  3. Twins of the nodes and the pods, not selected, get upstream's write
//     (tryUpdateNodeHealth's and MarkPodsNotReady's change of the first
//     condition of each type, then UpdateStatus): each list the controller
//     left is its twin's, condition by condition.
func TestNodeControllerRepeatedConditions(t *testing.T) {
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	ctx := context.Background()
	e.addNode("live", "zone-a") // the zone keeps a Ready node: 2 of 3 down is not a partial disruption

	// 1. The API server's strategic merge of a repeated key.
	for _, tc := range []struct {
		name, patch string
		want        string // type=status/reason of each stored condition
	}{
		{"the old write: changed Ready and its duplicate",
			`[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"},{"type":"Ready","status":"True","reason":"Agent2"}]`,
			"Ready=True/Agent2 Ready=True/Agent2 MemoryPressure=False/TestKubelet"},
		{"another type only",
			`[{"type":"MemoryPressure","status":"Unknown","reason":"NodeStatusUnknown"}]`,
			"Ready=True/TestKubelet Ready=True/Agent2 MemoryPressure=Unknown/NodeStatusUnknown"},
	} {
		n := createNode(t, e.cs, "smp", ncRegion, "zone-a")
		t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}) })
		writeRepeatedReady(t, e.cs, n.Name, 2)
		got, err := e.cs.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType,
			[]byte(`{"status":{"conditions":`+tc.patch+`}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("%s: Patch(node %s status) = %v", tc.name, n.Name, err)
		}
		if s := conditionSummary(got.Status.Conditions); s != tc.want {
			t.Errorf("strategic merge, %s: the API server stored %s, want %s", tc.name, s, tc.want)
		}
	}

	// 2. Nodes with Ready twice and three times, a pod on each; they go silent.
	type side struct {
		node       string
		nodeBefore *v1.Node
		pod        *v1.Pod
	}
	type repeated struct {
		copies       int
		ours, theirs side
	}
	all := v1.Toleration{Operator: v1.TolerationOpExists} // the pods stay: their status is read at the end
	var cases []*repeated
	for _, copies := range []int{2, 3} {
		r := &repeated{copies: copies}
		r.ours.node = e.addNode(fmt.Sprintf("dup%d", copies), "zone-a")
		twin := createNode(t, e.cs, fmt.Sprintf("twin%d", copies), ncRegion, "zone-a")
		t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(ctx, twin.Name, metav1.DeleteOptions{}) })
		r.theirs.node = twin.Name
		for _, sd := range []*side{&r.ours, &r.theirs} {
			sd.nodeBefore = writeRepeatedReady(t, e.cs, sd.node, copies)
			sd.pod = writeRepeatedPodReady(t, e.cs, createPod(t, e.cs, e.ns, "pod-"+sd.node, sd.node, all), copies)
		}
		cases = append(cases, r)
	}

	run := e.start(1, e.client(), e.config())
	run.waitNodesKnown(t, 3)
	var silent []time.Time
	for _, r := range cases {
		silent = append(silent, e.kubelet.silence(r.ours.node))
	}
	for i, r := range cases {
		e.waitUnknown(t, r.ours.node, silent[i], ncGrace)
		e.waitTaints(t, r.ours.node, []v1.Taint{unreachableNoExecute, unreachableNoSched}, nil)
		e.waitPodsNotReady(t, r.ours.pod)
	}
	// They stay so: the old write flipped them back.
	hold := time.Now().Add(3 * ncMonitorPeriod)
	for time.Now().Before(hold) {
		for _, r := range cases {
			if got := readyStatus(e.node(t, r.ours.node)); got != v1.ConditionUnknown {
				t.Fatalf("node %s Ready = %s at %s, after the controller wrote it Unknown", r.ours.node, got, stamp(time.Now()))
			}
			p, err := e.cs.CoreV1().Pods(r.ours.pod.Namespace).Get(ctx, r.ours.pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := podCondition(p, v1.PodReady); c.Status != v1.ConditionFalse {
				t.Fatalf("pod %s Ready = %s at %s, after the controller wrote it False", p.Name, c.Status, stamp(time.Now()))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	run.stop(t)
	if n := e.audit.succeeded(nodeStatusPatch); n != len(cases) {
		t.Errorf("%d node status writes went through, want %d (one per node)", n, len(cases))
	}
	if n := e.audit.succeeded(podStatusPatch); n != len(cases) {
		t.Errorf("%d pod condition writes went through, want %d (one per pod)", n, len(cases))
	}

	// 3. Upstream's writes on the twins, then the lists side by side.
	for _, r := range cases {
		upstreamNodeUnknown(t, e.cs, r.theirs.node)
		upstreamPodNotReady(t, e.cs, r.theirs.pod)
		ours, theirs := e.node(t, r.ours.node), e.node(t, r.theirs.node)
		t.Logf("Ready %d times: node conditions after the controller's write: %s", r.copies, jsonString(ours.Status.Conditions))
		t.Logf("Ready %d times: node conditions after upstream's UpdateStatus: %s", r.copies, jsonString(theirs.Status.Conditions))
		if o, u := conditionShape(ours, r.ours.nodeBefore), conditionShape(theirs, r.theirs.nodeBefore); !slices.Equal(o, u) {
			t.Errorf("node %s conditions after the controller's write:\n  %s\nupstream's UpdateStatus leaves (node %s):\n  %s",
				r.ours.node, strings.Join(o, "\n  "), r.theirs.node, strings.Join(u, "\n  "))
		}
		before := r.ours.nodeBefore.Status.Conditions
		if len(ours.Status.Conditions) < len(before) || !equality.Semantic.DeepEqual(ours.Status.Conditions[2:len(before)], before[2:]) {
			t.Errorf("node %s: conditions %s after the write, want the duplicate Ready untouched after the first two: %s",
				r.ours.node, jsonString(ours.Status.Conditions), jsonString(before[2:]))
		}
		oursPod, err := e.cs.CoreV1().Pods(r.ours.pod.Namespace).Get(ctx, r.ours.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		theirsPod, err := e.cs.CoreV1().Pods(r.theirs.pod.Namespace).Get(ctx, r.theirs.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Ready %d times: pod conditions after the controller's write: %s", r.copies, jsonString(oursPod.Status.Conditions))
		t.Logf("Ready %d times: pod conditions after upstream's UpdateStatus: %s", r.copies, jsonString(theirsPod.Status.Conditions))
		if o, u := podConditionShape(oursPod, r.ours.pod), podConditionShape(theirsPod, r.theirs.pod); !slices.Equal(o, u) {
			t.Errorf("pod %s conditions after the controller's write:\n  %s\nupstream's UpdateStatus leaves (pod %s):\n  %s",
				oursPod.Name, strings.Join(o, "\n  "), theirsPod.Name, strings.Join(u, "\n  "))
		}
	}
}

// succeeded counts the writes of kind answered with a 2xx status.
func (a *writeAudit) succeeded(kind writeKind) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, w := range a.writes {
		if w.kind == kind && w.code >= 200 && w.code < 300 {
			n++
		}
	}
	return n
}

// writeRepeatedReady writes the node's conditions as a buggy agent would,
// by a PUT of the status: Ready, MemoryPressure, then Ready copies-1 more
// times (reasons Agent2, Agent3, ..., heartbeats 30 s older each). It
// returns the node as stored, and fails unless the API server kept them
// all.
func writeRepeatedReady(t *testing.T, cs kubernetes.Interface, name string, copies int) *v1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	n.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "TestKubelet", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "TestKubelet", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	for i := 2; i <= copies; i++ {
		older := metav1.NewTime(now.Add(-time.Duration(i-1) * 30 * time.Second))
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue,
			Reason: fmt.Sprintf("Agent%d", i), LastHeartbeatTime: older, LastTransitionTime: older})
	}
	got, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus(node %s, Ready %d times) = %v", name, copies, err)
	}
	if len(got.Status.Conditions) != copies+1 {
		t.Fatalf("node %s as stored by a status PUT: %s, want Ready %d times", name, jsonString(got.Status.Conditions), copies)
	}
	return got
}

// writeRepeatedPodReady reports the pod Running with Ready, PodScheduled,
// then Ready copies-1 more times (reasons Agent2, ...), by a PUT of the
// status, and returns it as stored.
func writeRepeatedPodReady(t *testing.T, cs kubernetes.Interface, p *v1.Pod, copies int) *v1.Pod {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	p = p.DeepCopy()
	p.Status.Phase = v1.PodRunning
	p.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now},
	}
	for i := 2; i <= copies; i++ {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue,
			Reason: fmt.Sprintf("Agent%d", i), LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(i-1) * time.Minute))})
	}
	got, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus(pod %s, Ready %d times) = %v", p.Name, copies, err)
	}
	if len(got.Status.Conditions) != copies+1 {
		t.Fatalf("pod %s as stored by a status PUT: %s, want Ready %d times", p.Name, jsonString(got.Status.Conditions), copies)
	}
	return got
}

// upstreamNodeUnknown does what kube-controller-manager v1.37.2 does to a
// node past its grace period (tryUpdateNodeHealth in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go): the first
// condition of each of Ready and the three pressure types (GetNodeCondition)
// turned Unknown, a missing one appended, then UpdateStatus of the node.
func upstreamNodeUnknown(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for _, ct := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		i := slices.IndexFunc(n.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == ct })
		if i < 0 {
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: ct, Status: v1.ConditionUnknown,
				Reason: ncReasonNeverUpdated, Message: ncMessageNeverUpdated,
				LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: now})
			continue
		}
		if c := &n.Status.Conditions[i]; c.Status != v1.ConditionUnknown {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionUnknown, ncReasonUnknown, ncMessageUnknown, now
		}
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus(node %s) = %v", name, err)
	}
}

// upstreamPodNotReady does what MarkPodsNotReady
// (pkg/controller/util/node/controller_utils.go, v1.37.2) does to a pod:
// its first Ready condition False (UpdatePodCondition: the transition time
// now), then UpdateStatus of the pod.
func upstreamPodNotReady(t *testing.T, cs kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := podCondition(p, v1.PodReady)
	c.Status, c.LastTransitionTime = v1.ConditionFalse, metav1.Now()
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus(pod %s) = %v", p.Name, err)
	}
}

// conditionSummary is "type=status/reason" of each condition, in order.
func conditionSummary(cs []v1.NodeCondition) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
	}
	return strings.Join(s, " ")
}

// conditionShape describes each of n's conditions, in order, with its
// times relative to before (the node before the write): "kept" when equal
// to the time of before's condition at the same place, "created" for the
// node's creation time, "new" otherwise. Two nodes written alike from
// alike conditions have equal shapes.
func conditionShape(n, before *v1.Node) []string {
	out := make([]string, len(n.Status.Conditions))
	for i, c := range n.Status.Conditions {
		hb, tr := "new", "new"
		if i < len(before.Status.Conditions) && before.Status.Conditions[i].Type == c.Type {
			b := before.Status.Conditions[i]
			if c.LastHeartbeatTime.Equal(&b.LastHeartbeatTime) {
				hb = "kept"
			}
			if c.LastTransitionTime.Equal(&b.LastTransitionTime) {
				tr = "kept"
			}
		}
		if hb == "new" && c.LastHeartbeatTime.Equal(&n.CreationTimestamp) {
			hb = "created"
		}
		out[i] = fmt.Sprintf("%s=%s reason %q message %q heartbeat %s transition %s", c.Type, c.Status, c.Reason, c.Message, hb, tr)
	}
	return out
}

// podConditionShape is conditionShape for a pod's conditions.
func podConditionShape(p, before *v1.Pod) []string {
	out := make([]string, len(p.Status.Conditions))
	for i, c := range p.Status.Conditions {
		tr := "new"
		if i < len(before.Status.Conditions) && before.Status.Conditions[i].Type == c.Type &&
			c.LastTransitionTime.Equal(&before.Status.Conditions[i].LastTransitionTime) {
			tr = "kept"
		}
		out[i] = fmt.Sprintf("%s=%s reason %q message %q transition %s", c.Type, c.Status, c.Reason, c.Message, tr)
	}
	return out
}
