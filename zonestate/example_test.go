package zonestate_test

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// epoch is the fixed instant the examples start from.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// node returns a node in the given region and zone (GA topology labels),
// with a Ready condition of the given status ("" for none).
func node(name, region, zone string, ready v1.ConditionStatus) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if region != "" {
		n.Labels[v1.LabelTopologyRegion] = region
	}
	if zone != "" {
		n.Labels[v1.LabelTopologyZone] = zone
	}
	if ready != "" {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}
	}
	return n
}

// readyOf returns the node's Ready condition, or nil when it has none.
func readyOf(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// show prints a zone key readably ("region/zone"; the NUL separator is not).
func show(key string) string {
	if key == "" {
		return `""`
	}
	return strings.Replace(key, ":\x00:", "/", 1)
}

func statuses(s ...v1.ConditionStatus) []*v1.NodeCondition {
	out := make([]*v1.NodeCondition, len(s))
	for i := range s {
		if s[i] != "" {
			out[i] = &v1.NodeCondition{Type: v1.NodeReady, Status: s[i]}
		}
	}
	return out
}

const (
	T = v1.ConditionTrue
	F = v1.ConditionFalse
	U = v1.ConditionUnknown
	X = v1.ConditionStatus("") // no Ready condition at all (nil)
)

func printDecision(d zonestate.Decision) {
	for _, z := range d.Zones {
		fmt.Printf("  %s: %d/%d not ready, %v -> %v, qps %v (changed %v)\n",
			show(z.Key), z.NotReady, z.Size, z.Previous, z.State, z.QPS, z.RateChanged)
	}
	if len(d.Removed) > 0 {
		fmt.Printf("  removed %d zone(s)\n", len(d.Removed))
	}
	fmt.Printf("  entered=%v exited=%v in=%v\n", d.EnteredFullDisruption, d.ExitedFullDisruption, d.InFullDisruption)
}

// Key follows upstream GetZoneKey: region and zone joined by ":\x00:", the
// deprecated beta labels winning over the GA ones, and "" for a node without
// topology labels.
func ExampleKey() {
	n := node("n1", "eu-west-1", "eu-west-1a", v1.ConditionTrue)
	fmt.Printf("%q\n", zonestate.Key(n))

	n.Labels[v1.LabelFailureDomainBetaZone] = "legacy"
	fmt.Printf("%q\n", zonestate.Key(n))

	fmt.Printf("%q\n", zonestate.Key(node("bare", "", "", v1.ConditionTrue)))
	// Output:
	// "eu-west-1:\x00:eu-west-1a"
	// "eu-west-1:\x00:legacy"
	// ""
}

// Compute classifies one zone. A zone is partially disrupted only with more
// than 2 not-ready nodes; nodes without a Ready condition count as not ready.
func ExampleCompute() {
	th := zonestate.DefaultPolicy().UnhealthyZoneThreshold // 0.55
	for _, zone := range [][]*v1.NodeCondition{
		statuses(T, T, T, U, U),       // 2 of 5: Normal
		statuses(T, T, F, U, X),       // 3 of 5 (0.6): PartialDisruption
		statuses(T, T, T, F, U, X),    // 3 of 6 (0.5): Normal
		statuses(X, U),                // no Ready node: FullDisruption
		statuses(T, T, T, T, T, T, T), // all Ready: Normal
		nil,                           // empty: Normal
	} {
		n, s := zonestate.Compute(zone, th)
		fmt.Printf("%d of %d not ready: %v\n", n, len(zone), s)
	}
	// Output:
	// 2 of 5 not ready: Normal
	// 3 of 5 not ready: PartialDisruption
	// 3 of 6 not ready: Normal
	// 2 of 2 not ready: FullDisruption
	// 0 of 7 not ready: Normal
	// 0 of 0 not ready: Normal
}

// A fresh cluster whose nodes have not posted a Ready condition yet is
// fully disrupted on its first pass, so nothing is tainted; once a node is
// Ready the tracker leaves full disruption mode.
func ExampleTracker_Update_bootstrap() {
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())

	fmt.Println("pass 1: no node has posted status")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{"": statuses(X, X, X, X)}))

	fmt.Println("pass 2: one of four is Ready")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{"": statuses(U, U, U, T)}))
	// Output:
	// pass 1: no node has posted status
	//   "": 4/4 not ready, Initial -> FullDisruption, qps 0 (changed true)
	//   entered=true exited=false in=true
	// pass 2: one of four is Ready
	//   "": 3/4 not ready, FullDisruption -> PartialDisruption, qps 0 (changed false)
	//   entered=false exited=true in=false
}

