package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/taints"
)

var env cluster.Shared

func TestMain(m *testing.M) {
	// Quiet managers unless LIFECYCLE_E2E_LOG is set.
	level := zapcore.ErrorLevel
	if os.Getenv("LIFECYCLE_E2E_LOG") != "" {
		level = zapcore.InfoLevel
	}
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	os.Exit(env.Main(m))
}

const (
	condKD   = "KernelDeadlock"
	taintKey = "example.com/kernel-deadlock"
	timeout  = 30 * time.Second
	selKey   = "conditiontaint-e2e"
)

// fixture is one test's nodes (labelled for its controller only) and
// namespace.
type fixture struct {
	t   *testing.T
	cs  kubernetes.Interface
	ns  string
	sel string // label value selecting this test's nodes
	ctl *controller.Controller
}

func newFixture(t *testing.T) *fixture {
	c := env.Cluster(t)
	return &fixture{t: t, cs: c.Clientset(t), ns: c.Namespace(t), sel: cluster.UniqueName(t, "sel")}
}

func (f *fixture) config(rate float64) controller.Config {
	cfg := controller.DefaultConfig()
	cfg.Conditions = []controller.ConditionRule{{Type: condKD, Status: "True", Taint: controller.TaintSpec{Key: taintKey, Effect: "NoExecute"}}}
	cfg.Zones.Rate = rate
	cfg.PassPeriod = metav1.Duration{Duration: 200 * time.Millisecond}
	cfg.NodeSelector = selKey + "=" + f.sel
	return cfg
}

// start runs the controller on a manager until the test ends.
func (f *fixture) start(cfg controller.Config, leaderElect bool) {
	f.t.Helper()
	c := env.Cluster(f.t)
	sel, err := labels.Parse(cfg.NodeSelector)
	if err != nil {
		f.t.Fatal(err)
	}
	mgr, err := manager.New(f.serviceAccountConfig(c.Config()), manager.Options{
		LeaderElection:          leaderElect,
		LeaderElectionID:        "conditiontaint-" + f.sel,
		LeaderElectionNamespace: f.ns,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{f.ns: {}},
			// As main.go: nodes by the selector, bound pods only.
			ByObject: map[client.Object]cache.ByObject{
				&v1.Node{}: {Label: sel},
				&v1.Pod{}:  {Field: fields.OneTermNotEqualSelector("spec.nodeName", "")},
			},
		},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := controller.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		f.t.Fatal(err)
	}
	f.ctl, err = controller.New(controller.Options{
		Config: cfg, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: clock.RealClock{},
		Recorder: mgr.GetEventRecorder("conditiontaint"), Metrics: m, Log: log.Log.WithName(f.sel),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.ctl.SetupWithManager(mgr); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			f.t.Errorf("manager: %v", err)
		}
	}()
	f.t.Cleanup(func() { cancel(); wg.Wait() })
}

