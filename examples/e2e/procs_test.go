package e2e

// Helpers for the tests that run controllers as processes (the parity,
// RBAC, failover and metrics tests): the examples/nodecontroller binary,
// a world of nodes and pods with fixed names, and Lease-renewing kubelets
// that report errors instead of failing the test (they run in goroutines).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// testUserAgent is the user agent of the tests' own clients
// (cluster.Cluster.Config), which tells their writes from the controllers'.
const testUserAgent = "lifecycle-e2e"

var ncBinary struct {
	once sync.Once
	path string
	err  error
	took time.Duration
}

// nodeControllerBinary builds examples/nodecontroller once per test binary
// (into the user cache directory, replaced atomically) and returns its path.
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
		dir := filepath.Join(base, "lifecycle-e2e", "nodecontroller-bin")
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
		ncBinary.took = time.Since(t0)
	})
	if ncBinary.err != nil {
		t.Fatalf("e2e: %v", ncBinary.err)
	}
	if ncBinary.took > 0 {
		t.Logf("built examples/nodecontroller in %v: %s", ncBinary.took.Round(100*time.Millisecond), ncBinary.path)
		ncBinary.took = 0
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

// world creates the nodes (Ready, with Leases that kubelet renews) and
// the pods (Running, Ready) in namespace ns.
func createWorld(ctx context.Context, cs kubernetes.Interface, ns string, nodes []worldNode, pods []worldPod, k *leaseKubelet) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, wn := range nodes {
		now := time.Now()
		n := testutil.WithZone(testutil.Node(wn.name, now), ncRegion, wn.zone)
		n.UID, n.CreationTimestamp = "", metav1.Time{}
		got, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %s: %w", wn.name, err)
		}
		got = testutil.WithReady(got, v1.ConditionTrue, now, now)
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s Ready: %w", wn.name, err)
		}
		l := testutil.Lease(wn.name, time.Now())
		d := int32(40)
		l.Spec.LeaseDurationSeconds = &d
		gl, err := cs.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease %s: %w", wn.name, err)
		}
		k.add(wn.name, gl)
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
		got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create pod %s: %w", wp.name, err)
		}
		now := metav1.Now()
		got.Status.Phase = v1.PodRunning
		got.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("pod %s Ready: %w", wp.name, err)
		}
	}
	return nil
}

// leaseKubelet renews the Leases of live nodes every period (Update with
// the resourceVersion read), like fakeKubelet, for many nodes and without
// a testing.T.
type leaseKubelet struct {
	cs     kubernetes.Interface
	period time.Duration
	mu     sync.Mutex
	nodes  map[string]*kubeletNode
	cancel context.CancelFunc
	done   chan struct{}
}

func startLeaseKubelet(t *testing.T, cs kubernetes.Interface, period time.Duration) *leaseKubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &leaseKubelet{cs: cs, period: period, nodes: map[string]*kubeletNode{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			k.mu.Lock()
			nodes := make([]*kubeletNode, 0, len(k.nodes))
			for _, n := range k.nodes {
				nodes = append(nodes, n)
			}
			k.mu.Unlock()
			var wg sync.WaitGroup
			for _, n := range nodes {
				wg.Go(func() { k.renew(ctx, n) })
			}
			wg.Wait()
		}
	}()
	t.Cleanup(k.stop)
	return k
}

func (k *leaseKubelet) stop() { k.cancel(); <-k.done }

func (k *leaseKubelet) add(node string, lease *coordinationv1.Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nodes[node] = &kubeletNode{name: node, live: true, lease: lease, lastRenew: lease.Spec.RenewTime.Time}
}

func (k *leaseKubelet) renew(ctx context.Context, n *kubeletNode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.live {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	leases := k.cs.CoordinationV1().Leases(v1.NamespaceNodeLease)
	if n.lease == nil {
		l, err := leases.Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return
		}
		n.lease = l
	}
	start := time.Now()
	l := n.lease.DeepCopy()
	l.Spec.RenewTime = &metav1.MicroTime{Time: start}
	got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		n.lease = nil
		return
	}
	n.lease, n.lastRenew = got, start
}

// silence stops renewing the nodes' Leases (waiting for renewals in flight)
// and returns the latest of their last successful renewals.
func (k *leaseKubelet) silence(nodes ...string) (time.Time, error) {
	var last time.Time
	for _, name := range nodes {
		k.mu.Lock()
		n := k.nodes[name]
		k.mu.Unlock()
		if n == nil {
			return last, errors.New("no kubelet for node " + name)
		}
		n.mu.Lock()
		n.live = false
		if n.lastRenew.After(last) {
			last = n.lastRenew
		}
		n.mu.Unlock()
	}
	return last, nil
}

// hasTaint reports whether n has a taint with tk's key and effect.
func hasTaint(n *v1.Node, tk v1.Taint) bool { return findTaint(n, tk) != nil }
