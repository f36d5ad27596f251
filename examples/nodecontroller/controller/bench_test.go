package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// BenchmarkAllLeasesStale runs the controller (Run, real clock) on the fake
// clientset from start to the point where every silent node is tainted
// unreachable:NoExecute and every one of its pods is marked Ready=False.
// The silent nodes form one zone; one more node in a second zone keeps
// renewing its Lease, so the cluster is not in full disruption and the
// silent zone is tainted at the normal rate, here unthrottled (EvictionQPS
// 1e9). Pods carry the admission's 300s tolerations, so none is deleted
// during the run. Grace period 200ms, monitor period 100ms: the measured
// time includes informer start-up and sync and about 0.3s of grace.
//
// It uses fake.NewSimpleClientset: fake.NewClientset's field-managed
// tracker rebuilds a REST mapper on every write (about 1.5ms and 1.3MB per
// write here), which measures the fake, not the controller (27s for the
// 500-node size instead of 1s).
//
// It is slow (one iteration takes seconds): run it with
//
//	go test -run '^$' -bench AllLeasesStale -benchtime 1x ./examples/nodecontroller/controller
func BenchmarkAllLeasesStale(b *testing.B) {
	for _, size := range []struct{ nodes, podsPerNode int }{{500, 30}, {5000, 30}} {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.nodes*size.podsPerNode), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				client := fake.NewSimpleClientset(staleCluster(size.nodes, size.podsPerNode)...)
				runtime.GC()
				b.StartTimer()
				stop := runUntilTainted(b, client, size.nodes, size.nodes*size.podsPerNode)
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(size.nodes), "nodes/op")
			b.ReportMetric(float64(size.nodes*size.podsPerNode), "pods/op")
		})
	}
}

// staleCluster is n Ready nodes in zone "silent" whose status and Leases
// stopped an hour ago, podsPerNode pods on each, and node "live" in zone
// "live" with a fresh Lease.
func staleCluster(n, podsPerNode int) []k8sruntime.Object {
	past := time.Now().Add(-time.Hour)
	objs := make([]k8sruntime.Object, 0, 2*n+n*podsPerNode+2)
	mk := func(name, zone string) {
		node := testutil.WithReady(testutil.Node(name, past), v1.ConditionTrue, past, past)
		testutil.WithZone(node, "r", zone)
		node.UID = types.UID("uid-" + name)
		node.Status.Images = []v1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}}
		objs = append(objs, node, testutil.Lease(name, past))
	}
	mk("live", "live")
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		mk(name, "silent")
		for j := range podsPerNode {
			p := testutil.Pod("default", fmt.Sprintf("pod-%05d-%02d", i, j), name)
			p.UID = types.UID(p.Name)
			p.Spec.Tolerations = taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)
			objs = append(objs, p)
		}
	}
	return objs
}

// runUntilTainted starts the controller and returns when the work is done,
// with a function that stops it.
func runUntilTainted(b *testing.B, client *fake.Clientset, nodes, pods int) (stop func()) {
	var tainted, marked atomic.Int64
	cfg := controller.DefaultConfig()
	cfg.Monitor.Health.GracePeriod = 200 * time.Millisecond
	cfg.Monitor.MonitorPeriod = 100 * time.Millisecond
	cfg.Monitor.Zones.EvictionQPS = 1e9
	cfg.OnEvent = func(e monitor.Event) {
		switch {
		case e.Kind == monitor.KindTaintAdded && e.Detail == unreachableNoExecute:
			tainted.Add(1)
		case e.Kind == monitor.KindPodsNotReady:
			var n int64
			if _, err := fmt.Sscanf(e.Detail, "%d pods", &n); err == nil {
				marked.Add(n)
			}
		}
	}
	c, err := controller.New(client, clock.RealClock{}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	start := time.Now()
	stopRun := runInBackground(ctx, c)
	stop = func() {
		if err := stopRun(); err != nil {
			b.Errorf("Run() = %v", err)
		}
	}
	// The live node's kubelet: renew its Lease every 50ms.
	leases := client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	renew := time.NewTicker(50 * time.Millisecond)
	defer renew.Stop()
	deadline := time.Now().Add(3 * time.Minute)
	for tainted.Load() < int64(nodes) || marked.Load() < int64(pods) {
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("after 3m: %d of %d nodes tainted, %d of %d pods marked", tainted.Load(), nodes, marked.Load(), pods)
		}
		select {
		case <-renew.C:
			l := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: v1.NamespaceNodeLease},
				Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now()}},
			}
			if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				stop()
				b.Fatalf("renew live lease: %v", err)
			}
			if testing.Verbose() && time.Since(start)%time.Second < 50*time.Millisecond {
				b.Logf("%v: %d nodes tainted, %d pods marked", time.Since(start).Round(time.Millisecond), tainted.Load(), marked.Load())
			}
		case <-time.After(time.Millisecond):
		}
	}
	return stop
}
