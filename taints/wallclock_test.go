package taints

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestWallClockStepFiresNothingEarly: the Evictor measures a toleration's
// 300s on the caller's monotonic clock. An instant whose wall clock jumped
// 10 minutes ahead while only 10s passed (an NTP step on the controller
// host) must not make the eviction due, nor a retry; with fake-clock
// instants (no monotonic reading) the wall clock is all there is and the
// same jump does make it due.
func TestWallClockStepFiresNothingEarly(t *testing.T) {
	const step = 10 * time.Minute
	cases := []struct {
		name    string
		t0      time.Time
		at      func(t0 time.Time, d time.Duration) time.Time // d of real time after t0, wall clock stepped ahead
		stepped bool                                          // whether the step counts (fake clock)
	}{
		{"monotonic", time.Now(), func(t0 time.Time, d time.Duration) time.Time {
			return testutil.StepWallClock(t0.Add(d), step)
		}, false},
		{"fake clock", testutil.Epoch, func(t0 time.Time, d time.Duration) time.Time {
			return t0.Add(d + step)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewEvictor(EvictorConfig{})
			if err != nil {
				t.Fatal(err)
			}
			e.SetPod(c.t0, pod("a", "n1", tolFor(unreachable, 300)))
			e.SetPod(c.t0, pod("b", "n1"))
			e.SetNodeTaints(c.t0, "n1", []v1.Taint{ne(unreachable)})
			if got := e.Due(c.t0); len(got) != 1 || got[0].Pod != key("b") {
				t.Fatalf("Due(t0) = %v, want default/b (not tolerated)", got)
			}
			e.Retry(c.t0, key("b"), 60*time.Second)

			now := c.at(c.t0, 10*time.Second)
			got := e.Due(now)
			if c.stepped {
				if len(got) != 2 {
					t.Errorf("Due(t0+10s+10m) = %v, want both evictions (fake clock: wall time is all there is)", got)
				}
				return
			}
			if len(got) != 0 {
				t.Fatalf("Due(t0+10s, wall clock +10m) = %v, want none", got)
			}
			if x := e.Explain(now, key("a")); x.State != EvictionScheduled || x.At.Sub(now) != 290*time.Second {
				t.Errorf("Explain(a) = %v in %v, want Scheduled in 290s", x.State, x.At.Sub(now))
			}
			if d, ok := e.NextDeadline(); !ok || d.Sub(now) != 50*time.Second {
				t.Errorf("NextDeadline() in %v, %v; want the retry in 50s", d.Sub(now), ok)
			}
			if got := e.Due(c.at(c.t0, 60*time.Second)); len(got) != 1 || got[0].Pod != key("b") {
				t.Errorf("Due(t0+60s) = %v, want the retry of default/b", got)
			}
			if got := e.Due(c.at(c.t0, 300*time.Second-1)); len(got) != 0 {
				t.Errorf("Due(t0+300s-1ns) = %v, want none", got)
			}
			if got := e.Due(c.at(c.t0, 300*time.Second)); len(got) != 1 || got[0].Pod != key("a") {
				t.Errorf("Due(t0+300s) = %v, want default/a", got)
			}
		})
	}
}

// TestMixedLanes: fire times counted from a taint's TimeAdded (a wall time,
// placed on the caller's clock) and from a first sighting are handed out in
// fire-time order.
func TestMixedLanes(t *testing.T) {
	t0 := time.Now()
	e, err := NewEvictor(EvictorConfig{UseTaintTimeAdded: true})
	if err != nil {
		t.Fatal(err)
	}
	// n1's taint was added 100s before t0 by the API server (wall only).
	ta := v1.Taint{Key: unreachable, Effect: v1.TaintEffectNoExecute}
	ta.TimeAdded = testutil.MetaTime(t0.Round(0).Add(-100 * time.Second))
	created := *testutil.MetaTime(t0.Round(0).Add(-200 * time.Second))
	pw := pod("wall", "n1", tolFor(unreachable, 300))
	pw.CreationTimestamp = created
	e.SetPod(t0, pw)
	e.SetNodeTaints(t0, "n1", []v1.Taint{ta})
	// n2's taint is seen at t0+10s (monotonic).
	pm := pod("mono", "n2", tolFor(unreachable, 300))
	pm.CreationTimestamp = created
	e.SetPod(t0, pm)
	e.SetNodeTaints(t0.Add(10*time.Second), "n2", []v1.Taint{ne(unreachable)})
	if d, ok := e.NextDeadline(); !ok || d.Sub(t0) != 200*time.Second {
		t.Errorf("NextDeadline() = t0%+v, %v; want t0+200s", d.Sub(t0), ok)
	}
	if got := e.Due(t0.Add(199 * time.Second)); len(got) != 0 {
		t.Errorf("Due(t0+199s) = %v, want none", got)
	}
	got := e.Due(t0.Add(400 * time.Second))
	if len(got) != 2 || got[0].Pod != key("wall") || got[1].Pod != key("mono") {
		t.Errorf("Due(t0+400s) = %v, want wall (t0+200s) then mono (t0+310s)", got)
	}
	if msg := e.check(); msg != "" {
		t.Error(msg)
	}
}

