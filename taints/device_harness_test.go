package taints

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Fixtures of upstream's device_taint_eviction_test.go (v1.37.2), same
// names with a "u" prefix, built without the scheduler's test wrappers.

var (
	uTaintTime  = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // the synctest bubble's start
	uNode       = "worker"
	uNode2      = "worker-2"
	uDriver     = "some-driver"
	uPodName    = "my-pod"
	uPodUID     = "1234"
	uGroupName  = "my-podgroup"
	uGroupUID   = "5678"
	uResource   = "my-resource"
	uClaimName  = uPodName + "-" + uResource
	uNamespace  = "default"
	uTaintKey   = "example.com/taint"
	uTaintValue = "something"
	uTolerDur   = 60 * 60 * time.Second
	uLater      = uTaintTime.Add(40 * time.Second)
	uPeriod     = 10 * time.Second
)

func uMT(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
func uPtr[T any](v T) *T           { return &v }

func uDevice(name string, taints ...resourcev1.DeviceTaint) resourcev1.Device {
	return resourcev1.Device{Name: name, Taints: taints}
}

func uMakeSlice(node, driver string, devs ...resourcev1.Device) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver}}
	s.Spec.NodeName = &node
	s.Spec.Pool.Name = node
	s.Spec.Pool.ResourceSliceCount = 1
	s.Spec.Driver = driver
	s.Spec.Devices = devs
	return s
}

var (
	uSimpleSlice = uMakeSlice(uNode, uDriver, uDevice("instance"))
	uSlice       = uMakeSlice(uNode, uDriver,
		uDevice("instance"),
		uDevice("instance-no-schedule", resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNoSchedule}),
		uDevice("instance-no-execute",
			resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNone, TimeAdded: uMT(uTaintTime)},
			resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: uMT(uTaintTime)}))
	uSliceReplaced = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Name += "-updated"
		s.Spec.Pool.Generation++
		return s
	}()
	uSliceOtherDevices = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Name += "-other"
		}
		return s
	}()
	uTaint        = &resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, Value: uTaintValue, TimeAdded: uMT(uTaintTime)}
	uSliceTainted = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{*uTaint}
		return s
	}()
	uSliceTaintedExtended = func() *resourcev1.ResourceSlice {
		s := uSliceTainted.DeepCopy()
		s.Spec.Devices = append(s.Spec.Devices, *s.Spec.Devices[0].DeepCopy())
		s.Spec.Devices[len(s.Spec.Devices)-1].Name += "-other"
		return s
	}()
	uSliceTaintedEffect = func(e resourcev1.DeviceTaintEffect) *resourcev1.ResourceSlice {
		s := uSliceTainted.DeepCopy()
		for i := range s.Spec.Devices {
			for j := range s.Spec.Devices[i].Taints {
				s.Spec.Devices[i].Taints[j].Effect = e
			}
		}
		return s
	}
	uSliceTaintedNone       = uSliceTaintedEffect(resourcev1.DeviceTaintEffectNone)
	uSliceTaintedUnknown    = uSliceTaintedEffect("unknown-effect")
	uSliceTaintedNoSchedule = uSliceTaintedEffect(resourcev1.DeviceTaintEffectNoSchedule)
	uSliceTaintedValueOther = func() *resourcev1.ResourceSlice {
		s := uSliceTainted.DeepCopy()
		s.Spec.Devices[0].Taints[0] = resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, Value: uTaintValue + "-other", TimeAdded: uMT(uTaintTime)}
		return s
	}()
	uTaint1            = resourcev1.DeviceTaint{Key: uTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: uMT(uTaintTime)}
	uTaint2            = resourcev1.DeviceTaint{Key: uTaintKey + "-other", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: uMT(uTaintTime)}
	uSliceTaintedTwice = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{uTaint1, uTaint2}
		return s
	}()
	uSliceUntainted = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Spec.Devices[1].Taints = nil
		s.Spec.Devices[2].Taints = nil
		return s
	}()
	uSlice2 = func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Name += "-2"
		s.Spec.NodeName = &uNode2
		s.Spec.Pool.Name = uNode2
		s.Spec.Pool.Generation++
		return s
	}()
)

