package e2e

// The ServiceCIDR finalizer controller (examples/servicecidr/controller, on
// package cidrfinalizer) against the real apiserver's ServiceCIDR and
// IPAddress APIs. The controller runs on the real clock
// with a shortened grace period. Each test starts its own controller and
// stops it (and waits for it) at the end.
//
// Timing rule: the grace period runs from the deletionTimestamp, which the
// apiserver stores in whole seconds (truncated), so the release may come up
// to 1 s less than the grace period after our Delete call. Every "not
// before" assertion below is therefore against deletionTimestamp + grace,
// read back from the server, never against our own clock at Delete.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/cidrfinalizer"
	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/servicecidr/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Upstream facts (pkg/controller/servicecidrs/servicecidrs_controller.go at
// v1.36.3), written out so that a drift in the library's
// constants fails here too.
const (
	scFinalizer         = "networking.k8s.io/service-cidr-finalizer"
	scMessageReady      = "Kubernetes Service CIDR is ready"
	scMessageBlocked    = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
	scReasonTerminating = "Terminating"
	scDefault           = "kubernetes" // the apiserver's default ServiceCIDR
)

const (
	// scGrace is the controller's grace period (upstream 10 s): long enough
	// to watch the wait on a loaded machine, short enough for quick tests.
	scGrace = 4 * time.Second
	// scHold is how far past deletionTimestamp+scGrace a blocked
	// ServiceCIDR is watched to stay blocked.
	scHold = 1500 * time.Millisecond
	// scLate bounds how late a release may come after it is due (informer
	// delivery, the workqueue, one patch), generous for a noisy machine.
	scLate = 10 * time.Second
)

// A second ServiceCIDR is protected and Ready (the default
// one is protected too); a ClusterIP pinned in its range gets an IPAddress;
// deleting the ServiceCIDR is blocked (Ready=False, Terminating, upstream
// message) well past the grace period, also when an event makes the
// controller decide again after it; once the Service and its IPAddress are
// gone the finalizer goes (the grace period is long over, so at once) and
// the object disappears.
func TestServiceCIDRDeletionBlockedByAllocatedIP(t *testing.T) {
	c := env.Cluster(t)
	r := startServiceCIDRController(t, c)
	ns := c.Namespace(t)

	name := r.createServiceCIDR(t, "cidr", "10.2.0.0/24")
	r.waitProtected(t, name, true)
	r.waitProtected(t, scDefault, false)

	svc := r.createService(t, ns, "10.2.0.10")
	checkIPAddress(t, r.cs, svc)

	dts := r.deleteServiceCIDR(t, name)
	due := dts.Add(scGrace)
	r.waitCondition(t, name, metav1.ConditionFalse, scReasonTerminating, scMessageBlocked)
	r.holdBlocked(t, due.Add(scHold), name)
	r.pokeStillBlocked(t, due, name)
	// What the wait is for: the apiserver's allocator no longer hands out
	// addresses from a deleting ServiceCIDR that is alone on its range.
	if _, err := r.tryService(t, ns, "10.2.0.20"); !apierrors.IsInvalid(err) {
		t.Errorf("Create(Service, clusterIP 10.2.0.20 in the deleting ServiceCIDR) = %v, want Invalid", err)
	}

	svcGone := r.deleteService(t, svc)
	r.waitReleased(t, name, due, svcGone.Add(scLate))
	r.checkSyncs(t, name, svcGone, due, true, true)
}

// The grace period with the wait in the middle: the Service goes while the
// deleting ServiceCIDR is blocked, well inside the grace period. The
// controller then reports Ready=False/Terminating with our grace-period
// message (unlike upstream, which leaves Ready=True), waits
// exactly until deletionTimestamp + grace (its requeue delay says so), and
// only then removes the finalizer.
func TestServiceCIDRGracePeriodAfterLastIPReleased(t *testing.T) {
	c := env.Cluster(t)
	r := startServiceCIDRController(t, c)
	ns := c.Namespace(t)

	name := r.createServiceCIDR(t, "cidr", "10.3.0.0/24")
	r.waitProtected(t, name, true)
	svc := r.createService(t, ns, "10.3.0.10")
	checkIPAddress(t, r.cs, svc)

	dts := r.deleteServiceCIDR(t, name)
	due := dts.Add(scGrace)
	r.waitCondition(t, name, metav1.ConditionFalse, scReasonTerminating, scMessageBlocked)
	svcGone := r.deleteService(t, svc)
	inGrace := time.Now().Before(due.Add(-scGrace / 4))
	if !inGrace {
		// Not a controller fault: the machine was too slow to get here
		// inside the grace period, so the wait cannot be observed.
		t.Logf("IPAddress gone only %v before the release is due; skipping the wait checks", time.Until(due))
	}

	sawWaiting := r.waitReleased(t, name, due, laterOf(due, svcGone).Add(scLate))
	r.checkSyncs(t, name, svcGone, due, true, false)
	if !inGrace {
		return
	}
	if !sawWaiting {
		t.Errorf("ServiceCIDR %s: never saw Ready=False/%s %q while it waited for the grace period",
			name, scReasonTerminating, cidrfinalizer.MessageTerminating)
	}
	var waits int
	for _, s := range r.syncsOf(name) {
		if s.Err != nil || s.Decision.Action != cidrfinalizer.ActionWait {
			continue
		}
		waits++
		// The delay is measured from the deletionTimestamp (whole seconds),
		// not from when the controller saw the deletion or the address go.
		if want := due.Sub(s.Now); absDuration(s.Decision.RequeueAfter-want) > 10*time.Millisecond {
			t.Errorf("ActionWait at %s: RequeueAfter = %v, want deletionTimestamp+grace-now = %v",
				s.Now.Format(time.StampMilli), s.Decision.RequeueAfter, want)
		}
	}
	if waits == 0 {
		t.Errorf("ServiceCIDR %s: no ActionWait decision after its last address went (released without waiting?)", name)
	}
}

// Bonus (our fix): two ServiceCIDRs with the same range, deleted
// together while an address is allocated from it. Upstream counts each as
// the other's parent and releases both after the grace period, orphaning the
// address; here neither is released while the address exists, even when the
// controller decides again after the grace period. Once the address goes,
// both are released. (Between the two Deletes the first one is rightly
// covered by the second, still live, and waits; the delayed requeue of that
// wait then finds both deleting and blocks: exactly where upstream releases.)
func TestServiceCIDROverlappingDeletedTogether(t *testing.T) {
	c := env.Cluster(t)
	r := startServiceCIDRController(t, c)
	ns := c.Namespace(t)

	a := r.createServiceCIDR(t, "overlap-a", "10.4.0.0/24")
	b := r.createServiceCIDR(t, "overlap-b", "10.4.0.0/24")
	r.waitProtected(t, a, true)
	r.waitProtected(t, b, true)
	svc := r.createService(t, ns, "10.4.0.10")
	checkIPAddress(t, r.cs, svc)

	dtsA := r.deleteServiceCIDR(t, a)
	dtsB := r.deleteServiceCIDR(t, b)
	dueA, dueB := dtsA.Add(scGrace), dtsB.Add(scGrace)
	r.waitCondition(t, a, metav1.ConditionFalse, scReasonTerminating, scMessageBlocked)
	r.waitCondition(t, b, metav1.ConditionFalse, scReasonTerminating, scMessageBlocked)
	r.holdBlocked(t, laterOf(dueA, dueB).Add(scHold), a, b)
	r.pokeStillBlocked(t, dueA, a)
	r.pokeStillBlocked(t, dueB, b)
	// Why this matters: the apiserver's allocator keeps a range ready while
	// every ServiceCIDR on it is deleting (the apiserver's
	// pkg/registry/core/service/ipallocator/cidrallocator.go at v1.37.2, as at v1.36.3), so
	// addresses in it keep coming. (If a new apiserver refuses this, it fixed
	// that: drop this check.)
	svc2, err := r.tryService(t, ns, "10.4.0.20")
	if err != nil {
		t.Fatalf("Create(Service, clusterIP 10.4.0.20, both ServiceCIDRs of the range deleting) = %v, want accepted", err)
	}
	checkIPAddress(t, r.cs, svc2)
	// Both decide again when the first address goes, and stay blocked by the other.
	r.deleteService(t, svc)
	for _, name := range []string{a, b} {
		r.waitDecision(t, name, "blocked by 10.4.0.20 alone", func(s controller.Sync) bool {
			return s.Decision.Action == cidrfinalizer.ActionBlock &&
				slices.Equal(s.Decision.Blocking, []netip.Addr{netip.MustParseAddr("10.4.0.20")})
		})
	}
	r.holdBlocked(t, time.Now(), a, b)

	svcGone := r.deleteService(t, svc2)
	r.waitReleased(t, a, dueA, svcGone.Add(scLate))
	r.waitReleased(t, b, dueB, svcGone.Add(scLate))
	r.checkSyncs(t, a, svcGone, dueA, false, true)
	r.checkSyncs(t, b, svcGone, dueB, false, true)
}

// scRun is one running controller and what the test created around it.
type scRun struct {
	cs kubernetes.Interface

	mu    sync.Mutex
	syncs []controller.Sync
	cidrs []string               // ServiceCIDRs created by the test
	svcs  []types.NamespacedName // Services created by the test
}

// startServiceCIDRController runs the controller (real clock, scGrace, one
// worker, logging through t) until the test ends; cleanups stop it, wait
// for it and its informers, and then remove what the test created, plus the
// finalizer on the default ServiceCIDR if it was not there before.
func startServiceCIDRController(t *testing.T, c *cluster.Cluster) *scRun {
	t.Helper()
	r := &scRun{cs: c.Clientset(t)}
	def, err := r.cs.NetworkingV1().ServiceCIDRs().Get(context.Background(), scDefault, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(ServiceCIDR %s) = %v", scDefault, err)
	}
	// Registered first, so it runs last, after the controller has stopped.
	t.Cleanup(func() { r.cleanup(t, !slices.Contains(def.Finalizers, scFinalizer)) })

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	factory := informers.NewSharedInformerFactory(r.cs, 0)
	ctrl, err := controller.New(r.cs, factory, clock.RealClock{}, controller.Config{
		Finalizer: cidrfinalizer.Config{GracePeriod: scGrace},
		Workers:   1,
		OnSync:    r.record,
	})
	if err != nil {
		cancel()
		t.Fatalf("controller.New() = %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !t.Failed() {
			t.Errorf("controller Run() = %v", err)
		}
		factory.Shutdown()
	})
	return r
}

