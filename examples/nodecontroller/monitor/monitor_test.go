package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

const (
	unreachableNoExecute = "node.kubernetes.io/unreachable:NoExecute"
	unreachableNoSched   = "node.kubernetes.io/unreachable:NoSchedule"
)

// TestScenarioSilentNodeEvictedAfterDefaultToleration is the cross-package
// scenario on a virtual clock: nodehealth, zonestate,
// evictionqueue and taints together. A node stops heartbeating at t=0; it is
// marked Unknown at the first monitor pass after the 50s grace period
// (t=55s, since it is stale strictly after 50s), tainted when its zone's
// queue lets it through (the bucket is full, so in the same instant), pods
// without tolerations go at once, and pods with the admission defaults go
// exactly 300s after the taint.
func TestScenarioSilentNodeEvictedAfterDefaultToleration(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("defaults", "a", s.now, true)
	s.c.addPod("bare", "a", s.now, false)
	s.c.addPod("forever", "a", s.now, false, v1.Toleration{Operator: v1.TolerationOpExists})
	s.c.addPod("short", "a", s.now, true, v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(30)})
	s.c.addPod("elsewhere", "b", s.now, true)
	s.dead["a"] = true
	s.runUntil(400 * time.Second)

	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"node a Unknown", s.first(monitor.KindNodeUnknown, "a", "", ""), 55 * time.Second},
		{"NoExecute taint", s.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute), 55 * time.Second},
		{"NoSchedule taint", s.first(monitor.KindTaintAdded, "a", "", unreachableNoSched), 55 * time.Second},
		{"pods marked not ready", s.first(monitor.KindPodsNotReady, "a", "", ""), 55 * time.Second},
		{"untolerating pod evicted", s.first(monitor.KindPodEvicted, "", "default/bare", ""), 55 * time.Second},
		// "short" has the defaults too, but its own 30s toleration comes first in pod order.
		{"30s pod evicted", s.first(monitor.KindPodEvicted, "", "default/short", ""), 85 * time.Second},
		{"default-toleration pod evicted", s.first(monitor.KindPodEvicted, "", "default/defaults", ""), 355 * time.Second},
		{"forever pod never evicted", s.first(monitor.KindPodEvicted, "", "default/forever", ""), -1},
		{"healthy node untouched", s.first(monitor.KindNodeUnknown, "b", "", ""), -1},
		{"pod on healthy node kept", s.first(monitor.KindPodEvicted, "", "default/elsewhere", ""), -1},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s at %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if p := s.c.pod("forever"); p == nil || podReady(p) {
		t.Errorf("pod forever = %v, want kept with Ready=False", p)
	}
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// TestRecoveryRemovesTaints: a node that comes back loses its health taints
// at the next monitor pass and its pending evictions are cancelled.
func TestRecoveryRemovesTaints(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("defaults", "a", s.now, true)
	s.dead["a"] = true
	s.runUntil(100 * time.Second)
	if got := s.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute); got != 55*time.Second {
		t.Fatalf("tainted at %v, want 55s", got)
	}
	s.c.setReady("a", v1.ConditionTrue, s.now) // kubelet back at 100.1s
	delete(s.dead, "a")
	s.runUntil(400 * time.Second)
	if got := s.first(monitor.KindTaintRemoved, "a", "", unreachableNoExecute); got != 105*time.Second {
		t.Errorf("NoExecute taint removed at %v, want 105s (next monitor pass)", got)
	}
	if got := s.first(monitor.KindTaintRemoved, "a", "", unreachableNoSched); got != 100*time.Second+100*time.Millisecond {
		t.Errorf("NoSchedule taint removed at %v, want 100.1s (node update event)", got)
	}
	if got := s.first(monitor.KindNodeReady, "a", "", ""); got != 105*time.Second {
		t.Errorf("node-ready at %v, want 105s", got)
	}
	if got := s.first(monitor.KindPodEvicted, "", "default/defaults", ""); got != -1 {
		t.Errorf("pod evicted at %v after recovery, want never", got)
	}
	if ts := s.c.node("a").Spec.Taints; len(ts) != 0 {
		t.Errorf("node a taints = %v, want none", ts)
	}
}

