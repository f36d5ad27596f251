package taints

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The blast-radius limit (DeviceBlastRadius) on a virtual clock: step
// tables of {at, call, want} rows, each call rendered as a string.

var limT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// lim is a cluster for the limit tests: drivers' pools of devices
// dev-0..n-1 (one slice per pool), and per device a claim c-<pool>-<i>
// used by one bound pod p-<pool>-<i>, in namespace ns-<pool>.
type lim struct {
	t      *testing.T
	d      *DeviceEvictor
	now    time.Time
	pools  map[string][2]string // pool -> driver, size
	sizes  map[string]int
	cancel []string
}

func newLim(t *testing.T, cfg DeviceEvictorConfig) *lim {
	t.Helper()
	d, err := NewDeviceEvictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &lim{t: t, d: d, now: limT0, pools: map[string][2]string{}, sizes: map[string]int{}}
}

func limConfig(b DeviceBlastRadius) DeviceEvictorConfig {
	cfg := DefaultDeviceEvictorConfig()
	cfg.BlastRadius = b
	return cfg
}

// pool publishes driver's pool of n devices and a claim and pod for each
// of the first used devices; tols are the claims' tolerations.
func (l *lim) pool(driver, pool string, n, used int, tols ...resourcev1.DeviceToleration) *lim {
	l.t.Helper()
	l.pools[pool] = [2]string{driver}
	l.sizes[pool] = n
	l.taint(pool, n, nil)
	for i := range used {
		l.claim(driver, pool, i, tols...)
	}
	return l
}

func (l *lim) claim(driver, pool string, i int, tols ...resourcev1.DeviceToleration) {
	l.t.Helper()
	name, ns := fmt.Sprintf("c-%s-%d", pool, i), "ns-"+pool
	podName, uid := fmt.Sprintf("p-%s-%d", pool, i), types.UID(fmt.Sprintf("uid-%s-%d", pool, i))
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("c" + string(uid))}}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Driver: driver, Pool: pool, Device: fmt.Sprintf("dev-%d", i), Request: "r", Tolerations: tols,
	}}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: podName, UID: uid}}
	if err := l.d.SetClaim(l.now, c); err != nil {
		l.t.Fatal(err)
	}
	if err := l.d.SetPod(l.now, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, UID: uid},
		Spec: v1.PodSpec{NodeName: "node", ResourceClaims: []v1.PodResourceClaim{{Name: "r", ResourceClaimName: &name}}}}); err != nil {
		l.t.Fatal(err)
	}
}

// taint republishes pool's slice with taint t (nil: none) on its first k
// devices.
func (l *lim) taint(pool string, k int, t *resourcev1.DeviceTaint) {
	l.t.Helper()
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: l.pools[pool][0] + "-" + pool}}
	s.Spec.Driver, s.Spec.Pool.Name = l.pools[pool][0], pool
	for i := range l.sizes[pool] {
		dev := resourcev1.Device{Name: fmt.Sprintf("dev-%d", i)}
		if t != nil && i < k {
			dev.Taints = []resourcev1.DeviceTaint{*t}
		}
		s.Spec.Devices = append(s.Spec.Devices, dev)
	}
	if err := l.d.SetSlice(l.now, s); err != nil {
		l.t.Fatal(err)
	}
}

func noExecute(at time.Time) *resourcev1.DeviceTaint {
	return &resourcev1.DeviceTaint{Key: "gpu.example.com/unhealthy", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: at}}
}

// Renderers: each step returns what it observed as a string.

// due runs a worker pass: rule statuses, then Due, each eviction Done; it
// returns the evicted pods and the conditions written.
func (l *lim) due() string {
	var out []string
	for _, s := range l.d.RuleStatuses(l.now) {
		out = append(out, fmt.Sprintf("status %s %s %s: %s", s.Rule, s.Condition.Status, s.Condition.Reason, s.Condition.Message))
	}
	for _, x := range l.d.Due(l.now) {
		var srcs []string
		for _, s := range x.Taints {
			srcs = append(srcs, s.String())
		}
		out = append(out, x.Pod.Name+" ("+strings.Join(srcs, ", ")+")")
		l.d.Done(l.now, x, DeviceDeleted)
	}
	for _, c := range l.d.AppendCancelled(nil) {
		l.cancel = append(l.cancel, c.Pod.Name)
		out = append(out, "cancelled "+c.Pod.Name)
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "; ")
}

