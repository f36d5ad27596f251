package e2e

// Kubelets whose clocks are off. Two node agents run on clocks 5 minutes
// ahead of and 5 minutes behind the real one (their Lease renewTime and
// their conditions' heartbeat and transition times come from those clocks),
// beside four nodes on the real clock. Side by side, once under
// kube-controller-manager v1.37.2 and once under examples/nodecontroller,
// each on a fresh kube-apiserver with an audit log:
//
//  1. for 3 grace periods nothing is written about any node (a controller
//     that compared a renewTime with its own clock would mark the node
//     behind Unknown at once and the one ahead only 5 minutes late);
//  2. the agent ahead stops (after one last renewal, on its clock): its
//     node is Unknown within grace plus one monitor period of that
//     renewal, tainted, and its 0 s pod evicted;
//  3. the same for the agent behind.
//
// Both controllers time a heartbeat by when they observe a change, never by
// its value (upstream: tryUpdateNodeHealth in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go; ours:
// nodehealth.Tracker), so both must pass; the test fails on ours and
// reports what kube-controller-manager did.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
)

// skewedClock is the real clock moved by skew: Now, Since and the times
// its tickers deliver. Timers and After wait real durations (their values
// are not skewed; the agent never reads them).
type skewedClock struct {
	clock.RealClock
	skew time.Duration
}

func newSkewedClock(skew time.Duration) skewedClock { return skewedClock{skew: skew} }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.skew) }

func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// NewTicker returns a ticker of the real clock whose ticks carry skewed
// times (a goroutine forwards them until Stop).
func (c skewedClock) NewTicker(d time.Duration) clock.Ticker {
	tk := &skewedTicker{real: c.RealClock.NewTicker(d), c: make(chan time.Time, 1), done: make(chan struct{})}
	go func() {
		for {
			select {
			case v := <-tk.real.C():
				select {
				case tk.c <- v.Add(c.skew):
				default: // the reader is behind: drop the tick, as time.Ticker does
				}
			case <-tk.done:
				return
			}
		}
	}()
	return tk
}

type skewedTicker struct {
	real clock.Ticker
	c    chan time.Time
	done chan struct{}
	once sync.Once
}

func (t *skewedTicker) C() <-chan time.Time { return t.c }

func (t *skewedTicker) Stop() {
	t.real.Stop()
	t.once.Do(func() { close(t.done) })
}

const (
	clockSkew = 5 * time.Minute
	// skewSteady is how long every agent runs before the first stops.
	skewSteady = 3 * parityGrace
	// skewSlack is added to grace plus one monitor period for the
	// machine's noise (two apiservers, two etcds, two controllers and six
	// agents on two shared cores).
	skewSlack = time.Second
)

// skewNodeResult is what one controller did about one node.
type skewNodeResult struct {
	name string
	skew time.Duration
	// renewFrom and renewTo bound when its last renewal was written
	// (zero: its agent never stopped).
	renewFrom, renewTo time.Time
	// unknown are the times of the writes that set Ready to Unknown.
	unknown []time.Time
	// taints are the writes that added its unreachable NoExecute taint;
	// evictions the pod deletes of its pods.
	taints, evictions []time.Time
}

func (r *skewNodeResult) detect() time.Duration {
	if len(r.unknown) == 0 || r.renewTo.IsZero() {
		return -1
	}
	return r.unknown[0].Sub(r.renewTo)
}

