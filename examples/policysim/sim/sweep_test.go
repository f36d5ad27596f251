package sim_test

import (
	"context"
	"strconv"
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
		"60                                   b     +5m45.0s    +6m45.0s       240           24             264            5h14m0.0s       13m5.0s            16h54m0.0s         13m5.0s               no",
		"300                                  b     +5m45.0s    +10m45.0s      240           24             264            5h14m0.0s       13m5.0s            32h54m0.0s         13m5.0s               no",
		"300                                  a     never       never          0             0              0              0.0s            0.0s               0.0s               0.0s                  no",
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

// TestSweepGrid: a second field multiplies the runs, the first field's
// values varying slowest; each run has its values; the table has a column
// per field and the down columns.
func TestSweepGrid(t *testing.T) {
	sc := zoneB(15 * time.Minute)
	runs, err := sim.SweepGrid(context.Background(), sc, []sim.SweepField{
		{Field: "defaultUnreachableTolerationSeconds", Values: []string{"60", "300"}},
		{Field: "kubelet.podReadyDelay", Values: []string{"5s", "10s", "20s"}},
	}, sim.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, strings.Join(r.Values, "/")+"="+r.Value)
	}
	if want := "60/5s=60,5s 60/10s=60,10s 60/20s=60,20s 300/5s=300,5s 300/10s=300,10s 300/20s=300,20s"; strings.Join(got, " ") != want {
		t.Errorf("SweepGrid runs = %s, want %s", strings.Join(got, " "), want)
	}
	for _, r := range runs {
		want := 6*time.Minute + 45*time.Second
		if r.Values[0] == "300" {
			want = 10*time.Minute + 45*time.Second
		}
		if got := secs(r.Result.Summary.Zones[1].LastEviction); got != want {
			t.Errorf("run %s: last eviction in b at %v, want %v", r.Value, got, want)
		}
	}
	var buf strings.Builder
	if err := sim.WriteSweepGrid(&buf, []string{"defaultUnreachableTolerationSeconds", "kubelet.podReadyDelay"}, runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SWEEP  defaultUnreachableTolerationSeconds = 60, 300  ×  kubelet.podReadyDelay = 5s, 10s, 20s  (6 runs)",
		"defaultUnreachableTolerationSeconds  kubelet.podReadyDelay  zone  last taint  last eviction  pods evicted  nodes Unknown  pods NotReady  node time down",
		"300                                  20s                    b     +5m45.0s    +10m45.0s      240           24             264            5h14m0.0s       13m5.0s            32h54m0.0s         13m5.0s               no              -",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("sweep table lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestSweepGridRejects: a field given twice (under any of its names), a
// field without values, a grid over MaxSweepRuns: errors naming the
// problem, before anything runs.
func TestSweepGridRejects(t *testing.T) {
	sc := zoneB(15 * time.Minute)
	many := make([]string, 40)
	for i := range many {
		many[i] = strconv.Itoa(60 + i)
	}
	for _, tc := range []struct {
		fields []sim.SweepField
		want   string
	}{
		{nil, "needs a field"},
		{[]sim.SweepField{{"nodeEvictionRate", []string{"0.1"}}, {"policy.nodeEvictionRate", []string{"0.2"}}}, "policy.nodeEvictionRate given twice (as nodeEvictionRate and policy.nodeEvictionRate)"},
		{[]sim.SweepField{{"leaseRenewInterval", []string{"5s"}}, {"leaseRenewInterval", []string{"6s"}}}, "kubelet.leaseRenewInterval given twice"},
		{[]sim.SweepField{{"nodeEvictionRate", nil}}, "-sweep nodeEvictionRate needs at least one value"},
		{[]sim.SweepField{{"nodeEvictionRate", many}, {"defaultUnreachableTolerationSeconds", many[:30]}}, "grid of 40 × 30 runs, more than 1000 (MaxSweepRuns)"},
		{[]sim.SweepField{{"nodeEvictionRate", many}, {"defaultUnreachableTolerationSeconds", many}, {"defaultNotReadyTolerationSeconds", many}}, "grid of 40 × 40 × 40 runs"},
	} {
		if _, err := sim.SweepGrid(context.Background(), sc, tc.fields, sim.Options{}, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SweepGrid(%v) = %v, want an error containing %q", tc.fields, err, tc.want)
		}
	}
}
