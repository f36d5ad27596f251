package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
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
		{"unknown key", row + "zones: {rate: 1, brust: 3}\n", `unknown field "zones.brust"`},
		{"unknown keys, the first in order", row + "zones: {zz: 1, rate: 1, aa: 3}\n", `unknown field "zones.aa"`},
		{"not a mapping", "[a]\n", "the file: want a mapping"},
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
		{"deep nesting", row + "zones: " + strings.Repeat("[", 30000) + "\n", "nested deeper than 16 levels (MaxConfigDepth) at line 3"},
		{"deep block nesting", row + "zones:\n" + deepBlock(20), "nested deeper than 16 levels (MaxConfigDepth) at line 19"},
		{"too many nodes", row + "nodeSelector: [" + strings.Repeat("a, ", MaxConfigNodes) + "]\n", "more than 8192 YAML nodes (MaxConfigNodes), at line 3"},
		{"aliases expanded", row + billionLaughs, "more than 8192 YAML nodes, aliases expanded (MaxConfigNodes)"},
		{"recursive alias", row + "zones: &x {rate: *x}\n", "nested deeper than 16 levels (MaxConfigDepth)"},
		{"many duplicate keys", row + "zones: {" + strings.Repeat("rate: 1, ", 100) + "}\n", "(and 96 more lines)"},
		{"groupBy", row + "zones: {groupBy: \"a b\"}\n", `zones.groupBy: "a b" is not a label key`},
		{"burst negative", row + "zones: {burst: -1}\n", "zones.burst: -1 is not between 0 and 1000 (MaxBurst)"},
		{"burst too big", row + "zones: {burst: 1001}\n", "zones.burst: 1001 is not between 0 and 1000 (MaxBurst)"},
		{"maxUnhealthy negative", row + "zones: {maxUnhealthy: -1}\n", "zones.maxUnhealthy: -1 is negative"},
		{"maxUnhealthy over 100%", row + "zones: {maxUnhealthy: 130%}\n", `zones.maxUnhealthy: "130%" is not a whole percentage from "0%" to "100%"`},
		{"maxUnhealthy fraction of a percent", row + "zones: {maxUnhealthy: 2.5%}\n", `zones.maxUnhealthy: "2.5%" is not a whole percentage`},
		{"maxUnhealthy quoted count", row + "zones: {maxUnhealthy: \"3\"}\n", `zones.maxUnhealthy: "3" is not a whole percentage from "0%" to "100%" (or write a count, 3, without quotes)`},
		{"maxUnhealthy fraction", row + "zones: {maxUnhealthy: 0.3}\n", `zones.maxUnhealthy: 0.3 is neither a count (3) nor a percentage ("30%")`},
		{"maxUnhealthy huge", row + "zones: {maxUnhealthy: 1e12}\n", `zones.maxUnhealthy: 1e+12 is neither a count`},
		{"maxUnhealthy boolean", row + "zones: {maxUnhealthy: true}\n", `zones.maxUnhealthy: true is neither a count`},
		{"maxUnhealthy and unhealthyThreshold", row + "zones: {maxUnhealthy: 3, unhealthyThreshold: 0.5}\n", "zones.maxUnhealthy and zones.unhealthyThreshold: set one of them"},
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

// deepBlock is a block mapping nested n levels by indentation.
func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i+1) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", n+1) + "x\n")
	return b.String()
}

// billionLaughs nests aliases nine deep: 9^9 nodes once expanded.
var billionLaughs = func() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9))
	}
	return b.String()
}()

