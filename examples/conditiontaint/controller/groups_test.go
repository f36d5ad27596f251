package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// withEvents returns the events of reason.
func withReason(evs []string, reason string) []string {
	var out []string
	for _, e := range evs {
		if strings.Contains(e, " "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}

func TestBurst(t *testing.T) {
	cfg := testConfig()
	cfg.Zones.Burst = 3
	h := newHarness(t, cfg, zone("a", 20, 5)...) // 25%: under the breaker
	h.step()
	if got := h.taintedSet(names("a", 20)...); strings.Join(got, ",") != "a-0,a-1,a-2" {
		t.Fatalf("first pass tainted %v, want a-0..a-2 (a burst of 3)", got)
	}
	for i, at := range []time.Duration{2 * time.Second, 4 * time.Second} {
		h.clock.SetTime(epoch.Add(at - time.Millisecond))
		h.step()
		if h.tainted(fmt.Sprintf("a-%d", 3+i)) {
			t.Fatalf("a-%d tainted before %v: the burst is spent, the rate paces the rest", 3+i, at)
		}
		h.clock.SetTime(epoch.Add(at))
		h.step()
		if !h.tainted(fmt.Sprintf("a-%d", 3+i)) {
			t.Fatalf("a-%d not tainted at %v", 3+i, at)
		}
	}
}

func TestGroupByLabel(t *testing.T) {
	const pool = "karpenter.sh/nodepool"
	cfg := testConfig()
	cfg.Zones.GroupBy = pool
	// One zone, two pools: p has 4 of 10 sick (40%, tripped), q 1 of 10.
	// Grouped by zone it would be 5 of 20 (25%): all five tainted.
	var objs []client.Object
	for _, g := range []struct {
		name string
		sick int
	}{{"p", 4}, {"q", 1}} {
		for _, o := range zone(g.name, 10, g.sick) {
			o.SetLabels(map[string]string{v1.LabelTopologyZone: "z", pool: g.name})
			objs = append(objs, o)
		}
	}
	// Nodes without the label form one group: 1 of 2 sick.
	objs = append(objs, node("other-0", "z", true), node("other-1", "z", false))
	h := newHarness(t, cfg, objs...)
	for range 3 {
		h.step()
		h.clock.Step(2 * time.Second)
	}
	if got := h.taintedSet(names("p", 10)...); len(got) != 0 {
		t.Errorf("tainted in tripped pool p: %v", got)
	}
	if !h.tainted("q-0") || !h.tainted("other-0") {
		t.Error("q-0 and the unlabelled node (its own group) not tainted")
	}
	evs := h.events()
	held := withReason(evs, ReasonHeldByBreaker)
	if len(held) != 4 || !strings.Contains(held[0], `group karpenter.sh/nodepool="p" is PartialDisruption: 4 of 10 nodes unhealthy, breaker threshold 0.33`) {
		t.Errorf("held events = %q, want 4 naming the pool", held)
	}
	if got := testutil.ToFloat64(h.m.ZoneState.WithLabelValues("p", "PartialDisruption")); got != 1 {
		t.Errorf("zone_state{zone=p,PartialDisruption} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(h.m.ZoneSize.WithLabelValues("")); got != 2 {
		t.Errorf("zone_size{zone=\"\"} = %v, want 2 (the unlabelled nodes)", got)
	}
}

func TestMaxUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       intstr.IntOrString
		size      int
		sick      int
		tripped   bool
		wantWhy   string
		wantTaint int
	}{
		// The fraction rule never trips on 2 unhealthy nodes; a count does.
		{"count, small group", intstr.FromInt32(1), 3, 2, true, "2 of 3 nodes unhealthy, more than maxUnhealthy 1", 0},
		{"count reached", intstr.FromInt32(2), 10, 2, false, "", 2},
		{"count passed", intstr.FromInt32(2), 10, 3, true, "3 of 10 nodes unhealthy, more than maxUnhealthy 2", 0},
		{"zero", intstr.FromInt32(0), 10, 1, true, "1 of 10 nodes unhealthy, more than maxUnhealthy 0", 0},
		{"percent reached", intstr.FromString("30%"), 10, 3, false, "", 3},
		{"percent passed", intstr.FromString("30%"), 10, 4, true, "4 of 10 nodes unhealthy, more than maxUnhealthy 30% (3)", 0},
		{"percent rounds down", intstr.FromString("30%"), 9, 3, true, "3 of 9 nodes unhealthy, more than maxUnhealthy 30% (2)", 0},
		// Over the old 33% threshold, under maxUnhealthy: not tripped.
		{"replaces the threshold", intstr.FromString("50%"), 10, 5, false, "", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Zones.MaxUnhealthy = &tc.max
			cfg.Zones.Burst = 10
			h := newHarness(t, cfg, zone("a", tc.size, tc.sick)...)
			h.step()
			if got := len(h.taintedSet(names("a", tc.size)...)); got != tc.wantTaint {
				t.Errorf("tainted %d nodes, want %d", got, tc.wantTaint)
			}
			held := withReason(h.events(), ReasonHeldByBreaker)
			if tc.tripped != (len(held) > 0) || (tc.tripped && !strings.Contains(held[0], tc.wantWhy)) {
				t.Errorf("held events = %q, want tripped %v with %q", held, tc.tripped, tc.wantWhy)
			}
			state := "Normal"
			if tc.tripped {
				state = "PartialDisruption"
			}
			if got := testutil.ToFloat64(h.m.ZoneState.WithLabelValues("a", state)); got != 1 {
				t.Errorf("zone_state{a,%s} = %v, want 1", state, got)
			}
		})
	}
}

