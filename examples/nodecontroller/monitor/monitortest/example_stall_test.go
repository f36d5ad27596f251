package monitortest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
)

// A Monitor over a LeaseStall: the controller's Lease cache stalls from 10s
// to 70s while kubelet a keeps renewing every 10s and b is dead from 0s.
// b is confirmed stale by a live read and written Unknown at 55s; at 65s
// a's frozen Lease looks past grace too, but the live read finds it newer,
// so the pass is held and a is never written.
func ExampleLeaseStall() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	c := monitortest.New(epoch)
	for _, name := range []string{"a", "b"} {
		c.AddNode(ctx, monitortest.NewNode(name, "zone-1", epoch), monitortest.NewLease(name, epoch))
	}
	s := monitortest.NewLeaseStall(c)
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	m, err := monitor.New(cfg, s, func(e monitor.Event) {
		switch e.Kind {
		case monitor.KindNodeUnknown, monitor.KindHealthHeld:
			fmt.Printf("+%v %s %s: %s\n", e.At.Sub(epoch), e.Kind, e.Node, e.Detail)
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Attach(m)
	c.Sync(ctx)
	for now := epoch; !now.After(epoch.Add(2 * time.Minute)); now = now.Add(cfg.MonitorPeriod) {
		c.SetNow(now)
		el := now.Sub(epoch)
		if el%(10*time.Second) == 0 {
			c.RenewLease("a", now)
		}
		switch el {
		case 10 * time.Second:
			s.Stall() // the cache keeps a's renewal of 10s
		case 70 * time.Second:
			s.Resume()
		}
		m.MonitorPass(ctx, now)
	}
	// Output:
	// +55s node-unknown b: no heartbeat for more than 50s: Ready=Unknown written
	// +1m5s health-held a: read version: 1 is not as new as written version: 2 for group resource leases.coordination.k8s.io
}
