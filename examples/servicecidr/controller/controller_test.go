package controller_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/cidrfinalizer"
	"github.com/kubelifecycle/lifecycle/examples/servicecidr/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// fixture runs a controller on a fake clientset and a fake clock.
type fixture struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	mu     sync.Mutex
	syncs  []controller.Sync
}

// start creates the objects on a fake clientset, starts the controller and
// waits until it has synced every ServiceCIDR once.
func start(t *testing.T, cfg controller.Config, objs ...runtime.Object) *fixture {
	t.Helper()
	var names []string
	for _, o := range objs {
		if sc, ok := o.(*networkingv1.ServiceCIDR); ok {
			names = append(names, sc.Name)
		}
	}
	f := startClient(t, cfg, fake.NewClientset(objs...))
	for _, n := range names {
		f.waitSync(n, func(controller.Sync) bool { return true })
	}
	return f
}

// startClient starts the controller on client and a fake clock at the epoch.
// Everything stops at the end of the test.
func startClient(t *testing.T, cfg controller.Config, client *fake.Clientset) *fixture {
	t.Helper()
	f := &fixture{t: t, client: client, clock: clocktesting.NewFakeClock(testutil.Epoch)}
	cfg.OnSync = func(s controller.Sync) {
		f.mu.Lock()
		f.syncs = append(f.syncs, s)
		f.mu.Unlock()
	}
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := controller.New(f.client, factory, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{})) // quiet
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
		factory.Shutdown()
	})
	return f
}

