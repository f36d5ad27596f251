package taints

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The cases of upstream's TestController (pkg/controller/devicetainteviction
// device_taint_eviction_test.go at v1.37.2), ported as table tests of the
// DeviceEvictor: same inputs (every permutation of the events, as
// upstream), same eviction times and reasons (deletePodAt and
// allocatedClaims), same rule conditions, statistics, pods left and Event
// texts after each processing step. Not ported: the work queue's contents
// (queued, queuedProcessed, queuedShifted), which are upstream's
// implementation; and the pools' internal state. Upstream injects its
// initial state; here the initial objects are fed in, and the resulting
// state is checked against upstream's initial deletePodAt.

// op is one input event.
type op struct {
	name string
	f    func(h *harness)
}

func addS(s *resourcev1.ResourceSlice) op {
	return op{"add slice " + s.Name, func(h *harness) { h.setSlice(s) }}
}
func updS(_, s *resourcev1.ResourceSlice) op {
	return op{"update slice " + s.Name, func(h *harness) { h.setSlice(s) }}
}
func remS(s *resourcev1.ResourceSlice) op {
	return op{"remove slice " + s.Name, func(h *harness) { h.d.DeleteSlice(h.now, s.Name) }}
}
func addC(c *resourcev1.ResourceClaim) op {
	return op{"add claim " + c.Name, func(h *harness) { h.setClaim(c) }}
}
func updC(_, c *resourcev1.ResourceClaim) op {
	return op{"update claim " + c.Name, func(h *harness) { h.setClaim(c) }}
}
func remC(c *resourcev1.ResourceClaim) op {
	return op{"remove claim " + c.Name, func(h *harness) {
		h.d.DeleteClaim(h.now, types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
	}}
}
func addP(p uPod) op    { return op{"add pod " + p.Name, func(h *harness) { h.setPod(p) }} }
func updP(_, p uPod) op { return op{"update pod " + p.Name, func(h *harness) { h.setPod(p) }} }
func remP(p uPod) op    { return op{"remove pod " + p.Name, func(h *harness) { h.deletePod(p) }} }
func addR(r DeviceTaintRule) op {
	return op{"add rule " + r.Name, func(h *harness) { h.setRule(r) }}
}
func group(ops ...op) op {
	var names []string
	for _, o := range ops {
		names = append(names, o.name)
	}
	return op{"[" + strings.Join(names, "; ") + "]", func(h *harness) {
		for _, o := range ops {
			o.f(h)
		}
	}}
}

type pstep struct {
	pods      []uPod
	rules     map[string]string
	stats     map[types.UID]int64
	scheduled map[string]string
	advance   time.Duration
}

type parityCase struct {
	workload      bool
	initSlices    []*resourcev1.ResourceSlice
	initClaims    []*resourcev1.ResourceClaim
	initPods      []uPod
	initScheduled map[string]string
	events        []op
	claims        map[string]string // final allocatedClaims: key -> eviction ("" none)
	scheduled     map[string]string // final deletePodAt
	process       []pstep           // default: one step
	want          []string          // Events
	// upstreamRules, when set, are the rule conditions upstream reaches in
	// a step where the DeviceEvictor deliberately differs (see the case).
	upstreamRules map[int]map[string]string
}

func ck(c *resourcev1.ResourceClaim) string { return c.Namespace + "/" + c.Name }

func tolsClaim(tols ...resourcev1.DeviceToleration) *resourcev1.ResourceClaim {
	c := uInUseClaim.DeepCopy()
	c.Status.Allocation.Devices.Results[0].Tolerations = tols
	return c
}

func TestDeviceParityController(t *testing.T) {
	t0 := uTaintTime
	devInst := uSliceTainted.Spec.Devices[0].Name
	evSlice := wantEv(t0, srcSlice(uSliceTainted, devInst, 0))
	pod := uPodWithClaimName
	claimEvRule := wantEv(t0, srcRule(uRuleEvict))
	laterMany := tolsClaim(
		uTol(uTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, uTaintValue, uPtr(int64(20))),
		uTol("", resourcev1.DeviceTolerationOpExists, "", uPtr(int64(60))),
		uTol("", resourcev1.DeviceTolerationOpExists, "", uPtr(int64(30))))
	mismatch := tolsClaim(uTol(uTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, uTaintValue, uPtr(int64(60))))
	forever := tolsClaim(uTol("", resourcev1.DeviceTolerationOpExists, "", nil))
	foreverMany := tolsClaim(uTol("", resourcev1.DeviceTolerationOpExists, "", uPtr(int64(60))), uTol("", resourcev1.DeviceTolerationOpExists, "", nil))
	partial := tolsClaim(uTol(uTaint1.Key, resourcev1.DeviceTolerationOpExists, "", nil))
	manyTaints := tolsClaim(uTol(uTaint1.Key, resourcev1.DeviceTolerationOpExists, "", uPtr(int64(60))), uTol(uTaint2.Key, resourcev1.DeviceTolerationOpExists, "", uPtr(int64(30))))
	tol60 := tolsClaim(uTol("", resourcev1.DeviceTolerationOpExists, "", uPtr(int64(60))))
	evMany := wantEv(t0.Add(30*time.Second), srcRule(uRuleEvict), srcRule(uRuleEvictOther), srcSlice(uSliceTaintedTwice, devInst, 0), srcSlice(uSliceTaintedTwice, devInst, 1))
	pendingOne := func(at time.Time) string {
		return wantCond(true, "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", at)
	}
	completed := func(n string, at time.Time) string {
		return wantCond(false, "Completed", n+" evicted since starting the controller.", at)
	}
	noEffect := func(msg string) string {
		return wantCond(false, "NoEffect", msg+" This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.", t0)
	}

	cases := map[string]parityCase{
		"empty":          {},
		"populate-pools": {events: []op{addS(uSlice), addS(uSlice2)}},
		"update-pools": {initSlices: l(uSlice, uSlice2),
			events: []op{updS(uSlice, uSliceUntainted), remS(uSlice2)}},
		"untainted-claim": {events: []op{addS(uSlice), addS(uSlice2), addC(uInUseClaim)},
			claims: map[string]string{ck(uInUseClaim): ""}},
		"tainted-claim-through-resourceslice": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim)},
			claims: map[string]string{ck(uInUseClaim): evSlice}},
		"rule-status": {events: []op{addR(uRuleEvict)},
			process: []pstep{{rules: map[string]string{"evict": wantCond(false, "NotStarted", "", t0)}}}},
		"tainted-claim-through-rule": {events: []op{addR(uRuleEvict), addC(uInUseClaim)},
			claims:  map[string]string{ck(uInUseClaim): claimEvRule},
			process: []pstep{{rules: map[string]string{"evict": wantCond(false, "NotStarted", "", t0)}}}},
		"evict-pod-resourceclaim": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(pod)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(deleteEvent(pod))},
		"evict-pod-resourceclaim-podgroup": {workload: true,
			events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaimByPodGroup), addP(uPodWithPodGroupClaim)},
			claims: map[string]string{ck(uInUseClaimByPodGroup): evSlice}, scheduled: map[string]string{podRef(uPodWithPodGroupClaim): evSlice},
			want: l(deleteEvent(uPodWithPodGroupClaim))},
		"no-evict-pod-in-podgroup-without-claim": {workload: true,
			events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaimByPodGroup), addP(uPodWithPodGroup)},
			claims: map[string]string{ck(uInUseClaimByPodGroup): evSlice}},
		"evict-pod-rule": {events: []op{addC(uInUseClaim), addP(pod), addR(uRuleEvict)},
			claims: map[string]string{ck(uInUseClaim): claimEvRule}, scheduled: map[string]string{podRef(pod): claimEvRule},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": pendingOne(t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": completed("1 pod", t0.Add(uPeriod))}},
			},
			want: l(deleteEvent(pod))},
		"evict-pod-rule-later": func() parityCase {
			ev := wantEv(t0.Add(uTolerDur), srcRule(uRuleEvict))
			return parityCase{events: []op{addC(uInUseClaimWithTol), addP(pod), addR(uRuleEvict)},
				claims: map[string]string{ck(uInUseClaimWithTol): ev}, scheduled: map[string]string{podRef(pod): ev},
				process: []pstep{
					{scheduled: map[string]string{podRef(pod): ev}, pods: l(pod), rules: map[string]string{"evict": pendingOne(t0)}, advance: uPeriod},
					{scheduled: map[string]string{podRef(pod): ev}, pods: l(pod), rules: map[string]string{"evict": pendingOne(t0.Add(uPeriod))}, advance: uTolerDur - uPeriod},
					{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": pendingOne(t0.Add(uPeriod))}, advance: uPeriod},
					{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": completed("1 pod", t0.Add(uTolerDur+uPeriod))}},
				},
				want: l(deleteEvent(pod))}
		}(),
		"evict-many-pods-many-namespaces": {events: []op{addC(uInUseClaim), addP(pod), addC(uInUseClaimOtherNS), addP(uPodWithClaimOtherNS), addR(uRuleEvict)},
			claims:    map[string]string{ck(uInUseClaim): claimEvRule, ck(uInUseClaimOtherNS): claimEvRule},
			scheduled: map[string]string{podRef(pod): claimEvRule, podRef(uPodWithClaimOtherNS): claimEvRule},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 2}, rules: map[string]string{"evict": wantCond(true, "PodsPendingEviction", "2 pods need to be evicted in 2 different namespaces.", t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 2}, rules: map[string]string{"evict": completed("2 pods", t0.Add(uPeriod))}},
			},
			want: l(deleteEvent(pod), deleteEvent(uPodWithClaimOtherNS))},
		"evict-many-pods-same-namespace": {events: []op{addC(uInUseClaim), addP(pod), addC(uInUseClaimOtherName), addP(uPodWithClaimOtherName), addR(uRuleEvict)},
			claims:    map[string]string{ck(uInUseClaim): claimEvRule, ck(uInUseClaimOtherName): claimEvRule},
			scheduled: map[string]string{podRef(pod): claimEvRule, podRef(uPodWithClaimOtherName): claimEvRule},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 2}, rules: map[string]string{"evict": wantCond(true, "PodsPendingEviction", "2 pods need to be evicted in 1 namespace.", t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 2}, rules: map[string]string{"evict": completed("2 pods", t0.Add(uPeriod))}},
			},
			want: l(deleteEvent(pod), deleteEvent(uPodWithClaimOtherName))},
		"none-pod-rule": {events: []op{addS(uSlice), addC(uInUseClaim), addP(pod), addR(uRuleNone)},
			claims: map[string]string{ck(uInUseClaim): ""},
			process: []pstep{{pods: l(pod), rules: map[string]string{"evict": noEffect(
				"3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute.")}}}},
		"none-many-pods-many-namespaces": {events: []op{addC(uInUseClaim), addP(pod), addC(uInUseClaimOtherNS), addP(uPodWithClaimOtherNS), addR(uRuleNone)},
			claims: map[string]string{ck(uInUseClaim): "", ck(uInUseClaimOtherNS): ""},
			process: []pstep{{pods: l(pod, uPodWithClaimOtherNS), rules: map[string]string{"evict": noEffect(
				"0 published devices selected. 3 allocated devices selected. 2 pods would be evicted in 2 different namespaces if the effect was NoExecute.")}}}},
		"none-many-pods-same-namespace": {events: []op{addC(uInUseClaim), addP(pod), addC(uInUseClaimOtherName), addP(uPodWithClaimOtherName), addR(uRuleNone)},
			claims: map[string]string{ck(uInUseClaim): "", ck(uInUseClaimOtherName): ""},
			process: []pstep{{pods: l(pod, uPodWithClaimOtherName), rules: map[string]string{"evict": noEffect(
				"0 published devices selected. 3 allocated devices selected. 2 pods would be evicted in 1 namespace if the effect was NoExecute.")}}}},
		"none-podgroup-rule": {workload: true, events: []op{addS(uSlice), addC(uInUseClaimByPodGroup), addP(uPodWithPodGroupClaim), addR(uRuleNone)},
			claims: map[string]string{ck(uInUseClaimByPodGroup): ""},
			process: []pstep{{pods: l(uPodWithPodGroupClaim), rules: map[string]string{"evict": noEffect(
				"3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute.")}}}},
		"multiple-claims-same-rule": {events: []op{addC(uInUseClaim), addC(uInUseClaimOtherNameShrd), addP(uPodWithTwoClaimNames), addR(uRuleEvict)},
			claims:    map[string]string{ck(uInUseClaim): claimEvRule, ck(uInUseClaimOtherNameShrd): claimEvRule},
			scheduled: map[string]string{podRef(uPodWithTwoClaimNames): claimEvRule},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": pendingOne(t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 1}, rules: map[string]string{"evict": completed("1 pod", t0.Add(uPeriod))}},
			},
			want: l(deleteEvent(uPodWithTwoClaimNames))},
		// Upstream's comment: "The order matters here: the work queue gets
		// populated differently depending on what is observed first". Its
		// queue runs the second rule's first status check after the pod's
		// deletion (Completed at t0); RuleStatuses runs every due check
		// before Due hands out deletions, so the DeviceEvictor reports
		// PodsPendingEviction at t0, as upstream does in order-2. Ten
		// seconds later both agree.
		"multiple-claims-different-rules-order-1": {
			events:    []op{group(addC(uInUseClaim), addC(uInUseClaimOtherNameShrd), addP(uPodWithTwoClaimNames), addR(uRuleEvictInstance1), addR(uRuleEvictInstance2Late))},
			claims:    map[string]string{ck(uInUseClaim): wantEv(t0, srcRule(uRuleEvictInstance1)), ck(uInUseClaimOtherNameShrd): wantEv(uLater, srcRule(uRuleEvictInstance2Late))},
			scheduled: map[string]string{podRef(uPodWithTwoClaimNames): wantEv(t0, srcRule(uRuleEvictInstance1), srcRule(uRuleEvictInstance2Late))},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 1, "5678": 1}, rules: map[string]string{"evict-instance": pendingOne(t0), "evict-instance-no-execute": pendingOne(t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 1, "5678": 1}, rules: map[string]string{"evict-instance": completed("1 pod", t0.Add(uPeriod)), "evict-instance-no-execute": completed("1 pod", t0.Add(uPeriod))}},
			},
			upstreamRules: map[int]map[string]string{0: {"evict-instance": pendingOne(t0), "evict-instance-no-execute": completed("1 pod", t0)}},
			want:          l(deleteEvent(uPodWithTwoClaimNames))},
		"multiple-claims-different-rules-order-2": {
			events:    []op{group(addC(uInUseClaim), addC(uInUseClaimOtherNameShrd), addP(uPodWithTwoClaimNames), addR(uRuleEvictInstance2Late), addR(uRuleEvictInstance1))},
			claims:    map[string]string{ck(uInUseClaim): wantEv(t0, srcRule(uRuleEvictInstance1)), ck(uInUseClaimOtherNameShrd): wantEv(uLater, srcRule(uRuleEvictInstance2Late))},
			scheduled: map[string]string{podRef(uPodWithTwoClaimNames): wantEv(t0, srcRule(uRuleEvictInstance1), srcRule(uRuleEvictInstance2Late))},
			process: []pstep{
				{stats: map[types.UID]int64{"1234": 1, "5678": 1}, rules: map[string]string{"evict-instance": pendingOne(t0), "evict-instance-no-execute": pendingOne(t0)}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 1, "5678": 1}, rules: map[string]string{"evict-instance": completed("1 pod", t0.Add(uPeriod)), "evict-instance-no-execute": completed("1 pod", t0.Add(uPeriod))}, advance: uLater.Sub(t0) - uPeriod},
				{stats: map[types.UID]int64{"1234": 1, "5678": 1}, rules: map[string]string{"evict-instance": completed("1 pod", t0.Add(uPeriod)), "evict-instance-no-execute": completed("1 pod", t0.Add(uPeriod))}},
			},
			want: l(deleteEvent(uPodWithTwoClaimNames))},
		"evict-pod-resourceclaim-again": {initPods: l(pod), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(pod): evSlice},
			events:        []op{group(remS(uSliceTainted), addS(uSliceTainted))},
			claims:        map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(cancelEvent(pod), deleteEvent(pod))},
		"evict-pod-after-scheduling": {initPods: l(uUnscheduledPod), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			events: []op{updP(uUnscheduledPod, pod)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(deleteEvent(pod))},
		"evict-pod-resourceclaim-unrelated-changes": {initPods: l(pod), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(pod): evSlice},
			events:        []op{updS(uSliceTainted, uSliceTaintedExtended), updC(uInUseClaim, uInUseClaim), updP(pod, pod)},
			claims:        map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(deleteEvent(pod))},
		"evict-pod-resourceclaimtemplate": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodWithTemplateStatus)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			want: l(deleteEvent(pod))},
		"evict-pod-extended-resourceclaim": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodWithExtended)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(uPodWithExtended): evSlice},
			want: l(deleteEvent(pod))},
		"evict-pod-extended-resourceclaim-status-update": {initPods: l(uPodWithoutClaims), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			events: []op{updP(uPodWithoutClaims, uPodWithExtended)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(uPodWithExtended): evSlice},
			want: l(deleteEvent(pod))},
		"no-evict-extended-resourceclaim-wrong-owner": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaimOld), addP(uPodWithExtended)},
			claims: map[string]string{ck(uInUseClaimOld): evSlice}},
		"evict-pod-later": func() parityCase {
			ev := wantEv(t0.Add(uTolerDur), srcSlice(uSliceTainted, devInst, 0))
			return parityCase{events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaimWithTol), addP(pod)},
				claims: map[string]string{ck(uInUseClaimWithTol): ev}, scheduled: map[string]string{podRef(pod): ev},
				process: []pstep{{scheduled: map[string]string{podRef(pod): ev}, pods: l(pod), advance: uTolerDur}, {}},
				want:    l(deleteEvent(pod))}
		}(),
		"evict-pod-later-many": func() parityCase {
			ev := wantEv(t0.Add(30*time.Second), srcSlice(uSliceTainted, devInst, 0))
			return parityCase{events: []op{addS(uSliceTainted), addS(uSlice2), addC(laterMany), addP(pod)},
				claims: map[string]string{ck(laterMany): ev}, scheduled: map[string]string{podRef(pod): ev},
				process: []pstep{{scheduled: map[string]string{podRef(pod): ev}, pods: l(pod), advance: 30 * time.Second}, {}},
				want:    l(deleteEvent(pod))}
		}(),
		"evict-pod-toleration-mismatch": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(mismatch), addP(pod)},
			claims: map[string]string{ck(mismatch): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(deleteEvent(pod))},
		"no-evict-pod-toleration-forever": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(forever), addP(pod)},
			claims: map[string]string{ck(forever): ""}, process: []pstep{{pods: l(pod)}}},
		"no-evict-pod-toleration-forever-many": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(foreverMany), addP(pod)},
			claims: map[string]string{ck(foreverMany): ""}, process: []pstep{{pods: l(pod)}}},
		"evict-pod-partial-toleration": func() parityCase {
			ev := wantEv(t0, srcSlice(uSliceTaintedTwice, devInst, 1))
			return parityCase{events: []op{addS(uSliceTaintedTwice), addS(uSlice2), addC(partial), addP(pod)},
				claims: map[string]string{ck(partial): ev}, scheduled: map[string]string{podRef(pod): ev},
				want: l(deleteEvent(pod))}
		}(),
		"evict-pod-many-taints": {events: []op{addR(uRuleEvict), addR(uRuleEvictOther), addS(uSliceTaintedTwice), addS(uSlice2), addC(manyTaints), addP(pod)},
			claims: map[string]string{ck(manyTaints): evMany}, scheduled: map[string]string{podRef(pod): evMany},
			process: []pstep{
				{scheduled: map[string]string{podRef(pod): evMany}, pods: l(pod), rules: map[string]string{"evict": pendingOne(t0), "evict-other": pendingOne(t0)}, advance: uPeriod},
				{scheduled: map[string]string{podRef(pod): evMany}, pods: l(pod), rules: map[string]string{"evict": pendingOne(t0.Add(uPeriod)), "evict-other": pendingOne(t0.Add(uPeriod))}, advance: 20 * time.Second},
				{stats: map[types.UID]int64{"1234": 1, "1234-other": 1}, rules: map[string]string{"evict": pendingOne(t0.Add(uPeriod)), "evict-other": pendingOne(t0.Add(uPeriod))}, advance: uPeriod},
				{stats: map[types.UID]int64{"1234": 1, "1234-other": 1}, rules: map[string]string{"evict": completed("1 pod", t0.Add(30*time.Second+uPeriod)), "evict-other": completed("1 pod", t0.Add(30*time.Second+uPeriod))}},
			},
			want: l(deleteEvent(pod))},
		"no-evict-pod-not-scheduled": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodUnbound)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, process: []pstep{{pods: l(uPodUnbound)}}},
		"no-evict-no-taint": {events: []op{addS(uSimpleSlice), addC(uInUseClaim), addP(pod)},
			claims: map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(pod)}}},
		"no-evict-no-taint-update": {initPods: l(pod), initSlices: l(uSimpleSlice), initClaims: l(uInUseClaim),
			events: []op{updS(uSimpleSlice, uSimpleSlice)},
			claims: map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(pod)}}},
		"no-evict-pod-resourceclaimtemplate-no-status": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodWithClaimTemplate)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, process: []pstep{{pods: l(uPodWithClaimTemplate)}}},
		"no-evict-pod-resourceclaimtemplate-no-claim": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodWithTemplateNoClaim)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, process: []pstep{{pods: l(uPodWithTemplateNoClaim)}}},
		"no-evict-other-device": {events: []op{addS(uSliceOtherDevices), addS(uSlice2), addC(uInUseClaim), addP(uPodWithTemplateStatus)},
			claims: map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}}},
		"no-evict-wrong-pod": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaim), addP(uPodWithClaimOtherUID)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, process: []pstep{{pods: l(uPodWithClaimOtherUID)}}},
		"evict-wrong-pod-replaced": {initPods: l(uPodWithClaimOtherUID), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			events: []op{group(remP(uPodWithClaimOtherUID), addP(pod))},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(pod): evSlice},
			want: l(deleteEvent(pod))},
		"cancel-eviction-remove-taint": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{updS(uSliceTainted, uSlice)},
			claims:        map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}},
			want: l(cancelEvent(pod))},
		"cancel-eviction-reduce-taint": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{updS(uSliceTainted, uSliceTaintedNoSchedule)},
			claims:        map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}},
			want: l(cancelEvent(pod))},
		"ignore-none-effect": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTaintedNone, uSlice2), initClaims: l(uInUseClaim),
			claims: map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}}},
		"ignore-unknown-effect": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTaintedUnknown, uSlice2), initClaims: l(uInUseClaim),
			claims: map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}}},
		"eviction-change-taint": func() parityCase {
			ev := wantEv(t0, srcSlice(uSliceTaintedValueOther, devInst, 0))
			return parityCase{initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaimWithTol),
				initScheduled: map[string]string{podRef(uPodWithTemplateStatus): wantEv(t0.Add(uTolerDur), srcSlice(uSliceTainted, devInst, 0))},
				events:        []op{updS(uSliceTainted, uSliceTaintedValueOther)},
				claims:        map[string]string{ck(uInUseClaimWithTol): ev}, scheduled: map[string]string{podRef(uPodWithTemplateStatus): ev},
				want: l(deleteEvent(pod))}
		}(),
		"cancel-eviction-remove-taint-in-new-slice": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{remS(uSliceTainted), addS(uSliceReplaced)},
			claims:        map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}},
			want: l(cancelEvent(pod))},
		"cancel-eviction-remove-slice": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{remS(uSliceTainted)},
			claims:        map[string]string{ck(uInUseClaim): ""}, process: []pstep{{pods: l(uPodWithTemplateStatus)}},
			want: l(cancelEvent(pod))},
		// Upstream injects this claim's eviction without reasons; computed,
		// its reason is the slice taint.
		"cancel-eviction-pod-deletion": func() parityCase {
			ev := wantEv(t0.Add(60*time.Second), srcSlice(uSliceTainted, devInst, 0))
			return parityCase{initPods: l(pod), initSlices: l(uSliceTainted, uSlice2), initClaims: l(tol60),
				initScheduled: map[string]string{podRef(pod): ev},
				events:        []op{remP(pod)},
				claims:        map[string]string{ck(tol60): ev}}
		}(),
		"no-evict-wrong-resourceclaim": {events: []op{addS(uSliceTainted), addS(uSlice2), addC(uInUseClaimOld), addP(uPodWithTemplateStatus)},
			claims: map[string]string{ck(uInUseClaimOld): evSlice}, process: []pstep{{pods: l(uPodWithTemplateStatus)}}},
		"evict-wrong-resourceclaim-replaced": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaimOld),
			events: []op{updC(uInUseClaimOld, uInUseClaim)},
			claims: map[string]string{ck(uInUseClaim): evSlice}, scheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			want: l(deleteEvent(pod))},
		"no-evict-resourceclaim-deallocated": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{updC(uInUseClaim, uPlainClaim)},
			process:       []pstep{{pods: l(uPodWithTemplateStatus)}},
			want:          l(cancelEvent(pod))},
		"no-evict-resourceclaim-deleted": {initPods: l(uPodWithTemplateStatus), initSlices: l(uSliceTainted, uSlice2), initClaims: l(uInUseClaim),
			initScheduled: map[string]string{podRef(uPodWithTemplateStatus): evSlice},
			events:        []op{remC(uInUseClaim)},
			process:       []pstep{{pods: l(uPodWithTemplateStatus)}},
			want:          l(cancelEvent(pod))},
	}
	if len(cases) != 55 {
		t.Fatalf("%d cases, upstream has 55", len(cases))
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, perm := range permutations(len(tc.events)) {
				events := make([]op, len(perm))
				for i, j := range perm {
					events[i] = tc.events[j]
				}
				runParity(t, tc, events)
				if t.Failed() {
					var names []string
					for _, e := range events {
						names = append(names, e.name)
					}
					t.Fatalf("event order: %s", strings.Join(names, ", "))
				}
			}
		})
	}
}