// TestZoneRateLimitsTainting: with the default 0.1 nodes/s, five silent nodes
// in a zone of 20 are tainted 10s apart, in FIFO order.
func TestZoneRateLimitsTainting(t *testing.T) {
	s := newSim(t, testConfig())
	for i := range 20 {
		s.c.addNode(fmt.Sprintf("n%02d", i), "z1", s.now)
	}
	for i := range 5 {
		s.dead[fmt.Sprintf("n%02d", i)] = true
	}
	s.runUntil(120 * time.Second)
	for i := range 5 {
		name := fmt.Sprintf("n%02d", i)
		want := 55*time.Second + time.Duration(i)*10*time.Second
		if got := s.first(monitor.KindTaintAdded, name, "", unreachableNoExecute); got != want {
			t.Errorf("%s tainted at %v, want %v", name, got, want)
		}
	}
}

// TestFullDisruptionStopsEvictions: when every node of a single-zone cluster
// goes silent, the cluster enters full disruption: no taint, no eviction.
// When they come back it exits and nothing was evicted.
func TestFullDisruptionStopsEvictions(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
		s.c.addPod("p-"+n, n, s.now, false)
		s.dead[n] = true
	}
	s.runUntil(200 * time.Second)
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 55*time.Second {
		t.Errorf("disruption mode at %v, want 55s", got)
	}
	if got := s.first(monitor.KindTaintAdded, "", "", unreachableNoExecute); got != -1 {
		t.Errorf("NoExecute taint at %v in full disruption, want never", got)
	}
	if ev := s.c.Evicted(); len(ev) != 0 {
		t.Errorf("evicted %v in full disruption, want none", ev)
	}
	for _, n := range []string{"a", "b", "c"} {
		s.c.setReady(n, v1.ConditionTrue, s.now)
		delete(s.dead, n)
	}
	s.runUntil(300 * time.Second)
	var exits int
	for _, e := range s.events {
		if e.Kind == monitor.KindDisruptionMode {
			exits++
		}
	}
	if exits != 2 || len(s.c.Evicted()) != 0 {
		t.Errorf("disruption-mode events %d, evictions %d; want 2 (enter, exit) and 0", exits, len(s.c.Evicted()))
	}
}

// TestFullDisruptionRemovesTaintAddedMeanwhile: a NoExecute taint written
// after the monitor pass listed the nodes (by a concurrent TaintPass) is
// removed too when the pass enters full disruption.
func TestFullDisruptionRemovesTaintAddedMeanwhile(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
		s.dead[n] = true
	}
	s.runUntil(50 * time.Second)
	// Node a carries the taint in the store, but the list is behind.
	s.c.SetStaleList("a", s.c.node("a"))
	tainted, _ := taints.AddOrUpdate(s.c.node("a"), taints.UnreachableTaint(), s.now)
	s.c.PutNode(tainted)
	s.runUntil(55 * time.Second)
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 55*time.Second {
		t.Fatalf("disruption mode at %v, want 55s", got)
	}
	if ts := s.c.node("a").Spec.Taints; slices.ContainsFunc(ts, func(x v1.Taint) bool { return x.Effect == v1.TaintEffectNoExecute }) {
		t.Errorf("node a taints = %v after entering full disruption, want no NoExecute taint", ts)
	}
}

