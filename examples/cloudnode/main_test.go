package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
)

// TestCompare runs the -compare scenario: during the 30m outage our
// decision asks about each node 11 times (5s doubling to 5m), upstream's
// every 5s (360 times), at least 30x more; after it, ours deletes set a's
// nodes and upstream's leaves them and keeps asking every period.
func TestCompare(t *testing.T) {
	fs, o := newFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"-compare"}); err != nil {
		t.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	rs, err := compare(ctx, o.sc, o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours, up := rs[0], rs[1]
	if ours.Outage.Calls != 5*11 || up.Outage.Calls != 5*360 {
		t.Errorf("outage calls: ours %d, upstream-style %d; want 55, 1800", ours.Outage.Calls, up.Outage.Calls)
	}
	if ours.Outage.Deleted != 0 || up.Outage.Deleted != 0 {
		t.Errorf("deleted during the outage: ours %d, upstream-style %d; want 0, 0", ours.Outage.Deleted, up.Outage.Deleted)
	}
	if ours.After.Deleted != 3 || len(ours.After.LeftBehind) != 0 {
		t.Errorf("ours after the outage: %+v, want set a's 3 nodes deleted", ours.After)
	}
	if up.After.Deleted != 0 || len(up.After.LeftBehind) != 3 {
		t.Errorf("upstream-style after the outage: %+v, want set a's 3 nodes left", up.After)
	}
	// Upstream-style keeps asking about a's gone nodes every period: 720/h each.
	if got := up.After.Calls - ours.After.Calls; got < 3*719 {
		t.Errorf("upstream-style made %d more calls after the outage, want about 3*720", got)
	}
	var out bytes.Buffer
	if err := printCompare(&out, o.sc, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"API outage (30m0s)", "upstream-style  1800", "32.7x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunRejects: run without a mode, and -compare with bounds exceeded
// (among them -concurrent-node-lifecycle-syncs outside 1..256).
func TestRunRejects(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-compare", "-compare-nodes-a", "100000"},
		{"-compare", "-compare-outage", "1000h"},
		{"-compare", "-node-monitor-period", "0"},
		{"-compare", "-concurrent-node-lifecycle-syncs", "0"},
		{"-compare", "-concurrent-node-lifecycle-syncs", "257"},
	} {
		fs, o := newFlagSet(&bytes.Buffer{})
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), o, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

// TestRunLive runs the live mode on a fake clientset and a fake clock: the
// fake cloud is seeded from the nodes' fake:// providerIDs (a node of
// another provider is ignored), -delete-scale-set deletes set a after
// -delete-after, and the controller deletes a1 but keeps b1 (its instance
// runs) and x1 (a providerID the fake cloud does not know is Unknown: never
// deleted).
func TestRunLive(t *testing.T) {
	node := func(name, pid string) *v1.Node {
		return &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
			Spec:       v1.NodeSpec{ProviderID: pid},
			Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}},
		}
	}
	client := fake.NewClientset(node("a1", "fake://a/a1"), node("b1", "fake://b/b1"), node("x1", "other://x1"))
	clk := clocktesting.NewFakeClock(epoch)
	fs, o := newFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"-delete-scale-set", "a", "-delete-after", "1m", "-node-monitor-period", "5s"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	defer cancel()
	type final struct {
		st    controller.Stats
		calls fakecloud.CallStats
	}
	done := make(chan error, 1)
	got := make(chan final, 1)
	go func() {
		done <- runLive(ctx, o, client, clk, func(st controller.Stats, calls fakecloud.CallStats) { got <- final{st, calls} })
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := client.CoreV1().Nodes().Get(ctx, "a1", metav1.GetOptions{}); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a1 not deleted by %v", clk.Now().Sub(epoch))
		}
		if clk.HasWaiters() && clk.Now().Sub(epoch) < 10*time.Minute {
			clk.Step(5 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	if at := clk.Now().Sub(epoch); at < time.Minute {
		t.Errorf("a1 deleted at %v, before its set was (1m)", at)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runLive() = %v", err)
	}
	f := <-got
	if f.st.NodesDeleted != 1 {
		t.Errorf("NodesDeleted = %d, want 1", f.st.NodesDeleted)
	}
	for _, name := range []string{"b1", "x1"} {
		if _, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v, want kept", name, err)
		}
	}
	if f.calls.Total() == 0 {
		t.Error("no cloud calls counted")
	}
}

// TestRunChecksBeforeConnecting: in live mode every setting is checked,
// and the metrics address bound, before the kubeconfig is read and the
// nodes listed (the old code read the kubeconfig and listed the nodes
// first, and logged a metrics address in use on a goroutine and ran on).
func TestRunChecksBeforeConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-confirmations", "-1"}, "invalid config"},
		{[]string{"-node-monitor-period", "-5s"}, "MonitorPeriod = -5s"},
		{[]string{"-node-selector", "a b c"}, "NodeSelector"},
		{[]string{"-delete-after", "-1m"}, "-delete-after -1m0s"},
		{[]string{"-metrics-bind-address", ln.Addr().String()}, "-metrics-bind-address"},
	} {
		fs, o := newFlagSet(&bytes.Buffer{})
		if err := fs.Parse(append([]string{"-kubeconfig", missing}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error with %q before the kubeconfig is read", tt.args, err, tt.want)
		}
	}
}
