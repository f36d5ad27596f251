package nodehealthtest_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/nodehealth/nodehealthtest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The store's resourceVersions through a stall, a catch-up and an etcd
// restore from a snapshot.
func ExampleLeases() {
	leases := nodehealthtest.New()
	show := func(what string) {
		live, _ := leases.Get(context.Background(), "a", metav1.GetOptions{})
		fmt.Printf("%-22s cached %s, live %s, synced %s\n", what+":", leases.Cached("a").ResourceVersion, live.ResourceVersion, leases.SyncedVersion())
	}
	leases.Renew("a", epoch)
	snapshot := leases.Snapshot()
	show("renewed")
	leases.Stall()
	leases.Renew("a", epoch.Add(10*time.Second))
	leases.Bump(100) // other objects' writes
	show("stalled, renewed")
	leases.Resume()
	show("resumed")
	leases.Restore(snapshot)
	show("restored")
	// Output:
	// renewed:               cached 2, live 2, synced 2
	// stalled, renewed:      cached 2, live 3, synced 2
	// resumed:               cached 3, live 3, synced 103
	// restored:              cached 2, live 2, synced 2
}

// A nodehealth caller loop tested against a stalled Lease cache: node a's
// kubelet renews every 10s, but the cache stalls from 10s to 80s. At 65s
// the cached Lease is past grace; the live read finds it newer and the
// Tracker holds, so a is never written Unknown.
func ExampleLeases_stall() {
	ctx := context.Background()
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	leases := nodehealthtest.New()
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a", UID: types.UID("uid-a"), CreationTimestamp: metav1.NewTime(epoch)},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(epoch), LastTransitionTime: metav1.NewTime(epoch)}}},
	}
	for now := epoch; !now.After(epoch.Add(2 * time.Minute)); now = now.Add(5 * time.Second) {
		el := now.Sub(epoch)
		if el%(10*time.Second) == 0 {
			leases.Renew("a", now)
		}
		switch el {
		case 10 * time.Second:
			leases.Stall()
		case 80 * time.Second:
			leases.Resume()
		}
		if s := health.SyncCache(now, nodehealth.CacheLease, leases.SyncedVersion()); s.Ended.Cache != 0 {
			fmt.Printf("%v: hold ended: %s\n", el, s.End)
		}
		res, _ := health.Observe(now, node, leases.Cached("a"))
		if res.Confirm != 0 {
			v, _ := health.Confirm(now, "a", nodehealth.ReadLive(ctx, res.Confirm, "a", leases.Get, nil))
			fmt.Printf("%v: stale in the cache, confirmed: %s\n", el, v)
			if v == nodehealth.VerdictStale && res.StatusUpdate != nil {
				fmt.Printf("%v: written Unknown\n", el)
			}
		}
	}
	// Output:
	// 1m5s: stale in the cache, confirmed: cache-behind
	// 1m20s: hold ended: synced
}
