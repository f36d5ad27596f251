package e2e

// The node lifecycle controller (examples/nodecontroller/controller, on
// package monitor) against the real apiserver. The
// controller runs with the real clock and shortened timings; the test plays
// the kubelets (a goroutine renews the Leases of the nodes it keeps alive,
// and the test writes Node and Pod status by hand); nothing else runs.
//
// Every controller is started with a NodeSelector on a label unique to the
// test, so tests never see each other's nodes, and with an audited
// transport: every write it sends is recorded, and the test fails if one of
// them could overwrite a concurrent change (see writeAudit).
//
// Timing rules. Lower bounds ("not before the grace period") are checked on
// the controller's own event times (monitor.Event.At, taken from the same
// real clock as the test's) and on what the server stored; upper bounds are
// generous (ncLate) because the machine is shared and noisy. Two server
// facts matter: a taint's timeAdded and a pod's deletionTimestamp are stored
// in whole seconds (truncated), and a bound pod deleted normally keeps a
// deletionTimestamp of (the Delete's second) + its grace period (30 s) until
// a kubelet confirms it, which here the test does, when it plays a kubelet
// that came back.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Upstream facts (kube-controller-manager v1.37.2), written out so that a drift
// in the library's constants fails here too.
const (
	ncReasonUnknown       = "NodeStatusUnknown"
	ncMessageUnknown      = "Kubelet stopped posting node status."
	ncReasonNeverUpdated  = "NodeStatusNeverUpdated"
	ncMessageNeverUpdated = "Kubelet never posted node status."
	ncReasonDisruption    = "DeletionByTaintManager"
)

// Shortened timings (upstream: grace 50 s, startup grace 60 s, monitor period
// 5 s, eviction rate 0.1 node/s, eviction retry 5 s; the taint period is
// upstream's 100 ms).
const (
	ncGrace         = 4 * time.Second
	ncStartupGrace  = 6 * time.Second
	ncMonitorPeriod = time.Second
	ncTaintPeriod   = 100 * time.Millisecond
	ncEvictionQPS   = 10.0
	ncEvictionRetry = 500 * time.Millisecond
	// ncRenewPeriod is how often the test's kubelets renew the Leases of
	// live nodes (upstream kubelets: a quarter of the 40 s lease, 10 s).
	ncRenewPeriod = 250 * time.Millisecond
	// ncShort is the short explicit toleration (seconds) for unreachable.
	ncShort = 3
	// ncLate bounds how late a decision may come after it is due: a monitor
	// period, informer delivery, a few writes, a loaded machine.
	ncLate = 10 * time.Second
	// ncSelectorKey labels the nodes of one test; the controller's
	// NodeSelector selects that label's value.
	ncSelectorKey = "lifecycle-e2e/nodecontroller"
	ncRegion      = "region-1"
)

var (
	unreachableNoExecute = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	unreachableNoSched   = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}
	notReadyNoExecute    = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
	notReadyNoSched      = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
)

