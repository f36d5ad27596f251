package e2e

// The node agent (examples/nodeagent/agent) against the real apiserver: the
// pod worker drives pods through graceful deletion, a force delete while
// the runtime fails, static pods with UID reuse, and the whole offline-node
// story with the node controller. Agents run in the test process on the
// real clock with short periods (Lease and status every 500 ms,
// housekeeping every second, backoff 500 ms); each test's agents see only
// the test's namespace. Assertions poll (cluster.Eventually) with generous
// timeouts; nothing sleeps.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/podworker"
)

// Agent timings for the e2e tests (the kubelet's: Lease every 10 s, status
// every 10 s, housekeeping every 2 s, backoff 10 s, resync 1 min).
const (
	naRenew        = 500 * time.Millisecond
	naHousekeeping = time.Second
	naBackoff      = 500 * time.Millisecond
	naResync       = 5 * time.Second
	// naWait bounds each wait: generous, the machine is shared.
	naWait = 60 * time.Second
)

// agentConfig returns the e2e agent config for nodes, restricted to ns.
func agentConfig(ns string, rt agent.Runtime, nodes ...agent.NodeConfig) agent.Config {
	cfg := agent.DefaultConfig()
	cfg.Nodes, cfg.Runtime, cfg.Namespace = nodes, rt, ns
	cfg.LeaseDuration = 2 * time.Second
	cfg.LeaseRenewInterval = naRenew
	cfg.StatusUpdateFrequency = naRenew
	cfg.HousekeepingPeriod = naHousekeeping
	cfg.PodWorker = podworker.Config{ResyncInterval: naResync, BackoffPeriod: naBackoff}
	cfg.FileCheckFrequency = 200 * time.Millisecond
	return cfg
}