func uRule(name, uid string, sel DeviceTaintSelector, effect resourcev1.DeviceTaintEffect, added time.Time) DeviceTaintRule {
	return DeviceTaintRule{Name: name, UID: types.UID(uid), Selector: &sel,
		Taint: resourcev1.DeviceTaint{Key: uTaintKey, Value: uTaintValue, Effect: effect, TimeAdded: uMT(added)}}
}

var (
	uRuleEvict              = uRule("evict", "1234", DeviceTaintSelector{Driver: &uDriver}, resourcev1.DeviceTaintEffectNoExecute, uTaintTime)
	uRuleEvictInstance1     = uRule("evict-instance", "1234", DeviceTaintSelector{Driver: &uDriver, Device: uPtr("instance")}, resourcev1.DeviceTaintEffectNoExecute, uTaintTime)
	uRuleEvictInstance2Late = uRule("evict-instance-no-execute", "5678", DeviceTaintSelector{Driver: &uDriver, Device: uPtr("instance-no-execute")}, resourcev1.DeviceTaintEffectNoExecute, uLater)
	uRuleNone               = uRule("evict", "1234", DeviceTaintSelector{Driver: &uDriver}, resourcev1.DeviceTaintEffectNone, uTaintTime)
	uRuleEvictOther         = uRule("evict-other", "1234-other", DeviceTaintSelector{Device: uPtr("instance")}, resourcev1.DeviceTaintEffectNoExecute, uTaintTime)
)

func uResult(device string) resourcev1.DeviceRequestAllocationResult {
	return resourcev1.DeviceRequestAllocationResult{Driver: uDriver, Pool: uNode, Device: device, Request: "req-1"}
}

type uClaimOpt func(*resourcev1.ResourceClaim)

func uOwner(name, uid, apiVersion, kind string) uClaimOpt {
	return func(c *resourcev1.ResourceClaim) {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: uPtr(true)}}
	}
}
func uPodOwner(name, uid string) uClaimOpt { return uOwner(name, uid, "v1", "Pod") }
func uGroupOwner(name, uid string) uClaimOpt {
	return uOwner(name, uid, "scheduling.k8s.io/v1beta1", "PodGroup")
}
func uAlloc(devices ...string) uClaimOpt {
	return func(c *resourcev1.ResourceClaim) {
		a := &resourcev1.AllocationResult{}
		for _, d := range devices {
			a.Devices.Results = append(a.Devices.Results, uResult(d))
		}
		c.Status.Allocation = a
	}
}
func uReservedPods(nameUIDs ...string) uClaimOpt {
	return func(c *resourcev1.ResourceClaim) {
		for i := 0; i < len(nameUIDs); i += 2 {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: nameUIDs[i], UID: types.UID(nameUIDs[i+1])})
		}
	}
}
func uReservedGroup(name, uid string) uClaimOpt {
	return func(c *resourcev1.ResourceClaim) {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: name, UID: types.UID(uid)})
	}
}
func uNS(ns string) uClaimOpt      { return func(c *resourcev1.ResourceClaim) { c.Namespace = ns } }
func uName(n string) uClaimOpt     { return func(c *resourcev1.ResourceClaim) { c.Name = n } }
func uClaimUID(u string) uClaimOpt { return func(c *resourcev1.ResourceClaim) { c.UID = types.UID(u) } }
func uTols(tols ...resourcev1.DeviceToleration) uClaimOpt {
	return func(c *resourcev1.ResourceClaim) { c.Status.Allocation.Devices.Results[0].Tolerations = tols }
}

func uClaim(opts ...uClaimOpt) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: uClaimName, Namespace: uNamespace}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func uTol(key string, op resourcev1.DeviceTolerationOperator, value string, secs *int64) resourcev1.DeviceToleration {
	return resourcev1.DeviceToleration{Key: key, Operator: op, Value: value, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: secs}
}

