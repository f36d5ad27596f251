package monitortest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/taints"
)

// A Monitor over an in-memory cluster on a virtual clock: node b's kubelet
// stops at t=0 while a keeps renewing its Lease every 10s. b goes Unknown
// at the first monitor pass after the 50s grace period and is tainted at
// once; its pod, with the admission plugin's 300s tolerations, is evicted
// 300s later.
func Example() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	c := monitortest.New(epoch)
	for _, name := range []string{"a", "b"} {
		c.AddNode(ctx, monitortest.NewNode(name, "zone-1", epoch), monitortest.NewLease(name, epoch))
		c.AddPod(ctx, monitortest.NewPod("default", "web-"+name, name, epoch,
			taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)...))
	}
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	m, err := monitor.New(cfg, c, func(e monitor.Event) {
		switch e.Kind {
		case monitor.KindNodeUnknown:
			fmt.Printf("+%v node %s Unknown\n", e.At.Sub(epoch), e.Node)
		case monitor.KindPodEvicted:
			fmt.Printf("+%v pod %s evicted\n", e.At.Sub(epoch), e.Pod)
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Attach(m)
	c.Sync(ctx)

	for now := epoch; !now.After(epoch.Add(6 * time.Minute)); now = now.Add(cfg.TaintPeriod) {
		c.SetNow(now)
		el := now.Sub(epoch)
		if el%(10*time.Second) == 0 {
			c.RenewLease("a", now) // b's kubelet is silent
		}
		if el%cfg.MonitorPeriod == 0 {
			m.MonitorPass(ctx, now)
		}
		m.TaintPass(ctx, now)
		m.EvictionPass(ctx, now)
	}
	fmt.Println("evicted:", c.Evicted())
	// Output:
	// +55s node b Unknown
	// +5m55s pod default/web-b evicted
	// evicted: [default/web-b]
}