// TestWallLaneSaturationNeverEarly: fire times more than about 292 years
// from the wall lane's base share a bucket (their offsets saturate); the
// bucket keeps the later time, so no eviction is handed out before its own
// fire time.
func TestWallLaneSaturationNeverEarly(t *testing.T) {
	e, err := NewEvictor(EvictorConfig{UseTaintTimeAdded: true})
	if err != nil {
		t.Fatal(err)
	}
	centuries := int64(math.MaxInt64 / int64(time.Second)) // saturates at the largest Duration
	created := *testutil.MetaTime(testutil.At(-time.Hour))
	for i, c := range []struct {
		node  string
		added time.Duration
		secs  int64
	}{
		{"n0", 0, 300},                   // the lane's base: +300s
		{"n1", time.Hour, centuries},     // +1h + 292y: offset saturates
		{"n2", 2 * time.Hour, centuries}, // +2h + 292y: same saturated offset, later
	} {
		p := pod(fmt.Sprintf("p%d", i), c.node, tolFor(unreachable, c.secs))
		p.CreationTimestamp = created
		e.SetPod(testutil.Epoch, p)
		e.SetNodeTaints(testutil.At(3*time.Hour), c.node, []v1.Taint{added(ne(unreachable), c.added)})
	}
	if msg := e.check(); msg != "" {
		t.Fatal(msg)
	}
	far := testutil.At(2 * time.Hour).Add(seconds(centuries)) // p2's fire time
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{testutil.At(300 * time.Second), "default/p0"},
		{far.Add(-time.Nanosecond), ""}, // p1 is due, but p2 (sharing its bucket) is not: never early
		{far, "default/p1 default/p2"},  // one bucket, in the order they were queued
	} {
		var got []string
		for _, x := range e.Due(tc.at) {
			got = append(got, x.Pod.String())
			if x.At.After(tc.at) {
				t.Errorf("Due(%v) handed out %s due at %v: early", tc.at, x.Pod, x.At)
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("Due(%v) = %q, want %q", tc.at, g, tc.want)
		}
	}
}

// TestWallClockStepUseTaintTimeAdded: with UseTaintTimeAdded the countdown
// starts at the taint's TimeAdded, a wall time from the API server. It is
// placed on the caller's clock when first seen, so a wall-clock step later
// (here +10m, while 10s pass) fires nothing early, not even after the
// node's taints change again past the step.
func TestWallClockStepUseTaintTimeAdded(t *testing.T) {
	t0 := time.Now()
	e, err := NewEvictor(EvictorConfig{UseTaintTimeAdded: true})
	if err != nil {
		t.Fatal(err)
	}
	ta := v1.Taint{Key: unreachable, Effect: v1.TaintEffectNoExecute}
	ta.TimeAdded = testutil.MetaTime(t0.Round(0).Add(-100 * time.Second))
	p := pod("a", "n1", tolFor(unreachable, 300))
	p.CreationTimestamp = *testutil.MetaTime(t0.Round(0).Add(-time.Hour))
	e.SetPod(t0, p)
	e.SetNodeTaints(t0, "n1", []v1.Taint{ta})

	stepped := testutil.StepWallClock(t0.Add(10*time.Second), 10*time.Minute)
	if got := e.Due(stepped); len(got) != 0 {
		t.Fatalf("Due(t0+10s, wall clock +10m) = %v, want none (due at t0+200s)", got)
	}
	// A second NoExecute taint, tolerated forever, arrives after the step:
	// the first one's countdown keeps its start.
	other := v1.Taint{Key: "example.com/other", Effect: v1.TaintEffectNoExecute}
	p = p.DeepCopy()
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: other.Key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	e.SetPod(stepped, p)
	e.SetNodeTaints(stepped, "n1", []v1.Taint{ta, other})
	if got := e.Due(stepped); len(got) != 0 {
		t.Fatalf("Due after a second taint past the step = %v, want none", got)
	}
	if d, ok := e.NextDeadline(); !ok || d.Sub(stepped) != 190*time.Second {
		t.Errorf("NextDeadline() in %v, %v; want 190s (t0+200s on the monotonic clock)", d.Sub(stepped), ok)
	}
	if got := e.Due(t0.Add(200 * time.Second)); len(got) != 1 || got[0].Pod != key("a") {
		t.Errorf("Due(t0+200s) = %v, want default/a", got)
	}
}
