package zonestate

import (
	"math/rand/v2"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// model is a naive reference for Tracker: the rules of Update's doc and
// the package documentation restated with plain maps, linear passes and sort.Strings.
type model struct {
	p      Policy
	states map[string]State
	rates  map[string]float64
	mode   bool
}

func newModel(p Policy) *model {
	return &model{p: p, states: map[string]State{}, rates: map[string]float64{}}
}

func (m *model) rateFor(s State, size int, mode bool) float64 {
	switch {
	case mode:
		return 0
	case s == StateNormal:
		return m.p.EvictionQPS
	case s == StatePartialDisruption && size > m.p.LargeClusterThreshold:
		return m.p.SecondaryEvictionQPS
	case s == StatePartialDisruption:
		return 0
	case s == StateFullDisruption && m.p.HoldFullyDisruptedZones:
		return 0
	case s == StateFullDisruption && m.p.FullDisruptionQPS != nil:
		return *m.p.FullDisruptionQPS
	default: // Full with some other zone not Full
		return m.p.EvictionQPS
	}
}

// undecidedRate is the rate of a zone without a decision: EvictionQPS,
// and 0 in full disruption mode.
func (m *model) undecidedRate() float64 {
	if m.mode {
		return 0
	}
	return m.p.EvictionQPS
}

func (m *model) update(zones map[string][]*v1.NodeCondition) Decision {
	var d Decision
	var present []string
	for k, c := range zones {
		if len(c) != 0 {
			present = append(present, k)
		}
	}
	sort.Strings(present)
	for k := range m.states {
		if i := sort.SearchStrings(present, k); i == len(present) || present[i] != k {
			d.Removed = append(d.Removed, k)
		}
	}
	sort.Strings(d.Removed)
	for _, k := range d.Removed {
		delete(m.states, k)
		delete(m.rates, k)
	}
	if len(present) == 0 {
		d.InFullDisruption = m.mode
		d.UndecidedQPS = m.undecidedRate()
		return d
	}
	everyFull, someNew := true, false
	for _, k := range present {
		n, s := referenceCompute(zones[k], m.p.UnhealthyZoneThreshold)
		prev, known := m.states[k]
		if !known {
			prev, someNew = StateInitial, true
		}
		everyFull = everyFull && s == StateFullDisruption
		d.Zones = append(d.Zones, ZoneDecision{Key: k, Size: len(zones[k]), NotReady: n, Previous: prev, State: s})
	}
	wasEveryFull := m.mode && !someNew
	d.EnteredFullDisruption = everyFull && !wasEveryFull
	d.ExitedFullDisruption = m.mode && !everyFull
	d.InFullDisruption = everyFull
	m.mode = everyFull
	d.UndecidedQPS = m.undecidedRate()
	for i := range d.Zones {
		z := &d.Zones[i]
		z.QPS = m.rateFor(z.State, z.Size, everyFull)
		old, known := m.rates[z.Key]
		z.RateChanged = !known || old != z.QPS
		m.rates[z.Key] = z.QPS
		m.states[z.Key] = z.State
	}
	return d
}

var modelKeys = []string{"", "r:\x00:a", "r:\x00:b", "r:\x00:c"}

// randomZones draws an Update input: each zone present with probability 3/4,
// sizes around LargeClusterThreshold now and then, and a per-call health
// bias so that all-Full passes (and therefore mode changes) are common.
func randomZones(rng *rand.Rand) map[string][]*v1.NodeCondition {
	zones := map[string][]*v1.NodeCondition{}
	pReady := []float64{0, 0, 0.2, 0.5, 0.9, 1}[rng.IntN(6)]
	notReadyPool := []*v1.NodeCondition{nil, condFalse, condUnknown}
	for _, k := range modelKeys {
		if rng.IntN(4) == 0 {
			continue
		}
		size := rng.IntN(8)
		if rng.IntN(5) == 0 {
			size = 45 + rng.IntN(12)
		}
		c := make([]*v1.NodeCondition, size)
		for i := range c {
			if rng.Float64() < pReady {
				c[i] = condTrue
			} else {
				c[i] = notReadyPool[rng.IntN(len(notReadyPool))]
			}
		}
		zones[k] = c
	}
	if rng.IntN(20) == 0 {
		return nil
	}
	return zones
}

// TestTrackerModel runs random Update sequences on a Tracker and the
// reference model and requires identical Decisions.
func TestTrackerModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	policies := []Policy{DefaultPolicy(), {}, {EvictionQPS: 1, SecondaryEvictionQPS: 0.5, LargeClusterThreshold: 3,
		UnhealthyZoneThreshold: 0.3, FullDisruptionQPS: ptr(0.25)}}
	var entered, exited, removed, secondary, fullAtRate int
	for seq := range 1500 {
		p := policies[seq%len(policies)]
		tr, err := NewTracker(p)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(p)
		for i := range 25 {
			zones := randomZones(rng)
			got, want := tr.Update(zones), m.update(zones)
			if !decisionEqual(got, want) || got.UndecidedQPS != want.UndecidedQPS {
				t.Fatalf("sequence %d step %d: Update(%s) =\n\t%s\nwant (model)\n\t%s",
					seq, i, fmtZones(zones), fmtDecision(got), fmtDecision(want))
			}
			if err := checkInvariants(got); err != nil {
				t.Fatalf("sequence %d step %d: %v", seq, i, err)
			}
			entered += b2i(got.EnteredFullDisruption)
			exited += b2i(got.ExitedFullDisruption)
			removed += len(got.Removed)
			for _, z := range got.Zones {
				secondary += b2i(z.State == StatePartialDisruption && z.QPS > 0)
				fullAtRate += b2i(z.State == StateFullDisruption && z.QPS > 0)
			}
		}
	}
	// The generator must reach every branch, or the comparison proves little.
	for name, n := range map[string]int{"entered": entered, "exited": exited, "removed": removed,
		"partial at secondary rate": secondary, "full at a rate": fullAtRate} {
		if n < 100 {
			t.Errorf("random sequences produced %d %s decisions, want at least 100", n, name)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
