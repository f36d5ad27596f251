package incident

import (
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

func TestPolicySet(t *testing.T) {
	tests := []struct {
		flag, value string
		wantErr     string
		check       func(Policy) bool
	}{
		{FlagNodeMonitorGracePeriod, "60s", "", func(p Policy) bool { return p.NodeMonitorGracePeriod == time.Minute }},
		{FlagNodeMonitorPeriod, "2s", "", func(p Policy) bool { return p.Config().MonitorPeriod == 2*time.Second }},
		{FlagNodeEvictionRate, "0.5", "", func(p Policy) bool { return p.Config().Zones.EvictionQPS == 0.5 }},
		{FlagUnhealthyZoneThreshold, "0.7", "", func(p Policy) bool { return p.Config().Zones.UnhealthyZoneThreshold == 0.7 }},
		{FlagLargeClusterSizeThreshold, "10", "", func(p Policy) bool { return p.Config().Zones.LargeClusterThreshold == 10 }},
		{FlagFeatureGates, "NodeControllerLeaseCircuitBreaker=false", "", func(p Policy) bool {
			return p.Config().Health.Confirmation == nodehealth.ConfirmNone
		}},
		{FlagNodeMonitorGracePeriod, "0s", "must be positive", nil},
		{FlagNodeMonitorGracePeriod, "soon", "invalid duration", nil},
		{FlagUnhealthyZoneThreshold, "1.5", "must be in [0, 1]", nil},
		{FlagUnhealthyZoneThreshold, "NaN", "must be in [0, 1]", nil},
		{FlagLargeClusterSizeThreshold, "-1", "must be non-negative", nil},
		{FlagFeatureGates, "Other=true", "unknown feature gate Other", nil},
		{FlagFeatureGates, "NodeControllerLeaseCircuitBreaker", "missing bool value", nil},
		{"pod-eviction-timeout", "5m", "unknown policy flag", nil},
	}
	for _, tt := range tests {
		p := DefaultPolicy()
		err := p.Set(tt.flag, tt.value)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Set(%s, %s) = %v, want an error containing %q", tt.flag, tt.value, err, tt.wantErr)
			}
			if p.Given(tt.flag) {
				t.Errorf("Set(%s, %s) failed but marked the flag given", tt.flag, tt.value)
			}
		case err != nil:
			t.Errorf("Set(%s, %s) = %v", tt.flag, tt.value, err)
		case !tt.check(p):
			t.Errorf("Set(%s, %s): policy %+v", tt.flag, tt.value, p)
		case !p.Given(tt.flag):
			t.Errorf("Set(%s, %s): not marked given", tt.flag, tt.value)
		}
		for _, v := range p.Values() {
			if want := map[bool]string{true: "given", false: "assumed"}[v.Flag == tt.flag && err == nil]; v.Source != want {
				t.Errorf("Set(%s, %s): Values() %s is %s, want %s", tt.flag, tt.value, v.Flag, v.Source, want)
			}
		}
	}
	if got := DefaultPolicy().Config(); got.Health.GracePeriod != 50*time.Second || got.MonitorPeriod != 5*time.Second || got.Workers != 1 ||
		got.Health.Confirmation != nodehealth.ConfirmLeaseAndStatus {
		t.Errorf("DefaultPolicy().Config() = %+v, want v1.37.2's defaults with one worker", got)
	}
}

func TestPolicyCopy(t *testing.T) {
	base := DefaultPolicy()
	if err := base.Set(FlagNodeMonitorGracePeriod, "40s"); err != nil {
		t.Fatal(err)
	}
	c := base
	if err := c.Set(FlagNodeMonitorPeriod, "1s"); err != nil {
		t.Fatal(err)
	}
	if base.Given(FlagNodeMonitorPeriod) || base.NodeMonitorPeriod != 5*time.Second {
		t.Errorf("Set on a copy changed the original: %+v", base)
	}
	if !c.Given(FlagNodeMonitorGracePeriod) || !c.Given(FlagNodeMonitorPeriod) {
		t.Errorf("copy %+v: want both flags given", c)
	}
	if got, want := c.String(), "--node-monitor-period=1s --node-monitor-grace-period=40s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