func l[T any](items ...T) []T { return items }

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	var rec func(p []int, used []bool)
	rec = func(p []int, used []bool) {
		if len(p) == n {
			out = append(out, slices.Clone(p))
			return
		}
		for i := range n {
			if !used[i] {
				used[i] = true
				rec(append(p, i), used)
				used[i] = false
			}
		}
	}
	rec(nil, make([]bool, n))
	return out
}

func runParity(t *testing.T, tc parityCase, events []op) {
	t.Helper()
	h := newHarness(t, tc.workload, uTaintTime)
	for _, s := range tc.initSlices {
		h.setSlice(s)
	}
	for _, c := range tc.initClaims {
		h.setClaim(c)
	}
	for _, p := range tc.initPods {
		h.setPod(p)
	}
	if got := h.scheduled(); tc.initScheduled != nil && !maps.Equal(got, tc.initScheduled) {
		t.Errorf("initial deletePodAt = %v, want %v", got, tc.initScheduled)
	}
	h.d.AppendCancelled(nil)
	for _, e := range events {
		e.f(h)
	}
	h.drain()
	eq(t, "deletePodAt", h.scheduled(), orEmpty(tc.scheduled))
	eq(t, "allocated claims", h.claimEvictions(), orEmpty(tc.claims))
	process, checkPods := tc.process, true
	if process == nil {
		// Upstream processes only when work is ready; the pods left are
		// then checked by the Events.
		process, checkPods = []pstep{{}}, false
	}
	for i, st := range process {
		h.process()
		p := fmt.Sprintf("process #%d: ", i)
		eq(t, p+"deletePodAt", h.scheduled(), orEmpty(st.scheduled))
		eq(t, p+"allocated claims", h.claimEvictions(), orEmpty(tc.claims))
		wantStats := st.stats
		if wantStats == nil {
			wantStats = map[types.UID]int64{}
		}
		eq(t, p+"taintRuleStats", h.ruleStats(), wantStats)
		var wantPods []string
		for _, x := range st.pods {
			wantPods = append(wantPods, podKey(x).String())
		}
		slices.Sort(wantPods)
		if got := h.podNames(); checkPods && !slices.Equal(got, wantPods) {
			t.Errorf("%spods = %v, want %v", p, got, wantPods)
		}
		eq(t, p+"rules", h.ruleConds(), orEmpty(st.rules))
		h.now = h.now.Add(st.advance)
	}
	want := slices.Clone(tc.want)
	slices.Sort(want)
	if got := h.eventStrings(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func eq[K comparable, V comparable](t *testing.T, what string, got, want map[K]V) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
