package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func load(t testing.TB, src string) *Scenario {
	t.Helper()
	sc, err := LoadScenario("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("LoadScenario = %v", err)
	}
	return sc
}

// mixed exercises what the embedded scenarios do not: a kubelet reporting
// Ready=False, events between ticks (12.34s), pods without tolerations,
// pods tolerating forever without being DaemonSet pods, a resumed node
// whose pods are not ready yet, and a zone going partial with a small
// zone (rate 0).
const mixed = `name: mixed
duration: 9m
kubelet: {leaseRenewInterval: 7s, statusUpdateInterval: 33s, podReadyDelay: 3s}
zones:
  - name: a
    nodes: 6
    pods:
      - {name: web, perNode: 3}
      - {name: bare, perNode: 1, admissionDefaults: false}
      - name: forever
        perNode: 1
        tolerations: [{operator: Exists}]
  - name: b
    nodes: 4
    podsPerNode: 2
events:
  - {at: 0s, action: not-ready, node: b-3}
  - {at: 1m, action: resume, node: b-3}
  - {at: 12.34s, action: not-ready, node: a-1}
  - {at: 30s, action: stop, node: a-1}
  - {at: 1m0.05s, action: stop, nodes: [a-2, a-3]}
  - {at: 2m, action: stop, zone: b, count: 3}
  - {at: 4m17.5s, action: resume, zone: b}
  - {at: 7m, action: resume, node: a-2}
`

// offGrid puts the Monitor's deadlines off the 5s monitor grid: a 4.3s
// monitor period, a tainting rate of 0.3 nodes/s (a token every 3.33s) and
// tolerations of 7s and 13s, so the taint and eviction passes must run at
// ticks of their own.
const offGrid = `name: off-grid
duration: 3m
policy: {nodeMonitorPeriod: 4.3s, nodeMonitorGracePeriod: 20s, nodeEvictionRate: 0.3, unhealthyZoneThreshold: 1}
kubelet: {leaseRenewInterval: 3.7s, statusUpdateInterval: 11s, podReadyDelay: 1.3s}
zones:
  - name: a
    nodes: 12
    pods:
      - {name: p7, perNode: 1, tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 7}]}
      - {name: p13, perNode: 1, tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 13}]}
      - {name: bare, perNode: 1, admissionDefaults: false}
events:
  - {at: 1.05s, action: stop, zone: a, count: 10}
  - {at: 1m30s, action: resume, zone: a, count: 5}
`

// TestDeterministic: two runs of a scenario give the same timeline and
// summary.
func TestDeterministic(t *testing.T) {
	for _, sc := range []*Scenario{load(t, mixed), loadEmbedded(t, "zone-partial")} {
		a, b := mustRun(t, sc, Options{}), mustRun(t, sc, Options{})
		if !reflect.DeepEqual(a.Entries, b.Entries) || !reflect.DeepEqual(a.Summary, b.Summary) {
			t.Errorf("%s: two runs differ", sc.Name)
		}
	}
}

