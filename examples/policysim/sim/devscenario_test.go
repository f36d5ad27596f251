package sim

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gpuZone is a zone of 4 nodes with 8 GPUs each and 2 pods with a claim
// each, for the device validation tests.
const gpuZone = `duration: 10m
zones:
  - name: a
    nodes: 4
    devices: [{driver: gpu.example.com, perNode: 8}]
    pods: [{name: train, perNode: 2, deviceClaim: {driver: gpu.example.com}}]
`

// TestLoadScenarioDeviceErrors: every device field is validated, each
// error naming the field, its line and the limit.
func TestLoadScenarioDeviceErrors(t *testing.T) {
	zone := func(devices, pods string) string {
		return "duration: 10m\nzones:\n  - name: a\n    nodes: 4\n    devices: " + devices + "\n    pods: " + pods + "\n"
	}
	gpu := "[{driver: gpu.example.com, perNode: 8}]"
	event := func(e string) string { return gpuZone + "events:\n  - " + e + "\n" }
	policy := func(p string) string {
		return strings.Replace(gpuZone, "duration: 10m\n", "duration: 10m\npolicy: {"+p+"}\n", 1)
	}
	tooManyRules := gpuZone + "events:\n"
	for i := range MaxDeviceRules + 1 {
		tooManyRules += fmt.Sprintf("  - {at: 1m, action: device-rule, rule: r%d, selector: {}, taint: {key: k, effect: None}}\n", i)
	}
	tooManyKeys := gpuZone + "events:\n"
	for i := range 17 {
		tooManyKeys += fmt.Sprintf("  - {at: 1m, action: device-taint, driver: gpu.example.com, count: 1, taint: {key: k%d}}\n", i)
	}
	tests := []struct {
		name, src, want string
	}{
		// Devices.
		{"no driver", zone("[{perNode: 8}]", "[]"), `s.yaml:5:15: zones[0].devices[0].driver: required`},
		{"bad driver", zone("[{driver: GPU_1, perNode: 8}]", "[]"), `zones[0].devices[0].driver: "GPU_1" is not a valid driver name: a DNS subdomain of at most 63 characters`},
		{"long driver", zone("[{driver: "+strings.Repeat("g", 64)+".com, perNode: 8}]", "[]"), `is not a valid driver name: a DNS subdomain of at most 63 characters`},
		{"no devices per node", zone("[{driver: gpu.example.com}]", "[]"), `zones[0].devices[0].perNode: must be in [1, 128] (ResourceSliceMaxDevices), got 0`},
		{"too many devices per node", zone("[{driver: gpu.example.com, perNode: 129}]", "[]"), `zones[0].devices[0].perNode: must be in [1, 128] (ResourceSliceMaxDevices), got 129`},
		{"driver twice", zone("[{driver: gpu.example.com, perNode: 8}, {driver: gpu.example.com, perNode: 2}]", "[]"), `zones[0].devices[1].driver: driver "gpu.example.com" listed twice for the same nodes`},
		{"driver in the zone and the cluster", zone(gpu, "[]") + "devices: [{driver: gpu.example.com, perNode: 1}]\n", `zones[0].devices[0].driver: driver "gpu.example.com" listed twice for the same nodes`},
		{"too many devices", "duration: 10m\nzones: [{name: a, nodes: 10000, devices: [{driver: gpu.example.com, perNode: 101}]}]\n", `s.yaml:2:1: zones: more than 1000000 devices in all (MaxDevices)`},
		// Claims.
		{"claim without driver", zone(gpu, "[{perNode: 1, deviceClaim: {}}]"), `zones[0].pods[0].deviceClaim.driver: required`},
		{"claim on another driver", zone(gpu, "[{perNode: 1, deviceClaim: {driver: nic.example.com}}]"), `zones[0].pods[0].deviceClaim.driver: zone "a" has no devices of driver "nic.example.com" (drivers: gpu.example.com)`},
		{"claim in a zone without devices", "duration: 1m\nzones: [{name: a, nodes: 1, pods: [{perNode: 1, deviceClaim: {driver: gpu.example.com}}]}]\n", `(drivers: none)`},
		{"share above 1", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, share: 1.5}}]"), `zones[0].pods[0].deviceClaim.share: must be in [0, 1], got 1.5`},
		{"too many pods per claim", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, podsPerClaim: 257}}]"), `deviceClaim.podsPerClaim: must be in [1, 256] (ResourceClaimReservedForMaxSize), got 257`},
		{"negative pods per claim", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, podsPerClaim: -1}}]"), `deviceClaim.podsPerClaim: must be in [1, 256] (ResourceClaimReservedForMaxSize), got -1`},
		{"too many devices per claim", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, devicesPerClaim: 33}}]"), `deviceClaim.devicesPerClaim: must be in [1, 32] (AllocationResultsMaxSize), got 33`},
		{"claims need more devices", zone(gpu, "[{perNode: 6, deviceClaim: {driver: gpu.example.com}}, {name: b, perNode: 3, deviceClaim: {driver: gpu.example.com}}]"),
			`s.yaml:6:5: zones[0].pods: the pod groups' claims need 9 gpu.example.com devices on each node, the zone has 8 (one claim per device)`},
		{"toleration without operator", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{key: k}]}}]"), `deviceClaim.tolerations[0].operator: required (Exists or Equal)`},
		{"toleration operator", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{key: k, operator: In}]}}]"), `deviceClaim.tolerations[0].operator: must be Exists or Equal, got "In"`},
		{"toleration effect", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{operator: Exists, effect: Evict}]}}]"), `deviceClaim.tolerations[0].effect: must be NoExecute, NoSchedule or None, got "Evict"`},
		{"toleration Exists with a value", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{key: k, operator: Exists, value: v}]}}]"), `deviceClaim.tolerations[0].value: must be empty when operator is Exists`},
		{"toleration key", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{key: -k, operator: Exists}]}}]"), `deviceClaim.tolerations[0].key: "-k" is not a valid taint key`},
		{"too many tolerations", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: ["+strings.Repeat("{operator: Exists}, ", 17)+"]}}]"), `deviceClaim.tolerations: at most 16 (DeviceTolerationsMaxLength), got 17`},
		{"tolerationSeconds as a string", zone(gpu, "[{perNode: 1, deviceClaim: {driver: gpu.example.com, tolerations: [{operator: Exists, tolerationSeconds: soon}]}}]"), `tolerations[0].tolerationSeconds: want an integer, got "soon"`},
		// Policy.
		{"NaN share", policy("deviceMaxShare: .nan"), `policy.deviceMaxShare: must be a finite number, got .nan`},
		{"share above 1", policy("deviceMaxShare: 1.5"), `policy.deviceMaxShare: must be in [0, 1], got 1.5`},
		{"negative rate", policy("deviceEvictionQPS: -1"), `policy.deviceEvictionQPS: must be a finite number >= 0 (pods per second per driver), got -1`},
		{"rate too high", policy("deviceEvictionQPS: 2e6"), `policy.deviceEvictionQPS: at most 1e6 pods per second, got 2e+06`},
		{"no burst with a rate", policy("deviceEvictionQPS: 1, deviceEvictionBurst: 0"), `policy.deviceEvictionBurst: must be in [1, 1000000] (pods), got 0`},
		{"negative min devices", policy("deviceMinDevices: -1"), `policy.deviceMinDevices: must be in [0, 1000000], got -1`},
		{"resume above max", policy("deviceMaxShare: 0.05, deviceResumeShare: 0.1"), `policy.deviceResumeShare: must be in [0, deviceMaxShare (0.05)], got 0.1`},
		{"resume without a breaker", policy("deviceResumeShare: 0.1"), `policy.deviceResumeShare: must be in [0, deviceMaxShare (0)], got 0.1`},
		{"negative resume", policy("deviceMaxShare: 0.05, deviceResumeShare: -0.01"), `policy.deviceResumeShare: must be in [0, deviceMaxShare (0.05)], got -0.01`},
		{"negative resume after", policy("deviceMaxShare: 0.05, deviceResumeAfter: -1s"), `policy.deviceResumeAfter: must be in [0, 168h0m0s], got -1s`},
		// Device actions.
		{"taint without driver", event("{at: 1m, action: device-taint}"), `s.yaml:8:5: events[0].driver: required`},
		{"taint of an unknown driver", event("{at: 1m, action: device-taint, driver: nic.example.com}"), `events[0].driver: no devices of driver "nic.example.com" (drivers: gpu.example.com)`},
		{"taint count above the scope", event("{at: 1m, action: device-taint, driver: gpu.example.com, node: a-1, count: 9}"), `events[0].count: must be in [1, 8] (the scope's gpu.example.com devices), got 9`},
		{"taint count above the cluster", event("{at: 1m, action: device-taint, driver: gpu.example.com, count: 33}"), `events[0].count: must be in [1, 32] (the scope's gpu.example.com devices), got 33`},
		{"taint share above 1", event("{at: 1m, action: device-taint, driver: gpu.example.com, share: 2}"), `events[0].share: must be in [0, 1] (0: use count, or every device), got 2`},
		{"taint count and share", event("{at: 1m, action: device-taint, driver: gpu.example.com, count: 1, share: 0.5}"), `events[0].share: use either count or share, not both`},
		{"taint window past the end", event("{at: 9m, action: device-taint, driver: gpu.example.com, over: 2m}"), `events[0].over: the window ends at 11m0s, after the end of the run (duration 10m0s)`},
		{"negative window", event("{at: 1m, action: device-taint, driver: gpu.example.com, over: -1s}"), `events[0].over: must not be negative, got -1s`},
		{"batches without a window", event("{at: 1m, action: device-taint, driver: gpu.example.com, every: 5s}"), `events[0].every: needs over (the window its batches spread over)`},
		{"batches too close", event("{at: 1m, action: device-taint, driver: gpu.example.com, over: 1m, every: 10ms}"), `events[0].every: must be in [100ms, over (1m0s)], got 10ms`},
		{"batches longer than the window", event("{at: 1m, action: device-taint, driver: gpu.example.com, over: 1m, every: 2m}"), `events[0].every: must be in [100ms, over (1m0s)], got 2m0s`},
		{"taint key", event("{at: 1m, action: device-taint, driver: gpu.example.com, taint: {key: 'a b'}}"), `events[0].taint.key: "a b" is not a valid taint key`},
		{"taint value", event("{at: 1m, action: device-taint, driver: gpu.example.com, taint: {key: k, value: 'a b'}}"), `events[0].taint.value: "a b" is not a valid value`},
		{"taint effect", event("{at: 1m, action: device-taint, driver: gpu.example.com, taint: {key: k, effect: Evict}}"), `events[0].taint.effect: must be NoExecute, NoSchedule or None, got "Evict"`},
		{"taint value unquoted number", event("{at: 1m, action: device-taint, driver: gpu.example.com, taint: {key: k, value: 79}}"), `events[0].taint.value: want a string, got 79 (quote it)`},
		{"two scopes", event("{at: 1m, action: device-taint, driver: gpu.example.com, node: a-1, zone: a}"), `events[0]: device-taint needs at most one of node, nodes or zone (none: the whole cluster)`},
		{"unknown node", event("{at: 1m, action: device-taint, driver: gpu.example.com, node: a-4}"), `events[0].node: unknown node "a-4" (zone a has a-0 … a-3)`},
		{"unknown zone", event("{at: 1m, action: device-taint, driver: gpu.example.com, zone: b}"), `events[0].zone: unknown zone "b" (zones: a)`},
		{"no devices in the scope", "duration: 10m\nzones:\n  - {name: a, nodes: 1, devices: [{driver: gpu.example.com, perNode: 1}]}\n  - {name: b, nodes: 1}\nevents: [{at: 1m, action: device-taint, driver: gpu.example.com, zone: b}]\n",
			`events[0].driver: driver "gpu.example.com" has no devices in the event's scope`},
		{"untaint with a value", event("{at: 1m, action: device-untaint, driver: gpu.example.com, taint: {key: k, value: v}}"), `events[0].taint: device-untaint removes the taint with this key: give the key alone`},
		{"untaint with a share", event("{at: 1m, action: device-untaint, driver: gpu.example.com, share: 0.5}"), `events[0]: device-untaint takes no share (it takes driver, node, nodes, zone, over, every, taint)`},
		{"untaint batches without a window", event("{at: 1m, action: device-untaint, driver: gpu.example.com, every: 5s}"), `events[0].every: needs over (the window its batches spread over)`},
		{"untaint window past the end", event("{at: 9m, action: device-untaint, driver: gpu.example.com, over: 2m}"), `events[0].over: the window ends at 11m0s, after the end of the run (duration 10m0s)`},
		{"rule without a name", event("{at: 1m, action: device-rule, taint: {key: k}}"), `events[0].rule: required (the DeviceTaintRule's name)`},
		{"rule with a bad name", event("{at: 1m, action: device-rule, rule: Drain_1, taint: {key: k}}"), `events[0].rule: "Drain_1" is not a valid DeviceTaintRule name`},
		{"rule without a taint", event("{at: 1m, action: device-rule, rule: r}"), `events[0].taint: required (key, and value and effect: NoExecute by default)`},
		{"rule taint without a key", event("{at: 1m, action: device-rule, rule: r, taint: {effect: None}}"), `events[0].taint.key: required`},
		{"rule selector device", event("{at: 1m, action: device-rule, rule: r, selector: {device: GPU.0}, taint: {key: k}}"), `events[0].selector.device: "GPU.0" is not a valid device name`},
		{"rule with a driver", event("{at: 1m, action: device-rule, rule: r, driver: gpu.example.com, taint: {key: k}}"), `events[0]: device-rule takes no driver (it takes rule, selector, taint)`},
		{"rule selector unknown field", event("{at: 1m, action: device-rule, rule: r, selector: {class: gpu}, taint: {key: k}}"), `events[0].selector.class: unknown field "class" (known: driver, pool, device)`},
		{"delete of a rule never created", event("{at: 1m, action: device-rule-delete, rule: r}"), `events[0].rule: no device-rule event creates rule "r"`},
		{"release without a driver", event("{at: 1m, action: device-release-hold}"), `events[0].driver: required`},
		{"release with a zone", event("{at: 1m, action: device-release-hold, driver: gpu.example.com, zone: a}"), `events[0]: device-release-hold takes no zone (it takes driver)`},
		{"stop with a driver", event("{at: 1m, action: stop, node: a-0, driver: gpu.example.com}"), `events[0]: stop takes no driver (fields of the device actions)`},
		{"too many rules", tooManyRules, `events: 101 DeviceTaintRules named; at most 100 (MaxDeviceRules)`},
		{"too many taint keys", tooManyKeys, `events[16].taint.key: driver "gpu.example.com" would get more than 16 taint keys (DeviceTaintsMaxLength)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := LoadScenario("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("LoadScenario = %+v, nil; want error %q", sc, tt.want)
			}
			if !errors.Is(err, ErrScenario) {
				t.Errorf("LoadScenario = %v, want an error wrapping ErrScenario", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadScenario = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestLoadScenarioDevicesFull: every device field loads as written, with
// its defaults, and survives Marshal and LoadScenario.
func TestLoadScenarioDevicesFull(t *testing.T) {
	src := `duration: 10m
policy: {deviceEvictionQPS: 2.5, deviceEvictionBurst: 4, deviceMaxShare: 0.05, deviceMinDevices: 3, deviceResumeShare: 0.01, deviceResumeAfter: 30s}
devices: [{driver: fpga.example.com, perNode: 1}]
zones:
  - name: a
    nodes: 4
    devices: [{driver: gpu.example.com, perNode: 8}]
    pods:
      - name: train
        perNode: 3
        deviceClaim:
          driver: gpu.example.com
          share: 0.5
          podsPerClaim: 2
          devicesPerClaim: 3
          tolerations: [{key: gpu.example.com/xid, operator: Equal, value: "79", effect: NoExecute, tolerationSeconds: 30}]
      - {name: fpga, perNode: 1, deviceClaim: {driver: fpga.example.com}}
events:
  - {at: 1m, action: device-taint, driver: gpu.example.com, zone: a, share: 0.25, over: 30s, every: 10s, taint: {key: gpu.example.com/xid, value: "79"}}
  - {at: 2m, action: device-untaint, driver: gpu.example.com, nodes: [a-0, a-1], over: 20s, every: 10s}
  - {at: 3m, action: device-rule, rule: drain, selector: {}, taint: {key: maintenance, effect: None}}
  - {at: 4m, action: device-rule, rule: drain, selector: {driver: fpga.example.com, pool: a-0, device: fpga-0}, taint: {key: maintenance}}
  - {at: 5m, action: device-rule-delete, rule: drain}
  - {at: 6m, action: device-release-hold, driver: fpga.example.com}
`
	sc, err := LoadScenario("full.yaml", []byte(src))
	if err != nil {
		t.Fatalf("LoadScenario = %v", err)
	}
	c := sc.Zones[0].Pods[0].DeviceClaim
	if c == nil || *c.Share != 0.5 || c.PodsPerClaim != 2 || c.DevicesPerClaim != 3 || *c.Tolerations[0].TolerationSeconds != 30 {
		t.Errorf("deviceClaim = %+v, want the fields as written", c)
	}
	if got := sc.Zones[0].PodGroups()[0].shape(); got != (claimShape{pods: 2, perClaim: 2, claims: 1, devices: 3}) {
		t.Errorf("shape = %+v, want 2 pods (half of 3, rounded half up) sharing 1 claim of 3 devices", got)
	}
	if got := sc.Zones[0].PodGroups()[1].shape(); got != (claimShape{pods: 1, perClaim: 1, claims: 1, devices: 1}) {
		t.Errorf("shape of the defaults = %+v, want one pod, one claim, one device", got)
	}
	if e := sc.Events[0]; e.taintOf() != (DeviceTaintSpec{Key: "gpu.example.com/xid", Value: "79", Effect: "NoExecute"}) {
		t.Errorf("taint = %+v, want the NoExecute default", e.taintOf())
	}
	if e := (Event{Driver: "gpu.example.com"}); e.taintOf().Key != "gpu.example.com/unhealthy" {
		t.Errorf("default taint key = %q", e.taintOf().Key)
	}
	if p := sc.Policy; p.DeviceEvictionQPS != 2.5 || p.DeviceEvictionBurst != 4 || p.DeviceMaxShare != 0.05 || p.DeviceMinDevices != 3 ||
		p.DeviceResumeShare != 0.01 || p.DeviceResumeAfter.D() != 30*time.Second {
		t.Errorf("policy = %+v", p)
	}
	if def := DefaultPolicy(); def.DeviceEvictionQPS != 0 || def.DeviceMaxShare != 0 || def.DeviceEvictionBurst != 1 || def.DeviceMinDevices != 0 ||
		def.DeviceResumeShare != 0 || def.DeviceResumeAfter != 0 {
		t.Errorf("DefaultPolicy() device fields = %+v; want no limit (upstream), burst 1", def)
	}
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadScenario("again.yaml", b)
	if err != nil {
		t.Fatalf("LoadScenario(Marshal()) = %v\n%s", err, b)
	}
	if !reflect.DeepEqual(again, sc) {
		t.Errorf("round trip = %+v, want %+v", again, sc)
	}
	if _, err := Run(t.Context(), sc); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestWorkCountsDeviceEvents: a device action costs the devices it
// targets × (1 + pods per device), a rule every device and pod with a
// claim; with a breaker, each instant of a device-taint every pod with a
// claim again. The device actions' scopes are not kubelet targets.
func TestWorkCountsDeviceEvents(t *testing.T) {
	// 4 nodes × 8 GPUs = 32 devices; 2 claimed pods per node = 8.
	tests := []struct {
		event string
		want  int64
	}{
		{"{at: 1m, action: device-taint, driver: gpu.example.com}", 32 * 2},
		{"{at: 1m, action: device-taint, driver: gpu.example.com, node: a-1}", 8 * 2},
		{"{at: 1m, action: device-taint, driver: gpu.example.com, share: 0.25}", 8 * 2},
		{"{at: 1m, action: device-taint, driver: gpu.example.com, count: 3, zone: a}", 3 * 2},
		{"{at: 1m, action: device-untaint, driver: gpu.example.com, nodes: [a-0, a-2]}", 16 * 2},
		{"{at: 1m, action: device-rule, rule: r, selector: {}, taint: {key: k}}", 32 + 8},
		{"{at: 1m, action: device-release-hold, driver: gpu.example.com}", 32 + 8},
	}
	for _, tt := range tests {
		if got := load(t, gpuZone+"events:\n  - "+tt.event+"\n").Work().EventSteps; got != tt.want {
			t.Errorf("Work().EventSteps of %s = %d, want %d", tt.event, got, tt.want)
		}
	}
	breaker := strings.Replace(gpuZone, "duration: 10m\n", "duration: 10m\npolicy: {deviceMaxShare: 0.5}\n", 1) +
		"events:\n  - {at: 1m, action: device-taint, driver: gpu.example.com, share: 0.5, over: 1m, every: 20s}\n"
	// 16 devices × 2, and 4 instants (1m, 1m20s, 1m40s, 2m) × 8 pods.
	if got := load(t, breaker).Work().EventSteps; got != 16*2+4*8 {
		t.Errorf("Work().EventSteps with a breaker = %d, want %d", got, 16*2+4*8)
	}
	// A roll-back node by node: 32 devices × 2, and (with the breaker)
	// 4 instants (3m, 3m20s, 3m40s, 4m) × 8 pods.
	rollBack := breaker + "  - {at: 3m, action: device-untaint, driver: gpu.example.com, over: 1m, every: 20s}\n"
	if got := load(t, rollBack).Work().EventSteps; got != 16*2+4*8+32*2+4*8 {
		t.Errorf("Work().EventSteps with a roll-back = %d, want %d", got, 16*2+4*8+32*2+4*8)
	}
}

// TestDeviceStepsSpread: a device-taint picks its devices evenly over its
// scope and spreads them over its window, in batches with every.
func TestDeviceStepsSpread(t *testing.T) {
	src := gpuZone + "events:\n  - {at: 1m, action: device-taint, driver: gpu.example.com, count: 8, over: 40s, every: 10s}\n"
	res := mustRun(t, load(t, src), Options{})
	byInstant := map[time.Duration]int{}
	nodes := map[string]int{}
	for _, e := range find(res, KindDeviceTaint, "", "") {
		byInstant[e.At]++
		nodes[e.Node]++
	}
	if want := map[time.Duration]int{60 * sec: 2, 70 * sec: 2, 80 * sec: 2, 90 * sec: 2}; !reflect.DeepEqual(byInstant, want) {
		t.Errorf("devices tainted by instant = %v, want %v", byInstant, want)
	}
	// Every fourth of the 32 devices: two on each node.
	if want := map[string]int{"a-0": 2, "a-1": 2, "a-2": 2, "a-3": 2}; !reflect.DeepEqual(nodes, want) {
		t.Errorf("devices tainted by node = %v, want %v", nodes, want)
	}
	for _, m := range []int{1, 2, 7, 10, 400, 1000} {
		st, seen := strideFor(m), map[int]bool{}
		for q := range m {
			seen[q*st%m] = true
		}
		if len(seen) != m {
			t.Errorf("strideFor(%d) = %d visits %d of %d devices", m, st, len(seen), m)
		}
	}
}
