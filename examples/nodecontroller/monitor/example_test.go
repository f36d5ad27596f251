package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/taints"
)

// Example drives a Monitor the way a controller does, on a virtual clock: a
// monitor pass every MonitorPeriod and a tainting and eviction pass every
// TaintPeriod. The Cluster is monitortest.Cluster, an in-memory stand-in
// for informer caches and API writes; a real controller passes its
// client-go wiring instead (examples/nodecontroller/controller).
//
// Node a's kubelet stops at t=0 while b and c keep renewing their Leases
// every 10s. Node a turns Unknown at the first monitor pass after the 50s
// grace period, is tainted at once (the zone queue has a token), its pod
// without tolerations is evicted immediately and the pod with the admission
// defaults 300s after the taint.
func Example() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1 // one node at a time: the events come in a fixed order

	cluster := monitortest.New(start)
	var events []monitor.Event
	m, err := monitor.New(cfg, cluster, func(e monitor.Event) { events = append(events, e) })
	if err != nil {
		fmt.Println(err)
		return
	}
	cluster.Attach(m) // the cluster's writes come back as informer events

	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		cluster.AddNode(ctx, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
				v1.LabelTopologyRegion: "region", v1.LabelTopologyZone: "zone-1",
			}},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue,
				LastHeartbeatTime: metav1.NewTime(start), LastTransitionTime: metav1.NewTime(start.Add(-time.Hour)),
			}}},
		}, monitortest.NewLease(name, start))
	}
	pod := func(name string, tolerations []v1.Toleration) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
			Spec:       v1.PodSpec{NodeName: "a", Tolerations: tolerations},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionTrue},
			}},
		}
	}
	// What admission adds to every pod: 300s NoExecute tolerations of
	// not-ready and unreachable.
	cluster.AddPod(ctx, pod("web", taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)))
	cluster.AddPod(ctx, pod("batch", nil)) // no tolerations

	for now := start; now.Sub(start) <= 6*time.Minute; now = now.Add(cfg.TaintPeriod) {
		cluster.SetNow(now)
		el := now.Sub(start)
		if el%(10*time.Second) == 0 {
			cluster.RenewLease("b", now)
			cluster.RenewLease("c", now)
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
