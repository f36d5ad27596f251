package e2e

// The kubelet's answer to a false Unknown, on the real apiserver: the node
// agent (examples/nodeagent/agent, the e2e tests' kubelet) runs a node
// with pods; the test writes what the node lifecycle controller writes
// when it wrongly thinks the node is gone (Ready=Unknown, the pods'
// Ready=False) and measures when the agent puts them back. The policy
// simulator's kubelet model (examples/policysim/sim, Kubelet.Reconcile)
// must predict the same: the node at the kubelet's next node status update
// after the write, the pods at its next pod status sync.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// The agent's periods in TestKubeletReconcileMatchesSim: node status
// updates (and Lease renewals, on the same ticker phase, which shows the
// updates' phase in the API) every rcStatus, pod status syncs every
// rcSync. rcSlack bounds the API latency and the scheduling delays on the
// shared machine.
const (
	rcStatus = 3 * time.Second
	rcSync   = 4 * time.Second
	rcSlack  = time.Second
	rcPoll   = 20 * time.Millisecond
)

// TestKubeletReconcileMatchesSim: a running node written Ready=Unknown and
// its three pods written Ready=False (nodehealth.PodNotReadyStatus, the
// controller's write) are put back by the agent: the node at its first
// status update after the write (its ticks are at its Lease renewals'
// phase), the pods at its first status sync after theirs (its ticks are
// at Counters.LastStatusSync's phase), each within rcSlack of that tick
// and within one interval of the write; not at once, as an agent that
// synced a pod on a status-only update did. The simulator, run with the
// same periods and a false Unknown at the same phase of the kubelet's
// ticks, predicts both times down within rcSlack (plus its 100ms time
// step).
func TestKubeletReconcileMatchesSim(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ns := c.Namespace(t)
	node := cluster.UniqueName(t, "rc")
	deleteNodesAtEnd(t, cs, node)
	cfg := agentConfig(ns, agent.NewFakeRuntime(clock.RealClock{}), agent.NodeConfig{Name: node})
	cfg.LeaseDuration = 40 * time.Second
	cfg.LeaseRenewInterval, cfg.StatusUpdateFrequency, cfg.StatusSyncPeriod = rcStatus, rcStatus, rcSync
	run := startAgent(t, agentClient(t, c), cfg, 0)
	var pods []*v1.Pod
	for i := range 3 {
		pods = append(pods, waitPodRunning(t, cs, createPod(t, cs, ns, fmt.Sprintf("rc-%d", i), node)))
	}

	// The phase of the agent's ticks: its renewals' and status syncs'
	// earliest offsets from a common period grid (a renewal is its tick
	// plus the time to send it, a sync its tick plus the time to start).
	ticks := tickPhase(t, rcStatus, 3, func() (time.Time, error) {
		l, err := cs.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return time.Time{}, err
		}
		return l.Spec.RenewTime.Time, nil
	})
	syncs := tickPhase(t, rcSync, 3, func() (time.Time, error) { return run.a.Counters().LastStatusSync, nil })
	ctx := context.Background()

	// The controller's writes: Ready=Unknown, then the pods' Ready=False.
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for i := range n.Status.Conditions {
		if cond := &n.Status.Conditions[i]; cond.Type == v1.NodeReady {
			cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", now
		}
	}
	// The API's answers prove the writes took effect.
	if got, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil || readyStatus(got) != v1.ConditionUnknown {
		t.Fatalf("write Ready=Unknown: %v, %v", describeReady(got), err)
	}
	nodeWritten := time.Now()
	for _, p := range pods {
		cur, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, ok := nodehealth.PodNotReadyStatus(time.Now(), cur)
		if !ok {
			t.Fatalf("pod %s: PodNotReadyStatus changes nothing; want it Ready before the write", p.Name)
		}
		cur.Status = *st
		got, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("write pod %s Ready=False: %v", p.Name, err)
		}
		if c := podCondition(got, v1.PodReady); c == nil || c.Status != v1.ConditionFalse {
			t.Fatalf("pod %s after the write: Ready %v, want False", p.Name, c)
		}
	}
	podsWritten := time.Now()

	// Watch the API (polling) until the agent has put both back.
	var nodeBack, podsBack time.Time
	deadline := time.Now().Add(naWait)
	for (nodeBack.IsZero() || podsBack.IsZero()) && time.Now().Before(deadline) {
		if nodeBack.IsZero() {
			got, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if readyStatus(got) == v1.ConditionTrue {
				nodeBack = time.Now()
			}
		}
		if podsBack.IsZero() {
			ready := 0
			for _, p := range pods {
				got, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if c := podCondition(got, v1.PodReady); c != nil && c.Status == v1.ConditionTrue {
					ready++
				}
			}
			if ready == len(pods) {
				podsBack = time.Now()
			}
		}
		time.Sleep(rcPoll)
	}
	if nodeBack.IsZero() || podsBack.IsZero() {
		t.Fatalf("not put back within %v: node at %s, pods at %s", naWait, stamp(nodeBack), stamp(podsBack))
	}
	nodeDown, podsDown := nodeBack.Sub(nodeWritten), podsBack.Sub(podsWritten)
	nodeTick, podTick := ticks.next(nodeWritten), syncs.next(podsWritten)
	t.Logf("node written Unknown at %s, Ready again at %s (%v; the agent's next status update at %s); pods written Ready=False at %s, Ready again at %s (%v; its next status sync at %s)",
		stamp(nodeWritten), stamp(nodeBack), nodeDown.Round(time.Millisecond), stamp(nodeTick),
		stamp(podsWritten), stamp(podsBack), podsDown.Round(time.Millisecond), stamp(podTick))
	for _, w := range []struct {
		what                string
		written, back, tick time.Time
		every               time.Duration
	}{
		{"node Ready", nodeWritten, nodeBack, nodeTick, rcStatus},
		{"pods Ready", podsWritten, podsBack, podTick, rcSync},
	} {
		if down := w.back.Sub(w.written); down > w.every+rcSlack {
			t.Errorf("%s again %v after the write, want within one interval (%v, + %v slack)", w.what, down, w.every, rcSlack)
		}
		if d := w.back.Sub(w.tick); d < -rcSlack || d > rcSlack {
			t.Errorf("%s again at %s, %v from the agent's first tick after the write (%s, every %v); want within %v", w.what, stamp(w.back), d, stamp(w.tick), w.every, rcSlack)
		}
	}

	// The simulator at the same phases: each write lands its phase after
	// the kubelet's last tick.
	simNode, _ := simReaction(t, rcStatus, rcStatus-nodeTick.Sub(nodeWritten))
	_, simPods := simReaction(t, rcSync, rcSync-podTick.Sub(podsWritten))
	t.Logf("the simulator with the same periods and phases: node down %v, pods down %v (first put back)", simNode, simPods)
	for _, w := range []struct {
		what      string
		got, want time.Duration
	}{{"node", nodeDown, simNode}, {"pods", podsDown, simPods}} {
		if d := w.got - w.want; d < -(rcSlack+sim.MinInterval) || d > rcSlack+sim.MinInterval {
			t.Errorf("%s down %v on the apiserver, %v in the simulator; want within %v", w.what, w.got, w.want, rcSlack+sim.MinInterval)
		}
	}
}

