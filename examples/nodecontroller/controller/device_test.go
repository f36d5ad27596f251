package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// The device taint eviction duty on the fake clientset (typed objects) and
// the fake dynamic client (DeviceTaintRules), driven step by step on a fake
// clock: StartDevices, then DevicePass at chosen times.

const (
	devDriver = "gpu.example.com"
	devPool   = "node-1"
	devNS     = "ml"
	taintKey  = "gpu.example.com/unhealthy"
)

// recordedEvent is one Event a recorder was asked for.
type recordedEvent struct {
	ref                  v1.ObjectReference
	typ, reason, message string
}

// eventLog is a record.EventRecorder that keeps what it is asked to record,
// the involved object included.
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) Event(obj runtime.Object, typ, reason, message string) {
	ref, ok := obj.(*v1.ObjectReference)
	if !ok {
		panic(fmt.Sprintf("event on a %T, want an *ObjectReference", obj))
	}
	l.mu.Lock()
	l.events = append(l.events, recordedEvent{*ref, typ, reason, message})
	l.mu.Unlock()
}

func (l *eventLog) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	l.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (l *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	l.Eventf(obj, typ, reason, format, args...)
}

func (l *eventLog) list() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// devFixture runs a Controller with only the device duty on fake clients.
type devFixture struct {
	t         *testing.T
	ctx       context.Context
	client    *fake.Clientset
	dyn       *dynamicfake.FakeDynamicClient
	clock     *clocktesting.FakeClock
	c         *controller.Controller
	events    *eventLog
	mu        sync.Mutex
	deletions []time.Duration // OnDeletion's latencies
	stop      func()
}

// servedResources is the discovery of an API server serving the duty's
// resources (rules too unless noRules).
func servedResources(noRules bool) []*metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: resourcev1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{
		{Name: "resourceslices"}, {Name: "resourceclaims"}, {Name: "resourceclaims/status"}, {Name: "deviceclasses"},
	}}
	if !noRules {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: "devicetaintrules"}, metav1.APIResource{Name: "devicetaintrules/status"})
	}
	return []*metav1.APIResourceList{l}
}

// newDevFixture builds the clients (with rules as unstructured objects in
// the dynamic one) without starting anything; start starts the controller.
func newDevFixture(t *testing.T, rules ...*unstructured.Unstructured) *devFixture {
	t.Helper()
	f := &devFixture{t: t, client: fake.NewClientset(), clock: clocktesting.NewFakeClock(testutil.Epoch), events: &eventLog{}}
	installServerSemantics(f.client)
	f.client.Resources = servedResources(false)
	objs := make([]runtime.Object, len(rules))
	for i, r := range rules {
		objs[i] = r
	}
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{controller.DeviceTaintRulesResource: "DeviceTaintRuleList"}, objs...)
	f.dyn.PrependReactor("patch", "devicetaintrules", f.applyStatus)
	f.ctx = klog.NewContext(context.Background(), klog.Logger{})
	return f
}

// applyStatus is server-side apply of a rule's status as an API server
// does it for this one field manager: the applied conditions replace those
// of their type, a UID that does not match is a conflict.
func (f *devFixture) applyStatus(a k8stesting.Action) (bool, runtime.Object, error) {
	pa := a.(k8stesting.PatchActionImpl)
	if pa.GetPatchType() != types.ApplyPatchType || pa.GetSubresource() != "status" {
		return true, nil, apierrors.NewBadRequest("test server: only status applies")
	}
	var patch struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
		Status struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	obj, err := f.dyn.Tracker().Get(controller.DeviceTaintRulesResource, "", pa.GetName())
	if err != nil {
		return true, nil, err
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	if patch.Metadata.UID != u.GetUID() {
		return true, nil, apierrors.NewConflict(controller.DeviceTaintRulesResource.GroupResource(), pa.GetName(), errors.New("UID mismatch"))
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range patch.Status.Conditions {
		i := slices.IndexFunc(conds, func(o any) bool { return o.(map[string]any)["type"] == c["type"] })
		if i < 0 {
			conds = append(conds, c)
		} else {
			conds[i] = c
		}
	}
	// Numbers as the JSON decoder gives them (float64) are int64 in an
	// unstructured object.
	conds = jsonRoundTrip(f.t, conds)
	if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
		return true, nil, err
	}
	u.SetResourceVersion(fmt.Sprint(time.Now().UnixNano()))
	if err := f.dyn.Tracker().Update(controller.DeviceTaintRulesResource, u, ""); err != nil {
		return true, nil, err
	}
	return true, u, nil
}

func jsonRoundTrip(t *testing.T, v []any) []any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(`{"kind":"X","apiVersion":"v1","items":` + string(b) + `}`)); err != nil {
		t.Fatal(err)
	}
	out, _, _ := unstructured.NestedSlice(u.Object, "items")
	return out
}

