package e2e

// Helpers for the tests that run controllers as processes (the parity,
// RBAC, failover and metrics tests): the examples/nodecontroller binary,
// and a world of nodes and pods with fixed names, run by node agents.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// testUserAgent is the user agent of the tests' own clients
// (cluster.Cluster.Config), which tells their writes from the controllers'.
const testUserAgent = "lifecycle-e2e"

var ncBinary struct {
	once sync.Once
	path string
	err  error
}

// nodeControllerBinary builds examples/nodecontroller once per test binary
// (into the user cache directory, in a directory of this checkout's own,
// replaced atomically) and returns its path.
// It is built with -race: CI's unit tests (go test -race) have compiled its
// packages that way already, so the build is a link, and a data race in the
// running controller fails the test (stopProcessAtEnd).
func nodeControllerBinary(t *testing.T) string {
	t.Helper()
	ncBinary.once.Do(func() {
		t0 := time.Now()
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			ncBinary.err = err
			return
		}
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		// One directory per checkout: several checkouts (git worktrees)
		// on one machine each build their own controller, and one's
		// build must never replace the binary another's tests run.
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(base, "lifecycle-e2e", "nodecontroller-bin", hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			ncBinary.err = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", os.Getpid()))
		cmd := exec.Command("go", "build", "-race", "-o", tmp, "./examples/nodecontroller")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			ncBinary.err = fmt.Errorf("go build ./examples/nodecontroller: %v\n%s", err, out)
			return
		}
		ncBinary.path = filepath.Join(dir, "nodecontroller")
		ncBinary.err = os.Rename(tmp, ncBinary.path)
		if ncBinary.err == nil {
			// Logged by the test that built it, inside Do: parallel
			// tests call this at once.
			t.Logf("built examples/nodecontroller in %v: %s", time.Since(t0).Round(100*time.Millisecond), ncBinary.path)
		}
	})
	if ncBinary.err != nil {
		t.Fatalf("e2e: %v", ncBinary.err)
	}
	return ncBinary.path
}

// binariesWithKCM returns the server binaries with kube-controller-manager,
// skipping the test (failing it with $LIFECYCLE_E2E_REQUIRED=1) when it is
// missing.
func binariesWithKCM(t *testing.T) cluster.Binaries {
	t.Helper()
	b, err := cluster.FindBinaries()
	if err == nil {
		_, err = b.RequireControllerManager()
	}
	if err != nil {
		if cluster.Required() {
			t.Fatalf("e2e: %v", err)
		}
		t.Skipf("e2e: %v", err)
	}
	return b
}

// stopProcessAtEnd stops p (SIGTERM, SIGKILL after 10 s) when the test
// ends, fails the test if the race detector reported a data race in its
// log, and logs the log's tail if the test failed.
func stopProcessAtEnd(t *testing.T, p *cluster.Process) {
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if b, err := os.ReadFile(p.LogPath()); err == nil && bytes.Contains(b, []byte("WARNING: DATA RACE")) {
			i := bytes.Index(b, []byte("WARNING: DATA RACE"))
			t.Errorf("data race in %s:\n%s", p.LogPath(), b[i:min(len(b), i+4000)])
		}
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.LogPath(), p.Tail(40))
		}
	})
}

// worldNode and worldPod describe the objects of a scenario; their names are
// fixed, so that two fresh clusters hold the same objects.
type worldNode struct{ name, zone string }

type worldPod struct {
	name, node string
	// tol is the unreachable NoExecute toleration in seconds; tolNone: no
	// toleration of the pod's own (admission adds 300 s), tolForever: no
	// limit.
	tol int64
}

const (
	tolNone    = -1
	tolForever = -2
)

// world is a scenario's nodes and pods, played by node agents
// (examples/nodeagent/agent) in the test process: one agent serves the
// nodes that will go silent, another the rest. The agents register the
// nodes (Ready, with the kubelet's conditions), renew their Leases every
// renew period and run the pods (Running, Ready). Silencing stops the first
// agent, as when those nodes' kubelets die: their Leases and status stop, and
// nobody confirms their pods' deletions, which stay Terminating.
type world struct {
	cs kubernetes.Interface
	// ac is the agents' client (agentClient): the last renewal of a
	// silenced node is the node's own (its identity on a recorded
	// cluster).
	ac           kubernetes.Interface
	silentNodes  []string
	live, silent *agentRun // nil when the group has no node
	// skewed are the agents of the nodes with a skewed clock, one each
	// (startSkewedWorld).
	skewed map[string]*agentRun
}

// startWorld creates namespace ns, starts the agents and the pods, and
// returns once every node is Ready with a Lease and every pod Running. Its
// agents stop when the test ends.
func startWorld(t *testing.T, c *cluster.Cluster, ns string, nodes []worldNode, pods []worldPod, silent []string, renew time.Duration) *world {
	t.Helper()
	return startSkewedWorld(t, c, ns, nodes, pods, silent, nil, renew)
}

// startSkewedWorld is startWorld where each node named in skews has an
// agent of its own whose clock is that far ahead of the real one (behind
// when negative): it writes its Lease renewTime, its conditions' heartbeat
// and transition times and its pods' times from that clock, as a kubelet
// on a host whose clock is off. A skewed node is never silent.
func startSkewedWorld(t *testing.T, c *cluster.Cluster, ns string, nodes []worldNode, pods []worldPod, silent []string, skews map[string]time.Duration, renew time.Duration) *world {
	t.Helper()
	return startTunedWorld(t, c, ns, nodes, pods, silent, skews, renew, nil)
}