func (r *scRun) record(s controller.Sync) {
	r.mu.Lock()
	r.syncs = append(r.syncs, s)
	r.mu.Unlock()
}

func (r *scRun) syncsOf(name string) []controller.Sync {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []controller.Sync
	for _, s := range r.syncs {
		if s.Key == name {
			out = append(out, s)
		}
	}
	return out
}

func (r *scRun) createServiceCIDR(t *testing.T, prefix, cidr string) string {
	t.Helper()
	sc := testutil.ServiceCIDR(cluster.UniqueName(t, prefix), cidr)
	sc.UID = ""
	r.mu.Lock()
	r.cidrs = append(r.cidrs, sc.Name)
	r.mu.Unlock()
	if _, err := r.cs.NetworkingV1().ServiceCIDRs().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create(ServiceCIDR %s %s) = %v", sc.Name, cidr, err)
	}
	return sc.Name
}

// createService creates a ClusterIP Service pinned to clusterIP (a Service
// may otherwise get its address from any ServiceCIDR).
func (r *scRun) createService(t *testing.T, ns, clusterIP string) *v1.Service {
	t.Helper()
	svc := createService(t, r.cs, ns, "svc", clusterIP)
	r.mu.Lock()
	r.svcs = append(r.svcs, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	r.mu.Unlock()
	if svc.Spec.ClusterIP != clusterIP {
		t.Fatalf("Service %s/%s clusterIP = %q, want %s", svc.Namespace, svc.Name, svc.Spec.ClusterIP, clusterIP)
	}
	return svc
}

// tryService is createService for a Create that may be refused.
func (r *scRun) tryService(t *testing.T, ns, clusterIP string) (*v1.Service, error) {
	t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.UniqueName(t, "svc")},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Ports:     []v1.ServicePort{{Port: 80}},
		},
	}
	got, err := r.cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.svcs = append(r.svcs, types.NamespacedName{Namespace: ns, Name: svc.Name})
	r.mu.Unlock()
	return got, nil
}

