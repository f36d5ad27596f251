package sim

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const minimal = `duration: 5m
zones:
  - name: a
    nodes: 3
`

func TestLoadScenarioDefaults(t *testing.T) {
	sc, err := LoadScenario("dir/minimal.yaml", []byte(minimal))
	if err != nil {
		t.Fatalf("LoadScenario(minimal) = %v, want nil", err)
	}
	want := &Scenario{
		Name: "minimal", Duration: Duration(5 * time.Minute),
		Policy: DefaultPolicy(), Kubelet: DefaultKubelet(),
		Zones: []Zone{{Name: "a", Nodes: 3}},
	}
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("LoadScenario(minimal) = %+v, want %+v", sc, want)
	}
}

// TestReconcileOffTakesZeroPeriods: without reconcile the kubelets' status
// loops are not used, and zero periods are valid (a Kubelet built in Go
// before the fields existed).
func TestReconcileOffTakesZeroPeriods(t *testing.T) {
	sc := load(t, minimal)
	sc.Kubelet = Kubelet{LeaseRenewInterval: Duration(10 * time.Second), StatusUpdateInterval: Duration(5 * time.Minute)}
	if err := sc.Validate(); err != nil {
		t.Errorf("Validate(reconcile off, zero periods) = %v", err)
	}
}

func TestLoadScenarioFull(t *testing.T) {
	src := `name: full
description: every field
duration: 1h30m
policy:
  nodeMonitorPeriod: 2s
  nodeMonitorGracePeriod: 40s
  nodeStartupGracePeriod: 1m
  nodeEvictionRate: 0.5
  secondaryNodeEvictionRate: 0
  largeClusterSizeThreshold: 10
  unhealthyZoneThreshold: 1
  fullDisruptionQPS: 0
  defaultNotReadyTolerationSeconds: 60
  defaultUnreachableTolerationSeconds: 0
kubelet: {leaseRenewInterval: 5s, statusUpdateInterval: 1m, podReadyDelay: 0s}
zones:
  - name: a
    region: r1
    nodes: 10
    pods:
      - name: web
        perNode: 2
        admissionDefaults: false
        tolerations:
          - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
          - {key: dedicated, operator: Equal, value: db, effect: NoSchedule}
      - {perNode: 1, daemonSet: true}
events:
  - {at: 10m, action: zone-dark, zone: a}
  - {at: 1m, action: stop, nodes: [a-1, a-2]}
  - {at: 2m, action: not-ready, zone: a, count: 3}
  - {at: 3m, action: resume, node: a-9}
`
	sc, err := LoadScenario("full.yaml", []byte(src))
	if err != nil {
		t.Fatalf("LoadScenario = %v", err)
	}
	if sc.Policy.FullDisruptionQPS == nil || *sc.Policy.FullDisruptionQPS != 0 {
		t.Errorf("fullDisruptionQPS = %v, want pointer to 0", sc.Policy.FullDisruptionQPS)
	}
	if got := sc.Zones[0].PodGroups(); len(got) != 2 || got[1].Name != "pod" || got[0].admissionDefaults() || !got[1].admissionDefaults() {
		t.Errorf("PodGroups() = %+v, want web without admission defaults, then pod with them", got)
	}
	if got := sc.Zones[0].Pods[0].Tolerations[0].TolerationSeconds; got == nil || *got != 30 {
		t.Errorf("tolerationSeconds = %v, want 30", got)
	}
	if sc.Kubelet.PodReadyDelay != 0 || sc.Policy.UnhealthyZoneThreshold != 1 || sc.Duration.D() != 90*time.Minute {
		t.Errorf("scenario = %+v, want the fields as written", sc)
	}
	// Marshal and load again: the same scenario.
	b, err := sc.Marshal()
	if err != nil {
		t.Fatalf("Marshal = %v", err)
	}
	again, err := LoadScenario("again.yaml", b)
	if err != nil {
		t.Fatalf("LoadScenario(Marshal()) = %v\n%s", err, b)
	}
	if !reflect.DeepEqual(again, sc) {
		t.Errorf("round trip = %+v, want %+v", again, sc)
	}
}