// TestSwapOnStaleListAfterFullDisruption: the pass after the one that
// entered full disruption (and removed every health taint) lists a node
// from a cache that shows its Unknown status but still the not-ready taint
// the cleanup removed. The swap to unreachable is decided on the node as
// read for the write, which has no health taint: nothing is written, and a
// pod that tolerates only not-ready is not evicted during full disruption.
func TestSwapOnStaleListAfterFullDisruption(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("p-a", "a", s.now, false, v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	s.c.setReady("a", v1.ConditionFalse, s.now)
	s.runUntil(10 * time.Second)
	if got := s.first(monitor.KindTaintAdded, "a", "", "node.kubernetes.io/not-ready:NoExecute"); got != 0 {
		t.Fatalf("a tainted not-ready at %v, want 0s", got)
	}
	for _, n := range []string{"a", "b", "c"} {
		s.dead[n] = true
	}
	s.runUntil(65 * time.Second)
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 65*time.Second {
		t.Fatalf("full disruption entered at %v, want 65s", got)
	}
	// The cache has the Unknown status written by that pass, but not yet
	// its swap nor the cleanup.
	stale, _ := taints.AddOrUpdate(s.c.node("a"), taints.NotReadyTaint(), s.now)
	s.c.SetStaleList("a", stale)
	s.runUntil(80 * time.Second)
	s.checkFullDisruptionClean("a")
}

// TestFullDisruptionCleanupRetried: the taint write that removes node a's
// unreachable taint on entering full disruption fails. The next pass removes
// it, so the pod that tolerates the taint for 30s is not evicted during full
// disruption.
func TestFullDisruptionCleanupRetried(t *testing.T) {
	s := newCleanupFailSim(t, 30)
	s.runUntil(120 * time.Second)
	if got := s.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute); got != 55*time.Second {
		t.Fatalf("a tainted at %v, want 55s", got)
	}
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 65*time.Second {
		t.Fatalf("full disruption entered at %v, want 65s", got)
	}
	s.checkFullDisruptionClean("a")
}

// checkFullDisruptionClean fails the test when node carries a NoExecute
// taint or any pod was evicted (the cluster is in full disruption).
func (s *sim) checkFullDisruptionClean(node string) {
	s.t.Helper()
	if ts := s.c.node(node).Spec.Taints; slices.ContainsFunc(ts, func(x v1.Taint) bool { return x.Effect == v1.TaintEffectNoExecute }) {
		s.t.Errorf("node %s taints = %v in full disruption, want no NoExecute taint", node, ts)
	}
	if ev := s.c.Evicted(); len(ev) != 0 {
		s.t.Errorf("evicted %v during full disruption, want none", ev)
	}
}

// TestNoEvictionBeforeFullDisruptionCleanupRetry: the cleanup write of
// node a fails on entering full disruption (65s), and a's pod becomes due at
// 67s, before the next pass removes the taint (70s). No pod is deleted
// while the cluster is in full disruption.
func TestNoEvictionBeforeFullDisruptionCleanupRetry(t *testing.T) {
	s := newCleanupFailSim(t, 12)
	s.runUntil(68 * time.Second)
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 65*time.Second {
		t.Fatalf("full disruption entered at %v, want 65s", got)
	}
	if at, ok := s.m.NextDeadline(); ok {
		t.Errorf("NextDeadline() = %v in full disruption, want none (no pass has work)", at.Sub(testutil.Epoch))
	}
	if ev := s.c.Evicted(); len(ev) != 0 {
		t.Errorf("evicted %v during full disruption, want none", ev)
	}
	s.runUntil(120 * time.Second)
	s.checkFullDisruptionClean("a")
}