// deleteService deletes svc and waits until its IPAddress is gone. It
// returns the time just before the Delete call: the address existed at
// least until then.
func (r *scRun) deleteService(t *testing.T, svc *v1.Service) time.Time {
	t.Helper()
	before := time.Now()
	if err := r.cs.CoreV1().Services(svc.Namespace).Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Delete(Service %s/%s) = %v", svc.Namespace, svc.Name, err)
	}
	cluster.Eventually(t, waitTimeout, "IPAddress "+svc.Spec.ClusterIP+" released", func(ctx context.Context) (bool, error) {
		_, err := r.cs.NetworkingV1().IPAddresses().Get(ctx, svc.Spec.ClusterIP, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	return before
}

// deleteServiceCIDR deletes name, checks that the finalizer keeps it, and
// returns its deletionTimestamp.
func (r *scRun) deleteServiceCIDR(t *testing.T, name string) time.Time {
	t.Helper()
	ctx := context.Background()
	if err := r.cs.NetworkingV1().ServiceCIDRs().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Delete(ServiceCIDR %s) = %v", name, err)
	}
	sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(ServiceCIDR %s) after Delete = %v, want it kept by the finalizer", name, err)
	}
	if sc.DeletionTimestamp == nil || !slices.Contains(sc.Finalizers, scFinalizer) {
		t.Fatalf("ServiceCIDR %s after Delete: deletionTimestamp %v, finalizers %v; want both", name, sc.DeletionTimestamp, sc.Finalizers)
	}
	return sc.DeletionTimestamp.Time
}