// deviceConfig is a config with only the device duty, recording into f.
func (f *devFixture) deviceConfig() controller.Config {
	cfg := controller.DefaultConfig()
	cfg.DisableNodeLifecycle = true
	cfg.Devices.Enabled = true
	cfg.Devices.Dynamic = f.dyn
	cfg.Devices.Recorder = f.events
	cfg.Devices.OnDeletion = func(d time.Duration) {
		f.mu.Lock()
		f.deletions = append(f.deletions, d)
		f.mu.Unlock()
	}
	return cfg
}

func (f *devFixture) start(cfg controller.Config) {
	f.t.Helper()
	c, err := controller.New(f.client, f.clock, cfg)
	if err != nil {
		f.t.Fatalf("New() = %v", err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	if err := c.StartDevices(ctx); err != nil {
		cancel()
		f.t.Fatalf("StartDevices() = %v", err)
	}
	f.stop = func() {
		cancel()
		c.Shutdown()
	}
	f.t.Cleanup(f.stop)
	f.c = c
}

func (f *devFixture) deletionLatencies() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletions)
}

// eventually polls cond for up to 10 s of real time.
func (f *devFixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// state waits until the DeviceEvictor has pod in state want.
func (f *devFixture) state(pod string, want taints.DeviceState) taints.DeviceExplanation {
	f.t.Helper()
	var x taints.DeviceExplanation
	f.eventually(fmt.Sprintf("pod %s %v", pod, want), func() bool {
		x = f.c.Devices().Explain(f.clock.Now(), types.NamespacedName{Namespace: devNS, Name: pod})
		return x.State == want
	})
	return x
}

func (f *devFixture) create(objs ...runtime.Object) {
	f.t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *v1.Pod:
			_, err = f.client.CoreV1().Pods(o.Namespace).Create(f.ctx, o, metav1.CreateOptions{})
		case *resourcev1.ResourceSlice:
			_, err = f.client.ResourceV1().ResourceSlices().Create(f.ctx, o, metav1.CreateOptions{})
		case *resourcev1.ResourceClaim:
			_, err = f.client.ResourceV1().ResourceClaims(o.Namespace).Create(f.ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("unsupported %T", o)
		}
		if err != nil {
			f.t.Fatalf("create %T: %v", o, err)
		}
	}
}

// taint sets the taints of the slice's first device (none: untaint).
func (f *devFixture) taint(ts ...resourcev1.DeviceTaint) {
	f.t.Helper()
	s, err := f.client.ResourceV1().ResourceSlices().Get(f.ctx, "slice-1", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	s.Spec.Devices[0].Taints = ts
	if _, err := f.client.ResourceV1().ResourceSlices().Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *devFixture) actions(verb, resource, sub string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			out = append(out, a)
		}
	}
	return out
}

func (f *devFixture) applies() []k8stesting.PatchActionImpl {
	var out []k8stesting.PatchActionImpl
	for _, a := range f.dyn.Actions() {
		if pa, ok := a.(k8stesting.PatchActionImpl); ok && pa.GetPatchType() == types.ApplyPatchType {
			out = append(out, pa)
		}
	}
	return out
}