// serviceAccountConfig installs deploy/rbac.yaml for this test (cluster
// objects renamed, subjects and the leader election Role in the test's
// namespace) and returns admin with impersonation of its ServiceAccount:
// the controller runs with exactly the deployed permissions.
func (f *fixture) serviceAccountConfig(admin *rest.Config) *rest.Config {
	f.t.Helper()
	data, err := os.ReadFile("../deploy/rbac.yaml")
	if err != nil {
		f.t.Fatal(err)
	}
	ctx := context.Background()
	rbac := f.cs.RbacV1()
	var sa string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			f.t.Fatal(err)
		}
		decode := func(into any) {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				f.t.Fatalf("rbac.yaml %s: %v", meta.Kind, err)
			}
		}
		switch meta.Kind {
		case "ServiceAccount":
			var o v1.ServiceAccount
			decode(&o)
			sa = o.Name
		case "ClusterRole":
			var o rbacv1.ClusterRole
			decode(&o)
			o.Name += "-" + f.sel
			if _, err := rbac.ClusterRoles().Create(ctx, &o, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			f.t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			decode(&o)
			o.Name += "-" + f.sel
			o.RoleRef.Name += "-" + f.sel
			o.Subjects[0].Namespace = f.ns
			if _, err := rbac.ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			f.t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		case "Role":
			var o rbacv1.Role
			decode(&o)
			if _, err := rbac.Roles(f.ns).Create(ctx, &o, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
		case "RoleBinding":
			var o rbacv1.RoleBinding
			decode(&o)
			o.Subjects[0].Namespace = f.ns
			if _, err := rbac.RoleBindings(f.ns).Create(ctx, &o, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
		default:
			f.t.Fatalf("rbac.yaml: unexpected kind %q", meta.Kind)
		}
	}
	if sa == "" {
		f.t.Fatal("rbac.yaml: no ServiceAccount")
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + f.ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"},
	}
	return cfg
}

// nodes creates n nodes in zone, the first sick ones already reporting the
// condition (node status is accepted on create, as a kubelet registers).
func (f *fixture) nodes(zone string, n, sick int) []string {
	f.t.Helper()
	var names []string
	for i := range n {
		st := v1.ConditionFalse
		if i < sick {
			st = v1.ConditionTrue
		}
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%s-%d", f.sel, zone, i),
				Labels: map[string]string{selKey: f.sel, v1.LabelTopologyZone: zone, v1.LabelTopologyRegion: "r"},
			},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
				{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
				{Type: condKD, Status: st, Reason: "KernelHasNoDeadlock"},
			}},
		}
		got, err := f.cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		names = append(names, got.Name)
		f.t.Cleanup(func() {
			_ = f.cs.CoreV1().Nodes().Delete(context.Background(), got.Name, metav1.DeleteOptions{})
		})
	}
	return names
}

// setCondition writes KernelDeadlock through the status subresource, as
// node-problem-detector does.
func (f *fixture) setCondition(name string, st v1.ConditionStatus) {
	f.t.Helper()
	cluster.Eventually(f.t, timeout, "set condition on "+name, func(ctx context.Context) (bool, error) {
		n, err := f.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == condKD {
				n.Status.Conditions[i].Status = st
				n.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
		}
		_, err = f.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err == nil, client.IgnoreAlreadyExists(ignoreConflict(err))
	})
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// taintTime returns the controller's taint's TimeAdded, if the node has it.
func (f *fixture) taintTime(ctx context.Context, name string) (time.Time, bool, error) {
	n, err := f.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, false, err
	}
	for _, t := range n.Spec.Taints {
		if t.Key == taintKey {
			if t.TimeAdded == nil {
				return time.Time{}, true, fmt.Errorf("node %s: taint without TimeAdded", name)
			}
			return t.TimeAdded.Time, true, nil
		}
	}
	return time.Time{}, false, nil
}

// tainted counts the tainted nodes among names.
func (f *fixture) tainted(ctx context.Context, names []string) ([]time.Time, error) {
	var out []time.Time
	for _, n := range names {
		at, ok, err := f.taintTime(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, at)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out, nil
}

// hasEvent reports whether an event with reason regards the object name.
func (f *fixture) hasEvent(ctx context.Context, ns, name, reason string) (bool, error) {
	l, err := f.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		return false, err
	}
	return len(l.Items) > 0, nil
}