func loadEmbedded(t testing.TB, name string) *Scenario {
	t.Helper()
	sc, err := LoadEmbedded(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestSkippingEqualsTicking: running the taint and eviction passes only
// when the Monitor has work gives exactly the timeline of running them
// every 100ms, in both eviction modes.
func TestSkippingEqualsTicking(t *testing.T) {
	for _, sc := range []*Scenario{load(t, offGrid), load(t, mixed), loadEmbedded(t, "offline-node-1.2x"), loadEmbedded(t, "flapping-node"),
		loadEmbedded(t, "zone-dark"), loadEmbedded(t, "all-dark")} {
		for _, timeout := range []time.Duration{0, 2 * time.Minute} {
			skip := mustRun(t, sc, Options{PodEvictionTimeout: timeout})
			tick := mustRun(t, sc, Options{PodEvictionTimeout: timeout, Tick: true})
			if !reflect.DeepEqual(skip.Entries, tick.Entries) {
				t.Errorf("%s (timeout %v): skipping gives %d entries, ticking %d; first difference: %s",
					sc.Name, timeout, len(skip.Entries), len(tick.Entries), firstDiff(skip.Entries, tick.Entries))
			}
			if want := int(sc.Duration.D()/(100*time.Millisecond)) + 1; tick.TaintPasses != want || skip.TaintPasses >= want/10 {
				t.Errorf("%s: taint passes %d ticking (want %d), %d skipping (want < %d)", sc.Name, tick.TaintPasses, want, skip.TaintPasses, want/10)
			}
		}
	}
}

func firstDiff(a, b []Entry) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%+v vs %+v", a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// TestMixedScenario checks the behaviours mixed exercises.
func TestMixedScenario(t *testing.T) {
	res := mustRun(t, load(t, mixed), Options{})
	notReady := 12340 * time.Millisecond
	verify(t, []check{
		// Ready=False from the kubelet: seen at the next monitor pass (15s),
		// not-ready taints; the untolerating pod goes at once; the
		// controller does not mark pods (the kubelet manages them).
		{"node-not-ready", instants(find(res, "node-not-ready", "a-1", "")), []time.Duration{15 * sec}},
		{"NoSchedule not-ready", first(res, "taint-added", "a-1", "node.kubernetes.io/not-ready:NoSchedule"), notReady},
		{"NoExecute not-ready", first(res, "taint-added", "a-1", notReadyNoExecute), 15 * sec},
		{"bare pod evicted", first(res, "pod-evicted", "a-1", "NotTolerated (attempt 1)"), 15 * sec},
		// Silent from 30s: its last Lease renewal (26.34s: every 7s from its
		// restart at 12.34s) is seen by the pass at 30s, so it is stale
		// after 1m20s: Unknown at 1m25s, the taint swapped at once.
		{"Unknown", first(res, "node-unknown", "a-1", ""), 85 * sec},
		{"swap", first(res, "taint-removed", "a-1", notReadyNoExecute), 85 * sec},
		{"swap adds", first(res, "taint-added", "a-1", unreachableNoExecute), 85 * sec},
		// a-2 and a-3 go Unknown together; the zone queue taints them 10s
		// apart.
		{"a-2, a-3 tainted", instants(find(res, "taint-added", "", unreachableNoExecute)), []time.Duration{85 * sec, 115 * sec, 125 * sec}},
		{"no pods-not-ready for a-1", len(find(res, "pods-not-ready", "a-1", "")), 0},
		// Under RescheduleNever the web pods keep the fire time set by the
		// not-ready taint: 15s + 300s.
		{"web pods evicted", instants(find(res, "pod-evicted", "a-1", "TolerationExpired (attempt 1)")), []time.Duration{315 * sec}},
		{"forever pods kept", slices.ContainsFunc(res.Entries, func(e Entry) bool { return e.Kind == "pod-evicted" && strings.Contains(e.Pod, "forever") }), false},
		// Zone b: 3 of 4 not ready is PartialDisruption; 4 nodes are not
		// more than 50, so its rate is 0: nothing is tainted (b-3 was, at 0s).
		// b-3 reports Ready=False before the first monitor pass: its
		// NoSchedule taint (written from the node update event, before the
		// Monitor knows the node's zone) is in zone b. It is tainted and
		// comes back before its pods' 300s run out.
		{"b-3 taint zone", find(res, "taint-added", "b-3", "node.kubernetes.io/not-ready:NoSchedule")[0].Zone, "b"},
		{"b-3 not-ready", first(res, "node-not-ready", "b-3", ""), time.Duration(0)},
		{"b-3 tainted", first(res, "taint-added", "b-3", notReadyNoExecute), time.Duration(0)},
		{"b-3 untainted", first(res, "taint-removed", "b-3", notReadyNoExecute), 60 * sec},
		{"b-3 evictions", len(find(res, "pod-evicted", "b-3", "")), 0},
		{"zone b states", res.Summary.Zones[1].States, []StateChange{{0, "Normal", 0.1}, {175 * sec, "PartialDisruption", 0}, {260 * sec, "Normal", 0.1}}},
		{"zone b taints", instants(find(res, "taint-added", "", notReadyNoExecute)), []time.Duration{0, 15 * sec}}, // b-3, a-1
		{"ready again", instants(find(res, "node-ready", "", "")), []time.Duration{60 * sec, 260 * sec, 420 * sec}},
		{"pods marked not ready", res.Summary.PodsMarkedNotReady, 16},
		// Zone b's 6 pods (3s after their kubelets resumed) and the one
		// pod a-2 has left (the forever one).
		{"pods ready again", res.Summary.PodsReadyAgain, 6 + 1},
	})
}

// TestLegacyMode: the pre-1.27 mode puts no NoExecute taint; a node's pods
// are deleted once it has been silent for pod-eviction-timeout (counted from
// its last heartbeat) and its zone queue lets it through; tolerations do not
// matter, DaemonSet pods stay.
func TestLegacyMode(t *testing.T) {
	sc := loadEmbedded(t, "offline-node-1.2x")
	taint := mustRun(t, sc, Options{})
	legacy := mustRun(t, sc, Options{PodEvictionTimeout: 5 * time.Minute})
	verify(t, []check{
		{"legacy mode", legacy.Summary.Mode, "legacy"},
		{"legacy NoExecute taints", len(find(legacy, "taint-added", "", unreachableNoExecute)), 0},
		{"legacy node-evicting", instants(find(legacy, "node-evicting", "zone-a-0", "")), []time.Duration{305 * sec}},
		{"legacy evictions", instants(find(legacy, "pod-evicted", "", "legacy node eviction")), []time.Duration{305 * sec}},
		{"legacy pods evicted", legacy.Summary.PodsEvicted, 10},
		{"taint evictions", instants(find(taint, "pod-evicted", "", "")), []time.Duration{345 * sec}},
		{"legacy slowest", strings.HasPrefix(legacy.Summary.Zones[0].Slowest.Constraint, "legacy node eviction: pod-eviction-timeout 5m0s after the node's last heartbeat"), true},
	})
	// Pods tolerating forever: kept by taint eviction, deleted by legacy.
	res := mustRun(t, load(t, mixed), Options{PodEvictionTimeout: time.Minute})
	if !slices.ContainsFunc(res.Entries, func(e Entry) bool { return e.Kind == "pod-evicted" && strings.Contains(e.Pod, "forever") }) {
		t.Errorf("legacy mode kept the pods tolerating forever, want them deleted")
	}
}

// backNotReady: a-0's kubelet stops at 0s and comes back at 2m reporting
// Ready=False, posting status every 10s.
const backNotReady = `name: back-not-ready
duration: 6m
kubelet: {leaseRenewInterval: 10s, statusUpdateInterval: 10s, podReadyDelay: 5s}
zones: [{name: a, nodes: 4, podsPerNode: 2}]
events:
  - {at: 0s, action: stop, node: a-0}
  - {at: 2m, action: not-ready, node: a-0}
`

// TestKubeletBackNotReady: Unknown and tainted unreachable at 55s; the
// kubelet back at 2m reporting Ready=False swaps the taint to not-ready at
// once (upstream processTaintBaseEviction in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go swaps the
// taints with controller.SwapNodeControllerTaint) and leaves its pods not
// ready; under RescheduleNever the eviction scheduled under the unreachable
// taint (55s + 300s) stands (kubernetes/kubernetes#102993). In legacy mode the timeout of a Ready=False node counts from
// its Ready transition (2m), not from its last heartbeat (0s), however
// often the kubelet posts the same False status: queued and evicted at
// 2m + 2m, at the next monitor pass.
func TestKubeletBackNotReady(t *testing.T) {
	sc := load(t, backNotReady)
	res := mustRun(t, sc, Options{})
	verify(t, []check{
		{"Unknown", first(res, "node-unknown", "a-0", ""), 55 * sec},
		{"not-ready", first(res, "node-not-ready", "a-0", ""), 120 * sec},
		{"unreachable taint", instants(find(res, "taint-added", "a-0", unreachableNoExecute)), []time.Duration{55 * sec}},
		{"swap adds not-ready", instants(find(res, "taint-added", "a-0", notReadyNoExecute)), []time.Duration{120 * sec}},
		{"swap removes unreachable", instants(find(res, "taint-removed", "a-0", unreachableNoExecute)), []time.Duration{120 * sec}},
		{"evictions", instants(find(res, "pod-evicted", "", "")), []time.Duration{355 * sec}},
		{"pods ready again", res.Summary.PodsReadyAgain, 0},
		{"slowest", strings.Contains(res.Summary.Zones[0].Slowest.Constraint, "#102993"), true},
	})
	legacy := mustRun(t, sc, Options{PodEvictionTimeout: 2 * time.Minute})
	verify(t, []check{
		{"legacy node-evicting", instants(find(legacy, "node-evicting", "a-0", "")), []time.Duration{245 * sec}},
		{"legacy evictions", instants(find(legacy, "pod-evicted", "", "legacy node eviction")), []time.Duration{245 * sec}},
		{"legacy pods evicted", legacy.Summary.PodsEvicted, 2},
		{"legacy slowest", strings.HasPrefix(legacy.Summary.Zones[0].Slowest.Constraint,
			"legacy node eviction: pod-eviction-timeout 2m0s after the node's Ready=False transition"), true},
	})
}

// TestEventAtTheEnd: an event at exactly the run's duration is valid and
// applied (the last instant simulated).
func TestEventAtTheEnd(t *testing.T) {
	res := mustRun(t, load(t, minimal+"events: [{at: 5m, action: stop, node: a-2}]\n"), Options{})
	if got := instants(find(res, KindKubeletStopped, "a-2", "")); !slices.Equal(got, []time.Duration{5 * time.Minute}) {
		t.Errorf("kubelet-stopped at %v, want [5m0s]", got)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	if _, err := RunOptions(context.Background(), load(t, minimal), Options{PodEvictionTimeout: -time.Second}); err == nil {
		t.Errorf("Run(PodEvictionTimeout -1s) = nil error, want an error")
	}
	sc := load(t, minimal)
	sc.Events = append(sc.Events, Event{At: Duration(time.Minute), Action: ActionStop, Node: "b-0"})
	if _, err := RunOptions(context.Background(), sc, Options{}); !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), `events[0].node: unknown node "b-0"`) {
		t.Errorf("Run(event on an unknown node) = %v, want ErrScenario naming the field", err)
	}
	if _, err := RunOptions(context.Background(), nil, Options{}); !errors.Is(err, ErrScenario) {
		t.Errorf("Run(nil) = %v, want ErrScenario", err)
	}
}

// TestShortcutsEqualPlain: every embedded scenario gives the same report
// (text timeline, summary, JSON) with the simulator's shortcuts
// (monitortest.Cluster.ReuseEventPods) as without them, in both eviction
// modes; gke-65k at a hundredth of its size. So do mixed and off-grid,
// and the scenarios whose kubelets put back what the controller wrote
// (reacting: nodes written Unknown while their kubelets run, pods marked
// again; quickResume: pods Ready before the controller's pass has seen
// their node back; lease-watch-stall without the circuit breaker).
func TestShortcutsEqualPlain(t *testing.T) {
	stallOff, err := loadEmbedded(t, "lease-watch-stall").With("nodeControllerLeaseCircuitBreaker", "false")
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]*Scenario{"mixed": load(t, mixed), "off-grid": load(t, offGrid), "reacting": load(t, reacting),
		"quick-resume": load(t, quickResume), "lease-watch-stall, breaker off": stallOff}
	for _, name := range append(EmbeddedNames(), "mixed", "off-grid", "reacting", "quick-resume", "lease-watch-stall, breaker off") {
		sc := extra[name]
		switch name {
		case "gke-65k":
			sc = scaledEmbedded(t, name, 130)
		case "large-cluster":
			// The same story at a fifth of its size: at 1,000 nodes a
			// zone its four runs take over a minute under -race.
			sc = scaledEmbedded(t, name, 200)
		default:
			if sc == nil {
				sc = loadEmbedded(t, name)
			}
		}
		for _, timeout := range []time.Duration{0, 2 * time.Minute} {
			fast := mustRun(t, sc, Options{PodEvictionTimeout: timeout})
			plain := mustRun(t, sc, Options{PodEvictionTimeout: timeout, plain: true})
			if !reflect.DeepEqual(fast.Entries, plain.Entries) {
				t.Errorf("%s (timeout %v): %d entries with the shortcuts, %d without; first difference: %s",
					name, timeout, len(fast.Entries), len(plain.Entries), firstDiff(fast.Entries, plain.Entries))
			}
			for _, format := range []string{"text", "json"} {
				if f, p := report(t, fast, format), report(t, plain, format); f != p {
					t.Errorf("%s (timeout %v): the %s reports differ:\n%s\nwithout the shortcuts:\n%s", name, timeout, format, f, p)
				}
			}
		}
	}
}

