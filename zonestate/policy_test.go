package zonestate

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDefaultPolicy(t *testing.T) {
	got := DefaultPolicy()
	if got.EvictionQPS != 0.1 || got.SecondaryEvictionQPS != 0.01 || got.LargeClusterThreshold != 50 ||
		got.UnhealthyZoneThreshold != 0.55 || got.FullDisruptionQPS != nil {
		t.Errorf("DefaultPolicy() = %+v, want {0.1 0.01 50 0.55 <nil>}", got)
	}
	if _, err := NewTracker(got); err != nil {
		t.Errorf("NewTracker(DefaultPolicy()) = %v, want no error", err)
	}
}

func TestNewTrackerValidates(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	with := func(f func(*Policy)) Policy { p := DefaultPolicy(); f(&p); return p }
	tests := []struct {
		name    string
		p       Policy
		wantErr string // substring; "" means valid
	}{
		{"default", DefaultPolicy(), ""},
		{"zero policy is valid", Policy{}, ""},
		{"threshold 0", with(func(p *Policy) { p.UnhealthyZoneThreshold = 0 }), ""},
		{"threshold 1", with(func(p *Policy) { p.UnhealthyZoneThreshold = 1 }), ""},
		{"FullDisruptionQPS 0 pauses", with(func(p *Policy) { p.FullDisruptionQPS = ptr(0.0) }), ""},
		{"FullDisruptionQPS 1", with(func(p *Policy) { p.FullDisruptionQPS = ptr(1.0) }), ""},
		{"HoldFullyDisruptedZones", with(func(p *Policy) { p.HoldFullyDisruptedZones = true }), ""},
		{"HoldFullyDisruptedZones with FullDisruptionQPS 0", with(func(p *Policy) { p.HoldFullyDisruptedZones, p.FullDisruptionQPS = true, ptr(0.0) }), ""},
		{"HoldFullyDisruptedZones with FullDisruptionQPS 0.5", with(func(p *Policy) { p.HoldFullyDisruptedZones, p.FullDisruptionQPS = true, ptr(0.5) }),
			"HoldFullyDisruptedZones = true with FullDisruptionQPS = 0.5"},
		{"EvictionQPS NaN", with(func(p *Policy) { p.EvictionQPS = nan }), "EvictionQPS = NaN"},
		{"EvictionQPS +Inf", with(func(p *Policy) { p.EvictionQPS = inf }), "EvictionQPS = +Inf"},
		{"EvictionQPS -Inf", with(func(p *Policy) { p.EvictionQPS = -inf }), "EvictionQPS = -Inf"},
		{"EvictionQPS negative", with(func(p *Policy) { p.EvictionQPS = -0.1 }), "EvictionQPS = -0.1"},
		{"SecondaryEvictionQPS NaN", with(func(p *Policy) { p.SecondaryEvictionQPS = nan }), "SecondaryEvictionQPS = NaN"},
		{"SecondaryEvictionQPS +Inf", with(func(p *Policy) { p.SecondaryEvictionQPS = inf }), "SecondaryEvictionQPS = +Inf"},
		{"SecondaryEvictionQPS negative", with(func(p *Policy) { p.SecondaryEvictionQPS = -1 }), "SecondaryEvictionQPS = -1"},
		{"FullDisruptionQPS NaN", with(func(p *Policy) { p.FullDisruptionQPS = ptr(nan) }), "FullDisruptionQPS = NaN"},
		{"FullDisruptionQPS +Inf", with(func(p *Policy) { p.FullDisruptionQPS = ptr(inf) }), "FullDisruptionQPS = +Inf"},
		{"FullDisruptionQPS negative", with(func(p *Policy) { p.FullDisruptionQPS = ptr(-2.0) }), "FullDisruptionQPS = -2"},
		{"LargeClusterThreshold negative", with(func(p *Policy) { p.LargeClusterThreshold = -1 }), "LargeClusterThreshold = -1"},
		{"threshold below 0", with(func(p *Policy) { p.UnhealthyZoneThreshold = -0.01 }), "UnhealthyZoneThreshold = -0.01"},
		{"threshold above 1", with(func(p *Policy) { p.UnhealthyZoneThreshold = 1.01 }), "UnhealthyZoneThreshold = 1.01"},
		{"threshold NaN", with(func(p *Policy) { p.UnhealthyZoneThreshold = nan }), "UnhealthyZoneThreshold = NaN"},
		{"threshold +Inf", with(func(p *Policy) { p.UnhealthyZoneThreshold = inf }), "UnhealthyZoneThreshold = +Inf"},
	}
	for _, tt := range tests {
		tr, err := NewTracker(tt.p)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: NewTracker(%+v) = %v, want no error", tt.name, tt.p, err)
		case tt.wantErr == "" && tr == nil:
			t.Errorf("%s: NewTracker(%+v) = nil tracker, want one", tt.name, tt.p)
		case tt.wantErr != "" && err == nil:
			t.Errorf("%s: NewTracker(%+v) = no error, want %q", tt.name, tt.p, tt.wantErr)
		case tt.wantErr != "" && (!errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), tt.wantErr) ||
			!strings.HasPrefix(err.Error(), "zonestate: ") || tr != nil):
			t.Errorf("%s: NewTracker(%+v) = %v, %v, want nil and an ErrInvalidPolicy containing %q", tt.name, tt.p, tr, err, tt.wantErr)
		}
	}
}

func TestNewTrackerReportsEveryBadField(t *testing.T) {
	_, err := NewTracker(Policy{EvictionQPS: -1, SecondaryEvictionQPS: math.NaN(), LargeClusterThreshold: -1,
		UnhealthyZoneThreshold: 2, FullDisruptionQPS: ptr(math.Inf(-1))})
	for _, field := range []string{"EvictionQPS", "SecondaryEvictionQPS", "LargeClusterThreshold", "UnhealthyZoneThreshold", "FullDisruptionQPS"} {
		if err == nil || !strings.Contains(err.Error(), field+" = ") {
			t.Errorf("NewTracker(all bad) = %v, want an error naming %s", err, field)
		}
	}
}

// TestNewTrackerCopiesPolicy: changing the caller's Policy, or the value its
// FullDisruptionQPS points to, after NewTracker has no effect.
func TestNewTrackerCopiesPolicy(t *testing.T) {
	fd := 0.5
	p := DefaultPolicy()
	p.FullDisruptionQPS = &fd
	tr, err := NewTracker(p)
	if err != nil {
		t.Fatal(err)
	}
	fd = 7
	p.EvictionQPS = 9
	d := tr.Update(zonesT{"a": conds("UU"), "b": conds("T")})
	if got := d.Zones[0].QPS; got != 0.5 {
		t.Errorf("Update after changing *FullDisruptionQPS: zone a QPS = %v, want 0.5 (the value at NewTracker)", got)
	}
	if got := d.Zones[1].QPS; got != 0.1 {
		t.Errorf("Update after changing EvictionQPS: zone b QPS = %v, want 0.1", got)
	}
}
