package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

// If zone b loses 40% of its 60 nodes, when is the last pod evicted? With
// the v1.37.2 defaults: 24 of 60 not ready is under the 55% threshold, so
// zone b stays Normal and its queue taints 0.1 nodes/s; the nodes go Unknown
// at the first monitor pass 50s after their last renewal, the last of the
// 24 is tainted 230s after the first, and its pods go when their 300s
// toleration runs out.
func Example() {
	sc := sim.NewScenario("zone-b-40", 15*time.Minute,
		sim.NewZone("a", 60, sim.NewPods("web", 10)),
		sim.NewZone("b", 60, sim.NewPods("web", 10), sim.NewDaemonSetPods("logs", 1)),
		sim.NewZone("c", 60, sim.NewPods("web", 10)),
	).On(sim.Stop(time.Minute, "b", 24))

	res, err := sim.Run(context.Background(), sc)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := res.Summary.Zones[1]
	fmt.Printf("zone b: %s, %d nodes tainted from %s to %s\n", b.FinalState, b.NodesTainted, sim.Offset(*b.FirstTaint), sim.Offset(*b.LastTaint))
	fmt.Printf("last pod evicted at %s (%d pods)\n", sim.Offset(*b.LastEviction), b.PodsEvicted)
	fmt.Println("pods evicted by +8m:", res.EvictedBy("b", 8*time.Minute))
	fmt.Println("work pending at the end:", !res.Pending.Done)
	// Output:
	// zone b: Normal, 24 nodes tainted from +1m55.0s to +5m45.0s
	// last pod evicted at +10m45.0s (240 pods)
	// pods evicted by +8m: 70
	// work pending at the end: false
}

// The controller's Lease watch stalls for a minute while every kubelet
// keeps renewing. Without the Lease circuit breaker (v1.36's behaviour)
// every node looks stale by the frozen cache and is written Unknown at
// 1m5s, its pods marked not ready; each kubelet finds that at its next node
// status update (1m10s) and posts Ready=True; its status manager puts its
// pods' Ready back at its sync of 1m10s, for good: the controller, though
// not yet having seen the node Ready, does not mark them again (upstream's
// podUpdated ignores a pod status update). With the breaker (the v1.37.2
// default) the pass is held and nothing is written.
func ExampleLeaseWatchStall() {
	sc := sim.NewScenario("stall", 5*time.Minute,
		sim.NewZone("a", 3, sim.NewPods("web", 2)),
		sim.NewZone("b", 3, sim.NewPods("web", 2)),
	).On(sim.LeaseWatchStall(10*time.Second), sim.LeaseWatchResume(70*time.Second))

	for _, breaker := range []bool{false, true} {
		sc.Policy.NodeControllerLeaseCircuitBreaker = breaker
		res, err := sim.Run(context.Background(), sc)
		if err != nil {
			fmt.Println(err)
			return
		}
		s := res.Summary
		fmt.Printf("breaker %v: %d pod Ready=False writes; longest node down %s, longest pod down %s; down at the end: %d nodes, %d pods\n",
			breaker, s.PodsMarkedNotReady, sim.Dur(s.LongestNodeDown), sim.Dur(s.LongestPodNotReady), s.NodesDownAtEnd, s.PodsNotReadyAtEnd)
	}
	// Output:
	// breaker false: 12 pod Ready=False writes; longest node down 5.0s, longest pod down 5.0s; down at the end: 0 nodes, 0 pods
	// breaker true: 0 pod Ready=False writes; longest node down 0.0s, longest pod down 0.0s; down at the end: 0 nodes, 0 pods
}

// A grid of runs: every combination of two fields' values, the first
// field's varying slowest.
func ExampleSweepGrid() {
	sc := sim.NewScenario("zone-b-40", 15*time.Minute,
		sim.NewZone("a", 60, sim.NewPods("web", 10)),
		sim.NewZone("b", 60, sim.NewPods("web", 10)),
	).On(sim.Stop(time.Minute, "b", 24))

	runs, err := sim.SweepGrid(context.Background(), sc, []sim.SweepField{
		{Field: "nodeEvictionRate", Values: []string{"0.1", "1"}},
		{Field: "defaultUnreachableTolerationSeconds", Values: []string{"60", "300"}},
	}, sim.Options{}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range runs {
		b := r.Result.Summary.Zones[1]
		fmt.Printf("rate %s, toleration %ss: last pod evicted at %s\n", r.Values[0], r.Values[1], sim.Offset(*b.LastEviction))
	}
	// Output:
	// rate 0.1, toleration 60s: last pod evicted at +6m45.0s
	// rate 0.1, toleration 300s: last pod evicted at +10m45.0s
	// rate 1, toleration 60s: last pod evicted at +3m18.0s
	// rate 1, toleration 300s: last pod evicted at +7m18.0s
}

// A GPU driver marks 10% of a fleet's 800 GPUs unhealthy over 30 seconds,
// in three batches 10s apart: how many pods go? Upstream (v1.37.2) deletes
// every pod on a tainted GPU the instant its taint lands. A blast-radius
// breaker at 5% of the driver's allocated GPUs (taints.DeviceBlastRadius,
// ours) holds the driver's evictions once the second batch takes it past
// 40 tainted GPUs.
func ExampleTaintDevices() {
	gpus := sim.NewZone("gpu", 100, sim.NewClaimPods("train", 8, "gpu.example.com"), sim.NewPods("web", 4)).
		WithDevices(sim.NewDevices("gpu.example.com", 8))
	storm := sim.TaintDevices(time.Minute, "gpu.example.com", 0.1, 30*time.Second)
	storm.Every = sim.Duration(10 * time.Second)
	sc := sim.NewScenario("gpu-storm", 5*time.Minute, gpus).On(storm)

	for _, share := range []string{"0", "0.05"} {
		run, err := sc.With("deviceMaxShare", share)
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := sim.Run(context.Background(), run)
		if err != nil {
			fmt.Println(err)
			return
		}
		d := res.Summary.Devices.Drivers[0]
		fmt.Printf("deviceMaxShare %s: %d of %d GPUs tainted, %d pods evicted by %s, %d held at the end",
			share, d.DevicesTainted, d.AllocatedDevices, d.PodsEvicted, sim.Offset(*d.LastEviction), d.PodsHeld)
		for _, h := range d.Holds {
			fmt.Printf("; %s at %s", h.State, sim.Offset(h.T))
		}
		fmt.Println()
	}
	// Output:
	// deviceMaxShare 0: 80 of 800 GPUs tainted, 80 pods evicted by +1m20.0s, 0 held at the end
	// deviceMaxShare 0.05: 80 of 800 GPUs tainted, 27 pods evicted by +1m0.0s, 53 held at the end; Holding at +1m10.0s
}
