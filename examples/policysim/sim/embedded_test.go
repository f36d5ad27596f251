package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	unreachableNoExecute = "node.kubernetes.io/unreachable:NoExecute"
	notReadyNoExecute    = "node.kubernetes.io/not-ready:NoExecute"
)

// runEmbedded loads and runs an embedded scenario.
func runEmbedded(t testing.TB, name string, opt Options) *Result {
	t.Helper()
	sc, err := LoadEmbedded(name)
	if err != nil {
		t.Fatalf("LoadEmbedded(%q) = %v", name, err)
	}
	return mustRun(t, sc, opt)
}

func mustRun(t testing.TB, sc *Scenario, opt Options) *Result {
	t.Helper()
	res, err := RunOptions(context.Background(), sc, opt)
	if err != nil {
		t.Fatalf("Run(%s, %+v) = %v", sc.Name, opt, err)
	}
	return res
}

// find returns the entries of kind matching node (any when "") and detail
// (any when "").
func find(res *Result, kind Kind, node, detail string) []Entry {
	var out []Entry
	for _, e := range res.Entries {
		if e.Kind == kind && (node == "" || e.Node == node) && (detail == "" || e.Detail == detail) {
			out = append(out, e)
		}
	}
	return out
}

// instants returns the distinct instants of entries, in order.
func instants(es []Entry) []time.Duration {
	var out []time.Duration
	for _, e := range es {
		if len(out) == 0 || out[len(out)-1] != e.At {
			out = append(out, e.At)
		}
	}
	return out
}

func first(res *Result, kind Kind, node, detail string) time.Duration {
	if es := find(res, kind, node, detail); len(es) > 0 {
		return es[0].At
	}
	return -1
}

// step returns from, from+every, ... (n values).
func step(from, every time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = from + time.Duration(i)*every
	}
	return out
}

type check struct {
	name      string
	got, want any
}