func devSlice(devices ...string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-1"}}
	s.Spec.Driver, s.Spec.Pool = devDriver, resourcev1.ResourcePool{Name: devPool, Generation: 1, ResourceSliceCount: 1}
	s.Spec.AllNodes = ptr.To(true)
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: d,
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("X100")}}})
	}
	return s
}

// devClaim is a claim allocated device with tolerations, reserved for pods.
func devClaim(name, device string, tols []resourcev1.DeviceToleration, pods ...*v1.Pod) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: devNS, Name: name, UID: types.UID("uid-" + name)}}
	c.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu"}}}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: devDriver, Pool: devPool, Device: device, Tolerations: tols,
	}}}}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

func devPod(name, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: devNS, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "c", Image: "registry.invalid/x:1"}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

func noExecute(at time.Time) resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: taintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: at}}
}

func devRule(name string, effect resourcev1.DeviceTaintEffect, at time.Time) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name, "generation": int64(1), "resourceVersion": "1"},
		"spec": map[string]any{
			"deviceSelector": map[string]any{"driver": devDriver, "pool": devPool},
			"taint":          map[string]any{"key": "maintenance", "effect": string(effect), "timeAdded": at.UTC().Format(time.RFC3339)},
		},
	}}
}

// TestDeviceSliceTaintEvicts: a NoExecute taint on the device of a claim
// two pods share: each pod gets upstream's Event (Normal
// DeviceTaintManagerEviction "Marking for deletion" on a reference of the
// pod's API version, kind, namespace, name and UID only), then the
// DisruptionTarget condition by a status patch carrying the UID, then a
// delete with a UID precondition, in that order; upstream's metrics hook
// sees each; a slice's attributes are not cached.
func TestDeviceSliceTaintEvicts(t *testing.T) {
	f := newDevFixture(t)
	p1, p2 := devPod("trainer-0", "shared"), devPod("trainer-1", "shared")
	f.create(devSlice("gpu-0", "gpu-1"), devClaim("shared", "gpu-0", nil, p1, p2), p1, p2)
	f.start(f.deviceConfig())
	f.state("trainer-0", taints.DeviceNotTainted)
	f.state("trainer-1", taints.DeviceNotTainted)

	f.clock.Step(5 * time.Second)
	taintedAt := f.clock.Now().Add(-2 * time.Second).Truncate(time.Second) // as the API stores it
	f.taint(noExecute(taintedAt))
	f.state("trainer-0", taints.DeviceDue)
	f.state("trainer-1", taints.DeviceDue)
	f.c.DevicePass(f.ctx)

	for _, name := range []string{"trainer-0", "trainer-1"} {
		if _, err := f.client.CoreV1().Pods(devNS).Get(f.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s: Get() = %v, want NotFound (deleted)", name, err)
		}
	}
	var order []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "pods" || (a.GetVerb() != "patch" && a.GetVerb() != "delete") {
			continue
		}
		switch a := a.(type) {
		case k8stesting.PatchActionImpl:
			order = append(order, "patch "+a.GetName()+"/"+a.GetSubresource())
			var p map[string]any
			if err := json.Unmarshal(a.GetPatch(), &p); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`{"metadata":{"uid":"uid-%s"},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":%q,"message":"Device Taint manager: deleting due to NoExecute taint","observedGeneration":null,"reason":"DeletionByDeviceTaintManager","status":"True","type":"DisruptionTarget"}]}}`,
				a.GetName(), f.clock.Now().UTC().Format(time.RFC3339))
			if got, _ := json.Marshal(p); string(got) != want {
				t.Errorf("status patch of %s:\n%s\nwant\n%s", a.GetName(), got, want)
			}
		case k8stesting.DeleteActionImpl:
			order = append(order, "delete "+a.GetName())
			if pre := a.DeleteOptions.Preconditions; pre == nil || pre.UID == nil || *pre.UID != types.UID("uid-"+a.GetName()) {
				t.Errorf("delete %s: preconditions %+v, want the UID", a.GetName(), pre)
			}
		}
	}
	slices.Sort(order)
	if want := []string{"delete trainer-0", "delete trainer-1", "patch trainer-0/status", "patch trainer-1/status"}; !slices.Equal(order, want) {
		t.Errorf("pod writes %q, want %q", order, want)
	}
	evs := f.events.list()
	slices.SortFunc(evs, func(a, b recordedEvent) int { return strings.Compare(a.ref.Name, b.ref.Name) })
	var want []recordedEvent
	for _, p := range []*v1.Pod{p1, p2} {
		want = append(want, recordedEvent{v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: devNS, Name: p.Name, UID: p.UID},
			v1.EventTypeNormal, "DeviceTaintManagerEviction", "Marking for deletion"})
	}
	if !slices.Equal(evs, want) {
		t.Errorf("events %+v, want %+v", evs, want)
	}
	if got := f.deletionLatencies(); len(got) != 2 || got[0] != f.clock.Now().Sub(taintedAt) {
		t.Errorf("OnDeletion latencies %v, want 2 × %v", got, f.clock.Now().Sub(taintedAt))
	}
	for _, name := range []string{"trainer-0", "trainer-1"} {
		if x := f.c.Devices().Explain(f.clock.Now(), types.NamespacedName{Namespace: devNS, Name: name}); x.State != taints.DeviceDone && x.State != taints.DeviceNotTracked {
			t.Errorf("pod %s: %v after the pass, want Done or NotTracked", name, x.State)
		}
	}
}