// newCleanupFailSim returns a sim of nodes a, b and c in one zone: a goes
// silent at 0s and is tainted at 55s, b and c at 10s, so the cluster enters
// full disruption at 65s, where the write removing a's taint fails. a's pod
// p-a tolerates the unreachable taint for tolerationSeconds.
func newCleanupFailSim(t *testing.T, tolerationSeconds int64) *sim {
	t.Helper()
	s := newSim(t, testConfig())
	m, err := monitor.New(testConfig(), s.c, func(e monitor.Event) {
		s.events = append(s.events, e)
		if e.Kind == monitor.KindDisruptionMode && e.Entered {
			s.c.FailTaintWrites(1) // the cleanup of a, the first node
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	s.m = m
	s.c.Attach(m)
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("p-a", "a", s.now, false, v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: &tolerationSeconds})
	s.dead["a"] = true
	s.runUntil(10 * time.Second)
	s.dead["b"], s.dead["c"] = true, true
	return s
}

// TestOneDarkZoneAmongHealthy: a whole zone dark while another zone is healthy
// is fully disrupted but tainted at the normal rate (upstream by design).
func TestOneDarkZoneAmongHealthy(t *testing.T) {
	s := newSim(t, testConfig())
	for i := range 3 {
		s.c.addNode(fmt.Sprintf("dark%d", i), "z1", s.now)
		s.c.addNode(fmt.Sprintf("lit%d", i), "z2", s.now)
		s.dead[fmt.Sprintf("dark%d", i)] = true
	}
	s.runUntil(100 * time.Second)
	for i := range 3 {
		want := 55*time.Second + time.Duration(i)*10*time.Second
		if got := s.first(monitor.KindTaintAdded, fmt.Sprintf("dark%d", i), "", unreachableNoExecute); got != want {
			t.Errorf("dark%d tainted at %v, want %v", i, got, want)
		}
	}
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != -1 {
		t.Errorf("full disruption mode at %v, want never (z2 is healthy)", got)
	}
}

// TestFailedWritesAreRetried: a failing taint write and failing pod
// deletions are retried; no eviction is lost (#140639: upstream gives up).
func TestFailedWritesAreRetried(t *testing.T) {
	cfg := testConfig()
	cfg.EvictionRetry = 2 * time.Second
	s := newSim(t, cfg)
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("bare", "a", s.now, false)
	s.dead["a"] = true
	s.c.FailTaintWrites(2) // the NoSchedule write at 55s and the first NoExecute attempt
	s.c.FailEvictions(7)   // more than upstream's 5 tries
	s.runUntil(120 * time.Second)
	if got := s.first(monitor.KindWriteFailed, "a", "", ""); got != 55*time.Second {
		t.Errorf("first write failure at %v, want 55s", got)
	}
	tainted := s.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute)
	if tainted <= 55*time.Second {
		t.Fatalf("tainted at %v, want after the failed attempt at 55s", tainted)
	}
	evicted := s.first(monitor.KindPodEvicted, "", "default/bare", "")
	if want := tainted + 7*cfg.EvictionRetry; evicted != want {
		t.Errorf("evicted at %v, want %v (7 failures 2s apart after the taint at %v)", evicted, want, tainted)
	}
}

// TestPodMarkingFailureKeepsEdge: a pod status write that fails while a
// pass marks the pods of a node gone Unknown leaves the pods-not-ready edge
// unacknowledged, so the next pass marks the pod it missed.
func TestPodMarkingFailureKeepsEdge(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("p1", "a", s.now, true)
	s.c.addPod("p2", "a", s.now, true)
	s.dead["a"] = true
	s.runUntil(50 * time.Second)
	s.c.conflictStatus = 1 // the first pod write of the pass at 55s
	s.runUntil(55 * time.Second)
	ready := func() (n int) {
		for _, p := range []string{"p1", "p2"} {
			if i := slices.IndexFunc(s.c.pod(p).Status.Conditions, func(c v1.PodCondition) bool {
				return c.Type == v1.PodReady && c.Status == v1.ConditionTrue
			}); i >= 0 {
				n++
			}
		}
		return n
	}
	if got := ready(); got != 1 {
		t.Fatalf("%d pods Ready after the pass at 55s with one failed write, want 1", got)
	}
	s.runUntil(60 * time.Second)
	if got := ready(); got != 0 {
		t.Fatalf("%d pods Ready after the pass at 60s, want 0 (the edge was kept)", got)
	}
	if got := s.c.Counts().PodsMarkedNotReady; got != 2 {
		t.Errorf("%d pod Ready=False writes, want 2", got)
	}
}

// TestLegacyPodEvictionTimeout models the pre-1.27 mode: no NoExecute taint;
// the node's pods are deleted once it has been silent for the 5m timeout
// counted from its last heartbeat.
func TestLegacyPodEvictionTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.Health.GracePeriod = 40 * time.Second
	cfg.PodEvictionTimeout = monitor.LegacyPodEvictionTimeout
	s := newSim(t, cfg)
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.c.addPod("p1", "a", s.now, true)
	s.c.addPod("p2", "a", s.now, false)
	s.dead["a"] = true
	s.runUntil(400 * time.Second)
	if got := s.first(monitor.KindNodeUnknown, "a", "", ""); got != 45*time.Second {
		t.Errorf("Unknown at %v, want 45s", got)
	}
	if got := s.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute); got != -1 {
		t.Errorf("NoExecute taint at %v in legacy mode, want never", got)
	}
	// Last probe at 0s; "after 0s + 5m" first holds at the 305s pass.
	for _, p := range []string{"default/p1", "default/p2"} {
		if got := s.first(monitor.KindPodEvicted, "", p, ""); got != 305*time.Second {
			t.Errorf("%s evicted at %v, want 305s", p, got)
		}
	}
	if got := s.first(monitor.KindNodeEvicting, "a", "", ""); got != 305*time.Second {
		t.Errorf("node-evicting at %v, want 305s", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cfg := testConfig()
	cfg.MonitorPeriod = 0
	cfg.Workers = 0
	if _, err := monitor.New(cfg, newTestCluster(testutil.Epoch), nil); !errors.Is(err, monitor.ErrInvalidConfig) {
		t.Errorf("New(bad config) = %v, want ErrInvalidConfig", err)
	}
	if _, err := monitor.New(testConfig(), nil, nil); !errors.Is(err, monitor.ErrInvalidConfig) {
		t.Errorf("New(nil cluster) = %v, want ErrInvalidConfig", err)
	}
}

// TestParallelWorkers runs the scenario with 8 workers under the race
// detector and checks the same decisions.
func TestParallelWorkers(t *testing.T) {
	cfg := testConfig()
	cfg.Workers = 8
	s := newSim(t, cfg)
	var mu sync.Mutex
	s.m, _ = monitor.New(cfg, s.c, func(e monitor.Event) {
		mu.Lock()
		defer mu.Unlock()
		s.events = append(s.events, e)
	})
	s.c.Attach(s.m)
	for i := range 30 {
		s.c.addNode(fmt.Sprintf("n%02d", i), "z1", s.now)
		s.c.addPod(fmt.Sprintf("p%02d", i), fmt.Sprintf("n%02d", i), s.now, false)
	}
	s.dead["n00"] = true
	s.runUntil(60 * time.Second)
	if got := s.first(monitor.KindPodEvicted, "", "default/p00", ""); got != 55*time.Second {
		t.Errorf("p00 evicted at %v, want 55s", got)
	}
	if ev := s.c.Evicted(); len(ev) != 1 {
		t.Errorf("evicted %v, want only p00", ev)
	}
}

// TestLegacyNodeDeletedDuringPass: a node deleted (NodeDeleted from an
// informer goroutine) while a legacy-mode pass is deciding on it is skipped,
// not dereferenced. The race is timing-dependent; many passes over many
// nodes hit it reliably on the code that lacked the check.
func TestLegacyNodeDeletedDuringPass(t *testing.T) {
	cfg := testConfig()
	cfg.PodEvictionTimeout = time.Nanosecond
	s := newSim(t, cfg)
	var names []string
	for i := range 100 {
		name := fmt.Sprintf("n%03d", i)
		names = append(names, name)
		s.c.addNode(name, "z1", s.now)
		s.dead[name] = true
	}
	s.c.addNode("live", "z2", s.now)
	s.runUntil(50 * time.Second) // every silent node is Unknown and due for eviction
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			for _, n := range names {
				s.m.NodeDeleted(n)
			}
		}
	}()
	ctx := context.Background()
	for i := range 200 {
		s.m.MonitorPass(ctx, s.now.Add(time.Duration(i)*time.Second))
	}
	<-done
}