// statuses runs RuleStatuses, which judges the breakers as a pass does
// (Due would too, but hands out evictions), and renders what it returns.
func (l *lim) statuses() string {
	var out []string
	for _, s := range l.d.RuleStatuses(l.now) {
		out = append(out, fmt.Sprintf("status %s %s %s: %s", s.Rule, s.Condition.Status, s.Condition.Reason, s.Condition.Message))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "; ")
}

func (l *lim) next() string {
	at, ok := l.d.NextDeadline()
	if !ok {
		return "none"
	}
	return "+" + at.Sub(limT0).String()
}

func (l *lim) explain(pod string) string {
	pool := strings.Split(pod, "-")[1]
	x := l.d.Explain(l.now, types.NamespacedName{Namespace: "ns-" + pool, Name: pod})
	s := x.State.String()
	switch x.State {
	case DeviceScheduled, DeviceDue, DeviceThrottled:
		s += " +" + x.At.Sub(limT0).String()
	}
	if x.WaitsFor != "" {
		s += " waits for " + x.WaitsFor
	}
	if len(x.HeldBy) > 0 {
		s += " held by " + strings.Join(x.HeldBy, ",")
	}
	if !x.ResumeAt.IsZero() {
		s += " until +" + x.ResumeAt.Sub(limT0).String()
	}
	return s
}