// TestDeviceTolerationAndCancellation: a claim that tolerates the taint for
// 30 s: nothing before, the pod's deletion scheduled at TimeAdded + 30 s;
// the taint removed before that cancels it, with upstream's Event
// "Cancelling deletion"; nothing is written to the pod.
func TestDeviceTolerationAndCancellation(t *testing.T) {
	f := newDevFixture(t)
	tol := []resourcev1.DeviceToleration{{Key: taintKey, Operator: resourcev1.DeviceTolerationOpExists,
		Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", tol, p), p)
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceNotTainted)
	f.taint(noExecute(f.clock.Now()))
	x := f.state("job", taints.DeviceScheduled)
	if want := f.clock.Now().Add(30 * time.Second); !x.At.Equal(want) {
		t.Errorf("scheduled at %v, want %v", x.At, want)
	}
	f.clock.Step(29 * time.Second)
	f.c.DevicePass(f.ctx)
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d deletes before the toleration ran out", n)
	}
	f.taint()
	f.state("job", taints.DeviceNotTainted)
	f.c.DevicePass(f.ctx)
	f.clock.Step(10 * time.Second)
	f.c.DevicePass(f.ctx)
	want := []recordedEvent{{v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: devNS, Name: "job", UID: "uid-job"},
		v1.EventTypeNormal, "DeviceTaintManagerEviction", "Cancelling deletion"}}
	if evs := f.events.list(); !slices.Equal(evs, want) {
		t.Errorf("events %+v, want %+v", evs, want)
	}
	if n := len(f.actions("patch", "pods", "status")) + len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d pod writes, want none", n)
	}
}

