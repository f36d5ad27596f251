package taints

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// Upstream's whole-flow tests (TestEviction, TestDeviceTaintRule,
// TestCancelEviction, TestParallelPodDeletion, TestRetry in
// pkg/controller/devicetainteviction at v1.37.2), ported: the same
// objects and API calls in the same order, the caller's worker emulated by
// harness.process. Upstream counts Gets, patches and deletes of the pod;
// here each handed-out eviction is one Get, and each counted deletion one
// patch and one delete. Not ported: informer sync and metric registry
// plumbing (the metrics' values are checked as h.deletions).

func TestDeviceParityEviction(t *testing.T) {
	pod := uPodWithClaimName
	sliceShadow := func() *resourcev1.ResourceSlice {
		s := uSlice.DeepCopy()
		s.Name += "-other"
		s.Spec.Pool.Generation += 100
		return s
	}()
	unbound := uMakePod(uClaimRef(uResource, &uClaimName))
	for name, tt := range map[string]struct {
		initial   func(h *harness)
		afterSync []op
	}{
		"initial": {initial: func(h *harness) { h.setSlice(uSliceTainted); h.setClaim(uInUseClaim); h.setPod(pod) }},
		"add":     {afterSync: []op{addP(pod), addS(uSliceTainted), addC(uInUseClaim)}},
		"update": {
			initial:   func(h *harness) { h.setSlice(uSlice); h.setClaim(uPlainClaim); h.setPod(unbound) },
			afterSync: []op{updP(unbound, pod), updS(uSlice, uSliceTainted), updC(uPlainClaim, uInUseClaim)},
		},
		"delete": {
			initial: func(h *harness) {
				h.setSlice(uSliceTainted)
				h.setSlice(sliceShadow)
				h.setClaim(uPlainClaim)
				h.setPod(pod)
			},
			afterSync: []op{remS(sliceShadow), remC(uPlainClaim), addC(uInUseClaim)},
		},
	} {
		// The worker runs after every API call, or once at the end:
		// either way one Get, one patch, one delete.
		for _, eager := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				h := newHarness(t, false, uTaintTime)
				var gets int
				if tt.initial != nil {
					tt.initial(h)
				}
				step := h.process
				step()
				for _, o := range tt.afterSync {
					o.f(h)
					if eager {
						step()
					}
				}
				step()
				if gets = len(h.deletions); gets != 1 || len(h.patched) != 1 {
					t.Fatalf("deletions %d, patches %d, want 1 each", gets, len(h.patched))
				}
				if _, ok := h.pods[podKey(pod)]; ok {
					t.Error("pod not deleted")
				}
				c := h.patched[podKey(pod)]
				if c.Type != v1.DisruptionTarget || c.Status != v1.ConditionTrue || c.Reason != "DeletionByDeviceTaintManager" || c.Message != "Device Taint manager: deleting due to NoExecute taint" {
					t.Errorf("condition = %+v", c)
				}
				if got, want := h.eventStrings(), l(deleteEvent(pod)); !slices.Equal(got, want) {
					t.Errorf("events = %q, want %q", got, want)
				}
				if !slices.Equal(h.deletions, []time.Duration{0}) {
					t.Errorf("deletion latencies = %v, want [0s]", h.deletions)
				}
				if at, ok := h.d.NextDeadline(); ok {
					t.Errorf("NextDeadline() = %v, true; want nothing left", at)
				}
				if x := h.d.Explain(h.now, podKey(pod)); x.State != DeviceDone {
					t.Errorf("Explain = %v, want Done", x)
				}
			})
		}
	}
}

func TestDeviceParityDeviceTaintRule(t *testing.T) {
	for _, tt := range []struct {
		name              string
		toleration, slow  bool
		wantDeleteLatency time.Duration
	}{
		{name: "immediate"},
		{name: "delayed", toleration: true},
		{name: "slow", toleration: true, slow: true, wantDeleteLatency: 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule := uRuleNone
			claim := uInUseClaim.DeepCopy()
			tolSecs := int64(0)
			if tt.toleration {
				tolSecs = 30
				claim.Status.Allocation.Devices.Results[0].Tolerations = []resourcev1.DeviceToleration{{
					Effect: resourcev1.DeviceTaintEffectNoExecute, Value: rule.Taint.Value, TolerationSeconds: &tolSecs,
				}}
			}
			pod := uPodWithClaimName
			start := uTaintTime
			h := newHarness(t, false, start)
			h.feedback = true // informers run: the written status comes back
			h.setPod(pod)
			h.setClaim(claim)
			h.setRule(rule)
			h.process()
			checkRule(t, h, "initial processing", wantCond(false, "NoEffect", "0 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.", start), l(pod))

			h.now = h.now.Add(20 * time.Second)
			updated := h.now
			rule = h.rules[rule.Name]
			rule.Taint.Effect = resourcev1.DeviceTaintEffectNoExecute
			rule.Taint.TimeAdded = uMT(updated)
			h.setRule(rule)
			h.process()
			var wantPods []uPod
			if tolSecs > 0 {
				wantPods = l(pod)
			}
			checkRule(t, h, "evict", wantCond(true, "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", updated), wantPods)

			if tolSecs > 0 {
				h.now = h.now.Add(time.Duration(tolSecs) * time.Second)
				if tt.slow {
					// The deletion takes 3s: Due now, Done later.
					if sts := h.d.RuleStatuses(h.now); len(sts) != 0 {
						t.Fatalf("RuleStatuses = %v, want none", sts)
					}
					xs := h.d.Due(h.now)
					if len(xs) != 1 {
						t.Fatalf("Due = %v, want the pod", xs)
					}
					h.now = h.now.Add(3 * time.Second)
					h.evict(xs[0])
				}
				h.process()
				checkRule(t, h, "evict", wantCond(true, "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", updated), nil)
			}
			h.now = h.now.Add(uPeriod)
			h.process()
			checkRule(t, h, "done", wantCond(false, "Completed", "1 pod evicted since starting the controller.", h.now), nil)
			if got := h.ruleStats(); len(got) != 1 || got[rule.UID] != 1 {
				t.Errorf("taint rule statistics = %v, want %s: 1", got, rule.UID)
			}
			h.deleteRule(rule)
			if got := h.ruleStats(); len(got) != 0 {
				t.Errorf("statistics after deleting the rule = %v, want none", got)
			}
			if at, ok := h.d.NextDeadline(); ok {
				t.Errorf("NextDeadline() = %v, want nothing left", at)
			}
			if !slices.Equal(h.deletions, []time.Duration{tt.wantDeleteLatency}) {
				t.Errorf("deletion latencies = %v, want [%v]", h.deletions, tt.wantDeleteLatency)
			}
		})
	}
}

