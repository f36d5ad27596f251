package controller

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const goodConfig = `
conditions:
- type: KernelDeadlock
  status: "True"
  taint: {key: example.com/kernel-deadlock, effect: NoExecute}
- type: ReadonlyFilesystem
  status: "True"
  taint: {key: example.com/readonly-fs, effect: NoSchedule}
zones:
  rate: 0.5
`

func TestLoadConfig(t *testing.T) {
	cfg, err := LoadConfig([]byte(goodConfig))
	if err != nil {
		t.Fatalf("LoadConfig(good) = %v", err)
	}
	if cfg.Zones.Rate != 0.5 || cfg.Zones.UnhealthyThreshold != 0.33 || cfg.PassPeriod.Duration != 5*time.Second || !cfg.EvictPods || cfg.DryRun {
		t.Errorf("LoadConfig(good) = %+v, want rate 0.5 and the other defaults", cfg)
	}
	if len(cfg.Conditions) != 2 || cfg.Conditions[1].Taint.Effect != "NoSchedule" {
		t.Errorf("Conditions = %+v", cfg.Conditions)
	}

	row := "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: example.com/kd, effect: NoExecute}}\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty file"},
		{"unknown key", row + "zones: {rate: 1, burst: 3}\n", `unknown field "zones.burst"`},
		{"unknown top key", row + "dryrun: true\n", `unknown field "dryrun"`},
		{"duplicate key", row + "passPeriod: 1s\npassPeriod: 2s\n", "passPeriod"},
		{"no rows", "zones: {rate: 1}\n", "conditions: at least one row"},
		{"kcm taint", "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: node.kubernetes.io/unreachable, effect: NoExecute}}\n", "conditions[0].taint.key"},
		{"kubernetes.io taint", "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: kubernetes.io/x, effect: NoExecute}}\n", "conditions[0].taint.key"},
		{"Ready", "conditions:\n- {type: Ready, status: \"False\", taint: {key: example.com/x, effect: NoExecute}}\n", "conditions[0].type"},
		{"status", "conditions:\n- {type: KernelDeadlock, status: Maybe, taint: {key: example.com/x, effect: NoExecute}}\n", "conditions[0].status"},
		{"effect", "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: example.com/x, effect: Evict}}\n", "effect"},
		{"bad key", "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: \"a b\", effect: NoExecute}}\n", "taint key"},
		{"rate", row + "zones: {rate: -1}\n", "zones.rate"},
		{"threshold", row + "zones: {unhealthyThreshold: 1.5}\n", "zones.unhealthyThreshold"},
		{"size", row + "zones: {largeZoneSize: -1}\n", "zones.largeZoneSize"},
		{"period", row + "passPeriod: 1ms\n", "passPeriod"},
		{"selector", row + "nodeSelector: \"a in (\"\n", "nodeSelector"},
		{"too big", row + "# " + strings.Repeat("x", MaxConfigBytes) + "\n", "MaxConfigBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig([]byte(tc.yaml))
			if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadConfig = %v, want an ErrInvalidConfig naming %q", err, tc.want)
			}
		})
	}
}

func TestLoadConfigTypeErrorNamesField(t *testing.T) {
	_, err := LoadConfig([]byte("conditions:\n- {type: KernelDeadlock, status: yes, taint: {key: example.com/x, effect: NoExecute}}\n"))
	if err == nil || !strings.Contains(err.Error(), "conditions.status") {
		t.Errorf("LoadConfig(status: yes) = %v, want an error naming conditions.status", err)
	}
}