// eventually polls cond every few milliseconds for up to 10s of real time:
// informers deliver asynchronously, even on a fake clientset.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitSync waits for a sync of name that satisfies match and returns it.
func (f *fixture) waitSync(name string, match func(controller.Sync) bool) controller.Sync {
	f.t.Helper()
	var got controller.Sync
	f.eventually("a sync of "+name, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, s := range f.syncs {
			if s.Key == name && match(s) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

func (f *fixture) syncCount(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.syncs {
		if s.Key == name {
			n++
		}
	}
	return n
}

func (f *fixture) get(name string) *networkingv1.ServiceCIDR {
	f.t.Helper()
	c, err := f.client.NetworkingV1().ServiceCIDRs().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("get ServiceCIDR %s: %v", name, err)
	}
	return c
}

// markDeleted emulates a delete: the fake clientset removes objects at once,
// ignoring finalizers, so the test sets the deletionTimestamp itself.
func (f *fixture) markDeleted(name string) {
	f.t.Helper()
	c := f.get(name).DeepCopy()
	c.DeletionTimestamp = &metav1.Time{Time: f.clock.Now()}
	if _, err := f.client.NetworkingV1().ServiceCIDRs().Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deleteIP(name string) {
	f.t.Helper()
	if err := f.client.NetworkingV1().IPAddresses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func readyOf(c *networkingv1.ServiceCIDR) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == cidrfinalizer.ConditionReady {
			return string(cond.Status) + "/" + cond.Reason + "/" + cond.Message
		}
	}
	return ""
}

func hasFinalizer(c *networkingv1.ServiceCIDR) bool {
	return slices.Contains(c.Finalizers, cidrfinalizer.Finalizer)
}

const (
	readyTrue   = "True//" + cidrfinalizer.MessageReady
	blocked     = "False/Terminating/" + cidrfinalizer.MessageBlocked
	terminating = "False/Terminating/" + cidrfinalizer.MessageTerminating
)

// countPatches counts the patches of ServiceCIDRs (metadata and status).
func countPatches(actions []k8stesting.Action) (meta, status int) {
	for _, a := range actions {
		if a.GetVerb() != "patch" || a.GetResource().Resource != "servicecidrs" {
			continue
		}
		if a.GetSubresource() == "status" {
			status++
		} else {
			meta++
		}
	}
	return meta, status
}

func TestControllerAddsFinalizerAndReadyOnce(t *testing.T) {
	f := start(t, controller.DefaultConfig(), testutil.ServiceCIDR("kubernetes", "10.0.0.0/24", "2001:db8::/64"))
	f.eventually("finalizer and Ready=True", func() bool {
		c := f.get("kubernetes")
		return hasFinalizer(c) && readyOf(c) == readyTrue
	})
	// The informer echoes the writes back; once the cache has caught up, a
	// sync writes nothing (PR #131330). (Before that, a sync that runs on the
	// echo of the finalizer patch may repeat the condition write: the cache
	// lags the API, as upstream.)
	f.waitSync("kubernetes", func(s controller.Sync) bool {
		return s.Decision.Action == cidrfinalizer.ActionNone && s.Decision.Condition == nil
	})
	meta, status := countPatches(f.client.Actions())
	n := f.syncCount("kubernetes")
	// An IPAddress event requeues the ServiceCIDR: another sync, no write.
	if _, err := f.client.NetworkingV1().IPAddresses().Create(context.Background(),
		testutil.IPAddress("10.0.0.10"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("a sync on the IPAddress event", func() bool { return f.syncCount("kubernetes") > n })
	if m, s := countPatches(f.client.Actions()); m != meta || s != status {
		t.Errorf("patches went from %d/%d to %d/%d on a steady object, want no writes", meta, status, m, s)
	}
	if meta != 1 {
		t.Errorf("metadata patches = %d, want 1", meta)
	}
	if c := f.get("kubernetes"); len(c.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want exactly [%s]", c.Finalizers, cidrfinalizer.Finalizer)
	}
}

func TestControllerDeletionBlockedThenReleasedAfterGrace(t *testing.T) {
	f := start(t, controller.DefaultConfig(),
		testutil.ServiceCIDR("extra", "10.1.0.0/24"), testutil.IPAddress("10.1.0.5"), testutil.IPAddress("10.1.0.0"))
	f.eventually("finalizer", func() bool { return hasFinalizer(f.get("extra")) })

	f.markDeleted("extra")
	s := f.waitSync("extra", func(s controller.Sync) bool { return s.Decision.Action == cidrfinalizer.ActionBlock })
	if want := []netip.Addr{netip.MustParseAddr("10.1.0.5")}; !slices.Equal(s.Decision.Blocking, want) {
		t.Errorf("Blocking = %v, want %v (the network address never blocks)", s.Decision.Blocking, want)
	}
	f.eventually("Ready=False blocked", func() bool { return readyOf(f.get("extra")) == blocked })

	f.clock.Step(4 * time.Second)
	f.deleteIP("10.1.0.5")
	s = f.waitSync("extra", func(s controller.Sync) bool { return s.Decision.Action == cidrfinalizer.ActionWait })
	if s.Decision.RequeueAfter != 6*time.Second {
		t.Errorf("RequeueAfter = %v, want 6s (grace 10s from the deletion at +0s)", s.Decision.RequeueAfter)
	}
	f.eventually("Ready=False terminating", func() bool { return readyOf(f.get("extra")) == terminating })
	if !hasFinalizer(f.get("extra")) {
		t.Fatalf("finalizer removed during the grace period")
	}

	f.clock.Step(6 * time.Second) // the delayed requeue follows the fake clock
	s = f.waitSync("extra", func(s controller.Sync) bool { return s.Decision.Action == cidrfinalizer.ActionRemoveFinalizer })
	if got := s.Now.Sub(testutil.Epoch); got != 10*time.Second {
		t.Errorf("finalizer removed at +%v, want +10s", got)
	}
	f.eventually("finalizer removed", func() bool { return !hasFinalizer(f.get("extra")) })
}

func TestControllerOverlappingServiceCIDRRescues(t *testing.T) {
	old := testutil.ServiceCIDR("old", "10.2.0.0/24")
	old.Finalizers = []string{cidrfinalizer.Finalizer}
	old.DeletionTimestamp = testutil.MetaTime(testutil.Epoch.Add(-time.Hour))
	f := start(t, controller.DefaultConfig(), old, testutil.IPAddress("10.2.0.9"))
	f.waitSync("old", func(s controller.Sync) bool { return s.Decision.Action == cidrfinalizer.ActionBlock })

	// A new, larger ServiceCIDR covers the address: the add is routed to "old".
	if _, err := f.client.NetworkingV1().ServiceCIDRs().Create(context.Background(),
		testutil.ServiceCIDR("new", "10.2.0.0/16"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("old released", func() bool { return !hasFinalizer(f.get("old")) })
	f.eventually("new protected", func() bool { return hasFinalizer(f.get("new")) })
}

func TestControllerRecheckInterval(t *testing.T) {
	cfg := controller.DefaultConfig()
	cfg.Finalizer.RecheckInterval = time.Minute
	stuck := testutil.ServiceCIDR("stuck", "10.3.0.0/24")
	stuck.Finalizers = []string{cidrfinalizer.Finalizer}
	stuck.DeletionTimestamp = testutil.MetaTime(testutil.Epoch)
	f := start(t, cfg, stuck, testutil.IPAddress("10.3.0.1"))
	s := f.waitSync("stuck", func(s controller.Sync) bool { return s.Decision.Action == cidrfinalizer.ActionBlock })
	if s.Decision.RequeueAfter != time.Minute {
		t.Errorf("RequeueAfter = %v, want 1m", s.Decision.RequeueAfter)
	}
	f.eventually("blocked condition", func() bool { return readyOf(f.get("stuck")) == blocked })
	f.waitSync("stuck", func(s controller.Sync) bool { return s.Decision.Condition == nil }) // the echo
	n := f.syncCount("stuck")
	f.clock.Step(time.Minute)
	f.eventually("a timed recheck", func() bool { return f.syncCount("stuck") > n })
}

func TestControllerIgnoresNotFound(t *testing.T) {
	client := fake.NewClientset(testutil.ServiceCIDR("vanishing", "10.4.0.0/24"))
	client.PrependReactor("patch", "servicecidrs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, "vanishing")
	})
	f := startClient(t, controller.DefaultConfig(), client)
	s := f.waitSync("vanishing", func(controller.Sync) bool { return true })
	if s.Err != nil || s.Decision.Action != cidrfinalizer.ActionAddFinalizer {
		t.Errorf("sync = %+v, want add-finalizer with no error (NotFound ignored)", s)
	}
}

func TestControllerRetriesAPIErrors(t *testing.T) {
	client := fake.NewClientset(testutil.ServiceCIDR("flaky", "10.5.0.0/24"))
	failures := 2
	var mu sync.Mutex
	client.PrependReactor("patch", "servicecidrs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
		}
		return false, nil, nil
	})
	f := startClient(t, controller.DefaultConfig(), client)
	f.waitSync("flaky", func(s controller.Sync) bool { return s.Err != nil })
	// The rate limiter's delays run on the fake clock: step until it succeeds.
	f.eventually("finalizer after retries", func() bool {
		f.clock.Step(time.Second)
		return hasFinalizer(f.get("flaky"))
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	if _, err := controller.New(nil, factory, clk, controller.DefaultConfig()); err == nil {
		t.Errorf("New(nil client) error = nil")
	}
	if _, err := controller.New(client, factory, nil, controller.DefaultConfig()); err == nil {
		t.Errorf("New(nil clock) error = nil")
	}
	bad := controller.DefaultConfig()
	bad.Finalizer.GracePeriod = -time.Second
	if _, err := controller.New(client, factory, clk, bad); !errors.Is(err, cidrfinalizer.ErrInvalidConfig) {
		t.Errorf("New(negative grace) error = %v, want ErrInvalidConfig", err)
	}
}