func checkRule(t *testing.T, h *harness, prefix, want string, pods []uPod) {
	t.Helper()
	if got := h.ruleConds(); len(got) != 1 || got["evict"] != want {
		t.Errorf("%s: rules = %v, want evict: %s", prefix, got, want)
	}
	var wantPods []string
	for _, p := range pods {
		wantPods = append(wantPods, podKey(p).String())
	}
	if got := h.podNames(); !slices.Equal(got, wantPods) {
		t.Errorf("%s: pods = %v, want %v", prefix, got, wantPods)
	}
}

func TestDeviceParityCancelEviction(t *testing.T) {
	for _, deletePod := range []bool{true, false} {
		name := map[bool]string{true: "pod-deleted", false: "slice-deleted"}[deletePod]
		t.Run(name, func(t *testing.T) {
			start := uTaintTime
			pod := uPodWithClaimName
			slice := uSliceTainted.DeepCopy()
			slice.Spec.Devices[0].Taints[0].TimeAdded = uMT(start)
			claim := tolsClaim(uTol("", resourcev1.DeviceTolerationOpExists, "", uPtr(int64(60))))
			h := newHarness(t, false, start)
			h.setSlice(slice)
			h.setClaim(claim)
			h.setPod(pod)
			h.process()
			if x := h.d.Explain(h.now, podKey(pod)); x.State != DeviceScheduled || !x.At.Equal(start.Add(60*time.Second)) {
				t.Fatalf("pending eviction: Explain = %v", x)
			}
			if deletePod {
				h.deletePod(pod)
			} else {
				h.d.DeleteSlice(h.now, slice.Name)
			}
			h.process()
			if x := h.d.Explain(h.now, podKey(pod)); x.State == DeviceScheduled {
				t.Errorf("eviction not cancelled: %v", x)
			}
			h.now = h.now.Add(600 * time.Second)
			h.process()
			var want []string
			if !deletePod {
				want = l(cancelEvent(pod))
			}
			if got := h.eventStrings(); !slices.Equal(got, want) {
				t.Errorf("events = %q, want %q", got, want)
			}
			if len(h.deletions) != 0 || len(h.patched) != 0 {
				t.Errorf("deletions %v, patches %v; want none", h.deletions, h.patched)
			}
			if at, ok := h.d.NextDeadline(); ok {
				t.Errorf("NextDeadline() = %v, want nothing left", at)
			}
		})
	}
}

func TestDeviceParityParallelPodDeletion(t *testing.T) {
	h := newHarness(t, false, uTaintTime)
	h.goneOnGet = true // deleted right before the worker reads it
	h.setSlice(uSliceTainted)
	h.setSlice(uSlice2)
	h.setClaim(uInUseClaim)
	h.setPod(uPodWithClaimName)
	h.process()
	if len(h.events) != 0 || len(h.deletions) != 0 {
		t.Errorf("events %v, counted deletions %v; want none", h.events, h.deletions)
	}
	if h.d.Len() != 0 {
		t.Errorf("Len() = %d, want 0", h.d.Len())
	}
	if got := h.ruleStats(); len(got) != 0 {
		t.Errorf("statistics %v, want none", got)
	}
}

func TestDeviceParityRetry(t *testing.T) {
	h := newHarness(t, false, uTaintTime)
	h.getErrs = 1 // an intermittent error on the first Get
	h.setSlice(uSliceTainted)
	h.setSlice(uSlice2)
	h.setClaim(uInUseClaim)
	h.setPod(uPodWithClaimName)
	h.process()
	x := h.d.Explain(h.now, podKey(uPodWithClaimName))
	if x.State != DeviceRetrying || x.Attempts != 1 || !x.At.Equal(h.now.Add(5*time.Millisecond)) {
		t.Fatalf("after the failure: %v", x)
	}
	if at, ok := h.d.NextDeadline(); !ok || !at.Equal(h.now.Add(5*time.Millisecond)) {
		t.Errorf("NextDeadline() = %v, %v; want the retry", at, ok)
	}
	h.now = h.now.Add(5 * time.Millisecond)
	h.process()
	if got, want := h.eventStrings(), l(deleteEvent(uPodWithClaimName)); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if !slices.Equal(h.deletions, []time.Duration{5 * time.Millisecond}) {
		t.Errorf("deletion latencies = %v, want [5ms]", h.deletions)
	}
	if h.d.Len() != 0 {
		t.Errorf("Len() = %d, want 0", h.d.Len())
	}
}
