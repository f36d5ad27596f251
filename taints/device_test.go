package taints

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNewDeviceEvictorConfig(t *testing.T) {
	for name, mut := range map[string]func(*DeviceEvictorConfig){
		"period":        func(c *DeviceEvictorConfig) { c.RuleStatusPeriod = 0 },
		"cancellations": func(c *DeviceEvictorConfig) { c.KeepCancellations = -1 },
		"limit":         func(c *DeviceEvictorConfig) { c.Limits.TaintsPerDevice = 0 },
	} {
		cfg := DefaultDeviceEvictorConfig()
		mut(&cfg)
		if _, err := NewDeviceEvictor(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewDeviceEvictor = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestDeviceSelector(t *testing.T) {
	var nilSel *DeviceTaintSelector
	a, b := "a", "b"
	for _, tt := range []struct {
		sel  *DeviceTaintSelector
		want bool
	}{
		{nilSel, false}, // no selector: nothing
		{&DeviceTaintSelector{}, true},
		{&DeviceTaintSelector{Driver: &a}, true},
		{&DeviceTaintSelector{Driver: &b}, false},
		{&DeviceTaintSelector{Pool: &a, Device: &a}, true},
		{&DeviceTaintSelector{Pool: &a, Device: &b}, false},
	} {
		if got := tt.sel.Selects("a", "a", "a"); got != tt.want {
			t.Errorf("%+v.Selects(a, a, a) = %v, want %v", tt.sel, got, tt.want)
		}
	}
}

// hostileSetup is one claim on device d1/p1/a for pod pa, bound.
func hostileSetup(t *testing.T, tols ...resourcev1.DeviceToleration) *DeviceEvictor {
	t.Helper()
	d, err := NewDeviceEvictor(DefaultDeviceEvictorConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Driver: "d1", Pool: "p1", Device: "a", Tolerations: tols}}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "pa", UID: "U1"}}
	if err := d.SetClaim(uTaintTime, c); err != nil {
		t.Fatal(err)
	}
	name := "c"
	if err := d.SetPod(uTaintTime, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pa", UID: "U1"},
		Spec: v1.PodSpec{NodeName: "n", ResourceClaims: []v1.PodResourceClaim{{Name: "x", ResourceClaimName: &name}}}}); err != nil {
		t.Fatal(err)
	}
	return d
}

func hostileSlice(taints ...resourcev1.DeviceTaint) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	s.Spec.Driver, s.Spec.Pool.Name = "d1", "p1"
	s.Spec.Devices = []resourcev1.Device{{Name: "a", Taints: taints}}
	return s
}

var paKey = types.NamespacedName{Namespace: "ns", Name: "pa"}

func TestDeviceHostile(t *testing.T) {
	noExec := func(at *metav1.Time) resourcev1.DeviceTaint {
		return resourcev1.DeviceTaint{Key: "k", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at}
	}
	tolFor := func(secs int64) resourcev1.DeviceToleration {
		return resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: &secs}
	}
	t.Run("nil inputs are ignored", func(t *testing.T) {
		d := hostileSetup(t)
		if d.SetSlice(uTaintTime, nil) != nil || d.SetClaim(uTaintTime, nil) != nil || d.SetPod(uTaintTime, nil) != nil {
			t.Error("nil input returned an error")
		}
	})
	t.Run("TimeAdded missing counts from first sight", func(t *testing.T) {
		d := hostileSetup(t, tolFor(30))
		seen := uTaintTime.Add(time.Minute)
		_ = d.SetSlice(seen, hostileSlice(noExec(nil)))
		_ = d.SetSlice(seen.Add(10*time.Second), hostileSlice(noExec(nil), resourcev1.DeviceTaint{Key: "other", Effect: resourcev1.DeviceTaintEffectNone}))
		if x := d.Explain(seen, paKey); x.State != DeviceScheduled || !x.At.Equal(seen.Add(30*time.Second)) {
			t.Errorf("Explain = %v, want scheduled at first sight + 30s", x)
		}
	})
	t.Run("TimeAdded in the future waits for it", func(t *testing.T) {
		d := hostileSetup(t)
		future := uTaintTime.Add(time.Hour)
		_ = d.SetSlice(uTaintTime, hostileSlice(noExec(uMT(future))))
		if xs := d.Due(uTaintTime.Add(59 * time.Minute)); len(xs) != 0 {
			t.Errorf("Due before TimeAdded = %v", xs)
		}
		if xs := d.Due(future); len(xs) != 1 {
			t.Errorf("Due at TimeAdded = %v, want the pod", xs)
		}
	})
	t.Run("huge TolerationSeconds saturate", func(t *testing.T) {
		d := hostileSetup(t, tolFor(math.MaxInt64))
		_ = d.SetSlice(uTaintTime, hostileSlice(noExec(uMT(uTaintTime))))
		x := d.Explain(uTaintTime, paKey)
		if x.State != DeviceScheduled || x.At.Before(uTaintTime.Add(200*365*24*time.Hour)) {
			t.Errorf("Explain = %v, want scheduled about 292 years out", x)
		}
	})
	t.Run("negative TolerationSeconds count as 0", func(t *testing.T) {
		d := hostileSetup(t, tolFor(-10))
		_ = d.SetSlice(uTaintTime, hostileSlice(noExec(uMT(uTaintTime))))
		if xs := d.Due(uTaintTime); len(xs) != 1 || !xs[0].At.Equal(uTaintTime) {
			t.Errorf("Due = %v, want the pod at TimeAdded", xs)
		}
	})
	t.Run("a toleration without an effect does not tolerate NoExecute (as upstream)", func(t *testing.T) {
		d := hostileSetup(t, resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists})
		_ = d.SetSlice(uTaintTime, hostileSlice(noExec(uMT(uTaintTime))))
		if xs := d.Due(uTaintTime); len(xs) != 1 {
			t.Errorf("Due = %v, want the pod", xs)
		}
	})
	t.Run("over the limits", func(t *testing.T) {
		d := hostileSetup(t)
		many := hostileSlice(make([]resourcev1.DeviceTaint, resourcev1.DeviceTaintsMaxLength+1)...)
		if err := d.SetSlice(uTaintTime, many); !errors.Is(err, ErrDeviceLimit) || !strings.Contains(err.Error(), "TaintsPerDevice") {
			t.Errorf("SetSlice(17 taints) = %v, want ErrDeviceLimit naming TaintsPerDevice", err)
		}
		s := hostileSlice()
		s.Spec.Devices = make([]resourcev1.Device, resourcev1.ResourceSliceMaxDevices+1)
		if err := d.SetSlice(uTaintTime, s); !errors.Is(err, ErrDeviceLimit) || !strings.Contains(err.Error(), "DevicesPerSlice") {
			t.Errorf("SetSlice(129 devices) = %v, want ErrDeviceLimit naming DevicesPerSlice", err)
		}
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		c.Status.ReservedFor = make([]resourcev1.ResourceClaimConsumerReference, resourcev1.ResourceClaimReservedForMaxSize+1)
		if err := d.SetClaim(uTaintTime, c); !errors.Is(err, ErrDeviceLimit) || !strings.Contains(err.Error(), "ReservedForPerClaim") {
			t.Errorf("SetClaim(257 ReservedFor) = %v, want ErrDeviceLimit naming ReservedForPerClaim", err)
		}
		c.Status.ReservedFor = nil
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Tolerations: make([]resourcev1.DeviceToleration, resourcev1.DeviceTolerationsMaxLength+1)}}}}
		if err := d.SetClaim(uTaintTime, c); !errors.Is(err, ErrDeviceLimit) || !strings.Contains(err.Error(), "TolerationsPerResult") {
			t.Errorf("SetClaim(17 tolerations) = %v, want ErrDeviceLimit naming TolerationsPerResult", err)
		}
		// The rejected claim changed nothing: the pod still uses the old one.
		if x := d.Explain(uTaintTime, paKey); len(x.Claims) != 1 || x.Claims[0].Use != DeviceClaimUntainted {
			t.Errorf("after rejected input: %v", x)
		}
	})
	t.Run("time going backwards counts as no time", func(t *testing.T) {
		d := hostileSetup(t)
		_ = d.SetSlice(uTaintTime.Add(time.Hour), hostileSlice(noExec(uMT(uTaintTime.Add(30*time.Minute)))))
		if xs := d.Due(uTaintTime); len(xs) != 1 {
			t.Errorf("Due(an earlier now) = %v, want the pod due at the latest now", xs)
		}
	})
}