func TestNodeClockSkew(t *testing.T) {
	bins := binariesWithKCM(t)
	ours := nodeControllerBinary(t)
	nodes := []worldNode{{"ahead", "zone-a"}, {"behind", "zone-a"}, {"m1", "zone-a"}, {"m2", "zone-a"}, {"m3", "zone-a"}, {"m4", "zone-a"}}
	pods := []worldPod{{"ahead-zero", "ahead", 0}, {"ahead-none", "ahead", tolNone}, {"behind-zero", "behind", 0}, {"m1-zero", "m1", 0}}
	skews := map[string]time.Duration{"ahead": clockSkew, "behind": -clockSkew}
	results := sideResults(t, bins, ours, parityFlags(""), func(t *testing.T, side string, start controllerStarter) map[string]*skewNodeResult {
		return runSkewSide(t, start, bins, nodes, pods, skews)
	})
	if t.Failed() {
		return
	}
	for _, side := range []string{sideUpstream, sideOurs} {
		var b strings.Builder
		for _, wn := range nodes {
			r := results[side][wn.name]
			fmt.Fprintf(&b, "  %-6s skew %+v: Unknown writes %d, unreachable NoExecute taints %d, evictions %d", r.name, r.skew, len(r.unknown), len(r.taints), len(r.evictions))
			if !r.renewTo.IsZero() {
				fmt.Fprintf(&b, "; stopped, Unknown %v after its last renewal", r.detect().Round(time.Millisecond))
			}
			b.WriteByte('\n')
		}
		t.Logf("%s:\n%s", side, b.String())
		for _, wn := range nodes {
			r := results[side][wn.name]
			for _, msg := range checkSkewNode(r) {
				if side == sideOurs {
					t.Errorf("%s: %s", side, msg)
				} else {
					t.Logf("%s (reported, not a failure): %s", side, msg)
				}
			}
		}
	}
}

// checkSkewNode lists what is wrong with what one controller did about a
// node: a node that kept running must have no write; a stopped one exactly
// one Unknown write within [grace, grace + monitor period + slack] of its
// last renewal, one taint and one eviction (its 0 s pod; the 300 s one
// stays).
func checkSkewNode(r *skewNodeResult) []string {
	var out []string
	if r.renewTo.IsZero() {
		if len(r.unknown)+len(r.taints)+len(r.evictions) > 0 {
			out = append(out, fmt.Sprintf("node %s never stopped: %d Unknown writes, %d taints, %d evictions, want none", r.name, len(r.unknown), len(r.taints), len(r.evictions)))
		}
		return out
	}
	for _, u := range r.unknown {
		if u.Before(r.renewFrom) {
			out = append(out, fmt.Sprintf("node %s: false Unknown at %s, before it stopped (%s)", r.name, stamp(u), stamp(r.renewFrom)))
		}
	}
	if len(r.unknown) != 1 {
		out = append(out, fmt.Sprintf("node %s: %d Unknown writes, want 1", r.name, len(r.unknown)))
	}
	if len(r.unknown) > 0 {
		early, late := r.unknown[0].Sub(r.renewFrom), r.detect()
		if early < parityGrace || late > parityGrace+parityMonitorPeriod+skewSlack {
			out = append(out, fmt.Sprintf("node %s: Unknown %v–%v after its last renewal, want within [%v, %v]", r.name,
				early.Round(time.Millisecond), late.Round(time.Millisecond), parityGrace, parityGrace+parityMonitorPeriod+skewSlack))
		}
	}
	if len(r.taints) != 1 || len(r.evictions) != 1 {
		out = append(out, fmt.Sprintf("node %s: %d unreachable NoExecute taints and %d evictions, want 1 and 1", r.name, len(r.taints), len(r.evictions)))
	}
	return out
}

func runSkewSide(t *testing.T, start controllerStarter, bins cluster.Binaries, nodes []worldNode, pods []worldPod, skews map[string]time.Duration) map[string]*skewNodeResult {
	c, auditLog := startRecordedCluster(t, bins, recordPolicy, nodes)
	cs := c.Clientset(t)
	const ns = "clock-skew"
	w := startSkewedWorld(t, c, ns, nodes, pods, nil, skews, parityRenewPeriod)
	p, err := start(c)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)
	waitNoAdmissionTaints(t, cs, nodes, p)
	steady := time.Now()
	res := map[string]*skewNodeResult{}
	for _, wn := range nodes {
		res[wn.name] = &skewNodeResult{name: wn.name, skew: skews[wn.name]}
	}
	time.Sleep(skewSteady)
	for _, name := range []string{"ahead", "behind"} {
		r := res[name]
		w.skewed[name].stop(t)
		r.renewFrom, r.renewTo = lastSkewedRenewal(t, cs, name, skews[name])
		t.Logf("agent of %s (clock %+v) stopped; last renewal at %s (real clock)", name, skews[name], stamp(r.renewFrom))
		pod := name + "-zero"
		cluster.Eventually(t, parityGrace+60*time.Second, "node "+name+" Unknown and pod "+pod+" evicted", func(ctx context.Context) (bool, error) {
			if p.Exited() {
				return false, fmt.Errorf("controller exited: %v", p.Err())
			}
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || readyStatus(n) != v1.ConditionUnknown {
				return false, err
			}
			pd, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			return err == nil && pd.DeletionTimestamp != nil, err
		})
	}
	// Two more monitor periods: a late second write would show.
	time.Sleep(2 * parityMonitorPeriod)
	if p.Exited() {
		t.Fatalf("controller exited: %v", p.Err())
	}
	p.Stop(10 * time.Second)
	tr := controllerTrace(t, auditLog, steady, steady)
	hw := healthWritesOf(&tr)
	for name, r := range res {
		r.unknown, r.taints = hw.unknown[name], hw.tainted[name]
	}
	for _, wp := range pods {
		if r := res[wp.node]; r != nil {
			r.evictions = append(r.evictions, hw.deleted[wp.name]...)
		}
	}
	t.Logf("the controller wrote:\n%s", tr.Summary())
	return res
}

