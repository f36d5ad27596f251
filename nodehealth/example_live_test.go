package nodehealth_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/nodehealth/nodehealthtest"
)

// Example_quickstart is the top-level README's Quickstart, with client-go
// informers and typed clients (here over the fake clientset): the v1.37.2
// loop, Lease circuit breaker included. Node a's kubelet is dead: at 55s
// its Lease is past grace in the cache, the live read confirms it, and
// Ready=Unknown is written. (The fake clientset assigns no
// resourceVersions, so there the breaker can never find the cache behind:
// see ExampleTracker_ConfirmDetail.)
func Example_quickstart() {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(readyNode("a", v1.ConditionTrue), lease("a", epoch))
	factory := informers.NewSharedInformerFactory(client, 0)
	nodeInformer, leaseInformer := factory.Core().V1().Nodes(), factory.Coordination().V1().Leases()
	nodeLister, leaseLister := nodeInformer.Lister(), leaseInformer.Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	defer factory.Shutdown()
	defer cancel()

	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig()) // v1.37.2: 50s grace, Lease circuit breaker on
	pass := func(now time.Time) {
		// Every monitor pass: how far the informers have synced, then each node.
		health.SyncCache(now, nodehealth.CacheLease, nodehealth.SyncedVersion(leaseInformer.Informer().GetStore(), leaseInformer.Informer()))
		health.SyncCache(now, nodehealth.CacheNode, nodehealth.SyncedVersion(nodeInformer.Informer().GetStore(), nodeInformer.Informer()))
		nodes, _ := nodeLister.List(labels.Everything())
		for _, node := range nodes {
			lease, _ := leaseLister.Leases(v1.NamespaceNodeLease).Get(node.Name) // nil if none
			res, err := health.Observe(now, node, lease)
			if err != nil || res.Held {
				continue // bad input, or a cache is behind the API server: skip the node this pass
			}
			if res.Confirm != 0 { // stale by the cache: read it live before acting on it
				live := nodehealth.ReadLive(ctx, res.Confirm, node.Name,
					client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get, client.CoreV1().Nodes().Get)
				if v, _ := health.Confirm(now, node.Name, live); v != nodehealth.VerdictStale {
					continue // the cache is behind (health.Held says why), or the read failed
				}
			}
			if res.StatusUpdate != nil {
				// Write it: Ready (and the pressure conditions) turned Unknown.
				n := node.DeepCopy()
				n.Status = *res.StatusUpdate
				if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err == nil {
					fmt.Printf("%s: %s written Ready=%s\n", secs(now), node.Name, res.CurrentReady.Status)
				}
			}
			// res.CurrentReady feeds taints.DecideNoExecute and zonestate.
		}
	}
	pass(epoch)
	pass(at(55 * time.Second))
	// Output:
	// 55s: a written Ready=Unknown
}

// ExampleTracker_ConfirmDetail shows what the breaker cannot do under
// client-go's fake clientset, which assigns no resourceVersions: the live
// Lease cannot be compared with the cached one, so the verdict is
// VerdictStale whatever the cache holds. Confirm says nothing about it;
// ConfirmDetail does.
func ExampleTracker_ConfirmDetail() {
	ctx := context.Background()
	client := fake.NewClientset(lease("a", epoch))
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	node := readyNode("a", v1.ConditionTrue)
	cached := lease("a", epoch) // the informer's copy

	_, _ = health.Observe(epoch, node, cached)
	now := at(55 * time.Second)
	res, _ := health.Observe(now, node, cached)
	live := nodehealth.ReadLive(ctx, res.Confirm, node.Name, client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get, client.CoreV1().Nodes().Get)
	c, _ := health.ConfirmDetail(now, node.Name, live)
	fmt.Printf("verdict %s, %s at %q, live at %q\n", c.Verdict, c.Cache, c.CachedVersion, c.LiveVersion)
	if c.Unversioned {
		fmt.Println("no resourceVersion: cannot compare; the breaker cannot trip")
	}
	// Output:
	// verdict stale, leases.coordination.k8s.io at "", live at ""
	// no resourceVersion: cannot compare; the breaker cannot trip
}