var (
	uPlainClaim              = uClaim()
	uInUseClaim              = uClaim(uPodOwner(uPodName, uPodUID), uAlloc("instance"), uReservedPods(uPodName, uPodUID))
	uInUseClaimByPodGroup    = uClaim(uGroupOwner(uGroupName, uGroupUID), uAlloc("instance"), uReservedGroup(uGroupName, uGroupUID))
	uInUseClaimOtherNS       = uClaim(uNS(uNamespace+"-other"), uPodOwner(uPodName, uPodUID+"-2"), uAlloc("instance-no-schedule", "instance-no-execute"), uReservedPods(uPodName, uPodUID+"-2"))
	uInUseClaimOtherName     = uClaim(uName(uClaimName+"-other"), uPodOwner(uPodName+"-other", uPodUID+"-3"), uAlloc("instance-no-schedule", "instance-no-execute"), uReservedPods(uPodName+"-other", uPodUID+"-3"))
	uInUseClaimOtherNameShrd = uClaim(uName(uClaimName+"-other"), uPodOwner(uPodName+"-other", uPodUID+"-3"), uAlloc("instance-no-schedule", "instance-no-execute"), uReservedPods(uPodName, uPodUID, uPodName+"-other", uPodUID+"-3"))
	uInUseClaimWithTol       = uClaim(uPodOwner(uPodName, uPodUID), uAlloc("instance"), uReservedPods(uPodName, uPodUID),
		uTols(uTol(uTaintKey, resourcev1.DeviceTolerationOpEqual, uTaintValue, uPtr(int64(uTolerDur.Seconds())))))
	uInUseClaimOld = uClaim(uPodOwner(uPodName, uPodUID+"-other"), uAlloc("instance"), uReservedPods(uPodName, uPodUID), uClaimUID("other"))
)

// uPod is a pod and its PodGroup (spec.schedulingGroup, which k8s.io/api
// v0.35 lacks: the harness passes it to SetPodInGroup).
type uPod struct {
	*v1.Pod
	group string
}

type uPodOpt func(*uPod)

func uClaimRef(name string, claim *string) uPodOpt {
	return func(p *uPod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimName: claim})
	}
}
func uTemplateRef(name string, template *string) uPodOpt {
	return func(p *uPod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimTemplateName: template})
	}
}
func uOnNode(n string) uPodOpt    { return func(p *uPod) { p.Spec.NodeName = n } }
func uPodUIDOpt(u string) uPodOpt { return func(p *uPod) { p.UID = types.UID(u) } }
func uPodNS(ns string) uPodOpt    { return func(p *uPod) { p.Namespace = ns } }
func uPodN(n string) uPodOpt      { return func(p *uPod) { p.Name = n } }
func uInGroup(g string) uPodOpt   { return func(p *uPod) { p.group = g } }
func uClaimStatus(name string, claim *string) uPodOpt {
	return func(p *uPod) {
		p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: name, ResourceClaimName: claim})
	}
}
func uExtended(claim string) uPodOpt {
	return func(p *uPod) {
		p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim}
	}
}

func uMakePod(opts ...uPodOpt) uPod {
	p := uPod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uPodName, Namespace: uNamespace, UID: types.UID(uPodUID)}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

