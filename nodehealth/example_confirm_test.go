package nodehealth_test

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// withRV returns l at resourceVersion rv.
func withRV(l *coordinationv1.Lease, rv string) *coordinationv1.Lease {
	l.ResourceVersion = rv
	return l
}

// ExampleTracker_Confirm shows the Lease circuit breaker of Kubernetes v1.37:
// the controller's Lease watch stalls at 0s while the kubelet keeps renewing.
// At 55s the cached Lease is past grace; the live Lease read before writing
// Unknown is newer, so nothing is written and every node's write holds until
// the informer reports it caught up.
func ExampleTracker_Confirm() {
	health, err := nodehealth.NewTracker(nodehealth.DefaultConfig())
	if err != nil {
		panic(err)
	}
	node := readyNode("a", "True")
	cached := withRV(lease("a", epoch), "10") // what the stalled cache keeps showing
	live := withRV(lease("a", at(50*time.Second)), "90")

	pass := func(now time.Time, cachedLease *coordinationv1.Lease, syncedRV string) {
		health.CacheSynced(nodehealth.CacheLease, syncedRV) // the informer store's last synced resourceVersion
		res, _ := health.Observe(now, node, cachedLease)
		switch {
		case res.Held:
			h, _ := health.Held()
			fmt.Printf("%s: held: %s\n", secs(now), h)
		case res.Confirm.Has(nodehealth.ReadLease): // any stale node, written or not
			// GET kube-node-lease/a from the API server (not the cache).
			v, _ := health.Confirm(now, node.Name, nodehealth.Live{Lease: live})
			fmt.Printf("%s: stale by the cache, confirm %s: %s\n", secs(now), res.Confirm, v)
		default:
			fmt.Printf("%s: stale=%v\n", secs(now), res.Stale)
		}
	}
	pass(at(0), cached, "10")
	pass(at(55*time.Second), cached, "10")
	pass(at(60*time.Second), cached, "10")
	pass(at(65*time.Second), live, "90") // the watch recovered
	// Output:
	// 0s: stale=false
	// 55s: stale by the cache, confirm lease: cache-behind
	// 60s: held: read version: 10 is not as new as written version: 90 for group resource leases.coordination.k8s.io
	// 65s: stale=false
}