// TestDeviceRuleStatusAndEviction: a NoExecute DeviceTaintRule on the pool:
// its first status (PodsPendingEviction) is applied before the eviction
// (server-side apply of the status subresource, field manager
// device-taint-eviction-controller, force, the rule's UID), the pod is
// deleted, and one rule status period later the status says Completed with
// the count, as upstream's maybeUpdateRuleStatus writes it.
func TestDeviceRuleStatusAndEviction(t *testing.T) {
	f := newDevFixture(t, devRule("drain", resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch))
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceDue)
	f.c.DevicePass(f.ctx)
	if _, err := f.client.CoreV1().Pods(devNS).Get(f.ctx, "job", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod job: Get() = %v, want NotFound", err)
	}
	checkApply := func(i int, status, reason, message string, at time.Time) {
		t.Helper()
		as := f.applies()
		if len(as) <= i {
			t.Fatalf("%d status applies, want at least %d", len(as), i+1)
		}
		a := as[i]
		if a.GetName() != "drain" || a.GetSubresource() != "status" || a.PatchOptions.FieldManager != controller.DeviceName ||
			a.PatchOptions.Force == nil || !*a.PatchOptions.Force {
			t.Errorf("apply %d: %s/%s manager %q force %v", i, a.GetName(), a.GetSubresource(), a.PatchOptions.FieldManager, a.PatchOptions.Force)
		}
		want := fmt.Sprintf(`{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"drain","uid":"uid-drain"},"status":{"conditions":[{"lastTransitionTime":%q,"message":%q,"observedGeneration":1,"reason":%q,"status":%q,"type":"EvictionInProgress"}]}}`,
			at.UTC().Format(time.RFC3339), message, reason, status)
		if strings.TrimSpace(string(a.GetPatch())) != want {
			t.Errorf("apply %d:\n%s\nwant\n%s", i, a.GetPatch(), want)
		}
	}
	checkApply(0, "True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", testutil.Epoch)
	if n := len(f.applies()); n != 1 {
		t.Errorf("%d status applies right after the eviction, want 1", n)
	}
	// One period later the count is written (whether or not the first
	// status has reached the informer: either way it is not Completed).
	f.clock.Step(10 * time.Second)
	f.eventually("the second status", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.applies()) == 2
	})
	checkApply(1, "False", "Completed", "1 pod evicted since starting the controller.", f.clock.Now())
}

// TestDeviceNoneRule: a None rule is a dry run: its status counts what
// NoExecute would do, once, and nothing is written to the pod.
func TestDeviceNoneRule(t *testing.T) {
	f := newDevFixture(t, devRule("preview", resourcev1.DeviceTaintEffectNone, testutil.Epoch))
	p := devPod("job", "c")
	f.create(devSlice("gpu-0", "gpu-1"), devClaim("c", "gpu-0", nil, p), p)
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceNotTainted)
	f.eventually("the preview counts the pod", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.applies()) > 0 && strings.Contains(string(f.applies()[0].GetPatch()), "1 pod would")
	})
	if want := `"message":"2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.","observedGeneration":1,"reason":"NoEffect","status":"False"`; !strings.Contains(string(f.applies()[0].GetPatch()), want) {
		t.Errorf("apply %s, want %s", f.applies()[0].GetPatch(), want)
	}
	f.clock.Step(time.Minute)
	f.c.DevicePass(f.ctx)
	if n := len(f.actions("patch", "pods", "status")) + len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d pod writes, want none", n)
	}
}

// TestDeviceDeleteRetried: deletes that fail are retried with upstream's
// per-item backoff (5 ms, doubling) until one succeeds; the Event is
// recorded at each attempt, as upstream does.
func TestDeviceDeleteRetried(t *testing.T) {
	f := newDevFixture(t)
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	failures := 3
	f.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewInternalError(errors.New("etcd is sulking"))
		}
		return false, nil, nil
	})
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceNotTainted)
	f.taint(noExecute(f.clock.Now()))
	f.state("job", taints.DeviceDue)
	for i, wait := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		f.c.DevicePass(f.ctx)
		x := f.state("job", taints.DeviceRetrying)
		if got := x.At.Sub(f.clock.Now()); got != wait {
			t.Errorf("attempt %d failed: retry in %v, want %v", i+1, got, wait)
		}
		f.clock.Step(wait)
	}
	f.c.DevicePass(f.ctx)
	if _, err := f.client.CoreV1().Pods(devNS).Get(f.ctx, "job", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod job: Get() = %v, want NotFound", err)
	}
	if n := len(f.actions("delete", "pods", "")); n != 4 {
		t.Errorf("%d deletes, want 4", n)
	}
	if n := len(f.events.list()); n != 4 {
		t.Errorf("%d Events, want 4 (one per attempt)", n)
	}
	if n := len(f.deletionLatencies()); n != 1 {
		t.Errorf("%d deletions counted, want 1", n)
	}
}