// describeReady names a node's Ready status for a message.
func describeReady(n *v1.Node) string {
	if n == nil {
		return "no node"
	}
	return "Ready=" + string(readyStatus(n))
}

// tickGrid is a periodic tick: base + k × every.
type tickGrid struct {
	base  time.Time
	every time.Duration
}

// next returns the first tick after t.
func (g tickGrid) next(t time.Time) time.Time {
	k := t.Sub(g.base) / g.every
	next := g.base.Add((k + 1) * g.every)
	for !next.After(t) {
		next = next.Add(g.every)
	}
	return next
}

// tickPhase reads the time of a periodic action (every every) with read
// until it has seen n+1 of them and returns their tick grid: the actions'
// earliest offset on the every grid through the first (an action is its
// tick plus some delay).
func tickPhase(t *testing.T, every time.Duration, n int, read func() (time.Time, error)) tickGrid {
	t.Helper()
	var seen []time.Time
	wait := time.Duration(n+3) * every
	deadline := time.Now().Add(wait)
	for len(seen) < n+1 && time.Now().Before(deadline) {
		at, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if !at.IsZero() && !slices.ContainsFunc(seen, at.Equal) {
			seen = append(seen, at)
		}
		time.Sleep(rcPoll)
	}
	if len(seen) < n+1 {
		t.Fatalf("saw %d ticks of every %v in %v, want %d", len(seen), every, wait, n+1)
	}
	ref := seen[0]
	least := time.Duration(0)
	for _, at := range seen[1:] {
		off := at.Sub(ref) % every
		if off > every/2 {
			off -= every
		}
		least = min(least, off)
	}
	return tickGrid{base: ref.Add(least), every: every}
}

// simReaction runs the simulator with the agent's periods, one node whose
// kubelet renews its Lease only when it starts, and a grace period that
// makes the controller (monitoring every 100ms) write it Unknown phase
// after a tick of the kubelet's loop of period every (its node status
// updates or its pod status syncs). It returns how long after the write
// the kubelet posted Ready again and first put its pods' Ready back.
func simReaction(t *testing.T, every, phase time.Duration) (node, pods time.Duration) {
	t.Helper()
	// A phase that rounds to a whole period is a write just before a
	// tick: the last step before it.
	phase = min(phase.Round(sim.MinInterval), every-sim.MinInterval)
	// The pass at 0 sees the start's renewal: the node is written Unknown
	// at the first pass after the grace period, grace + 100ms, which is
	// phase after the tick at 2 × every.
	grace := 2*every + phase - sim.MinInterval
	sc := sim.NewScenario("kubelet-reconcile", grace+rcStatus+2*rcSync+10*time.Second, sim.NewZone("a", 1, sim.NewPods("p", 3)))
	sc.Policy.NodeMonitorPeriod = sim.Duration(sim.MinInterval)
	sc.Policy.NodeMonitorGracePeriod = sim.Duration(grace)
	sc.Kubelet.LeaseRenewInterval = sim.Duration(time.Hour)
	sc.Kubelet.StatusUpdateInterval = sim.Duration(time.Hour)
	sc.Kubelet.NodeStatusUpdateFrequency = sim.Duration(rcStatus)
	sc.Kubelet.PodStatusSyncPeriod = sim.Duration(rcSync)
	res, err := sim.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	at := func(kind sim.Kind) time.Duration {
		for _, e := range res.Entries {
			if e.Kind == kind {
				return e.At
			}
		}
		t.Fatalf("simulator: no %s entry", kind)
		return 0
	}
	written := at(sim.KindNodeUnknown)
	if want := grace + sim.MinInterval; written != want {
		t.Fatalf("simulator wrote Unknown at %v, want %v", written, want)
	}
	return at(sim.KindKubeletReposted) - written, at(sim.KindKubeletPodsReady) - written
}