// Outage and recovery. Three nodes in two zones (A: a1, a2; B: b1); on a1 a pod
// that tolerates unreachable forever, one with a 3 s toleration, one with
// 0 s, and one with only the admission's 300 s defaults.
//
//  1. a1 stops renewing its Lease: no earlier than grace after its last
//     renewal the controller writes Ready=Unknown (upstream reason and
//     message; the pressure conditions it never had become Unknown/
//     NeverUpdated), taints it unreachable NoExecute and NoSchedule, marks
//     its pods Ready=False, evicts the 0 s pod at once and the 3 s pod no
//     earlier than 3 s after the taint (DisruptionTarget with reason
//     DeletionByTaintManager, then a deletionTimestamp), and leaves the other
//     two alone.
//  2. a1's Lease resumes and Ready=True is written: both taints go.
//  3. Zone B goes dark while zone A is healthy: zone B is in full disruption
//     but tainted at the normal rate, and its 0 s pod is evicted.
//  4. Every node goes dark: full disruption. The controller removes every
//     NoExecute health taint, and no pod is evicted for 3 × the short
//     toleration, although 3 s pods sit on all the silent nodes.
func TestNodeControllerOutageAndRecovery(t *testing.T) {
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	a1 := e.addNode("a1", "zone-a")
	a2 := e.addNode("a2", "zone-a")
	b1 := e.addNode("b1", "zone-b")

	forever := e.addPod("forever", a1, unreachableToleration(nil))
	short := e.addPod("short", a1, unreachableToleration(testutil.Seconds(ncShort)))
	zero := e.addPod("zero", a1, unreachableToleration(testutil.Seconds(0)))
	defaults := e.addPod("defaults", a1)
	bZero := e.addPod("b-zero", b1, unreachableToleration(testutil.Seconds(0)))
	bDefaults := e.addPod("b-defaults", b1)
	a2Short := e.addPod("a2-short", a2, unreachableToleration(testutil.Seconds(ncShort)))
	if tol := defaults.Spec.Tolerations; len(tol) != 2 {
		t.Fatalf("pod %s tolerations = %s, want the two admission defaults", defaults.Name, jsonString(tol))
	}

	cfg := e.config()
	r := e.start(1, e.client(), cfg)
	r.waitNodesKnown(t, 3)

	// 1. a1 goes silent.
	t.Log("phase 1: node a1 stops renewing its Lease")
	lastRenew := e.kubelet.silence(a1)
	unknown := e.waitUnknown(t, a1, lastRenew, ncGrace)
	e.checkUnknownStatus(t, a1)
	added := e.waitTaintEvent(t, monitor.KindTaintAdded, a1, unreachableNoExecute)
	if added.At.Before(unknown.At) {
		t.Errorf("taint %v added to %s at %s, before the node went Unknown at %s", unreachableNoExecute, a1, stamp(added.At), stamp(unknown.At))
	}
	node := e.waitTaints(t, a1, []v1.Taint{unreachableNoExecute, unreachableNoSched}, nil)
	timeAdded := findTaint(node, unreachableNoExecute).TimeAdded
	if timeAdded == nil {
		t.Fatalf("node %s: taint %v has no timeAdded", a1, unreachableNoExecute)
	}
	e.waitPodsNotReady(t, forever, short, zero, defaults)

	e.waitEvicted(t, zero, added.At, timeAdded.Time, 0)
	e.waitEvicted(t, short, added.At, timeAdded.Time, ncShort)
	// The other two stay: forever tolerates unreachable without limit, and
	// defaults has 300 s. Hold a little past the short pod's eviction.
	e.holdNotEvicted(t, added.At.Add(2*ncShort*time.Second), forever, defaults)

	// 2. The kubelet of a1 comes back: Lease renewed, Ready=True.
	t.Log("phase 2: node a1 renews its Lease again and reports Ready")
	back := e.kubelet.resume(t, a1)
	e.setConditions(t, a1, map[v1.NodeConditionType]v1.ConditionStatus{v1.NodeReady: v1.ConditionTrue})
	e.confirmDeletions(t, a1)
	e.waitTaints(t, a1, nil, []v1.Taint{unreachableNoExecute, unreachableNoSched})
	for _, ev := range e.events.match(func(ev ncEvent) bool {
		return ev.Kind == monitor.KindTaintRemoved && ev.Node == a1 && ev.Taint.Key == v1.TaintNodeUnreachable
	}) {
		if ev.At.Before(back) {
			t.Errorf("taint %s removed from %s at %s, before its Lease was renewed at %s", ev.Detail, a1, stamp(ev.At), stamp(back))
		}
	}
	e.holdNotEvicted(t, time.Now(), forever, defaults)

	// 3. Zone B goes dark; zone A is healthy.
	t.Log("phase 3: zone B (node b1) goes dark")
	lastRenew = e.kubelet.silence(b1)
	e.waitUnknown(t, b1, lastRenew, ncGrace)
	zoneB := zonestate.Key(e.node(t, b1))
	zb := e.events.wait(t, ncLate, "zone B in full disruption", func(ev ncEvent) bool {
		return ev.Kind == monitor.KindZoneState && ev.Zone == zoneB && ev.State == zonestate.StateFullDisruption
	})
	if zb.QPS != ncEvictionQPS {
		t.Errorf("zone B in full disruption while zone A is healthy: rate %g nodes/s, want the normal %g", zb.QPS, ncEvictionQPS)
	}
	addedB := e.waitTaintEvent(t, monitor.KindTaintAdded, b1, unreachableNoExecute)
	nodeB := e.waitTaints(t, b1, []v1.Taint{unreachableNoExecute, unreachableNoSched}, nil)
	e.waitEvicted(t, bZero, addedB.At, findTaint(nodeB, unreachableNoExecute).TimeAdded.Time, 0)
	e.holdNotEvicted(t, time.Now().Add(time.Second), bDefaults)
	if evs := e.events.match(func(ev ncEvent) bool { return ev.Kind == monitor.KindDisruptionMode }); len(evs) != 0 {
		t.Errorf("full disruption mode changed with zone A healthy: %v", evs)
	}

	// 4. Every node goes dark. A new 3 s pod on a1 too: with the taints
	// kept, both 3 s pods would be evicted during the hold below.
	t.Log("phase 4: every node goes dark")
	a1Short := e.addPod("a1-short", a1, unreachableToleration(testutil.Seconds(ncShort)))
	before := e.deletionTimestamps(t)
	last1 := e.kubelet.silence(a1)
	last2 := e.kubelet.silence(a2)
	entered := e.events.wait(t, ncGrace+ncLate, "full disruption entered", func(ev ncEvent) bool {
		return ev.Kind == monitor.KindDisruptionMode && ev.Entered
	})
	if due := laterOf(last1, last2).Add(ncGrace); entered.At.Before(due) {
		t.Errorf("full disruption entered at %s, before the last node's grace period ended at %s", stamp(entered.At), stamp(due))
	}
	for _, n := range []string{a1, a2, b1} {
		e.waitTaints(t, n, nil, []v1.Taint{unreachableNoExecute, notReadyNoExecute})
		if got := readyStatus(e.node(t, n)); got != v1.ConditionUnknown {
			t.Errorf("node %s in full disruption: Ready = %q, want Unknown", n, got)
		}
	}
	clean := time.Now()
	hold := laterOf(clean, entered.At).Add(3 * ncShort * time.Second)
	t.Logf("full disruption entered at %s, NoExecute taints gone by %s; holding until %s", stamp(entered.At), stamp(clean), stamp(hold))
	for {
		for _, n := range []string{a1, a2, b1} {
			node := e.node(t, n)
			for _, tk := range []v1.Taint{unreachableNoExecute, notReadyNoExecute} {
				if findTaint(node, tk) != nil {
					t.Fatalf("node %s in full disruption at %s: taint %v back on it (%s)", n, stamp(time.Now()), tk, jsonString(node.Spec.Taints))
				}
			}
		}
		e.checkNoNewDeletions(t, before)
		if !time.Now().Before(hold) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, ev := range e.events.match(func(ev ncEvent) bool {
		return ev.Kind == monitor.KindPodEvicted && !ev.At.Before(entered.At)
	}) {
		t.Errorf("pod %s evicted at %s in full disruption (entered at %s)", ev.Pod, stamp(ev.At), stamp(entered.At))
	}
	for _, p := range []*v1.Pod{a1Short, a2Short} {
		if got, err := e.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("pod %s (3 s toleration) after %v of full disruption: %v, err %v; want kept", p.Name, hold.Sub(entered.At).Round(time.Second), describePod(got), err)
		}
	}
}

// Taint conflicts: a concurrent writer (a goroutine of the test)
// adds and removes its own taints on node w with Update and the
// resourceVersion it read, retrying on conflict, while the test-kubelet
// keeps flipping w's conditions so that the controller keeps patching w's
// taints (NoSchedule taints by condition, and the NoExecute not-ready taint
// while Ready=False). At the end w has exactly the writer's taints plus the
// controller's for the final conditions: no taint was lost, none came back.
// The audited transport shows that every controller write carried a
// resourceVersion (or, for pods, a UID), and that some of its patches hit a
// conflict, so the race really happened.
func TestNodeControllerTaintConflicts(t *testing.T) {
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	w := e.addNode("w", "zone-a")
	e.addNode("v", "zone-b") // so that w going NotReady is not a full disruption

	r := e.start(1, e.client(), e.config())
	r.waitNodesKnown(t, 2)

	stop := make(chan struct{})
	writer := &taintWriter{cs: e.cs, node: w, keep: map[string]bool{}}
	flipper := &conditionFlipper{e: e, node: w}
	var wg sync.WaitGroup
	var writerErr, flipperErr error
	wg.Go(func() { writerErr = writer.run(stop) })
	wg.Go(func() { flipperErr = flipper.run(stop) })

	// Run for at least 6 s, and on until the controller has hit a few
	// conflicts (at most 25 s).
	start := time.Now()
	for time.Since(start) < 6*time.Second || (e.audit.conflicts(nodeTaintPatch) < 3 && time.Since(start) < 25*time.Second) {
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if writerErr != nil || flipperErr != nil {
		t.Fatalf("writer: %v; condition flipper: %v", writerErr, flipperErr)
	}
	t.Logf("after %v: writer %d updates (%d conflicts), %d condition flips; controller %d taint patches (%d conflicts)",
		time.Since(start).Round(100*time.Millisecond), writer.ops, writer.conflicts, flipper.flips,
		e.audit.count(nodeTaintPatch), e.audit.conflicts(nodeTaintPatch))

	// Final conditions: Ready, memory and PID pressure.
	e.setConditions(t, w, map[v1.NodeConditionType]v1.ConditionStatus{
		v1.NodeReady: v1.ConditionTrue, v1.NodeMemoryPressure: v1.ConditionTrue,
		v1.NodeDiskPressure: v1.ConditionFalse, v1.NodePIDPressure: v1.ConditionTrue,
	})
	want := []v1.Taint{
		{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule},
		{Key: v1.TaintNodePIDPressure, Effect: v1.TaintEffectNoSchedule},
	}
	for _, key := range writer.kept() {
		want = append(want, v1.Taint{Key: key, Value: "kept", Effect: v1.TaintEffectNoSchedule})
	}
	cluster.Eventually(t, 3*ncLate, "node "+w+" taints settle", func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, w, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !sameTaintSet(n.Spec.Taints, want) {
			return false, fmt.Errorf("taints %s, want %s", taintList(n.Spec.Taints), taintList(want))
		}
		return true, nil
	})
	// And they stay so for two monitor periods (nothing comes back).
	time.Sleep(2 * ncMonitorPeriod)
	if n := e.node(t, w); !sameTaintSet(n.Spec.Taints, want) {
		t.Errorf("node %s taints = %s, want %s", w, taintList(n.Spec.Taints), taintList(want))
	} else {
		t.Logf("node %s ends with the writer's %d taints, memory-pressure and pid-pressure", w, len(want)-2)
	}
	changes := e.events.match(func(ev ncEvent) bool {
		return (ev.Kind == monitor.KindTaintAdded || ev.Kind == monitor.KindTaintRemoved) && ev.Node == w && ev.At.After(start)
	})
	var noExecute int
	for _, ev := range changes {
		if ev.Taint.Effect == v1.TaintEffectNoExecute {
			noExecute++
		}
	}
	if len(changes) < 10 || noExecute == 0 {
		t.Errorf("the controller changed %d taints on %s during the race (%d NoExecute), want at least 10 and some NoExecute", len(changes), w, noExecute)
	}
	if writer.conflicts == 0 {
		t.Errorf("the writer never hit a conflict: the test did not race")
	}
	if e.audit.conflicts(nodeTaintPatch) == 0 {
		t.Errorf("no controller taint patch hit a conflict in %v: the test did not race", time.Since(start).Round(time.Second))
	}
	// The audit itself (no blind write) is checked when the test ends.
}

