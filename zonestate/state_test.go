package zonestate

import (
	"math"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestStateString(t *testing.T) {
	tests := []struct {
		s    State
		want string
	}{
		{0, "State(0)"},
		{StateInitial, "Initial"},
		{StateNormal, "Normal"},
		{StatePartialDisruption, "PartialDisruption"},
		{StateFullDisruption, "FullDisruption"},
		{StateFullDisruption + 1, "State(5)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("State(%d).String() = %q, want %q", uint8(tt.s), got, tt.want)
		}
	}
}

func TestComputeSteps(t *testing.T) {
	weird := &v1.NodeCondition{Type: v1.NodeReady, Status: "Maybe"}
	empty := &v1.NodeCondition{Type: v1.NodeReady}
	tests := []struct {
		name         string
		ready        []*v1.NodeCondition
		threshold    float64
		wantNotReady int
		want         State
	}{
		{"nil list is Normal", nil, 0.55, 0, StateNormal},
		{"empty list is Normal", conds(""), 0.55, 0, StateNormal},
		{"one Ready", conds("T"), 0.55, 0, StateNormal},
		{"one nil is Full", conds("n"), 0.55, 1, StateFullDisruption},
		{"one False is Full", conds("F"), 0.55, 1, StateFullDisruption},
		{"one Unknown is Full", conds("U"), 0.55, 1, StateFullDisruption},
		{"2 of 2 not ready is Full", conds("FU"), 0.55, 2, StateFullDisruption},
		{"unrecognised and empty statuses are not ready", []*v1.NodeCondition{weird, empty}, 0.55, 2, StateFullDisruption},
		{"nil, False, Unknown all count", conds("nFUT"), 0.55, 3, StatePartialDisruption},
		{"2 not ready is never Partial (2 of 3)", conds("FUT"), 0.55, 2, StateNormal},
		{"2 not ready is never Partial, threshold 0", conds("FUT"), 0, 2, StateNormal},
		{"3 of 5 (0.6 >= 0.55) is Partial", conds("UUUTT"), 0.55, 3, StatePartialDisruption},
		{"3 of 6 (0.5 < 0.55) is Normal", conds("UUUTTT"), 0.55, 3, StateNormal},
		{"11 of 20 equals 0.55: Partial", zoneOf(9, 11), 0.55, 11, StatePartialDisruption},
		{"10 of 20 below 0.55: Normal", zoneOf(10, 10), 0.55, 10, StateNormal},
		{"54 of 100 below 0.55: Normal", zoneOf(46, 54), 0.55, 54, StateNormal},
		{"55 of 100 equals 0.55: Partial", zoneOf(45, 55), 0.55, 55, StatePartialDisruption},
		{"threshold 0: 3 of 1000 is Partial", zoneOf(997, 3), 0, 3, StatePartialDisruption},
		{"threshold 1: 999 of 1000 is Normal", zoneOf(1, 999), 1, 999, StateNormal},
		{"threshold 1: 1000 of 1000 is Full", zoneOf(0, 1000), 1, 1000, StateFullDisruption},
		{"NaN threshold is never Partial", zoneOf(1, 99), math.NaN(), 99, StateNormal},
		{"negative threshold: Partial from 3 not ready", zoneOf(100, 3), -1, 3, StatePartialDisruption},
		// float32 parity: 7/10 and 0.7000000001 round to the same float32.
		{"float32 parity: 7 of 10 at 0.7000000001 is Partial", zoneOf(3, 7), 0.7000000001, 7, StatePartialDisruption},
		{"float32 parity: 7 of 10 at 0.7000001 is Normal", zoneOf(3, 7), 0.7000001, 7, StateNormal},
	}
	for _, tt := range tests {
		gotN, got := Compute(tt.ready, tt.threshold)
		if gotN != tt.wantNotReady || got != tt.want {
			t.Errorf("%s: Compute(%d conditions, %v) = %d, %v, want %d, %v",
				tt.name, len(tt.ready), tt.threshold, gotN, got, tt.wantNotReady, tt.want)
		}
	}
}

// TestComputeWholePercentMatchesExact pins the claim in Compute's doc: for
// thresholds that are whole percentages and zones of up to 10,000 nodes the
// float32 rule decides exactly as integer arithmetic would. Because the
// float32 quotient is monotonic in the numerator it is enough to check, per
// zone size and threshold, the smallest not-ready count that reaches the
// threshold exactly and the one below it.
func TestComputeWholePercentMatchesExact(t *testing.T) {
	for p := 0; p <= 100; p++ {
		th := float64(p) / 100
		for d := 1; d <= 10000; d++ {
			n0 := (p*d + 99) / 100 // smallest n with 100n >= pd
			for _, n := range []int{n0 - 1, n0} {
				if n < 0 || n > d {
					continue
				}
				exact := 100*n >= p*d
				f32 := float32(n)/float32(d) >= float32(th)
				if exact != f32 {
					t.Fatalf("threshold %d%%, %d of %d not ready: float32 rule %v, exact %v", p, n, d, f32, exact)
				}
			}
		}
	}
}

// referenceCompute restates upstream ComputeZoneState with a different counting loop.
func referenceCompute(ready []*v1.NodeCondition, threshold float64) (int, State) {
	var r, nr int
	for i := range ready {
		switch {
		case ready[i] == nil:
			nr++
		case ready[i].Status == v1.ConditionTrue:
			r++
		default:
			nr++
		}
	}
	if r == 0 && nr > 0 {
		return nr, StateFullDisruption
	}
	if nr >= 3 && float32(nr)/float32(r+nr) >= float32(threshold) {
		return nr, StatePartialDisruption
	}
	return nr, StateNormal
}

// TestComputeModel compares Compute with the formula over random zones.
func TestComputeModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []*v1.NodeCondition{nil, condTrue, condFalse, condUnknown}
	thresholds := []float64{0, 0.1, 0.33, 0.5, 0.55, 0.7000000001, 0.99, 1}
	for i := range 20000 {
		size := rng.IntN(40)
		if i%50 == 0 {
			size = rng.IntN(5000)
		}
		pReady := rng.Float64()
		zone := make([]*v1.NodeCondition, size)
		for j := range zone {
			if rng.Float64() < pReady {
				zone[j] = condTrue
			} else {
				zone[j] = pool[rng.IntN(len(pool))]
			}
		}
		th := thresholds[rng.IntN(len(thresholds))]
		if rng.IntN(4) == 0 {
			th = rng.Float64()
		}
		gotN, got := Compute(zone, th)
		wantN, want := referenceCompute(zone, th)
		if gotN != wantN || got != want {
			t.Fatalf("Compute(%d conditions, %v) = %d, %v, want %d, %v", size, th, gotN, got, wantN, want)
		}
	}
}

func TestComputeAllocatesNothing(t *testing.T) {
	zone := zoneOf(2500, 2500)
	allocs := testing.AllocsPerRun(100, func() {
		if _, s := Compute(zone, 0.55); s != StateNormal {
			t.Fatalf("Compute = %v, want Normal", s)
		}
	})
	if allocs != 0 {
		t.Errorf("Compute over 5000 nodes: %v allocs/op, want 0", allocs)
	}
}

func TestComputeDoesNotModifyInput(t *testing.T) {
	zone := conds("TFUn")
	before := make([]v1.NodeCondition, 0, len(zone))
	for _, c := range zone {
		if c != nil {
			before = append(before, *c)
		}
	}
	Compute(zone, 0.55)
	i := 0
	for _, c := range zone {
		if c != nil {
			if c.Status != before[i].Status || c.Type != before[i].Type {
				t.Fatalf("Compute modified condition %d: %+v, was %+v", i, *c, before[i])
			}
			i++
		}
	}
	if zone[3] != nil {
		t.Fatalf("Compute replaced a nil condition")
	}
}
