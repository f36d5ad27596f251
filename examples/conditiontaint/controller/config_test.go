package controller

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
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
		{"comments only", "# nothing\n", "empty file"},
		{"null document", "~\n", "empty file"},
		{"not YAML", row + "zones: [\n", "did not find expected node content"},
		{"deep nesting", row + "zones: " + strings.Repeat("[", 30000) + "\n", "exceeded max depth"},
		{"empty second document", row + "---\n", "second YAML document starts at line 3"},
		{"empty first document", "---\n---\n" + row, "second YAML document starts at line 2"},
		{"null rate", row + "zones: {rate: null}\n", `zones.rate: empty value ("null")`},
		{"null zones", row + "zones:\n", `zones: empty value ("")`},
		{"nan in a list", "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: .nan, effect: NoExecute}}\n", "conditions[0].taint.key: .nan is not a finite number"},
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

// TestLoadConfigSecondDocument: a second YAML document is an error. The
// loader used to read only the first and drop the rest silently, so this
// file, whose operator meant a dry run, tainted and evicted for real.
func TestLoadConfigSecondDocument(t *testing.T) {
	for _, sep := range []string{"---\n", "--- \n", "...\n---\n"} {
		data := strings.TrimPrefix(goodConfig, "\n") + sep + "dryRun: true\n"
		_, err := LoadConfig([]byte(data))
		want := fmt.Sprintf("second YAML document starts at line %d", 9+strings.Count(sep, "\n"))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig(two documents, separator %q) = %v, want ErrInvalidConfig naming the second document's line", sep, err)
		}
	}
	// One document, with or without the leading and ending markers.
	for _, data := range []string{"---\n" + goodConfig, goodConfig + "...\n"} {
		if _, err := LoadConfig([]byte(data)); err != nil {
			t.Errorf("LoadConfig(%q) = %v, want nil", data, err)
		}
	}
}

// TestLoadConfigNonFinite: NaN and infinite numbers are errors that name
// the field and the value. They used to fail as "json: unsupported value:
// NaN", naming neither.
func TestLoadConfigNonFinite(t *testing.T) {
	for _, tc := range []struct{ field, value string }{
		{"rate", ".nan"}, {"rate", ".NaN"}, {"largeZoneRate", ".inf"}, {"fullZoneRate", "-.Inf"},
		{"unhealthyThreshold", "+.inf"}, {"largeZoneSize", ".NAN"},
	} {
		data := strings.TrimPrefix(goodConfig, "\n")
		data = strings.Replace(data, "  rate: 0.5\n", "  "+tc.field+": "+tc.value+"\n", 1)
		_, err := LoadConfig([]byte(data))
		want := "zones." + tc.field + ": " + tc.value + " is not a finite number"
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig(zones.%s: %s) = %v, want ErrInvalidConfig naming %q", tc.field, tc.value, err, want)
		}
	}
	// A quoted ".nan" is a string: a type error naming the field.
	data := strings.Replace(goodConfig, "rate: 0.5", `rate: ".nan"`, 1)
	if _, err := LoadConfig([]byte(data)); err == nil || !strings.Contains(err.Error(), "zones.rate") {
		t.Errorf(`LoadConfig(zones.rate: ".nan") = %v, want an error naming zones.rate`, err)
	}
}

// TestLoadConfigNullValue: an empty value is an error, not the default.
// "dryRun:" with its value forgotten used to load as false.
func TestLoadConfigNullValue(t *testing.T) {
	for _, v := range []string{"", " null", " ~", " Null"} {
		data := goodConfig + "dryRun:" + v + "\n"
		_, err := LoadConfig([]byte(data))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "dryRun: empty value") {
			t.Errorf("LoadConfig(dryRun:%s) = %v, want ErrInvalidConfig naming dryRun", v, err)
		}
	}
}

// FuzzLoadConfig: LoadConfig never panics, every error wraps
// ErrInvalidConfig, and a configuration it accepts is valid and survives a
// round trip through YAML unchanged.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(goodConfig + "---\ndryRun: true\n"))
	f.Add([]byte(strings.Replace(goodConfig, "0.5", ".nan", 1)))
	f.Add([]byte(goodConfig + "passPeriod: 1m\nnodeSelector: pool=general\nevictPods: false\ndryRun: true\n"))
	f.Add([]byte(goodConfig + "zones: {unhealthyThreshold: 0.5, largeZoneSize: 10, largeZoneRate: 0, fullZoneRate: 1e-3}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("LoadConfig(%q) = %v, not an ErrInvalidConfig", data, err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("LoadConfig(%q) accepted a config Validate rejects: %v", data, err)
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("Marshal(%+v) = %v", cfg, err)
		}
		again, err := LoadConfig(out)
		if err != nil || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %q through\n%s\n= %+v, %v; want %+v", data, out, again, err, cfg)
		}
	})
}