// TestDeviceReplacedPodLeftAlone: a pod re-created under the same name
// (another UID) between the decision and the write, before the informer
// shows it, is not touched: the status patch carries the old UID and
// fails; once the cache shows the new pod, the old eviction is dropped
// and nothing more is written.
func TestDeviceReplacedPodLeftAlone(t *testing.T) {
	f := newDevFixture(t)
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	replaced := false
	f.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !replaced {
			replaced = true
			np := devPod("job", "c")
			np.UID, np.ResourceVersion = "uid-job-2", "2000"
			if err := f.client.Tracker().Update(podsGVR, np, devNS); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceNotTainted)
	f.taint(noExecute(f.clock.Now()))
	f.state("job", taints.DeviceDue)
	f.c.DevicePass(f.ctx)
	f.eventually("the new pod in the DeviceEvictor", func() bool {
		x := f.c.Devices().Explain(f.clock.Now(), types.NamespacedName{Namespace: devNS, Name: "job"})
		return x.UID == "uid-job-2" && x.State == taints.DeviceNotTainted
	})
	f.clock.Step(time.Minute)
	f.c.DevicePass(f.ctx)
	got, err := f.client.CoreV1().Pods(devNS).Get(f.ctx, "job", metav1.GetOptions{})
	if err != nil || got.UID != "uid-job-2" || len(got.Status.Conditions) != 1 {
		t.Errorf("the new pod: %v, %+v; want it untouched", err, got)
	}
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d deletes, want none", n)
	}
}

// TestDeviceRestartKeepsEvictions: with a ConfigMapStore, a pod the duty
// deleted that is still terminating when the controller restarts is not
// handed out, counted or recorded again, and the rule keeps its count
// (upstream starts both afresh: a second count in
// device_taint_eviction_controller_pod_deletions_total and a rule status
// back to NotStarted).
func TestDeviceRestartKeepsEvictions(t *testing.T) {
	for _, withSnapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", withSnapshot), func(t *testing.T) {
			f := newDevFixture(t, devRule("drain", resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch))
			p := devPod("job", "c")
			f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
			// A graceful delete: the pod stays, terminating (its kubelet
			// has not confirmed yet).
			f.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				da := a.(k8stesting.DeleteActionImpl)
				obj, err := f.client.Tracker().Get(podsGVR, da.GetNamespace(), da.GetName())
				if err != nil {
					return true, nil, err
				}
				pod := obj.(*v1.Pod).DeepCopy()
				pod.DeletionTimestamp = &metav1.Time{Time: f.clock.Now().Truncate(time.Second)}
				pod.ResourceVersion += "0"
				return true, nil, f.client.Tracker().Update(podsGVR, pod, da.GetNamespace())
			})
			cfg := f.deviceConfig()
			if withSnapshot {
				store, err := controller.NewConfigMapStore(f.client, "kube-system", "snap")
				if err != nil {
					t.Fatal(err)
				}
				cfg.Snapshots, cfg.SnapshotPeriod = store, 0
			}
			f.start(cfg)
			f.state("job", taints.DeviceDue)
			f.c.DevicePass(f.ctx)
			f.state("job", taints.DeviceDone)
			// One period later the rule's status says Completed.
			f.clock.Step(10 * time.Second)
			f.eventually("the second status", func() bool {
				f.c.DevicePass(f.ctx)
				return len(f.applies()) == 2
			})
			if as := f.applies(); len(as) != 2 || !strings.Contains(string(as[1].GetPatch()), `"reason":"Completed"`) {
				t.Fatalf("%d status applies, want PodsPendingEviction then Completed", len(as))
			}
			if err := f.c.SaveDeviceSnapshot(f.ctx); err != nil {
				t.Fatal(err)
			}
			f.stop()

			// The restarted controller.
			f.clock.Step(time.Minute)
			f.events = &eventLog{}
			f.mu.Lock()
			f.deletions = nil
			f.mu.Unlock()
			cfg.Devices.Recorder = f.events
			f.start(cfg)
			want := taints.DeviceDue
			if withSnapshot {
				want = taints.DeviceDone
			}
			f.state("job", want)
			applies := len(f.applies())
			f.c.DevicePass(f.ctx)
			if n := len(f.events.list()); n != 0 {
				t.Errorf("%d Events after the restart, want none (the pod is terminating)", n)
			}
			wantCounted := 1
			if withSnapshot {
				wantCounted = 0
			}
			if n := len(f.deletionLatencies()); n != wantCounted {
				t.Errorf("%d deletions counted after the restart, want %d", n, wantCounted)
			}
			if withSnapshot {
				if n := len(f.applies()); n != applies {
					t.Errorf("the restarted controller rewrote the rule status: %s", f.applies()[n-1].GetPatch())
				}
			} else if n := len(f.applies()); n == applies || !strings.Contains(string(f.applies()[n-1].GetPatch()), `"reason":"NotStarted"`) {
				t.Errorf("without a snapshot the rule status goes back to NotStarted, as upstream's; applies %d → %d", applies, n)
			}
		})
	}
}

