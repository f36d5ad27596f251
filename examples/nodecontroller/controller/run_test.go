package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestRunOnFakeClock runs the controller as main.go does (Run: workers,
// monitor loop, tainting loop), on a fake clock stepped by the test while
// nodes b and c keep renewing their Leases. Node a is tainted and its
// untolerating pod deleted; when Run stops it saves the snapshot.
func TestRunOnFakeClock(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	f := &fixture{t: t, client: client, server: installServerSemantics(client), clock: clocktesting.NewFakeClock(testutil.Epoch)}
	f.ctx = klog.NewContext(context.Background(), klog.Logger{})
	for _, o := range cluster3() {
		f.create(o)
	}
	store, err := controller.NewConfigMapStore(client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	cfg := controller.DefaultConfig()
	cfg.ConflictBackoff.Duration = time.Millisecond
	cfg.Snapshots = store
	var mu sync.Mutex
	var events []monitor.Event
	cfg.OnEvent = func(e monitor.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	c, err := controller.New(client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runInBackground(f.ctx, c)

	deadline := time.Now().Add(15 * time.Second)
	for f.pod("bare") != nil || !hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		if time.Now().After(deadline) {
			_ = stop()
			t.Fatalf("at %v: node a taints %v, pod bare present %v; want tainted and deleted", f.at(), f.node("a").Spec.Taints, f.pod("bare") != nil)
		}
		if f.at() < 120*time.Second {
			f.clock.Step(time.Second)
			f.renew("b")
			f.renew("c")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if got := nodeReady(f.node("a")); got != v1.ConditionUnknown {
		t.Errorf("node a Ready = %v, want Unknown", got)
	}
	if p := f.pod("defaults"); p == nil || podReady(p) != v1.ConditionFalse {
		t.Errorf("pod defaults = %v, want kept with Ready=False", p)
	}
	if _, err := client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "snap", metav1.GetOptions{}); err != nil {
		t.Errorf("snapshot ConfigMap after Run: %v", err)
	}
	rs, err := store.Load(context.Background())
	if err != nil || len(rs) != 3 {
		t.Errorf("saved snapshot = %d records, %v; want 3", len(rs), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 {
		t.Errorf("no events delivered to OnEvent")
	}
}
