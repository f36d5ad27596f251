package sim

import (
	"context"
	"testing"
	"time"
)

// TestPendingLastTaintExact: a run cut off while its zone queues still hold
// nodes projects when the last would be tainted; a longer run of the same
// scenario taints it at exactly that instant, wherever the zone's token
// bucket was in its cycle at the cut (the projection used to be the end
// plus queued/rate, up to a whole token period late: 45s at 0.01 nodes/s in
// a measured case), in both modes.
func TestPendingLastTaintExact(t *testing.T) {
	src := `duration: 2h
zones:
  - {name: part, nodes: 100, podsPerNode: 1}
  - {name: norm, nodes: 100, podsPerNode: 1}
events:
  - {at: 1m, action: stop, zone: part, count: 60}
  - {at: 1m13s, action: stop, zone: norm, count: 40}
`
	full := load(t, src)
	for _, opt := range []Options{{}, {PodEvictionTimeout: 2 * time.Minute}} {
		long, err := RunOptions(context.Background(), full, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Duration{}
		for _, z := range long.Summary.Zones {
			if opt.PodEvictionTimeout > 0 {
				want[z.Zone] = *z.LastEviction // a node leaves the queue as its pods go
			} else {
				want[z.Zone] = *z.LastTaint
			}
		}
		for _, cut := range []time.Duration{5*time.Minute + 30*time.Second, 4*time.Minute + 17*time.Second + 300*time.Millisecond, 7*time.Minute + 50*time.Second} {
			sc := *full
			sc.Duration = Duration(cut)
			res, err := RunOptions(context.Background(), &sc, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range res.Pending.Zones {
				if z.NodesQueued == 0 || z.LastTaint == nil {
					t.Fatalf("%s cut at %v: zone %s has nothing queued (%+v)", opt.Mode(), cut, z.Zone, z)
				}
				if got := *z.LastTaint; got != want[z.Zone] {
					t.Errorf("%s cut at %v: zone %s Pending.LastTaint = %v, want %v (the longer run's)", opt.Mode(), cut, z.Zone, got, want[z.Zone])
				}
			}
		}
	}
}