func TestRatePerZone(t *testing.T) {
	f := newFixture(t)
	a := f.nodes("a", 10, 0)
	b := f.nodes("b", 10, 0)
	f.start(f.config(1), true) // 1 node per second per zone
	// Three nodes of zone a (30%, under the 33% breaker) and two of zone b
	// report KernelDeadlock.
	for _, n := range []string{a[0], a[1], a[2], b[0], b[1]} {
		f.setCondition(n, v1.ConditionTrue)
	}
	var ta, tb []time.Time
	cluster.Eventually(t, timeout, "3 taints in zone a and 2 in zone b", func(ctx context.Context) (bool, error) {
		var err error
		if ta, err = f.tainted(ctx, a); err != nil {
			return false, err
		}
		if tb, err = f.tainted(ctx, b); err != nil {
			return false, err
		}
		return len(ta) == 3 && len(tb) == 2, nil
	})
	// TimeAdded has whole seconds: taints 1s apart differ by at least 1s.
	for _, ts := range [][]time.Time{ta, tb} {
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < time.Second {
				t.Errorf("taints %v apart in one zone, want >= 1s (rate 1/s): %v", d, ts)
			}
		}
	}
	// The zones have their own buckets: b's first taint does not wait for a's.
	if d := tb[0].Sub(ta[0]); d > time.Second || d < -time.Second {
		t.Errorf("first taints of zones a and b %v apart, want within 1s: %v %v", d, ta, tb)
	}
	// Which node waited depends on the order the cache saw the conditions.
	cluster.Eventually(t, timeout, "a WaitingForZoneRate event in zone a", func(ctx context.Context) (bool, error) {
		for _, n := range a[:3] {
			if ok, err := f.hasEvent(ctx, "default", n, controller.ReasonWaitingForRate); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	})
}

func TestBreakerHoldsBadRollout(t *testing.T) {
	f := newFixture(t)
	c := f.nodes("c", 10, 2)
	cfg := f.config(5)
	// The breaker trips at 3 of 10: whichever of the two new conditions the
	// cache sees first trips it, so no node can slip through between them.
	cfg.Zones.UnhealthyThreshold = 0.3
	f.start(cfg, false)
	cluster.Eventually(t, timeout, "the two sick nodes tainted", func(ctx context.Context) (bool, error) {
		ts, err := f.tainted(ctx, c[:2])
		return len(ts) == 2, err
	})
	// Two more report KernelDeadlock: 40% of the zone, a bad rollout.
	f.setCondition(c[2], v1.ConditionTrue)
	f.setCondition(c[3], v1.ConditionTrue)
	for _, n := range c[2:4] {
		cluster.Eventually(t, timeout, "HeldByBreaker event on "+n, func(ctx context.Context) (bool, error) {
			return f.hasEvent(ctx, "default", n, controller.ReasonHeldByBreaker)
		})
	}
	// Held means the zone's rate is 0: nothing more was or will be tainted.
	if ts, err := f.tainted(context.Background(), c); err != nil || len(ts) != 2 {
		t.Fatalf("tainted in a tripped zone: %d nodes (%v), want the 2 from before", len(ts), err)
	}
	// The rollout is fixed on two nodes: 2 of 10, the zone resumes; the
	// healed tainted node is untainted, the still sick held node tainted.
	f.setCondition(c[0], v1.ConditionFalse)
	f.setCondition(c[2], v1.ConditionFalse)
	cluster.Eventually(t, timeout, "c-1 and c-3 tainted, c-0 untainted", func(ctx context.Context) (bool, error) {
		ts, err := f.tainted(ctx, c)
		if err != nil || len(ts) != 2 {
			return false, err
		}
		_, ok, err := f.taintTime(ctx, c[3])
		return ok, err
	})
}

func (f *fixture) pod(name, node string, tol *int64, tolerate bool) *v1.Pod {
	f.t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers:                    []v1.Container{{Name: "c", Image: "registry.invalid/none"}},
		},
	}
	if tolerate {
		p.Spec.Tolerations = []v1.Toleration{{Key: taintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: tol}}
	}
	got, err := f.cs.CoreV1().Pods(f.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

// evictedAt returns the pod's deletionTimestamp once it is deleting, and
// checks the DisruptionTarget condition was written first.
func (f *fixture) evictedAt(ctx context.Context, name string) (time.Time, bool, error) {
	p, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return time.Time{}, true, fmt.Errorf("pod %s gone: deletionTimestamp unknown", name)
	}
	if err != nil || p.DeletionTimestamp == nil {
		return time.Time{}, false, err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == taints.DisruptionTargetReason {
			return p.DeletionTimestamp.Time, true, nil
		}
	}
	return time.Time{}, true, fmt.Errorf("pod %s deleted without DisruptionTarget: %+v", name, p.Status.Conditions)
}