func TestLoadConfigNewFields(t *testing.T) {
	cfg, err := LoadConfig([]byte(goodConfig + "  groupBy: karpenter.sh/nodepool\n  burst: 5\n  maxUnhealthy: 30%\n  pauseEvictions: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	z := cfg.Zones
	if z.GroupBy != "karpenter.sh/nodepool" || z.Burst != 5 || z.MaxUnhealthy == nil || z.MaxUnhealthy.String() != "30%" || !z.PauseEvictions {
		t.Errorf("Zones = %+v", z)
	}
	if got := z.maxUnhealthy(19); got != 5 {
		t.Errorf("30%% of 19 = %d, want 5 (rounded down)", got)
	}
	cfg, err = LoadConfig([]byte(goodConfig + "  maxUnhealthy: 3\n"))
	if err != nil || cfg.Zones.MaxUnhealthy.IntValue() != 3 || cfg.Zones.maxUnhealthy(100) != 3 {
		t.Errorf("maxUnhealthy: 3 = %+v, %v", cfg.Zones.MaxUnhealthy, err)
	}
	// The defaults are the behaviour from before these fields.
	d := DefaultConfig().Zones
	if d.GroupBy != "" || d.Burst != 1 || d.MaxUnhealthy != nil || d.PauseEvictions {
		t.Errorf("DefaultConfig().Zones = %+v", d)
	}
	// 0 means 1 for a Config built in Go.
	if d.Burst = 0; d.burst() != 1 {
		t.Errorf("burst() of 0 = %d, want 1", d.burst())
	}
}

// TestLoadConfigBoundedWork: hostile documents are refused at a bounded
// cost, measured as the bytes LoadConfig allocates. 8,000 nested mappings
// in 40 KB used to cost 84 MiB: the paths of every level were built as
// strings, after the YAML parser and the conversion to JSON had read the
// whole depth. The byte scan now refuses the nesting before either runs;
// what passes the scan is bounded by MaxConfigNodes and MaxConfigDepth on
// the parsed tree.
func TestLoadConfigBoundedWork(t *testing.T) {
	const refused, atLimits = 64 << 10, 12 << 20
	var keys strings.Builder
	for i := range MaxConfigNodes/2 - 1 {
		fmt.Fprintf(&keys, "k%d: 1\n", i) // just under the node limit: parsed, converted, refused by name
	}
	for _, tc := range []struct {
		name, yaml, want string
		maxBytes         uint64
	}{
		{"8,000 nested mappings (40 KB)", strings.Repeat("{a: ", 8000) + "1" + strings.Repeat("}", 8000), "MaxConfigDepth", refused},
		{"9,999 nested sequences", strings.Repeat("[", 9999) + strings.Repeat("]", 9999), "MaxConfigDepth", refused},
		{"30,000 compact block sequences", strings.Repeat("- ", 30000) + "x\n", "MaxConfigDepth", refused},
		{"30,000 flow entries", "a: [" + strings.Repeat("a,", 30000) + "]\n", "MaxConfigNodes", refused},
		{"12,000 duplicate keys", "a: {" + strings.Repeat("a: 1,", 12000) + "}\n", "MaxConfigNodes", refused},
		{"nesting after a block scalar", "a: |\n  x\nb: " + strings.Repeat("{a: ", 8000) + "1" + strings.Repeat("}", 8000), "MaxConfigDepth", refused},
		{"block mappings 350 deep", deepBlock(350), "MaxConfigDepth", 1 << 20},
		{"billion laughs", billionLaughs, "MaxConfigNodes", 1 << 20},
		{"4,095 keys", keys.String(), `unknown field "k0"`, atLimits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.yaml)
			if len(data) > MaxConfigBytes {
				t.Fatalf("%d bytes: over MaxConfigBytes, refused for its size", len(data))
			}
			var err error
			got := allocated(func() { _, err = LoadConfig(data) })
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadConfig = %v, want an error naming %s", err, tc.want)
			}
			if got > tc.maxBytes {
				t.Errorf("LoadConfig allocated %d KiB for %d bytes, want at most %d KiB", got>>10, len(data), tc.maxBytes>>10)
			}
		})
	}
}

// allocated is how many bytes f allocates (the process's, so the caller
// must not run in parallel with other tests).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
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
	// Hostile shapes, small enough to run as seeds in every test run.
	f.Add([]byte(strings.Repeat("{a: ", 100) + "1" + strings.Repeat("}", 100)))
	f.Add([]byte(strings.Repeat("- ", 100) + "x\n"))
	f.Add([]byte(deepBlock(20)))
	f.Add([]byte(billionLaughs))
	f.Add([]byte("zones: &x {rate: *x}\n"))
	f.Add([]byte("a: |\n  [[[[\nb: '[['\n"))
	f.Add([]byte(goodConfig + "  groupBy: karpenter.sh/nodepool\n  burst: 3\n  maxUnhealthy: \"30%\"\n  pauseEvictions: true\n"))
	f.Add([]byte(goodConfig + "  maxUnhealthy: 0\n"))
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
		// A file sets maxUnhealthy or unhealthyThreshold, not both: the
		// threshold a Config with MaxUnhealthy carries is its default.
		var tree map[string]any
		if js, err := json.Marshal(cfg); err != nil || json.Unmarshal(js, &tree) != nil {
			t.Fatalf("Marshal(%+v) = %v", cfg, err)
		}
		if cfg.Zones.MaxUnhealthy != nil {
			delete(tree["zones"].(map[string]any), "unhealthyThreshold")
		}
		out, err := yaml.Marshal(tree)
		if err != nil {
			t.Fatalf("Marshal(%+v) = %v", cfg, err)
		}
		again, err := LoadConfig(out)
		if err != nil || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %q through\n%s\n= %+v, %v; want %+v", data, out, again, err, cfg)
		}
	})
}

// BenchmarkLoadConfig: a configuration, and the refusal of hostile ones.
func BenchmarkLoadConfig(b *testing.B) {
	for _, bc := range []struct{ name, yaml string }{
		{"good", goodConfig},
		{"8000 nested mappings", strings.Repeat("{a: ", 8000) + "1" + strings.Repeat("}", 8000)},
		{"30000 flow entries", "a: [" + strings.Repeat("a,", 30000) + "]\n"},
		{"350 nested block mappings", deepBlock(350)},
	} {
		data := []byte(bc.yaml)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_, _ = LoadConfig(data)
			}
		})
	}
}
