package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
)

// The kube-apiserver alone can be stopped (drained, or killed like a crash)
// and started again on the same port and etcd data: objects survive, the
// clientset built before keeps working and informers reconnect and see
// changes made after the restart.
func TestSmokeAPIServerRestart(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ctx := context.Background()
	ns := c.Namespace(t)
	inf := startInformers(t, cs)

	node := createNode(t, cs, "node", "region-1", "zone-a")
	createLease(t, cs, node.Name)
	pod := createPod(t, cs, ns, "pod", node.Name)
	inf.waitPod(t, ns, pod.Name)
	etcdPID := c.EtcdPID()

	for _, tc := range []struct {
		name string
		stop func() error
	}{
		{"sigterm", c.StopAPIServer},
		{"sigkill", c.KillAPIServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldPID := c.APIServerPID()
			t0 := time.Now()
			if err := tc.stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			t.Logf("apiserver down after %.2fs", time.Since(t0).Seconds())
			if c.APIServerRunning() {
				t.Fatal("APIServerRunning() = true after stop")
			}
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cs.CoreV1().Nodes().Get(short, node.Name, metav1.GetOptions{})
			cancel()
			if err == nil {
				t.Fatal("Get(node) succeeded while the apiserver is down")
			}

			t0 = time.Now()
			if err := c.StartAPIServer(ctx); err != nil {
				t.Fatalf("StartAPIServer() = %v", err)
			}
			t.Logf("apiserver ready again after %.2fs", time.Since(t0).Seconds())
			if err := c.StartAPIServer(ctx); !errors.Is(err, cluster.ErrAPIServerRunning) {
				t.Errorf("second StartAPIServer() = %v, want ErrAPIServerRunning", err)
			}
			if pid := c.APIServerPID(); pid == 0 || pid == oldPID {
				t.Errorf("APIServerPID() = %d after restart, old %d", pid, oldPID)
			}
			if pid := c.EtcdPID(); pid != etcdPID {
				t.Errorf("EtcdPID() = %d, want %d (etcd must keep running)", pid, etcdPID)
			}

			// Objects written before the restart are still there.
			if _, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("Get(node) after restart = %v", err)
			}
			if _, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("Get(lease) after restart = %v", err)
			}
			if _, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("Get(pod) after restart = %v", err)
			}

			// Informers started before the restart see writes made after it.
			status := v1.ConditionFalse
			if tc.name == "sigkill" {
				status = v1.ConditionUnknown
			}
			cur, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			setNodeReady(t, cs, cur, status)
			t0 = time.Now()
			inf.waitNode(t, node.Name, func(n *v1.Node) bool { return readyStatus(n) == status })
			fresh := createNode(t, cs, "after-"+tc.name, "region-1", "zone-a")
			inf.waitNode(t, fresh.Name, func(*v1.Node) bool { return true })
			t.Logf("informers caught up %.2fs after the restart's first write", time.Since(t0).Seconds())
		})
	}
}