// agentRun is one running agent.
type agentRun struct {
	a      *agent.Agent
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// agentClient returns a client for agents with a high rate limit: the
// admin's, but as each node for its Lease and Node on a cluster with node
// users (startRecordedCluster).
func agentClient(t testing.TB, c *cluster.Cluster) kubernetes.Interface {
	t.Helper()
	rc := c.Config()
	rc.QPS, rc.Burst = 500, 1000
	// On a recorded cluster each node's Lease and Node requests carry
	// the node's own identity (nodeIdentity).
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &nodeIdentity{c: c, rt: rt} }
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// startAgent starts an agent and stops it when the test ends. Register the
// cleanup of its nodes before calling it, so they are deleted after it
// stopped.
func startAgent(t *testing.T, cs kubernetes.Interface, cfg agent.Config, verbosity int) *agentRun {
	t.Helper()
	return startAgentClock(t, cs, clock.RealClock{}, cfg, verbosity)
}

// startAgentClock is startAgent with the agent's clock (a skewed one, for
// example).
func startAgentClock(t *testing.T, cs kubernetes.Interface, clk clock.WithTicker, cfg agent.Config, verbosity int) *agentRun {
	t.Helper()
	a, err := agent.New(cs, clk, cfg)
	if err != nil {
		t.Fatalf("agent.New() = %v", err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(verbosity)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	r := &agentRun{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the agent (like its process exiting: the runtime's containers
// keep running) and waits for Run to return.
func (r *agentRun) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent.Run() = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("agent did not stop within 30s")
		}
	})
}

// deleteNodesAtEnd deletes the nodes and their Leases when the test ends.
func deleteNodesAtEnd(t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Cleanup(func() {
		ctx := context.Background()
		for _, n := range names {
			_ = cs.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, n, metav1.DeleteOptions{})
			_ = cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
}

// waitPodRunning waits until the agent reported p Running and Ready.
func waitPodRunning(t *testing.T, cs kubernetes.Interface, p *v1.Pod) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	cluster.Eventually(t, naWait, "pod "+p.Name+" Running and Ready", func(ctx context.Context) (bool, error) {
		var err error
		got, err = cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := podCondition(got, v1.PodReady)
		return got.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionTrue &&
			len(got.Status.ContainerStatuses) == 1 && got.Status.ContainerStatuses[0].State.Running != nil, nil
	})
	return got
}

// waitPodGone waits until p (this UID) is gone from the API.
func waitPodGone(t *testing.T, cs kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	cluster.Eventually(t, naWait, "pod "+p.Name+" deleted", func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return got.UID != p.UID, nil
	})
}

// gather returns the value of one series of the agent's metrics.
func gather(t *testing.T, a *agent.Agent, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue()
			default:
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func workingLabels(lifecycle, config string) map[string]string {
	return map[string]string{"lifecycle": lifecycle, "config": config, "static": ""}
}

// The podworker fix (kubernetes/kubernetes#113091): the
// runtime fails every kill; a running pod is force-deleted (gone from the
// API at once, so no further event arrives); the agent keeps retrying the
// kill on its own; when the runtime recovers the container is killed and
// the pod worker finishes and is forgotten.
func TestNodeAgentForceDeleteDuringRuntimeFailure(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ns := c.Namespace(t)
	node := cluster.UniqueName(t, "na-force")
	deleteNodesAtEnd(t, cs, node)
	rt := agent.NewFakeRuntime(clock.RealClock{})
	r := startAgent(t, agentClient(t, c), agentConfig(ns, rt, agent.NodeConfig{Name: node}), 2)

	p := createPod(t, cs, ns, "force", node)
	waitPodRunning(t, cs, p)
	if !rt.Running(p.UID) {
		t.Fatalf("runtime: pod %s not running although its status says so", p.Name)
	}

	rt.Fail(agent.FailKills, 0)
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("force Delete(%s) = %v", p.Name, err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get(%s) after a force delete = %v, want NotFound at once", p.Name, err)
	}
	// The agent retries on its own: the failed kills keep growing while the
	// pod is an orphan in the terminating phase.
	_, base := rt.Calls("KillPod")
	cluster.Eventually(t, naWait, "kill retried at least 3 more times", func(context.Context) (bool, error) {
		_, failed := rt.Calls("KillPod")
		return failed >= base+3, nil
	})
	cluster.Eventually(t, naWait, "kubelet_working_pods{terminating,orphan} = 1", func(context.Context) (bool, error) {
		return gather(t, r.a, "kubelet_working_pods", workingLabels("terminating", "orphan")) == 1, nil
	})
	if !rt.Running(p.UID) {
		t.Fatal("the container stopped although every kill fails")
	}

	recovered := time.Now()
	rt.Recover()
	cluster.Eventually(t, naWait, "container killed and removed", func(context.Context) (bool, error) {
		_, ok := rt.Pod(p.UID)
		return !ok, nil
	})
	cluster.Eventually(t, naWait, "pod worker finished and forgotten", func(context.Context) (bool, error) {
		s := r.a.PublishedStats()
		return s.Known == 0 && !r.a.Workers().CouldHaveRunningContainers(p.UID), nil
	})
	var stopped bool
	for _, ev := range rt.History(p.UID) {
		if ev.Kind == "stop" {
			stopped = true
			if ev.At.Before(recovered) {
				t.Errorf("container stopped at %s, before the runtime recovered at %s", stamp(ev.At), stamp(recovered))
			}
		}
	}
	if !stopped {
		t.Errorf("runtime history of %s has no stop: %v", p.Name, rt.History(p.UID))
	}
	for _, lc := range []string{"sync", "terminating", "terminated"} {
		for _, cfg := range []string{"desired", "orphan"} {
			if v := gather(t, r.a, "kubelet_working_pods", workingLabels(lc, cfg)); v != 0 {
				t.Errorf("kubelet_working_pods{%s,%s} = %v, want 0", lc, cfg, v)
			}
		}
	}
	calls, failed := rt.Calls("KillPod")
	t.Logf("KillPod: %d calls, %d failed; agent counters %+v", calls, failed, r.a.Counters())
}

// nodeLabels are the labels of an agent node in the offline-node test.
func nodeLabels(selector, zone string) map[string]string {
	n := testutil.WithZone(testutil.Node("x", time.Now()), ncRegion, zone)
	l := n.Labels
	l[ncSelectorKey] = selector
	return l
}

// The offline node, the whole story, with the node
// controller (grace 4 s). Three agents serve a1, a2 (zone A) and b1 (zone
// B); a1 runs pods that tolerate unreachable for 0 s, 3 s, forever, and the
// admission's 300 s. a1's agent stops (its containers keep running): a1
// goes Unknown and is tainted; the 0 s and 3 s pods get DisruptionTarget
// and a deletionTimestamp and stay in the API as Terminating, since
// nobody confirms. a1's agent starts again over the same runtime: it sees
// the deletions, stops those containers, deletes the pods (grace 0, UID
// precondition), keeps the other two running, and the controller removes
// a1's taints.
func TestNodeAgentOfflineNode(t *testing.T) {
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	cs := e.cs
	names := map[string]string{}
	for _, n := range []string{"a1", "a2", "b1"} {
		names[n] = cluster.UniqueName(t, "na-"+n)
	}
	deleteNodesAtEnd(t, cs, names["a1"], names["a2"], names["b1"])
	ac := agentClient(t, c)
	runtimes := map[string]*agent.FakeRuntime{}
	runs := map[string]*agentRun{}
	for n, zone := range map[string]string{"a1": "zone-a", "a2": "zone-a", "b1": "zone-b"} {
		runtimes[n] = agent.NewFakeRuntime(clock.RealClock{})
		runs[n] = startAgent(t, ac, agentConfig(e.ns, runtimes[n], agent.NodeConfig{Name: names[n], Labels: nodeLabels(e.selector, zone)}), 1)
	}
	a1 := names["a1"]
	forever := createPod(t, cs, e.ns, "forever", a1, unreachableToleration(nil))
	short := createPod(t, cs, e.ns, "short", a1, unreachableToleration(testutil.Seconds(ncShort)))
	zero := createPod(t, cs, e.ns, "zero", a1, unreachableToleration(testutil.Seconds(0)))
	defaults := createPod(t, cs, e.ns, "defaults", a1)
	a2Pod := createPod(t, cs, e.ns, "a2", names["a2"], unreachableToleration(testutil.Seconds(0)))
	b1Pod := createPod(t, cs, e.ns, "b1", names["b1"], unreachableToleration(testutil.Seconds(0)))
	for _, p := range []*v1.Pod{forever, short, zero, defaults, a2Pod, b1Pod} {
		waitPodRunning(t, cs, p)
	}

	r := e.start(1, e.client(), e.config())
	r.waitNodesKnown(t, 3)
	for _, n := range names {
		e.waitTaints(t, n, nil, []v1.Taint{notReadyNoSched, unreachableNoExecute})
	}

	t.Log("a1's agent stops")
	runs["a1"].stop(t)
	stopped := time.Now()
	cluster.Eventually(t, naWait, "a1 Ready=Unknown", func(ctx context.Context) (bool, error) {
		return readyStatus(e.node(t, a1)) == v1.ConditionUnknown, nil
	})
	e.waitTaints(t, a1, []v1.Taint{unreachableNoExecute, unreachableNoSched}, nil)
	for _, p := range []*v1.Pod{zero, short} {
		cluster.Eventually(t, naWait, "pod "+p.Name+" evicted", func(ctx context.Context) (bool, error) {
			got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			dt := podCondition(got, v1.DisruptionTarget)
			if got.DeletionTimestamp == nil || dt == nil || dt.Status != v1.ConditionTrue {
				return false, nil
			}
			return true, nil
		})
	}
	// Nobody confirms: they stay Terminating while the agent is away, and
	// their containers keep running.
	e.holdNotEvicted(t, time.Now().Add(2*time.Second), forever, defaults)
	for _, p := range []*v1.Pod{zero, short} {
		got, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil || got.UID != p.UID || got.DeletionTimestamp == nil {
			t.Fatalf("pod %s while its agent is away: %v, %v; want it Terminating", p.Name, describePod(got), err)
		}
		if !runtimes["a1"].Running(p.UID) {
			t.Errorf("container of %s stopped while its agent was away", p.Name)
		}
	}
	for _, p := range []*v1.Pod{a2Pod, b1Pod} {
		if got, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("pod %s on a live node: %v, %v; want it untouched", p.Name, describePod(got), err)
		}
	}

	t.Logf("a1's agent starts again over the same runtime (%s after it stopped)", time.Since(stopped).Round(time.Millisecond))
	restarted := time.Now()
	again := startAgent(t, ac, agentConfig(e.ns, runtimes["a1"], agent.NodeConfig{Name: a1, Labels: nodeLabels(e.selector, "zone-a")}), 1)
	for _, p := range []*v1.Pod{zero, short} {
		waitPodGone(t, cs, p)
		if runtimes["a1"].Running(p.UID) {
			t.Errorf("pod %s deleted from the API while its container runs", p.Name)
		}
		for _, ev := range runtimes["a1"].History(p.UID) {
			if ev.Kind == "stop" && ev.At.Before(restarted) {
				t.Errorf("container of %s stopped at %s, before the agent came back at %s", p.Name, stamp(ev.At), stamp(restarted))
			}
		}
	}
	e.waitTaints(t, a1, nil, []v1.Taint{unreachableNoExecute, unreachableNoSched})
	for _, p := range []*v1.Pod{forever, defaults} {
		waitPodRunning(t, cs, p)
		if !runtimes["a1"].Running(p.UID) {
			t.Errorf("container of %s not running after the agent came back", p.Name)
		}
	}
	if d := again.a.Counters().PodsDeleted; d != 2 {
		t.Errorf("the restarted agent confirmed %d deletions, want 2", d)
	}
}

// Static pods: a static pod's manifest is removed and written again with
// the same UID (and a new image) while the old instance terminates (its
// stop takes 3 s). The new instance starts only after the old one stopped
// and was removed; the mirror pod follows: the old one gets the final
// status, then a new mirror pod (new API UID) runs the new image.
func TestNodeAgentStaticPodUIDReuse(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ns := c.Namespace(t)
	node := cluster.UniqueName(t, "na-static")
	deleteNodesAtEnd(t, cs, node)
	dir := t.TempDir()
	uid := types.UID(cluster.UniqueName(t, "static-uid"))
	manifest := filepath.Join(dir, "web.yaml")
	write := func(image string) {
		t.Helper()
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: %s\n  uid: %s\nspec:\n  containers:\n  - name: c\n    image: %s\n", ns, uid, image)
		if err := os.WriteFile(manifest+".tmp", []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(manifest+".tmp", manifest); err != nil {
			t.Fatal(err)
		}
	}
	// The mirror pod is removed when the test ends (its node goes too).
	mirrorName := "web-" + node
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), mirrorName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	rt := agent.NewFakeRuntime(clock.RealClock{})
	cfg := agentConfig(ns, rt, agent.NodeConfig{Name: node})
	cfg.StaticPodPath = dir
	r := startAgent(t, agentClient(t, c), cfg, 2)

	write("img:1")
	first := waitPodRunning(t, cs, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mirrorName}})
	if first.Annotations[agent.MirrorAnnotation] != string(uid) || first.Status.ContainerStatuses[0].Image != "img:1" {
		t.Fatalf("mirror pod = %s, annotations %v; want config.mirror=%s running img:1", describePod(first), first.Annotations, uid)
	}
	if !rt.Running(uid) {
		t.Fatal("static pod not running in the runtime")
	}

	rt.SetStopDelay(3 * time.Second)
	removed := time.Now()
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, naWait, "old instance terminating", func(context.Context) (bool, error) {
		return r.a.Workers().ShouldPodContainersBeTerminating(uid), nil
	})
	write("img:2")
	cluster.Eventually(t, naWait, "restart counted", func(context.Context) (bool, error) {
		return gather(t, r.a, "kubelet_restarted_pods_total", map[string]string{"static": "true"}) == 1, nil
	})
	var second *v1.Pod
	cluster.Eventually(t, naWait, "new mirror pod running img:2", func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, mirrorName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		second = got
		return got.Status.Phase == v1.PodRunning && len(got.Status.ContainerStatuses) == 1 &&
			got.Status.ContainerStatuses[0].Image == "img:2", nil
	})
	if second.UID == first.UID {
		t.Errorf("mirror pod kept its API UID %s; want a new mirror pod for the new instance", first.UID)
	}
	if second.Annotations[agent.MirrorAnnotation] != string(uid) {
		t.Errorf("new mirror annotations = %v, want config.mirror=%s", second.Annotations, uid)
	}
	// The runtime's history: start, stop (after the 3 s stop), remove,
	// start: the new instance started only after the old one finished.
	var kinds []string
	var stop, remove, start2 time.Time
	for _, ev := range rt.History(uid) {
		kinds = append(kinds, ev.Kind)
		switch {
		case ev.Kind == "stop":
			stop = ev.At
			if ev.ExitCode != 0 || stop.Sub(removed) < 3*time.Second {
				t.Errorf("old instance stopped %s after its manifest was removed with exit code %d; want the 3s stop within the 30s grace (0)",
					stop.Sub(removed), ev.ExitCode)
			}
		case ev.Kind == "remove":
			remove = ev.At
		case ev.Kind == "start" && !stop.IsZero():
			start2 = ev.At
		}
	}
	if fmt.Sprint(kinds) != "[start stop remove start]" {
		t.Fatalf("runtime history of %s = %v, want [start stop remove start]", uid, kinds)
	}
	if start2.Before(remove) || remove.Before(stop) {
		t.Errorf("new instance started at %s, old one stopped at %s and removed at %s", stamp(start2), stamp(stop), stamp(remove))
	}
	if !rt.Running(uid) {
		t.Error("new instance not running")
	}
	cluster.Eventually(t, naWait, "kubelet_mirror_pods = 1", func(context.Context) (bool, error) {
		return gather(t, r.a, "kubelet_mirror_pods", nil) == 1, nil
	})
}
