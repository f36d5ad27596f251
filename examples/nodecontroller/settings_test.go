package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
)

// TestBadSettingsTouchNoAPI is the regression test of a replica that led
// and did nothing: the controller's settings were validated only once this
// replica had won the Lease, so -node-monitor-period=-5s logged "Controller
// stopped" and the process went on renewing the Lease with /healthz ok.
// Now run fails on every bad value, with an error naming the field or flag
// and the value, before it even looks for a client configuration.
func TestBadSettingsTouchNoAPI(t *testing.T) {
	defer func(f func() (*rest.Config, error)) { inClusterConfig = f }(inClusterConfig)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-node-monitor-period=-5s"}, "MonitorPeriod = -5s"},
		{[]string{"-node-eviction-rate=NaN"}, "NaN"},
		{[]string{"-unhealthy-zone-threshold=7"}, "7"},
		{[]string{"-node-monitor-grace-period=-1s"}, "-1s"},
		{[]string{"-workers=1000000000000"}, "Workers = 1000000000000 must be in [0, 1000]"},
		{[]string{"-monitor-workers=0"}, "Workers = 0 must be in [1, 1000]"},
		{[]string{"-monitor-workers=100000"}, "Workers = 100000"},
		{[]string{"-node-eviction-period=0"}, "TaintPeriod = 0s"},
		{[]string{"-resync=-1m"}, "Resync = -1m0s"},
		{[]string{"-node-selector=a b c"}, "NodeSelector"},
		{[]string{"-full-disruption-rate=NaN"}, "-full-disruption-rate"},
		{[]string{"-snapshot-configmap=kube-system/"}, "-snapshot-configmap"},
		{[]string{"-kube-api-qps=NaN"}, "-kube-api-qps NaN"},
		{[]string{"-kube-api-burst=-1"}, "-kube-api-burst -1"},
		{[]string{"-leader-elect-retry-period=0"}, "-leader-elect-retry-period"},
		{[]string{"-port=-1"}, "-port -1"},
		{[]string{"-device-taint-eviction-max-share=2"}, "-device-taint-eviction-max-share: taints: invalid config: BlastRadius.MaxShare 2 must be in [0, 1]"},
		{[]string{"-device-taint-warnings=-3"}, "-device-taint-warnings: taints: invalid config: KeepWarnings -3"},
		{[]string{"-leader-elect=false", "-node-monitor-period=-5s"}, "MonitorPeriod = -5s"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			inClusterConfig = func() (*rest.Config, error) {
				t.Errorf("run(%v) looked for a client configuration before rejecting the settings", tt.args)
				return nil, rest.ErrNotInCluster
			}
			fs, o := newFlagSet(io.Discard)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			o.complete(fs)
			err := run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%v) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestLeaderWhoseControllerStopsGivesUp: when the leader's controller
// stops while it leads (here New fails, as it did for any bad setting
// before they were checked up front), the replica releases the Lease once
// nothing of it writes and returns an error (main exits 1), and a standby
// takes over at once (the released Lease has no holder), where it used to
// log "Controller stopped" and renew the Lease forever. On the old code
// replica A never returns and the test times out waiting for it.
func TestLeaderWhoseControllerStopsGivesUp(t *testing.T) {
	seed := fake.NewClientset(
		readyNode("a"),
	)
	tracker := seed.Tracker()
	ca, cb := replicaClient(tracker), replicaClient(tracker)
	errBroken := errors.New("broken controller")
	defer func(f func(kubernetes.Interface, clock.WithTicker, controller.Config) (*controller.Controller, error)) {
		newController = f
	}(newController)
	newController = func(c kubernetes.Interface, clk clock.WithTicker, cfg controller.Config) (*controller.Controller, error) {
		if c == kubernetes.Interface(ca) {
			return nil, errBroken
		}
		return controller.New(c, clk, cfg)
	}
	lease := func() *coordinationv1.Lease {
		l, err := tracker.Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), "kube-system", controller.Name)
		if err != nil {
			return nil
		}
		return l.(*coordinationv1.Lease)
	}
	holder := func() string {
		if l := lease(); l != nil && l.Spec.HolderIdentity != nil {
			return *l.Spec.HolderIdentity
		}
		return ""
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	defer cancel()
	start := func(client *fake.Clientset) chan error {
		fs, o := newFlagSet(io.Discard)
		// A lease duration far longer than the test: only a release lets B in.
		if err := fs.Parse([]string{"-port=0", "-leader-elect-lease-duration=1h",
			"-leader-elect-renew-deadline=2s", "-leader-elect-retry-period=50ms"}); err != nil {
			t.Fatal(err)
		}
		o.complete(fs)
		done := make(chan error, 1)
		go func() { done <- runWith(ctx, o, client, clocktesting.NewFakeClock(epoch)) }()
		return done
	}

	doneA := start(ca)
	select {
	case err := <-doneA:
		if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "lease released") {
			t.Errorf("replica A: runWith() = %v, want the controller's error and the lease released", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("replica A still runs 20s after its controller failed while leading")
	}
	if l := lease(); l == nil || holder() != "" || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("lease after A gave up = %+v, want no holder and a 1s duration", l)
	}
	after := len(ca.Actions())

	doneB := start(cb)
	deadline := time.Now().Add(20 * time.Second)
	snapshotSaved := func() bool { // the controller's first monitor pass saves it
		return slices.ContainsFunc(cb.Actions(), func(a k8stesting.Action) bool {
			return a.GetResource().Resource == "configmaps" && a.GetVerb() == "create"
		})
	}
	for holder() == "" || !snapshotSaved() {
		if time.Now().After(deadline) {
			t.Fatalf("standby B did not take over the released lease (holder %q)", holder())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-doneB; err != nil {
		t.Errorf("replica B: runWith() = %v", err)
	}
	// Events are posted by the broadcaster's own goroutine, which may
	// deliver the elector's "stopped leading" after runWith returned; every
	// other write must have happened before.
	got := slices.DeleteFunc(slices.Clone(ca.Actions()[after:]), func(a k8stesting.Action) bool {
		return a.GetResource().Resource == "events"
	})
	if len(got) != 0 {
		t.Errorf("replica A acted after it returned: %v", got)
	}
}

// TestHealthzFailsWhenLeaderRunsNothing: /healthz fails while this replica
// leads with no controller running, and once a controller stopped while
// leading; a standby and a running leader are healthy.
func TestHealthzFailsWhenLeaderRunsNothing(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	tests := []struct {
		name             string
		leading, running bool
		failed           error
		want             string // "": healthy
	}{
		{"standby", false, false, nil, ""},
		{"leader running", true, true, nil, ""},
		{"leader running nothing", true, false, nil, "not running"},
		{"controller stopped while leading", true, false, errors.New("boom"), "stopped while leading: boom"},
		{"stopped, lease already lost", false, false, errors.New("boom"), "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{metrics: m, running: tt.running, failed: tt.failed}
			mux := newMux(m, nil, func() error { return r.live(func() bool { return tt.leading }) }, func() error { return nil })
			code, body := get(t, mux, "/healthz")
			switch {
			case tt.want == "" && code != 200:
				t.Errorf("/healthz = %d %q, want 200", code, body)
			case tt.want != "" && (code != 500 || !strings.Contains(body, tt.want)):
				t.Errorf("/healthz = %d %q, want 500 with %q", code, body, tt.want)
			}
		})
	}
}

// TestSettingsDefaultsValid: the defaults, with and without leader
// election, pass every check.
func TestSettingsDefaultsValid(t *testing.T) {
	for _, args := range [][]string{nil, {"-leader-elect=false"}, {"-legacy-node-eviction"}} {
		fs, o := newFlagSet(&bytes.Buffer{})
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o.complete(fs)
		if _, err := o.settings(); err != nil {
			t.Errorf("settings(%v) = %v", args, err)
		}
	}
}

// TestReleaseLeaseOnlyOwn: releaseLease empties the Lease only while this
// replica holds it; a Lease another replica took over is left alone.
func TestReleaseLeaseOnlyOwn(t *testing.T) {
	for _, tt := range []struct {
		holder   string
		released bool
	}{{"me", true}, {"other", false}} {
		holder, dur := tt.holder, int32(15)
		client := fake.NewClientset(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur},
		})
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
			Client: client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "me"}}
		if err := releaseLease(context.Background(), lock); err != nil {
			t.Fatalf("holder %s: releaseLease() = %v", tt.holder, err)
		}
		l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "l", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == ""
		if got != tt.released || (got && *l.Spec.LeaseDurationSeconds != 1) {
			t.Errorf("holder %s: after releaseLease holder %v duration %v, want released %v", tt.holder,
				l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, tt.released)
		}
	}
}