var (
	uUnscheduledPod         = uMakePod(uClaimRef(uResource, &uClaimName))
	uPodWithClaimName       = uMakePod(uClaimRef(uResource, &uClaimName), uOnNode(uNode))
	uPodWithPodGroup        = uMakePod(uOnNode(uNode), uInGroup(uGroupName))
	uPodWithPodGroupClaim   = uMakePod(uClaimRef(uResource, &uClaimName), uOnNode(uNode), uInGroup(uGroupName))
	uPodWithTwoClaimNames   = uMakePod(uClaimRef(uResource, &uInUseClaim.Name), uClaimRef(uResource+"-other", &uInUseClaimOtherName.Name), uOnNode(uNode))
	uPodWithClaimOtherUID   = uMakePod(uPodUIDOpt(uPodUID+"-other"), uClaimRef(uResource, &uClaimName), uOnNode(uNode))
	uPodWithClaimOtherNS    = uMakePod(uPodNS(uNamespace+"-other"), uPodUIDOpt(uPodUID+"-2"), uClaimRef(uResource, &uClaimName), uOnNode(uNode))
	uPodWithClaimOtherName  = uMakePod(uPodN(uPodName+"-other"), uPodUIDOpt(uPodUID+"-3"), uClaimRef(uResource, &uInUseClaimOtherName.Name), uOnNode(uNode))
	uPodWithClaimTemplate   = uMakePod(uTemplateRef(uResource, &uClaimName), uOnNode(uNode))
	uPodWithTemplateStatus  = uMakePod(uTemplateRef(uResource, &uClaimName), uOnNode(uNode), uClaimStatus(uResource, &uClaimName))
	uPodWithTemplateNoClaim = uMakePod(uTemplateRef(uResource, &uClaimName), uOnNode(uNode), uClaimStatus(uResource, nil))
	uPodWithoutClaims       = uMakePod(uOnNode(uNode))
	uPodWithExtended        = uMakePod(uOnNode(uNode), uExtended(uClaimName))
	uPodUnbound             = func() uPod {
		p := uMakePod(uClaimRef(uResource, &uClaimName), uOnNode(uNode))
		p.Spec.NodeName = ""
		return p
	}()
)

// uEvent is an Event the emulated controller records.
type uEvent struct{ pod, uid, message string }

// harness drives a DeviceEvictor as upstream's controller drives its
// handlers and workers, over a fake API: the pods and the rules' status.
type harness struct {
	t       *testing.T
	d       *DeviceEvictor
	now     time.Time
	pods    map[types.NamespacedName]uPod
	rules   map[string]DeviceTaintRule
	events  []uEvent
	cancels int
	// feedback: written rule statuses reach the DeviceEvictor (a running
	// informer); upstream's TestController has none (its rule lister never
	// sees the writes).
	feedback bool
	// getErrs makes the next Gets of a pod fail (TestRetry).
	getErrs int
	// goneOnGet deletes the pod when it is read (TestParallelPodDeletion).
	goneOnGet bool
	deletions []time.Duration // latencies of counted deletions (upstream's metrics)
	patched   map[types.NamespacedName]v1.PodCondition
	// trace, when set, records every output (TestDeviceLimitsParity).
	trace *strings.Builder
}

// deviceTestConfig, when set, adjusts the config of the DeviceEvictors
// the harness and the model test make; deviceTrace, when set, gives each
// harness a transcript of its outputs (TestDeviceLimitsParity runs the
// parity suites under other configs and compares the transcripts).
var (
	deviceTestConfig func(*DeviceEvictorConfig)
	deviceTrace      func(*testing.T) *strings.Builder
)

func testDeviceConfig() DeviceEvictorConfig {
	cfg := DefaultDeviceEvictorConfig()
	if deviceTestConfig != nil {
		deviceTestConfig(&cfg)
	}
	return cfg
}

func newHarness(t *testing.T, workload bool, start time.Time) *harness {
	t.Helper()
	cfg := testDeviceConfig()
	cfg.WorkloadResourceClaims = workload
	d, err := NewDeviceEvictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, d: d, now: start, pods: map[types.NamespacedName]uPod{}, rules: map[string]DeviceTaintRule{}, patched: map[types.NamespacedName]v1.PodCondition{}}
	if deviceTrace != nil {
		h.trace = deviceTrace(t)
		fmt.Fprintf(h.trace, "harness at %s\n", start.UTC().Format(time.RFC3339Nano))
	}
	return h
}

