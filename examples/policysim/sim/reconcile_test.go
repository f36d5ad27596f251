package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// reacting: kubelets renew their Leases every minute, longer than the 50s
// grace period, so the controller writes running nodes Unknown. a-0 runs
// from t=0: the pass at 0s saw its renewal, so it is Unknown at 55s. a-1
// restarts at 3s (renewal seen at 5s: Unknown at 1m), so its status loops
// tick from 3s; a-2 restarts at 50s and is fresh until after the run's
// end (the zone is never fully disrupted). Node status updates every 7s,
// pod status syncs every 13s, each counted from the kubelet's start.
const reacting = `name: reacting
duration: 100s
kubelet: {leaseRenewInterval: 1m, nodeStatusUpdateFrequency: 7s, podStatusSyncPeriod: 13s}
zones: [{name: a, nodes: 3, podsPerNode: 2}]
events:
  - {at: 1s, action: stop, nodes: [a-1, a-2]}
  - {at: 3s, action: resume, node: a-1}
  - {at: 50s, action: resume, node: a-2}
`

// TestKubeletReconciles: a running kubelet puts back the controller's
// writes over its status at its next tick: the node's Ready at the next
// node status update, its pods' Ready at the next pod status sync, each
// counted from the kubelet's (re)start. Pods put back before the
// controller's pass has seen the node Ready stay Ready: upstream's
// podUpdated queues a pod only when its node is set or changes, never for
// a status update. With reconcile off (the simulator before) they stay
// until the kubelet's next status report, its pods to the end.
func TestKubeletReconciles(t *testing.T) {
	sc := load(t, reacting)
	res := mustRun(t, sc, Options{})
	verify(t, []check{
		{"a-0 Unknown", instants(find(res, KindNodeUnknown, "a-0", "")), []time.Duration{55 * sec}},
		{"a-1 Unknown", instants(find(res, KindNodeUnknown, "a-1", "")), []time.Duration{60 * sec}},
		{"a-2 never Unknown", len(find(res, KindNodeUnknown, "a-2", "")), 0},
		{"a-0 reposts", instants(find(res, KindKubeletReposted, "a-0", "")), []time.Duration{56 * sec}}, // 8 × 7s
		{"a-1 reposts", instants(find(res, KindKubeletReposted, "a-1", "")), []time.Duration{66 * sec}}, // 3s + 9 × 7s
		{"Ready at the next pass", instants(find(res, KindNodeReady, "", "")), []time.Duration{60 * sec, 70 * sec}},
		{"a-0 pods", instants(find(res, KindKubeletPodsReady, "a-0", "")), []time.Duration{65 * sec}}, // 5 × 13s
		// 3s + 5 × 13s, before the pass at 1m10s sees a-1 Ready: not
		// marked again (a status update queues no pod upstream).
		{"a-1 pods", instants(find(res, KindKubeletPodsReady, "a-1", "")), []time.Duration{68 * sec}},
		{"pods ready again", res.Summary.PodsReadyAgain, 2 + 2},
		{"pods marked", res.Summary.Zones[0].PodsMarkedNotReady, 2 + 2},
		{"node time down", res.Summary.NodeSecondsDown, 1 + 6},
		{"longest node down", res.Summary.LongestNodeDown, 6 * sec},
		{"pod time down", res.Summary.PodSecondsNotReady, 2*10 + 2*8}, // a-0's 55s–65s, a-1's 1m–1m8s
		{"longest pod down", res.Summary.LongestPodNotReady, 10 * sec},
		{"nodes down at the end", res.Summary.NodesDownAtEnd, 0},
		{"pods down at the end", res.Summary.PodsNotReadyAtEnd, 0},
	})
	for _, n := range []string{"a-0", "a-1", "a-2"} {
		for _, p := range res.sim.c.ListPodsOnNode(n) {
			if !podReadyIn(p) {
				t.Errorf("pod %s not Ready at the end", p.Name)
			}
		}
	}

	off, err := sc.With("reconcile", "false")
	if err != nil {
		t.Fatal(err)
	}
	old := mustRun(t, off, Options{})
	verify(t, []check{
		{"off: reposts", len(find(old, KindKubeletReposted, "", "")), 0},
		{"off: Ready again", len(find(old, KindNodeReady, "", "")), 0},
		{"off: pods ready again", old.Summary.PodsReadyAgain, 0},
		{"off: nodes down at the end", old.Summary.NodesDownAtEnd, 2},
		{"off: pods down at the end", old.Summary.PodsNotReadyAtEnd, 4},
		{"off: longest node down", old.Summary.LongestNodeDown, 45 * sec},
	})
}