// TestTaintPassDuringFullDisruptionEntry: a TaintPass runs while the
// monitor pass that enters full disruption is still writing the nodes'
// Unknown status. The nodes that pass queued reach their zone queue only
// with its zone decision, so the TaintPass finds nothing to taint, and no
// NoExecute taint is ever written (none is left after the cleanup either).
func TestTaintPassDuringFullDisruptionEntry(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
		s.c.addPod("p-"+n, n, s.now, false)
		s.dead[n] = true
	}
	s.runUntil(50 * time.Second)
	var ran bool
	s.c.beforeStatus = func(node string) { // no lock: the monitor pass runs in this goroutine
		if node != "c" {
			return
		}
		done := make(chan struct{})
		go func() { // another goroutine, as the controller's tainting loop
			defer close(done)
			s.m.TaintPass(context.Background(), s.now)
			s.m.EvictionPass(context.Background(), s.now)
		}()
		<-done
		ran = true
	}
	s.runUntil(55 * time.Second)
	s.c.beforeStatus = nil
	if !ran {
		t.Fatal("no TaintPass ran during the monitor pass")
	}
	if got := s.first(monitor.KindDisruptionMode, "", "", ""); got != 55*time.Second {
		t.Fatalf("full disruption entered at %v, want 55s", got)
	}
	if got := s.first(monitor.KindTaintAdded, "", "", unreachableNoExecute); got != -1 {
		t.Errorf("NoExecute taint written at %v by a TaintPass during the pass entering full disruption", got)
	}
	if ev := s.c.Evicted(); len(ev) != 0 {
		t.Errorf("evicted %v, want none", ev)
	}
}

