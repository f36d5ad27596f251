package e2e

// etcd killed (SIGKILL) and restarted on the same data directory while the
// node controller counts down. Side by side (as the parity tests), once
// under examples/nodecontroller and once under kube-controller-manager
// v1.37.2, each against a fresh kube-apiserver with an audit log; node
// agents play the kubelets; node n's agent is stopped at the origin. etcd is killed twice:
// halfway through n's grace period (before Unknown), and halfway through
// the toleration of n's pod n-tol (after the taint). Each time it stays
// down etcdDown, then comes back on the same ports and data; the
// apiserver keeps running and reconnects. Judged from the audit log and
// the API:
//   - n is written Unknown once, grace after its last renewal (within one
//     monitor period plus slack): the first outage did not restart the
//     grace countdown nor shorten it;
//   - n is tainted unreachable:NoExecute once and never untainted;
//   - n-zero (0 s) is evicted once, at the taint; n-tol (etcdTol) once,
//     within one monitor period (plus slack) of taint + etcdTol, where it
//     would have been without the outages; n-forever stays;
//   - the live nodes, whose renewals failed during the outages, are never
//     written Unknown nor tainted, and their pods stay.
//
// The test fails on what ours does wrong and reports what
// kube-controller-manager did.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
)

const (
	// etcdGrace is longer than parity's grace: the live nodes' renewals
	// fail while etcd is down and until the apiserver has reconnected
	// (etcdDown plus about 1-3 s), and they must not go Unknown.
	etcdGrace = 8 * time.Second
	// etcdTol is n-tol's unreachable toleration.
	etcdTol = 8 * time.Second
	// etcdDown is how long etcd stays down each time.
	etcdDown = 2 * time.Second
	// etcdSlack is added to one monitor period for the machine's noise.
	etcdSlack = time.Second
)

// etcdOutage is one kill and restart of etcd.
type etcdOutage struct {
	killed, started, serving time.Time
}

func TestNodeControllerEtcdRestartMidCountdown(t *testing.T) {
	bins := binariesWithKCM(t)
	ours := nodeControllerBinary(t)
	flags := []string{
		"node-monitor-period=" + parityMonitorPeriod.String(),
		"node-monitor-grace-period=" + etcdGrace.String(),
		"node-startup-grace-period=" + (etcdGrace + 2*time.Second).String(),
		fmt.Sprintf("node-eviction-rate=%g", parityEvictionRate),
		"v=2",
	}
	problems := sideResults(t, bins, ours, flags, func(t *testing.T, side string, start controllerStarter) []string {
		return runEtcdRestartSide(t, bins, start)
	})
	if t.Failed() {
		return
	}
	for _, msg := range problems[sideUpstream] {
		t.Logf("%s (reported, not a failure): %s", sideUpstream, msg)
	}
	for _, msg := range problems[sideOurs] {
		t.Errorf("%s: %s", sideOurs, msg)
	}
	if len(problems[sideUpstream]) == 0 {
		t.Logf("%s: no problem either", sideUpstream)
	}
}