func TestEvictionsAndCancel(t *testing.T) {
	f := newFixture(t)
	d := f.nodes("d", 10, 0)
	none := f.pod("none", d[0], nil, false)
	short := f.pod("short", d[0], ptr.To[int64](3), true) // "60s", scaled down
	long := f.pod("long", d[0], ptr.To[int64](600), true)
	forever := f.pod("forever", d[0], nil, true)
	other := f.pod("other", d[1], nil, false)
	f.start(f.config(5), false)
	f.setCondition(d[0], v1.ConditionTrue)

	var tNone, tShort time.Time
	cluster.Eventually(t, timeout, "pod without a toleration evicted", func(ctx context.Context) (bool, error) {
		at, ok, err := f.evictedAt(ctx, none.Name)
		tNone = at
		return ok, err
	})
	cluster.Eventually(t, timeout, "pod tolerating 3s evicted", func(ctx context.Context) (bool, error) {
		at, ok, err := f.evictedAt(ctx, short.Name)
		tShort = at
		return ok, err
	})
	// Both were deleted with the same grace period: their deletion
	// timestamps (whole seconds) are the toleration apart.
	if gap := tShort.Sub(tNone); gap < 2*time.Second || gap > 6*time.Second {
		t.Errorf("short evicted %v after none, want about 3s", gap)
	}
	key := func(p *v1.Pod) types.NamespacedName {
		return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	if x := f.ctl.Explain(key(forever)); x.State != taints.EvictionToleratedForever {
		t.Errorf("Explain(forever) = %v", x)
	}
	if x := f.ctl.Explain(key(long)); x.State != taints.EvictionScheduled {
		t.Errorf("Explain(long) = %v, want scheduled", x)
	}
	// Clearing the condition removes the taint and cancels long's eviction.
	f.setCondition(d[0], v1.ConditionFalse)
	cluster.Eventually(t, timeout, "taint removed and long's eviction cancelled", func(ctx context.Context) (bool, error) {
		_, ok, err := f.taintTime(ctx, d[0])
		return !ok && f.ctl.Explain(key(long)).State == taints.EvictionNodeNotTainted, err
	})
	for _, p := range []*v1.Pod{long, forever, other} {
		if _, ok, err := f.evictedAt(context.Background(), p.Name); ok || err != nil {
			t.Errorf("pod %s evicted (%v)", p.Name, err)
		}
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	e := f.nodes("e", 10, 0)
	none := f.pod("none", e[0], nil, false)
	cfg := f.config(5)
	cfg.DryRun = true
	f.start(cfg, false)
	f.setCondition(e[0], v1.ConditionTrue)
	before, err := f.cs.CoreV1().Nodes().Get(context.Background(), e[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, timeout, "would-add event on the node", func(ctx context.Context) (bool, error) {
		return f.hasEvent(ctx, "default", e[0], controller.ReasonWouldTaint)
	})
	cluster.Eventually(t, timeout, "would-evict event on the pod", func(ctx context.Context) (bool, error) {
		return f.hasEvent(ctx, f.ns, none.Name, controller.ReasonWouldEvict)
	})
	after, err := f.cs.CoreV1().Nodes().Get(context.Background(), e[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (The apiserver's TaintNodesByCondition admission adds
	// node.kubernetes.io/not-ready on create; ours must not be there.)
	if after.ResourceVersion != before.ResourceVersion || slices.ContainsFunc(after.Spec.Taints, func(t v1.Taint) bool { return t.Key == taintKey }) {
		t.Errorf("node written in dry run: resourceVersion %s → %s, taints %v", before.ResourceVersion, after.ResourceVersion, after.Spec.Taints)
	}
	if _, ok, err := f.evictedAt(context.Background(), none.Name); ok || err != nil {
		t.Errorf("pod evicted in dry run (%v)", err)
	}
}

const nodePoolLabel = "karpenter.sh/nodepool"

// poolNode creates a node of pool (the karpenter.sh/nodepool label; every
// node in one zone), reporting the condition or not, with taints.
func (f *fixture) poolNode(pool string, i int, sick bool, ts ...v1.Taint) string {
	f.t.Helper()
	st := v1.ConditionFalse
	if sick {
		st = v1.ConditionTrue
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%s-%d", f.sel, pool, i),
			Labels: map[string]string{selKey: f.sel, nodePoolLabel: pool, v1.LabelTopologyZone: "z", v1.LabelTopologyRegion: "r"},
		},
		Spec: v1.NodeSpec{Taints: ts},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
			{Type: condKD, Status: st, Reason: "KernelDeadlockCheck"},
		}},
	}
	got, err := f.cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = f.cs.CoreV1().Nodes().Delete(context.Background(), got.Name, metav1.DeleteOptions{}) })
	return got.Name
}

// TestPauseEvictionsWhileTripped: grouped by node pool, with maxUnhealthy 1
// and pauseEvictions, a pool with two unhealthy nodes is tripped: the pod on
// its node tainted before (no toleration: due at once) is not evicted, with
// a ConditionTaintEvictionPaused event, while the pod of the other pool's
// tainted node is; when the pool recovers, the held pod goes. Grouped by
// zone (the default) the three unhealthy nodes would trip the one zone.
// Without pauseEvictions the held pod goes at once and the test fails.
func TestPauseEvictionsWhileTripped(t *testing.T) {
	f := newFixture(t)
	before := v1.Taint{Key: taintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Now().Add(-time.Minute)}}
	p := []string{f.poolNode("p", 0, true, before), f.poolNode("p", 1, true), f.poolNode("p", 2, false), f.poolNode("p", 3, false)}
	q := []string{f.poolNode("q", 0, true), f.poolNode("q", 1, false), f.poolNode("q", 2, false)}
	held := f.pod("held", p[0], nil, false)
	other := f.pod("other", q[0], nil, false)
	cfg := f.config(5)
	cfg.Zones.GroupBy = nodePoolLabel
	cfg.Zones.MaxUnhealthy = ptr.To(intstr.FromInt32(1))
	cfg.Zones.PauseEvictions = true
	f.start(cfg, false)

	cluster.Eventually(t, timeout, "pool q's node tainted and its pod evicted", func(ctx context.Context) (bool, error) {
		_, ok, err := f.evictedAt(ctx, other.Name)
		return ok, err
	})
	cluster.Eventually(t, timeout, "ConditionTaintEvictionPaused on the held pod, HeldByBreaker on p-1", func(ctx context.Context) (bool, error) {
		paused, err := f.hasEvent(ctx, f.ns, held.Name, controller.ReasonEvictionPaused)
		if err != nil || !paused {
			return false, err
		}
		return f.hasEvent(ctx, "default", p[1], controller.ReasonHeldByBreaker)
	})
	// The pause took effect: the pod, due since the start, is still there,
	// and the controller says why.
	if _, ok, err := f.evictedAt(context.Background(), held.Name); ok || err != nil {
		t.Fatalf("pod on the tripped pool evicted (%v)", err)
	}
	key := types.NamespacedName{Namespace: held.Namespace, Name: held.Name}
	if why, ok := f.ctl.EvictionPaused(key); !ok || !strings.Contains(why, `group karpenter.sh/nodepool="p" is PartialDisruption: 2 of 4 nodes unhealthy, more than maxUnhealthy 1`) {
		t.Errorf("EvictionPaused = %q, %v", why, ok)
	}
	if _, tainted, err := f.taintTime(context.Background(), p[1]); tainted || err != nil {
		t.Errorf("p-1 tainted in a tripped pool (%v)", err)
	}
	// p-1 recovers: 1 of 4, the pool resumes and the held pod goes.
	f.setCondition(p[1], v1.ConditionFalse)
	cluster.Eventually(t, timeout, "held pod evicted once the pool recovered", func(ctx context.Context) (bool, error) {
		_, ok, err := f.evictedAt(ctx, held.Name)
		return ok, err
	})
}
