package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// The blast-radius limit's Events, warnings and the release annotation
// (devicehold.go) on the fake clients.

// selectorRule is a NoExecute rule with the given selector (nil: empty,
// every device) and annotations.
func selectorRule(name string, selector map[string]any, annotations map[string]string) *unstructured.Unstructured {
	if selector == nil {
		selector = map[string]any{}
	}
	u := devRule(name, resourcev1.DeviceTaintEffectNoExecute, testutil.Epoch)
	_ = unstructured.SetNestedMap(u.Object, selector, "spec", "deviceSelector")
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

// holdWorld creates a slice of n devices, a claim allocated each and a pod
// using each ("job-<i>").
func (f *devFixture) holdWorld(n int) []string {
	f.t.Helper()
	var devs, pods []string
	for i := range n {
		devs = append(devs, fmt.Sprintf("gpu-%d", i))
	}
	f.create(devSlice(devs...))
	for i := range n {
		p := devPod(fmt.Sprintf("job-%d", i), fmt.Sprintf("c-%d", i))
		f.create(devClaim(fmt.Sprintf("c-%d", i), devs[i], nil, p), p)
		pods = append(pods, p.Name)
	}
	return pods
}

// breakerConfig is deviceConfig with the breaker at 50% and warnings on.
func (f *devFixture) breakerConfig() controller.Config {
	cfg := f.deviceConfig()
	cfg.Devices.Evictor.BlastRadius = taints.DeviceBlastRadius{MaxShare: 0.5}
	cfg.Devices.Evictor.KeepWarnings = 16
	return cfg
}

// counted waits until the DeviceEvictor has counted tainted of the
// driver's allocated devices: the informers delivered the objects (the
// breaker is judged at the next pass).
func (f *devFixture) counted(tainted, allocated int) {
	f.t.Helper()
	f.eventually(fmt.Sprintf("%d of %d devices tainted", tainted, allocated), func() bool {
		for _, l := range f.c.Devices().DriverLimits(nil) {
			if l.Driver == devDriver {
				return l.TaintedDevices == tainted && l.AllocatedDevices == allocated
			}
		}
		return false
	})
}

// eventsWith returns the recorded Events with reason.
func (f *devFixture) eventsWith(reason string) []recordedEvent {
	var out []recordedEvent
	for _, e := range f.events.list() {
		if e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (f *devFixture) updateRule(u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.dyn.Resource(controller.DeviceTaintRulesResource).Update(f.ctx, u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func ruleObjRef(name string) v1.ObjectReference {
	return v1.ObjectReference{APIVersion: "resource.k8s.io/v1", Kind: "DeviceTaintRule", Name: name, UID: types.UID("uid-" + name)}
}

// TestDeviceHoldEventsAndRelease: an empty-selector NoExecute rule
// (#141422) taints all three allocated devices of the driver, more than
// the breaker's 50%: the first pass writes no pod; the rule gets a Warning
// DeviceTaintEvictionHeld Event (the library's message) and a Warning
// DeviceTaintRuleSelectsAll Event, and its status says EvictionHeld. The
// operator's release annotation on the rule lets the evictions proceed,
// with a Normal DeviceTaintEvictionHoldReleased Event on the rule;
// annotating again changes nothing.
func TestDeviceHoldEventsAndRelease(t *testing.T) {
	rule := selectorRule("drain", nil, nil)
	f := newDevFixture(t, rule)
	pods := f.holdWorld(3)
	f.start(f.breakerConfig())
	f.c.DevicePass(f.ctx)
	for _, p := range pods {
		if x := f.state(p, taints.DeviceHeld); !slices.Equal(x.HeldBy, []string{devDriver}) {
			t.Errorf("pod %s held by %v, want [%s]", p, x.HeldBy, devDriver)
		}
	}
	f.c.DevicePass(f.ctx)
	f.clock.Step(time.Minute)
	f.c.DevicePass(f.ctx)
	if n := len(f.actions("patch", "pods", "status")) + len(f.actions("delete", "pods", "")); n != 0 {
		t.Fatalf("%d pod writes while held, want none", n)
	}
	held := "Evictions held: 3 of 3 allocated devices of driver gpu.example.com (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."
	if got, want := f.eventsWith(taints.DeviceHoldEventHeld), []recordedEvent{{ruleObjRef("drain"), v1.EventTypeWarning, taints.DeviceHoldEventHeld, held}}; !slices.Equal(got, want) {
		t.Errorf("hold Events %+v, want %+v", got, want)
	}
	if got := f.eventsWith("DeviceTaintRuleSelectsAll"); len(got) != 1 || got[0].ref != ruleObjRef("drain") || got[0].typ != v1.EventTypeWarning ||
		got[0].message != "DeviceTaintRule drain: empty device selector selects every device in the cluster (taint maintenance:NoExecute)." {
		t.Errorf("selector warning Events %+v, want one on the rule", got)
	}
	as := f.applies()
	if len(as) == 0 || !strings.Contains(string(as[0].GetPatch()), `"reason":"EvictionHeld"`) ||
		!strings.Contains(string(as[0].GetPatch()), "3 pods need to be evicted in 1 namespace. 3 of them held: "+held) {
		t.Fatalf("rule status applies %d, first %s; want EvictionHeld with the hold's message", len(as), func() []byte {
			if len(as) == 0 {
				return nil
			}
			return as[0].GetPatch()
		}())
	}

	// The operator confirms the rule.
	obj, err := f.dyn.Resource(controller.DeviceTaintRulesResource).Get(f.ctx, "drain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.SetAnnotations(map[string]string{controller.AnnotationReleaseEvictionHold: " " + devDriver + " ,"})
	f.updateRule(obj)
	f.eventually("the held pods deleted", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.actions("delete", "pods", "")) == 3
	})
	for _, p := range pods {
		if _, err := f.client.CoreV1().Pods(devNS).Get(f.ctx, p, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s: Get() = %v, want NotFound", p, err)
		}
	}
	released := "Hold released: 3 of 3 allocated devices of driver gpu.example.com (100%) have an untolerated NoExecute taint, more than 50%; evictions proceed, and the breaker is armed again when none is tainted."
	if got, want := f.eventsWith(taints.DeviceHoldEventReleased), []recordedEvent{{ruleObjRef("drain"), v1.EventTypeNormal, taints.DeviceHoldEventReleased, released}}; !slices.Equal(got, want) {
		t.Errorf("release Events %+v, want %+v", got, want)
	}
	if n := len(f.eventsWith("DeviceTaintManagerEviction")); n != 3 {
		t.Errorf("%d DeviceTaintManagerEviction Events, want 3", n)
	}
	if n := len(f.eventsWith(controller.ReasonReleaseIgnored)); n != 0 {
		t.Errorf("%d %s Events, want none", n, controller.ReasonReleaseIgnored)
	}
	// Idempotent: the annotation again, or another rule update, releases
	// nothing more and records nothing more.
	before := len(f.events.list())
	obj, _ = f.dyn.Resource(controller.DeviceTaintRulesResource).Get(f.ctx, "drain", metav1.GetOptions{})
	obj.SetLabels(map[string]string{"touched": "yes"})
	f.updateRule(obj)
	f.clock.Step(time.Minute)
	for range 3 {
		f.c.DevicePass(f.ctx)
	}
	for _, e := range f.events.list()[before:] {
		if e.reason != taints.DeviceHoldEventResumed { // the share falls once the pods and claims go; not here (claims stay)
			t.Errorf("Event after the release: %+v", e)
		}
	}
}

// TestDeviceHoldResumedWhenRuleDeleted: deleting the rule ends the hold
// with nothing evicted; the Normal DeviceTaintEvictionResumed Event goes
// to the rule the hold's Event went to (deleted by then: its Events still
// tell the story).
func TestDeviceHoldResumedWhenRuleDeleted(t *testing.T) {
	f := newDevFixture(t, selectorRule("drain", nil, nil))
	pods := f.holdWorld(2)
	f.start(f.breakerConfig())
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
	if err := f.dyn.Resource(controller.DeviceTaintRulesResource).Delete(f.ctx, "drain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.state(pods[0], taints.DeviceNotTainted)
	f.c.DevicePass(f.ctx)
	want := []recordedEvent{{ruleObjRef("drain"), v1.EventTypeNormal, taints.DeviceHoldEventResumed,
		"Evictions not held: 0 of 2 allocated devices of driver gpu.example.com (0%) have an untolerated NoExecute taint."}}
	if got := f.eventsWith(taints.DeviceHoldEventResumed); !slices.Equal(got, want) {
		t.Errorf("resume Events %+v, want %+v", got, want)
	}
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d deletes, want none", n)
	}
}

// TestDeviceHoldEventTargets: a hold caused by rules and a slice taint is
// recorded on the NoExecute rules that may select the driver (by name,
// not one naming another driver, not a None rule), then the slice, at
// most MaxHoldEventObjects objects; a slice hazard (a taint's TimeAdded
// moved later) is a Warning Event on the slice, with its UID.
func TestDeviceHoldEventTargets(t *testing.T) {
	var rules []*unstructured.Unstructured
	for i := range controller.MaxHoldEventObjects - 2 {
		rules = append(rules, selectorRule(fmt.Sprintf("r-%d", i), map[string]any{"pool": devPool, "device": "gpu-0"}, nil))
	}
	other := selectorRule("other-driver", map[string]any{"driver": "nic.example.com"}, nil)
	none := devRule("preview", resourcev1.DeviceTaintEffectNone, testutil.Epoch)
	f := newDevFixture(t, append(rules, other, none)...)
	pods := f.holdWorld(3)
	s, err := f.client.ResourceV1().ResourceSlices().Get(f.ctx, "slice-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.UID = "uid-slice-1"
	if _, err := f.client.ResourceV1().ResourceSlices().Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.start(f.breakerConfig())
	f.counted(1, 3) // synced, whatever order the informers delivered the rules and claims in
	f.state(pods[0], taints.DeviceDue)
	s, _ = f.client.ResourceV1().ResourceSlices().Get(f.ctx, "slice-1", metav1.GetOptions{})
	s.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{noExecute(testutil.Epoch)}
	s.Spec.Devices[2].Taints = []resourcev1.DeviceTaint{noExecute(testutil.Epoch)}
	if _, err := f.client.ResourceV1().ResourceSlices().Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.counted(3, 3)
	f.c.DevicePass(f.ctx)
	f.state(pods[1], taints.DeviceHeld)
	f.state(pods[0], taints.DeviceHeld)
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d deletes, want none: the pass judged the breaker first", n)
	}
	var got []string
	for _, e := range f.eventsWith(taints.DeviceHoldEventHeld) {
		got = append(got, e.ref.Kind+"/"+e.ref.Name+"/"+string(e.ref.UID))
	}
	var want []string
	for i := range controller.MaxHoldEventObjects - 2 {
		want = append(want, fmt.Sprintf("DeviceTaintRule/r-%d/uid-r-%d", i, i))
	}
	want = append(want, "ResourceSlice/slice-1/uid-slice-1")
	if !slices.Equal(got, want) {
		t.Errorf("hold Events on %q, want %q", got, want)
	}

	// The driver republishes its taints with a later TimeAdded.
	s, _ = f.client.ResourceV1().ResourceSlices().Get(f.ctx, "slice-1", metav1.GetOptions{})
	later := noExecute(testutil.Epoch.Add(time.Minute))
	s.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{later}
	s.Spec.Devices[2].Taints = []resourcev1.DeviceTaint{later}
	if _, err := f.client.ResourceV1().ResourceSlices().Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the TimeAdded warning", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.eventsWith("DeviceTaintTimeAddedReset")) > 0
	})
	w := f.eventsWith("DeviceTaintTimeAddedReset")
	wantRef := v1.ObjectReference{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice", Name: "slice-1", UID: "uid-slice-1"}
	if len(w) != 1 || w[0].ref != wantRef || w[0].typ != v1.EventTypeWarning ||
		!strings.HasPrefix(w[0].message, "ResourceSlice slice-1 device gpu.example.com/node-1/gpu-1: taint gpu.example.com/unhealthy:NoExecute TimeAdded moved from") ||
		!strings.Contains(w[0].message, "(and 1 more taint of the slice)") {
		t.Errorf("TimeAdded warning Events %+v, want one on %+v", w, wantRef)
	}
}

// TestDeviceHoldNotTrippedAtStart: at start the informers deliver the
// DeviceTaintRules, slices and claims in no particular order; rules before
// the claims make 1 of 1 allocated device tainted, over the breaker's
// 50%. The DeviceEvictor judges the breaker at the first pass, on the
// synced view (1 of 3): the pod on the tainted device is deleted and no
// hold is recorded. (Judged at each input, the breaker used to trip at
// most starts and, with ResumeShare 0, hold for good.)
func TestDeviceHoldNotTrippedAtStart(t *testing.T) {
	var rules []*unstructured.Unstructured
	for i := range 3 {
		rules = append(rules, selectorRule(fmt.Sprintf("r-%d", i), map[string]any{"pool": devPool, "device": "gpu-0"}, nil))
	}
	f := newDevFixture(t, rules...)
	f.holdWorld(3)
	f.start(f.breakerConfig())
	f.counted(1, 3)
	f.c.DevicePass(f.ctx)
	if got := f.actions("delete", "pods", ""); len(got) != 1 || got[0].(k8stesting.DeleteAction).GetName() != "job-0" {
		t.Errorf("deletes %v, want job-0's", got)
	}
	if got := f.eventsWith(taints.DeviceHoldEventHeld); len(got) != 0 {
		t.Errorf("hold Events %+v, want none", got)
	}
	if l := f.c.Devices().DriverLimits(nil); len(l) != 1 || l[0].State != taints.DeviceHoldArmed {
		t.Errorf("DriverLimits = %+v, want %s Armed", l, devDriver)
	}
}

// TestDeviceHoldEventsBounded: with more rules than MaxHoldEventObjects
// behind a hold, only the first MaxHoldEventObjects (by name) get its
// Event.
func TestDeviceHoldEventsBounded(t *testing.T) {
	var rules []*unstructured.Unstructured
	for i := range controller.MaxHoldEventObjects + 3 {
		rules = append(rules, selectorRule(fmt.Sprintf("r-%02d", i), map[string]any{"driver": devDriver}, nil))
	}
	f := newDevFixture(t, rules...)
	pods := f.holdWorld(2)
	f.start(f.breakerConfig())
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
	var got []string
	for _, e := range f.eventsWith(taints.DeviceHoldEventHeld) {
		got = append(got, e.ref.Name)
	}
	var want []string
	for i := range controller.MaxHoldEventObjects {
		want = append(want, fmt.Sprintf("r-%02d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("hold Events on %q, want %q", got, want)
	}
}

// TestDeviceReleaseIgnored: a release annotation naming a driver the
// rule's selector never selects releases nothing and is recorded once as
// a Warning Event on the rule (not again at each update of the rule); one
// naming too many drivers names the limit.
func TestDeviceReleaseIgnored(t *testing.T) {
	other := selectorRule("other", map[string]any{"driver": "nic.example.com"}, map[string]string{controller.AnnotationReleaseEvictionHold: devDriver})
	f := newDevFixture(t, selectorRule("drain", map[string]any{"driver": devDriver}, nil), other)
	pods := f.holdWorld(2)
	f.start(f.breakerConfig())
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
	f.eventually("the ignored release's Event", func() bool { return len(f.eventsWith(controller.ReasonReleaseIgnored)) > 0 })
	obj, _ := f.dyn.Resource(controller.DeviceTaintRulesResource).Get(f.ctx, "other", metav1.GetOptions{})
	obj.SetLabels(map[string]string{"touched": "yes"})
	f.updateRule(obj)
	f.clock.Step(time.Minute)
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
	want := []recordedEvent{{ruleObjRef("other"), v1.EventTypeWarning, controller.ReasonReleaseIgnored,
		"kubelifecycle.github.io/release-eviction-hold: driver(s) gpu.example.com ignored: the rule's device selector never selects their devices"}}
	if got := f.eventsWith(controller.ReasonReleaseIgnored); !slices.Equal(got, want) {
		t.Errorf("Events %+v, want %+v", got, want)
	}

	var many []string
	for i := range controller.MaxReleaseDrivers + 1 {
		many = append(many, fmt.Sprintf("d%d.example.com", i))
	}
	obj, _ = f.dyn.Resource(controller.DeviceTaintRulesResource).Get(f.ctx, "drain", metav1.GetOptions{})
	obj.SetAnnotations(map[string]string{controller.AnnotationReleaseEvictionHold: strings.Join(append(many, devDriver), ",")})
	f.updateRule(obj)
	f.eventually("the second ignored release's Event", func() bool { return len(f.eventsWith(controller.ReasonReleaseIgnored)) == 2 })
	if e := f.eventsWith(controller.ReasonReleaseIgnored)[1]; e.ref != ruleObjRef("drain") || !strings.Contains(e.message, "more than MaxReleaseDrivers (16) drivers") {
		t.Errorf("Event %+v, want one naming MaxReleaseDrivers on drain", e)
	}
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
}

// TestDeviceReleaseWithoutBreaker: with the blast-radius limit off (the
// default, upstream's behaviour) a rule with the release annotation is an
// ordinary rule: its pods are evicted, and only upstream's Events are
// recorded.
func TestDeviceReleaseWithoutBreaker(t *testing.T) {
	f := newDevFixture(t, selectorRule("drain", nil, map[string]string{controller.AnnotationReleaseEvictionHold: "nic.example.com"}))
	f.holdWorld(2)
	f.start(f.deviceConfig())
	f.eventually("both pods deleted", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.actions("delete", "pods", "")) == 2
	})
	for _, e := range f.events.list() {
		if e.reason != "DeviceTaintManagerEviction" {
			t.Errorf("Event %+v, want only DeviceTaintManagerEviction", e)
		}
	}
}

// TestDeviceReleaseSliceHoldWithNoneRule: a hold caused by the driver's
// own slice taints is released by the annotation on a None rule selecting
// the driver (which evicts nothing itself); the Held Event went to the
// slice, the Released one to the slice and the rule.
func TestDeviceReleaseSliceHoldWithNoneRule(t *testing.T) {
	f := newDevFixture(t)
	pods := f.holdWorld(2)
	f.start(f.breakerConfig())
	f.state(pods[0], taints.DeviceNotTainted)
	s, err := f.client.ResourceV1().ResourceSlices().Get(f.ctx, "slice-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Taints = []resourcev1.DeviceTaint{noExecute(testutil.Epoch)}
	}
	if _, err := f.client.ResourceV1().ResourceSlices().Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.counted(2, 2)
	f.c.DevicePass(f.ctx)
	f.state(pods[0], taints.DeviceHeld)
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Fatalf("%d deletes while held", n)
	}
	none := devRule("release-gpu", resourcev1.DeviceTaintEffectNone, testutil.Epoch)
	_ = unstructured.SetNestedMap(none.Object, map[string]any{"driver": devDriver}, "spec", "deviceSelector")
	none.SetAnnotations(map[string]string{controller.AnnotationReleaseEvictionHold: devDriver})
	if _, err := f.dyn.Resource(controller.DeviceTaintRulesResource).Create(f.ctx, none, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the held pods deleted", func() bool {
		f.c.DevicePass(f.ctx)
		return len(f.actions("delete", "pods", "")) == 2
	})
	var got []string
	for _, r := range []string{taints.DeviceHoldEventHeld, taints.DeviceHoldEventReleased} {
		for _, e := range f.eventsWith(r) {
			got = append(got, r+" "+e.ref.Kind+"/"+e.ref.Name)
		}
	}
	want := []string{"DeviceTaintEvictionHeld ResourceSlice/slice-1", "DeviceTaintEvictionHoldReleased ResourceSlice/slice-1",
		"DeviceTaintEvictionHoldReleased DeviceTaintRule/release-gpu"}
	if !slices.Equal(got, want) {
		t.Errorf("Events %q, want %q", got, want)
	}
}