// An apiserver restart mid-countdown: the controller runs with snapshots (a
// ConfigMap store) and UseTaintTimeAdded. Node n goes silent and is tainted
// at T (its timeAdded); a pod with a 20 s toleration counts down. At T+4 s
// the kube-apiserver is killed (SIGKILL) and started again (same etcd); the
// running controller's informers reconnect; then the controller is
// restarted too: a new Controller that loads the snapshot. The pod is
// evicted at T+20 s (not 20 s after the restart), the taint is never removed
// and re-added (timeAdded unchanged, no removal event), node m (renewing
// again after the outage) never goes Unknown, and node s, silent since the
// kill, goes Unknown a grace period after its last renewal seen before the
// restart (the snapshot), not a grace period after the restart.
func TestNodeControllerAPIServerRestartMidCountdown(t *testing.T) {
	const (
		grace = 15 * time.Second // longer than an apiserver restart plus informer reconnect
		tol   = 20               // seconds
		// slack: how late the eviction may come after T+tol. Far less than
		// the time from T to the restart, so a countdown started afresh by
		// the restart would fail.
		slack = 5 * time.Second
	)
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	n := e.addNode("n", "zone-a")
	m := e.addNode("m", "zone-b")
	s := e.addNode("s", "zone-b")
	pod := e.addPod("tol20", n, unreachableToleration(testutil.Seconds(tol)))
	cfg := e.config()
	cfg.Monitor.Health = nodehealth.Config{GracePeriod: grace, StartupGracePeriod: grace + 5*time.Second}
	cfg.Monitor.Evictor.UseTaintTimeAdded = true
	cfg.SnapshotPeriod = time.Second

	// Each controller has its own client and store (a new process).
	withStore := func(cs kubernetes.Interface) controller.Config {
		store, err := controller.NewConfigMapStore(cs, e.ns, "node-lifecycle-snapshot")
		if err != nil {
			t.Fatal(err)
		}
		cfg := cfg
		cfg.Snapshots = store
		return cfg
	}
	cs1 := e.client()
	r1 := e.start(1, cs1, withStore(cs1))
	r1.waitNodesKnown(t, 3)
	lastRenew := e.kubelet.silence(n)
	e.waitUnknown(t, n, lastRenew, grace)
	node := e.waitTaints(t, n, []v1.Taint{unreachableNoExecute}, nil)
	T := findTaint(node, unreachableNoExecute).TimeAdded.Time
	due := T.Add(tol * time.Second)
	t.Logf("node %s tainted, timeAdded %s: pod %s due at %s", n, stamp(T), pod.Name, stamp(due))
	watch := e.watchTaint(t, n, unreachableNoExecute, T)

	// Kill the apiserver in the middle of the countdown.
	time.Sleep(time.Until(T.Add(4 * time.Second)))
	t.Cleanup(func() { // if the test fails while it is down
		if !c.APIServerRunning() {
			_ = c.StartAPIServer(context.Background())
		}
	})
	// s stays silent from the outage on. Silenced just before the kill: a
	// renewal cut off by the kill could be stored without its kubelet
	// knowing it.
	sLast := e.kubelet.silence(s)
	if err := c.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := c.StartAPIServer(context.Background()); err != nil {
		t.Fatalf("StartAPIServer() = %v", err)
	}
	up := time.Now()
	t.Logf("apiserver killed at %s (T+%v), ready again after %v", stamp(killed), killed.Sub(T).Round(time.Millisecond), up.Sub(killed).Round(time.Millisecond))

	// The running controller recovers: its informers see m's first renewal
	// after the restart (the reflectors back off up to ~30 s; allow 60 s).
	renewed := e.kubelet.waitRenewed(t, m, up)
	cluster.Eventually(t, 60*time.Second, "controller 1 sees node "+m+"'s Lease renewed after the restart", func(context.Context) (bool, error) {
		l := r1.ctrl.Cluster().GetLease(m)
		return l != nil && l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(renewed.Truncate(time.Microsecond)), nil
	})
	t.Logf("controller 1's informers reconnected %v after the apiserver was ready", time.Since(up).Round(time.Millisecond))

	// Restart the controller: Run saves a last snapshot on the way out; a
	// new Controller loads it.
	r1.stop(t)
	recs, err := withStore(e.cs).Snapshots.Load(context.Background())
	if err != nil {
		t.Fatalf("snapshot Load() = %v", err)
	}
	var sRec nodehealth.Record
	for _, rec := range recs {
		if rec.Name == s {
			sRec = rec
		}
	}
	if len(recs) != 3 || sRec.Name == "" {
		t.Fatalf("snapshot holds %d records (%s), want n, m and s", len(recs), jsonString(recs))
	}
	restarted := time.Now()
	cs2 := e.client()
	r2 := e.start(2, cs2, withStore(cs2))
	r2.waitNodesKnown(t, 3)
	t.Logf("controller 2 running at T+%v; with a fresh countdown the pod would go at about %s",
		time.Since(T).Round(time.Millisecond), stamp(restarted.Add(tol*time.Second)))
	if restarted.After(due.Add(-2 * time.Second)) {
		t.Logf("controller 2 started only %v before the eviction is due (slow machine): the countdown across the restart is not really tested", due.Sub(restarted))
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	// Controller 2's Evictor counts from the taint's timeAdded.
	var ex taints.Explanation
	cluster.Eventually(t, ncLate, "controller 2 schedules the eviction of "+key.String(), func(context.Context) (bool, error) {
		ex = r2.ctrl.Monitor().Explain(time.Now(), key)
		return ex.State != taints.EvictionNotTracked && ex.State != taints.EvictionNodeNotTainted, nil
	})
	if ex.State != taints.EvictionDone && (!ex.Start.Equal(T) || !ex.At.Equal(due)) {
		t.Errorf("controller 2 Explain(%s) = %v, countdown from %s to %s; want from the taint's timeAdded %s to %s",
			key, ex.State, stamp(ex.Start), stamp(ex.At), stamp(T), stamp(due))
	}

	e.waitEvicted(t, pod, T, T, tol)
	ev := e.events.wait(t, time.Second, "pod-evicted event for "+key.String(), func(ev ncEvent) bool {
		return ev.Kind == monitor.KindPodEvicted && ev.Pod == key.String()
	})
	if ev.At.Before(due) || ev.At.After(due.Add(slack)) {
		t.Errorf("pod %s evicted at %s, want in [%s, %s] (timeAdded + %ds)", key, stamp(ev.At), stamp(due), stamp(due.Add(slack)), tol)
	}
	if ev.Gen != 2 {
		t.Logf("the pod was evicted by controller %d", ev.Gen)
	}

	// s: Unknown a grace period after its last renewal controller 1 saw,
	// as the snapshot says, not a grace period after the restart.
	sDue := sRec.Probe.Add(grace)
	sUnknown := e.waitUnknown(t, s, sLast, grace)
	if sUnknown.Gen == 2 {
		if sUnknown.At.Before(sDue) || sUnknown.At.After(sDue.Add(ncMonitorPeriod+slack)) {
			t.Errorf("node %s went Unknown at %s, want at its restored deadline %s (probe %s + grace)", s, stamp(sUnknown.At), stamp(sDue), stamp(sRec.Probe))
		}
		// Distinguishable from a fresh grace period only when the saved
		// probe is well before the restart.
		if sRec.Probe.Before(restarted.Add(-2*time.Second)) && !sUnknown.At.Before(restarted.Add(grace)) {
			t.Errorf("node %s went Unknown at %s, a whole grace period after the restart: the snapshot was not used", s, stamp(sUnknown.At))
		}
	} else {
		t.Logf("node %s went Unknown under controller %d", s, sUnknown.Gen)
	}

	// The taint on n was never removed nor re-added; m never went Unknown.
	watch.stop(t)
	if got := findTaint(e.node(t, n), unreachableNoExecute); got == nil || got.TimeAdded == nil || !got.TimeAdded.Time.Equal(T) {
		t.Errorf("node %s taint %v after the restarts = %s, want timeAdded %s unchanged", n, unreachableNoExecute, jsonString(got), stamp(T))
	}
	for _, ev := range e.events.match(func(ev ncEvent) bool {
		// (The apiserver's NodeTaint admission gives every new node
		// not-ready:NoSchedule, which the controller removes at start.)
		return (ev.Kind == monitor.KindTaintRemoved && ev.Node == n && ev.Taint.Key == v1.TaintNodeUnreachable) ||
			(ev.Kind == monitor.KindTaintAdded && ev.Node == n && ev.Taint.Effect == v1.TaintEffectNoExecute && ev.Gen == 2) ||
			(ev.Kind == monitor.KindNodeUnknown && ev.Node == m)
	}) {
		t.Errorf("controller %d at %s: %s %s %s, want none across the restarts", ev.Gen, stamp(ev.At), ev.Kind, ev.Node, ev.Detail)
	}
}

// nodeEnv is one test's nodes, pods, kubelet, controllers and their events.
type nodeEnv struct {
	t        *testing.T
	c        *cluster.Cluster
	cs       kubernetes.Interface // admin client of the test (not audited)
	ns       string
	selector string // value of ncSelectorKey on this test's nodes
	kubelet  *fakeKubelet
	events   *eventLog
	audit    *writeAudit
}

func newNodeEnv(t *testing.T, c *cluster.Cluster) *nodeEnv {
	t.Helper()
	e := &nodeEnv{
		t: t, c: c, cs: c.Clientset(t), ns: c.Namespace(t),
		selector: cluster.UniqueName(t, "nc"),
		events:   &eventLog{t: t},
	}
	e.audit = &writeAudit{}
	t.Cleanup(func() { // registered first: runs last, after every controller stopped
		for _, v := range e.audit.violations() {
			t.Errorf("blind write by the controller: %s", v)
		}
		t.Logf("controller writes: %s", e.audit.summary())
	})
	e.kubelet = startKubelet(t, e.cs)
	return e
}

// config is the shortened controller configuration for this test's nodes.
func (e *nodeEnv) config() controller.Config {
	cfg := controller.DefaultConfig()
	cfg.Monitor.Health = nodehealth.Config{GracePeriod: ncGrace, StartupGracePeriod: ncStartupGrace}
	cfg.Monitor.MonitorPeriod = ncMonitorPeriod
	cfg.Monitor.TaintPeriod = ncTaintPeriod
	cfg.Monitor.Zones.EvictionQPS = ncEvictionQPS
	cfg.Monitor.Zones.SecondaryEvictionQPS = ncEvictionQPS / 10
	cfg.Monitor.EvictionRetry = ncEvictionRetry
	cfg.NodeSelector = ncSelectorKey + "=" + e.selector
	return cfg
}

// addNode creates a node in region-1/zone, labelled for this test's
// selector, reporting Ready=True, with a Lease the kubelet keeps renewing.
// The node and its Lease are deleted when the test ends.
func (e *nodeEnv) addNode(prefix, zone string) string {
	t := e.t
	t.Helper()
	n := testutil.WithZone(testutil.Node(cluster.UniqueName(t, prefix), time.Now()), ncRegion, zone)
	n.UID, n.CreationTimestamp = "", metav1.Time{}
	n.Labels[ncSelectorKey] = e.selector
	got, err := e.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(node %s) = %v", n.Name, err)
	}
	// The apiserver's NodeTaint admission plugin (TaintNodesByCondition)
	// gives every new node not-ready:NoSchedule; the controller removes it
	// once the node is Ready.
	if findTaint(got, notReadyNoSched) == nil {
		t.Errorf("new node %s taints = %s, want %v from admission", n.Name, taintList(got.Spec.Taints), notReadyNoSched)
	}
	setNodeReady(t, e.cs, got, v1.ConditionTrue)
	lease := createLease(t, e.cs, n.Name)
	e.kubelet.add(n.Name, lease)
	t.Cleanup(func() {
		e.kubelet.silence(n.Name)
		ctx := context.Background()
		_ = e.cs.CoordinationV1().Leases(lease.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{})
		_ = e.cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	})
	return n.Name
}