func TestMaxUnhealthyRecovers(t *testing.T) {
	cfg := testConfig()
	cfg.Zones.MaxUnhealthy = ptr.To(intstr.FromInt32(2))
	h := newHarness(t, cfg, zone("a", 10, 3)...)
	h.step()
	if got := h.taintedSet(names("a", 10)...); len(got) != 0 {
		t.Fatalf("tainted in a tripped group: %v", got)
	}
	h.setCondition("a-0", v1.ConditionFalse)
	h.step()
	h.clock.Step(2 * time.Second)
	h.step()
	h.clock.Step(2 * time.Second)
	h.step()
	if got := h.taintedSet(names("a", 10)...); strings.Join(got, ",") != "a-1,a-2" {
		t.Errorf("after recovery tainted %v, want a-1,a-2", got)
	}
}

// pausedHarness: zone a of 10 with a-0 already tainted (before a restart)
// and reporting the condition, a-1 reporting it too: with maxUnhealthy 1
// the zone is tripped. Pods on a-0: none (no toleration) and sixty.
func pausedHarness(t *testing.T, pause bool) *harness {
	cfg := testConfig()
	cfg.Zones.MaxUnhealthy = ptr.To(intstr.FromInt32(1))
	cfg.Zones.PauseEvictions = pause
	objs := zone("a", 10, 2)
	objs[0] = node("a-0", "a", true, v1.Taint{Key: taintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch}})
	objs = append(objs, pod("none", "a-0", nil, false), pod("sixty", "a-0", ptr.To[int64](60), false))
	h := newHarness(t, cfg, objs...)
	h.reconcilePod("ns", "none")
	h.reconcilePod("ns", "sixty")
	h.reconcileNode("a-0")
	h.reconcileNode("a-1")
	return h
}

