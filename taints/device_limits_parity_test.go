package taints

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestDeviceLimitsParity: the blast-radius limit and the warnings change
// no decision unless they bite. The upstream parity suites (the 55 cases
// of TestController in every event order, the flows) and the model-based
// test run once with the default config (limits zero-valued) and again
// under configs whose limits never bite (a breaker at 100%, or one that
// needs more tainted devices than any case has; a rate no case exhausts;
// warnings kept): each run must pass the suites' own checks, and every
// output the harness sees (evictions with their reasons and times, rule
// conditions, cancellations, NextDeadline) must be byte-identical to the
// default run's.
func TestDeviceLimitsParity(t *testing.T) {
	suites := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Controller", TestDeviceParityController},
		{"Eviction", TestDeviceParityEviction},
		{"DeviceTaintRule", TestDeviceParityDeviceTaintRule},
		{"CancelEviction", TestDeviceParityCancelEviction},
		{"ParallelPodDeletion", TestDeviceParityParallelPodDeletion},
		{"Retry", TestDeviceParityRetry},
		{"Model", TestDeviceModel},
	}
	configs := []struct {
		name string
		set  func(*DeviceEvictorConfig)
	}{
		{"off", nil},
		{"share-100%", func(c *DeviceEvictorConfig) {
			c.BlastRadius = DeviceBlastRadius{QPS: 1e9, Burst: 1 << 20, MaxShare: 1}
			c.KeepWarnings = 256
		}},
		{"min-devices", func(c *DeviceEvictorConfig) {
			c.BlastRadius = DeviceBlastRadius{QPS: 1e6, Burst: 1 << 16, MaxShare: 0.01, MinDevices: 1 << 20}
			c.KeepWarnings = 1
		}},
	}
	var mu sync.Mutex
	traces := map[string]map[string]*strings.Builder{} // config -> test path below the config -> transcript
	t.Cleanup(func() { deviceTestConfig, deviceTrace = nil, nil })
	for _, cfg := range configs {
		prefix := t.Name() + "/" + cfg.name + "/"
		got := map[string]*strings.Builder{}
		traces[cfg.name] = got
		deviceTestConfig = cfg.set
		deviceTrace = func(t *testing.T) *strings.Builder {
			mu.Lock()
			defer mu.Unlock()
			k := strings.TrimPrefix(t.Name(), prefix)
			if got[k] == nil {
				got[k] = &strings.Builder{}
			}
			return got[k]
		}
		t.Run(cfg.name, func(t *testing.T) {
			for _, s := range suites {
				t.Run(s.name, s.run)
			}
		})
	}
	deviceTestConfig, deviceTrace = nil, nil
	off := traces["off"]
	if len(off) < 55 {
		t.Fatalf("%d transcripts with limits off, want at least one per parity case", len(off))
	}
	for _, cfg := range configs[1:] {
		got := traces[cfg.name]
		for _, k := range slices.Sorted(maps.Keys(off)) {
			if got[k] == nil {
				t.Errorf("%s: %s: no transcript", cfg.name, k)
				continue
			}
			if g, w := got[k].String(), off[k].String(); g != w {
				t.Errorf("%s: %s: transcript differs from limits off:\n got: %s\nwant: %s", cfg.name, k, g, w)
			}
		}
		if len(got) != len(off) {
			t.Errorf("%s: %d transcripts, %d with limits off", cfg.name, len(got), len(off))
		}
	}
}
