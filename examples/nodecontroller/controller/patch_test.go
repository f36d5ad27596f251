package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// mergePatch applies an RFC 7386 JSON merge patch to doc, as the API
// server does for application/merge-patch+json: an object in the patch
// merges key by key (null deletes), anything else, a list included,
// replaces.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}

// applyPatch applies a patch of type pt to live, into out.
func applyPatch(t *testing.T, live any, pt types.PatchType, patch []byte, out any) {
	t.Helper()
	switch pt {
	case types.StrategicMergePatchType:
		applyStatusPatch(t, live, patch, out)
	case types.MergePatchType:
		raw, err := json.Marshal(live)
		must(t, err)
		merged, err := mergePatch(raw, patch)
		must(t, err)
		must(t, json.Unmarshal(merged, out))
	default:
		t.Fatalf("patch type %q", pt)
	}
}

// upstreamNodeUnknown changes n's status as upstream's tryUpdateNodeHealth
// does before its UpdateStatus (node_lifecycle_controller.go, v1.37.2): the
// first condition of each of Ready and the three pressure types turned
// Unknown (GetNodeCondition returns the first), a missing one appended.
func upstreamNodeUnknown(n *v1.Node, now time.Time) {
	ts := metav1.NewTime(now)
	for _, ct := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		c := nodeCondition(n.Status.Conditions, ct)
		if c == nil {
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: ct, Status: v1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: ts})
		} else if c.Status != v1.ConditionUnknown {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", ts
		}
	}
}

// upstreamPodNotReady changes p's status as upstream's MarkPodsNotReady
// does before its UpdateStatus (pkg/controller/util/node/controller_utils.go,
// v1.37.2): the first Ready condition False, its transition time now.
func upstreamPodNotReady(p *v1.Pod, now time.Time) {
	if c := podCondition(p.Status.Conditions, v1.PodReady); c != nil && c.Status != v1.ConditionFalse {
		c.Status, c.LastTransitionTime = v1.ConditionFalse, metav1.NewTime(now)
	}
}

// repeatedReadyNode is fullNode with a second Ready condition after the
// others (a buggy or hostile agent's, with an older heartbeat).
func repeatedReadyNode() *v1.Node {
	n := fullNode()
	n.Status.Conditions = []v1.NodeCondition{
		testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, testutil.Epoch, testutil.Epoch.Add(-time.Hour)),
		testutil.NodeCondition(v1.NodeMemoryPressure, v1.ConditionFalse, testutil.Epoch, testutil.Epoch.Add(-time.Hour)),
		testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, testutil.Epoch.Add(-30*time.Second), testutil.Epoch.Add(-2*time.Hour)),
	}
	n.Status.Conditions[2].Reason = "SecondAgent"
	return n
}

// repeatedReadyPod is fullPod with a second Ready condition at the end.
func repeatedReadyPod() *v1.Pod {
	p := fullPod()
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(testutil.Epoch.Add(-time.Hour)), Reason: "SecondAgent"})
	return p
}