func (l *lim) limits() string {
	var out []string
	for _, v := range l.d.DriverLimits(nil) {
		s := fmt.Sprintf("%s %s %d/%d held %d throttled %d", v.Driver, v.State, v.TaintedDevices, v.AllocatedDevices, v.HeldPods, v.Throttled)
		if !v.ResumeAt.IsZero() {
			s += " resumes +" + v.ResumeAt.Sub(limT0).String()
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func (l *lim) changes() string {
	var out []string
	for _, v := range l.d.AppendHoldChanges(nil) {
		out = append(out, v.Reason()+": "+v.Message())
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "; ")
}

type limStep struct {
	at   time.Duration // the step's now, from limT0 (may go back)
	call string
	do   func(l *lim) string
	want string
}

func runLim(t *testing.T, l *lim, steps []limStep) {
	t.Helper()
	for i, s := range steps {
		l.now = limT0.Add(s.at)
		if got := s.do(l); got != s.want {
			t.Errorf("step %d at +%v: %s = %q, want %q", i, s.at, s.call, got, s.want)
		}
	}
}

func do(f func(l *lim)) func(l *lim) string { return func(l *lim) string { f(l); return "" } }

func TestDeviceBreakerPoolTaint(t *testing.T) {
	// Driver gpu has pools a and b of 4 devices, all used; the breaker
	// holds above 40% (MinDevices 1) and, without hysteresis (ResumeShare
	// 40% too), resumes at 40% or below. A driver marks pool a unhealthy:
	// 4 of 8 devices (50%), held; pool b's first device too: 5 of 8.
	// The claims tolerate the taint for 30s, so the evictions would be
	// due at +40s.
	tol := resourcev1.DeviceToleration{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: uPtr(int64(30))}
	for _, tt := range []struct {
		name string
		end  []limStep // after the hold
	}{
		{"untainted", []limStep{
			{50 * time.Second, "untaint pool a", do(func(l *lim) { l.taint("a", 4, nil) }), ""},
			{50 * time.Second, "changes before the pass", (*lim).changes, "-"},
			{50 * time.Second, "Due", (*lim).due, "p-b-0 (ResourceSlice gpu-b gpu/b/dev-0 taint #0)"},
			{50 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 1 of 8 allocated devices of driver gpu (12.5%) have an untolerated NoExecute taint."},
			{50 * time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "NotTainted"},
		}},
		{"released", []limStep{
			{50 * time.Second, "ReleaseHold gpu", func(l *lim) string { return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu")) }, "true"},
			{50 * time.Second, "ReleaseHold gpu again", func(l *lim) string { return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu")) }, "false"},
			{50 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHoldReleased: Hold released: 5 of 8 allocated devices of driver gpu (62.5%) have an untolerated NoExecute taint, more than 40%; evictions proceed, and the breaker is armed again when the share falls to 40% or below."},
			{50 * time.Second, "limits", (*lim).limits, "gpu Released 5/8 held 0 throttled 0"},
			{50 * time.Second, "Due", (*lim).due, "p-a-0 (ResourceSlice gpu-a gpu/a/dev-0 taint #0); p-a-1 (ResourceSlice gpu-a gpu/a/dev-1 taint #0); p-a-2 (ResourceSlice gpu-a gpu/a/dev-2 taint #0); p-a-3 (ResourceSlice gpu-a gpu/a/dev-3 taint #0); p-b-0 (ResourceSlice gpu-b gpu/b/dev-0 taint #0)"},
			// Still over the limit: the release holds.
			{60 * time.Second, "taint pool b's second device", do(func(l *lim) { l.taint("b", 2, noExecute(limT0.Add(10*time.Second))) }), ""},
			{60 * time.Second, "limits", (*lim).limits, "gpu Released 6/8 held 0 throttled 0"},
			{60 * time.Second, "Due", (*lim).due, "p-b-1 (ResourceSlice gpu-b gpu/b/dev-1 taint #0)"},
			// The share falls to 40% or below: armed again, and the
			// next pool-wide taint is held.
			{70 * time.Second, "untaint pool a and b", do(func(l *lim) { l.taint("a", 4, nil); l.taint("b", 4, nil) }), ""},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 0 of 8 allocated devices of driver gpu (0%) have an untolerated NoExecute taint."},
			{80 * time.Second, "taint pool b", do(func(l *lim) { l.taint("b", 4, noExecute(limT0.Add(80*time.Second))) }), ""},
			{80 * time.Second, "limits before the pass", (*lim).limits, "gpu Armed 4/8 held 0 throttled 0"},
			{80 * time.Second, "Due", (*lim).due, "-"},
			{80 * time.Second, "limits", (*lim).limits, "gpu Holding 4/8 held 2 throttled 0"}, // p-b-0 and p-b-1 are gone
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.4, MinDevices: 1, ResumeShare: 0.4}))
			l.pool("gpu", "a", 4, 4, tol).pool("gpu", "b", 4, 4, tol)
			steps := []limStep{
				{0, "limits", (*lim).limits, "gpu Armed 0/8 held 0 throttled 0"},
				{10 * time.Second, "taint pool a", do(func(l *lim) { l.taint("a", 4, noExecute(limT0.Add(10*time.Second))) }), ""},
				{10 * time.Second, "NextDeadline before the pass", (*lim).next, "+10s"},
				{10 * time.Second, "Due", (*lim).due, "-"},
				{10 * time.Second, "limits", (*lim).limits, "gpu Holding 4/8 held 4 throttled 0"},
				{10 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 4 of 8 allocated devices of driver gpu (50%) have an untolerated NoExecute taint, more than 40%; the hold ends when the share falls to 40% or below."},
				{10 * time.Second, "changes again", (*lim).changes, "-"},
				{10 * time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Held held by gpu"},
				{10 * time.Second, "NextDeadline", (*lim).next, "none"},
				{40 * time.Second, "Due", (*lim).due, "-"},
				{40 * time.Second, "taint pool b's first device", do(func(l *lim) { l.taint("b", 1, noExecute(limT0.Add(10*time.Second))) }), ""},
				{40 * time.Second, "limits", (*lim).limits, "gpu Holding 5/8 held 5 throttled 0"},
				{40 * time.Second, "Due", (*lim).due, "-"},
				{40 * time.Second, "cancellations", func(l *lim) string { return fmt.Sprint(l.cancel) }, "[]"},
			}
			runLim(t, l, append(steps, tt.end...))
			if len(l.cancel) != 0 {
				t.Errorf("cancellations %v: a hold is not a cancellation", l.cancel)
			}
		})
	}
}

func TestDeviceBreakerScheduledThenHeld(t *testing.T) {
	// A pod scheduled 60s out; a second driver-wide taint trips the
	// breaker: the scheduled eviction goes without a cancellation, and
	// comes back at its own time when the hold ends (at 50%: no
	// hysteresis).
	tol := resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: uPtr(int64(60))}
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5, ResumeShare: 0.5}))
	l.pool("gpu", "a", 4, 4, tol)
	runLim(t, l, []limStep{
		{0, "taint dev-0", do(func(l *lim) { l.taint("a", 1, noExecute(limT0)) }), ""},
		{0, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Scheduled +1m0s"},
		{10 * time.Second, "taint dev-0..2", do(func(l *lim) { l.taint("a", 3, noExecute(limT0)) }), ""},
		{10 * time.Second, "RuleStatuses", (*lim).statuses, "-"},
		{10 * time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Held held by gpu"},
		{10 * time.Second, "Due", (*lim).due, "-"},
		{10 * time.Second, "NextDeadline", (*lim).next, "none"},
		{70 * time.Second, "Due", (*lim).due, "-"},
		{80 * time.Second, "untaint dev-1..2", do(func(l *lim) { l.taint("a", 1, noExecute(limT0)) }), ""},
		{80 * time.Second, "RuleStatuses", (*lim).statuses, "-"},
		{80 * time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Due +1m0s"},
		{80 * time.Second, "Due", (*lim).due, "p-a-0 (ResourceSlice gpu-a gpu/a/dev-0 taint #0)"},
		{80 * time.Second, "cancellations", func(l *lim) string { return fmt.Sprint(l.cancel) }, "[]"},
	})
}

func TestDeviceBreakerMinDevices(t *testing.T) {
	// One device of a one-device driver is 100% of it: with MinDevices 1
	// the breaker needs a second tainted device.
	for _, tt := range []struct {
		min  int
		want string
	}{
		{0, "-"},
		{1, "p-a-0 (ResourceSlice tiny-a tiny/a/dev-0 taint #0)"},
	} {
		l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5, MinDevices: tt.min}))
		l.pool("tiny", "a", 1, 1)
		l.taint("a", 1, noExecute(limT0))
		if got := l.due(); got != tt.want {
			t.Errorf("MinDevices %d: Due = %q, want %q", tt.min, got, tt.want)
		}
	}
}

func TestDeviceBreakerOtherDriver(t *testing.T) {
	// A pod using a device of each of two drivers: driver a is held, but
	// driver b's own taint still evicts it, and its reasons name only b.
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5}))
	l.pools["pa"], l.sizes["pa"] = [2]string{"a"}, 1
	l.pools["pb"], l.sizes["pb"] = [2]string{"b"}, 2
	l.taint("pa", 0, nil)
	l.taint("pb", 0, nil)
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-x", Name: "c"}}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Driver: "a", Pool: "pa", Device: "dev-0"}, {Driver: "b", Pool: "pb", Device: "dev-0"}, {Driver: "b", Pool: "pb", Device: "dev-1"},
	}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p-x-0", UID: "u"}}
	if err := l.d.SetClaim(l.now, c); err != nil {
		t.Fatal(err)
	}
	name := "c"
	if err := l.d.SetPod(l.now, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-x", Name: "p-x-0", UID: "u"},
		Spec: v1.PodSpec{NodeName: "n", ResourceClaims: []v1.PodResourceClaim{{Name: "r", ResourceClaimName: &name}}}}); err != nil {
		t.Fatal(err)
	}
	runLim(t, l, []limStep{
		{0, "taint a's device", do(func(l *lim) { l.taint("pa", 1, noExecute(limT0)) }), ""},
		{0, "RuleStatuses", (*lim).statuses, "-"},
		{0, "Explain", func(l *lim) string { return l.explain("p-x-0") }, "Held held by a"},
		{0, "limits", (*lim).limits, "a Holding 1/1 held 1 throttled 0; b Armed 0/2 held 0 throttled 0"},
		{10 * time.Second, "taint one of b's", do(func(l *lim) { l.taint("pb", 1, noExecute(limT0.Add(5*time.Second))) }), ""},
		{10 * time.Second, "Explain", func(l *lim) string { return l.explain("p-x-0") }, "Due +5s held by a"},
		{10 * time.Second, "Due", (*lim).due, "p-x-0 (ResourceSlice b-pb b/pb/dev-0 taint #0)"},
	})
}