// quickResume: a-0's kubelet stops at 0s and resumes at 1m1s with its pods
// Ready 1s later, before the controller's pass at 1m5s has seen the node
// Ready.
const quickResume = `name: quick-resume
duration: 3m
kubelet: {podReadyDelay: 1s}
zones: [{name: a, nodes: 3, podsPerNode: 2}]
events:
  - {at: 0s, action: stop, node: a-0}
  - {at: 61s, action: resume, node: a-0}
`

// TestPodsReadyAfterResumeStayReady: pods a resumed kubelet makes Ready
// before the controller has seen their node Ready are NOT marked not ready
// again: upstream's podUpdated queues a pod for processPod only when its
// node is set or changes, and a status update changes neither, so the
// pass that then sees the node Ready leaves them. There is nothing for the
// kubelet's pod status sync to put back, with reconcile on or off.
func TestPodsReadyAfterResumeStayReady(t *testing.T) {
	sc := load(t, quickResume)
	for _, reconcile := range []string{"true", "false"} {
		run, err := sc.With("reconcile", reconcile)
		if err != nil {
			t.Fatal(err)
		}
		res := mustRun(t, run, Options{})
		checks := []check{
			{"Unknown", first(res, KindNodeUnknown, "a-0", ""), 55 * sec},
			{"Ready", first(res, KindNodeReady, "a-0", ""), 65 * sec},
			{"marked", res.Summary.PodsMarkedNotReady, 2},  // once, at 55s
			{"ready again", res.Summary.PodsReadyAgain, 2}, // by the resumed kubelet at 1m2s
			{"longest pod down", res.Summary.LongestPodNotReady, 7 * sec},
			{"pods down at the end", res.Summary.PodsNotReadyAtEnd, 0},
		}
		if reconcile == "true" { // without reconcile no pod status sync runs at all
			checks = append(checks, check{"pods put back by a sync", len(find(res, KindKubeletPodsReady, "a-0", "")), 0})
		}
		verify(t, checks)
	}
}

func podReadyIn(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// TestNextSync: the first tick after t of a loop started at start.
func TestNextSync(t *testing.T) {
	for _, tc := range []struct{ start, every, t, want time.Duration }{
		{0, 10 * sec, 0, 10 * sec},
		{0, 10 * sec, 65 * sec, 70 * sec},
		{0, 10 * sec, 70 * sec, 80 * sec}, // a write at a tick is found at the next one
		{3 * sec, 7 * sec, 55 * sec, 59 * sec},
		{3 * sec, 7 * sec, 1 * sec, 3 * sec},
	} {
		if got := nextSync(tc.start, tc.every, tc.t); got != tc.want {
			t.Errorf("nextSync(%v, %v, %v) = %v, want %v", tc.start, tc.every, tc.t, got, tc.want)
		}
	}
}

// TestDowntime: a node whose kubelet stops at 0s and resumes at 2m is
// Unknown from 55s to 2m (the kubelet's post); its 2 pods are marked at
// 55s and Ready again 10s after the resume (podReadyDelay); the pods of a
// node stopped for good are down until they are evicted (300s after the
// taint) or the end.
func TestDowntime(t *testing.T) {
	res := mustRun(t, load(t, `name: downtime
duration: 10m
zones:
  - {name: a, nodes: 4, podsPerNode: 2}
  - {name: b, nodes: 3, pods: [{name: web, perNode: 1}, {name: ds, perNode: 1, daemonSet: true}]}
events:
  - {at: 0s, action: stop, nodes: [a-0, b-0]}
  - {at: 2m, action: resume, node: a-0}
`), Options{})
	a, b := res.Summary.Zones[0], res.Summary.Zones[1]
	verify(t, []check{
		{"a node time", a.NodeSecondsDown, 65},
		{"a longest node", a.LongestNodeDown, 65 * sec},
		{"a pod time", a.PodSecondsNotReady, 2 * 75},
		{"a longest pod", a.LongestPodNotReady, 75 * sec},
		{"a marked", a.PodsMarkedNotReady, 2},
		{"a at the end", []int{a.NodesDownAtEnd, a.PodsNotReadyAtEnd}, []int{0, 0}},
		// b-0: Unknown 55s to the end (9m5s); web evicted at 5m55s (5m
		// down), the DaemonSet pod to the end.
		{"b node time", b.NodeSecondsDown, 545},
		{"b pod time", b.PodSecondsNotReady, 300 + 545},
		{"b longest pod", b.LongestPodNotReady, 545 * sec},
		{"b at the end", []int{b.NodesDownAtEnd, b.PodsNotReadyAtEnd}, []int{1, 1}},
		{"all", []any{res.Summary.NodeSecondsDown, res.Summary.LongestNodeDown, res.Summary.PodSecondsNotReady, res.Summary.LongestPodNotReady, res.Summary.NodesDownAtEnd, res.Summary.PodsNotReadyAtEnd},
			[]any{65 + 545, 545 * sec, 150 + 845, 545 * sec, 1, 1}},
	})
}