// TestStrategicMergeRepeatedKeys pins what the strategic merge does with a
// list that repeats a merge key (k8s.io/apimachinery's strategicpatch, as
// the API server applies it), the reasons patch.go writes such lists whole.
func TestStrategicMergeRepeatedKeys(t *testing.T) {
	live := repeatedReadyNode()
	raw, err := json.Marshal(live)
	must(t, err)
	unknown := `{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}`
	second := `{"type":"Ready","status":"True","reason":"SecondAgent","lastHeartbeatTime":"2025-12-31T23:59:30Z"}`
	for _, tc := range []struct {
		name, conditions string
		want             string // type=status/reason of each stored condition
	}{
		// Both entries of the patch merge into the first Ready: the second's values win.
		{"changed and duplicate", `[` + unknown + `,` + second + `]`, "Ready=True/SecondAgent Ready=True/SecondAgent MemoryPressure=False/"},
		// One entry merges into the first Ready; the second moves next to it.
		{"changed only", `[` + unknown + `]`, "Ready=Unknown/NodeStatusUnknown Ready=True/SecondAgent MemoryPressure=False/"},
		{"another type", `[{"type":"MemoryPressure","status":"Unknown"}]`, "Ready=True/ Ready=True/SecondAgent MemoryPressure=Unknown/"},
		// $patch: replace keeps both, and moves the second next to the first.
		{"replace", `[{"$patch":"replace"},` + unknown + `,{"type":"MemoryPressure","status":"False"},` + second + `]`,
			"Ready=Unknown/NodeStatusUnknown Ready=True/SecondAgent MemoryPressure=False/"},
		// $patch: delete removes every Ready; two new ones collapse into one.
		{"delete, two", `[{"type":"Ready","$patch":"delete"},` + unknown + `,` + second + `]`, "Ready=True/SecondAgent MemoryPressure=False/"},
	} {
		out, err := strategicpatch.StrategicMergePatch(raw, []byte(`{"status":{"conditions":`+tc.conditions+`}}`), &v1.Node{})
		must(t, err)
		var n v1.Node
		must(t, json.Unmarshal(out, &n))
		got := ""
		for i, c := range n.Status.Conditions {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
		}
		if got != tc.want {
			t.Errorf("%s: stored %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestStatusPatchRepeatedConditions: conditions that repeat a type are
// written whole, by a JSON merge patch with the preconditions, and end as
// upstream's PUT leaves them: the first of a type changed, the duplicate
// untouched in its place, everything else as it was.
func TestStatusPatchRepeatedConditions(t *testing.T) {
	now := testutil.Epoch.Add(time.Minute)
	tr := newTrimmer()

	live := repeatedReadyNode()
	cached := tr.node(live)
	st := cached.DeepCopy()
	upstreamNodeUnknown(st, now)
	patch, pt, err := nodeStatusPatch(cached, &st.Status)
	must(t, err)
	if pt != types.MergePatchType {
		t.Fatalf("node patch type %s, want %s", pt, types.MergePatchType)
	}
	var p struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	must(t, json.Unmarshal(patch, &p))
	if p.Metadata.ResourceVersion != live.ResourceVersion {
		t.Errorf("node patch resourceVersion %q, want %q", p.Metadata.ResourceVersion, live.ResourceVersion)
	}
	var gotNode v1.Node
	applyPatch(t, live, pt, patch, &gotNode)
	wantNode := live.DeepCopy()
	upstreamNodeUnknown(wantNode, now)
	mustEqual(t, "node after the write", gotNode, *wantNode)

	livePod := repeatedReadyPod()
	cachedPod := tr.pod(livePod).pod()
	if !podConditionsRepeat(cachedPod, &cachedPod.Status) {
		t.Fatalf("cached pod conditions %v: no repeated type", cachedPod.Status.Conditions)
	}
	pst, change := nodehealth.PodNotReadyStatus(now, cachedPod)
	if !change {
		t.Fatal("PodNotReadyStatus: no change")
	}
	patch, err = podConditionsMergePatch(cachedPod, livePod, pst)
	must(t, err)
	var pp struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	must(t, json.Unmarshal(patch, &pp))
	if pp.Metadata.UID != livePod.UID || pp.Metadata.ResourceVersion != livePod.ResourceVersion {
		t.Errorf("pod patch preconditions uid %q, resourceVersion %q; want %q, %q", pp.Metadata.UID, pp.Metadata.ResourceVersion, livePod.UID, livePod.ResourceVersion)
	}
	var gotPod v1.Pod
	applyPatch(t, livePod, types.MergePatchType, patch, &gotPod)
	wantPod := livePod.DeepCopy()
	upstreamPodNotReady(wantPod, now)
	mustEqual(t, "pod after the write", gotPod, *wantPod)

	// Legacy mode's reason and message ride along.
	pst.Reason, pst.Message = "NodeLost", "Node node-a which was running pod web-0 is unresponsive"
	patch, err = podConditionsMergePatch(cachedPod, livePod, pst)
	must(t, err)
	applyPatch(t, livePod, types.MergePatchType, patch, &gotPod)
	wantPod.Status.Reason, wantPod.Status.Message = pst.Reason, pst.Message
	mustEqual(t, "pod after the legacy write", gotPod, *wantPod)

	// Nothing to do.
	patch, err = podConditionsMergePatch(cachedPod, livePod, cachedPod.Status.DeepCopy())
	if err != nil || patch != nil {
		t.Errorf("podConditionsMergePatch(no change) = %s, %v; want nil, nil", patch, err)
	}
	patch, pt, err = nodeStatusPatch(cached, cached.Status.DeepCopy())
	if err != nil || patch != nil {
		t.Errorf("nodeStatusPatch(no change) = %s, %s, %v; want nil, nil", patch, pt, err)
	}
}

// TestPodConditionsMergePatchConflicts: a live pod that is not the one the
// cached copy was read from is a conflict, as a patch with the cached
// preconditions would be; a change that is not in place is refused.
func TestPodConditionsMergePatchConflicts(t *testing.T) {
	now := testutil.Epoch.Add(time.Minute)
	cached := newTrimmer().pod(repeatedReadyPod()).pod()
	st, _ := nodehealth.PodNotReadyStatus(now, cached)
	for _, tc := range []struct {
		name string
		live func(*v1.Pod)
	}{
		{"resourceVersion", func(p *v1.Pod) { p.ResourceVersion = "43" }},
		{"UID", func(p *v1.Pod) { p.UID = "uid-web-0-new" }},
		{"condition", func(p *v1.Pod) { p.Status.Conditions[5].Reason = "Changed" }},
		{"condition gone", func(p *v1.Pod) { p.Status.Conditions = p.Status.Conditions[:5] }},
	} {
		live := repeatedReadyPod()
		tc.live(live)
		_, err := podConditionsMergePatch(cached, live, st)
		if !apierrors.IsConflict(err) {
			t.Errorf("%s differs: error %v, want a conflict", tc.name, err)
		}
	}
	reordered := st.DeepCopy()
	reordered.Conditions[0], reordered.Conditions[1] = reordered.Conditions[1], reordered.Conditions[0]
	reordered.Conditions[0].Type = v1.DisruptionTarget
	_, err := podConditionsMergePatch(cached, repeatedReadyPod(), reordered)
	wantErr(t, err, "reorders")
	_, err = podConditionsMergePatch(cached, repeatedReadyPod(), &v1.PodStatus{Phase: cached.Status.Phase})
	wantErr(t, err, "removes")
}

func TestRepeatsType(t *testing.T) {
	long := make([]v1.NodeCondition, 40)
	for i := range long {
		long[i].Type = v1.NodeConditionType(fmt.Sprint("T", i))
	}
	for _, tc := range []struct {
		name string
		cs   []v1.NodeCondition
		want bool
	}{
		{"none", nil, false},
		{"one", long[:1], false},
		{"distinct", long[:16], false},
		{"distinct, long", long, false},
		{"repeated", append(append([]v1.NodeCondition{}, long[:5]...), long[2]), true},
		{"repeated, long", append(append([]v1.NodeCondition{}, long...), long[39]), true},
	} {
		if got := repeatsType(tc.cs, nodeConditionType); got != tc.want {
			t.Errorf("%s: repeatsType = %v, want %v", tc.name, got, tc.want)
		}
	}
	short := long[:8]
	if n := testing.AllocsPerRun(100, func() { repeatsType(short, nodeConditionType) }); n != 0 {
		t.Errorf("repeatsType of 8 conditions: %v allocations, want 0", n)
	}
}
