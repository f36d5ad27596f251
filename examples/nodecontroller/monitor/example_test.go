package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Example drives a Monitor the way a controller does, on a virtual clock: a
// monitor pass every MonitorPeriod and a tainting and eviction pass every
// TaintPeriod. The Cluster is fakeCluster (cluster_test.go), an in-memory
// stand-in for informer caches and API writes; a real controller passes its
// client-go wiring instead (examples/nodecontroller/controller).
//
// Node a's kubelet stops at t=0 while b and c keep renewing their Leases
// every 10s. Node a turns Unknown at the first monitor pass after the 50s
// grace period, is tainted at once (the zone queue has a token), its pod
// without tolerations is evicted immediately and the pod with the admission
// defaults 300s after the taint.
func Example() {
	start := testutil.Epoch
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1 // one node at a time: the events come in a fixed order

	c := newFakeCluster()
	var events []monitor.Event
	m, err := monitor.New(cfg, c, func(e monitor.Event) { events = append(events, e) })
	if err != nil {
		fmt.Println(err)
		return
	}
	c.m, c.now = m, start
	for _, name := range []string{"a", "b", "c"} {
		c.addNode(name, "zone-1", start)
	}
	c.addPod("web", "a", start, true)    // admission defaults: 300s NoExecute tolerations
	c.addPod("batch", "a", start, false) // no tolerations

	ctx := context.Background()
	for now := start; now.Sub(start) <= 6*time.Minute; now = now.Add(cfg.TaintPeriod) {
		c.now = now
		el := now.Sub(start)
		if el%(10*time.Second) == 0 {
			c.renew("b", now)
			c.renew("c", now)
		}
		if el%cfg.MonitorPeriod == 0 {
			m.MonitorPass(ctx, now)
		}
		m.TaintPass(ctx, now)
		m.EvictionPass(ctx, now)
	}

	for _, e := range events {
		who := e.Node
		switch {
		case e.Pod != "":
			who = e.Pod
		case who == "":
			who = strings.ReplaceAll(e.Zone, "\x00", "") // zonestate.Key is region:\x00:zone
		}
		fmt.Printf("%-6v %-15s %-14s %s\n", e.At.Sub(start), e.Kind, who, e.Detail)
	}
	// Output:
	// 0s     zone-state      region::zone-1 Initial -> Normal (0 of 3 not ready, rate 0.1 nodes/s)
	// 55s    taint-added     a              node.kubernetes.io/unreachable:NoSchedule
	// 55s    node-unknown    a              no heartbeat for more than 50s: Ready=Unknown written
	// 55s    pods-not-ready  a              2 pods marked Ready=False
	// 55s    taint-added     a              node.kubernetes.io/unreachable:NoExecute
	// 55s    pod-evicted     default/batch  NotTolerated (attempt 1)
	// 5m55s  pod-evicted     default/web    TolerationExpired (attempt 1)
}
