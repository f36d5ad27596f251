package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
)

// TestNodeControllerBadSettingExitsBeforeAPI runs examples/nodecontroller
// with leader election (its default) and one bad setting against the real
// API server: the process exits with an error naming the setting, and no
// leader election Lease exists. The old binary validated the controller's
// settings only after it won the Lease: it logged "Controller stopped" and
// went on renewing the Lease with /healthz ok, a leader that ran nothing.
// A replica with the same flags and good settings creates the Lease (the
// check is not vacuous).
func TestNodeControllerBadSettingExitsBeforeAPI(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	bin := nodeControllerBinary(t)
	ns := c.Namespace(t)
	args := func(lease string, extra ...string) []string {
		return append([]string{"-kubeconfig=" + c.Kubeconfig(), "-port=0",
			"-leader-elect-resource-namespace=" + ns, "-leader-elect-resource-name=" + lease,
			"-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=500ms",
			"-node-selector=lifecycle-e2e/none=x"}, extra...)
	}
	leaseExists := func(ctx context.Context, name string) (bool, error) {
		_, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	for i, tt := range []struct{ flag, want string }{
		{"-node-monitor-period=-5s", "MonitorPeriod = -5s"},
		{"-node-eviction-rate=NaN", "NaN"},
		{"-unhealthy-zone-threshold=7", "7"},
		{"-workers=1000000000000", "MaxWorkers"},
	} {
		lease := "bad-" + string(rune('a'+i))
		p, err := c.StartProcess("nodecontroller-"+lease, bin, args(lease, tt.flag)...)
		if err != nil {
			t.Fatal(err)
		}
		stopProcessAtEnd(t, p)
		select {
		case <-p.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: still running after 60s, want an exit before touching the API", tt.flag)
		}
		if p.Err() == nil {
			t.Errorf("%s: exited with status 0, want an error", tt.flag)
		}
		if tail := p.Tail(20); !strings.Contains(tail, tt.want) {
			t.Errorf("%s: log does not name the setting (%q):\n%s", tt.flag, tt.want, tail)
		}
		if ok, err := leaseExists(context.Background(), lease); ok || err != nil {
			t.Errorf("%s: leader election Lease exists %v (%v), want none", tt.flag, ok, err)
		}
	}

	p, err := c.StartProcess("nodecontroller-good", bin, args("good")...)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)
	cluster.Eventually(t, 60*time.Second, "the good replica's Lease", func(ctx context.Context) (bool, error) {
		return leaseExists(ctx, "good")
	})
	if p.Exited() {
		t.Errorf("good replica exited: %v", p.Err())
	}
}
