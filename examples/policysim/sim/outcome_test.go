package sim_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
	"github.com/kubelifecycle/lifecycle/taints"
)

// zoneB is the Example's question cut off at end.
func zoneB(end time.Duration) *sim.Scenario {
	return sim.NewScenario("zone-b-40", end,
		sim.NewZone("a", 60, sim.NewPods("web", 10)),
		sim.NewZone("b", 60, sim.NewPods("web", 10), sim.NewDaemonSetPods("logs", 1)),
	).On(sim.Stop(time.Minute, "b", 24))
}

// secs returns *p, or -1 for nil.
func secs(p *time.Duration) time.Duration {
	if p == nil {
		return -1
	}
	return *p
}

// TestPendingWhenCutOff: a run that ends while nodes wait in the zone queue
// and evictions are scheduled says so, with the projection at the current
// rate.
func TestPendingWhenCutOff(t *testing.T) {
	res, err := sim.Run(context.Background(), zoneB(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Pending
	b := p.Zones[1]
	// Tainted every 10s from 1m55s: 13 by 4m (the last at 3m55s), 11 queued.
	if p.Done || b.NodesQueued != 11 || b.Evictions != 130 || b.Rate != 0.1 {
		t.Errorf("pending in zone b = %+v (done %v), want 11 nodes queued at 0.1/s and 130 evictions", b, p.Done)
	}
	// 11 nodes at 0.1/s, the next token at 4m05s: the last at 5m45s, as
	// the full run taints it (the end plus 11/0.1 would be 5m50s); their
	// pods 300s later.
	if got := secs(b.LastTaint); got != 5*time.Minute+45*time.Second {
		t.Errorf("projected last taint = %v, want 5m45s", got)
	}
	if got := secs(p.LastEviction); got != 10*time.Minute+45*time.Second {
		t.Errorf("projected last eviction = %v, want 10m45s", got)
	}
	if a := p.Zones[0]; a.NodesQueued != 0 || a.Evictions != 0 || a.LastEviction != nil {
		t.Errorf("pending in zone a = %+v, want nothing", a)
	}

	done, err := sim.Run(context.Background(), zoneB(12*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !done.Pending.Done || done.Pending.LastEviction != nil {
		t.Errorf("pending after a complete run = %+v, want done", done.Pending)
	}
}

// TestPodOutcomes: every pod's outcome, from the timeline and Explain.
func TestPodOutcomes(t *testing.T) {
	res, err := sim.Run(context.Background(), zoneB(12*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	pods := res.Pods()
	if len(pods) != res.Summary.Pods {
		t.Fatalf("Pods() = %d outcomes, want %d", len(pods), res.Summary.Pods)
	}
	byName := map[string]sim.PodOutcome{}
	evicted := 0
	for _, o := range pods {
		byName[o.Pod.Name] = o
		if o.Evicted {
			evicted++
		}
	}
	if evicted != res.Summary.PodsEvicted {
		t.Errorf("%d outcomes evicted, summary says %d", evicted, res.Summary.PodsEvicted)
	}
	tests := []struct {
		pod     string
		evicted time.Duration // -1: not evicted
		state   taints.EvictionState
		why     string
	}{
		{"b-00-web-0", 6*time.Minute + 55*time.Second, 0, ""},
		{"b-23-web-9", 10*time.Minute + 45*time.Second, 0, ""},
		{"b-00-logs-0", -1, taints.EvictionToleratedForever, "forever (toleration node.kubernetes.io/unreachable Exists NoExecute)"},
		{"b-24-web-0", -1, taints.EvictionNodeNotTainted, "no NoExecute taint"},
		{"a-00-web-0", -1, taints.EvictionNodeNotTainted, "no NoExecute taint"},
	}
	for _, tt := range tests {
		o, ok := byName[tt.pod]
		switch {
		case !ok:
			t.Errorf("no outcome for %s", tt.pod)
		case tt.evicted >= 0 && (!o.Evicted || o.EvictedAt != tt.evicted):
			t.Errorf("%s: evicted %v at %v, want evicted at %v", tt.pod, o.Evicted, o.EvictedAt, tt.evicted)
		case tt.evicted < 0 && (o.Evicted || o.Explanation.State != tt.state || !strings.Contains(o.Why(), tt.why)):
			t.Errorf("%s: evicted %v, state %v, why %q; want kept, %v, %q", tt.pod, o.Evicted, o.Explanation.State, o.Why(), tt.state, tt.why)
		}
	}
}

// TestRunStopsWithContext: a cancelled context stops the run.
func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sim.Run(ctx, zoneB(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled) = %v, want context.Canceled", err)
	}
}

// TestBuiltEqualsLoaded: a scenario built in Go is the one its YAML loads.
func TestBuiltEqualsLoaded(t *testing.T) {
	built := zoneB(4 * time.Minute)
	src, err := built.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := sim.LoadScenario("zone-b-40.yaml", src)
	if err != nil {
		t.Fatalf("LoadScenario(Marshal(built)) = %v\n%s", err, src)
	}
	a, _ := sim.Run(context.Background(), built)
	b, _ := sim.Run(context.Background(), loaded)
	if len(a.Entries) != len(b.Entries) || a.Summary.PodsEvicted != b.Summary.PodsEvicted {
		t.Errorf("built and loaded runs differ: %d vs %d entries", len(a.Entries), len(b.Entries))
	}
}

// TestSummaryExplainsKeptPods: the summary says why the pods of down nodes
// that are still there were not evicted, from Explain: a DaemonSet pod
// tolerates the taint forever.
func TestSummaryExplainsKeptPods(t *testing.T) {
	sc, err := sim.LoadEmbedded(sim.DefaultScenario)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Summary.Zones[0].NotEvicted
	if len(got) != 1 || got[0].Pods != 1 || !got[0].DaemonSet || !strings.Contains(got[0].Why, "tolerates node.kubernetes.io/unreachable:NoExecute forever") {
		t.Fatalf("NotEvicted = %+v, want the DaemonSet pod, tolerating the taint forever", got)
	}
	var buf strings.Builder
	if err := sim.WriteText(&buf, res, true); err != nil {
		t.Fatal(err)
	}
	if want := "not evicted            1 pod: it tolerates node.kubernetes.io/unreachable:NoExecute forever"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, buf.String())
	}
}

func TestRelease(t *testing.T) {
	res, err := sim.Run(context.Background(), zoneB(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pods()) == 0 {
		t.Fatal("Pods() empty before Release")
	}
	res.Release()
	if res.Pods() != nil || res.Summary.Pods == 0 || len(res.Entries) == 0 {
		t.Errorf("after Release: Pods %v, summary %d pods, %d entries; want nil and the rest kept", res.Pods(), res.Summary.Pods, len(res.Entries))
	}
}

// TestConstructorsEqualYAML: every event constructor gives the event its
// YAML form loads, and the embedded lease-watch-stall scenario is the same
// built in Go.
func TestConstructorsEqualYAML(t *testing.T) {
	built := sim.NewScenario("lease-watch-stall", 7*time.Minute, sim.NewZone("zone-a", 6, sim.NewPods("web", 3))).
		On(sim.StopNodes(0, "zone-a-0"), sim.LeaseWatchStall(10*time.Second), sim.LeaseWatchResume(70*time.Second))
	built.Kubelet.LeaseRenewInterval = sim.Duration(2 * time.Second)
	shipped, err := sim.LoadEmbedded("lease-watch-stall")
	if err != nil {
		t.Fatal(err)
	}
	shipped.Description = ""
	// The shipped file names one node with node:, the constructor with
	// nodes:; the same target.
	shipped.Events[0].Nodes, shipped.Events[0].Node = []string{shipped.Events[0].Node}, ""
	if !reflect.DeepEqual(built, shipped) {
		t.Errorf("built in Go:\n%+v\nshipped:\n%+v", built, shipped)
	}
	loaded, err := sim.LoadScenario("events.yaml", []byte(`duration: 10m
zones: [{name: a, nodes: 4}]
events:
  - {at: 1m, action: stop, zone: a, count: 2}
  - {at: 2m, action: stop, nodes: [a-3]}
  - {at: 3m, action: resume, zone: a, count: 1}
  - {at: 4m, action: not-ready, zone: a, count: 1}
  - {at: 5m, action: zone-dark, zone: a}
  - {at: 6m, action: zone-restore, zone: a}
  - {at: 7m, action: lease-watch-stall}
  - {at: 8m, action: lease-watch-resume}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Event{sim.Stop(time.Minute, "a", 2), sim.StopNodes(2*time.Minute, "a-3"), sim.Resume(3*time.Minute, "a", 1),
		sim.NotReady(4*time.Minute, "a", 1), sim.ZoneDark(5*time.Minute, "a"), sim.ZoneRestore(6*time.Minute, "a"),
		sim.LeaseWatchStall(7 * time.Minute), sim.LeaseWatchResume(8 * time.Minute)}
	if !reflect.DeepEqual(loaded.Events, want) {
		t.Errorf("loaded events %+v, constructors %+v", loaded.Events, want)
	}
}