// waitProtected waits for the finalizer and Ready=True on name; with
// ourMessage, also for the upstream ready message and an empty reason (the
// default ServiceCIDR's condition is the apiserver's).
func (r *scRun) waitProtected(t *testing.T, name string, ourMessage bool) {
	t.Helper()
	var last *networkingv1.ServiceCIDR
	cluster.Eventually(t, waitTimeout, "ServiceCIDR "+name+" protected and Ready", func(ctx context.Context) (bool, error) {
		sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = sc
		c := scReadyCondition(sc)
		ok := slices.Contains(sc.Finalizers, scFinalizer) && c != nil && c.Status == metav1.ConditionTrue
		if ok && ourMessage && (c.Reason != "" || c.Message != scMessageReady) {
			return false, fmt.Errorf("%s", scDescribe(sc))
		}
		if !ok {
			return false, fmt.Errorf("%s", scDescribe(sc))
		}
		return true, nil
	})
	t.Logf("ServiceCIDR %s: %s", name, scDescribe(last))
}

// waitCondition waits for the Ready condition of name to be status/reason/message.
func (r *scRun) waitCondition(t *testing.T, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	what := fmt.Sprintf("ServiceCIDR %s Ready=%s/%s %q", name, status, reason, message)
	cluster.Eventually(t, waitTimeout, what, func(ctx context.Context) (bool, error) {
		sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := scReadyCondition(sc)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
			return false, fmt.Errorf("%s", scDescribe(sc))
		}
		return true, nil
	})
}

// holdBlocked checks every 200 ms until the time until that each named
// ServiceCIDR is still there with its finalizer and the blocked condition.
func (r *scRun) holdBlocked(t *testing.T, until time.Time, names ...string) {
	t.Helper()
	ctx := context.Background()
	checks := 0
	for {
		for _, name := range names {
			sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("ServiceCIDR %s while an address only it covers exists: Get = %v, want it blocked", name, err)
			}
			c := scReadyCondition(sc)
			if !slices.Contains(sc.Finalizers, scFinalizer) || c == nil || c.Status != metav1.ConditionFalse ||
				c.Reason != scReasonTerminating || c.Message != scMessageBlocked {
				t.Fatalf("ServiceCIDR %s while an address only it covers exists: %s; want the finalizer and Ready=False/%s %q",
					name, scDescribe(sc), scReasonTerminating, scMessageBlocked)
			}
		}
		checks++
		if !time.Now().Before(until) {
			break
		}
		time.Sleep(min(200*time.Millisecond, time.Until(until)+time.Millisecond))
	}
	t.Logf("%v blocked at each of %d checks until %s", names, checks, until.Format(time.StampMilli))
}

