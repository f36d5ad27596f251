package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

func TestScenarioWith(t *testing.T) {
	sc := zoneB(15 * time.Minute)
	tests := []struct {
		field, value string
		check        func(*sim.Scenario) bool
	}{
		{"nodeEvictionRate", "0.05", func(s *sim.Scenario) bool { return s.Policy.NodeEvictionRate == 0.05 }},
		{"defaultUnreachableTolerationSeconds", "60", func(s *sim.Scenario) bool { return s.Policy.DefaultUnreachableTolerationSeconds == 60 }},
		{"policy.nodeMonitorGracePeriod", "40s", func(s *sim.Scenario) bool { return s.Policy.NodeMonitorGracePeriod.D() == 40*time.Second }},
		{"leaseRenewInterval", "5s", func(s *sim.Scenario) bool { return s.Kubelet.LeaseRenewInterval.D() == 5*time.Second }},
		{"zones[1].nodes", "80", func(s *sim.Scenario) bool { return s.Zones[1].Nodes == 80 }},
		{"fullDisruptionQPS", "0", func(s *sim.Scenario) bool {
			return s.Policy.FullDisruptionQPS != nil && *s.Policy.FullDisruptionQPS == 0
		}},
		{"duration", "1h", func(s *sim.Scenario) bool { return s.Duration.D() == time.Hour }},
	}
	for _, tt := range tests {
		got, err := sc.With(tt.field, tt.value)
		if err != nil || !tt.check(got) {
			t.Errorf("With(%s, %s) = %+v, %v", tt.field, tt.value, got, err)
		}
	}
	if sc.Policy.NodeEvictionRate != 0.1 {
		t.Errorf("With changed the original scenario")
	}
	for _, bad := range [][2]string{{"nodeEvictionRate", "-1"}, {"nope", "1"}, {"nodeMonitorGracePeriod", "soon"}, {"zones[9].nodes", "1"}} {
		if _, err := sc.With(bad[0], bad[1]); err == nil {
			t.Errorf("With(%s, %s) = nil error, want one", bad[0], bad[1])
		}
	}
}

// TestSweep: one run per value, in order, each the same as a run on its
// own; the table shows each value's zones.
func TestSweep(t *testing.T) {
	sc := zoneB(15 * time.Minute)
	runs, err := sim.Sweep(context.Background(), sc, "defaultUnreachableTolerationSeconds", []string{"60", "300"}, sim.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Value != "60" || runs[1].Value != "300" {
		t.Fatalf("Sweep = %+v, want runs for 60 and 300 in order", runs)
	}
	// The last taint is at 5m45s either way; the last eviction 60s or 300s
	// after it.
	for _, tt := range []struct {
		run  int
		last time.Duration
	}{{0, 6*time.Minute + 45*time.Second}, {1, 10*time.Minute + 45*time.Second}} {
		if got := secs(runs[tt.run].Result.Summary.Zones[1].LastEviction); got != tt.last {
			t.Errorf("sweep value %s: last eviction in b at %v, want %v", runs[tt.run].Value, got, tt.last)
		}
	}
	alone, err := sim.Run(context.Background(), zoneB(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(alone.Entries) != len(runs[1].Result.Entries) {
		t.Errorf("the sweep's 300 run has %d entries, a run on its own %d", len(runs[1].Result.Entries), len(alone.Entries))
	}
	var buf strings.Builder
	if err := sim.WriteSweep(&buf, "defaultUnreachableTolerationSeconds", runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SWEEP  defaultUnreachableTolerationSeconds = 60, 300",
		"60                                   b     +5m45.0s    +6m45.0s       240           no",
		"300                                  b     +5m45.0s    +10m45.0s      240           no",
		"300                                  a     never       never          0             no",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("sweep table lacks %q:\n%s", want, buf.String())
		}
	}
	if _, err := sim.Sweep(context.Background(), sc, "nodeEvictionRate", []string{"0.1", "-3"}, sim.Options{}, 1); err == nil {
		t.Errorf("Sweep with an invalid value = nil error")
	}
}

func TestParseSweep(t *testing.T) {
	f, vs, err := sim.ParseSweep("nodeEvictionRate=0.05, 0.1,0.2")
	if err != nil || f != "nodeEvictionRate" || strings.Join(vs, "|") != "0.05|0.1|0.2" {
		t.Errorf("ParseSweep = %q, %q, %v", f, vs, err)
	}
	for _, bad := range []string{"", "x", "=1", "x="} {
		if _, _, err := sim.ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) = nil error", bad)
		}
	}
}
