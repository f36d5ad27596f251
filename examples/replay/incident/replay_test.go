package incident

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// replayLog runs both passes over evs under pol (phase 0).
func replayLog(t *testing.T, evs []audit.Event, opt ReplayOptions) (*History, *Run, *Comparison) {
	t.Helper()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatalf("Inventory() error = %v", err)
	}
	if opt.Policy.NodeMonitorPeriod == 0 {
		opt.Policy = DefaultPolicy()
	}
	run, err := Replay(context.Background(), h, SliceSource(evs), opt)
	if err != nil {
		t.Fatalf("Replay() error = %v", err)
	}
	return h, run, Compare(h, run)
}

func policy(t *testing.T, flags ...string) Policy {
	t.Helper()
	p := DefaultPolicy()
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if err := p.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// outage is a node n1 of 3 stopping after +55s (last renewal +50.01s) and
// the recorded controller (v1.37.2 defaults, phase 1ms) writing what
// upstream writes: Unknown at +1m50s, its pods NotReady, the unreachable
// taints, the pods deleted 300s after the NoExecute taint.
func outage() *gen {
	return &gen{nodes: 3, podsPerNode: 2, duration: 8 * time.Minute, stop: "n1", stopAt: 55 * time.Second,
		unknownAt: 110 * time.Second, noExecAt: 110*time.Second + 100*time.Millisecond, evictAt: 410*time.Second + 100*time.Millisecond}
}

func TestInventory(t *testing.T) {
	h, err := Inventory(SliceSource(outage().build()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(h.Nodes), 3; got != want {
		t.Errorf("len(Nodes) = %d, want %d", got, want)
	}
	if got, want := len(h.Pods), 6; got != want {
		t.Errorf("len(Pods) = %d, want %d", got, want)
	}
	n := h.Node("n1")
	if n == nil || n.Zone != "zone-a" || !n.Existed() {
		t.Errorf("Node(n1) = %+v, want zone-a, existed before the log", n)
	}
	if p := h.Pod("default", "n1-web-0"); p == nil || p.Node != "n1" || p.Created.IsZero() {
		t.Errorf("Pod(default/n1-web-0) = %+v, want on n1, created in the log", p)
	}
	kinds := map[Kind]int{}
	for _, d := range h.Recorded {
		kinds[d.Kind]++
	}
	want := map[Kind]int{KindNodeUnknown: 1, KindPodNotReady: 2, KindTaintAdded: 2, KindPodEvicted: 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("recorded %s: %d, want %d (all: %v)", k, kinds[k], n, kinds)
		}
	}
	if len(kinds) != len(want) {
		t.Errorf("recorded kinds = %v, want %v", kinds, want)
	}
	for _, d := range h.Recorded {
		if d.Kind == KindPodEvicted && d.Node != "n1" {
			t.Errorf("recorded %v: node %q, want n1", d, d.Node)
		}
	}
}

func TestSelfReplay(t *testing.T) {
	for _, phase := range []time.Duration{0, time.Second, 2500 * time.Millisecond, 4999 * time.Millisecond} {
		_, run, c := replayLog(t, outage().build(), ReplayOptions{Phase: phase})
		if len(c.Missing) != 0 || len(c.Extra) != 0 {
			t.Errorf("phase %v: missing %v, extra %v, want none", phase, c.Missing, c.Extra)
		}
		if len(c.Matched) != 7 {
			t.Errorf("phase %v: %d matched, want 7", phase, len(c.Matched))
		}
		for _, m := range c.Matched {
			if d := m.Delta().Abs(); d > run.Policy.NodeMonitorPeriod {
				t.Errorf("phase %v: %s %s%s %s: replayed %v from the recording, want within %v", phase, m.Kind, m.Node, m.Pod, m.Detail, m.Delta(), run.Policy.NodeMonitorPeriod)
			}
		}
		if c.First != nil {
			t.Errorf("phase %v: first divergence %+v, want none", phase, *c.First)
		}
	}
}

func TestGracePeriodSaves(t *testing.T) {
	// n1 is silent for 50s (renewals +50.01s, then +100.01s); the recorded
	// controller (--node-monitor-grace-period=40s) evicted its pods.
	g := &gen{nodes: 3, podsPerNode: 2, duration: 4 * time.Minute, stop: "n1", stopAt: 55 * time.Second, resumeAt: 100 * time.Second,
		unknownAt: 95 * time.Second, noExecAt: 95*time.Second + 100*time.Millisecond, evictAt: 99 * time.Second}
	_, _, c := replayLog(t, g.build(), ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=60s")})
	if len(c.Saved) != 2 || len(c.NewlyLost) != 0 {
		t.Fatalf("saved %v, newly lost %v; want 2 saved, none lost", c.Saved, c.NewlyLost)
	}
	for _, s := range c.Saved {
		if want := "after a gap of 50s, within grace 1m0s"; !strings.Contains(s.Reason, want) {
			t.Errorf("saved %s: reason %q, want it to say %q", s.Pod, s.Reason, want)
		}
	}
}

// stall is policysim's lease-watch-stall scenario on a log: n0 stops at
// once, and the controller's Lease watch stalls from +10s to +70s while
// the 5 other kubelets renew.
func stallLog() []audit.Event {
	return (&gen{nodes: 6, podsPerNode: 3, duration: 7 * time.Minute, stop: "n0", stopAt: time.Second}).build()
}

func TestLeaseWatchStallBreaker(t *testing.T) {
	win := []Window{{From: epoch.Add(10 * time.Second), To: epoch.Add(70 * time.Second)}}
	tests := []struct {
		gate         string
		wantRenewing bool // renewing nodes written Unknown
	}{
		{"NodeControllerLeaseCircuitBreaker=true", false},
		{"NodeControllerLeaseCircuitBreaker=false", true},
	}
	for _, tt := range tests {
		_, run, c := replayLog(t, stallLog(), ReplayOptions{Policy: policy(t, "--feature-gates="+tt.gate), LeaseWatchStalls: win})
		renewing := 0
		for _, d := range run.Replayed {
			if d.Kind == KindNodeUnknown && d.Node != "n0" {
				renewing++
			}
		}
		if got := renewing > 0; got != tt.wantRenewing {
			t.Errorf("%s: %d renewing nodes written Unknown, want some: %v", tt.gate, renewing, tt.wantRenewing)
		}
		reposted := 0
		for _, n := range run.Notes {
			if n.Kind == NoteKubeletReposted {
				reposted++
			}
		}
		if got := reposted > 0; got != tt.wantRenewing {
			t.Errorf("%s: %d kubelet reposts modelled, want some: %v", tt.gate, reposted, tt.wantRenewing)
		}
		// The stopped node's pods go either way; no renewing node's pod does.
		for _, p := range c.NewlyLost {
			if !strings.HasPrefix(p.Pod, "default/n0-") {
				t.Errorf("%s: %s newly lost (%s), want only n0's pods", tt.gate, p.Pod, p.Reason)
			}
		}
		if len(c.NewlyLost) != 3 {
			t.Errorf("%s: %d pods newly lost, want n0's 3", tt.gate, len(c.NewlyLost))
		}
	}
}

func TestDoctorMetadataOnly(t *testing.T) {
	h, err := Inventory(SliceSource(shipped("Metadata").build()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := strings.Join(h.Doctor().Warnings(), "\n")
	for _, want := range []string{
		"kubelet Ready conditions: 4 status posts without a body",
		"pods and tolerations: 6 pods without tolerations in the log",
		"node writes without a body (level Metadata): their taints are unknown",
		"status writes without a body (level Metadata) are read as Ready=Unknown writes (inferred)",
		"pod status writes without a body",
		"nodes without a known zone",
	} {
		if !strings.Contains(ws, want) {
			t.Errorf("Doctor().Warnings() = %q, want one containing %q", ws, want)
		}
	}
	h, err = Inventory(SliceSource(shipped("Request").build()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ws := h.Doctor().Warnings(); len(ws) != 0 {
		t.Errorf("Doctor().Warnings() of a Request-level log = %q, want none", ws)
	}
	// A controller taint without timeAdded.
	g := outage()
	evs := g.build()
	for i := range evs {
		evs[i].RequestObject = []byte(strings.ReplaceAll(string(evs[i].RequestObject), `"timeAdded"`, `"timeAddedX"`))
	}
	h, err = Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ws := strings.Join(h.Doctor().Warnings(), "\n"); !strings.Contains(ws, "1 NoExecute taints without timeAdded") {
		t.Errorf("Doctor().Warnings() = %q, want the taint without timeAdded", ws)
	}
}

func TestNodeWatchStall(t *testing.T) {
	// Nodes without Leases in the log: only their status posts (every 20s)
	// keep them healthy. A Node watch stall from +30s to +2m hides them
	// from the controller's cache: without the circuit breaker it writes
	// both nodes Unknown; with it, the live reads find newer heartbeats
	// and it holds.
	g := &gen{nodes: 2, duration: 3 * time.Minute}
	for at := time.Duration(0); at <= g.duration; at += 20 * time.Second {
		for i := range 2 {
			n := g.nodeName(i)
			g.add(at+time.Duration(i)*time.Millisecond, "system:node:"+n, "patch", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status"},
				map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}, g.node(n, "True", at, nil))
		}
	}
	evs := g.events
	win := []Window{{From: epoch.Add(30 * time.Second), To: epoch.Add(2 * time.Minute)}}
	for _, tt := range []struct {
		gate        string
		stalls      []Window
		wantUnknown bool
	}{
		{"true", nil, false},
		{"false", nil, false},
		{"true", win, false},
		{"false", win, true},
	} {
		_, run, _ := replayLog(t, evs, ReplayOptions{Policy: policy(t, "--feature-gates=NodeControllerLeaseCircuitBreaker="+tt.gate), NodeWatchStalls: tt.stalls})
		unknown := false
		for _, d := range run.Replayed {
			unknown = unknown || (d.Kind == KindNodeUnknown && d.Node == "n0")
		}
		if unknown != tt.wantUnknown {
			t.Errorf("breaker %s, node watch stalls %v: n0 written Unknown: %v, want %v (%v)", tt.gate, tt.stalls, unknown, tt.wantUnknown, run.Replayed)
		}
		if tt.stalls != nil {
			var kinds []string
			for _, n := range run.Notes {
				kinds = append(kinds, n.Kind)
			}
			if !slices.Contains(kinds, NoteNodeStalled) || !slices.Contains(kinds, NoteNodeResumed) {
				t.Errorf("notes %v, want the stall and its end", kinds)
			}
		}
	}
}

func TestLifecycleInLog(t *testing.T) {
	// n3 is created at +30s and renews from then; a user deletes n1's pod
	// default/n1-web-1 at +20s (before n1 is lost); n2 is deleted at +1m.
	g := outage()
	g.stopAt = 55 * time.Second
	evs := g.build()
	var extra []audit.Event
	g2 := &gen{}
	g2.add(30*time.Second, "system:node:n3", "create", audit.ObjectRef{Resource: "nodes", Name: "n3"}, g2.node("n3", "", 0, nil), nil)
	for at := 30 * time.Second; at <= g.duration; at += 10 * time.Second {
		g2.add(at+5*time.Millisecond, "system:node:n3", "update", audit.ObjectRef{Resource: "leases", Namespace: "kube-node-lease", Name: "n3", APIGroup: "coordination.k8s.io"}, nil, nil)
		if at == 30*time.Second {
			g2.add(at+6*time.Millisecond, "system:node:n3", "patch", audit.ObjectRef{Resource: "nodes", Name: "n3", Subresource: "status"},
				map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}, nil)
		}
	}
	g2.add(20*time.Second, "alice", "delete", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: "n1-web-1"}, nil, nil)
	g2.add(60*time.Second, "alice", "delete", audit.ObjectRef{Resource: "nodes", Name: "n2"}, nil, nil)
	extra = g2.events
	evs = append(evs, extra...)
	slices.SortStableFunc(evs, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	h, run, c := replayLog(t, evs, ReplayOptions{})
	if n := h.Node("n3"); n == nil || n.Existed() {
		t.Errorf("Node(n3) = %+v, want created in the log", n)
	}
	for _, d := range run.Replayed {
		switch {
		case d.Pod == "default/n1-web-1":
			t.Errorf("replayed %v: the pod was deleted by alice before", d)
		case d.Node == "n3" && d.Kind == KindTaintRemoved && d.Detail == "node.kubernetes.io/not-ready:NoSchedule":
			// The NodeTaint admission plugin's taint of the new node,
			// removed once it is Ready.
		case d.Node == "n2" || d.Node == "n3":
			t.Errorf("replayed %v: n2 was deleted, n3 renews", d)
		}
	}
	// The recording (generated without alice) evicted n1-web-1 too: saved.
	if len(c.Saved) != 1 || c.Saved[0].Pod != "default/n1-web-1" || !strings.HasPrefix(c.Saved[0].Reason, "deleted by alice at +20s") {
		t.Errorf("saved %v, want default/n1-web-1, deleted by alice", c.Saved)
	}
}

func TestPodNodeInferred(t *testing.T) {
	// Pods older than the log, whose only bodies are the controller's
	// Ready=False patches (no spec): their node is the one written Unknown
	// just before.
	evs := slices.DeleteFunc(outage().build(), func(e audit.Event) bool {
		return e.ObjectRef.Resource == "pods" && (e.Verb == "create")
	})
	for i := range evs {
		e := &evs[i]
		if e.ObjectRef.Resource == "pods" && e.ObjectRef.Subresource == "status" && e.Verb == "update" {
			e.Verb = "patch"
			e.RequestObject = []byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`)
		}
	}
	h, _, c := replayLog(t, evs, ReplayOptions{})
	p := h.Pod("default", "n1-web-0")
	if p == nil || p.Node != "n1" || !p.NodeInferred {
		t.Fatalf("Pod(default/n1-web-0) = %+v, want on n1, inferred", p)
	}
	if ws := strings.Join(h.Doctor().Warnings(), "\n"); !strings.Contains(ws, "2 pods whose node the log never names") {
		t.Errorf("Doctor().Warnings() = %q, want the inferred nodes", ws)
	}
	// The pods existed before the log: the replay marks them at the
	// Unknown write and evicts them; only their pod-not-ready is earlier
	// than recorded by at most the pass.
	if len(c.Missing) != 0 || len(c.Extra) != 0 || len(c.Saved) != 0 {
		t.Errorf("missing %v, extra %v, saved %v; want none", c.Missing, c.Extra, c.Saved)
	}
}

func TestFinalDeletionAfterEviction(t *testing.T) {
	// After the recorded controller's (graceful) deletions, the pod garbage
	// collector force-deletes the pods: not an input to the replay.
	g := shipped("Request")
	g.build()
	for j := range g.podsPerNode {
		g.add(g.evictAt+2*time.Second, "system:serviceaccount:kube-system:pod-garbage-collector", "delete",
			audit.ObjectRef{Resource: "pods", Namespace: "default", Name: g.podName("n1", j)}, nil, nil)
	}
	evs := slices.Clone(g.events)
	slices.SortStableFunc(evs, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	_, _, c := replayLog(t, evs, ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=60s")})
	if len(c.Saved) != 2 {
		t.Fatalf("saved %v, want n1's 2 pods", c.Saved)
	}
	for _, s := range c.Saved {
		if !strings.Contains(s.Reason, "untainted before the pod's toleration") {
			t.Errorf("saved %s: %s, want the untaint as the reason", s.Pod, s.Reason)
		}
	}
}

// TestPassDrift: n1's last renewal at +50.01s; grace 40s, 8 passes of 5s,
// the first at +0.1s. The pass at +50.1s sees the renewal. Without a
// drift the pass 8 periods later is exactly 40s after it, not more: n1
// goes Unknown one pass later, at +1m35.1s. With 2ms a pass
// (kube-controller-manager's passes drift by their duration) the renewal
// is seen at +50.12s and the pass at +1m30.136s is 40.016s later.
func TestPassDrift(t *testing.T) {
	g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 51 * time.Second}
	for _, tc := range []struct {
		drift time.Duration
		want  time.Duration
	}{{0, 95100 * time.Millisecond}, {2 * time.Millisecond, 90136 * time.Millisecond}} {
		h, run, _ := replayLog(t, g.build(), ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=40s"), Phase: 100 * time.Millisecond, PassDrift: tc.drift})
		var got []time.Duration
		for _, d := range run.Replayed {
			if d.Kind == KindNodeUnknown {
				got = append(got, d.Time.Sub(h.First))
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("drift %v: n1 Unknown at %v, want [%v]", tc.drift, got, tc.want)
		}
	}
	for _, drift := range []time.Duration{-time.Millisecond, 5 * time.Second} {
		h, err := Inventory(SliceSource(g.build()), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Replay(context.Background(), h, SliceSource(g.build()), ReplayOptions{Policy: DefaultPolicy(), PassDrift: drift}); err == nil || !strings.Contains(err.Error(), "pass drift") {
			t.Errorf("drift %v: Replay error %v, want one naming the pass drift", drift, err)
		}
	}
}

// TestStallWindowsMerged: overlapping, touching and unordered windows are
// one stall each: the cache stalls at the first's start and resumes at
// the last's end, once.
func TestStallWindowsMerged(t *testing.T) {
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name string
		wins []Window
		want [][2]time.Duration // stalled, resumed
	}{
		{"overlapping", []Window{{at(10), at(70)}, {at(20), at(30)}}, [][2]time.Duration{{10 * time.Second, 70 * time.Second}}},
		{"touching, unordered", []Window{{at(40), at(70)}, {at(10), at(40)}}, [][2]time.Duration{{10 * time.Second, 70 * time.Second}}},
		{"apart", []Window{{at(50), at(60)}, {at(10), at(20)}}, [][2]time.Duration{{10 * time.Second, 20 * time.Second}, {50 * time.Second, 60 * time.Second}}},
	} {
		_, run, _ := replayLog(t, stallLog(), ReplayOptions{LeaseWatchStalls: tc.wins})
		var got [][2]time.Duration
		for _, n := range run.Notes {
			switch n.Kind {
			case NoteLeaseStalled:
				got = append(got, [2]time.Duration{n.Time.Sub(epoch)})
			case NoteLeaseResumed:
				if len(got) == 0 {
					t.Fatalf("%s: resumed before any stall", tc.name)
				}
				got[len(got)-1][1] = n.Time.Sub(epoch)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: stalls %v, want %v", tc.name, got, tc.want)
		}
	}
}