// When no zone has a Ready node the tracker enters full disruption mode (the
// control plane is the likely culprit) and every rate is 0; when a node is
// Ready again it exits, and a zone that is still dead is tainted at the
// normal rate.
func ExampleTracker_Update_fullDisruption() {
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	a, b := "eu:\x00:a", "eu:\x00:b"

	fmt.Println("both zones healthy")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{a: statuses(T, T), b: statuses(T, T)}))
	fmt.Println("both zones dark")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{a: statuses(U, U), b: statuses(U, U)}))
	fmt.Println("still dark")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{a: statuses(U, U), b: statuses(U, U)}))
	fmt.Println("zone b is back")
	printDecision(tr.Update(map[string][]*v1.NodeCondition{a: statuses(U, U), b: statuses(T, T)}))
	// Output:
	// both zones healthy
	//   eu/a: 0/2 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   eu/b: 0/2 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   entered=false exited=false in=false
	// both zones dark
	//   eu/a: 2/2 not ready, Normal -> FullDisruption, qps 0 (changed true)
	//   eu/b: 2/2 not ready, Normal -> FullDisruption, qps 0 (changed true)
	//   entered=true exited=false in=true
	// still dark
	//   eu/a: 2/2 not ready, FullDisruption -> FullDisruption, qps 0 (changed false)
	//   eu/b: 2/2 not ready, FullDisruption -> FullDisruption, qps 0 (changed false)
	//   entered=false exited=false in=true
	// zone b is back
	//   eu/a: 2/2 not ready, FullDisruption -> FullDisruption, qps 0.1 (changed true)
	//   eu/b: 0/2 not ready, FullDisruption -> Normal, qps 0.1 (changed true)
	//   entered=false exited=true in=false
}

// FullDisruptionQPS gives a fully disrupted zone its own rate while another
// zone is healthy (nil keeps upstream's normal rate; 0 pauses the zone).
func ExamplePolicy_fullDisruptionQPS() {
	slow := 0.02
	p := zonestate.DefaultPolicy()
	p.FullDisruptionQPS = &slow
	tr, _ := zonestate.NewTracker(p)

	printDecision(tr.Update(map[string][]*v1.NodeCondition{
		"eu:\x00:a": statuses(U, U, U),
		"eu:\x00:b": statuses(T, T, T),
	}))
	// Output:
	//   eu/a: 3/3 not ready, Initial -> FullDisruption, qps 0.02 (changed true)
	//   eu/b: 0/3 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   entered=false exited=false in=false
}

// By default (upstream) only full disruption mode, every zone dark at once,
// stops tainting: one dark zone next to a healthy one is tainted at the
// normal rate. HoldFullyDisruptedZones holds such a zone instead.
func ExamplePolicy_holdFullyDisruptedZones() {
	for _, hold := range []bool{false, true} {
		p := zonestate.DefaultPolicy()
		p.HoldFullyDisruptedZones = hold
		tr, _ := zonestate.NewTracker(p)
		fmt.Println("HoldFullyDisruptedZones:", hold)
		printDecision(tr.Update(map[string][]*v1.NodeCondition{
			"eu:\x00:a": statuses(U, U, U),
			"eu:\x00:b": statuses(T, T, T),
		}))
	}
	// Output:
	// HoldFullyDisruptedZones: false
	//   eu/a: 3/3 not ready, Initial -> FullDisruption, qps 0.1 (changed true)
	//   eu/b: 0/3 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   entered=false exited=false in=false
	// HoldFullyDisruptedZones: true
	//   eu/a: 3/3 not ready, Initial -> FullDisruption, qps 0 (changed true)
	//   eu/b: 0/3 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   entered=false exited=false in=false
}