// addPod creates a pod bound to node with the given tolerations (admission
// adds the 300 s defaults for the keys it lacks) and, as its kubelet would,
// reports it Running and Ready.
func (e *nodeEnv) addPod(prefix, node string, tol ...v1.Toleration) *v1.Pod {
	t := e.t
	t.Helper()
	p := createPod(t, e.cs, e.ns, prefix, node, tol...)
	now := metav1.Now()
	p.Status.Phase = v1.PodRunning
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}
	got, err := e.cs.CoreV1().Pods(e.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus(pod %s Ready) = %v", p.Name, err)
	}
	return got
}

func unreachableToleration(seconds *int64) v1.Toleration {
	return v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func (e *nodeEnv) node(t *testing.T, name string) *v1.Node {
	t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(node %s) = %v", name, err)
	}
	return n
}

// setConditions writes the given node conditions (heartbeat now; the
// transition time moves only when the status changes), as a kubelet would:
// read, modify, UpdateStatus, retry on conflict.
func (e *nodeEnv) setConditions(t *testing.T, name string, conds map[v1.NodeConditionType]v1.ConditionStatus) {
	t.Helper()
	if err := updateConditions(context.Background(), e.cs, name, conds); err != nil {
		t.Fatalf("UpdateStatus(node %s, %v) = %v", name, conds, err)
	}
}