// runEtcdRestartSide runs the scenario under the controller start starts
// and returns what went wrong.
func runEtcdRestartSide(t *testing.T, bins cluster.Binaries, start controllerStarter) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	nodes := []worldNode{{"n", "zone-a"}, {"m1", "zone-a"}, {"m2", "zone-a"}, {"m3", "zone-a"}}
	c, auditLog := startRecordedCluster(t, bins, recordPolicy, nodes)
	cs := c.Clientset(t)
	const ns = "etcd-restart"
	pods := []worldPod{{"n-zero", "n", 0}, {"n-tol", "n", int64(etcdTol / time.Second)}, {"n-forever", "n", tolForever}, {"m1-zero", "m1", 0}}
	w := startWorld(t, c, ns, nodes, pods, []string{"n"}, parityRenewPeriod)
	p, err := start(c)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)
	waitNoAdmissionTaints(t, cs, nodes, p)

	origin, err := w.silence(t)
	if err != nil {
		t.Fatal(err)
	}
	silenced := time.Now()
	t.Logf("origin (n's last renewal): %s", stamp(origin))

	time.Sleep(time.Until(origin.Add(etcdGrace / 2)))
	out1 := restartEtcd(t, c, cs)

	var timeAdded time.Time
	cluster.Eventually(t, etcdGrace+60*time.Second, "n tainted unreachable:NoExecute", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		tk := findTaint(n, unreachableNoExecute)
		if tk == nil || tk.TimeAdded == nil {
			return false, nil
		}
		timeAdded = tk.TimeAdded.Time
		return true, nil
	})
	t.Logf("n tainted, timeAdded %s", stamp(timeAdded))

	time.Sleep(time.Until(timeAdded.Add(etcdTol / 2)))
	out2 := restartEtcd(t, c, cs)

	cluster.Eventually(t, etcdTol+60*time.Second, "n-tol evicted", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, "n-tol", metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil, err
	})
	// Record three more monitor periods: a second eviction or a late
	// write would show.
	time.Sleep(3 * parityMonitorPeriod)
	if p.Exited() {
		t.Fatalf("controller exited: %v", p.Err())
	}
	p.Stop(10 * time.Second)

	// The API's final state.
	ctx := context.Background()
	for _, wn := range nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, wn.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := v1.ConditionTrue
		if wn.name == "n" {
			want = v1.ConditionUnknown
		}
		if got := readyStatus(n); got != want {
			problem("node %s: Ready = %s, want %s", wn.name, got, want)
		}
	}
	for _, wp := range pods {
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, wp.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evicted := wp.name == "n-zero" || wp.name == "n-tol"
		if (pod.DeletionTimestamp != nil) != evicted {
			problem("pod %s: deletionTimestamp %v, want evicted = %v", wp.name, pod.DeletionTimestamp, evicted)
		}
	}

	// The audit log: every write of the controller, from the origin.
	tr := controllerTrace(t, auditLog, origin, silenced)
	t.Logf("the controller wrote:\n%s", tr.Summary())
	hw := healthWritesOf(&tr)
	unknown, tainted, untainted, deleted := hw.unknown, hw.tainted, hw.untainted, hw.deleted
	failed := map[string]int{}
	for _, wr := range tr.Failed {
		failed[fmt.Sprintf("%s %s HTTP %d", wr.Verb, wr.Object, wr.Code)]++
	}
	t.Logf("outages (from the origin): %s; %s", out1.describe(origin), out2.describe(origin))
	t.Logf("Unknown writes %v, NoExecute taints %v, taint removals %v, pod deletes %v, failed writes %v",
		timesOf(origin, unknown), timesOf(origin, tainted), timesOf(origin, untainted), timesOf(origin, deleted), failed)

	if got := unknown["n"]; len(got) != 1 {
		problem("n: %d Unknown writes %s, want 1", len(got), writeTimes(origin, got))
	} else if d := got[0].Sub(origin); d < etcdGrace || d > etcdGrace+parityMonitorPeriod+etcdSlack {
		problem("n: Unknown written %v after its last renewal, want within [%v, %v] (grace plus one monitor period, whatever the outage)",
			d.Round(time.Millisecond), etcdGrace, etcdGrace+parityMonitorPeriod+etcdSlack)
	}
	if got := tainted["n"]; len(got) != 1 {
		problem("n: unreachable:NoExecute added %d times %s, want once", len(got), writeTimes(origin, got))
	}
	if got := untainted["n"]; len(got) != 0 {
		problem("n: unreachable:NoExecute removed %s, want never", writeTimes(origin, got))
	}
	for _, wn := range nodes[1:] {
		if len(unknown[wn.name])+len(tainted[wn.name]) > 0 {
			problem("live node %s: Unknown writes %s, NoExecute taints %s, want none (its renewals failed only during the outages)",
				wn.name, writeTimes(origin, unknown[wn.name]), writeTimes(origin, tainted[wn.name]))
		}
	}
	for _, wp := range pods {
		got := deleted[wp.name]
		switch wp.name {
		case "n-zero", "n-tol":
			if len(got) != 1 {
				problem("pod %s: deleted %d times %s, want once", wp.name, len(got), writeTimes(origin, got))
				continue
			}
		default:
			if len(got) != 0 {
				problem("pod %s: deleted %s, want never", wp.name, writeTimes(origin, got))
			}
			continue
		}
		if len(tainted["n"]) == 0 {
			continue
		}
		// Where it would have been without the outages: the taint plus
		// the toleration (the taint itself is checked against the grace
		// above).
		want := tainted["n"][0]
		if wp.name == "n-tol" {
			want = want.Add(etcdTol)
		}
		if d := got[0].Sub(want); d < -etcdSlack || d > parityMonitorPeriod+etcdSlack {
			problem("pod %s: deleted %v after taint + toleration (%s), want within one monitor period (%v, plus %v slack)",
				wp.name, d.Round(time.Millisecond), stamp(want), parityMonitorPeriod, etcdSlack)
		} else {
			t.Logf("pod %s: deleted %v after taint + toleration", wp.name, d.Round(time.Millisecond))
		}
	}
	return problems
}

// restartEtcd kills etcd, waits etcdDown, starts it again on the same data
// and waits until the apiserver serves a quorum read of a node again.
func restartEtcd(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface) etcdOutage {
	t.Helper()
	var o etcdOutage
	o.killed = time.Now()
	if err := c.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(etcdDown)
	if err := c.StartEtcd(context.Background()); err != nil {
		t.Fatalf("StartEtcd() = %v", err)
	}
	if err := c.StartEtcd(context.Background()); !errors.Is(err, cluster.ErrEtcdRunning) {
		t.Errorf("second StartEtcd() = %v, want ErrEtcdRunning", err)
	}
	o.started = time.Now()
	cluster.Eventually(t, 60*time.Second, "the apiserver serves again after the etcd restart", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		return err == nil, err
	})
	o.serving = time.Now()
	t.Logf("etcd killed at %s, healthy again %v later, apiserver serving %v after the kill",
		stamp(o.killed), o.started.Sub(o.killed).Round(time.Millisecond), o.serving.Sub(o.killed).Round(time.Millisecond))
	return o
}

func (o etcdOutage) describe(origin time.Time) string {
	return fmt.Sprintf("killed %+.3fs, etcd healthy %+.3fs, apiserver serving %+.3fs",
		o.killed.Sub(origin).Seconds(), o.started.Sub(origin).Seconds(), o.serving.Sub(origin).Seconds())
}

// timesOf formats a map of time lists as offsets from origin.
func timesOf(origin time.Time, m map[string][]time.Time) map[string]string {
	out := make(map[string]string, len(m))
	for k, ts := range m {
		out[k] = writeTimes(origin, ts)
	}
	return out
}
