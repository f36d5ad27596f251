package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

// If zone b loses 40% of its 60 nodes, when is the last pod evicted? With
// the v1.36 defaults: 24 of 60 not ready is under the 55% threshold, so
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