func updateConditions(ctx context.Context, cs kubernetes.Interface, name string, conds map[v1.NodeConditionType]v1.ConditionStatus) error {
	// Up to 50 tries: in the conflict test two other writers race with it.
	return retry.RetryOnConflict(wait.Backoff{Steps: 50, Duration: 5 * time.Millisecond, Factor: 1.2, Jitter: 1, Cap: 100 * time.Millisecond}, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := time.Now()
		typs := make([]v1.NodeConditionType, 0, len(conds))
		for typ := range conds {
			typs = append(typs, typ)
		}
		slices.Sort(typs)
		for _, typ := range typs {
			s := conds[typ]
			transition := now
			for _, c := range n.Status.Conditions {
				if c.Type == typ && c.Status == s {
					transition = c.LastTransitionTime.Time
				}
			}
			c := testutil.NodeCondition(typ, s, now, transition)
			c.Reason = "TestKubelet"
			testutil.WithCondition(n, c)
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// waitUnknown waits for the controller to write Ready=Unknown on node and
// checks it did not do so before grace had passed since lastRenew (when the
// node's last successful Lease renewal started: the controller cannot have
// seen a signal before it).
func (e *nodeEnv) waitUnknown(t *testing.T, node string, lastRenew time.Time, grace time.Duration) ncEvent {
	t.Helper()
	ev := e.events.wait(t, grace+ncLate, "node "+node+" Unknown", func(ev ncEvent) bool {
		return ev.Kind == monitor.KindNodeUnknown && ev.Node == node
	})
	due := lastRenew.Add(grace)
	t.Logf("node %s: last renewal %s, Unknown at %s (grace %v, +%v)", node, stamp(lastRenew), stamp(ev.At), grace, ev.At.Sub(due).Round(time.Millisecond))
	if !ev.At.After(due) {
		t.Errorf("node %s written Unknown at %s, not after its last renewal %s + grace %v", node, stamp(ev.At), stamp(lastRenew), grace)
	}
	if ev.At.After(due.Add(ncMonitorPeriod + ncLate)) {
		t.Errorf("node %s written Unknown at %s, more than %v after its grace period ended at %s", node, stamp(ev.At), ncMonitorPeriod+ncLate, stamp(due))
	}
	cluster.Eventually(t, ncLate, "node "+node+" Ready=Unknown on the server", func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return readyStatus(n) == v1.ConditionUnknown, nil
	})
	e.waitKubeEvent(t, metav1.NamespaceDefault, "Node", node, controller.ReasonNodeNotReady,
		"Node "+node+" status is now: NodeNotReady")
	return ev
}

// waitKubeEvent waits for the Kubernetes Event the controller records on an
// object (nodes' Events live in the default namespace), with upstream's
// reason and message.
func (e *nodeEnv) waitKubeEvent(t *testing.T, ns, kind, name, reason, message string) {
	t.Helper()
	sel := fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s,reason=%s", kind, name, reason)
	cluster.Eventually(t, ncLate, fmt.Sprintf("Event %s on %s %s", reason, kind, name), func(ctx context.Context) (bool, error) {
		l, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		for _, ev := range l.Items {
			if ev.Message != message || ev.Type != v1.EventTypeNormal || ev.Source.Component != controller.Name {
				return false, fmt.Errorf("Event %s on %s %s: type %s, message %q, source %q; want Normal, %q, %q",
					reason, kind, name, ev.Type, ev.Message, ev.Source.Component, message, controller.Name)
			}
		}
		return len(l.Items) > 0, nil
	})
}

// checkUnknownStatus checks the status the controller wrote on a node that
// only ever reported Ready: Ready Unknown with upstream's reason and message,
// and the three pressure conditions added as Unknown/NeverUpdated.
func (e *nodeEnv) checkUnknownStatus(t *testing.T, name string) {
	t.Helper()
	n := e.node(t, name)
	want := map[v1.NodeConditionType][2]string{
		v1.NodeReady:          {ncReasonUnknown, ncMessageUnknown},
		v1.NodeMemoryPressure: {ncReasonNeverUpdated, ncMessageNeverUpdated},
		v1.NodeDiskPressure:   {ncReasonNeverUpdated, ncMessageNeverUpdated},
		v1.NodePIDPressure:    {ncReasonNeverUpdated, ncMessageNeverUpdated},
	}
	for typ, rm := range want {
		var got *v1.NodeCondition
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == typ {
				got = &n.Status.Conditions[i]
			}
		}
		if got == nil || got.Status != v1.ConditionUnknown || got.Reason != rm[0] || got.Message != rm[1] {
			t.Errorf("node %s condition %s = %s, want Unknown/%s %q", name, typ, jsonString(got), rm[0], rm[1])
		}
	}
}

// waitTaintEvent waits for the controller's event adding (or removing) a
// taint with tk's key and effect on node.
func (e *nodeEnv) waitTaintEvent(t *testing.T, kind monitor.Kind, node string, tk v1.Taint) ncEvent {
	t.Helper()
	return e.events.wait(t, ncLate, fmt.Sprintf("%s %s:%s on %s", kind, tk.Key, tk.Effect, node), func(ev ncEvent) bool {
		return ev.Kind == kind && ev.Node == node && ev.Taint.MatchTaint(&tk)
	})
}

// waitTaints waits until node has every taint of present and none of absent
// (by key and effect), and returns the node.
func (e *nodeEnv) waitTaints(t *testing.T, node string, present, absent []v1.Taint) *v1.Node {
	t.Helper()
	var got *v1.Node
	what := fmt.Sprintf("node %s taints: %s present, %s absent", node, taintList(present), taintList(absent))
	cluster.Eventually(t, ncLate, what, func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = n
		for _, tk := range present {
			if findTaint(n, tk) == nil {
				return false, fmt.Errorf("taints %s", taintList(n.Spec.Taints))
			}
		}
		for _, tk := range absent {
			if findTaint(n, tk) != nil {
				return false, fmt.Errorf("taints %s", taintList(n.Spec.Taints))
			}
		}
		return true, nil
	})
	return got
}

func (e *nodeEnv) waitPodsNotReady(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		cluster.Eventually(t, ncLate, "pod "+p.Name+" Ready=False", func(ctx context.Context) (bool, error) {
			got, err := e.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := podCondition(got, v1.PodReady)
			return c != nil && c.Status == v1.ConditionFalse, nil
		})
	}
}