// report renders res as the command does (the JSON without its elapsed
// time, which is the only part that may differ).
func report(t *testing.T, res *Result, format string) string {
	t.Helper()
	var b strings.Builder
	var err error
	if format == "json" {
		err = WriteJSON(&b, res, 0)
	} else {
		err = WriteText(&b, res, false)
	}
	if err != nil {
		t.Fatalf("%s report: %v", format, err)
	}
	return b.String()
}

// TestEndIsDuration: a run ends at its duration even when nothing happens
// at that instant (no pass, no heartbeat: a 7s monitor period over 10m),
// so its End and its pending projection are the same with the shortcuts,
// which leave out heartbeats, as without them.
func TestEndIsDuration(t *testing.T) {
	sc, err := LoadScenario("end.yaml", []byte(`
name: end
duration: 10m
policy: {nodeMonitorPeriod: 7s}
kubelet: {leaseRenewInterval: 10s, statusUpdateInterval: 7m}
zones: [{name: a, nodes: 2, podsPerNode: 1}, {name: b, nodes: 2, podsPerNode: 1}]
events:
  - {at: 1m, action: not-ready, zone: b}
  - {at: 5m, action: zone-dark, zone: a}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, timeout := range []time.Duration{0, 2 * time.Minute} {
		fast := mustRun(t, sc, Options{PodEvictionTimeout: timeout})
		plain := mustRun(t, sc, Options{PodEvictionTimeout: timeout, plain: true})
		for _, res := range []*Result{fast, plain} {
			if res.End != 10*time.Minute {
				t.Errorf("timeout %v: End = %v, want the duration 10m", timeout, res.End)
			}
		}
		for _, format := range []string{"text", "json"} {
			if f, p := report(t, fast, format), report(t, plain, format); f != p {
				t.Errorf("timeout %v: the %s reports differ:\n%s\nwithout the shortcuts:\n%s", timeout, format, f, p)
			}
		}
	}
}
