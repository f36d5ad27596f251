package zonestate

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Short state names for the step tables.
const (
	I = StateInitial
	N = StateNormal
	P = StatePartialDisruption
	F = StateFullDisruption
)

// step is one Update call and the Decision it must return.
type step struct {
	zones zonesT
	want  Decision
}

func zd(key string, size, notReady int, prev, state State, qps float64, changed bool) ZoneDecision {
	return ZoneDecision{Key: key, Size: size, NotReady: notReady, Previous: prev, State: state, QPS: qps, RateChanged: changed}
}

// runSteps feeds steps to a Tracker built from p and checks every Decision.
func runSteps(t *testing.T, p Policy, steps []step) {
	t.Helper()
	tr, err := NewTracker(p)
	if err != nil {
		t.Fatalf("NewTracker(%+v) = %v", p, err)
	}
	for i, s := range steps {
		got := tr.Update(s.zones)
		if !decisionEqual(got, s.want) {
			t.Fatalf("step %d: Update(%s) =\n\t%s\nwant\n\t%s", i, fmtZones(s.zones), fmtDecision(got), fmtDecision(s.want))
		}
	}
}

func TestUpdateSteps(t *testing.T) {
	def := DefaultPolicy()
	tests := []struct {
		name  string
		p     Policy
		steps []step
	}{
		{
			// Upstream "Partial Disruption: Nodes created recently without
			// status conditions": no Ready condition counts as not ready, so a
			// fresh cluster starts in full disruption mode.
			name: "bootstrap: nodes without Ready enter full disruption, then partial",
			p:    def,
			steps: []step{
				{zonesT{"z1": conds("nnnn")}, Decision{
					Zones:                 []ZoneDecision{zd("z1", 4, 4, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"z1": conds("UUUT")}, Decision{
					Zones:                []ZoneDecision{zd("z1", 4, 3, F, P, 0, false)}, // small zone: partial rate 0
					ExitedFullDisruption: true}},
			},
		},
		{
			name: "single zone: Full stops every eviction until a node is Ready",
			p:    def,
			steps: []step{
				{zonesT{"": zoneOf(3, 0)}, Decision{Zones: []ZoneDecision{zd("", 3, 0, I, N, 0.1, true)}}},
				{zonesT{"": zoneOf(0, 3)}, Decision{
					Zones:                 []ZoneDecision{zd("", 3, 3, N, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"": zoneOf(0, 3)}, Decision{
					Zones:            []ZoneDecision{zd("", 3, 3, F, F, 0, false)},
					InFullDisruption: true}},
				{zonesT{"": zoneOf(1, 2)}, Decision{
					Zones:                []ZoneDecision{zd("", 3, 2, F, N, 0.1, true)},
					ExitedFullDisruption: true}},
				{zonesT{"": zoneOf(1, 2)}, Decision{Zones: []ZoneDecision{zd("", 3, 2, N, N, 0.1, false)}}},
			},
		},
		{
			name: "multi-zone: a dead zone next to a Ready node is tainted at the normal rate",
			p:    def,
			steps: []step{
				{zonesT{"a": zoneOf(0, 3), "b": zoneOf(2, 0)}, Decision{Zones: []ZoneDecision{
					zd("a", 3, 3, I, F, 0.1, true), zd("b", 2, 0, I, N, 0.1, true)}}},
			},
		},
		{
			// Upstream "No Disruption: Initially both zones down, one comes back".
			name: "two zones down, one comes back",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("U"), "b": conds("U")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, I, F, 0, true), zd("b", 1, 1, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"a": conds("U"), "b": conds("T")}, Decision{
					Zones:                []ZoneDecision{zd("a", 1, 1, F, F, 0.1, true), zd("b", 1, 0, F, N, 0.1, true)},
					ExitedFullDisruption: true}},
			},
		},
		{
			name: "partial disruption: the secondary rate needs more than LargeClusterThreshold nodes in the zone",
			p:    def,
			steps: []step{
				{zonesT{"a": zoneOf(22, 28)}, Decision{Zones: []ZoneDecision{zd("a", 50, 28, I, P, 0, true)}}},
				{zonesT{"a": zoneOf(22, 29)}, Decision{Zones: []ZoneDecision{zd("a", 51, 29, P, P, 0.01, true)}}},
				{zonesT{"a": zoneOf(22, 28)}, Decision{Zones: []ZoneDecision{zd("a", 50, 28, P, P, 0, true)}}},
				{zonesT{"a": zoneOf(50, 0)}, Decision{Zones: []ZoneDecision{zd("a", 50, 0, P, N, 0.1, true)}}},
			},
		},
		{
			name: "Normal to Full in a multi-zone cluster keeps the same rate: no RateChanged",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("T"), "b": conds("T")}, Decision{Zones: []ZoneDecision{
					zd("a", 1, 0, I, N, 0.1, true), zd("b", 1, 0, I, N, 0.1, true)}}},
				{zonesT{"a": conds("F"), "b": conds("T")}, Decision{Zones: []ZoneDecision{
					zd("a", 1, 1, N, F, 0.1, false), zd("b", 1, 0, N, N, 0.1, false)}}},
			},
		},
		{
			name: "Size counts nil conditions; NotReady counts nil, False and Unknown",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("TnnFU")}, Decision{Zones: []ZoneDecision{zd("a", 5, 4, I, P, 0, true)}}},
			},
		},
		{
			name: "zones are reported in sorted key order",
			p:    def,
			steps: []step{
				{zonesT{"r:\x00:c": conds("T"), "": conds("T"), "r:\x00:a": conds("T"), "q:\x00:z": conds("T")}, Decision{Zones: []ZoneDecision{
					zd("", 1, 0, I, N, 0.1, true), zd("q:\x00:z", 1, 0, I, N, 0.1, true),
					zd("r:\x00:a", 1, 0, I, N, 0.1, true), zd("r:\x00:c", 1, 0, I, N, 0.1, true)}}},
			},
		},
		{
			name: "a zone listed with no conditions is absent: it cannot block full disruption",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("T"), "b": conds("T")}, Decision{Zones: []ZoneDecision{
					zd("a", 1, 0, I, N, 0.1, true), zd("b", 1, 0, I, N, 0.1, true)}}},
				{zonesT{"a": conds("U"), "b": nil, "c": conds("")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, N, F, 0, true)},
					Removed:               []string{"b"},
					EnteredFullDisruption: true, InFullDisruption: true}},
			},
		},
		{
			name: "no zones at all: nothing happens but removal",
			p:    def,
			steps: []step{
				{nil, Decision{}},
				{zonesT{"a": conds("T")}, Decision{Zones: []ZoneDecision{zd("a", 1, 0, I, N, 0.1, true)}}},
				{zonesT{}, Decision{Removed: []string{"a"}}},
				{zonesT{"a": conds("U")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
			},
		},
		{
			name: "no zones during full disruption: the mode is kept, and a Ready zone then exits it",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("U")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{nil, Decision{Removed: []string{"a"}, InFullDisruption: true}},
				{zonesT{"a": conds("T")}, Decision{
					Zones:                []ZoneDecision{zd("a", 1, 0, I, N, 0.1, true)},
					ExitedFullDisruption: true}},
			},
		},
		{
			name: "a new zone, also fully disrupted, re-enters full disruption (any Initial zone: not all were Full)",
			p:    def,
			steps: []step{
				{zonesT{"a": conds("U")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"a": conds("U"), "b": conds("nF")}, Decision{
					Zones:                 []ZoneDecision{zd("a", 1, 1, F, F, 0, false), zd("b", 2, 2, I, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"a": conds("U"), "b": conds("nF")}, Decision{
					Zones:            []ZoneDecision{zd("a", 1, 1, F, F, 0, false), zd("b", 2, 2, F, F, 0, false)},
					InFullDisruption: true}},
			},
		},
		{
			name: "zero policy: every rate is 0",
			p:    Policy{},
			steps: []step{
				{zonesT{"a": zoneOf(0, 4), "b": zoneOf(1, 3), "c": zoneOf(5, 0)}, Decision{Zones: []ZoneDecision{
					zd("a", 4, 4, I, F, 0, true), zd("b", 4, 3, I, P, 0, true), zd("c", 5, 0, I, N, 0, true)}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.p, tt.steps) })
	}
}

// TestStaleZonesAllRemoved: upstream deletes stale zones inside the loop
// that computes allWasFullyDisrupted and stops at the first zone that is
// not Full, so which stale zones survive depends on map order (upstream handleDisruption).
// Every stale zone goes, reported in sorted order.
func TestStaleZonesAllRemoved(t *testing.T) {
	all := zonesT{"d": conds("T"), "a": conds("T"), "c": conds("T"), "b": conds("U"), "e": conds("T")}
	runSteps(t, DefaultPolicy(), []step{
		{all, Decision{Zones: []ZoneDecision{
			zd("a", 1, 0, I, N, 0.1, true), zd("b", 1, 1, I, F, 0.1, true), zd("c", 1, 0, I, N, 0.1, true),
			zd("d", 1, 0, I, N, 0.1, true), zd("e", 1, 0, I, N, 0.1, true)}}},
		{zonesT{"c": conds("T")}, Decision{
			Zones:   []ZoneDecision{zd("c", 1, 0, N, N, 0.1, false)},
			Removed: []string{"a", "b", "d", "e"}}},
		// A removed zone that comes back starts from Initial with RateChanged,
		// so a caller that kept its queue (see the package doc, Removed zones) applies the rate again.
		{zonesT{"a": conds("T"), "c": conds("T")}, Decision{Zones: []ZoneDecision{
			zd("a", 1, 0, I, N, 0.1, true), zd("c", 1, 0, N, N, 0.1, false)}}},
	})
	// Whatever the map order, many runs give the same answer.
	for range 50 {
		tr, _ := NewTracker(DefaultPolicy())
		tr.Update(all)
		d := tr.Update(zonesT{"c": conds("T")})
		if !slices.Equal(d.Removed, []string{"a", "b", "d", "e"}) {
			t.Fatalf("Update({c}) after five zones: Removed = %q, want [a b d e]", d.Removed)
		}
	}
}

// TestIssue131182FullDisruptionQPS: users asked for a separate rate for a
// fully disrupted zone next to healthy ones (kubernetes #131182, #70501,
// #110114); nil keeps the normal rate, 0 pauses such zones, and in full
// disruption mode every rate is 0 regardless.
func TestIssue131182FullDisruptionQPS(t *testing.T) {
	for _, tt := range []struct {
		name string
		fd   *float64
		hold bool
		want float64
	}{
		{"nil: upstream normal rate", nil, false, 0.1},
		{"separate rate", ptr(0.5), false, 0.5},
		{"zero pauses the dead zone", ptr(0.0), false, 0},
		{"HoldFullyDisruptedZones pauses the dead zone", nil, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			p.FullDisruptionQPS, p.HoldFullyDisruptedZones = tt.fd, tt.hold
			runSteps(t, p, []step{
				{zonesT{"a": zoneOf(0, 3), "b": zoneOf(3, 0)}, Decision{Zones: []ZoneDecision{
					zd("a", 3, 3, I, F, tt.want, true), zd("b", 3, 0, I, N, 0.1, true)}}},
				{zonesT{"a": zoneOf(0, 3), "b": zoneOf(0, 3)}, Decision{
					Zones:                 []ZoneDecision{zd("a", 3, 3, F, F, 0, tt.want != 0), zd("b", 3, 3, N, F, 0, true)},
					EnteredFullDisruption: true, InFullDisruption: true}},
				{zonesT{"a": zoneOf(0, 3), "b": zoneOf(1, 2)}, Decision{
					Zones:                []ZoneDecision{zd("a", 3, 3, F, F, tt.want, tt.want != 0), zd("b", 3, 2, F, N, 0.1, true)},
					ExitedFullDisruption: true}},
			})
		})
	}
}

// TestLastHealthyZoneRemovedEntersFullDisruption: unlike upstream, which
// skips removed zones when deciding whether all zones were fully disrupted
// and so stays out of the mode (and keeps tainting the dead zone at the
// normal rate) when the only healthy zone disappears.
func TestLastHealthyZoneRemovedEntersFullDisruption(t *testing.T) {
	runSteps(t, DefaultPolicy(), []step{
		{zonesT{"a": conds("UU"), "b": conds("T")}, Decision{Zones: []ZoneDecision{
			zd("a", 2, 2, I, F, 0.1, true), zd("b", 1, 0, I, N, 0.1, true)}}},
		{zonesT{"a": conds("UU")}, Decision{
			Zones:                 []ZoneDecision{zd("a", 2, 2, F, F, 0, true)},
			Removed:               []string{"b"},
			EnteredFullDisruption: true, InFullDisruption: true}},
	})
}

// TestNewHealthyZoneExitsFullDisruption: unlike upstream, where a new zone
// counts as "not all were fully disrupted", so a new zone with a Ready node
// during full disruption mode takes the normal path: no exit (no fresh grace
// periods) and the old zones' limiters stay at 0 because their state did not
// change.
func TestNewHealthyZoneExitsFullDisruption(t *testing.T) {
	runSteps(t, DefaultPolicy(), []step{
		{zonesT{"a": conds("UU")}, Decision{
			Zones:                 []ZoneDecision{zd("a", 2, 2, I, F, 0, true)},
			EnteredFullDisruption: true, InFullDisruption: true}},
		{zonesT{"a": conds("UU"), "b": conds("T")}, Decision{
			Zones:                []ZoneDecision{zd("a", 2, 2, F, F, 0.1, true), zd("b", 1, 0, I, N, 0.1, true)},
			ExitedFullDisruption: true}},
	})
}

// TestPartialZoneGrowingPastThresholdGetsSecondaryRate: unlike upstream,
// which sets a zone's limiter only when its state changes.
func TestPartialZoneGrowingPastThresholdGetsSecondaryRate(t *testing.T) {
	runSteps(t, DefaultPolicy(), []step{
		{zonesT{"a": zoneOf(10, 40), "b": conds("T")}, Decision{Zones: []ZoneDecision{
			zd("a", 50, 40, I, P, 0, true), zd("b", 1, 0, I, N, 0.1, true)}}},
		{zonesT{"a": zoneOf(11, 40), "b": conds("T")}, Decision{Zones: []ZoneDecision{
			zd("a", 51, 40, P, P, 0.01, true), zd("b", 1, 0, N, N, 0.1, false)}}},
	})
}

// TestUpdateDoesNotRetainInput: the Tracker keeps nothing of the map or the
// slices it is given.
func TestUpdateDoesNotRetainInput(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	in := zonesT{"a": conds("TT"), "b": conds("U")}
	first := tr.Update(in)
	in["a"][0], in["a"][1] = condUnknown, condUnknown
	delete(in, "b")
	if first.Zones[0].NotReady != 0 || len(first.Zones) != 2 {
		t.Fatalf("changing the input changed a returned Decision: %s", fmtDecision(first))
	}
	d := tr.Update(zonesT{"a": conds("TT"), "b": conds("U")})
	want := Decision{Zones: []ZoneDecision{zd("a", 2, 0, N, N, 0.1, false), zd("b", 1, 1, F, F, 0.1, false)}}
	if !decisionEqual(d, want) {
		t.Fatalf("Update(same as first) = %s, want %s", fmtDecision(d), fmtDecision(want))
	}
}

// TestUpdateSteadyStateAllocs pins the allocation budget of a steady-state
// Update: the returned Zones slice only.
func TestUpdateSteadyStateAllocs(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	in := zonesT{"a": zoneOf(5000, 0), "b": zoneOf(4000, 1000), "c": zoneOf(0, 5000)}
	tr.Update(in)
	allocs := testing.AllocsPerRun(50, func() { tr.Update(in) })
	if allocs != 1 {
		t.Errorf("steady-state Update of 3 zones x 5000 nodes: %v allocs/op, want 1 (the Zones slice)", allocs)
	}
}

// TestTrackerConcurrentUse runs Updates from several goroutines; with -race
// it checks the locking, and the decisions stay well formed.
func TestTrackerConcurrentUse(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	inputs := []zonesT{
		{"a": conds("TTU"), "b": conds("UUU")},
		{"a": conds("UUU"), "b": conds("UUU")},
		{"b": conds("T"), "c": conds("nnT")},
		nil,
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				d := tr.Update(inputs[(g+i)%len(inputs)])
				if err := checkInvariants(d); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// checkInvariants holds for every Decision whatever the history.
func checkInvariants(d Decision) error {
	if !slices.IsSortedFunc(d.Zones, func(a, b ZoneDecision) int { return strings.Compare(a.Key, b.Key) }) {
		return fmt.Errorf("Zones not sorted: %s", fmtDecision(d))
	}
	if !slices.IsSorted(d.Removed) {
		return fmt.Errorf("Removed not sorted: %s", fmtDecision(d))
	}
	if d.EnteredFullDisruption && d.ExitedFullDisruption {
		return fmt.Errorf("entered and exited at once: %s", fmtDecision(d))
	}
	if d.EnteredFullDisruption && !d.InFullDisruption || d.ExitedFullDisruption && d.InFullDisruption {
		return fmt.Errorf("flags disagree: %s", fmtDecision(d))
	}
	if d.InFullDisruption && d.UndecidedQPS != 0 {
		return fmt.Errorf("UndecidedQPS %v in full disruption: %s", d.UndecidedQPS, fmtDecision(d))
	}
	allFull := len(d.Zones) > 0
	for _, z := range d.Zones {
		if z.State == StateInitial || z.State == 0 || z.Previous == 0 || z.Size == 0 || z.NotReady > z.Size {
			return fmt.Errorf("bad zone %q: %s", z.Key, fmtDecision(d))
		}
		if z.State != StateFullDisruption {
			allFull = false
		}
		if d.InFullDisruption && z.QPS != 0 {
			return fmt.Errorf("zone %q has QPS %v in full disruption: %s", z.Key, z.QPS, fmtDecision(d))
		}
		if z.Previous == StateInitial && !z.RateChanged {
			return fmt.Errorf("new zone %q without RateChanged: %s", z.Key, fmtDecision(d))
		}
		if slices.Contains(d.Removed, z.Key) {
			return fmt.Errorf("zone %q both decided and removed: %s", z.Key, fmtDecision(d))
		}
	}
	if len(d.Zones) > 0 && allFull != d.InFullDisruption {
		return fmt.Errorf("InFullDisruption = %v but all zones Full = %v: %s", d.InFullDisruption, allFull, fmtDecision(d))
	}
	return nil
}