// startTunedWorld is startSkewedWorld with tune (nil: none) applied to
// every agent's config last: a world whose kubelets post as the kubelet
// does (counterfactual_test.go).
func startTunedWorld(t *testing.T, c *cluster.Cluster, ns string, nodes []worldNode, pods []worldPod, silent []string, skews map[string]time.Duration, renew time.Duration, tune func(*agent.Config)) *world {
	t.Helper()
	ctx := context.Background()
	cs := c.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var live, quiet, skewed []agent.NodeConfig
	for _, wn := range nodes {
		nc := agent.NodeConfig{Name: wn.name, Labels: map[string]string{v1.LabelTopologyRegion: ncRegion, v1.LabelTopologyZone: wn.zone}}
		if _, ok := skews[wn.name]; ok {
			if slices.Contains(silent, wn.name) {
				t.Fatalf("node %s: both skewed and silent", wn.name)
			}
			skewed = append(skewed, nc)
		} else if slices.Contains(silent, wn.name) {
			quiet = append(quiet, nc)
		} else {
			live = append(live, nc)
		}
	}
	if len(quiet) != len(silent) {
		t.Fatalf("silent nodes %v: not all in the world", silent)
	}
	ac := agentClient(t, c)
	w := &world{cs: cs, ac: ac, silentNodes: silent, skewed: map[string]*agentRun{}}
	startClock := func(clk clock.WithTicker, group ...agent.NodeConfig) *agentRun {
		if len(group) == 0 {
			return nil
		}
		cfg := agentConfig(ns, agent.NewFakeRuntime(clk), group...)
		cfg.LeaseDuration = 40 * time.Second
		cfg.LeaseRenewInterval = renew
		// Status is posted at registration and on a change only, as a
		// kubelet with a Lease does between its 5-minute reports
		// (nodeStatusReportFrequency): the Lease alone tells the
		// controllers the node is alive, and silence's origin is exact.
		cfg.StatusUpdateFrequency = time.Hour
		if _, ok := clk.(skewedClock); ok {
			// A skewed node posts its conditions every renew period
			// too, so both of its signals carry its clock.
			cfg.StatusUpdateFrequency = renew
		}
		if tune != nil {
			tune(&cfg)
		}
		return startAgentClock(t, ac, clk, cfg, 0)
	}
	w.live, w.silent = startClock(clock.RealClock{}, live...), startClock(clock.RealClock{}, quiet...)
	for _, nc := range skewed {
		w.skewed[nc.Name] = startClock(newSkewedClock(skews[nc.Name]), nc)
	}

	for _, wp := range pods {
		var tol []v1.Toleration
		switch wp.tol {
		case tolNone:
		case tolForever:
			tol = []v1.Toleration{unreachableToleration(nil)}
		default:
			tol = []v1.Toleration{unreachableToleration(testutil.Seconds(wp.tol))}
		}
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: wp.name},
			Spec: v1.PodSpec{NodeName: wp.node, Tolerations: tol,
				Containers: []v1.Container{{Name: "c", Image: "registry.invalid/none:1"}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", wp.name, err)
		}
	}
	cluster.Eventually(t, naWait, fmt.Sprintf("the agents run %d nodes and %d pods", len(nodes), len(pods)), func(ctx context.Context) (bool, error) {
		for _, wn := range nodes {
			n, err := cs.CoreV1().Nodes().Get(ctx, wn.name, metav1.GetOptions{})
			if err != nil || readyStatus(n) != v1.ConditionTrue {
				return false, err
			}
			if _, err := cs.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, wn.name, metav1.GetOptions{}); err != nil {
				return false, err
			}
		}
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for i := range l.Items {
			if c := podCondition(&l.Items[i], v1.PodReady); l.Items[i].Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionTrue {
				running++
			}
		}
		return running == len(pods), nil
	})
	return w
}

// silence stops the agent of the silent nodes, renews their Leases one last
// time together, and returns their last sign of life as stored in the API
// (the latest Lease renewal or Ready heartbeat): the origin of the
// controllers' timelines. The agent renews each node on its own ticker, so
// its last renewals are spread over a renew period; the last renewal
// together makes the silent nodes go Unknown in the same monitor pass of
// each controller, whatever the phase of its passes, as when they all lose
// the network at once.
func (w *world) silence(t *testing.T) (time.Time, error) {
	t.Helper()
	if w.silent == nil {
		return time.Time{}, errors.New("the world has no silent node")
	}
	w.silent.stop(t)
	ctx := context.Background()
	leases := w.ac.CoordinationV1().Leases(agent.LeaseNamespace)
	errs := make([]error, len(w.silentNodes))
	var wg sync.WaitGroup
	for i, name := range w.silentNodes {
		wg.Go(func() {
			errs[i] = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				l, err := leases.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				return err
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return time.Time{}, err
	}
	var last time.Time
	for _, name := range w.silentNodes {
		l, err := w.cs.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return last, err
		}
		if r := l.Spec.RenewTime; r != nil && r.After(last) {
			last = r.Time
		}
		n, err := w.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return last, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.LastHeartbeatTime.After(last) {
				last = c.LastHeartbeatTime.Time
			}
		}
	}
	return last, nil
}