func TestDeviceBreakerEmptySelectorRule(t *testing.T) {
	// kubernetes/kubernetes#141422: a NoExecute rule with an empty
	// selector taints every device. Both drivers are held; the rule's
	// status says so; deleting the rule ends the holds with nothing
	// evicted.
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5}))
	l.pool("gpu", "a", 3, 3).pool("nic", "b", 2, 2)
	rule := DeviceTaintRule{Name: "oops", UID: "rule-1", Selector: &DeviceTaintSelector{},
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: limT0}}}
	runLim(t, l, []limStep{
		{0, "SetRule", do(func(l *lim) { l.d.SetRule(l.now, rule) }), ""},
		{0, "Due", (*lim).due, "status oops True EvictionHeld: 5 pods need to be evicted in 2 different namespaces. 5 of them held: " +
			"Evictions held: 3 of 3 allocated devices of driver gpu (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted. " +
			"Evictions held: 2 of 2 allocated devices of driver nic (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
		{0, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 3 of 3 allocated devices of driver gpu (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted.; " +
			"DeviceTaintEvictionHeld: Evictions held: 2 of 2 allocated devices of driver nic (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
		{time.Minute, "DeleteRule", do(func(l *lim) { l.d.DeleteRule(l.now, "oops") }), ""},
		{time.Minute, "Due", (*lim).due, "-"},
		{time.Minute, "limits", (*lim).limits, "gpu Armed 0/3 held 0 throttled 0; nic Armed 0/2 held 0 throttled 0"},
	})
	if len(l.cancel) != 0 {
		t.Errorf("cancellations %v", l.cancel)
	}
}

func TestDeviceBreakerReleasedRuleStatus(t *testing.T) {
	// A held rule's status, then the operator releases the hold: the
	// status goes back to upstream's reasons as pods are evicted.
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5}))
	l.pool("gpu", "a", 2, 2)
	pool := "a"
	rule := DeviceTaintRule{Name: "drain-a", UID: "rule-1", Selector: &DeviceTaintSelector{Pool: &pool},
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: limT0}}}
	runLim(t, l, []limStep{
		{0, "SetRule", do(func(l *lim) { l.d.SetRule(l.now, rule) }), ""},
		{0, "Due", (*lim).due, "status drain-a True EvictionHeld: 2 pods need to be evicted in 1 namespace. 2 of them held: Evictions held: 2 of 2 allocated devices of driver gpu (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
		{0, "ReleaseHold", func(l *lim) string { return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu")) }, "true"},
		{0, "Due", (*lim).due, "status drain-a True PodsPendingEviction: 2 pods need to be evicted in 1 namespace.; p-a-0 (DeviceTaintRule drain-a); p-a-1 (DeviceTaintRule drain-a)"},
		{10 * time.Second, "Due", (*lim).due, "status drain-a False Completed: 2 pods evicted since starting the controller."},
	})
}

func TestDeviceRate(t *testing.T) {
	// Five pods due at once, QPS 1, burst 2: two at once, then one a
	// second; the clock going back hands out nothing early and takes no
	// token; a new due pod queues behind the waiting ones.
	l := newLim(t, limConfig(DeviceBlastRadius{QPS: 1, Burst: 2}))
	l.pool("gpu", "a", 6, 6)
	runLim(t, l, []limStep{
		{0, "taint 5 devices", do(func(l *lim) { l.taint("a", 5, noExecute(limT0)) }), ""},
		{0, "Due", (*lim).due, "p-a-0 (ResourceSlice gpu-a gpu/a/dev-0 taint #0); p-a-1 (ResourceSlice gpu-a gpu/a/dev-1 taint #0)"},
		{0, "Explain p-a-2", func(l *lim) string { return l.explain("p-a-2") }, "Throttled +0s waits for gpu"},
		{0, "limits", (*lim).limits, "gpu Armed 5/6 held 0 throttled 3"},
		{0, "NextDeadline", (*lim).next, "+1s"},
		{500 * time.Millisecond, "Due", (*lim).due, "-"},
		{time.Second, "Due", (*lim).due, "p-a-2 (ResourceSlice gpu-a gpu/a/dev-2 taint #0)"},
		{time.Second, "NextDeadline", (*lim).next, "+2s"},
		// Back in time: no time elapsed, no token.
		{-time.Hour, "Due", (*lim).due, "-"},
		{-time.Hour, "NextDeadline", (*lim).next, "+2s"},
		{1500 * time.Millisecond, "taint dev-5", do(func(l *lim) { l.taint("a", 6, noExecute(limT0)) }), ""},
		{1500 * time.Millisecond, "Due", (*lim).due, "-"},
		{1500 * time.Millisecond, "Explain p-a-5", func(l *lim) string { return l.explain("p-a-5") }, "Throttled +0s waits for gpu"},
		{2 * time.Second, "Due", (*lim).due, "p-a-3 (ResourceSlice gpu-a gpu/a/dev-3 taint #0)"},
		{3 * time.Second, "Due", (*lim).due, "p-a-4 (ResourceSlice gpu-a gpu/a/dev-4 taint #0)"},
		{4 * time.Second, "Due", (*lim).due, "p-a-5 (ResourceSlice gpu-a gpu/a/dev-5 taint #0)"},
		{4 * time.Second, "NextDeadline", (*lim).next, "none"},
		{10 * time.Second, "limits", (*lim).limits, "gpu Armed 6/6 held 0 throttled 0"},
	})
}

func TestDeviceRateUntaintWhileThrottled(t *testing.T) {
	// A waiting eviction whose taint goes is cancelled as any scheduled
	// one; one whose pod goes is dropped.
	l := newLim(t, limConfig(DeviceBlastRadius{QPS: 0.1, Burst: 1}))
	l.pool("gpu", "a", 3, 3)
	runLim(t, l, []limStep{
		{0, "taint 3 devices", do(func(l *lim) { l.taint("a", 3, noExecute(limT0)) }), ""},
		{0, "Due", (*lim).due, "p-a-0 (ResourceSlice gpu-a gpu/a/dev-0 taint #0)"},
		{0, "Len", func(l *lim) string { return fmt.Sprint(l.d.Len()) }, "2"},
		{time.Second, "untaint dev-1", do(func(l *lim) {
			s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gpu-a"}}
			s.Spec.Driver, s.Spec.Pool.Name = "gpu", "a"
			for i := range 3 {
				dev := resourcev1.Device{Name: fmt.Sprintf("dev-%d", i)}
				if i != 1 {
					dev.Taints = []resourcev1.DeviceTaint{*noExecute(limT0)}
				}
				s.Spec.Devices = append(s.Spec.Devices, dev)
			}
			if err := l.d.SetSlice(l.now, s); err != nil {
				t.Fatal(err)
			}
		}), ""},
		{time.Second, "Due", (*lim).due, "cancelled p-a-1"},
		{time.Second, "DeletePod p-a-2", do(func(l *lim) { l.d.DeletePod(types.NamespacedName{Namespace: "ns-a", Name: "p-a-2"}) }), ""},
		{time.Second, "Len", func(l *lim) string { return fmt.Sprint(l.d.Len()) }, "0"},
		{time.Second, "NextDeadline", (*lim).next, "none"},
		{time.Minute, "limits", (*lim).limits, "gpu Armed 2/3 held 0 throttled 0"},
	})
}

func TestDeviceRateRetry(t *testing.T) {
	// A failed deletion retried takes a token again when it is due.
	l := newLim(t, limConfig(DeviceBlastRadius{QPS: 1, Burst: 1}))
	l.pool("gpu", "a", 2, 2)
	l.taint("a", 2, noExecute(limT0))
	xs := l.d.Due(l.now)
	if len(xs) != 1 || xs[0].Pod.Name != "p-a-0" {
		t.Fatalf("Due = %v, want p-a-0", xs)
	}
	l.d.Retry(l.now, xs[0], 0)
	runLim(t, l, []limStep{
		{0, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Retrying"},
		{time.Second, "Due", (*lim).due, "p-a-1 (ResourceSlice gpu-a gpu/a/dev-1 taint #0)"},
		{time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Throttled +0s waits for gpu"},
		{2 * time.Second, "Due", (*lim).due, "p-a-0 (ResourceSlice gpu-a gpu/a/dev-0 taint #0)"},
	})
}

func TestDeviceBlastRadiusConfig(t *testing.T) {
	for name, tt := range map[string]struct {
		b     DeviceBlastRadius
		field string
	}{
		"NaN QPS":                  {DeviceBlastRadius{QPS: math.NaN(), Burst: 1}, "QPS"},
		"infinite QPS":             {DeviceBlastRadius{QPS: math.Inf(1), Burst: 1}, "QPS"},
		"negative QPS":             {DeviceBlastRadius{QPS: -1, Burst: 1}, "QPS"},
		"no burst":                 {DeviceBlastRadius{QPS: 1}, "Burst"},
		"negative burst":           {DeviceBlastRadius{Burst: -1}, "Burst"},
		"share over 1":             {DeviceBlastRadius{MaxShare: 1.5}, "MaxShare"},
		"negative share":           {DeviceBlastRadius{MaxShare: -0.1}, "MaxShare"},
		"NaN share":                {DeviceBlastRadius{MaxShare: math.NaN()}, "MaxShare"},
		"negative min":             {DeviceBlastRadius{MaxShare: 0.5, MinDevices: -1}, "MinDevices"},
		"resume over MaxShare":     {DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0.3}, "ResumeShare"},
		"resume without a breaker": {DeviceBlastRadius{ResumeShare: 0.1}, "ResumeShare"},
		"negative resume":          {DeviceBlastRadius{MaxShare: 0.2, ResumeShare: -0.1}, "ResumeShare"},
		"NaN resume":               {DeviceBlastRadius{MaxShare: 0.2, ResumeShare: math.NaN()}, "ResumeShare"},
		"negative resume after":    {DeviceBlastRadius{MaxShare: 0.2, ResumeAfter: -time.Second}, "ResumeAfter"},
	} {
		if _, err := NewDeviceEvictor(limConfig(tt.b)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "BlastRadius."+tt.field+" ") {
			t.Errorf("%s: NewDeviceEvictor = %v, want ErrInvalidConfig naming BlastRadius.%s", name, err, tt.field)
		}
	}
	for _, b := range []DeviceBlastRadius{{MaxShare: 0.2, ResumeShare: 0.2}, {MaxShare: 1, ResumeShare: 1, ResumeAfter: time.Hour}, {ResumeAfter: time.Minute}} {
		if _, err := NewDeviceEvictor(limConfig(b)); err != nil {
			t.Errorf("%+v: NewDeviceEvictor = %v, want no error", b, err)
		}
	}
	cfg := DefaultDeviceEvictorConfig()
	cfg.KeepWarnings = -1
	if _, err := NewDeviceEvictor(cfg); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("KeepWarnings -1: NewDeviceEvictor = %v, want ErrInvalidConfig", err)
	}
	if (DefaultDeviceEvictorConfig().BlastRadius != DeviceBlastRadius{}) || DefaultDeviceEvictorConfig().KeepWarnings != 0 {
		t.Error("DefaultDeviceEvictorConfig turns on limits or warnings; upstream has neither")
	}
}

func TestDeviceHoldChangesCoalesce(t *testing.T) {
	// A hold that starts and ends between two AppendHoldChanges (each at
	// a pass) reports nothing; one that starts and is released reports
	// Released.
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5}))
	l.pool("gpu", "a", 2, 2)
	runLim(t, l, []limStep{
		{0, "taint, pass, untaint, pass", func(l *lim) string {
			l.taint("a", 2, noExecute(limT0))
			held := l.statuses() + " " + l.limits()
			l.taint("a", 0, nil)
			return held + "; " + l.statuses() + " " + l.limits()
		}, "- gpu Holding 2/2 held 2 throttled 0; - gpu Armed 0/2 held 0 throttled 0"},
		{0, "changes", (*lim).changes, "-"},
		{0, "taint, pass, release", func(l *lim) string {
			l.taint("a", 2, noExecute(limT0))
			l.statuses()
			return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu"))
		}, "true"},
		{0, "changes", (*lim).changes, "DeviceTaintEvictionHoldReleased: Hold released: 2 of 2 allocated devices of driver gpu (100%) have an untolerated NoExecute taint, more than 50%; evictions proceed, and the breaker is armed again when none is tainted."},
		{0, "ReleaseHold unknown", func(l *lim) string { return fmt.Sprint(l.d.ReleaseHold(l.now, "nic")) }, "false"},
	})
}

