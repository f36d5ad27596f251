package monitor_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
)

// leanCluster is a bench-only Cluster: the node list is kept sorted and
// handed out as is (no copy per call, as an informer-backed Cluster that
// keeps its own ordered list would), reads are map lookups, and writes
// replace objects (copy on write) and are forwarded to the Monitor as
// informer events. Its own cost per pass is one lock and one map lookup per
// node (the Lease).
type leanCluster struct {
	mu     sync.Mutex
	m      *monitor.Monitor
	now    time.Time
	nodes  []*v1.Node // sorted by name; replaced, never modified, on a write
	index  map[string]int
	leases map[string]*coordinationv1.Lease
	pods   map[string][]*v1.Pod // by node; replaced on a write
}

func (c *leanCluster) ListNodes() []*v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes
}

func (c *leanCluster) GetNode(name string) *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.index[name]; ok {
		return c.nodes[i]
	}
	return nil
}

func (c *leanCluster) GetLease(name string) *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases[name]
}

func (c *leanCluster) ListPodsOnNode(name string) []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[name]
}

// setNode replaces the node (copy on write of the list).
func (c *leanCluster) setNode(n *v1.Node) {
	c.mu.Lock()
	nodes := slices.Clone(c.nodes)
	nodes[c.index[n.Name]] = n
	c.nodes = nodes
	c.mu.Unlock()
}

func (c *leanCluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	n := c.GetNode(node.Name).DeepCopy()
	n.Status = *status.DeepCopy()
	c.setNode(n)
	c.m.NodeChanged(ctx, c.now, n)
	return nil
}

func (c *leanCluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	cur := c.GetNode(name)
	out, changed := mutate(cur)
	if !changed {
		return cur, nil
	}
	c.setNode(out)
	c.m.NodeChanged(ctx, c.now, out)
	return out, nil
}

func (c *leanCluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	p := pod.DeepCopy()
	p.Status = *status.DeepCopy()
	c.mu.Lock()
	pods := slices.Clone(c.pods[pod.Spec.NodeName])
	for i := range pods {
		if pods[i].Name == pod.Name {
			pods[i] = p
		}
	}
	c.pods[pod.Spec.NodeName] = pods
	c.mu.Unlock()
	c.m.PodChanged(ctx, c.now, p)
	return nil
}

func (c *leanCluster) EvictPod(ctx context.Context, key types.NamespacedName, uid types.UID, cond *v1.PodCondition) error {
	return nil // no pod has a toleration that runs out in a benchmark
}

// renewAll renews every Lease at now except those of the nodes in skip.
func (c *leanCluster) renewAll(now time.Time, skip func(name string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, l := range c.leases {
		if skip == nil || !skip(name) {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now}
		}
	}
}

var benchEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newLeanCluster builds nodes Ready nodes spread over zones zones, with
// podsPerNode pods each carrying the admission's default tolerations, and a
// Monitor over it with one worker that has seen every node and pod once.
func newLeanCluster(tb testing.TB, cfg monitor.Config, nodes, zones, podsPerNode int) *leanCluster {
	tb.Helper()
	c := &leanCluster{now: benchEpoch, index: map[string]int{}, leases: map[string]*coordinationv1.Lease{}, pods: map[string][]*v1.Pod{}}
	m, err := monitor.New(cfg, c, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c.m = m
	past := metav1.NewTime(benchEpoch.Add(-time.Hour))
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
		c.index[name] = len(c.nodes)
		c.nodes = append(c.nodes, n)
		c.leases[name] = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &metav1.MicroTime{Time: benchEpoch}},
		}
		for j := range podsPerNode {
			c.pods[name] = append(c.pods[name], benchPod(name, j))
		}
	}
	ctx := context.Background()
	for _, n := range c.nodes {
		m.NodeChanged(ctx, benchEpoch, n)
		for _, p := range c.pods[n.Name] {
			m.PodChanged(ctx, benchEpoch, p)
		}
	}
	return c
}

// benchPod is the j-th pod on node: Ready, with its own copy of the
// admission's default tolerations (as decoded from the API server).
func benchPod(node string, j int) *v1.Pod {
	past := metav1.NewTime(benchEpoch.Add(-time.Hour))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-pod-%02d", node, j), UID: types.UID(fmt.Sprintf("uid-%s-%02d", node, j)), CreationTimestamp: past},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: taints.WithDefaultTolerations(nil, taints.DefaultTolerationSeconds, taints.DefaultTolerationSeconds)},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: past},
		}},
	}
}

// decisionPass is one steady decision pass: MonitorPass, TaintPass and
// EvictionPass at now.
func (c *leanCluster) decisionPass(now time.Time) {
	ctx := context.Background()
	c.now = now
	c.m.MonitorPass(ctx, now)
	c.m.TaintPass(ctx, now)
	c.m.EvictionPass(ctx, now)
}

// BenchmarkSteadyPass: every node healthy, nothing to write. The pass time
// stays inside the Leases' validity, so no node goes stale.
func BenchmarkSteadyPass(b *testing.B) {
	for _, size := range []struct{ nodes, zones, pods int }{{5000, 3, 30}} {
		b.Run(fmt.Sprintf("nodes=%d/zones=%d/pods=%d", size.nodes, size.zones, size.nodes*size.pods), func(b *testing.B) {
			c := newLeanCluster(b, testConfig(), size.nodes, size.zones, size.pods)
			now := benchEpoch
			c.decisionPass(now)
			b.ReportAllocs()
			for b.Loop() {
				c.decisionPass(now)
			}
			b.ReportMetric(float64(size.nodes), "nodes/op")
		})
	}
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
		c := newLeanCluster(b, cfg, nodes, zones, pods)
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
			c.now = now
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

func queuedZone(c *leanCluster) string {
	for k, n := range c.m.Stats().QueuedByZone {
		if n > 0 {
			return k
		}
	}
	return ""
}
