package monitor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// testCluster is monitortest.Cluster with the faults and probes these tests
// need on top: a hook before each node status write, injected conflicts on
// pod status writes, and each evicted pod's last status.
type testCluster struct {
	*monitortest.Cluster

	mu             sync.Mutex
	beforeStatus   func(node string) // called before a node status write
	conflictStatus int               // the next n pod status writes conflict
	evictedStatus  map[types.NamespacedName]v1.PodStatus
	// taintNoops counts, per node, the UpdateNodeTaints calls that
	// changed nothing.
	taintNoops map[string]int
}

func newTestCluster(now time.Time) *testCluster {
	c := &testCluster{Cluster: monitortest.New(now), evictedStatus: map[types.NamespacedName]v1.PodStatus{},
		taintNoops: map[string]int{}}
	c.BeforeEvict(func(_ time.Time, pod *v1.Pod) {
		c.mu.Lock()
		c.evictedStatus[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod.Status
		c.mu.Unlock()
	})
	return c
}

func (c *testCluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	c.mu.Lock()
	hook := c.beforeStatus
	c.mu.Unlock()
	if hook != nil {
		hook(node.Name)
	}
	return c.Cluster.UpdateNodeStatus(ctx, node, status)
}

func (c *testCluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	return c.Cluster.UpdateNodeTaints(ctx, name, func(n *v1.Node) (*v1.Node, bool) {
		out, changed := mutate(n)
		if !changed {
			c.mu.Lock()
			c.taintNoops[name]++
			c.mu.Unlock()
		}
		return out, changed
	})
}

func (c *testCluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	c.mu.Lock()
	conflict := c.conflictStatus > 0
	if conflict {
		c.conflictStatus--
	}
	c.mu.Unlock()
	if conflict {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, monitortest.ErrInjected)
	}
	return c.Cluster.UpdatePodStatus(ctx, pod, status)
}

// addNode adds a Ready node in zone with a Lease renewed at now.
func (c *testCluster) addNode(name, zone string, now time.Time) {
	n := testutil.WithReady(testutil.Node(name, now.Add(-time.Hour)), v1.ConditionTrue, now, now.Add(-time.Hour))
	if zone != "" {
		testutil.WithZone(n, "region", zone)
	}
	c.AddNode(context.Background(), n, monitortest.NewLease(name, now))
}

// addPod adds a pod on node; withDefaults adds the admission defaults.
func (c *testCluster) addPod(name, node string, now time.Time, withDefaults bool, tol ...v1.Toleration) {
	c.AddPod(context.Background(), newPod(name, node, now, withDefaults, tol...))
}

func newPod(name, node string, now time.Time, withDefaults bool, tol ...v1.Toleration) *v1.Pod {
	p := testutil.WithTolerations(testutil.Pod("default", name, node), tol...)
	if withDefaults {
		p.Spec.Tolerations = taints.WithDefaultTolerations(p.Spec.Tolerations, taints.DefaultTolerationTime, taints.DefaultTolerationTime)
	}
	p.CreationTimestamp = metav1.NewTime(now)
	return p
}

// setReady posts the node's Ready condition and renews its Lease, as the
// kubelet would.
func (c *testCluster) setReady(name string, s v1.ConditionStatus, now time.Time) {
	c.RenewLease(name, now)
	c.PostNodeStatus(context.Background(), name, s, now)
}

func (c *testCluster) node(name string) *v1.Node { return c.GetNode(name) }

func (c *testCluster) pod(name string) *v1.Pod {
	return c.Pod(types.NamespacedName{Namespace: "default", Name: name})
}

// sim drives a Monitor over a testCluster on a virtual clock: a monitor pass
// every MonitorPeriod (from t=0), a tainting and an eviction pass every
// TaintPeriod, and live kubelets renewing their Lease every 10s.
type sim struct {
	t      *testing.T
	c      *testCluster
	m      *monitor.Monitor
	now    time.Time
	dead   map[string]bool // kubelets that stopped
	events []monitor.Event
}

func newSim(t *testing.T, cfg monitor.Config) *sim {
	t.Helper()
	s := &sim{t: t, c: newTestCluster(testutil.Epoch), now: testutil.Epoch, dead: map[string]bool{}}
	m, err := monitor.New(cfg, s.c, func(e monitor.Event) { s.events = append(s.events, e) })
	if err != nil {
		t.Fatalf("monitor.New: %v", err)
	}
	s.m = m
	s.c.Attach(m)
	return s
}

// runUntil advances the virtual clock to end (inclusive), running passes.
func (s *sim) runUntil(end time.Duration) {
	cfg := s.m.Config()
	ctx := context.Background()
	for {
		el := s.now.Sub(testutil.Epoch)
		if el > end {
			return
		}
		s.c.SetNow(s.now)
		if el%(10*time.Second) == 0 {
			for _, n := range s.c.ListNodes() {
				if !s.dead[n.Name] {
					s.c.RenewLease(n.Name, s.now)
				}
			}
		}
		if el%cfg.MonitorPeriod == 0 {
			s.m.MonitorPass(ctx, s.now)
		}
		s.m.TaintPass(ctx, s.now)
		s.m.EvictionPass(ctx, s.now)
		s.now = s.now.Add(cfg.TaintPeriod)
	}
}

// first returns the offset of the first event of kind for node/pod, or -1.
func (s *sim) first(kind monitor.Kind, node, pod, detail string) time.Duration {
	for _, e := range s.events {
		if e.Kind == kind && (node == "" || e.Node == node) && (pod == "" || e.Pod == pod) && (detail == "" || e.Detail == detail) {
			return e.At.Sub(testutil.Epoch)
		}
	}
	return -1
}

func testConfig() monitor.Config {
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	return cfg
}