// lastSkewedRenewal renews node's Lease once more, as its stopped agent
// would have, with a renewTime from the agent's skewed clock, and returns
// when the write was sent and when it was acknowledged (real clock): the
// node's last sign of life.
func lastSkewedRenewal(t *testing.T, cs kubernetes.Interface, node string, skew time.Duration) (from, to time.Time) {
	t.Helper()
	leases := cs.CoordinationV1().Leases(agent.LeaseNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		from = time.Now()
		l.Spec.RenewTime = &metav1.MicroTime{Time: from.Add(skew)}
		_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
		to = time.Now()
		return err
	})
	if err != nil {
		t.Fatalf("last renewal of %s: %v", node, err)
	}
	return from, to
}

// healthWrites are a controller's node health writes, by object name, at
// the times the apiserver received them.
type healthWrites struct {
	// unknown: status writes that set Ready to Unknown; tainted and
	// untainted: node writes that added or removed
	// unreachable:NoExecute; deleted: pod deletes.
	unknown, tainted, untainted, deleted map[string][]time.Time
}

func healthWritesOf(tr *parity.Trace) healthWrites {
	hw := healthWrites{unknown: map[string][]time.Time{}, tainted: map[string][]time.Time{},
		untainted: map[string][]time.Time{}, deleted: map[string][]time.Time{}}
	for i := range tr.Writes {
		wr := &tr.Writes[i]
		at := tr.Origin.Add(wr.At)
		kind, name, _ := writeTarget(wr)
		switch {
		case kind == "nodes" && wr.Changes["status.conditions[Ready].status"] == `"Unknown"`:
			hw.unknown[name] = append(hw.unknown[name], at)
		case kind == "nodes" && addsTaint(wr, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute):
			hw.tainted[name] = append(hw.tainted[name], at)
		case kind == "nodes" && wr.Changes["spec.taints["+v1.TaintNodeUnreachable+":NoExecute].effect"] == parity.RemovedValue:
			hw.untainted[name] = append(hw.untainted[name], at)
		case kind == "pods" && wr.Verb == "delete":
			hw.deleted[name] = append(hw.deleted[name], at)
		}
	}
	return hw
}

// writeTarget splits a write's object ("nodes//n1/status", "pods/ns/p")
// into its resource, name and subresource.
func writeTarget(w *parity.Write) (resource, name, sub string) {
	parts := strings.Split(w.Object, "/")
	if len(parts) < 3 {
		return w.Object, "", ""
	}
	if len(parts) > 3 {
		sub = parts[3]
	}
	return parts[0], parts[2], sub
}

// addsTaint reports whether the write added the taint key:effect.
func addsTaint(w *parity.Write, key string, effect v1.TaintEffect) bool {
	v, ok := w.Changes["spec.taints["+key+":"+string(effect)+"].effect"]
	return ok && v != parity.RemovedValue
}

// writeTimes lists times (in the order given) as offsets from origin.
func writeTimes(origin time.Time, ts []time.Time) string {
	out := make([]string, len(ts))
	for i, at := range ts {
		out[i] = fmt.Sprintf("%+.3fs", at.Sub(origin).Seconds())
	}
	return "[" + strings.Join(out, " ") + "]"
}
