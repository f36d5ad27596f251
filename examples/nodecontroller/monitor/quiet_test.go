package monitor_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Config.LeaseEvents promises that skipping the quiet nodes changes no
// decision. The tests here hold a Monitor with LeaseEvents on against one
// with it off: two identical monitortest clusters, each with its own
// Monitor (one worker, the same Config otherwise), driven by one script on
// a virtual clock. After every tick the two Event streams must be the
// same (time, kind, node, pod, zone, detail, zone state and rate), after
// every monitor pass the zone decisions and queues, and at the end the
// clusters (nodes, pods, evictions, counts) and the Evictors' plans.

// quietSeeds, quietRun and quietTick size TestLeaseEventsSameDecisions:
// seeds per case, virtual time per seed, and its TaintPeriod (the
// script's tick: every kubelet renews and posts on it). A tick of 500ms
// instead of the default 100ms makes a seed five times cheaper under the
// race detector and changes nothing that LeaseEvents is about. For a
// longer hunt: go test -run TestLeaseEventsSameDecisions -args -quiet.seeds=500
var quietSeeds = flag.Int("quiet.seeds", 4, "seeds per case of TestLeaseEventsSameDecisions")

const (
	quietRun  = 15 * time.Minute
	quietTick = 500 * time.Millisecond
)

// TestLeaseEventsSameDecisions drives 3 zones of 8 nodes (one of them
// excluded from its zone's count) and a zone of 2 excluded nodes, with 3 pods per node tolerating the
// health taints for 0s, 30s, 300s (the admission defaults), forever or not
// at all, through a random script: kubelets renewing their Leases every
// 7.5s to 40s on their own phases and posting their status every 30s to
// 5m, stopping and coming back, reporting Ready=False and True again,
// setting their pods Ready; nodes deleted and re-created; pods added;
// outages of 3 to 8 nodes of a zone (PartialDisruption, FullDisruption)
// or of every node (full disruption mode) and their end; injected taint
// write, pod status write and eviction failures; and, over a LeaseStall,
// Lease cache stalls, during which no Lease change reaches the Monitors
// (leaseWatch). v1.36 (no confirmation) takes the stalls for outages;
// v1.37's confirmation holds the passes instead. The script must reach
// every kind of decision, and LeaseEvents must save evaluations.
func TestLeaseEventsSameDecisions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conf  nodehealth.Confirmation
		stall bool // the Monitors read through a LeaseStall that the script stalls
	}{
		{"v1.36", nodehealth.ConfirmNone, false},
		{"v1.36-stalls", nodehealth.ConfirmNone, true},
		{"lease-and-status-stalls", nodehealth.ConfirmLeaseAndStatus, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads [2]int
			seen := map[string]bool{}
			for seed := range uint64(*quietSeeds) {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					cfg := testConfig()
					cfg.Health.Confirmation = tc.conf
					cfg.TaintPeriod = quietTick
					sc := newQuietScript(seed, tc.stall)
					p := newPair(t, cfg, tc.stall, sc.fill)
					sc.p, p.notes = p, &sc.log
					p.run(quietRun, sc.step)
					p.compareFinal(sc.pods)
					for i, tw := range p.tw {
						reads[i] += tw.via.reads
					}
					for _, e := range p.tw[0].raw {
						seen[coverageKey(e)] = true
					}
				})
			}
			if t.Failed() {
				return
			}
			t.Logf("health evaluations: %d with LeaseEvents off, %d on", reads[0], reads[1])
			if reads[1] >= reads[0] {
				t.Errorf("LeaseEvents on evaluated %d nodes, off %d: want fewer on (no node was ever quiet)", reads[1], reads[0])
			}
			// The script must reach what it is meant to test.
			want := []string{
				"node-unknown", "node-not-ready", "node-ready", "taint-added", "taint-removed",
				"pods-not-ready", "pod-evicted", "write-failed",
				"zone-state " + zonestate.StatePartialDisruption.String(),
				"zone-state " + zonestate.StateFullDisruption.String(),
				"disruption-mode entered", "disruption-mode exited",
			}
			if tc.conf != nodehealth.ConfirmNone {
				want = append(want, string(monitor.KindHealthHeld))
			}
			for _, k := range want {
				if !seen[k] {
					t.Errorf("no seed produced a %q event", k)
				}
			}
		})
	}
}