// Example shows a caller's monitor pass: group the counted nodes' Ready
// conditions by zone key, call Update, then act on the Decision: the
// full-disruption edges first, then each zone's rate. queues stands for the
// caller's per-zone evictionqueue (their rates here).
func Example() {
	tr, err := zonestate.NewTracker(zonestate.DefaultPolicy())
	if err != nil {
		panic(err)
	}
	queues := map[string]float64{} // zone key -> tainting queue rate

	pass := func(name string, nodes []*v1.Node) {
		fmt.Println(name)
		zones := map[string][]*v1.NodeCondition{}
		for _, n := range nodes {
			// Skip nodes labelled node.kubernetes.io/exclude-disruption and
			// nodes whose health update failed this pass (upstream does).
			k := zonestate.Key(n)
			zones[k] = append(zones[k], readyOf(n))
		}
		d := tr.Update(zones)
		if d.EnteredFullDisruption {
			fmt.Println("  enter full disruption: remove NoExecute health taints, empty and stop every queue")
		}
		if d.ExitedFullDisruption {
			fmt.Println("  exit full disruption: fresh grace period for every node")
		}
		for _, z := range d.Zones {
			if z.RateChanged {
				queues[z.Key] = z.QPS // SetRate on the zone's queue, creating it if new
			}
			if z.RateChanged || z.State != z.Previous {
				fmt.Printf("  %s is %v: tainting rate %v\n", show(z.Key), z.State, queues[z.Key])
			}
		}
		for _, k := range d.Removed {
			queues[k] = d.UndecidedQPS // SetRate on the zone's queue, kept with what it holds
			fmt.Printf("  %s has no counted node: keep its queue, tainting rate %v\n", show(k), queues[k])
		}
	}

	a1, a2 := node("a1", "eu", "a", ""), node("a2", "eu", "a", "")
	b1, b2 := node("b1", "eu", "b", ""), node("b2", "eu", "b", "")
	all := []*v1.Node{a1, a2, b1, b2}
	setReady := func(n *v1.Node, s v1.ConditionStatus) {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: s}}
	}

	pass("pass 1: kubelets have not reported yet", all)

	for _, n := range all {
		setReady(n, v1.ConditionTrue)
	}
	pass("pass 2: every node Ready", all)

	setReady(b1, v1.ConditionUnknown)
	setReady(b2, v1.ConditionUnknown)
	pass("pass 3: zone b goes dark", all)

	pass("pass 4: zone b is deleted", []*v1.Node{a1, a2})
	// Output:
	// pass 1: kubelets have not reported yet
	//   enter full disruption: remove NoExecute health taints, empty and stop every queue
	//   eu/a is FullDisruption: tainting rate 0
	//   eu/b is FullDisruption: tainting rate 0
	// pass 2: every node Ready
	//   exit full disruption: fresh grace period for every node
	//   eu/a is Normal: tainting rate 0.1
	//   eu/b is Normal: tainting rate 0.1
	// pass 3: zone b goes dark
	//   eu/b is FullDisruption: tainting rate 0.1
	// pass 4: zone b is deleted
	//   eu/b has no counted node: keep its queue, tainting rate 0.1
}

// Queues keeps one evictionqueue per zone in step with the Tracker: Apply
// creates a new zone's queue at its rate, re-rates changed zones, and on
// entering full disruption empties and stops every queue. NextDeadline is
// when the tainting loop next has work, over every zone.
func ExampleQueues() {
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	qs, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	if err != nil {
		panic(err)
	}
	a, b := "eu:\x00:a", "eu:\x00:b"
	now := epoch
	pass := func(name string, zones map[string][]*v1.NodeCondition) {
		d := tr.Update(zones)
		if err := qs.Apply(now, d); err != nil {
			fmt.Println("apply:", err)
		}
		fmt.Printf("%s (full disruption: %v)\n", name, d.InFullDisruption)
		qs.Each(func(zone string, q *evictionqueue.Queue[string]) bool {
			fmt.Printf("  %s: rate %v, %d queued\n", show(zone), q.Rate(), q.Len())
			return true
		})
		if at, ok := qs.NextDeadline(); ok {
			fmt.Printf("  next tainting work at +%v\n", at.Sub(epoch))
		} else {
			fmt.Println("  no tainting work")
		}
	}

	pass("healthy", map[string][]*v1.NodeCondition{a: statuses(T, T), b: statuses(T, T)})

	// b1 stopped reporting: queue it for a NoExecute taint in its zone.
	qb, _ := qs.Get(b)
	qb.Add(now, "b1", "")
	qb.Add(now, "b2", "")
	qb.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }) // b1 tainted
	pass("b1 tainted, b2 waits for a token", map[string][]*v1.NodeCondition{a: statuses(T, T), b: statuses(U, U)})

	now = now.Add(5 * time.Second)
	pass("every zone dark", map[string][]*v1.NodeCondition{a: statuses(U, U), b: statuses(U, U)})

	now = now.Add(5 * time.Second)
	pass("zone a is back", map[string][]*v1.NodeCondition{a: statuses(T, T), b: statuses(U, U)})
	// Output:
	// healthy (full disruption: false)
	//   eu/a: rate 0.1, 0 queued
	//   eu/b: rate 0.1, 0 queued
	//   no tainting work
	// b1 tainted, b2 waits for a token (full disruption: false)
	//   eu/a: rate 0.1, 0 queued
	//   eu/b: rate 0.1, 1 queued
	//   next tainting work at +10s
	// every zone dark (full disruption: true)
	//   eu/a: rate 0, 0 queued
	//   eu/b: rate 0, 0 queued
	//   no tainting work
	// zone a is back (full disruption: false)
	//   eu/a: rate 0.1, 0 queued
	//   eu/b: rate 0.1, 0 queued
	//   no tainting work
}