// TestDeviceAPINotServed: an API server without resource.k8s.io/v1 slices
// and claims: the duty does not start (ErrDevicesNotServed) and the node
// duties are not held; without devicetaintrules the duty runs without rules
// (upstream's informer would retry forever and its controller never
// start).
func TestDeviceAPINotServed(t *testing.T) {
	f := newDevFixture(t)
	f.client.Resources = nil
	cfg := f.deviceConfig()
	cfg.DisableNodeLifecycle = false
	c, err := controller.New(f.client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if err := c.StartDevices(f.ctx); !errors.Is(err, controller.ErrDevicesNotServed) {
		t.Errorf("StartDevices() = %v, want ErrDevicesNotServed", err)
	}
	if !c.HasSynced() {
		t.Errorf("HasSynced() = false: the node duties wait for the device duty")
	}

	f = newDevFixture(t, devRule("drain", resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch))
	f.client.Resources = servedResources(true)
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceNotTainted)
	for _, a := range f.dyn.Actions() {
		t.Errorf("dynamic client used without devicetaintrules served: %s %s", a.GetVerb(), a.GetResource())
	}
}

// TestDeviceDutyAlone: with the node duties off, the controller neither
// lists nor watches Nodes or Leases.
func TestDeviceDutyAlone(t *testing.T) {
	f := newDevFixture(t)
	f.start(f.deviceConfig())
	for _, a := range f.client.Actions() {
		if r := a.GetResource().Resource; r == "nodes" || r == "leases" {
			t.Errorf("%s %s with the node duties off", a.GetVerb(), r)
		}
	}
}

// TestDeviceConfigErrors: the duty's settings are validated.
func TestDeviceConfigErrors(t *testing.T) {
	f := newDevFixture(t)
	for _, tc := range []struct {
		edit func(*controller.Config)
		want string
	}{
		{func(c *controller.Config) { c.Devices.Workers = 0 }, "Devices.Workers = 0"},
		{func(c *controller.Config) { c.Devices.Evictor.RuleStatusPeriod = 0 }, "RuleStatusPeriod"},
		{func(c *controller.Config) { c.Devices.Enabled = false }, "no duty to run"},
		{func(c *controller.Config) { c.Devices.Dynamic = nil }, "Devices.Dynamic is nil"},
	} {
		cfg := f.deviceConfig()
		tc.edit(&cfg)
		_, err := controller.New(f.client, f.clock, cfg)
		if err == nil || !errors.Is(err, controller.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New() = %v, want ErrInvalidConfig with %q", err, tc.want)
		}
	}
	cfg := f.deviceConfig()
	cfg.Devices.Dynamic, cfg.Devices.NoRules = nil, true
	if _, err := controller.New(f.client, f.clock, cfg); err != nil {
		t.Errorf("New() without rules or a dynamic client = %v", err)
	}
}