// waitEvicted waits for the controller to evict pod: the DisruptionTarget
// condition (reason DeletionByTaintManager) and a deletionTimestamp. It
// checks the eviction came no earlier than tol seconds after the taint,
// twice: on the controller's event against tainted (the controller's time
// of the taint), and on the server against timeAdded (both whole seconds).
func (e *nodeEnv) waitEvicted(t *testing.T, pod *v1.Pod, tainted, timeAdded time.Time, tol int64) {
	t.Helper()
	key := pod.Namespace + "/" + pod.Name
	wait := time.Until(timeAdded.Add(time.Duration(tol)*time.Second)) + ncLate
	ev := e.events.wait(t, wait, "pod "+key+" evicted", func(ev ncEvent) bool {
		return ev.Kind == monitor.KindPodEvicted && ev.Pod == key
	})
	minAt := tainted.Add(time.Duration(tol) * time.Second)
	if ev.At.Before(minAt) {
		t.Errorf("pod %s (toleration %ds) evicted at %s, before the taint at %s + %ds", key, tol, stamp(ev.At), stamp(tainted), tol)
	}
	if ev.At.After(minAt.Add(ncLate)) {
		t.Errorf("pod %s (toleration %ds) evicted at %s, more than %v after it was due at %s", key, tol, stamp(ev.At), ncLate, stamp(minAt))
	}
	var got *v1.Pod
	cluster.Eventually(t, ncLate, "pod "+key+" has DisruptionTarget and a deletionTimestamp", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.DeletionTimestamp != nil, nil
	})
	c := podCondition(got, v1.DisruptionTarget)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != ncReasonDisruption {
		t.Errorf("evicted pod %s condition DisruptionTarget = %s, want True/%s", key, jsonString(c), ncReasonDisruption)
	}
	grace := int64(30)
	if got.DeletionGracePeriodSeconds != nil {
		grace = *got.DeletionGracePeriodSeconds
	}
	deleted := got.DeletionTimestamp.Add(-time.Duration(grace) * time.Second) // the Delete's second
	if deleted.Before(timeAdded.Add(time.Duration(tol) * time.Second)) {
		t.Errorf("pod %s deleted in second %s (deletionTimestamp %s - %ds), before timeAdded %s + %ds",
			key, stamp(deleted), stamp(got.DeletionTimestamp.Time), grace, stamp(timeAdded), tol)
	}
	e.waitKubeEvent(t, pod.Namespace, "Pod", pod.Name, controller.ReasonTaintManagerEviction, "Marking for deletion Pod "+key)
	t.Logf("pod %s (toleration %ds) evicted at %s, taint + %v", key, tol, stamp(ev.At), ev.At.Sub(tainted).Round(time.Millisecond))
}

// holdNotEvicted checks every 200 ms until until that no pod of pods has a
// deletionTimestamp or a pod-evicted event.
func (e *nodeEnv) holdNotEvicted(t *testing.T, until time.Time, pods ...*v1.Pod) {
	t.Helper()
	for {
		for _, p := range pods {
			got, err := e.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil || got.DeletionTimestamp != nil {
				t.Fatalf("pod %s at %s: %s, err %v; want kept", p.Name, stamp(time.Now()), describePod(got), err)
			}
			if evs := e.events.match(func(ev ncEvent) bool {
				return ev.Kind == monitor.KindPodEvicted && ev.Pod == p.Namespace+"/"+p.Name
			}); len(evs) > 0 {
				t.Fatalf("pod %s evicted at %s, want kept", p.Name, stamp(evs[0].At))
			}
		}
		if !time.Now().Before(until) {
			return
		}
		time.Sleep(min(200*time.Millisecond, time.Until(until)+time.Millisecond))
	}
}

// confirmDeletions is what a kubelet that comes back does with its pods
// that were deleted meanwhile: it confirms the deletion (grace 0).
func (e *nodeEnv) confirmDeletions(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatalf("List(pods on %s) = %v", node, err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			continue
		}
		err := e.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: testutil.Seconds(0), Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("Delete(pod %s, grace 0) = %v", p.Name, err)
		}
	}
}

// deletionTimestamps returns the deletionTimestamp of every pod of the test
// (nil for pods not being deleted).
func (e *nodeEnv) deletionTimestamps(t *testing.T) map[string]*metav1.Time {
	t.Helper()
	pods, err := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List(pods) = %v", err)
	}
	out := make(map[string]*metav1.Time, len(pods.Items))
	for _, p := range pods.Items {
		out[p.Name] = p.DeletionTimestamp
	}
	return out
}

// checkNoNewDeletions fails if a pod that was not being deleted in before
// is being deleted now.
func (e *nodeEnv) checkNoNewDeletions(t *testing.T, before map[string]*metav1.Time) {
	t.Helper()
	for name, dts := range e.deletionTimestamps(t) {
		if was, ok := before[name]; ok && was == nil && dts != nil {
			t.Fatalf("pod %s got deletionTimestamp %s at %s, in full disruption", name, stamp(dts.Time), stamp(time.Now()))
		}
	}
}

// watchTaint polls node every 100 ms from now on and records every time the
// taint tk is missing or has another timeAdded than timeAdded. Polls that
// fail (the apiserver is down) are skipped.
func (e *nodeEnv) watchTaint(t *testing.T, node string, tk v1.Taint, timeAdded time.Time) *taintWatch {
	w := &taintWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			cancel()
			if err != nil {
				continue
			}
			w.polls++
			got := findTaint(n, tk)
			if got == nil || got.TimeAdded == nil || !got.TimeAdded.Time.Equal(timeAdded) {
				w.bad = append(w.bad, fmt.Sprintf("%s: %s", stamp(time.Now()), taintList(n.Spec.Taints)))
			}
		}
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

type taintWatch struct {
	once          sync.Once
	done, stopped chan struct{}
	polls         int
	bad           []string
}

func (w *taintWatch) stop(t *testing.T) {
	w.once.Do(func() {
		close(w.done)
		<-w.stopped
		if len(w.bad) > 0 {
			t.Errorf("the NoExecute taint was missing or re-added in %d of %d polls: %v", len(w.bad), w.polls, w.bad)
		}
	})
}

// ncRun is one running controller.
type ncRun struct {
	gen    int
	ctrl   *controller.Controller
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// client returns a new clientset for a controller, audited.
func (e *nodeEnv) client() kubernetes.Interface {
	e.t.Helper()
	return auditedClient(e.t, e.c, e.audit.wrap)
}

// auditedClient returns a clientset with c's admin config, the transport
// wrapped by wrap (a write audit), and JSON bodies so that the audit can
// read them all.
func auditedClient(t *testing.T, c *cluster.Cluster, wrap func(http.RoundTripper) http.RoundTripper) kubernetes.Interface {
	t.Helper()
	rc := c.Config()
	rc.ContentType = "application/json"
	rc.Wrap(wrap)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// start runs a controller (generation gen, for the events) with cfg on cs
// (from client), logging through t. It is stopped (and waited for) when
// the test ends, if not before.
func (e *nodeEnv) start(gen int, cs kubernetes.Interface, cfg controller.Config) *ncRun {
	t := e.t
	t.Helper()
	cfg.OnEvent = e.events.sink(gen)
	// Kubernetes Events go through the test's own client: the audit is about
	// the controller's writes to nodes and pods. The broadcaster stops after
	// the controller (cleanups run last first).
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	cfg.Recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name})
	ctrl, err := controller.New(cs, clock.RealClock{}, cfg)
	if err != nil {
		t.Fatalf("controller.New() = %v", err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	r := &ncRun{gen: gen, ctrl: ctrl, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- ctrl.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *ncRun) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			t.Errorf("controller %d Run() = %v", r.gen, err)
		}
	})
}