// TestLoadScenarioErrors: every kind of mistake is reported with the file,
// the line and the field.
func TestLoadScenarioErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "line:col: path: message" fragment
	}{
		{"unknown top-level key", "duration: 5m\ndurations: 5m\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:1: durations: unknown field "durations"`},
		{"unknown policy key", "duration: 5m\npolicy:\n  gracePeriod: 40s\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.gracePeriod: unknown field "gracePeriod" (known: nodeMonitorPeriod`},
		{"unknown toleration key", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    pods:\n      - perNode: 1\n        tolerations:\n          - key: k\n            seconds: 3\n",
			`s.yaml:9:13: zones[0].pods[0].tolerations[0].seconds: unknown field "seconds"`},
		{"key with wrong case", "Duration: 5m\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:1:1: Duration: unknown field "Duration"`},
		{"duplicate key", "duration: 5m\nduration: 6m\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:1: duration: duplicate field "duration"`},
		{"string for an int", "duration: 5m\nzones:\n  - name: a\n    nodes: ten\n",
			`s.yaml:4:12: zones[0].nodes: want an integer, got "ten"`},
		{"float for an int", "duration: 5m\nzones:\n  - name: a\n    nodes: 1.5\n",
			`s.yaml:4:12: zones[0].nodes: want an integer, got 1.5`},
		// YAML 1.1 (the decoder) reads these as booleans and would store
		// "true" and "false": zone "true", a toleration value "true".
		{"YAML 1.1 boolean for a string", "duration: 5m\nzones: [{name: on, nodes: 1}]\n",
			`s.yaml:2:16: zones[0].name: on is a boolean in YAML 1.1; quote it ("on")`},
		{"YAML 1.1 boolean for a toleration value", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    pods:\n      - perNode: 1\n        tolerations: [{key: k, operator: Equal, value: yes, effect: NoSchedule}]\n",
			`s.yaml:7:56: zones[0].pods[0].tolerations[0].value: yes is a boolean in YAML 1.1; quote it ("yes")`},
		{"number for a string", "duration: 5m\nzones:\n  - name: 7\n    nodes: 1\n",
			`s.yaml:3:11: zones[0].name: want a string, got 7 (quote it)`},
		{"number for a duration", "duration: 300\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:1:11: duration: want a duration string such as "40s" or "5m", got 300`},
		{"bad duration", "duration: 5 minutes\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:1:11: duration: invalid duration "5 minutes"`},
		{"no node status update with reconcile", "duration: 5m\nkubelet: {nodeStatusUpdateFrequency: 0s}\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:11: kubelet.nodeStatusUpdateFrequency: must be in [100ms, 168h0m0s] with reconcile, got 0s`},
		{"pod status sync too short", "duration: 5m\nkubelet: {podStatusSyncPeriod: 10ms}\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:11: kubelet.podStatusSyncPeriod: must be in [100ms, 168h0m0s] with reconcile, got 10ms`},
		{"negative period without reconcile", "duration: 5m\nkubelet: {reconcile: false, podStatusSyncPeriod: -1s}\nzones: [{name: a, nodes: 1}]\n",
			`kubelet.podStatusSyncPeriod: must be in [0s, 168h0m0s], got -1s`},
		{"list for a mapping", "duration: 5m\npolicy: [1]\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:9: policy: want a mapping, got a list`},
		{"mapping for a list", "duration: 5m\nzones: {name: a}\n",
			`s.yaml:2:8: zones: want a list, got a mapping`},
		{"string for a bool", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    pods: [{perNode: 1, daemonSet: yes}]\n",
			`s.yaml:5:36: zones[0].pods[0].daemonSet: want true or false, got "yes"`},
		{"negative duration", "duration: 5m\npolicy:\n  nodeMonitorGracePeriod: -1s\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.nodeMonitorGracePeriod: must be in [0s, 168h0m0s], got -1s`},
		{"zero monitor period", "duration: 5m\npolicy: {nodeMonitorPeriod: 0s}\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:2:10: policy.nodeMonitorPeriod: must be in [100ms, 168h0m0s], got 0s`},
		{"NaN rate", "duration: 5m\npolicy:\n  nodeEvictionRate: .nan\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:21: policy.nodeEvictionRate: must be a finite number, got .nan`},
		{"infinite rate", "duration: 5m\npolicy:\n  fullDisruptionQPS: .inf\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:22: policy.fullDisruptionQPS: must be a finite number, got .inf`},
		{"negative rate", "duration: 5m\npolicy:\n  secondaryNodeEvictionRate: -0.01\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.secondaryNodeEvictionRate: must be a finite number >= 0 (nodes per second), got -0.01`},
		{"threshold above 1", "duration: 5m\npolicy:\n  unhealthyZoneThreshold: 1.5\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.unhealthyZoneThreshold: must be in [0, 1], got 1.5`},
		{"threshold below 0", "duration: 5m\npolicy:\n  unhealthyZoneThreshold: -0.1\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.unhealthyZoneThreshold: must be in [0, 1], got -0.1`},
		{"negative toleration seconds", "duration: 5m\npolicy:\n  defaultUnreachableTolerationSeconds: -5\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: policy.defaultUnreachableTolerationSeconds: must be in [0, 604800], got -5`},
		{"kubelet interval too short", "duration: 5m\nkubelet:\n  leaseRenewInterval: 1ms\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: kubelet.leaseRenewInterval: must be in [100ms, 168h0m0s], got 1ms`},
		{"kubelet interval too long", "duration: 5m\nkubelet:\n  statusUpdateInterval: 2562047h\nzones: [{name: a, nodes: 1}]\n",
			`s.yaml:3:3: kubelet.statusUpdateInterval: must be in [100ms, 168h0m0s], got 2562047h0m0s`},
		{"missing duration", "zones: [{name: a, nodes: 1}]\n",
			`s.yaml:1:1: duration: required, and must be positive`},
		{"no zones", "duration: 5m\nzones: []\n",
			`s.yaml:2:1: zones: at least one zone is required`},
		{"zero nodes", "duration: 5m\nzones:\n  - name: a\n    nodes: 0\n",
			`s.yaml:4:5: zones[0].nodes: must be in [1, 100000], got 0`},
		{"bad zone name", "duration: 5m\nzones:\n  - name: Zone_A\n    nodes: 1\n",
			`s.yaml:3:5: zones[0].name: "Zone_A" is not a valid zone name`},
		{"duplicate zone", "duration: 5m\nzones:\n  - {name: a, nodes: 1}\n  - {name: a, nodes: 2}\n",
			`s.yaml:4:6: zones[1].name: duplicate zone "a"`},
		{"podsPerNode and pods", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    podsPerNode: 3\n    pods: [{perNode: 1}]\n",
			`s.yaml:5:5: zones[0].podsPerNode: use either podsPerNode or pods, not both`},
		{"tolerationSeconds without NoExecute", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    pods:\n      - perNode: 1\n        tolerations: [{key: k, operator: Exists, tolerationSeconds: 5}]\n",
			`s.yaml:7:50: zones[0].pods[0].tolerations[0].tolerationSeconds: needs effect NoExecute`},
		{"bad toleration operator", "duration: 5m\nzones:\n  - name: a\n    nodes: 1\n    pods:\n      - perNode: 1\n        tolerations: [{key: k, operator: In}]\n",
			`s.yaml:7:32: zones[0].pods[0].tolerations[0].operator: must be Exists or Equal, got "In"`},
		{"too many pods", "duration: 5m\nzones:\n  - name: a\n    nodes: 100\n    pods: [{perNode: 9223372036854775807}, {perNode: 9223372036854775807}]\n",
			`s.yaml:2:1: zones: 300000100 pods in all; at most 3000000`},
		{"event zone unknown", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - at: 1m\n    action: zone-dark\n    zone: b\n",
			`s.yaml:6:5: events[0].zone: unknown zone "b" (zones: a)`},
		{"event node unknown", "duration: 5m\nzones: [{name: a, nodes: 10}]\nevents:\n  - at: 1m\n    action: stop\n    node: a-10\n",
			`s.yaml:6:5: events[0].node: unknown node "a-10" (zone a has a-0 … a-9)`},
		{"event node in list unknown", "duration: 5m\nzones: [{name: a, nodes: 10}]\nevents:\n  - {at: 1m, action: stop, nodes: [a-1, a-01]}\n",
			`s.yaml:4:41: events[0].nodes[1]: unknown node "a-01"`},
		{"event after the end", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - at: 6m\n    action: stop\n    node: a-0\n",
			`s.yaml:4:5: events[0].at: 6m0s is after the end of the run (duration 5m0s)`},
		{"event before the start", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - {at: -1s, action: stop, node: a-0}\n",
			`s.yaml:4:6: events[0].at: must not be negative, got -1s`},
		{"unknown action", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - at: 1m\n    action: reboot\n    node: a-0\n",
			`s.yaml:5:5: events[0].action: unknown action "reboot" (one of stop, resume, not-ready, zone-dark, zone-restore, lease-watch-stall, lease-watch-resume, device-taint, device-untaint, device-rule, device-rule-delete, device-release-hold)`},
		{"lease-watch-stall with a node", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - {at: 1m, action: lease-watch-stall, node: a-0}\n",
			`s.yaml:4:5: events[0]: lease-watch-stall needs no node, nodes, zone or count (it is the controller's cache)`},
		{"two targets", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - {at: 1m, action: stop, node: a-0, zone: a}\n",
			`s.yaml:4:5: events[0]: stop needs exactly one of node, nodes or zone`},
		{"zone-dark with a node", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents:\n  - {at: 1m, action: zone-dark, zone: a, node: a-0}\n",
			`s.yaml:4:5: events[0]: zone-dark needs zone, and no node, nodes or count`},
		{"count too large", "duration: 5m\nzones: [{name: a, nodes: 3}]\nevents:\n  - {at: 1m, action: stop, zone: a, count: 4}\n",
			`s.yaml:4:37: events[0].count: must be in [1, 3] (the nodes of zone "a"), got 4`},
		{"yaml syntax", "duration: 5m\nzones:\n  - name: a\n   nodes: 1\n",
			`s.yaml: yaml: line 2: did not find expected '-' indicator`},
		{"empty file", "", `s.yaml: empty scenario`},
		{"comments only", "# nothing\n", `s.yaml: empty scenario`},
		{"two documents", minimal + "---\nduration: 1m\n", `s.yaml:5: one scenario per file, found a second YAML document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := LoadScenario("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("LoadScenario(%q) = %+v, nil; want error %q", tt.src, sc, tt.want)
			}
			if !errors.Is(err, ErrScenario) {
				t.Errorf("LoadScenario(%q) = %v, want an error wrapping ErrScenario", tt.src, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadScenario(%q) = %v\nwant it to contain %q", tt.src, err, tt.want)
			}
		})
	}
}

// TestLoadScenarioQuotedYAML11Boolean: quoted (or tagged), a YAML 1.1
// boolean word is the string it says.
func TestLoadScenarioQuotedYAML11Boolean(t *testing.T) {
	sc, err := LoadScenario("s.yaml", []byte("duration: 5m\nzones: [{name: \"on\", region: !!str no, nodes: 1}]\nevents: [{at: 1m, action: stop, node: 'on-0'}]\n"))
	if err != nil {
		t.Fatalf("LoadScenario = %v, want nil", err)
	}
	if z := sc.Zones[0]; z.Name != "on" || z.Region != "no" {
		t.Errorf("zone name %q, region %q; want \"on\", \"no\"", z.Name, z.Region)
	}
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := LoadScenario("again.yaml", b); err != nil || !reflect.DeepEqual(again.Zones, sc.Zones) {
		t.Errorf("LoadScenario(Marshal()) = %v, %v; want the same zones\n%s", again, err, b)
	}
}

// TestLoadScenarioReportsEveryError: all problems come back at once, each a
// *FieldError with its line.
func TestLoadScenarioReportsEveryError(t *testing.T) {
	src := "duration: 5m\npolicy:\n  nodeEvictionRate: -1\n  unhealthyZoneThreshold: 2\nzones:\n  - name: a\n    nodes: 0\n"
	_, err := LoadScenario("s.yaml", []byte(src))
	var lines []int
	for _, e := range unwrapAll(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			lines = append(lines, fe.Line)
		}
	}
	if want := []int{3, 4, 7}; !reflect.DeepEqual(lines, want) {
		t.Errorf("LoadScenario error lines = %v, want %v (error: %v)", lines, want, err)
	}
}

func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	case interface{ Unwrap() error }:
		out = append(out, err)
		out = append(out, unwrapAll(u.Unwrap())...)
	default:
		out = append(out, err)
	}
	return out
}

func TestNodeName(t *testing.T) {
	tests := []struct {
		zone     string
		index, n int
		want     string
	}{
		{"a", 0, 1, "a-0"},
		{"a", 9, 10, "a-9"},
		{"a", 7, 11, "a-07"},
		{"zone-e", 42, 1000, "zone-e-042"},
	}
	for _, tt := range tests {
		if got := NodeName(tt.zone, tt.index, tt.n); got != tt.want {
			t.Errorf("NodeName(%q, %d, %d) = %q, want %q", tt.zone, tt.index, tt.n, got, tt.want)
		}
	}
}

// FuzzLoadScenario: whatever the input, LoadScenario does not panic, its
// errors wrap ErrScenario, and a scenario it accepts survives Marshal and
// LoadScenario unchanged.
func FuzzLoadScenario(f *testing.F) {
	for _, n := range EmbeddedNames() {
		src, err := EmbeddedSource(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, s := range []string{minimal, "", "{}", "duration: 5m\nzones: [{name: a, nodes: 1}]\nevents: [{at: 1m, action: stop, zone: a, count: 1}]\n",
		"a: &x {b: *x}\n", "duration: 1m\nzones: [{name: \"on\", region: off, nodes: 1}]\n", "duration: 1m\npolicy: {fullDisruptionQPS: null}\nzones: [{name: a, nodes: 2, pods: [{perNode: 1, tolerations: [{operator: Exists}]}]}]\n",
		gpuZone + "events: [{at: 1m, action: device-taint, driver: gpu.example.com, share: 0.5, over: 10s, every: 1s, taint: {key: k, value: \"v\"}}, {at: 2m, action: device-rule, rule: r, selector: {}, taint: {key: k, effect: None}}]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		sc, err := LoadScenario("f.yaml", src)
		if err != nil {
			if !errors.Is(err, ErrScenario) {
				t.Fatalf("LoadScenario = %v, want an error wrapping ErrScenario", err)
			}
			return
		}
		b, err := sc.Marshal()
		if err != nil {
			t.Fatalf("Marshal = %v", err)
		}
		again, err := LoadScenario("f.yaml", b)
		if err != nil {
			t.Fatalf("LoadScenario(Marshal()) = %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again, sc) {
			t.Fatalf("round trip = %+v, want %+v", again, sc)
		}
	})
}