func verify(t *testing.T, checks []check) {
	t.Helper()
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

const sec = time.Second

func TestEmbeddedScenariosLoad(t *testing.T) {
	names := EmbeddedNames()
	if want := scenarioOrder; !slices.Equal(names, want) {
		t.Errorf("EmbeddedNames() = %v, want %v", names, want)
	}
	for _, n := range names {
		sc, err := LoadEmbedded(n)
		if err != nil {
			t.Errorf("LoadEmbedded(%q) = %v", n, err)
			continue
		}
		if sc.Name != n || sc.Description == "" || strings.Contains(sc.Description, "\n") {
			t.Errorf("LoadEmbedded(%q): name %q, description %q; want the file name and one line", n, sc.Name, sc.Description)
		}
	}
	if _, err := LoadEmbedded("nope"); err == nil || !strings.Contains(err.Error(), "offline-node-1.2x") {
		t.Errorf("LoadEmbedded(nope) = %v, want an error listing the scenarios", err)
	}
}

// TestOfflineNode is the offline-node-1.2x scenario: 1.2x-era defaults,
// the kubelet's last status and Lease at t=0. The node is Unknown at the
// first monitor pass after 40s (45s), tainted at once, and its pods are
// evicted 300s after the taint: 5m45s in all. The DaemonSet pod stays.
func TestOfflineNode(t *testing.T) {
	res := runEmbedded(t, "offline-node-1.2x", Options{})
	z := res.Summary.Zones[0]
	verify(t, []check{
		{"node-unknown", instants(find(res, "node-unknown", "", "")), []time.Duration{45 * sec}},
		{"NoExecute taint", instants(find(res, "taint-added", "zone-a-0", unreachableNoExecute)), []time.Duration{45 * sec}},
		{"pods-not-ready", first(res, "pods-not-ready", "zone-a-0", "11 pods marked Ready=False"), 45 * sec},
		{"evictions", instants(find(res, "pod-evicted", "", "")), []time.Duration{5*time.Minute + 45*sec}},
		{"pods evicted", len(find(res, "pod-evicted", "zone-a-0", "")), 10},
		{"DaemonSet pod evicted", len(find(res, "pod-evicted", "", "")) - len(find(res, "pod-evicted", "zone-a-0", "")), 0},
		{"summary first eviction", *z.FirstEviction, 345 * sec},
		{"summary pods evicted", res.Summary.PodsEvicted, 10},
		{"slowest toleration", z.Slowest.Toleration, "node.kubernetes.io/unreachable Exists NoExecute 300s"},
		{"slowest taint", z.Slowest.Taint, unreachableNoExecute},
		{"slowest countdown", *z.Slowest.CountdownStart, 45 * sec},
		{"other nodes", len(find(res, "node-unknown", "", "")), 1},
	})
	for _, e := range find(res, "pod-evicted", "", "") {
		if strings.Contains(e.Pod, "-logs-") {
			t.Errorf("DaemonSet pod %s evicted", e.Pod)
		}
	}
}

// TestOfflineNodeToday: today's defaults (grace 50s): Unknown and tainted at
// 55s, evicted at 5m55s.
func TestOfflineNodeToday(t *testing.T) {
	res := runEmbedded(t, "offline-node", Options{})
	verify(t, []check{
		{"node-unknown", instants(find(res, "node-unknown", "", "")), []time.Duration{55 * sec}},
		{"NoExecute taint", instants(find(res, "taint-added", "", unreachableNoExecute)), []time.Duration{55 * sec}},
		{"evictions", instants(find(res, "pod-evicted", "", "")), []time.Duration{5*time.Minute + 55*sec}},
		{"pods evicted", res.Summary.PodsEvicted, 10},
	})
}

// TestZonePartial: 60 of 100 nodes stop at 1m (last beat at 1m): Unknown at
// 1m55s, the zone is PartialDisruption at 0.01 nodes/s (it is larger than
// 50), so nodes are tainted 100s apart, the first at once (the bucket is
// full); their pods go 300s later. The other zones stay untouched.
func TestZonePartial(t *testing.T) {
	res := runEmbedded(t, "zone-partial", Options{})
	a := res.Summary.Zones[0]
	taints := find(res, "taint-added", "", unreachableNoExecute)
	var nodes []string
	for _, e := range taints {
		nodes = append(nodes, e.Node)
	}
	verify(t, []check{
		{"Unknown", instants(find(res, "node-unknown", "", "")), []time.Duration{115 * sec}},
		{"nodes Unknown", a.NodesUnknown, 60},
		{"zone states", a.States, []StateChange{{0, "Normal", 0.1}, {115 * sec, "PartialDisruption", 0.01}}},
		{"taint times", instants(taints), step(115*sec, 100*sec, 11)},
		{"tainted nodes (FIFO by name)", nodes, []string{"zone-a-00", "zone-a-01", "zone-a-02", "zone-a-03", "zone-a-04", "zone-a-05", "zone-a-06", "zone-a-07", "zone-a-08", "zone-a-09", "zone-a-10"}},
		{"eviction times", instants(find(res, "pod-evicted", "", "")), step(415*sec, 100*sec, 8)},
		{"pods evicted", a.PodsEvicted, 80},
		{"pods marked not ready", res.Summary.PodsMarkedNotReady, 600},
		{"zone-b untouched", len(res.Summary.Zones[1].States) == 1 && res.Summary.Zones[1].NodesUnknown == 0, true},
		{"zone-c untouched", len(res.Summary.Zones[2].States) == 1 && res.Summary.Zones[2].PodsEvicted == 0, true},
		{"slowest zone rate", *a.Slowest.ZoneRate, 0.01},
	})
}

// TestZoneDark: a whole zone dark among healthy ones is FullDisruption but,
// as upstream, tainted at the normal rate: one node every 10s.
func TestZoneDark(t *testing.T) {
	res := runEmbedded(t, "zone-dark", Options{})
	a := res.Summary.Zones[0]
	verify(t, []check{
		{"zone states", a.States, []StateChange{{0, "Normal", 0.1}, {115 * sec, "FullDisruption", 0.1}}},
		{"taint times", instants(find(res, "taint-added", "", unreachableNoExecute)), step(115*sec, 10*sec, 20)},
		{"eviction times", instants(find(res, "pod-evicted", "", "")), step(415*sec, 10*sec, 20)},
		{"pods evicted", a.PodsEvicted, 200},
		{"full disruption mode", len(res.Summary.FullDisruption), 0},
		{"healthy zones", res.Summary.Zones[1].FinalState + res.Summary.Zones[2].FinalState, "NormalNormal"},
	})
}

// TestZoneDarkPaused: the same with fullDisruptionQPS 0 (opt-in): the dark
// zone is not tainted at all.
func TestZoneDarkPaused(t *testing.T) {
	sc, err := LoadEmbedded("zone-dark")
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	sc.Policy.FullDisruptionQPS = &zero
	res := mustRun(t, sc, Options{})
	verify(t, []check{
		{"zone states", res.Summary.Zones[0].States, []StateChange{{0, "Normal", 0.1}, {115 * sec, "FullDisruption", 0}}},
		{"taints", len(find(res, "taint-added", "", unreachableNoExecute)), 0},
		{"pods evicted", res.Summary.PodsEvicted, 0},
	})
}

// TestAllDark: every zone dark is full disruption mode: no NoExecute taint
// and no eviction, though pods are marked not ready; leaving the mode when
// the kubelets are back evicts nothing either.
func TestAllDark(t *testing.T) {
	res := runEmbedded(t, "all-dark", Options{})
	verify(t, []check{
		{"disruption-mode", instants(find(res, "disruption-mode", "", "")), []time.Duration{115 * sec, 8 * time.Minute}},
		{"summary spans", fmt.Sprint(res.Summary.FullDisruption[0].From, " ", *res.Summary.FullDisruption[0].To), "1m55s 8m0s"},
		{"NoExecute taints", len(find(res, "taint-added", "", unreachableNoExecute)), 0},
		{"pods evicted", res.Summary.PodsEvicted, 0},
		{"pods marked not ready", res.Summary.PodsMarkedNotReady, 300},
		{"zone-a states", res.Summary.Zones[0].States, []StateChange{{0, "Normal", 0.1}, {115 * sec, "FullDisruption", 0}, {480 * sec, "Normal", 0.1}}},
		{"nodes ready again", len(find(res, "node-ready", "", "")), 30},
	})
}

// TestFlappingNode: every outage longer than the grace period turns the node
// Unknown and tainted, every recovery removes the taint and cancels the
// pending evictions, so the 300s countdown restarts and the web pods
// survive; the 60s pods go in the first outage; the 30s blip is absorbed.
// The kubelet reports its pods Ready again after each recovery, so each
// outage marks them not ready anew.
func TestFlappingNode(t *testing.T) {
	res := runEmbedded(t, "flapping-node", Options{})
	verify(t, []check{
		{"Unknown", instants(find(res, "node-unknown", "zone-a-0", "")), []time.Duration{55 * sec, 235 * sec, 415 * sec}},
		{"tainted", instants(find(res, "taint-added", "zone-a-0", unreachableNoExecute)), []time.Duration{55 * sec, 235 * sec, 415 * sec}},
		{"taint removed", instants(find(res, "taint-removed", "zone-a-0", unreachableNoExecute)), []time.Duration{120 * sec, 300 * sec, 480 * sec}},
		{"ready again", instants(find(res, "node-ready", "zone-a-0", "")), []time.Duration{120 * sec, 300 * sec, 480 * sec}},
		{"pods-not-ready", find(res, "pods-not-ready", "zone-a-0", ""), []Entry{
			{At: 55 * sec, Kind: "pods-not-ready", Node: "zone-a-0", Zone: "zone-a", Detail: "12 pods marked Ready=False"},
			{At: 235 * sec, Kind: "pods-not-ready", Node: "zone-a-0", Zone: "zone-a", Detail: "10 pods marked Ready=False"},
			{At: 415 * sec, Kind: "pods-not-ready", Node: "zone-a-0", Zone: "zone-a", Detail: "10 pods marked Ready=False"}}},
		{"evicted", instants(find(res, "pod-evicted", "", "")), []time.Duration{115 * sec}},
		{"pods evicted", res.Summary.PodsEvicted, 2},
		{"web pods evicted", slices.ContainsFunc(find(res, "pod-evicted", "", ""), func(e Entry) bool { return strings.Contains(e.Pod, "-web-") }), false},
		{"times Unknown", res.Summary.Zones[0].TimesUnknown, 3},
		{"first and last Unknown", fmt.Sprint(*res.Summary.Zones[0].FirstUnknown, " ", *res.Summary.Zones[0].LastUnknown), "55s 6m55s"},
		{"first and last taint", fmt.Sprint(*res.Summary.Zones[0].FirstTaint, " ", *res.Summary.Zones[0].LastTaint), "55s 6m55s"},
	})
}

// TestLargeClusterScenario checks the scale scenario's shape; running it is
// the benchmark's job (BenchmarkRun checks its numbers).
func TestLargeClusterScenario(t *testing.T) {
	sc, err := LoadEmbedded("large-cluster")
	if err != nil {
		t.Fatal(err)
	}
	nodes, pods := 0, 0
	for _, z := range sc.Zones {
		nodes += z.Nodes
		pods += z.Nodes * z.PodsPerNode
	}
	verify(t, []check{{"nodes", nodes, 5000}, {"pods", pods, 150000}, {"duration", sc.Duration.D(), time.Hour}})
}

// TestLargeClusterScaledDown runs the scale scenario's story at a tenth of
// its size (100 nodes per zone) and checks each zone's rule: zone-e dark
// (FullDisruption, tainted every 10s until it comes back at 40m), 60 of
// zone-d's nodes (PartialDisruption, every 100s), three nodes of zone-a
// (Normal, every 10s).
func TestLargeClusterScaledDown(t *testing.T) {
	res := mustRun(t, scaledLargeCluster(t, 100), Options{})
	sum := res.Summary
	a, d, e := sum.Zones[0], sum.Zones[3], sum.Zones[4]
	verify(t, []check{
		{"zone-a tainted", fmt.Sprint(*a.FirstTaint, " ", *a.LastTaint, " ", a.NodesTainted), "15m55s 16m15s 3"},
		{"zone-d states", d.States, []StateChange{{0, "Normal", 0.1}, {655 * sec, "PartialDisruption", 0.01}}},
		{"zone-d tainted", fmt.Sprint(*d.FirstTaint, " ", *d.LastTaint, " ", d.NodesTainted), "10m55s 59m15s 30"},
		{"zone-e states", e.States, []StateChange{{0, "Normal", 0.1}, {355 * sec, "FullDisruption", 0.1}, {2400 * sec, "Normal", 0.1}}},
		{"zone-e tainted", fmt.Sprint(*e.FirstTaint, " ", *e.LastTaint, " ", e.NodesTainted), "5m55s 22m25s 100"},
		{"zone-e evictions", fmt.Sprint(*e.FirstEviction, " ", *e.LastEviction, " ", e.PodsEvicted), "10m55s 27m25s 3000"},
		{"untouched", sum.Zones[1].PodsEvicted + sum.Zones[2].PodsEvicted + sum.Zones[1].NodesUnknown, 0},
	})
}

// scaledLargeCluster is the large-cluster scenario with perZone nodes per
// zone (its events scaled to match).
func scaledLargeCluster(t testing.TB, perZone int) *Scenario {
	return scaledEmbedded(t, "large-cluster", perZone)
}

// scaledEmbedded is an embedded scenario of equal zones (large-cluster,
// gke-65k) with perZone nodes per zone, its events scaled to match.
func scaledEmbedded(t testing.TB, name string, perZone int) *Scenario {
	sc, err := LoadEmbedded(name)
	if err != nil {
		t.Fatal(err)
	}
	full := sc.Zones[0].Nodes
	for i := range sc.Zones {
		sc.Zones[i].Nodes = perZone
	}
	for i := range sc.Events {
		ev := &sc.Events[i]
		ev.Count = ev.Count * perZone / full
		for j := range ev.Nodes {
			ev.Nodes[j] = NodeName("zone-a", j, perZone)
		}
	}
	return sc
}

// TestSummaryCountsMatchTimeline: the summary's counts are the timeline's.
func TestSummaryCountsMatchTimeline(t *testing.T) {
	for _, name := range []string{"offline-node-1.2x", "zone-partial", "flapping-node"} {
		res := runEmbedded(t, name, Options{})
		evicted := 0
		for _, z := range res.Summary.Zones {
			evicted += z.PodsEvicted
		}
		if n := len(find(res, KindPodEvicted, "", "")); n != res.Summary.PodsEvicted || evicted != n {
			t.Errorf("%s: %d pod-evicted entries, summary %d, zones %d", name, n, res.Summary.PodsEvicted, evicted)
		}
	}
}

// TestGKE65kScenario: the 65,000-node scenario parses and validates, costs
// what its comment says, is refused by the default budget naming the
// flags, and runs within the budget its comment gives. Running its hour
// takes seconds and about a gigabyte (README.md has the figures), so the
// story is checked on a copy at a hundredth of its size, where each zone's
// rule gives the same shape as the large-cluster scenario's.
func TestGKE65kScenario(t *testing.T) {
	sc := loadEmbedded(t, "gke-65k")
	nodes, pods := 0, 0
	for _, z := range sc.Zones {
		nodes += z.Nodes
		pods += z.Nodes * z.PodsPerNode
	}
	w := sc.Work()
	verify(t, []check{
		{"nodes", nodes, 65000}, {"pods", pods, 1950000}, {"duration", sc.Duration.D(), time.Hour},
		{"work", w, Budget{NodePasses: 65000 * (721 + 361 + 13), Pods: 1950000, EventSteps: (13000 + 7800 + 3 + 13000) * 31}},
	})
	if err := (Budget{}).check(sc); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "-max-node-passes") {
		t.Errorf("default budget check = %v, want ErrBudget naming -max-node-passes", err)
	}
	if err := (Budget{NodePasses: 72_000_000, Pods: 2_000_000, EventSteps: 1_100_000}).check(sc); err != nil {
		t.Errorf("budget check with the scenario's flags = %v, want nil", err)
	}

	res := mustRun(t, scaledEmbedded(t, "gke-65k", 130), Options{})
	sum := res.Summary
	a, d, e := sum.Zones[0], sum.Zones[3], sum.Zones[4]
	verify(t, []check{
		{"zone-a tainted", a.NodesTainted, 3},
		{"zone-d states", d.States, []StateChange{{0, "Normal", 0.1}, {655 * sec, "PartialDisruption", 0.01}}},
		{"zone-d tainted", fmt.Sprint(*d.FirstTaint, " ", *d.LastTaint, " ", d.NodesTainted), "10m55s 59m15s 30"},
		{"zone-e states", e.States, []StateChange{{0, "Normal", 0.1}, {355 * sec, "FullDisruption", 0.1}, {2400 * sec, "Normal", 0.1}}},
		{"zone-e tainted", fmt.Sprint(*e.FirstTaint, " ", *e.LastTaint, " ", e.NodesTainted), "5m55s 27m25s 130"},
		{"untouched", sum.Zones[1].PodsEvicted + sum.Zones[2].PodsEvicted + sum.Zones[1].NodesUnknown, 0},
	})
}