// waitNodesKnown waits until the controller has run a monitor pass over n nodes.
func (r *ncRun) waitNodesKnown(t *testing.T, n int) {
	t.Helper()
	cluster.Eventually(t, waitTimeout, fmt.Sprintf("controller %d knows %d nodes", r.gen, n), func(context.Context) (bool, error) {
		got := r.ctrl.Monitor().Stats().Nodes
		if got > n {
			return false, fmt.Errorf("controller %d knows %d nodes, want %d (selector leak?)", r.gen, got, n)
		}
		return got == n, nil
	})
}

// ncEvent is a monitor.Event and the controller generation that emitted it.
type ncEvent struct {
	monitor.Event
	Gen int
}

type eventLog struct {
	t   *testing.T
	mu  sync.Mutex
	evs []ncEvent
}

// sink returns the OnEvent callback of controller gen.
func (l *eventLog) sink(gen int) func(monitor.Event) {
	return func(ev monitor.Event) {
		l.mu.Lock()
		l.evs = append(l.evs, ncEvent{Event: ev, Gen: gen})
		l.mu.Unlock()
		l.t.Logf("controller %d %s %-15s node=%s pod=%s %s", gen, stamp(ev.At), ev.Kind, ev.Node, ev.Pod, ev.Detail)
	}
}

func (l *eventLog) match(ok func(ncEvent) bool) []ncEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ncEvent
	for _, ev := range l.evs {
		if ok(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits for the first event that satisfies ok and returns it.
func (l *eventLog) wait(t *testing.T, timeout time.Duration, what string, ok func(ncEvent) bool) ncEvent {
	t.Helper()
	var got ncEvent
	cluster.Eventually(t, timeout, what, func(context.Context) (bool, error) {
		evs := l.match(ok)
		if len(evs) == 0 {
			return false, nil
		}
		got = evs[0]
		return true, nil
	})
	return got
}

// fakeKubelet renews the Leases of the nodes it keeps alive every
// ncRenewPeriod, as kubelets do (Update with the resourceVersion read).
type fakeKubelet struct {
	cs     kubernetes.Interface
	mu     sync.Mutex
	nodes  map[string]*kubeletNode
	cancel context.CancelFunc
	done   chan struct{}
}

type kubeletNode struct {
	name      string
	mu        sync.Mutex // held during a renewal
	live      bool
	lease     *coordinationv1.Lease // as last written; nil: read it first
	lastRenew time.Time             // when the last successful renewal started
}

func startKubelet(t *testing.T, cs kubernetes.Interface) *fakeKubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &fakeKubelet{cs: cs, nodes: map[string]*kubeletNode{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		tick := time.NewTicker(ncRenewPeriod)
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
			for _, n := range nodes {
				k.renew(ctx, n)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-k.done })
	return k
}

// add starts renewing the node's lease.
func (k *fakeKubelet) add(node string, lease *coordinationv1.Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nodes[node] = &kubeletNode{name: node, live: true, lease: lease, lastRenew: lease.Spec.RenewTime.Time}
}

func (k *fakeKubelet) get(node string) *kubeletNode {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nodes[node]
}

// renew renews n's Lease if n is live. It reports whether it did.
func (k *fakeKubelet) renew(ctx context.Context, n *kubeletNode) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.live {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	leases := k.cs.CoordinationV1().Leases(v1.NamespaceNodeLease)
	if n.lease == nil {
		l, err := leases.Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n.lease = l
	}
	start := time.Now()
	l := n.lease.DeepCopy()
	l.Spec.RenewTime = &metav1.MicroTime{Time: start}
	got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		n.lease = nil // read it again next time
		return false
	}
	n.lease, n.lastRenew = got, start
	return true
}

// silence stops renewing node's Lease (waiting for a renewal in flight) and
// returns when its last successful renewal started.
func (k *fakeKubelet) silence(node string) time.Time {
	n := k.get(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.live = false
	return n.lastRenew
}

// resume renews node's Lease at once and from then on, and returns when that
// renewal started.
func (k *fakeKubelet) resume(t *testing.T, node string) time.Time {
	t.Helper()
	n := k.get(node)
	n.mu.Lock()
	n.live = true
	n.mu.Unlock()
	if !k.renew(context.Background(), n) {
		t.Fatalf("renewing the Lease of %s failed", node)
	}
	return k.lastRenewal(node)
}

func (k *fakeKubelet) lastRenewal(node string) time.Time {
	n := k.get(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastRenew
}

// waitRenewed waits for a successful renewal of node's Lease started after
// after and returns when it started.
func (k *fakeKubelet) waitRenewed(t *testing.T, node string, after time.Time) time.Time {
	t.Helper()
	var at time.Time
	cluster.Eventually(t, waitTimeout, "Lease of "+node+" renewed", func(context.Context) (bool, error) {
		at = k.lastRenewal(node)
		return at.After(after), nil
	})
	return at
}

// taintWriter is the concurrent writer of TestNodeControllerTaintConflicts:
// it adds taint w<i> and removes w<i-3> (every third one is kept), each step
// a read-modify-write with Update, retried on conflict.
type taintWriter struct {
	cs             kubernetes.Interface
	node           string
	keep           map[string]bool // key → present after the last successful write
	ops, conflicts int
}

func (w *taintWriter) run(stop <-chan struct{}) error {
	// Every step runs to completion (not on a context that the end of the
	// race cancels): a write cut off mid-flight could land without the
	// writer knowing it did.
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-time.After(15 * time.Millisecond):
		}
		add := fmt.Sprintf("e2e.lifecycle.example/w%d", i)
		rm := ""
		if i >= 3 && (i-3)%3 != 0 {
			rm = fmt.Sprintf("e2e.lifecycle.example/w%d", i-3)
		}
		for attempt := 1; ; attempt++ {
			n, err := w.cs.CoreV1().Nodes().Get(ctx, w.node, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("Get(node %s) = %w", w.node, err)
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == rm || t.Key == add })
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: add, Value: "kept", Effect: v1.TaintEffectNoSchedule})
			_, err = w.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) && attempt < 100 {
				w.conflicts++
				continue
			}
			if err != nil {
				return fmt.Errorf("Update(node %s taints), attempt %d = %w", w.node, attempt, err)
			}
			break
		}
		w.ops++
		w.keep[add] = true
		if rm != "" {
			delete(w.keep, rm)
		}
	}
}

