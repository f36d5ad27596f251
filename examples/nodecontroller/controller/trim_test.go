package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
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

// TestTrimDeviceObjects: ResourceSlices keep their pool and each device's
// name and taints; ResourceClaims their controller owner, allocation
// results (with tolerations) and reservations; a DeviceTaintRule (as the
// dynamic client decodes it) its selector, taint and EvictionInProgress
// condition. The arguments are never changed.
func TestTrimDeviceObjects(t *testing.T) {
	tr := newTrimmer()
	at := metav1.NewTime(testutil.Epoch)
	taint := resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &at}
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "uid-s", ResourceVersion: "3",
		Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "driver"}}}}
	s.Spec.Driver, s.Spec.Pool = "d", resourcev1.ResourcePool{Name: "p", Generation: 2, ResourceSliceCount: 1}
	s.Spec.NodeName = ptr.To("node-a")
	s.Spec.Devices = []resourcev1.Device{
		{Name: "gpu-0", Taints: []resourcev1.DeviceTaint{taint},
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("X")}},
			Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}},
		{Name: "gpu-1"},
	}
	before := s.DeepCopy()
	gotSlice, _ := tr.transform(s)
	mustEqual(t, "slice argument after transform", s, before)
	wantSlice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "uid-s", ResourceVersion: "3"}}
	wantSlice.Spec.Driver, wantSlice.Spec.Pool = "d", s.Spec.Pool
	wantSlice.Spec.Devices = []resourcev1.Device{{Name: "gpu-0", Taints: []resourcev1.DeviceTaint{taint}}, {Name: "gpu-1"}}
	mustEqual(t, "trimmed slice", gotSlice, wantSlice)

	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c", ResourceVersion: "4",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "uid-x"},
			{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "uid-web-0", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	c.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu",
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "true"}}}}}}
	tol := resourcev1.DeviceToleration{Key: "k", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "d", Pool: "p", Device: "gpu-0", Tolerations: []resourcev1.DeviceToleration{tol}}},
		Config:  []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClaim}},
	}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web-0", UID: "uid-web-0"}}
	c.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "d", Pool: "p", Device: "gpu-0"}}
	beforeClaim := c.DeepCopy()
	gotClaim, _ := tr.transform(c)
	mustEqual(t, "claim argument after transform", c, beforeClaim)
	wantClaim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c", ResourceVersion: "4",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "uid-web-0", Controller: ptr.To(true)}}}}
	wantClaim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "d", Pool: "p", Device: "gpu-0", Tolerations: []resourcev1.DeviceToleration{tol}}}}}
	wantClaim.Status.ReservedFor = c.Status.ReservedFor
	mustEqual(t, "trimmed claim", gotClaim, wantClaim)

	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule",
		"metadata":{"name":"r","uid":"uid-r","generation":3,"resourceVersion":"9","annotations":{"a":"b"},"managedFields":[{"manager":"kubectl"}]},
		"spec":{"deviceSelector":{"driver":"d","pool":"p"},"taint":{"key":"k","value":"v","effect":"NoExecute","timeAdded":"2026-01-01T00:00:00Z"}},
		"status":{"conditions":[{"type":"Other","status":"True","reason":"R","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"},
			{"type":"EvictionInProgress","status":"False","reason":"NotStarted","message":"","observedGeneration":3,"lastTransitionTime":"2026-01-01T00:00:05Z"}]}}`)); err != nil {
		t.Fatal(err)
	}
	gotRule, _ := tr.transform(u)
	r := gotRule.(*cachedRule)
	want := taints.DeviceTaintRule{Name: "r", UID: "uid-r", Generation: 3,
		Selector: &taints.DeviceTaintSelector{Driver: ptr.To("d"), Pool: ptr.To("p")},
		Taint:    resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &at},
		Conditions: []metav1.Condition{{Type: "EvictionInProgress", Status: metav1.ConditionFalse, Reason: "NotStarted", ObservedGeneration: 3,
			LastTransitionTime: metav1.NewTime(testutil.Epoch.Add(5 * time.Second))}}}
	if r.decodeErr != nil || r.Name != "r" || r.UID != "uid-r" || r.ResourceVersion != "9" || r.Annotations != nil || r.ManagedFields != nil {
		t.Errorf("cached rule metadata %+v, error %v", r.ObjectMeta, r.decodeErr)
	}
	if !equality.Semantic.DeepEqual(r.rule, want) {
		t.Errorf("cached rule\n%+v\nwant\n%+v", r.rule, want)
	}
	// A rule the converter cannot read keeps its identity and selects nothing.
	bad := u.DeepCopy()
	bad.Object["spec"] = map[string]any{"taint": "not an object"}
	gotBad, _ := tr.transform(bad)
	if b := gotBad.(*cachedRule); b.decodeErr == nil || b.Name != "r" || b.rule.Selector != nil {
		t.Errorf("unreadable rule cached as %+v", b)
	}
}
