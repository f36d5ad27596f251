package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// fullPod is a pod as a kubelet leaves it: containers, volumes, container
// statuses, annotations, managed fields and five conditions.
func fullPod() *v1.Pod {
	at := metav1.NewTime(testutil.Epoch)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-0", UID: "uid-web-0", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: at,
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-cm"},
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-rs", Controller: ptr.To(true)},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: v1.PodSpec{
			NodeName:    "node-a",
			Containers:  []v1.Container{{Name: "c", Image: "registry.invalid/web:1", Env: []v1.EnvVar{{Name: "A", Value: "b"}}}},
			Volumes:     []v1.Volume{{Name: "v"}},
			Tolerations: []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.0.0.7", HostIP: "192.0.2.1",
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, Image: "registry.invalid/web:1", ContainerID: "fake://c"}},
		},
	}
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: at, ObservedGeneration: 3})
	}
	return p
}

// fullNode is a node as a kubelet leaves it: images, volumes, addresses,
// capacity, node info, annotations.
func fullNode() *v1.Node {
	n := testutil.WithReady(testutil.Node("node-a", testutil.Epoch.Add(-time.Hour)), v1.ConditionTrue, testutil.Epoch, testutil.Epoch.Add(-time.Hour))
	n.ResourceVersion = "7"
	n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	n.Labels = map[string]string{v1.LabelTopologyZone: "z1"}
	n.Spec.Taints = []v1.Taint{{Key: "example.com/maintenance", Effect: v1.TaintEffectNoSchedule}}
	n.Status.Images = []v1.ContainerImage{{Names: []string{"registry.invalid/web:1"}, SizeBytes: 1 << 20}}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.1"}}
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
	n.Status.NodeInfo.KubeletVersion = "v1.37.2"
	n.Status.VolumesInUse = []v1.UniqueVolumeName{"kubernetes.io/csi/x"}
	return n
}

func TestTrimPodKeepsWhatIsRead(t *testing.T) {
	p := fullPod()
	before := p.DeepCopy()
	got := newTrimmer().pod(p).pod()
	mustEqual(t, "argument after transform", p, before)

	want := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-0", UID: "uid-web-0", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: p.CreationTimestamp,
			OwnerReferences:   []metav1.OwnerReference{p.OwnerReferences[1]},
		},
		Spec:   v1.PodSpec{NodeName: "node-a", Tolerations: p.Spec.Tolerations},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{p.Status.Conditions[2]}},
	}
	mustEqual(t, "trimmed", got, want)
}

func TestTrimNodeKeepsWhatIsRead(t *testing.T) {
	n := fullNode()
	before := n.DeepCopy()
	got := newTrimmer().node(n)
	mustEqual(t, "argument after transform", n, before)
	want := &v1.Node{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: n.Spec, Status: v1.NodeStatus{Conditions: n.Status.Conditions}}
	want.Annotations = nil
	mustEqual(t, "trimmed", got, want)
}

// TestTrimInternsShared: the pods of one node share its name, their
// namespace and one copy of an equal toleration list.
func TestTrimInternsShared(t *testing.T) {
	tr := newTrimmer()
	a, b := fullPod(), fullPod()
	b.Name = "web-1"
	ta, tb := tr.pod(a).pod(), tr.pod(b).pod()
	if &ta.Spec.Tolerations[0] != &tb.Spec.Tolerations[0] {
		t.Error("two pods with equal tolerations hold two copies, want one shared")
	}
	mustEqual(t, "tolerations", tb.Spec.Tolerations, a.Spec.Tolerations)
	b.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](30)
	if &ta.Spec.Tolerations[0] == &tr.pod(b).pod().Spec.Tolerations[0] {
		t.Error("different tolerations share a copy")
	}
}

// applyStatusPatch applies a status patch to the live object as the API
// server does (strategic merge), into out.
func applyStatusPatch(t *testing.T, live any, patch []byte, out any) {
	t.Helper()
	raw, err := json.Marshal(live)
	must(t, err)
	merged, err := strategicpatch.StrategicMergePatch(raw, patch, out)
	must(t, err)
	must(t, json.Unmarshal(merged, out))
}

