package zonestate

import (
	"math/rand/v2"
	"testing"
)

// countsOf turns a condition map into the counts UpdateCounts takes.
func countsOf(zones zonesT) map[string]ZoneHealth {
	out := make(map[string]ZoneHealth, len(zones))
	for k, c := range zones {
		out[k] = ZoneHealth{Size: len(c), Unhealthy: countNotReady(c)}
	}
	return out
}

// TestUpdateCountsMatchesUpdate feeds the same random sequences to one
// Tracker through Update and to another through UpdateCounts: the
// Decisions must be identical, so both share one state machine.
func TestUpdateCountsMatchesUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 11))
	for seq := range 300 {
		byConds, _ := NewTracker(DefaultPolicy())
		byCounts, _ := NewTracker(DefaultPolicy())
		for i := range 20 {
			zones := randomZones(rng)
			got, want := byCounts.UpdateCounts(countsOf(zones)), byConds.Update(zones)
			if !decisionEqual(got, want) {
				t.Fatalf("sequence %d step %d: UpdateCounts(%s) =\n\t%s\nwant (Update)\n\t%s",
					seq, i, fmtZones(zones), fmtDecision(got), fmtDecision(want))
			}
		}
	}
}

// TestUpdateCountsMixesWithUpdate: a caller may switch signals between
// passes; the stored zones and the mode carry over.
func TestUpdateCountsMixesWithUpdate(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	tr.Update(zonesT{"a": conds("TT"), "b": conds("TT")})
	d := tr.UpdateCounts(map[string]ZoneHealth{"a": {Size: 2, Unhealthy: 2}, "b": {Size: 2, Unhealthy: 2}})
	want := Decision{Zones: []ZoneDecision{zd("a", 2, 2, N, F, 0, true), zd("b", 2, 2, N, F, 0, true)},
		EnteredFullDisruption: true, InFullDisruption: true}
	if !decisionEqual(d, want) {
		t.Fatalf("UpdateCounts(all unhealthy) = %s, want %s", fmtDecision(d), fmtDecision(want))
	}
	d = tr.Update(zonesT{"a": conds("TT")})
	want = Decision{Zones: []ZoneDecision{zd("a", 2, 0, F, N, 0.1, true)}, Removed: []string{"b"}, ExitedFullDisruption: true}
	if !decisionEqual(d, want) {
		t.Fatalf("Update(a healthy) = %s, want %s", fmtDecision(d), fmtDecision(want))
	}
}

// TestUpdateCountsClamps: hostile counts are clamped, never a panic or a
// negative count in a decision.
func TestUpdateCountsClamps(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	tr.UpdateCounts(map[string]ZoneHealth{"gone": {Size: 1}})
	d := tr.UpdateCounts(map[string]ZoneHealth{
		"neg-size":  {Size: -5, Unhealthy: 3}, // absent
		"zero":      {Size: 0, Unhealthy: 0},  // absent
		"over":      {Size: 4, Unhealthy: 9},  // 4 of 4
		"neg-unh":   {Size: 4, Unhealthy: -2}, // 0 of 4
		"partial":   {Size: 10, Unhealthy: 6}, // 0.6 >= 0.55
		"gone-next": {Size: 1, Unhealthy: 0},
	})
	want := Decision{
		Zones: []ZoneDecision{
			zd("gone-next", 1, 0, I, N, 0.1, true),
			zd("neg-unh", 4, 0, I, N, 0.1, true),
			zd("over", 4, 4, I, F, 0.1, true),
			zd("partial", 10, 6, I, P, 0, true),
		},
		Removed: []string{"gone"},
	}
	if !decisionEqual(d, want) {
		t.Fatalf("UpdateCounts(hostile) = %s, want %s", fmtDecision(d), fmtDecision(want))
	}
}

func TestClassifyMatchesCompute(t *testing.T) {
	for _, th := range []float64{0, 0.3, 0.55, 1} {
		for ready := range 12 {
			for notReady := range 12 {
				zone := zoneOf(ready, notReady)
				_, want := Compute(zone, th)
				if got := Classify(ZoneHealth{Size: ready + notReady, Unhealthy: notReady}, th); got != want {
					t.Errorf("Classify({%d, %d}, %v) = %v, want %v (Compute)", ready+notReady, notReady, th, got, want)
				}
			}
		}
	}
	if got := Classify(ZoneHealth{Size: -1, Unhealthy: 5}, 0.55); got != StateNormal {
		t.Errorf("Classify({-1, 5}) = %v, want Normal", got)
	}
}

func TestUpdateCountsSteadyStateAllocs(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	in := map[string]ZoneHealth{"a": {Size: 5000}, "b": {Size: 5000, Unhealthy: 1000}, "c": {Size: 5000, Unhealthy: 5000}}
	tr.UpdateCounts(in)
	if allocs := testing.AllocsPerRun(50, func() { tr.UpdateCounts(in) }); allocs != 1 {
		t.Errorf("steady-state UpdateCounts of 3 zones: %v allocs/op, want 1 (the Zones slice)", allocs)
	}
}