// TestLegacyDeletionSetsNodeLost: in legacy mode every pod on the evicted
// node first gets upstream's NodeLost reason and message (a DaemonSet pod
// too, though it is not deleted); a conflict on that write skips the pod
// and retries the node, as upstream DeletePods does.
func TestLegacyDeletionSetsNodeLost(t *testing.T) {
	cfg := testConfig()
	cfg.PodEvictionTimeout = monitor.LegacyPodEvictionTimeout
	s := newSim(t, cfg)
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	ds := newPod("ds", "a", s.now, false)
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}}
	s.c.AddPod(context.Background(), ds)
	s.c.addPod("p1", "a", s.now, true)
	s.c.addPod("p2", "a", s.now, false)
	s.dead["a"] = true
	s.runUntil(304 * time.Second)
	s.c.mu.Lock()
	s.c.conflictStatus = 1 // the NodeLost write of the first pod conflicts at 305s
	s.c.mu.Unlock()
	s.runUntil(400 * time.Second)

	const msg = "Node a which was running pod %s is unresponsive"
	for _, name := range []string{"p1", "p2"} {
		key := types.NamespacedName{Namespace: "default", Name: name}
		st, ok := s.c.evictedStatus[key]
		if !ok {
			t.Errorf("pod %s not evicted", name)
			continue
		}
		if st.Reason != "NodeLost" || st.Message != fmt.Sprintf(msg, name) {
			t.Errorf("pod %s status at deletion: reason %q, message %q; want NodeLost, %q", name, st.Reason, st.Message, fmt.Sprintf(msg, name))
		}
	}
	if p := s.c.pod("ds"); p == nil {
		t.Errorf("DaemonSet pod deleted, want kept")
	} else if p.Status.Reason != "NodeLost" || p.Status.Message != fmt.Sprintf(msg, "ds") {
		t.Errorf("DaemonSet pod status: reason %q, message %q; want NodeLost, %q", p.Status.Reason, p.Status.Message, fmt.Sprintf(msg, "ds"))
	}
	// "ds" comes first: its write conflicts at 305s and fails the pass for
	// node a (p1 and p2 go all the same); the retry at the zone's next token
	// writes it.
	for _, p := range []string{"default/p1", "default/p2"} {
		if got := s.first(monitor.KindPodEvicted, "", p, ""); got != 305*time.Second {
			t.Errorf("%s evicted at %v, want 305s", p, got)
		}
	}
}

// TestNodeDeletedAndListedAgain: a node the informer reported deleted that
// the next list still holds (deleted and re-created under its name, at the
// same position in the list) is known again after the pass: its new state
// is the one the Monitor keeps.
func TestNodeDeletedAndListedAgain(t *testing.T) {
	s := newSim(t, testConfig())
	for _, n := range []string{"a", "b", "c"} {
		s.c.addNode(n, "z1", s.now)
	}
	s.runUntil(10 * time.Second)
	s.m.NodeDeleted("b")
	if got := s.m.Stats().Nodes; got != 2 {
		t.Fatalf("Stats().Nodes after NodeDeleted = %d, want 2", got)
	}
	s.runUntil(15 * time.Second)
	if got := s.m.Stats().Nodes; got != 3 {
		t.Errorf("Stats().Nodes after the next pass = %d, want 3", got)
	}
	// Node b's pods are marked at once when it is not ready: the Monitor
	// knows its Ready status again.
	s.c.setReady("b", v1.ConditionFalse, s.now)
	s.runUntil(20 * time.Second)
	s.c.addPod("late", "b", s.now, true)
	if p := s.c.pod("late"); p == nil || podReady(p) {
		t.Errorf("pod added to not-ready node b still Ready (or gone: %v), want marked Ready=False at once", p == nil)
	}
}