func TestDeviceDriverLimitsOff(t *testing.T) {
	// Without a DeviceBlastRadius nothing is counted or reported.
	l := newLim(t, DefaultDeviceEvictorConfig())
	l.pool("gpu", "a", 2, 2)
	l.taint("a", 2, noExecute(limT0))
	if got := l.d.DriverLimits(nil); len(got) != 0 {
		t.Errorf("DriverLimits = %v, want none", got)
	}
	if got := l.d.AppendHoldChanges(nil); len(got) != 0 {
		t.Errorf("AppendHoldChanges = %v, want none", got)
	}
	if l.d.ReleaseHold(l.now, "gpu") {
		t.Error("ReleaseHold = true without a breaker")
	}
}

// TestDeviceRateProperty: random taints, clock steps (some backwards) and
// worker passes on two drivers. Whatever happens, each driver's hand-outs
// in any interval [t1, t2] number at most Burst + QPS·(t2 - t1) (retries
// included: each takes a token); and a worker that sleeps until
// NextDeadline hands out every due eviction, each wake-up making progress.
func TestDeviceRateProperty(t *testing.T) {
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		qps := []float64{0.5, 3, 10}[r.IntN(3)]
		burst := 1 + r.IntN(3)
		l := newLim(t, limConfig(DeviceBlastRadius{QPS: qps, Burst: burst}))
		l.pool("a", "pa", 12, 12).pool("b", "pb", 12, 12)
		out := map[string][]time.Time{} // driver -> hand-out times
		last := limT0                   // the latest now: an earlier one counts as it
		pass := func() int {
			xs := l.d.Due(l.now)
			for _, x := range xs {
				drv := "a"
				if strings.Contains(x.Pod.Name, "-pb-") {
					drv = "b"
				}
				out[drv] = append(out[drv], last)
				if r.IntN(4) == 0 {
					l.d.Retry(l.now, x, time.Duration(r.IntN(3))*time.Second)
				} else {
					l.d.Done(l.now, x, DeviceDeleted)
				}
			}
			return len(xs)
		}
		for range 60 {
			switch r.IntN(4) {
			case 0:
				pool := []string{"pa", "pb"}[r.IntN(2)]
				l.taint(pool, r.IntN(13), noExecute(last.Add(time.Duration(r.IntN(20)-10)*time.Second)))
			case 1:
				l.now = l.now.Add(time.Duration(r.IntN(3000)-500) * time.Millisecond)
				if l.now.After(last) {
					last = l.now
				}
			default:
				pass()
			}
		}
		// Sleep until NextDeadline until nothing is left.
		for i := 0; ; i++ {
			at, ok := l.d.NextDeadline()
			if !ok {
				break
			}
			if i > 1000 {
				t.Fatalf("seed %d: NextDeadline still %v after 1000 wake-ups", seed, at)
			}
			if at.After(l.now) {
				l.now = at
			}
			if l.now.After(last) {
				last = l.now
			}
			if pass() == 0 && l.d.Len() > 0 {
				if at2, _ := l.d.NextDeadline(); !at2.After(at) {
					t.Fatalf("seed %d: woke at NextDeadline %v, nothing handed out, next deadline %v", seed, at, at2)
				}
			}
		}
		if l.d.Len() != 0 {
			t.Errorf("seed %d: %d evictions left with no deadline", seed, l.d.Len())
		}
		for drv, ts := range out {
			for i := range ts {
				for j := i; j < len(ts); j++ {
					if n, limit := j-i+1, float64(burst)+qps*ts[j].Sub(ts[i]).Seconds(); float64(n) > limit+1e-9 {
						t.Fatalf("seed %d: driver %s handed out %d in [%v, %v], more than %v (QPS %v, burst %d)", seed, drv, n, ts[i].Sub(limT0), ts[j].Sub(limT0), limit, qps, burst)
					}
				}
			}
		}
	}
}