func TestPauseEvictions(t *testing.T) {
	h := pausedHarness(t, true)
	// Before the first zone pass nothing is known of the group: held.
	h.evictions()
	if h.evicted("none") {
		t.Fatal("evicted before the first zone pass")
	}
	if why, ok := h.ctl.EvictionPaused(types.NamespacedName{Namespace: "ns", Name: "none"}); !ok || !strings.Contains(why, "no zone pass") {
		t.Errorf("EvictionPaused(none) = %q, %v", why, ok)
	}
	h.step()
	h.evictions()
	if h.evicted("none") {
		t.Fatal("pod evicted while its group is tripped")
	}
	why, ok := h.ctl.EvictionPaused(types.NamespacedName{Namespace: "ns", Name: "none"})
	if !ok || why != `zone "a" is PartialDisruption: 2 of 10 nodes unhealthy, more than maxUnhealthy 1` {
		t.Errorf("EvictionPaused(none) = %q, %v", why, ok)
	}
	h.clock.Step(time.Minute) // sixty's toleration runs out
	for range 3 {
		h.step()
		h.evictions()
	}
	if h.evicted("none") || h.evicted("sixty") {
		t.Fatal("pod evicted while its group is tripped")
	}
	evs := h.events()
	paused := withReason(evs, ReasonEvictionPaused)
	if len(paused) != 2 || !strings.Contains(paused[0], "Warning") ||
		!strings.Contains(paused[1], `not evicting pod ns/sixty (due since 2026-01-01T00:01:00Z: TolerationExpired): zone "a" is PartialDisruption: 2 of 10 nodes unhealthy, more than maxUnhealthy 1; held until evictions resume (zones.pauseEvictions)`) {
		t.Errorf("paused events = %q, want one per pod", paused)
	}
	if got := h.decisions(DecisionEvictionPaused, false); got != 2 {
		t.Errorf("decisions_total{eviction_paused} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(h.m.PausedEvicts); got != 2 {
		t.Errorf("paused_evictions = %v, want 2", got)
	}
	if got := testutil.ToFloat64(h.m.ZoneEvictionsPaused.WithLabelValues("a")); got != 1 {
		t.Errorf("zone_evictions_paused{a} = %v, want 1", got)
	}
	// a-1 recovers: 1 of 10, the group resumes and both pods go at once.
	h.setCondition("a-1", v1.ConditionFalse)
	h.reconcileNode("a-1")
	h.step()
	h.evictions()
	if !h.evicted("none") || !h.evicted("sixty") {
		t.Fatal("pods not evicted when the group recovered")
	}
	if got := testutil.ToFloat64(h.m.ZoneEvictionsPaused.WithLabelValues("a")); got != 0 {
		t.Errorf("zone_evictions_paused{a} = %v, want 0", got)
	}
	if got := testutil.ToFloat64(h.m.PausedEvicts); got != 0 {
		t.Errorf("paused_evictions = %v, want 0", got)
	}
}

// TestPauseEvictionsOff: without pauseEvictions a tripped group holds new
// taints only; the pods on an already tainted node go (the behaviour
// before the field).
func TestPauseEvictionsOff(t *testing.T) {
	h := pausedHarness(t, false)
	h.step()
	h.evictions()
	if !h.evicted("none") {
		t.Fatal("pod not evicted: evictions are paused only with pauseEvictions")
	}
}

// TestPausedEvictionDroppedWhenUntainted: a pod whose node loses the taint
// while its eviction is held stays when the group recovers.
func TestPausedEvictionDroppedWhenUntainted(t *testing.T) {
	h := pausedHarness(t, true)
	h.step()
	h.evictions()
	h.setCondition("a-0", v1.ConditionFalse)
	h.reconcileNode("a-0") // the taint goes at once
	if _, ok := h.ctl.EvictionPaused(types.NamespacedName{Namespace: "ns", Name: "none"}); ok {
		t.Error("eviction still held after the node lost its taint")
	}
	h.setCondition("a-1", v1.ConditionFalse)
	h.reconcileNode("a-1")
	h.step()
	h.clock.Step(time.Hour)
	h.evictions()
	if h.evicted("none") || h.evicted("sixty") {
		t.Error("pod evicted after its node lost the taint")
	}
	_ = context.Background
}

// TestDryRunFullDisruptionCancelsEvictions: in a dry run, the would-be
// taints full disruption mode removes leave the Evictor too. There is no
// watch event for a taint that was never written, so the Evictor used to
// keep it and the preview went on to a ConditionTaintWouldEvict.
func TestDryRunFullDisruptionCancelsEvictions(t *testing.T) {
	cfg := testConfig()
	cfg.DryRun = true
	h := newHarness(t, cfg, append(zone("a", 3, 1), pod("sixty", "a-0", ptr.To[int64](60), false))...)
	h.reconcilePod("ns", "sixty")
	h.step() // a-0 would be tainted: sixty's countdown starts
	h.evictions()
	h.setCondition("a-1", v1.ConditionTrue)
	h.setCondition("a-2", v1.ConditionTrue)
	h.step() // every node of the only zone: full disruption mode
	if evs := h.events(); count(evs, ReasonBreakerUntaint) != 1 {
		t.Fatalf("events = %q, want a-0's would-be taint removed by the breaker", evs)
	}
	h.clock.Step(time.Minute)
	h.evictions()
	if evs := h.events(); count(evs, ReasonWouldEvict) != 0 {
		t.Errorf("events = %q, want no would-evict after the taint's removal", evs)
	}
}