// TestDeviceRuleCountsPodDeletedBeforeDone is the regression test of a
// lost rule count: the informer may deliver the delete event of the
// duty's own Delete before the call returns; the DeviceEvictor then forgot
// the pod before Done, which counts a pod for its DeviceTaintRules only
// while it knows it, and the rule's status said NotStarted instead of
// Completed ("1 pod evicted"), where upstream counts every pod it deleted.
func TestDeviceRuleCountsPodDeletedBeforeDone(t *testing.T) {
	f := newDevFixture(t, devRule("drain", resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch))
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	f.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteActionImpl)
		if err := f.client.Tracker().Delete(podsGVR, da.GetNamespace(), da.GetName()); err != nil {
			return true, nil, err
		}
		// Let the informer deliver the delete before the call returns.
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) {
			if f.c.Devices().Explain(f.clock.Now(), types.NamespacedName{Namespace: devNS, Name: "job"}).State == taints.DeviceNotTracked {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return true, nil, nil
	})
	f.start(f.deviceConfig())
	f.state("job", taints.DeviceDue)
	f.c.DevicePass(f.ctx)
	f.state("job", taints.DeviceNotTracked)
	f.clock.Step(10 * time.Second)
	f.eventually("the second status", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.applies()) == 2
	})
	if got := string(f.applies()[1].GetPatch()); !strings.Contains(got, `"message":"1 pod evicted since starting the controller.","observedGeneration":1,"reason":"Completed"`) {
		t.Errorf("status after the eviction: %s, want Completed with 1 pod evicted", got)
	}
}

// TestDeviceSnapshotDropsGone: a device snapshot is restored only for the
// pods and rules that still exist (same UID): the DeviceEvictor keeps
// restored entries of objects it never sees and its Snapshot lists them
// again, so the UIDs of pods deleted while no controller ran were saved and
// restored at every restart, for good.
func TestDeviceSnapshotDropsGone(t *testing.T) {
	f := newDevFixture(t, devRule("drain", resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch))
	p := devPod("job", "c")
	f.create(devSlice("gpu-0"), devClaim("c", "gpu-0", nil, p), p)
	store, err := controller.NewConfigMapStore(f.client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SaveDevices(f.ctx, taints.DeviceSnapshot{
		Evicted: []taints.DeviceEvictedPod{
			{Pod: types.NamespacedName{Namespace: devNS, Name: "job"}, UID: "uid-job"},
			{Pod: types.NamespacedName{Namespace: devNS, Name: "gone"}, UID: "uid-gone"},
			{Pod: types.NamespacedName{Namespace: devNS, Name: "job"}, UID: "uid-job-before"},
		},
		Rules: []taints.DeviceRuleCount{{Rule: "drain", UID: "uid-drain", Evicted: 3}, {Rule: "old", UID: "uid-old", Evicted: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := f.deviceConfig()
	cfg.Snapshots = store
	f.start(cfg)
	f.state("job", taints.DeviceDone)
	want := taints.DeviceSnapshot{
		Evicted: []taints.DeviceEvictedPod{{Pod: types.NamespacedName{Namespace: devNS, Name: "job"}, UID: "uid-job"}},
		Rules:   []taints.DeviceRuleCount{{Rule: "drain", UID: "uid-drain", Evicted: 3}},
	}
	if got := f.c.Devices().Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot() after the restore = %+v, want %+v", got, want)
	}
}
