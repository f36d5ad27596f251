package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestEndpoints: /healthz with and without the leader election check,
// /readyz following the readiness function, /metrics with upstream's names.
func TestEndpoints(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	m.ObserveMonitorPass(time.Millisecond, nil)
	var notReady error
	mux := newMux(m, nil, nil, func() error { return notReady })
	if code, body := get(t, mux, "/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, _ := get(t, mux, "/readyz"); code != 200 {
		t.Errorf("/readyz = %d, want 200", code)
	}
	notReady = errors.New("informer caches not synced")
	if code, body := get(t, mux, "/readyz"); code != 500 || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz not ready = %d %q, want 500 naming the cause", code, body)
	}
	code, body := get(t, mux, "/metrics")
	if code != 200 || !strings.Contains(body, "node_collector_update_all_nodes_health_duration_seconds_count 1") ||
		!strings.Contains(body, "lifecycle_leader 0") {
		t.Errorf("/metrics = %d %q", code, body)
	}

	// With leader election: a replica that is not leading is healthy (the
	// adaptor checks only a leader's renewals).
	client := fake.NewClientset()
	hz := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	_, o := newFlagSet(io.Discard)
	r := &runner{metrics: m}
	le, _, err := newLeaderElector(client, o, nil, r, hz)
	if err != nil || le == nil {
		t.Fatalf("newLeaderElector() = %v", err)
	}
	mux = newMux(m, hz, nil, func() error { return nil })
	if code, body := get(t, mux, "/healthz"); code != 200 {
		t.Errorf("/healthz with leader election, not leading = %d %q, want 200", code, body)
	}
}

// writes counts the create, update, patch and delete actions of client.
func writes(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

// readyNode returns node name, Ready with a heartbeat at epoch.
func readyNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
		Type: v1.NodeReady, Status: v1.ConditionTrue,
		LastHeartbeatTime: metav1.NewTime(epoch), LastTransitionTime: metav1.NewTime(epoch)}}}}
}

// TestLeaderCallbacks: a replica writes nothing until it leads; when it
// starts leading it runs the controller (which writes); when it stops, the
// callback returns only once the controller has stopped, and no write
// follows, however far the clock goes. A new term runs a new controller.
func TestLeaderCallbacks(t *testing.T) {
	client := fake.NewClientset(
		readyNode("a"),
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: v1.NamespaceNodeLease, Name: "a"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: epoch}}},
	)
	clk := clocktesting.NewFakeClock(epoch)
	cfg := controller.DefaultConfig()
	cfg.SkipFinalSnapshot = true
	store, err := controller.NewConfigMapStore(client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Snapshots = store // the first monitor pass saves a snapshot: a write
	m := metrics.New(clk)
	wire(&cfg, m)
	var mu sync.Mutex
	built := 0
	r := &runner{metrics: m, newController: func() (*controller.Controller, error) {
		mu.Lock()
		built++
		mu.Unlock()
		return controller.New(client, clk, cfg)
	}}
	cb := r.callbacks()
	ctx := klog.NewContext(context.Background(), klog.Logger{})

	if n := writes(client); n != 0 {
		t.Fatalf("%d writes before leading", n)
	}
	cb.OnStoppedLeading() // never led: nothing to stop
	for term := 1; term <= 2; term++ {
		client.ClearActions()
		lctx, cancel := context.WithCancel(ctx) // leaderelection cancels it too
		done := make(chan struct{})
		go func() { cb.OnStartedLeading(lctx); close(done) }()
		deadline := time.Now().Add(10 * time.Second)
		for writes(client) == 0 || r.ready() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("term %d: no write while leading", term)
			}
			time.Sleep(time.Millisecond)
		}
		if got := testLeaderGauge(t, m); got != 1 {
			t.Errorf("term %d: leader gauge = %v while leading, want 1", term, got)
		}
		cb.OnStoppedLeading()
		// When OnStoppedLeading returns, the term's controller has stopped
		// (its Run returned); OnStartedLeading itself returns just after.
		r.mu.Lock()
		running := r.ctrl != nil
		r.mu.Unlock()
		if running {
			t.Fatalf("term %d: OnStoppedLeading returned before the controller stopped", term)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("term %d: OnStartedLeading did not return after the controller stopped", term)
		}
		cancel()
		stopped := len(client.Actions())
		clk.Step(10 * time.Minute) // every loop would be due
		if got := client.Actions()[stopped:]; len(got) != 0 {
			t.Errorf("term %d: %d actions after leadership was lost: %v", term, len(got), got)
		}
		if got := testLeaderGauge(t, m); got != 0 {
			t.Errorf("term %d: leader gauge = %v after leading, want 0", term, got)
		}
	}
	if built != 2 {
		t.Errorf("%d controllers built for 2 terms, want 2", built)
	}
}