// kept returns the writer's taint keys that must be on the node, sorted.
func (w *taintWriter) kept() []string {
	out := make([]string, 0, len(w.keep))
	for k := range w.keep {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// conditionFlipper plays w's kubelet in TestNodeControllerTaintConflicts: it
// changes w's pressure conditions every 150 ms and its Ready condition every
// 1.5 s, so the controller keeps adding and removing taints.
type conditionFlipper struct {
	e     *nodeEnv
	node  string
	flips int
}

func (f *conditionFlipper) run(stop <-chan struct{}) error {
	status := func(b bool) v1.ConditionStatus {
		if b {
			return v1.ConditionTrue
		}
		return v1.ConditionFalse
	}
	for i := 0; ; i++ {
		conds := map[v1.NodeConditionType]v1.ConditionStatus{
			v1.NodeReady:          status((i/10)%2 == 0),
			v1.NodeMemoryPressure: status(i%2 == 0),
			v1.NodeDiskPressure:   status(i%3 == 0),
			v1.NodePIDPressure:    status(i%5 == 0),
		}
		if err := updateConditions(context.Background(), f.e.cs, f.node, conds); err != nil {
			return fmt.Errorf("UpdateStatus(node %s) = %w", f.node, err)
		}
		f.flips++
		select {
		case <-stop:
			return nil
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// writeAudit records every write a controller sends (through the transport
// wrapper of its rest.Config) and checks that none is blind: each one is
// conditional on what the controller read.
//
//	PUT   configmaps/NAME                                         metadata.resourceVersion
//	PATCH nodes/NAME (spec.taints, or the beta OS/arch labels)    metadata.resourceVersion
//	PATCH nodes/NAME/status (the changed conditions)              metadata.resourceVersion
//	PATCH pods/NAME/status (Ready=False, or DisruptionTarget)     metadata.uid (upstream does the same for
//	                                                              DisruptionTarget; the patch merges
//	                                                              conditions by type; Ready=False also
//	                                                              carries metadata.resourceVersion)
//	DELETE pods/NAME                                              preconditions.uid
//	POST  configmaps (the snapshot's first save)                  none needed: a create never overwrites
//
// Any other write is a violation.
type writeAudit struct {
	mu     sync.Mutex
	writes []auditedWrite
}

type auditedWrite struct {
	kind     writeKind
	method   string
	path     string
	code     int
	problem  string
	duration time.Duration
}

type writeKind string

const (
	nodeTaintPatch  writeKind = "node taint or label patch"
	nodeStatusPatch writeKind = "node status patch"
	podStatusPatch  writeKind = "pod condition patch"
	podDelete       writeKind = "pod delete"
	snapshotPut     writeKind = "snapshot update"
	snapshotCreate  writeKind = "snapshot create"
	unexpectedWrite writeKind = "unexpected write"
)

var auditRules = []struct {
	method string
	path   *regexp.Regexp
	kind   writeKind
}{
	{http.MethodPatch, regexp.MustCompile(`^/api/v1/nodes/[^/]+$`), nodeTaintPatch},
	{http.MethodPatch, regexp.MustCompile(`^/api/v1/nodes/[^/]+/status$`), nodeStatusPatch},
	{http.MethodPatch, regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods/[^/]+/status$`), podStatusPatch},
	{http.MethodDelete, regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods/[^/]+$`), podDelete},
	{http.MethodPut, regexp.MustCompile(`^/api/v1/namespaces/[^/]+/configmaps/[^/]+$`), snapshotPut},
	{http.MethodPost, regexp.MustCompile(`^/api/v1/namespaces/[^/]+/configmaps$`), snapshotCreate},
}

func (a *writeAudit) wrap(rt http.RoundTripper) http.RoundTripper {
	return auditTransport{next: rt, audit: a}
}

type auditTransport struct {
	next  http.RoundTripper
	audit *writeAudit
}

func (t auditTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(req)
	}
	w := auditedWrite{kind: unexpectedWrite, method: req.Method, path: req.URL.Path}
	for _, r := range auditRules {
		if r.method == req.Method && r.path.MatchString(req.URL.Path) {
			w.kind = r.kind
		}
	}
	body, err := requestBody(req)
	if err != nil {
		w.problem = "body unreadable: " + err.Error()
	} else {
		w.problem = checkWrite(w.kind, req.Header.Get("Content-Type"), body)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	w.duration = time.Since(start)
	if err == nil {
		w.code = resp.StatusCode
	}
	t.audit.mu.Lock()
	t.audit.writes = append(t.audit.writes, w)
	t.audit.mu.Unlock()
	return resp, err
}

// requestBody returns a copy of the body without consuming the request's.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("request has no GetBody")
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// checkWrite returns what is wrong with a write of kind with body, or "".
func checkWrite(kind writeKind, contentType string, body []byte) string {
	if kind == unexpectedWrite {
		return "not a write the controller should make"
	}
	if kind == snapshotCreate {
		return ""
	}
	if !strings.Contains(contentType, "json") {
		return "body is " + contentType + ", not JSON: cannot audit"
	}
	var b struct {
		Metadata struct {
			ResourceVersion string    `json:"resourceVersion"`
			UID             types.UID `json:"uid"`
		} `json:"metadata"`
		Preconditions *metav1.Preconditions `json:"preconditions"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(body), &b); err != nil {
		return "body is not JSON: " + err.Error()
	}
	switch kind {
	case podStatusPatch:
		if b.Metadata.UID == "" {
			return "no metadata.uid"
		}
	case podDelete:
		if b.Preconditions == nil || b.Preconditions.UID == nil || *b.Preconditions.UID == "" {
			return "no UID precondition"
		}
	default:
		if b.Metadata.ResourceVersion == "" {
			return "no metadata.resourceVersion"
		}
	}
	return ""
}

func (a *writeAudit) violations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, w := range a.writes {
		if w.problem != "" {
			out = append(out, fmt.Sprintf("%s %s (%s, HTTP %d): %s", w.method, w.path, w.kind, w.code, w.problem))
		}
	}
	return out
}

func (a *writeAudit) count(kind writeKind) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, w := range a.writes {
		if w.kind == kind {
			n++
		}
	}
	return n
}

// conflicts counts the writes of kind answered 409 Conflict.
func (a *writeAudit) conflicts(kind writeKind) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, w := range a.writes {
		if w.kind == kind && w.code == http.StatusConflict {
			n++
		}
	}
	return n
}

// summary is "kind: n (c conflicts), ..." over every kind seen.
func (a *writeAudit) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	type tally struct{ n, conflicts, failed int }
	byKind := map[writeKind]*tally{}
	for _, w := range a.writes {
		t := byKind[w.kind]
		if t == nil {
			t = &tally{}
			byKind[w.kind] = t
		}
		t.n++
		switch {
		case w.code == http.StatusConflict:
			t.conflicts++
		case w.code == 0 || w.code >= 300:
			t.failed++
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	var b strings.Builder
	for i, k := range kinds {
		t := byKind[writeKind(k)]
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d (%d conflicts, %d other failures)", k, t.n, t.conflicts, t.failed)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func findTaint(n *v1.Node, tk v1.Taint) *v1.Taint {
	if n == nil {
		return nil
	}
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&tk) {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

// sameTaintSet reports whether got and want hold the same taints by key,
// effect and value, each once.
func sameTaintSet(got, want []v1.Taint) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		n := 0
		for _, g := range got {
			if g.Key == w.Key && g.Effect == w.Effect && g.Value == w.Value {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	return true
}

func taintList(ts []v1.Taint) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		parts = append(parts, s+":"+string(t.Effect))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func podCondition(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func describePod(p *v1.Pod) string {
	if p == nil {
		return "<none>"
	}
	dts := "none"
	if p.DeletionTimestamp != nil {
		dts = stamp(p.DeletionTimestamp.Time)
	}
	return fmt.Sprintf("deletionTimestamp %s, conditions %s", dts, jsonString(p.Status.Conditions))
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }
