package monitor_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// fakeCluster is an in-memory Cluster that behaves like an informer cache
// with read-your-writes: every write is visible at once and is forwarded to
// the Monitor as the informer event it would cause.
type fakeCluster struct {
	mu     sync.Mutex
	m      *monitor.Monitor
	now    time.Time
	nodes  map[string]*v1.Node
	leases map[string]*coordinationv1.Lease
	pods   map[types.NamespacedName]*v1.Pod

	staleList       map[string]*v1.Node // ListNodes returns these instead (a lagging list)
	failTaintWrites int                 // the next n taint writes fail
	failEvictions   int                 // the next n evictions fail
	beforeStatus    func(node string)   // called before a node status write
	evicted         []types.NamespacedName
	evictedStatus   map[types.NamespacedName]v1.PodStatus // each evicted pod's last status
	conflictStatus  int                                   // the next n pod status writes conflict
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{
		nodes:         map[string]*v1.Node{},
		leases:        map[string]*coordinationv1.Lease{},
		pods:          map[types.NamespacedName]*v1.Pod{},
		evictedStatus: map[types.NamespacedName]v1.PodStatus{},
	}
}

var errInjected = errors.New("injected API error")

func notFound(what, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: what}, name)
}

func (c *fakeCluster) ListNodes() []*v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*v1.Node, 0, len(c.nodes))
	for name, n := range c.nodes {
		if stale, ok := c.staleList[name]; ok {
			n = stale
		}
		out = append(out, n)
	}
	return out
}

func (c *fakeCluster) GetNode(name string) *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

func (c *fakeCluster) GetLease(name string) *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases[name]
}

func (c *fakeCluster) ListPodsOnNode(name string) []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*v1.Pod
	for _, p := range c.pods {
		if p.Spec.NodeName == name {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int { return compareStrings(a.Name, b.Name) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *fakeCluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	if c.beforeStatus != nil {
		c.beforeStatus(node.Name)
	}
	c.mu.Lock()
	cur, ok := c.nodes[node.Name]
	if !ok {
		c.mu.Unlock()
		return notFound("nodes", node.Name)
	}
	n := cur.DeepCopy()
	n.Status = *status.DeepCopy()
	c.nodes[n.Name] = n
	c.mu.Unlock()
	c.m.NodeChanged(ctx, c.now, n)
	return nil
}

func (c *fakeCluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	c.mu.Lock()
	cur, ok := c.nodes[name]
	if !ok {
		c.mu.Unlock()
		return nil, notFound("nodes", name)
	}
	out, changed := mutate(cur)
	if !changed {
		c.mu.Unlock()
		return cur, nil
	}
	if c.failTaintWrites > 0 {
		c.failTaintWrites--
		c.mu.Unlock()
		return nil, errInjected
	}
	c.nodes[name] = out
	c.mu.Unlock()
	c.m.NodeChanged(ctx, c.now, out)
	return out, nil
}

func (c *fakeCluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	cur, ok := c.pods[key]
	if !ok {
		c.mu.Unlock()
		return notFound("pods", pod.Name)
	}
	if c.conflictStatus > 0 {
		c.conflictStatus--
		c.mu.Unlock()
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, errInjected)
	}
	p := cur.DeepCopy()
	p.Status = *status.DeepCopy()
	c.pods[key] = p
	c.mu.Unlock()
	c.m.PodChanged(ctx, c.now, p)
	return nil
}

func (c *fakeCluster) EvictPod(ctx context.Context, key types.NamespacedName, uid types.UID, cond *v1.PodCondition) error {
	c.mu.Lock()
	cur, ok := c.pods[key]
	switch {
	case !ok:
		c.mu.Unlock()
		return notFound("pods", key.Name)
	case uid != "" && cur.UID != uid:
		c.mu.Unlock()
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, key.Name, errors.New("UID precondition"))
	case c.failEvictions > 0:
		c.failEvictions--
		c.mu.Unlock()
		return errInjected
	}
	delete(c.pods, key)
	c.evicted = append(c.evicted, key)
	c.evictedStatus[key] = cur.Status
	c.mu.Unlock()
	c.m.PodDeleted(key)
	return nil
}

// addNode adds a Ready node in zone with a Lease renewed at now.
func (c *fakeCluster) addNode(name, zone string, now time.Time) {
	n := testutil.WithReady(testutil.Node(name, now.Add(-time.Hour)), v1.ConditionTrue, now, now.Add(-time.Hour))
	if zone != "" {
		testutil.WithZone(n, "region", zone)
	}
	c.mu.Lock()
	c.nodes[name] = n
	c.leases[name] = testutil.Lease(name, now)
	c.mu.Unlock()
	c.m.NodeChanged(context.Background(), now, n)
}

// addPod adds a pod on node; withDefaults adds the admission defaults.
func (c *fakeCluster) addPod(name, node string, now time.Time, withDefaults bool, tol ...v1.Toleration) {
	p := testutil.WithTolerations(testutil.Pod("default", name, node), tol...)
	if withDefaults {
		p.Spec.Tolerations = taints.WithDefaultTolerations(p.Spec.Tolerations, taints.DefaultTolerationSeconds, taints.DefaultTolerationSeconds)
	}
	p.CreationTimestamp = metav1.NewTime(now)
	c.mu.Lock()
	c.pods[types.NamespacedName{Namespace: "default", Name: name}] = p
	c.mu.Unlock()
	c.m.PodChanged(context.Background(), now, p)
}

// renew renews node's Lease at now (the kubelet heartbeat).
func (c *fakeCluster) renew(name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.leases[name]; ok {
		c.leases[name] = testutil.Lease(name, now)
	}
}

// setReady writes the Ready condition as the kubelet would.
func (c *fakeCluster) setReady(name string, s v1.ConditionStatus, now time.Time) {
	c.mu.Lock()
	n := c.nodes[name].DeepCopy()
	testutil.WithReady(n, s, now, now)
	c.nodes[name] = n
	c.leases[name] = testutil.Lease(name, now)
	c.mu.Unlock()
	c.m.NodeChanged(context.Background(), now, n)
}

func (c *fakeCluster) node(name string) *v1.Node { return c.GetNode(name) }

func (c *fakeCluster) pod(name string) *v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[types.NamespacedName{Namespace: "default", Name: name}]
}

// sim drives a Monitor over a fakeCluster on a virtual clock: a monitor pass
// every MonitorPeriod (from t=0), a tainting and an eviction pass every
// TaintPeriod, and live kubelets renewing their Lease every 10s.
type sim struct {
	t      *testing.T
	c      *fakeCluster
	m      *monitor.Monitor
	now    time.Time
	dead   map[string]bool // kubelets that stopped
	events []monitor.Event
}

func newSim(t *testing.T, cfg monitor.Config) *sim {
	t.Helper()
	s := &sim{t: t, c: newFakeCluster(), now: testutil.Epoch, dead: map[string]bool{}}
	m, err := monitor.New(cfg, s.c, func(e monitor.Event) { s.events = append(s.events, e) })
	if err != nil {
		t.Fatalf("monitor.New: %v", err)
	}
	s.m, s.c.m, s.c.now = m, m, s.now
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
		s.c.now = s.now
		if el%(10*time.Second) == 0 {
			for name := range s.c.nodes {
				if !s.dead[name] {
					s.c.renew(name, s.now)
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