// TestLeaderTermEndedBeforeStart: the leader elector runs OnStartedLeading
// on a goroutine of its own and, when the lease is lost at once, cancels
// the term's context and calls OnStoppedLeading before that goroutine runs.
// The late OnStartedLeading then starts nothing: no controller, no leader
// gauge, no write.
func TestLeaderTermEndedBeforeStart(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(epoch)
	cfg := controller.DefaultConfig()
	cfg.SkipFinalSnapshot = true
	m := metrics.New(clk)
	wire(&cfg, m)
	built := 0
	r := &runner{metrics: m, newController: func() (*controller.Controller, error) {
		built++
		return controller.New(client, clk, cfg)
	}}
	cb := r.callbacks()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	cancel()
	cb.OnStoppedLeading()
	cb.OnStartedLeading(ctx)
	if built != 0 {
		t.Errorf("%d controllers built for a term that had ended", built)
	}
	if err := r.err(); err != nil {
		t.Errorf("runner error %v after a term that had ended, want none", err)
	}
	if got := testLeaderGauge(t, m); got != 0 {
		t.Errorf("leader gauge = %v, want 0", got)
	}
	if n := writes(client); n != 0 {
		t.Errorf("%d writes", n)
	}
}

func testLeaderGauge(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == metrics.Leader {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// replicaClient returns a clientset of its own (its own action log) over
// the objects of tracker, as two replicas see one API server.
func replicaClient(tracker k8stesting.ObjectTracker) *fake.Clientset {
	c := fake.NewClientset()
	c.ReactionChain, c.WatchReactionChain = nil, nil
	c.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
	c.AddWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		return err == nil, w, err
	})
	return c
}

// nonLeaseWrites counts the writes of client other than to Leases (the
// leader election's own).
func nonLeaseWrites(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			if a.GetResource().Resource != "leases" {
				n++
			}
		}
	}
	return n
}

// TestFailoverOnlyLeaderWrites runs two replicas as main does (leader
// election on a Lease, short periods) against one fake API server, each
// with its own client: the standby writes nothing while the leader leads;
// when the leader dies without releasing the lease (its context ends, as
// with SIGKILL: no final snapshot), it writes nothing more, and the standby
// takes over after the lease expires and writes.
func TestFailoverOnlyLeaderWrites(t *testing.T) {
	seed := fake.NewClientset(
		readyNode("a"),
	)
	tracker := seed.Tracker()
	replica := func() (*fake.Clientset, *options) {
		fs, o := newFlagSet(io.Discard)
		if err := fs.Parse([]string{"-port=0", "-leader-elect-lease-duration=3s",
			"-leader-elect-renew-deadline=2s", "-leader-elect-retry-period=100ms"}); err != nil {
			t.Fatal(err)
		}
		o.complete(fs)
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		return replicaClient(tracker), o
	}
	holder := func() string {
		l, err := tracker.Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), "kube-system", controller.Name)
		if err != nil || l.(*coordinationv1.Lease).Spec.HolderIdentity == nil {
			return ""
		}
		return *l.(*coordinationv1.Lease).Spec.HolderIdentity
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	start := func(client *fake.Clientset, o *options) (context.CancelFunc, chan error) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- runWith(rctx, o, client, clocktesting.NewFakeClock(epoch)) }()
		return cancel, done
	}

	ca, oa := replica()
	killA, doneA := start(ca, oa)
	waitFor("replica A to lead and write", func() bool { return holder() != "" && nonLeaseWrites(ca) > 0 })
	first := holder()
	cb, ob := replica()
	killB, doneB := start(cb, ob)
	defer func() { killB(); <-doneB }()
	waitFor("replica B to try the lease", func() bool { return len(cb.Actions()) > 0 })
	time.Sleep(500 * time.Millisecond) // B retries every 100ms meanwhile
	if n := nonLeaseWrites(cb); n != 0 || holder() != first {
		t.Fatalf("standby B made %d writes; lease holder %q, want %q", n, holder(), first)
	}

	killA()
	if err := <-doneA; err != nil {
		t.Errorf("replica A: runWith() = %v", err)
	}
	after := len(ca.Actions())
	waitFor("replica B to take over and write", func() bool { return holder() != first && holder() != "" && nonLeaseWrites(cb) > 0 })
	if got := ca.Actions()[after:]; len(got) != 0 {
		t.Errorf("replica A acted after it stopped: %v", got)
	}
}