func TestDeviceSnapshotRestore(t *testing.T) {
	h := newHarness(t, false, uTaintTime)
	h.setRule(uRuleEvict)
	h.setClaim(uInUseClaim)
	h.setPod(uPodWithClaimName)
	h.pods[podKey(uPodWithClaimName)] = uPodWithClaimName
	xs := h.d.Due(h.now)
	if len(xs) != 1 {
		t.Fatalf("Due = %v", xs)
	}
	h.d.Done(h.now, xs[0], DeviceDeleted)
	snap := h.d.Snapshot()
	if len(snap.Evicted) != 1 || len(snap.Rules) != 1 || snap.Rules[0].Evicted != 1 {
		t.Fatalf("Snapshot = %+v", snap)
	}

	// A restarted controller: the pod is still terminating.
	d2, _ := NewDeviceEvictor(DefaultDeviceEvictorConfig())
	if err := d2.Restore(h.now, snap); err != nil {
		t.Fatal(err)
	}
	d2.SetRule(h.now, uRuleEvict)
	_ = d2.SetClaim(h.now, uInUseClaim)
	_ = d2.SetPod(h.now, uPodWithClaimName.Pod)
	if xs := d2.Due(h.now); len(xs) != 0 {
		t.Errorf("Due after Restore = %v, want none (already evicted)", xs)
	}
	sts := d2.RuleStatuses(h.now)
	if len(sts) != 1 || !strings.Contains(sts[0].Condition.Message, "1 pod evicted") {
		t.Errorf("RuleStatuses after Restore = %+v, want the restored count", sts)
	}
	big := DeviceSnapshot{Evicted: make([]DeviceEvictedPod, MaxDeviceSnapshot+1)}
	if err := d2.Restore(h.now, big); !errors.Is(err, ErrDeviceLimit) {
		t.Errorf("Restore(too big) = %v, want ErrDeviceLimit", err)
	}
}

func TestDeviceToleratesTaint(t *testing.T) {
	taint := resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute}
	for _, tt := range []struct {
		tol  resourcev1.DeviceToleration
		want bool
	}{
		{resourcev1.DeviceToleration{Key: "k", Value: "v"}, true},                                                 // Equal by default
		{resourcev1.DeviceToleration{Key: "k", Value: "w"}, false},                                                // other value
		{resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists}, true},                        // everything
		{resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists, Effect: "NoSchedule"}, false}, // other effect
		{resourcev1.DeviceToleration{Key: "k", Operator: "Lt", Value: "v"}, false},                                // unknown operator
		{resourcev1.DeviceToleration{Key: "j", Operator: resourcev1.DeviceTolerationOpExists}, false},             // other key
	} {
		if got := DeviceToleratesTaint(tt.tol, taint); got != tt.want {
			t.Errorf("DeviceToleratesTaint(%+v, %+v) = %v, want %v", tt.tol, taint, got, tt.want)
		}
	}
}