// pokeStillBlocked makes the controller decide on name again after due (a
// label update is an event that requeues it) and checks that the decision is
// still ActionBlock and the finalizer is still there.
func (r *scRun) pokeStillBlocked(t *testing.T, due time.Time, name string) {
	t.Helper()
	ctx := context.Background()
	at := time.Now()
	if at.Before(due) {
		t.Fatalf("pokeStillBlocked(%s) at %s, before the grace period ends at %s", name, at.Format(time.StampMilli), due.Format(time.StampMilli))
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		"lifecycle-e2e/poke": fmt.Sprint(at.UnixMilli()),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cs.NetworkingV1().ServiceCIDRs().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("Patch(ServiceCIDR %s labels) = %v", name, err)
	}
	got := r.waitDecision(t, name, "a decision after the label update", func(s controller.Sync) bool { return s.Now.After(at) })
	if got.Decision.Action != cidrfinalizer.ActionBlock {
		t.Errorf("ServiceCIDR %s decided again %v after the grace period ended: %v, want %v (blocking %v)",
			name, got.Now.Sub(due).Round(time.Millisecond), got.Decision.Action, cidrfinalizer.ActionBlock, got.Decision.Blocking)
	}
	sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
	if err != nil || !slices.Contains(sc.Finalizers, scFinalizer) {
		t.Fatalf("ServiceCIDR %s after the decision past the grace period: %v, %v; want it kept by the finalizer", name, scDescribeOrNil(sc), err)
	}
}

