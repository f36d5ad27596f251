package monitor_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/taints"
)

// benchCluster is the monitortest.Cluster of a benchmark and its Monitor.
type benchCluster struct {
	*monitortest.Cluster
	m *monitor.Monitor
	// clusterBytes is the live heap the filled cluster took, before the
	// Monitor saw it.
	clusterBytes uint64
}

// renewAll renews every Lease at now except those of the nodes in skip.
func (c *benchCluster) renewAll(now time.Time, skip func(name string) bool) {
	for _, n := range c.ListNodes() {
		if skip == nil || !skip(n.Name) {
			c.RenewLease(n.Name, now)
		}
	}
}

var benchEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newBenchCluster builds nodes Ready nodes spread over zones zones, with
// podsPerNode pods each carrying the admission's default tolerations, and a
// Monitor over it (cfg) that has seen every node and pod once. The pods are
// stamped (monitortest.Cluster.AddStampedPods) from one template, as a
// simulation adds them.
func newBenchCluster(tb testing.TB, cfg monitor.Config, nodes, zones, podsPerNode int) *benchCluster {
	tb.Helper()
	before := liveHeap()
	c := &benchCluster{Cluster: monitortest.New(benchEpoch)}
	m, err := monitor.New(cfg, c.Cluster, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c.m = m
	ctx := context.Background()
	past := metav1.NewTime(benchEpoch.Add(-time.Hour))
	tmpl := benchPod("", 0)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: past, Labels: map[string]string{
				v1.LabelTopologyRegion: "region-1",
				v1.LabelTopologyZone:   fmt.Sprintf("zone-%d", i%zones),
			}},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(benchEpoch), LastTransitionTime: past,
			}}},
		}
		c.AddNode(ctx, n, monitortest.NewLease(name, benchEpoch))
		c.AddStampedPods(ctx, name, tmpl, podsPerNode, func(j int) (string, types.UID) {
			// UIDs as an API server writes them (UUIDs), numbered: the
			// cluster and the Evictor keep each in 16 bytes or none.
			return fmt.Sprintf("%s-pod-%02d", name, j), types.UID(fmt.Sprintf("6f1c2a34-8b9d-4e5f-a6b7-%012x", i*podsPerNode+j))
		})
	}
	c.clusterBytes = liveHeap() - before
	c.Attach(m)
	c.Sync(ctx)
	return c
}

// benchPod is the j-th pod on node: Ready, with its own copy of the
// admission's default tolerations (as decoded from the API server).
func benchPod(node string, j int) *v1.Pod {
	past := metav1.NewTime(benchEpoch.Add(-time.Hour))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-pod-%02d", node, j), UID: types.UID(fmt.Sprintf("uid-%s-%02d", node, j)), CreationTimestamp: past},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: past},
		}},
	}
}

// decisionPass is one steady decision pass: MonitorPass, TaintPass and
// EvictionPass at now.
func (c *benchCluster) decisionPass(now time.Time) {
	ctx := context.Background()
	c.SetNow(now)
	c.m.MonitorPass(ctx, now)
	c.m.TaintPass(ctx, now)
	c.m.EvictionPass(ctx, now)
}

// BenchmarkSteadyPass: every node healthy, nothing to write. The pass time
// stays inside the Leases' validity, so no node goes stale. It reports the
// pass's time per node (ns/node: wall time; cpu-ns/node: the process's CPU
// time, which a loaded machine disturbs less) and the memory kept per pod:
// B/pod is the heap after setup over the pods (the cluster, nodes and
// Leases included, and the Monitor), cluster-B/pod the cluster's share,
// monitor-B/pod the rest (the Monitor's own, mostly its Evictor's record
// of each pod). The 100,000-node size (3 million pods, a gigabyte and about a
// minute of setup) is skipped with -short.
func BenchmarkSteadyPass(b *testing.B) {
	for _, size := range []struct{ nodes, zones, pods int }{{5000, 3, 30}, {20000, 3, 30}, {100000, 3, 30}} {
		b.Run(fmt.Sprintf("nodes=%d/zones=%d/pods=%d", size.nodes, size.zones, size.nodes*size.pods), func(b *testing.B) {
			if size.nodes > 20000 && testing.Short() {
				b.Skip("-short: 100,000 nodes take a gigabyte and about a minute to set up")
			}
			before := liveHeap()
			c := newBenchCluster(b, testConfig(), size.nodes, size.zones, size.pods)
			now := benchEpoch
			c.decisionPass(now)
			kept := liveHeap() - before
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				c.decisionPass(now)
			}
			cpu = cpuTime() - cpu
			pods := float64(size.nodes * size.pods)
			b.ReportMetric(float64(size.nodes), "nodes/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size.nodes), "ns/node")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(size.nodes), "cpu-ns/node")
			b.ReportMetric(float64(kept)/pods, "B/pod")
			b.ReportMetric(float64(c.clusterBytes)/pods, "cluster-B/pod")
			b.ReportMetric((float64(kept)-float64(c.clusterBytes))/pods, "monitor-B/pod")
			runtime.KeepAlive(c)
		})
	}
}

// liveHeap returns the live heap after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkOutagePass: one zone of three is silent (its 1,667 nodes are
// Unknown, tainted unreachable:NoExecute (here at an unthrottled rate), and
// their 50,000 pods marked Ready=False and counting down their 300s
// tolerations); a decision pass during the outage, the other zones healthy.
func BenchmarkOutagePass(b *testing.B) {
	const nodes, zones, pods = 5000, 3, 30
	b.Run(fmt.Sprintf("nodes=%d/zones=%d/pods=%d", nodes, zones, nodes*pods), func(b *testing.B) {
		cfg := testConfig()
		cfg.Zones.EvictionQPS = 1e9
		c := newBenchCluster(b, cfg, nodes, zones, pods)
		silent := func(name string) bool {
			var i int
			fmt.Sscanf(strings.TrimPrefix(name, "node-"), "%d", &i)
			return i%zones == 0
		}
		now := benchEpoch
		c.decisionPass(now)
		now = now.Add(time.Minute)
		c.renewAll(now, silent)
		c.decisionPass(now) // the silent zone goes Unknown and is queued
		for c.m.Stats().QueuedByZone[queuedZone(c)] > 0 {
			now = now.Add(time.Millisecond) // a token per zone
			c.SetNow(now)
			c.m.TaintPass(context.Background(), now)
		}
		c.renewAll(now, silent)
		c.decisionPass(now)
		tainted := 0
		for _, n := range c.ListNodes() {
			if slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }) {
				tainted++
			}
		}
		if want := (nodes + zones - 1) / zones; tainted != want || c.m.Stats().Evictions != want*pods {
			b.Fatalf("outage: %d nodes tainted, %d evictions pending; want %d and %d", tainted, c.m.Stats().Evictions, want, want*pods)
		}
		runtime.GC()
		b.ReportAllocs()
		for b.Loop() {
			c.decisionPass(now)
		}
		b.ReportMetric(float64(nodes), "nodes/op")
	})
}

func queuedZone(c *benchCluster) string {
	for k, n := range c.m.Stats().QueuedByZone {
		if n > 0 {
			return k
		}
	}
	return ""
}
