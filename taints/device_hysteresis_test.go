package taints

import (
	"fmt"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
)

// The breaker's hysteresis (DeviceBlastRadius.ResumeShare, ResumeAfter) on
// a virtual clock. The cluster: driver gpu with ten pools p0..p9 of two
// devices, one slice each (a node's), every device used by one pod; the
// breaker trips above 20% (4 devices).

func newFleet(t *testing.T, b DeviceBlastRadius, tols ...resourcev1.DeviceToleration) *lim {
	t.Helper()
	l := newLim(t, limConfig(b))
	for i := range 10 {
		l.pool("gpu", fmt.Sprintf("p%d", i), 2, 2, tols...)
	}
	return l
}

// taintPools taints, or with t nil untaints, the pools named, one slice
// update each, in order (a driver rolling out or back node by node).
func taintPools(t *resourcev1.DeviceTaint, pools ...int) func(l *lim) string {
	return do(func(l *lim) {
		for _, p := range pools {
			l.taint(fmt.Sprintf("p%d", p), 2, t)
		}
	})
}

func (l *lim) message() string {
	var out []string
	for _, v := range l.d.DriverLimits(nil) {
		out = append(out, v.Message())
	}
	return strings.Join(out, " ")
}

func (l *lim) release() string { return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu")) }

func evicted(pools ...int) string {
	var out []string
	for _, p := range pools {
		for i := range 2 {
			out = append(out, fmt.Sprintf("p-p%d-%d (ResourceSlice gpu-p%d gpu/p%d/dev-%d taint #0)", p, i, p, p, i))
		}
	}
	return strings.Join(out, "; ")
}

// TestDeviceBreakerRollBack is the defect hysteresis fixes. A storm taints
// six pools (60%) and trips the breaker; then the driver is rolled back
// slice by slice, ten seconds apart. Without hysteresis (ResumeShare =
// MaxShare, the breaker before ResumeShare existed) the hold ends when the
// share falls to 20% on the way down, and the pods still on the last two
// tainted pools, whose taints are 80 seconds old, are evicted at once, ten
// seconds before their own slices' untaints: exactly the pods the breaker
// was protecting. With ResumeShare 0 the hold lasts until the roll-back is
// done, and nothing is evicted or cancelled. An operator's ReleaseHold in
// between still lets the held pods go.
func TestDeviceBreakerRollBack(t *testing.T) {
	storm := noExecute(limT0.Add(10 * time.Second))
	for _, tt := range []struct {
		name string
		b    DeviceBlastRadius
		at20 []limStep // at +90s, the share falling to 20% (4 of 20)
		end  string    // Due after the roll-back
	}{
		{"no hysteresis", DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0.2}, []limStep{
			{90 * time.Second, "Due", (*lim).due, evicted(4, 5)},
			{90 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 4 of 20 allocated devices of driver gpu (20%) have an untolerated NoExecute taint."},
		}, "-"},
		{"ResumeShare 0", DeviceBlastRadius{MaxShare: 0.2}, []limStep{
			{90 * time.Second, "Due", (*lim).due, "-"},
			{90 * time.Second, "changes", (*lim).changes, "-"},
			{90 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
			{90 * time.Second, "message", (*lim).message, "Evictions held: 4 of 20 allocated devices of driver gpu (20%) have an untolerated NoExecute taint, no longer more than 20%; the hold ends when none is tainted."},
			{90 * time.Second, "Explain p-p4-0", func(l *lim) string { return l.explain("p-p4-0") }, "Held held by gpu"},
			{90 * time.Second, "Due", (*lim).due, "-"},
			{100 * time.Second, "untaint p4", taintPools(nil, 4), ""},
			{100 * time.Second, "Due", (*lim).due, "-"},
			{100 * time.Second, "changes", (*lim).changes, "-"},
		}, "-"},
		{"ResumeShare 0, released at 20%", DeviceBlastRadius{MaxShare: 0.2}, []limStep{
			{90 * time.Second, "ReleaseHold", (*lim).release, "true"},
			{90 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHoldReleased: Hold released: 4 of 20 allocated devices of driver gpu (20%) have an untolerated NoExecute taint, no longer more than 20%; evictions proceed, and the breaker is armed again when none is tainted."},
			{90 * time.Second, "Due", (*lim).due, evicted(4, 5)},
			{90 * time.Second, "limits", (*lim).limits, "gpu Released 4/20 held 0 throttled 0"},
		}, "-"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newFleet(t, tt.b)
			steps := []limStep{
				{10 * time.Second, "storm: taint p0..p5", taintPools(storm, 0, 1, 2, 3, 4, 5), ""},
				{10 * time.Second, "Due", (*lim).due, "-"},
				{10 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 12 of 20 allocated devices of driver gpu (60%) have an untolerated NoExecute taint, more than 20%; the hold ends " +
					map[bool]string{true: "when the share falls to 20% or below.", false: "when none is tainted."}[tt.b.ResumeShare > 0]},
				{60 * time.Second, "roll back p0", taintPools(nil, 0), ""},
				{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
				{80 * time.Second, "roll back p2", taintPools(nil, 2), ""},
				{80 * time.Second, "Due", (*lim).due, "-"},
				{90 * time.Second, "roll back p3", taintPools(nil, 3), ""},
			}
			steps = append(steps, tt.at20...)
			steps = append(steps,
				limStep{110 * time.Second, "roll back p4, p5", taintPools(nil, 4, 5), ""},
				limStep{110 * time.Second, "Due", (*lim).due, tt.end},
				limStep{110 * time.Second, "limits", (*lim).limits, "gpu Armed 0/20 held 0 throttled 0"},
			)
			runLim(t, l, steps)
			if len(l.cancel) != 0 {
				t.Errorf("cancellations %v", l.cancel)
			}
		})
	}
}

// TestDeviceBreakerHovering: a share that hovers at MaxShare (a flapping
// device taking the driver from 4 to 5 tainted of 20 and back) flips the
// hold at every pass without hysteresis; with ResumeShare 10% it holds
// once and keeps holding until the share falls to 10%, and then the pods
// on the devices still tainted go at their own times (the resume level is
// the operator's choice: what is left below it evicts). The claims
// tolerate the taint for 300s, so nothing is due while it flaps.
func TestDeviceBreakerHovering(t *testing.T) {
	tol := resourcev1.DeviceToleration{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: uPtr(int64(300))}
	// Each flap: the device tainted, a pass (Events collected), then
	// untainted, a pass (Events collected). A pass that hands out or
	// cancels anything says so.
	flap := func(l *lim) string {
		var out []string
		pass := func() string {
			if s := l.due(); s != "-" {
				return "pass: " + s + ", "
			}
			return ""
		}
		for range 2 {
			l.now = l.now.Add(time.Second)
			l.taint("p2", 1, noExecute(limT0.Add(10*time.Second)))
			up := pass() + l.changes()
			l.taint("p2", 0, nil)
			out = append(out, up+" / "+pass()+l.changes())
		}
		return strings.Join(out, " | ")
	}
	held := "DeviceTaintEvictionHeld: Evictions held: 5 of 20 allocated devices of driver gpu (25%) have an untolerated NoExecute taint, more than 20%; the hold ends when the share falls to "
	resumed := "DeviceTaintEvictionResumed: Evictions not held: 4 of 20 allocated devices of driver gpu (20%) have an untolerated NoExecute taint."
	for _, tt := range []struct {
		name string
		b    DeviceBlastRadius
		want string
	}{
		{"no hysteresis", DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0.2}, held + "20% or below. / " + resumed + " | " + held + "20% or below. / " + resumed},
		{"ResumeShare 10%", DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0.1}, held + "10% or below. / - | - / -"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newFleet(t, tt.b, tol)
			steps := []limStep{
				{10 * time.Second, "taint p0, p1", taintPools(noExecute(limT0.Add(10*time.Second)), 0, 1), ""},
				{10 * time.Second, "flap p2's first device", flap, tt.want},
			}
			if tt.b.ResumeShare < tt.b.MaxShare {
				steps = append(steps,
					limStep{13 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
					limStep{400 * time.Second, "Due, past the tolerations", (*lim).due, "-"},
					limStep{400 * time.Second, "untaint p1", taintPools(nil, 1), ""},
					limStep{400 * time.Second, "Due", (*lim).due, evicted(0)},
					limStep{400 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint."},
				)
			} else {
				steps = append(steps,
					limStep{13 * time.Second, "limits", (*lim).limits, "gpu Armed 4/20 held 0 throttled 0"},
					limStep{400 * time.Second, "Due, past the tolerations", (*lim).due, evicted(0, 1)},
				)
			}
			runLim(t, l, steps)
		})
	}
}

// TestDeviceBreakerMinDevicesTripOnly: MinDevices gates the trip only.
// With MinDevices 3, four tainted devices trip a 10% breaker; one pool
// rolled back leaves two, no more than MinDevices, and the hold lasts
// (the breaker used to resume there, and evict them).
func TestDeviceBreakerMinDevicesTripOnly(t *testing.T) {
	l := newFleet(t, DeviceBlastRadius{MaxShare: 0.1, MinDevices: 3})
	runLim(t, l, []limStep{
		{0, "taint p0, p1", taintPools(noExecute(limT0), 0, 1), ""},
		{0, "Due", (*lim).due, "-"},
		{0, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
		{10 * time.Second, "untaint p1", taintPools(nil, 1), ""},
		{10 * time.Second, "Due", (*lim).due, "-"},
		{10 * time.Second, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0"},
		{20 * time.Second, "untaint p0", taintPools(nil, 0), ""},
		{20 * time.Second, "Due", (*lim).due, "-"},
		{20 * time.Second, "limits", (*lim).limits, "gpu Armed 0/20 held 0 throttled 0"},
	})
}

// TestDeviceBreakerResumeAfter: the share must stay at or below
// ResumeShare for ResumeAfter. A flap back above it restarts the wait;
// the clock going back delays nothing and ends nothing early;
// NextDeadline reports the end, and the first pass at it ends the hold
// (an input does not): the pods of the devices still tainted (at or below
// ResumeShare) are then due at once. ReleaseHold during the wait releases;
// after a pass ended it, it finds the hold ended; before, it releases it
// (the holds are the last pass's) and the pass arms the breaker.
func TestDeviceBreakerResumeAfter(t *testing.T) {
	storm := noExecute(limT0.Add(10 * time.Second))
	b := DeviceBlastRadius{MaxShare: 0.2, ResumeShare: 0.1, ResumeAfter: 30 * time.Second}
	start := []limStep{
		{10 * time.Second, "storm: taint p0..p3", taintPools(storm, 0, 1, 2, 3), ""},
		{10 * time.Second, "Due", (*lim).due, "-"},
		{60 * time.Second, "roll back p3, p2", taintPools(nil, 3, 2), ""},
		{60 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
		{60 * time.Second, "NextDeadline", (*lim).next, "none"},
	}
	t.Run("flap, clock back, wait runs out", func(t *testing.T) {
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{70 * time.Second, "limits before the pass", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0"},
			{70 * time.Second, "NextDeadline before the pass", (*lim).next, "+1m10s"},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0 resumes +1m40s"},
			{70 * time.Second, "message", (*lim).message, "Evictions held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; the hold ends at 2026-01-01T00:01:40Z unless the share rises above 10%."},
			{70 * time.Second, "NextDeadline", (*lim).next, "+1m40s"},
			{70 * time.Second, "Explain p-p0-0", func(l *lim) string { return l.explain("p-p0-0") }, "Held held by gpu until +1m40s"},
			// p1 flaps back: 20%, above ResumeShare: the wait is off.
			{80 * time.Second, "p1 tainted again", taintPools(storm, 1), ""},
			{80 * time.Second, "NextDeadline before the pass", (*lim).next, "+1m20s"},
			{80 * time.Second, "Due", (*lim).due, "-"},
			{80 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
			{80 * time.Second, "NextDeadline", (*lim).next, "none"},
			{90 * time.Second, "roll back p1 again", taintPools(nil, 1), ""},
			{90 * time.Second, "NextDeadline before the pass", (*lim).next, "+1m30s"},
			{90 * time.Second, "Due", (*lim).due, "-"},
			{90 * time.Second, "NextDeadline", (*lim).next, "+2m0s"},
			// Back in time: counts as +90s.
			{-time.Hour, "Due", (*lim).due, "-"},
			{-time.Hour, "untaint p9 (no change)", taintPools(nil, 9), ""},
			{-time.Hour, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0 resumes +2m0s"},
			{119 * time.Second, "Due", (*lim).due, "-"},
			{119 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; the hold ends at 2026-01-01T00:02:00Z unless the share rises above 10%."},
			// The first pass at +2m ends the hold, not an input.
			{120 * time.Second, "untaint p9 (no change)", taintPools(nil, 9), ""},
			{120 * time.Second, "changes", (*lim).changes, "-"},
			{120 * time.Second, "NextDeadline", (*lim).next, "+2m0s"},
			{125 * time.Second, "Due", (*lim).due, evicted(0)},
			{125 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint."},
			{125 * time.Second, "Since", func(l *lim) string { return l.d.DriverLimits(nil)[0].Since.Sub(limT0).String() }, "2m0s"},
			{125 * time.Second, "NextDeadline", (*lim).next, "none"},
			{125 * time.Second, "limits", (*lim).limits, "gpu Armed 2/20 held 0 throttled 0"},
		}...))
	})
	t.Run("flap between passes re-dates the wait", func(t *testing.T) {
		// p1 comes back and goes again before the next pass: the wait
		// counts from its second roll-back, as if a pass had seen it.
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0 resumes +1m40s"},
			{80 * time.Second, "p1 tainted again", taintPools(storm, 1), ""},
			{85 * time.Second, "roll back p1 again", taintPools(nil, 1), ""},
			{85 * time.Second, "NextDeadline before the pass", (*lim).next, "+1m25s"},
			{90 * time.Second, "Due", (*lim).due, "-"},
			{90 * time.Second, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0 resumes +1m55s"},
			{100 * time.Second, "Due", (*lim).due, "-"},
			{100 * time.Second, "limits", (*lim).limits, "gpu Holding 2/20 held 2 throttled 0 resumes +1m55s"},
			{115 * time.Second, "Due", (*lim).due, evicted(0)},
		}...))
	})
	t.Run("Due ends the hold", func(t *testing.T) {
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{100 * time.Second, "Due", (*lim).due, evicted(0)},
		}...))
	})
	t.Run("released while waiting", func(t *testing.T) {
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; the hold ends at 2026-01-01T00:01:40Z unless the share rises above 10%."},
			{80 * time.Second, "ReleaseHold", (*lim).release, "true"},
			{80 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHoldReleased: Hold released: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; evictions proceed, and the breaker is armed again at 2026-01-01T00:01:40Z unless the share rises above 10%."},
			{80 * time.Second, "Due", (*lim).due, evicted(0)},
			{80 * time.Second, "limits", (*lim).limits, "gpu Released 2/20 held 0 throttled 0 resumes +1m40s"},
			{100 * time.Second, "Due", (*lim).due, "-"},
			{100 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint."},
		}...))
	})
	t.Run("released after the wait", func(t *testing.T) {
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; the hold ends at 2026-01-01T00:01:40Z unless the share rises above 10%."},
			{100 * time.Second, "Due", (*lim).due, evicted(0)},
			{100 * time.Second, "ReleaseHold", (*lim).release, "false"},
			{100 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint."},
		}...))
	})
	t.Run("released after the wait, before the pass", func(t *testing.T) {
		// ReleaseHold acts on the holds as the last pass judged them: the
		// hold is released, and the next pass arms the breaker.
		l := newFleet(t, b)
		runLim(t, l, append(start, []limStep{
			{70 * time.Second, "roll back p1", taintPools(nil, 1), ""},
			{70 * time.Second, "Due", (*lim).due, "-"},
			{70 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint; the hold ends at 2026-01-01T00:01:40Z unless the share rises above 10%."},
			{100 * time.Second, "ReleaseHold", (*lim).release, "true"},
			{100 * time.Second, "Due", (*lim).due, evicted(0)},
			{100 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 2 of 20 allocated devices of driver gpu (10%) have an untolerated NoExecute taint."},
		}...))
	})
	t.Run("held from the first device of a storm back within the wait", func(t *testing.T) {
		l := newFleet(t, DeviceBlastRadius{MaxShare: 0.2, ResumeAfter: time.Minute})
		runLim(t, l, []limStep{
			{10 * time.Second, "storm", taintPools(storm, 0, 1, 2, 3), ""},
			{10 * time.Second, "Due", (*lim).due, "-"},
			{20 * time.Second, "roll back", taintPools(nil, 0, 1, 2, 3), ""},
			{20 * time.Second, "Due", (*lim).due, "-"},
			{20 * time.Second, "limits", (*lim).limits, "gpu Holding 0/20 held 0 throttled 0 resumes +1m20s"},
			// It comes back one pool at a time: held from the first
			// (an armed breaker would let 20% go before tripping).
			{50 * time.Second, "storm again: p0", taintPools(noExecute(limT0.Add(50*time.Second)), 0), ""},
			{50 * time.Second, "Due", (*lim).due, "-"},
			{50 * time.Second, "Explain p-p0-0", func(l *lim) string { return l.explain("p-p0-0") }, "Held held by gpu"},
			{60 * time.Second, "roll back p0", taintPools(nil, 0), ""},
			{120 * time.Second, "Due", (*lim).due, "-"},
			{120 * time.Second, "limits", (*lim).limits, "gpu Armed 0/20 held 0 throttled 0"},
		})
	})
}

// TestDeviceBreakerRestart: a hold below MaxShare is not in the counts, so
// it is in the Snapshot. A controller restarted half-way through a
// roll-back (4 of 20 devices still tainted, ResumeShare 0) and fed its
// informers' lists in the worst order (every claim on untainted slices
// first: a calm share) still holds after Restore, because only the first
// Due judges a restored hold; without the Snapshot's holds it would come
// up Armed and evict the pods on the last tainted devices at once. A
// restored hold whose share is calm at the first Due ends there.
func TestDeviceBreakerRestart(t *testing.T) {
	storm := noExecute(limT0.Add(10 * time.Second))
	b := DeviceBlastRadius{MaxShare: 0.2}
	l := newFleet(t, b)
	runLim(t, l, []limStep{
		{10 * time.Second, "storm: taint p0..p5", taintPools(storm, 0, 1, 2, 3, 4, 5), ""},
		{10 * time.Second, "Due", (*lim).due, "-"},
		{90 * time.Second, "roll back p0..p3", taintPools(nil, 0, 1, 2, 3), ""},
		{90 * time.Second, "Due", (*lim).due, "-"},
		{90 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
	})
	snap := l.d.Snapshot()
	if want := []DeviceHold{{Driver: "gpu", Since: limT0.Add(10 * time.Second)}}; fmt.Sprint(snap.Holds) != fmt.Sprint(want) {
		t.Fatalf("Snapshot().Holds = %v, want %v", snap.Holds, want)
	}
	restart := func(t *testing.T, s DeviceSnapshot, tainted ...int) *lim {
		t.Helper()
		l := newLim(t, limConfig(b))
		l.now = limT0.Add(95 * time.Second)
		if err := l.d.Restore(l.now, s); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			l.pool("gpu", fmt.Sprintf("p%d", i), 2, 2) // slices untainted, then the claims: 0 of 20 tainted
		}
		taintPools(storm, tainted...)(l)
		return l
	}
	t.Run("restored", func(t *testing.T) {
		l := restart(t, snap, 4, 5)
		runLim(t, l, []limStep{
			{95 * time.Second, "limits", (*lim).limits, "gpu Holding 4/20 held 4 throttled 0"},
			{95 * time.Second, "Due", (*lim).due, "-"},
			{95 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 4 of 20 allocated devices of driver gpu (20%) have an untolerated NoExecute taint, no longer more than 20%; the hold ends when none is tainted."},
			{95 * time.Second, "Since", func(l *lim) string { return l.d.DriverLimits(nil)[0].Since.Sub(limT0).String() }, "10s"},
			{110 * time.Second, "roll back p4, p5", taintPools(nil, 4, 5), ""},
			{110 * time.Second, "Due", (*lim).due, "-"},
			{110 * time.Second, "limits", (*lim).limits, "gpu Armed 0/20 held 0 throttled 0"},
		})
	})
	t.Run("not restored", func(t *testing.T) {
		l := restart(t, DeviceSnapshot{}, 4, 5)
		runLim(t, l, []limStep{
			{95 * time.Second, "Due", (*lim).due, evicted(4, 5)},
		})
	})
	t.Run("restored, calm at the first Due", func(t *testing.T) {
		l := restart(t, snap)
		runLim(t, l, []limStep{
			{95 * time.Second, "limits", (*lim).limits, "gpu Holding 0/20 held 0 throttled 0"},
			{95 * time.Second, "Due", (*lim).due, "-"},
			{95 * time.Second, "limits", (*lim).limits, "gpu Armed 0/20 held 0 throttled 0"},
			{95 * time.Second, "Snapshot holds", func(l *lim) string { return fmt.Sprint(l.d.Snapshot().Holds) }, "[]"},
		})
	})
	t.Run("no breaker: holds ignored", func(t *testing.T) {
		l := newLim(t, DefaultDeviceEvictorConfig())
		if err := l.d.Restore(l.now, snap); err != nil {
			t.Fatal(err)
		}
		if got := l.d.DriverLimits(nil); len(got) != 0 {
			t.Errorf("DriverLimits = %v, want none without a breaker", got)
		}
	})
}