// UpdateCounts feeds the Tracker from a health signal other than the Ready
// condition, here a custom node condition counted by the caller: the same
// states, rates and full disruption mode as Update.
func ExampleTracker_UpdateCounts() {
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	nodes := []*v1.Node{
		node("a1", "eu", "a", v1.ConditionTrue), node("a2", "eu", "a", v1.ConditionTrue),
		node("b1", "eu", "b", v1.ConditionTrue), node("b2", "eu", "b", v1.ConditionTrue),
		node("b3", "eu", "b", v1.ConditionTrue), node("b4", "eu", "b", v1.ConditionTrue),
	}
	// The caller's signal: a node-problem-detector condition on three nodes.
	for _, n := range nodes[3:] {
		n.Status.Conditions = append(n.Status.Conditions,
			v1.NodeCondition{Type: "KernelDeadlock", Status: v1.ConditionTrue})
	}
	healthy := func(n *v1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == "KernelDeadlock" && c.Status == v1.ConditionTrue {
				return false
			}
		}
		return true
	}

	counts := map[string]zonestate.ZoneHealth{}
	for _, n := range nodes {
		h := counts[zonestate.Key(n)]
		h.Size++
		if !healthy(n) {
			h.Unhealthy++
		}
		counts[zonestate.Key(n)] = h
	}
	printDecision(tr.UpdateCounts(counts))
	// Output:
	//   eu/a: 0/2 not ready, Initial -> Normal, qps 0.1 (changed true)
	//   eu/b: 3/4 not ready, Initial -> PartialDisruption, qps 0 (changed true)
	//   entered=false exited=false in=false
}

// A zone without a decision keeps its queue: here zone b's nodes are all
// labelled node.kubernetes.io/exclude-disruption from the second pass on, so
// b is Removed and then never decided. The node b1 the queue tainted stays
// known to it (Add refuses it: it is not queued again), b2 keeps its place,
// and the queue runs at the Decision's UndecidedQPS.
func ExampleQueues_removedZone() {
	tr, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	qs, _ := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	a, b := "eu:\x00:a", "eu:\x00:b"
	now := epoch
	taint := func(it evictionqueue.Item[string]) (bool, time.Duration) {
		fmt.Printf("  +%v taint %s\n", now.Sub(epoch), it.Key)
		return true, 0
	}
	_ = qs.Apply(now, tr.Update(map[string][]*v1.NodeCondition{a: statuses(T), b: statuses(T, U)}))
	qb, _ := qs.Get(b)
	qb.Add(now, "b1", "")
	qb.Add(now, "b2", "")
	qb.Try(now, taint) // b1 tainted, b2 waits for a token

	for range 3 { // passes 5s apart; b has no counted node
		now = now.Add(5 * time.Second)
		d := tr.Update(map[string][]*v1.NodeCondition{a: statuses(T)})
		_ = qs.Apply(now, d)
		fmt.Printf("+%v: removed %q, %d zones, b at rate %v, b1 queued again: %v\n",
			now.Sub(epoch), d.Removed, len(qs.Zones()), qb.Rate(), qb.Add(now, "b1", ""))
		qb.Try(now, taint)
	}
	// Output:
	//   +0s taint b1
	// +5s: removed ["eu:\x00:b"], 2 zones, b at rate 0.1, b1 queued again: false
	// +10s: removed [], 2 zones, b at rate 0.1, b1 queued again: false
	//   +10s taint b2
	// +15s: removed [], 2 zones, b at rate 0.1, b1 queued again: false
}