// waitDecision waits for a successful sync of name that satisfies ok and returns it.
func (r *scRun) waitDecision(t *testing.T, name, what string, ok func(controller.Sync) bool) controller.Sync {
	t.Helper()
	var got controller.Sync
	cluster.Eventually(t, waitTimeout, "controller on ServiceCIDR "+name+": "+what, func(context.Context) (bool, error) {
		for _, s := range r.syncsOf(name) {
			if s.Err == nil && ok(s) {
				got = s
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

// waitReleased polls name (every 100 ms, until by) until its finalizer is
// gone, fails if that is seen before due, and then waits for the object to
// disappear. It reports whether it saw the grace-period condition
// (Ready=False/Terminating with cidrfinalizer.MessageTerminating) meanwhile.
func (r *scRun) waitReleased(t *testing.T, name string, due, by time.Time) (sawWaiting bool) {
	t.Helper()
	var heldSince, goneAt time.Time // the start of the last Get that saw it, the end of the first that did not
	timeout := max(time.Until(by), time.Second)
	cluster.Eventually(t, timeout, "ServiceCIDR "+name+" finalizer removed", func(ctx context.Context) (bool, error) {
		start := time.Now()
		sc, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		end := time.Now()
		switch {
		case apierrors.IsNotFound(err) || (err == nil && !slices.Contains(sc.Finalizers, scFinalizer)):
			goneAt = end
			return true, nil
		case err != nil:
			return false, err
		}
		heldSince = start
		if c := scReadyCondition(sc); c != nil && c.Status == metav1.ConditionFalse &&
			c.Reason == scReasonTerminating && c.Message == cidrfinalizer.MessageTerminating {
			sawWaiting = true
		}
		return false, fmt.Errorf("still %s", scDescribe(sc))
	})
	if goneAt.Before(due) {
		t.Errorf("ServiceCIDR %s: finalizer already gone at %s, before deletionTimestamp+grace %s",
			name, goneAt.Format(time.StampMilli), due.Format(time.StampMilli))
	}
	held := "already gone at the first check"
	if !heldSince.IsZero() {
		held = "held at least until " + heldSince.Format(time.StampMilli)
	}
	t.Logf("ServiceCIDR %s: finalizer %s, gone by %s (%v after deletionTimestamp+grace)",
		name, held, goneAt.Format(time.StampMilli), goneAt.Sub(due).Round(time.Millisecond))
	cluster.Eventually(t, waitTimeout, "ServiceCIDR "+name+" removed by the apiserver", func(ctx context.Context) (bool, error) {
		_, err := r.cs.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	return sawWaiting
}

// checkSyncs checks the controller's own record of its decisions on name.
// addrUntil is a time up to which the address was certainly there. Then:
// no release before addrUntil and none before due; the last decision before
// addrUntil was ActionBlock; at least one release; with alone (no other
// ServiceCIDR ever covered the address), no ActionWait before addrUntil
// either; with decidedAfterDue, an ActionBlock decision taken after due.
//
// (A deleting ServiceCIDR may rightly wait while a live one with the same
// range exists: in the overlap test the first one deleted waits for the few
// milliseconds before the second is deleted too, then blocks.)
func (r *scRun) checkSyncs(t *testing.T, name string, addrUntil, due time.Time, alone, decidedAfterDue bool) {
	t.Helper()
	var releases, lateBlocks int
	var lastBefore *controller.Sync
	syncs := r.syncsOf(name)
	for i, s := range syncs {
		if s.Err != nil {
			t.Logf("sync of %s at %s: error %v (retried)", name, s.Now.Format(time.StampMilli), s.Err)
			continue
		}
		act := s.Decision.Action
		if s.Now.Before(addrUntil) {
			lastBefore = &syncs[i]
			if act == cidrfinalizer.ActionRemoveFinalizer || (alone && act == cidrfinalizer.ActionWait) {
				t.Errorf("ServiceCIDR %s: %v at %s while its address still existed (until at least %s)",
					name, act, s.Now.Format(time.StampMilli), addrUntil.Format(time.StampMilli))
			}
		}
		switch act {
		case cidrfinalizer.ActionRemoveFinalizer:
			releases++
			if s.Now.Before(due) {
				t.Errorf("ServiceCIDR %s: %v at %s, before deletionTimestamp+grace %s",
					name, act, s.Now.Format(time.StampMilli), due.Format(time.StampMilli))
			}
		case cidrfinalizer.ActionBlock:
			if !s.Now.Before(due) {
				lateBlocks++
			}
		}
	}
	if lastBefore == nil || lastBefore.Decision.Action != cidrfinalizer.ActionBlock {
		t.Errorf("ServiceCIDR %s: last decision before its address went = %+v, want %v", name, lastBefore, cidrfinalizer.ActionBlock)
	}
	if releases == 0 {
		t.Errorf("ServiceCIDR %s: the controller recorded no %v decision", name, cidrfinalizer.ActionRemoveFinalizer)
	}
	if decidedAfterDue && lateBlocks == 0 {
		t.Errorf("ServiceCIDR %s: no %v decision after the grace period ended", name, cidrfinalizer.ActionBlock)
	}
}

// cleanup deletes what the test created (Services first, so their
// addresses go), strips our finalizer from its ServiceCIDRs so they go too,
// and with dropDefault takes the finalizer off the default ServiceCIDR
// again. Everything is already gone after a passing test.
func (r *scRun) cleanup(t *testing.T, dropDefault bool) {
	ctx := context.Background()
	r.mu.Lock()
	svcs, cidrs := slices.Clone(r.svcs), slices.Clone(r.cidrs)
	r.mu.Unlock()
	for _, s := range svcs {
		if err := r.cs.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: Delete(Service %s) = %v", s, err)
		}
	}
	for _, name := range cidrs {
		if err := r.cs.NetworkingV1().ServiceCIDRs().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: Delete(ServiceCIDR %s) = %v", name, err)
		}
		r.dropFinalizer(t, name)
	}
	if dropDefault {
		r.dropFinalizer(t, scDefault)
	}
}

func (r *scRun) dropFinalizer(t *testing.T, name string) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{scFinalizer},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.cs.NetworkingV1().ServiceCIDRs().Patch(context.Background(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: remove the finalizer of ServiceCIDR %s: %v", name, err)
	}
}

func scReadyCondition(sc *networkingv1.ServiceCIDR) *metav1.Condition {
	for i := range sc.Status.Conditions {
		if sc.Status.Conditions[i].Type == networkingv1.ServiceCIDRConditionReady {
			return &sc.Status.Conditions[i]
		}
	}
	return nil
}

// scDescribe prints the deletion state, finalizers and Ready condition of sc.
func scDescribe(sc *networkingv1.ServiceCIDR) string {
	s := fmt.Sprintf("finalizers=%v", sc.Finalizers)
	if sc.DeletionTimestamp != nil {
		s = "deleting " + s
	}
	if c := scReadyCondition(sc); c != nil {
		s += fmt.Sprintf(" Ready=%s reason=%q message=%q", c.Status, c.Reason, c.Message)
	} else {
		s += " (no Ready condition)"
	}
	return s
}

func scDescribeOrNil(sc *networkingv1.ServiceCIDR) string {
	if sc == nil {
		return "<nil>"
	}
	return scDescribe(sc)
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