// record adds a line to the transcript.
func (h *harness) record(format string, args ...any) {
	if h.trace != nil {
		fmt.Fprintf(h.trace, format+"\n", args...)
	}
}

// traceEviction describes x in full (pointers by value).
func traceEviction(x DeviceEviction) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s at %s attempt %d:", x.Pod, x.UID, x.At.UTC().Format(time.RFC3339Nano), x.Attempt)
	for _, s := range x.Taints {
		ta := "-"
		if s.Taint.TimeAdded != nil {
			ta = s.Taint.TimeAdded.UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, " [%s uid %s %s=%s:%s @%s]", s, s.RuleUID, s.Taint.Key, s.Taint.Value, s.Taint.Effect, ta)
	}
	return b.String()
}

func podKey(p uPod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

func (h *harness) setSlice(s *resourcev1.ResourceSlice) {
	h.t.Helper()
	if err := h.d.SetSlice(h.now, s); err != nil {
		h.t.Fatal(err)
	}
}
func (h *harness) setClaim(c *resourcev1.ResourceClaim) {
	h.t.Helper()
	if err := h.d.SetClaim(h.now, c); err != nil {
		h.t.Fatal(err)
	}
}
func (h *harness) setPod(p uPod) {
	h.t.Helper()
	h.pods[podKey(p)] = p
	if err := h.d.SetPodInGroup(h.now, p.Pod, p.group); err != nil {
		h.t.Fatal(err)
	}
}
func (h *harness) deletePod(p uPod) {
	delete(h.pods, podKey(p))
	h.d.DeletePod(podKey(p))
}
func (h *harness) setRule(r DeviceTaintRule) {
	h.rules[r.Name] = r
	h.d.SetRule(h.now, r)
}
func (h *harness) deleteRule(r DeviceTaintRule) {
	delete(h.rules, r.Name)
	h.d.DeleteRule(h.now, r.Name)
}

// drain collects cancellations as Events.
func (h *harness) drain() {
	for _, c := range h.d.AppendCancelled(nil) {
		h.record("cancelled %s/%s at %s", c.Pod, c.UID, c.At.UTC().Format(time.RFC3339Nano))
		h.events = append(h.events, uEvent{c.Pod.String(), string(c.UID), DeviceEventCancelling})
		h.cancels++
	}
}

// process is upstream's worker over every ready item: rule status first
// (see RuleStatuses), then the pod deletions, as addConditionAndDeletePod
// does them, until nothing is due at h.now.
func (h *harness) process() {
	h.t.Helper()
	h.drain()
	for {
		sts := h.d.RuleStatuses(h.now)
		for _, s := range sts {
			h.record("status %s/%s: %s gen %d type %s", s.Rule, s.UID, condString(s.Condition), s.Condition.ObservedGeneration, s.Condition.Type)
			r, ok := h.rules[s.Rule]
			if !ok || r.UID != s.UID {
				continue
			}
			r.Conditions = []metav1.Condition{s.Condition}
			h.rules[s.Rule] = r
			if h.feedback {
				h.d.SetRule(h.now, r)
			}
		}
		evs := h.d.Due(h.now)
		for _, x := range evs {
			h.record("due at %s: %s", h.now.UTC().Format(time.RFC3339Nano), traceEviction(x))
			h.evict(x)
		}
		h.drain()
		if len(sts) == 0 && len(evs) == 0 {
			if h.trace != nil {
				at, ok := h.d.NextDeadline()
				h.record("idle at %s: next %v %s, %d scheduled", h.now.UTC().Format(time.RFC3339Nano), ok, at.UTC().Format(time.RFC3339Nano), h.d.Len())
			}
			return
		}
	}
}

func (h *harness) evict(x DeviceEviction) {
	p, ok := h.pods[x.Pod]
	if h.getErrs > 0 {
		h.getErrs--
		h.d.Retry(h.now, x, 5*time.Millisecond) // client-go's first exponential step
		return
	}
	if ok && h.goneOnGet {
		delete(h.pods, x.Pod)
		ok = false
	}
	if !ok || p.UID != x.UID {
		h.d.Done(h.now, x, DeviceGone)
		return
	}
	if p.DeletionTimestamp == nil {
		h.events = append(h.events, uEvent{x.Pod.String(), string(x.UID), DeviceEventEvicting})
		h.patched[x.Pod] = DeviceDisruptionTargetCondition(h.now)
		delete(h.pods, x.Pod)
	}
	h.deletions = append(h.deletions, h.now.Sub(x.At))
	h.d.Done(h.now, x, DeviceDeleted)
}

// scheduled is upstream's deletePodAt: each scheduled (or handed-out)
// eviction's time and reasons.
func (h *harness) scheduled() map[string]string {
	out := map[string]string{}
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	h.d.pods.each(func(p *devPod) {
		if p.state == stScheduled || p.state == stHandedOut {
			out[p.key.String()+"/"+string(h.d.uidOf(p))] = evString(p.ev.at, h.d.sources(p))
		}
	})
	return out
}

// claimEvictions is upstream's allocatedClaims: each allocated claim's
// eviction, "" for none.
func (h *harness) claimEvictions() map[string]string {
	out := map[string]string{}
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	for k, c := range h.d.claims {
		if !c.allocated {
			continue
		}
		s := ""
		if c.has {
			var times []metav1.Time
			srcs := h.d.claimSources(nil, &times, c)
			slices.SortFunc(srcs, func(a, b DeviceTaintSource) int { return compareSources(&a, &b) })
			s = evString(c.when, slices.CompactFunc(srcs, func(a, b DeviceTaintSource) bool { return compareSources(&a, &b) == 0 }))
		}
		out[k.String()] = s
	}
	return out
}

func (h *harness) ruleStats() map[types.UID]int64 {
	out := map[types.UID]int64{}
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	for _, r := range h.d.rules {
		if r.evicted > 0 {
			out[r.uid] = r.evicted
		}
	}
	return out
}

func (h *harness) ruleConds() map[string]string {
	out := map[string]string{}
	for n, r := range h.rules {
		for _, c := range r.Conditions {
			out[n] = condString(c)
		}
	}
	return out
}

func (h *harness) podNames() []string {
	var out []string
	for k := range h.pods {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

func (h *harness) eventStrings() []string {
	var out []string
	for _, e := range h.events {
		out = append(out, e.pod+"/"+e.uid+": "+e.message)
	}
	sort.Strings(out)
	return out
}

func evString(at time.Time, srcs []DeviceTaintSource) string {
	parts := make([]string, len(srcs))
	for i, s := range srcs {
		parts[i] = s.String()
	}
	return at.UTC().Format(time.RFC3339) + " (" + strings.Join(parts, ", ") + ")"
}

func condString(c metav1.Condition) string {
	return fmt.Sprintf("%s %s %q @%s", c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339))
}

// Expected-value builders.

func wantEv(at time.Time, srcs ...string) string {
	return at.UTC().Format(time.RFC3339) + " (" + strings.Join(srcs, ", ") + ")"
}

// srcSlice names slice taint number i of device dev in slice s.
func srcSlice(s *resourcev1.ResourceSlice, dev string, i int) string {
	return DeviceTaintSource{Slice: s.Name, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: dev, Index: i}.String()
}
func srcRule(r DeviceTaintRule) string { return DeviceTaintSource{Rule: r.Name}.String() }

func wantCond(status bool, reason, message string, at time.Time) string {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return condString(metav1.Condition{Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at)})
}

func podRef(p uPod) string { return podKey(p).String() + "/" + string(p.UID) }

func deleteEvent(p uPod) string {
	return podKey(p).String() + "/" + string(p.UID) + ": " + DeviceEventEvicting
}
func cancelEvent(p uPod) string {
	return podKey(p).String() + "/" + string(p.UID) + ": " + DeviceEventCancelling
}