// TestStatusPatchesKeepUnownedFields: a status write computed from the
// trimmed cached copy changes only the fields the controller owns on the
// live object. A PUT of the trimmed copy's status (what UpdatePodStatus
// and UpdateNodeStatus sent before the cache was trimmed) would have wiped
// the container statuses, the other conditions, the images and the rest.
func TestStatusPatchesKeepUnownedFields(t *testing.T) {
	now := testutil.Epoch.Add(time.Minute)
	tr := newTrimmer()

	live := fullPod()
	cached := tr.pod(live).pod()
	st, change := nodehealth.PodNotReadyStatus(now, cached)
	if !change {
		t.Fatal("PodNotReadyStatus: no change")
	}
	patch, err := podStatusPatch(cached, st)
	must(t, err)
	wantJSON(t, patch, `{"metadata":{"uid":"uid-web-0","resourceVersion":"42"},"status":{"conditions":[{"type":"Ready","status":"False",`+
		`"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:01:00Z","reason":null,"message":null,"observedGeneration":3}]}}`)
	var gotPod v1.Pod
	applyStatusPatch(t, live, patch, &gotPod)
	wantPod := live.DeepCopy()
	wantPod.Status.Conditions[2].Status, wantPod.Status.Conditions[2].LastTransitionTime = v1.ConditionFalse, metav1.NewTime(now)
	mustEqual(t, "pod status", gotPod.Status, wantPod.Status)

	// Legacy mode: status.reason and message.
	st = cached.Status.DeepCopy()
	st.Reason, st.Message = "NodeLost", "Node node-a which was running pod web-0 is unresponsive"
	patch, err = podStatusPatch(cached, st)
	must(t, err)
	applyStatusPatch(t, live, patch, &gotPod)
	wantPod = live.DeepCopy()
	wantPod.Status.Reason, wantPod.Status.Message = st.Reason, st.Message
	mustEqual(t, "pod status", gotPod.Status, wantPod.Status)

	liveNode := fullNode()
	cachedNode := tr.node(liveNode)
	nst := cachedNode.Status.DeepCopy()
	nst.Conditions[0].Status, nst.Conditions[0].Reason, nst.Conditions[0].Message = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
	nst.Conditions[0].LastTransitionTime = metav1.NewTime(now)
	nst.Conditions = append(nst.Conditions, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionUnknown,
		Reason: "NodeStatusNeverUpdated", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
	patch, pt, err := nodeStatusPatch(cachedNode, nst)
	must(t, err)
	if pt != types.StrategicMergePatchType {
		t.Errorf("node status patch type %s, want %s", pt, types.StrategicMergePatchType)
	}
	var gotNode v1.Node
	applyStatusPatch(t, liveNode, patch, &gotNode)
	wantNode := liveNode.Status.DeepCopy()
	wantNode.Conditions = nst.Conditions
	mustEqual(t, "node status", gotNode.Status, *wantNode)
}

func TestStatusPatchRefusesUnownedChange(t *testing.T) {
	p := newTrimmer().pod(fullPod()).pod()
	st := p.Status.DeepCopy()
	st.PodIP = "10.0.0.9"
	_, err := podStatusPatch(p, st)
	wantErr(t, err, "outside conditions")
	n := newTrimmer().node(fullNode())
	nst := n.Status.DeepCopy()
	nst.Phase = v1.NodeRunning
	_, _, err = nodeStatusPatch(n, nst)
	wantErr(t, err, "outside status.conditions")

	patch, err := podStatusPatch(p, p.Status.DeepCopy())
	if err != nil || patch != nil {
		t.Errorf("podStatusPatch(no change) = %s, %v; want nil, nil", patch, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s = %+v\nwant %+v", what, got, want)
	}
}

func wantJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	must(t, json.Unmarshal(got, &g))
	must(t, json.Unmarshal([]byte(want), &w))
	mustEqual(t, "patch", g, w)
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Errorf("error = %v, want one containing %q", err, substr)
	}
}