// ExampleReadLive reads what a Result asks for, through a LeaseGetter (a
// test store's here; client-go's typed Get in a controller): a Lease that
// exists, and one that does not, which is nil rather than an error.
func ExampleReadLive() {
	ctx := context.Background()
	leases := nodehealthtest.New()
	leases.Renew("a", epoch)

	live := nodehealth.ReadLive(ctx, nodehealth.ReadLease, "a", leases.Get, nil)
	fmt.Printf("a: Lease at %s, err %v\n", live.Lease.ResourceVersion, live.Err)
	live = nodehealth.ReadLive(ctx, nodehealth.ReadLease, "b", leases.Get, nil)
	fmt.Printf("b: Lease %v, err %v\n", live.Lease != nil, live.Err)
	// Output:
	// a: Lease at 2, err <nil>
	// b: Lease false, err <nil>
}

// ExampleTracker_SyncCache is an etcd restore from a snapshot while a hold
// is active. The controller's Lease watch stalls at 10s while kubelet a
// keeps renewing and d dies at 30s; at 65s a's frozen Lease is past grace,
// the live read finds it newer, and every node is held. At 90s etcd is
// restored to a snapshot taken at 0s, 5,000 writes ago: the informer
// relists at that lower revision, which the hold's target will not be
// again until 5,000 new writes have passed it. Unlike upstream, the hold
// ends there (HoldEndRewound) and d, really dead, is written Unknown once
// its restored Lease is past grace.
func ExampleTracker_SyncCache() {
	ctx := context.Background()
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	leases := nodehealthtest.New()
	nodes := []*v1.Node{readyNode("a", v1.ConditionTrue), readyNode("d", v1.ConditionTrue)}
	leases.Renew("a", epoch)
	leases.Renew("d", epoch)
	snapshot := leases.Snapshot() // etcdctl snapshot save
	leases.Bump(5000)             // every other write moves etcd's revision on

	for now := epoch; !now.After(at(150 * time.Second)); now = now.Add(5 * time.Second) {
		el := now.Sub(epoch)
		switch {
		case el == 90*time.Second:
			leases.Restore(snapshot) // etcd restored; the API server restarted, the informer relists
		case el%(10*time.Second) == 0:
			leases.Renew("a", now)
			if el < 30*time.Second {
				leases.Renew("d", now)
			}
		}
		if el == 10*time.Second {
			leases.Stall() // the Lease watch stalls
		}

		s := health.SyncCache(now, nodehealth.CacheLease, leases.SyncedVersion())
		if s.Ended.Cache != 0 {
			fmt.Printf("%s: hold ended (%s): %s\n", secs(now), s.End, s)
		}
		for i, node := range nodes {
			res, _ := health.Observe(now, node, leases.Cached(node.Name))
			if res.Held {
				continue
			}
			if res.Confirm != 0 {
				live := nodehealth.ReadLive(ctx, res.Confirm, node.Name, leases.Get, nil)
				if v, _ := health.Confirm(now, node.Name, live); v != nodehealth.VerdictStale {
					h, _ := health.Held()
					fmt.Printf("%s: %s: %s; held: %s\n", secs(now), node.Name, v, h)
					continue
				}
			}
			if res.StatusUpdate != nil {
				nodes[i] = node.DeepCopy()
				nodes[i].Status = *res.StatusUpdate // written
				fmt.Printf("%s: %s written Ready=Unknown\n", secs(now), node.Name)
			}
		}
	}
	// Output:
	// 65s: a: cache-behind; held: read version: 5006 is not as new as written version: 5013 for group resource leases.coordination.k8s.io
	// 90s: hold ended (rewound): hold on leases.coordination.k8s.io (waiting for version 5013) ended: the cache's synced resourceVersion went back from 5007 to 3, as after an etcd restore from a snapshot; stale nodes are confirmed again
	// 145s: d written Ready=Unknown
}