// TestLeaseEventsQuietNodeGoesUnknown: a Ready node whose kubelet renews
// its Lease every 10s, quiet between renewals with LeaseEvents on, is
// written Unknown at the first pass after its grace (50s after the pass
// that saw its last renewal), with LeaseEvents on as off, and the rest of
// the timeline (taint, pod marking, evictions) is the same.
func TestLeaseEventsQuietNodeGoesUnknown(t *testing.T) {
	for _, tt := range []struct {
		name        string
		phase       time.Duration // a's kubelet renews at phase, phase+10s, ...
		lastRenewal time.Duration // ... up to this one (-1: none after the Lease it started with)
		want        time.Duration // a written Unknown
	}{
		{"never renews", 0, -1, 55 * time.Second},
		{"renewals on passes", 0, 20 * time.Second, 75 * time.Second},
		{"renewals between passes", 3 * time.Second, 23 * time.Second, 80 * time.Second},
		{"renewal just before a pass", 4900 * time.Millisecond, 54900 * time.Millisecond, 110 * time.Second},
		{"renewal just after a pass", 100 * time.Millisecond, 60100 * time.Millisecond, 120 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Health.Confirmation = nodehealth.ConfirmNone
			p := newPair(t, cfg, false, func(c *monitortest.Cluster) {
				for _, n := range []string{"a", "b", "c"} {
					c.AddNode(context.Background(), monitortest.NewNode(n, "zone-1", testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
				}
				c.AddPod(context.Background(), newPod("bare", "a", testutil.Epoch, false))
				c.AddPod(context.Background(), newPod("defaults", "a", testutil.Epoch, true))
			})
			p.run(200*time.Second, func(el time.Duration) {
				if el%(10*time.Second) == 0 {
					p.renew(el, "b", "c")
				}
				if d := el - tt.phase; d >= 0 && d%(10*time.Second) == 0 && el <= tt.lastRenewal {
					p.renew(el, "a")
				}
			})
			for i, tw := range p.tw {
				if got := firstEvent(tw.raw, monitor.KindNodeUnknown, "a"); got != tt.want {
					t.Errorf("LeaseEvents %t: a written Unknown at %v, want %v", i == 1, got, tt.want)
				}
				if got := firstEvent(tw.raw, monitor.KindNodeUnknown, "b"); got != -1 {
					t.Errorf("LeaseEvents %t: b written Unknown at %v, want never", i == 1, got)
				}
			}
			if off, on := p.tw[0].via.reads, p.tw[1].via.reads; on >= off {
				t.Errorf("health evaluations: %d with LeaseEvents on, %d off: want fewer on", on, off)
			}
		})
	}
}

// TestLeaseEventsFailedWritesRetried: a write of a monitor pass's
// decision that fails leaves the node to be decided again at the next
// pass, with LeaseEvents on as off: a failed write never makes a node
// quiet. Node a of a, b and c renews no Lease; it is tainted by 55s.
//
//   - swap: a's kubelet reports Ready=False at 0s (a is tainted not-ready)
//     and is silent since. At 55s a is written Unknown; the NoSchedule
//     reconcile and the swap of its not-ready taint for unreachable fail,
//     and the swap fails again at 60s, a pass that writes nothing else
//     (a's Node object stays the same up to 65s). The pass at 65s swaps.
//   - cleanup: a is tainted unreachable at 55s and quiet at 60s; b and c
//     stop renewing at 10s, so the cluster enters full disruption at 65s.
//     The writes removing a's taint fail there and at 70s; the pass at 75s
//     removes it, and no pod is evicted meanwhile.
//   - pods: a is written Unknown at 55s; marking its pods Ready=False
//     fails there and at 60s, a pass at which a is tainted, Unknown and
//     has nothing else to do. The pass at 65s marks them.
func TestLeaseEventsFailedWritesRetried(t *testing.T) {
	ctx := context.Background()
	fill := func(c *monitortest.Cluster) {
		for _, n := range []string{"a", "b", "c"} {
			c.AddNode(ctx, monitortest.NewNode(n, "zone-1", testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
		}
		c.AddPod(ctx, newPod("defaults", "a", testutil.Epoch, true))
		c.AddPod(ctx, newPod("short", "a", testutil.Epoch, false, v1.Toleration{Operator: v1.TolerationOpExists, TolerationSeconds: testutil.Seconds(12)}))
	}
	t.Run("swap", func(t *testing.T) {
		p := newPair(t, quietTestConfig(), false, fill)
		p.run(100*time.Second, func(el time.Duration) {
			switch el {
			case 0:
				p.do(func(tw *twin) { tw.c.PostNodeStatus(ctx, "a", v1.ConditionFalse, p.now()) })
			case 55 * time.Second:
				p.do(func(tw *twin) { tw.c.FailTaintWrites(2) }) // the NoSchedule reconcile, then the swap
			case 60 * time.Second:
				p.do(func(tw *twin) { tw.c.FailTaintWrites(1) }) // the swap again
			}
			if el%(10*time.Second) == 0 {
				p.renew(el, "b", "c")
			}
		})
		for i, tw := range p.tw {
			if got := firstTaint(tw.raw, monitor.KindTaintAdded, "a", "node.kubernetes.io/not-ready:NoExecute"); got != 0 {
				t.Errorf("LeaseEvents %t: a tainted not-ready at %v, want 0s", i == 1, got)
			}
			if got := firstEvent(tw.raw, monitor.KindNodeUnknown, "a"); got != 55*time.Second {
				t.Errorf("LeaseEvents %t: a written Unknown at %v, want 55s", i == 1, got)
			}
			if got := countEvents(tw.raw, monitor.KindWriteFailed, "a"); got != 3 {
				t.Errorf("LeaseEvents %t: %d failed writes of a, want 3", i == 1, got)
			}
			if got := firstTaint(tw.raw, monitor.KindTaintAdded, "a", unreachableNoExecute); got != 65*time.Second {
				t.Errorf("LeaseEvents %t: a's taint swapped at %v, want 65s (the pass after the failed writes)", i == 1, got)
			}
		}
	})
	t.Run("cleanup", func(t *testing.T) {
		p := newPair(t, quietTestConfig(), false, fill)
		p.onEvent = func(tw *twin, e monitor.Event) {
			if e.Kind == monitor.KindDisruptionMode && e.Entered {
				tw.c.FailTaintWrites(2) // the cleanup of a at 65s, and its retry at 70s
			}
		}
		p.run(100*time.Second, func(el time.Duration) {
			if el%(10*time.Second) == 0 && el <= 10*time.Second {
				p.renew(el, "b", "c")
			}
		})
		for i, tw := range p.tw {
			if got := firstTaint(tw.raw, monitor.KindTaintAdded, "a", unreachableNoExecute); got != 55*time.Second {
				t.Errorf("LeaseEvents %t: a tainted at %v, want 55s", i == 1, got)
			}
			if got := firstEvent(tw.raw, monitor.KindDisruptionMode, ""); got != 65*time.Second {
				t.Errorf("LeaseEvents %t: full disruption at %v, want 65s", i == 1, got)
			}
			if got := countEvents(tw.raw, monitor.KindWriteFailed, "a"); got != 2 {
				t.Errorf("LeaseEvents %t: %d failed writes of a, want 2", i == 1, got)
			}
			if got := firstTaint(tw.raw, monitor.KindTaintRemoved, "a", unreachableNoExecute); got != 75*time.Second {
				t.Errorf("LeaseEvents %t: a's taint removed at %v, want 75s (the pass after two failed writes)", i == 1, got)
			}
			if ev := tw.c.Evicted(); len(ev) != 0 {
				t.Errorf("LeaseEvents %t: evicted %v, want none (the cluster is in full disruption from 65s)", i == 1, ev)
			}
		}
	})
	t.Run("pods", func(t *testing.T) {
		p := newPair(t, quietTestConfig(), false, fill)
		p.run(100*time.Second, func(el time.Duration) {
			switch el {
			case 55 * time.Second, 60 * time.Second:
				p.do(func(tw *twin) { tw.via.failPodStatus = 2 }) // both pods of a
			}
			if el%(10*time.Second) == 0 {
				p.renew(el, "b", "c")
			}
		})
		for i, tw := range p.tw {
			if got := firstEvent(tw.raw, monitor.KindNodeUnknown, "a"); got != 55*time.Second {
				t.Errorf("LeaseEvents %t: a written Unknown at %v, want 55s", i == 1, got)
			}
			if got := countEvents(tw.raw, monitor.KindWriteFailed, "a"); got != 4 {
				t.Errorf("LeaseEvents %t: %d failed writes of a, want 4", i == 1, got)
			}
			if got := firstEvent(tw.raw, monitor.KindPodsNotReady, "a"); got != 65*time.Second {
				t.Errorf("LeaseEvents %t: a's pods marked at %v, want 65s (the pass after the failed writes)", i == 1, got)
			}
		}
	})
}

// TestLeaseEventsStalledWatch: while the Lease cache is stalled, its
// watch delivers no Lease change, so a quiet node is not evaluated on its
// kubelet's renewals. Node a stops at 0s and is Unknown and tainted at
// 55s; the cache stalls at 60s, a's kubelet is back at 62s (a renewal the
// cache does not show; its status post comes at 100s) and the cache
// resumes at 90s. n1 and n2 renew every 10s. v1.37's confirmation reads
// a's live Lease at every pass while a is stale, quiet or not, and holds
// the passes from 65s to 85s; v1.36 does not see a back before 90s.
func TestLeaseEventsStalledWatch(t *testing.T) {
	for _, tt := range []struct {
		conf nodehealth.Confirmation
		held int // passes held
	}{
		{nodehealth.ConfirmNone, 0},
		{nodehealth.ConfirmLease, 5},
		{nodehealth.ConfirmLeaseAndStatus, 5},
	} {
		t.Run(tt.conf.String(), func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig()
			cfg.Health.Confirmation = tt.conf
			p := newPair(t, cfg, true, func(c *monitortest.Cluster) {
				for _, n := range []string{"a", "n1", "n2"} {
					c.AddNode(ctx, monitortest.NewNode(n, "zone-1", testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
					c.AddPod(ctx, newPod("p-"+n, n, testutil.Epoch, true))
				}
			})
			p.run(150*time.Second, func(el time.Duration) {
				if el%(10*time.Second) == 0 {
					p.renew(el, "n1", "n2")
				}
				switch {
				case el == 60*time.Second:
					p.do((*twin).stallLeases)
				case el == 90*time.Second:
					p.do((*twin).resumeLeases)
				case el == 100*time.Second:
					p.do(func(tw *twin) { tw.c.PostNodeStatus(ctx, "a", v1.ConditionTrue, p.now()) })
				case el >= 62*time.Second && (el-62*time.Second)%(10*time.Second) == 0:
					p.renew(el, "a")
				}
			})
			for i, tw := range p.tw {
				if got := countEvents(tw.raw, monitor.KindHealthHeld, "a"); got != tt.held {
					t.Errorf("LeaseEvents %t: %d passes held on a, want %d", i == 1, got, tt.held)
				}
				if got := firstTaint(tw.raw, monitor.KindTaintRemoved, "a", unreachableNoExecute); got != 100*time.Second {
					t.Errorf("LeaseEvents %t: a's taint removed at %v, want 100s", i == 1, got)
				}
			}
		})
	}
}

// TestLeaseEventsNodeClock: with a node clock (SetNodeClock) LeaseEvents
// has no effect: every node is evaluated at every pass.
func TestLeaseEventsNodeClock(t *testing.T) {
	ctx := context.Background()
	p := newPair(t, quietTestConfig(), false, func(c *monitortest.Cluster) {
		for _, n := range []string{"a", "b", "c"} {
			c.AddNode(ctx, monitortest.NewNode(n, "zone-1", testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
		}
	})
	p.do(func(tw *twin) { tw.m.SetNodeClock(p.now) })
	p.run(100*time.Second, func(el time.Duration) {
		if el%(10*time.Second) == 0 {
			p.renew(el, "b", "c")
		}
	})
	if off, on := p.tw[0].via.reads, p.tw[1].via.reads; on != off {
		t.Errorf("health evaluations: %d with LeaseEvents on, %d off: want the same (a node clock is set)", on, off)
	}
}

// TestLeaseChangedNoOp: without LeaseEvents, LeaseChanged changes
// nothing; with it, a name the Monitor does not know (never seen, deleted,
// empty) is ignored. Neither panics, before the first pass or after.
func TestLeaseChangedNoOp(t *testing.T) {
	ctx := context.Background()
	for _, leaseEvents := range []bool{false, true} {
		t.Run(fmt.Sprintf("LeaseEvents=%t", leaseEvents), func(t *testing.T) {
			cfg := quietTestConfig()
			cfg.LeaseEvents = leaseEvents
			c := monitortest.New(testutil.Epoch)
			var events []monitor.Event
			m, err := monitor.New(cfg, c, func(e monitor.Event) { events = append(events, e) })
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"a", "ghost", ""} {
				m.LeaseChanged(name) // before any node is known
			}
			c.Attach(m)
			for _, n := range []string{"a", "b", "c"} {
				c.AddNode(ctx, monitortest.NewNode(n, "zone-1", testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
			}
			m.MonitorPass(ctx, testutil.Epoch)
			c.DeleteNode("c")
			for _, name := range []string{"a", "b", "c", "ghost", ""} {
				m.LeaseChanged(name)
			}
			if got := m.Stats().Nodes; got != 2 {
				t.Errorf("Stats().Nodes = %d after LeaseChanged of unknown names, want 2", got)
			}
			m.MonitorPass(ctx, testutil.Epoch.Add(5*time.Second))
			for _, e := range events {
				if e.Node != "" {
					t.Errorf("event %s, want none about a node", eventLine(e))
				}
			}
		})
	}
}

// TestLeaseChangedDuringPasses: LeaseChanged may run at any time, also
// during a pass (the race detector checks it), and a spurious one only
// makes a quiet node evaluated: the decisions stay those of a Monitor
// without LeaseEvents. A goroutine calls LeaseChanged for every node, a
// deleted one and an unknown one while the LeaseEvents Monitor's passes
// run, as the Lease informer's goroutine does.
func TestLeaseChangedDuringPasses(t *testing.T) {
	ctx := context.Background()
	names := []string{"a", "b", "c", "d", "e", "f"}
	p := newPair(t, quietTestConfig(), false, func(c *monitortest.Cluster) {
		for i, n := range names {
			c.AddNode(ctx, monitortest.NewNode(n, fmt.Sprintf("zone-%d", i%2), testutil.Epoch), monitortest.NewLease(n, testutil.Epoch))
			c.AddPod(ctx, newPod("p-"+n, n, testutil.Epoch, true))
		}
	})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		changed := append(slices.Clone(names), "ghost", "gone")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p.tw[1].m.LeaseChanged(changed[i%len(changed)])
			runtime.Gosched()
		}
	})
	p.run(300*time.Second, func(el time.Duration) {
		if el%(10*time.Second) == 0 {
			p.renew(el, "b", "c", "e", "f") // a and d stop at 0s
		}
		if el == 30*time.Second {
			p.do(func(tw *twin) {
				tw.c.AddNode(ctx, monitortest.NewNode("gone", "zone-0", p.now()), monitortest.NewLease("gone", p.now()))
			})
		}
		if el == 40*time.Second {
			p.do(func(tw *twin) { tw.c.DeleteNode("gone") })
		}
	})
	close(stop)
	wg.Wait()
	p.compareFinal(nil)
}

// TestLeaseEventsExcludedZone: zone-x's nodes are all excluded from the
// disruption count (LabelExcludeDisruption), so the zone has no zone
// decision; its queue is kept all the same (zonestate.Queues). x1 stops at
// 0s and is tainted at 55s; x2 stops renewing after 20s and goes Unknown,
// and is tainted, at 75s. A stale node not counted in its zone is quiet like
// any other (x1 from 55s on), and LeaseEvents decides the same.
//
// When Queues dropped an idle queue of a zone without a decision, x1 found
// its queue gone at every other pass and was queued again, so a stale node
// not counted in its zone could never be quiet.
func TestLeaseEventsExcludedZone(t *testing.T) {
	ctx := context.Background()
	p := newPair(t, quietTestConfig(), false, func(c *monitortest.Cluster) {
		c.AddNode(ctx, monitortest.NewNode("a", "zone-1", testutil.Epoch), monitortest.NewLease("a", testutil.Epoch))
		for _, n := range []string{"x1", "x2"} {
			node := monitortest.NewNode(n, "zone-x", testutil.Epoch)
			node.Labels[monitor.LabelExcludeDisruption] = ""
			c.AddNode(ctx, node, monitortest.NewLease(n, testutil.Epoch))
		}
		c.AddPod(ctx, newPod("x2-bare", "x2", testutil.Epoch, false))
	})
	p.run(120*time.Second, func(el time.Duration) {
		if el%(10*time.Second) == 0 {
			p.renew(el, "a")
			if el <= 20*time.Second {
				p.renew(el, "x2")
			}
		}
	})
	p.compareFinal([]types.NamespacedName{{Namespace: "default", Name: "x2-bare"}})
	for i, tw := range p.tw {
		at := time.Duration(-1)
		for _, e := range tw.raw {
			if e.Kind == monitor.KindTaintAdded && e.Node == "x2" && e.Taint.Key == v1.TaintNodeUnreachable && e.Taint.Effect == v1.TaintEffectNoExecute {
				at = e.At.Sub(testutil.Epoch)
				break
			}
		}
		if at != 75*time.Second {
			t.Errorf("twin %d (LeaseEvents %v): x2 tainted NoExecute at %v, want 75s", i, i == 1, at)
		}
	}
}

// quietTestConfig is testConfig without confirmation (v1.36), so that a
// stale node already Unknown can be quiet too.
func quietTestConfig() monitor.Config {
	cfg := testConfig()
	cfg.Health.Confirmation = nodehealth.ConfirmNone
	return cfg
}

// pair is two identical clusters, each with its Monitor: tw[0] with
// LeaseEvents off, tw[1] with it on. Everything the script does, it does
// to both (do).
type pair struct {
	t     *testing.T
	cfg   monitor.Config
	tw    [2]*twin
	el    time.Duration // the virtual clock, from testutil.Epoch
	same  int           // events found the same so far
	notes *[]string     // the script's log, shown with a difference
	// onEvent, when set, sees every Event of each twin as it is emitted
	// (inside the pass), e.g. to inject a fault at that point.
	onEvent func(tw *twin, e monitor.Event)
}

// twin is one side of a pair.
type twin struct {
	c     *monitortest.Cluster
	stall *monitortest.LeaseStall // nil unless the pair stalls
	m     *monitor.Monitor
	via   *twinCluster // what m reads and writes through
	watch *leaseWatch  // what c's events reach m through
	raw   []monitor.Event
	lines []string // raw as compared
}

// newPair builds the two clusters with fill (called once for each, so
// that they share no object), then their Monitors over them, and
// forwards the clusters' objects to them. With stall, each Monitor reads
// its cluster through a LeaseStall.
func newPair(t *testing.T, cfg monitor.Config, stall bool, fill func(c *monitortest.Cluster)) *pair {
	t.Helper()
	p := &pair{t: t, cfg: cfg}
	for i := range p.tw {
		tw := &twin{c: monitortest.New(testutil.Epoch)}
		fill(tw.c)
		var base monitor.Cluster = tw.c
		if stall {
			tw.stall = monitortest.NewLeaseStall(tw.c)
			base = tw.stall
		}
		tw.via = &twinCluster{Cluster: base}
		var via monitor.Cluster = tw.via
		if lr, ok := base.(monitor.LiveReader); ok {
			via = twinLive{tw.via, lr}
		}
		c := cfg
		c.LeaseEvents = i == 1
		m, err := monitor.New(c, via, func(e monitor.Event) {
			tw.raw = append(tw.raw, e)
			tw.lines = append(tw.lines, eventLine(e))
			if p.onEvent != nil {
				p.onEvent(tw, e)
			}
		})
		if err != nil {
			t.Fatalf("monitor.New: %v", err)
		}
		tw.m, tw.watch = m, &leaseWatch{Monitor: m}
		tw.c.Attach(tw.watch)
		tw.c.Sync(context.Background())
		p.tw[i] = tw
	}
	return p
}

// now is the pair's virtual clock.
func (p *pair) now() time.Time { return testutil.Epoch.Add(p.el) }

// do applies fn to both twins, off first.
func (p *pair) do(fn func(tw *twin)) {
	for _, tw := range p.tw {
		fn(tw)
	}
}

// renew renews the Leases of nodes at el, in both clusters.
func (p *pair) renew(el time.Duration, nodes ...string) {
	p.do(func(tw *twin) {
		for _, n := range nodes {
			tw.c.RenewLease(n, testutil.Epoch.Add(el))
		}
	})
}

// run advances the virtual clock to until (inclusive), one TaintPeriod
// at a time: the script's step, then a MonitorPass every MonitorPeriod and
// a TaintPass and EvictionPass at every tick, on both twins. It stops the
// test at the first difference.
func (p *pair) run(until time.Duration, step func(el time.Duration)) {
	p.t.Helper()
	ctx := context.Background()
	for ; p.el <= until; p.el += p.cfg.TaintPeriod {
		now := p.now()
		p.do(func(tw *twin) { tw.c.SetNow(now) })
		if step != nil {
			step(p.el)
		}
		if p.el%p.cfg.MonitorPeriod == 0 {
			p.do(func(tw *twin) { tw.m.MonitorPass(ctx, now) })
			p.compareEvents()
			p.compareMonitors("after the monitor pass")
		}
		p.do(func(tw *twin) {
			tw.m.TaintPass(ctx, now)
			tw.m.EvictionPass(ctx, now)
		})
		p.compareEvents()
	}
}

// compareEvents fails the test at the first event that differs between
// the twins (or is missing from one).
func (p *pair) compareEvents() {
	p.t.Helper()
	off, on := p.tw[0].lines, p.tw[1].lines
	for i := p.same; i < max(len(off), len(on)); i++ {
		a, b := "(none)", "(none)"
		if i < len(off) {
			a = off[i]
		}
		if i < len(on) {
			b = on[i]
		}
		if a != b {
			p.t.Fatalf("at %v, event %d differs:\n  LeaseEvents off: %s\n  LeaseEvents on:  %s\nthe events before:\n%s%s",
				p.el, i, a, b, lastLines(off[:min(i, len(off))], 8), p.lastNotes())
		}
	}
	p.same = min(len(off), len(on))
}

// compareMonitors fails the test when the twins' zone decisions or queues
// differ.
func (p *pair) compareMonitors(when string) {
	p.t.Helper()
	a, b := p.tw[0].m, p.tw[1].m
	if za, zb := a.AppendZones(nil), b.AppendZones(nil); !reflect.DeepEqual(za, zb) {
		p.t.Fatalf("at %v %s, zone decisions differ:\n  LeaseEvents off: %+v\n  LeaseEvents on:  %+v%s", p.el, when, za, zb, p.lastNotes())
	}
	if sa, sb := a.Stats(), b.Stats(); !reflect.DeepEqual(sa, sb) {
		p.t.Fatalf("at %v %s, Stats differ:\n  LeaseEvents off: %+v\n  LeaseEvents on:  %+v%s", p.el, when, sa, sb, p.lastNotes())
	}
}

// compareFinal compares the twins' clusters (nodes, the pods named,
// evictions, counts) and the Evictors' plans for those pods.
func (p *pair) compareFinal(pods []types.NamespacedName) {
	p.t.Helper()
	p.compareMonitors("at the end")
	a, b := p.tw[0].c, p.tw[1].c
	na, nb := a.ListNodes(), b.ListNodes()
	if len(na) != len(nb) {
		p.t.Errorf("nodes: %d with LeaseEvents off, %d on", len(na), len(nb))
	}
	for i := range min(len(na), len(nb)) {
		if !equality.Semantic.DeepEqual(na[i], nb[i]) {
			p.t.Errorf("node %s differs:\n  LeaseEvents off: %s\n  LeaseEvents on:  %s", na[i].Name, nodeLine(na[i]), nodeLine(nb[i]))
		}
	}
	now := p.now()
	for _, key := range pods {
		if pa, pb := a.Pod(key), b.Pod(key); !equality.Semantic.DeepEqual(pa, pb) {
			p.t.Errorf("pod %v differs:\n  LeaseEvents off: %+v\n  LeaseEvents on:  %+v", key, pa, pb)
		}
		if ea, eb := p.tw[0].m.Explain(now, key), p.tw[1].m.Explain(now, key); !reflect.DeepEqual(ea, eb) {
			p.t.Errorf("Explain(%v) differs:\n  LeaseEvents off: %+v\n  LeaseEvents on:  %+v", key, ea, eb)
		}
	}
	if ea, eb := a.Evicted(), b.Evicted(); !slices.Equal(ea, eb) {
		p.t.Errorf("evicted pods differ:\n  LeaseEvents off: %v\n  LeaseEvents on:  %v", ea, eb)
	}
	if ca, cb := a.Counts(), b.Counts(); ca != cb {
		p.t.Errorf("Counts() = %+v with LeaseEvents off, %+v on", ca, cb)
	}
}

// lastNotes returns the script's last actions, for a failure message.
func (p *pair) lastNotes() string {
	if p.notes == nil || len(*p.notes) == 0 {
		return ""
	}
	return "\nthe script's last actions:\n" + lastLines(*p.notes, 12)
}

// stallLeases stalls the twin's Lease cache: its Lease watch delivers
// nothing until resumeLeases.
func (tw *twin) stallLeases() {
	tw.stall.Stall() // the cache's objects are the frozen copies: each Lease changed
	tw.watch.muted = true
}

// resumeLeases lets the twin's Lease cache catch up.
func (tw *twin) resumeLeases() {
	tw.watch.muted = false
	tw.stall.Resume()
}

// leaseWatch is the informers between a twin's cluster and its Monitor.
// While muted (the Lease cache stalled) it delivers no Lease change: the
// cached Leases do not change then, and a stalled watch delivers nothing,
// while monitortest.Cluster forwards every renewal. LeaseEvents promises
// only the changes of the cached Leases, so the Monitor must do without.
type leaseWatch struct {
	*monitor.Monitor
	muted bool // the script's goroutine only
}

func (w *leaseWatch) LeaseChanged(name string) {
	if !w.muted {
		w.Monitor.LeaseChanged(name)
	}
}

// twinCluster is what a twin's Monitor reads its cluster through. It
// counts the Lease reads (one per health evaluation, none for a node a
// pass finds quiet) and fails the next failPodStatus pod status writes
// with a conflict.
type twinCluster struct {
	monitor.Cluster
	reads         int // Workers is 1: only the pass's goroutine reads
	failPodStatus int
}

func (c *twinCluster) GetLease(name string) *coordinationv1.Lease {
	c.reads++
	return c.Cluster.GetLease(name)
}

func (c *twinCluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	if c.failPodStatus > 0 {
		c.failPodStatus--
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, monitortest.ErrInjected)
	}
	return c.Cluster.UpdatePodStatus(ctx, pod, status)
}

// twinLive is a twinCluster over a LiveReader, which it stays.
type twinLive struct {
	*twinCluster
	monitor.LiveReader
}

// quietScript is TestLeaseEventsSameDecisions's random script. Its
// choices depend on its seed and its own state only, never on what the
// Monitors did, so both twins get the same script even after they differ.
type quietScript struct {
	p        *pair
	rng      *rand.Rand
	stalls   bool
	kubelets []*kubelet
	pods     []types.NamespacedName
	podSpecs []quietPod
	stalled  time.Duration // while stalled: when the stall ends
	log      []string      // what it did, for a failure message
}

// kubelet is one node and its kubelet, as the script plays it.
type kubelet struct {
	name, zone string
	excluded   bool
	life       int                // incarnations: the node's UID
	alive      bool               // renews its Lease and posts its status
	ready      v1.ConditionStatus // what it posts
	resume     time.Duration      // when stopped: when it comes back (0: by chance)
	back       time.Duration      // when deleted (>0): when the node is re-created
	renew      time.Duration
	post       time.Duration
	phase      time.Duration
}

// quietPod is a pod the script adds to both clusters.
type quietPod struct {
	name, node string
	at         time.Duration
	defaults   bool
	tol        []v1.Toleration
}

func newQuietScript(seed uint64, stalls bool) *quietScript {
	s := &quietScript{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), stalls: stalls}
	renewals := []time.Duration{7500 * time.Millisecond, 10 * time.Second, 10 * time.Second, 12500 * time.Millisecond, 25 * time.Second, 40 * time.Second}
	posts := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}
	for i := range 26 {
		// n24 and n25 are zone-x, whose nodes are all excluded: a zone
		// with no zone decision, whose idle queue is dropped.
		zone := fmt.Sprintf("zone-%d", i%3)
		if i >= 24 {
			zone = "zone-x"
		}
		k := &kubelet{
			name: fmt.Sprintf("n%02d", i), zone: zone, excluded: i == 3 || i >= 24,
			alive: true, ready: v1.ConditionTrue,
			renew: renewals[s.rng.IntN(len(renewals))], post: posts[s.rng.IntN(len(posts))],
		}
		k.phase = time.Duration(s.rng.Int64N(int64(k.renew/quietTick))) * quietTick
		s.kubelets = append(s.kubelets, k)
		for j := range 3 {
			s.addPodSpec(fmt.Sprintf("%s-p%d", k.name, j), k.name, 0)
		}
	}
	return s
}

// fill adds the script's nodes, Leases and first pods to c.
func (s *quietScript) fill(c *monitortest.Cluster) {
	for _, k := range s.kubelets {
		c.AddNode(context.Background(), k.node(testutil.Epoch), monitortest.NewLease(k.name, testutil.Epoch))
	}
	for _, ps := range s.podSpecs {
		c.AddPod(context.Background(), ps.pod())
	}
}

// addPodSpec picks the tolerations of a new pod.
func (s *quietScript) addPodSpec(name, node string, at time.Duration) quietPod {
	ps := quietPod{name: name, node: node, at: at}
	exists := func(key string, secs *int64) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	switch s.rng.IntN(5) {
	case 0: // none: evicted when tainted
	case 1:
		ps.tol = []v1.Toleration{exists(v1.TaintNodeUnreachable, testutil.Seconds(0)), exists(v1.TaintNodeNotReady, testutil.Seconds(0))}
	case 2:
		ps.tol = []v1.Toleration{exists(v1.TaintNodeUnreachable, testutil.Seconds(30)), exists(v1.TaintNodeNotReady, testutil.Seconds(30))}
	case 3:
		ps.defaults = true // 300s
	case 4:
		ps.tol = []v1.Toleration{{Operator: v1.TolerationOpExists}} // forever
	}
	s.podSpecs = append(s.podSpecs, ps)
	s.pods = append(s.pods, types.NamespacedName{Namespace: "default", Name: name})
	return ps
}

func (ps quietPod) pod() *v1.Pod {
	return newPod(ps.name, ps.node, testutil.Epoch.Add(ps.at), ps.defaults, slices.Clone(ps.tol)...)
}

// node returns the kubelet's node as it registers at now: Ready, with a
// UID of this incarnation.
func (k *kubelet) node(now time.Time) *v1.Node {
	n := monitortest.NewNode(k.name, k.zone, now)
	n.UID = types.UID(fmt.Sprintf("uid-%s-%d", k.name, k.life))
	if k.excluded {
		n.Labels[monitor.LabelExcludeDisruption] = ""
	}
	return n
}

// note logs a script action.
func (s *quietScript) note(el time.Duration, format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%v ", el)+fmt.Sprintf(format, args...))
}

// step is one tick of the script: its random choices once a second,
// then every live kubelet's Lease renewal and status post that is due.
func (s *quietScript) step(el time.Duration) {
	ctx := context.Background()
	now := testutil.Epoch.Add(el)
	if el%time.Second == 0 {
		s.choose(el)
	}
	for _, k := range s.kubelets {
		if k.back > 0 || !k.alive {
			continue
		}
		if (el+k.phase)%k.renew == 0 {
			s.p.do(func(tw *twin) { tw.c.RenewLease(k.name, now) })
		}
		if (el+k.phase)%k.post == 0 {
			s.p.do(func(tw *twin) { tw.c.PostNodeStatus(ctx, k.name, k.ready, now) })
		}
	}
}

// choose makes the script's random choices at el.
func (s *quietScript) choose(el time.Duration) {
	ctx := context.Background()
	now := testutil.Epoch.Add(el)
	rng := s.rng
	between := func(lo, hi time.Duration) time.Duration { // whole seconds
		return lo + time.Duration(rng.Int64N(int64((hi-lo)/time.Second)+1))*time.Second
	}
	// Outages: 3 to 8 nodes of a zone, or every node.
	if rng.IntN(200) == 0 {
		end := el + between(60*time.Second, 6*time.Minute)
		var out []*kubelet
		if rng.IntN(3) == 0 {
			out = s.kubelets
			s.note(el, "outage of every node until %v", end)
		} else {
			zone := fmt.Sprintf("zone-%d", rng.IntN(3))
			if rng.IntN(4) == 0 {
				zone = "zone-x"
			}
			n := 3 + rng.IntN(6)
			for _, k := range s.kubelets {
				if k.zone == zone && len(out) < n {
					out = append(out, k)
				}
			}
			s.note(el, "outage of %d nodes of %s until %v", len(out), zone, end)
		}
		for _, k := range out {
			k.alive, k.resume = false, end
		}
	}
	for _, k := range s.kubelets {
		switch {
		case k.back > 0:
			if el >= k.back {
				k.back, k.life, k.alive, k.ready, k.resume = 0, k.life+1, true, v1.ConditionTrue, 0
				s.note(el, "%s re-created", k.name)
				s.p.do(func(tw *twin) { tw.c.AddNode(ctx, k.node(now), monitortest.NewLease(k.name, now)) })
			}
			continue
		case !k.alive:
			if (k.resume > 0 && el >= k.resume) || (k.resume == 0 && rng.IntN(90) == 0) {
				k.alive, k.resume = true, 0
				if rng.IntN(5) == 0 {
					k.ready = v1.ConditionFalse
				} else {
					k.ready = v1.ConditionTrue
				}
				s.note(el, "%s's kubelet back, %s", k.name, k.ready)
				s.p.do(func(tw *twin) {
					tw.c.RenewLease(k.name, now)
					tw.c.PostNodeStatus(ctx, k.name, k.ready, now)
				})
			}
		case rng.IntN(900) == 0:
			k.alive = false
			if rng.IntN(2) == 0 {
				k.resume = el + between(20*time.Second, 5*time.Minute)
			}
			s.note(el, "%s's kubelet stops", k.name)
		case rng.IntN(500) == 0:
			if k.ready == v1.ConditionTrue {
				k.ready = v1.ConditionFalse
			} else {
				k.ready = v1.ConditionTrue
			}
			s.note(el, "%s's kubelet posts %s", k.name, k.ready)
			s.p.do(func(tw *twin) { tw.c.PostNodeStatus(ctx, k.name, k.ready, now) })
		}
		if k.back > 0 {
			continue
		}
		switch {
		case rng.IntN(3000) == 0:
			k.back = el + between(5*time.Second, 90*time.Second)
			s.note(el, "%s deleted until %v", k.name, k.back)
			s.p.do(func(tw *twin) { tw.c.DeleteNode(k.name) })
		case rng.IntN(700) == 0:
			s.note(el, "%s's pods set Ready", k.name)
			s.p.do(func(tw *twin) { tw.c.SetPodsReady(ctx, k.name, now) })
		case rng.IntN(1500) == 0:
			ps := s.addPodSpec(fmt.Sprintf("%s-late%d", k.name, len(s.podSpecs)), k.name, el)
			s.note(el, "pod %s added", ps.name)
			s.p.do(func(tw *twin) { tw.c.AddPod(ctx, ps.pod()) })
		}
	}
	// Faults.
	if rng.IntN(150) == 0 {
		n := 1 + rng.IntN(3)
		s.note(el, "the next %d taint writes fail", n)
		s.p.do(func(tw *twin) { tw.c.FailTaintWrites(n) })
	}
	if rng.IntN(150) == 0 {
		n := 1 + rng.IntN(3)
		s.note(el, "the next %d evictions fail", n)
		s.p.do(func(tw *twin) { tw.c.FailEvictions(n) })
	}
	if rng.IntN(150) == 0 {
		n := 1 + rng.IntN(4)
		s.note(el, "the next %d pod status writes fail", n)
		s.p.do(func(tw *twin) { tw.via.failPodStatus = n })
	}
	if !s.stalls {
		return
	}
	switch {
	case s.stalled > 0 && el >= s.stalled:
		s.stalled = 0
		s.note(el, "the Lease cache resumes")
		s.p.do((*twin).resumeLeases)
	case s.stalled == 0 && rng.IntN(150) == 0:
		s.stalled = el + between(10*time.Second, 90*time.Second)
		s.note(el, "the Lease cache stalls until %v", s.stalled)
		s.p.do((*twin).stallLeases)
	}
}

// eventLine is an Event as the twins' streams are compared: every field.
func eventLine(e monitor.Event) string {
	return fmt.Sprintf("%v %s node=%s pod=%s zone=%s %q taint=%s state=%v qps=%g entered=%t",
		e.At.Sub(testutil.Epoch), e.Kind, e.Node, e.Pod, e.Zone, e.Detail, e.Taint.ToString(), e.State, e.QPS, e.Entered)
}

// coverageKey names what an Event shows the script reached.
func coverageKey(e monitor.Event) string {
	switch e.Kind {
	case monitor.KindZoneState:
		return fmt.Sprintf("%s %v", e.Kind, e.State)
	case monitor.KindDisruptionMode:
		if e.Entered {
			return string(e.Kind) + " entered"
		}
		return string(e.Kind) + " exited"
	}
	return string(e.Kind)
}

// nodeLine is what a node's decisions show in it: taints and conditions.
func nodeLine(n *v1.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s uid=%s taints=[", n.Name, n.UID)
	for _, t := range n.Spec.Taints {
		fmt.Fprintf(&b, " %s@%v", t.ToString(), t.TimeAdded)
	}
	b.WriteString(" ] conditions=[")
	for _, c := range n.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s hb=%v tr=%v)", c.Type, c.Status, c.Reason,
			c.LastHeartbeatTime.Sub(testutil.Epoch), c.LastTransitionTime.Sub(testutil.Epoch))
	}
	b.WriteString(" ]")
	return b.String()
}

// lastLines returns the last n of lines, one per line, indented.
func lastLines(lines []string, n int) string {
	var b strings.Builder
	for _, l := range lines[max(0, len(lines)-n):] {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// firstEvent returns the offset of the first event of kind for node
// ("": any), or -1.
func firstEvent(events []monitor.Event, kind monitor.Kind, node string) time.Duration {
	for _, e := range events {
		if e.Kind == kind && (node == "" || e.Node == node) {
			return e.At.Sub(testutil.Epoch)
		}
	}
	return -1
}

// countEvents counts the events of kind for node.
func countEvents(events []monitor.Event, kind monitor.Kind, node string) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind && e.Node == node {
			n++
		}
	}
	return n
}

// firstTaint returns the offset of the first event of kind (a taint added
// or removed) of taint on node, or -1.
func firstTaint(events []monitor.Event, kind monitor.Kind, node, taint string) time.Duration {
	for _, e := range events {
		if e.Kind == kind && e.Node == node && e.Detail == taint {
			return e.At.Sub(testutil.Epoch)
		}
	}
	return -1
}
