package nodehealth

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// benchNode is a node with a realistic status: the five kubelet
// conditions, addresses, capacity, node info and a few images.
func benchNode(i int) *v1.Node {
	name := fmt.Sprintf("node-%05d", i)
	n := testutil.Node(name, sec(-86400))
	for _, c := range []v1.NodeCondition{
		cond(v1.NodeMemoryPressure, F, -5, -86000),
		cond(v1.NodeDiskPressure, F, -5, -86000),
		cond(v1.NodePIDPressure, F, -5, -86000),
		rc(T, -5, -86000),
		cond(v1.NodeNetworkUnavailable, F, -86000, -86000),
	} {
		testutil.WithCondition(n, c)
	}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: name}}
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	n.Status.Capacity, n.Status.Allocatable = rl, rl.DeepCopy()
	n.Status.NodeInfo = v1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Linux", ContainerRuntimeVersion: "containerd://2.1"}
	for j := 0; j < 10; j++ {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/img-%d:v1", j)}, SizeBytes: 1 << 26})
	}
	return n
}

// BenchmarkObserve measures one monitor pass over every node.
//   - steady: every node renewed its Lease since the last pass (the normal
//     case since kubelets heartbeat through Leases): no allocation.
//   - stale: no node sent anything and every node is written Unknown
//     (the input keeps Ready=True, as when the writes fail, so every pass
//     produces a StatusUpdate).
func BenchmarkObserve(b *testing.B) {
	for _, size := range []int{500, 5000} {
		nodes := make([]*v1.Node, size)
		leases := make([]*coordinationv1.Lease, size)
		for i := range nodes {
			nodes[i] = benchNode(i)
			leases[i] = testutil.Lease(nodes[i].Name, sec(0))
		}
		b.Run(fmt.Sprintf("steady/nodes=%d", size), func(b *testing.B) {
			tr := newTracker(b)
			now := sec(0)
			for i := range nodes {
				leases[i].Spec.RenewTime.Time = now
				tr.Observe(now, nodes[i], leases[i])
			}
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(10 * time.Second)
				for i := range nodes {
					leases[i].Spec.RenewTime.Time = now
					if r, err := tr.Observe(now, nodes[i], leases[i]); err != nil || r.Stale {
						b.Fatalf("Observe = %s, %v", summary(r), err)
					}
				}
			}
			reportPerNode(b, size)
		})
		b.Run(fmt.Sprintf("stale/nodes=%d", size), func(b *testing.B) {
			tr := newTracker(b)
			now := sec(0)
			for i := range nodes {
				tr.Observe(now, nodes[i], nil)
			}
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Hour)
				for i := range nodes {
					if r, err := tr.Observe(now, nodes[i], nil); err != nil || r.StatusUpdate == nil {
						b.Fatalf("Observe = %s, %v", summary(r), err)
					}
				}
			}
			reportPerNode(b, size)
		})
		// Nodes already Unknown, each confirmed every pass (upstream reads
		// the live Lease of every node past its grace).
		b.Run(fmt.Sprintf("stale-unknown+confirm/nodes=%d", size), func(b *testing.B) {
			tr := newTracker(b)
			unknown := make([]*v1.Node, size)
			now := sec(0)
			for i := range nodes {
				unknown[i] = nodes[i].DeepCopy()
				findCondition(unknown[i].Status.Conditions, v1.NodeReady).Status = v1.ConditionUnknown
				tr.Observe(now, unknown[i], leases[i])
			}
			live := Live{}
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Hour)
				for i := range unknown {
					r, err := tr.Observe(now, unknown[i], leases[i])
					if err != nil || r.Confirm != ReadLease || r.StatusUpdate != nil {
						b.Fatalf("Observe = %s, %v", summary(r), err)
					}
					live.Lease = leases[i]
					if v, err := tr.Confirm(now, unknown[i].Name, live); err != nil || v != VerdictStale {
						b.Fatalf("Confirm = %v, %v", v, err)
					}
				}
			}
			reportPerNode(b, size)
		})
	}
}

func reportPerNode(b *testing.B, size int) {
	b.ReportMetric(float64(size), "nodes/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/node")
}

// BenchmarkSnapshotRestore measures saving and loading the state of every
// node (done at most once per leader term plus periodic checkpoints).
func BenchmarkSnapshotRestore(b *testing.B) {
	const size = 5000
	tr := newTracker(b)
	for i := 0; i < size; i++ {
		n := benchNode(i)
		tr.Observe(sec(0), n, testutil.Lease(n.Name, sec(0)))
	}
	b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fresh := newTracker(b)
			fresh.Restore(sec(1), tr.Snapshot())
		}
		b.ReportMetric(size, "nodes/op")
	})
}

// BenchmarkPodNotReadyStatus computes the NotReady status of every pod of a
// 5,000-node cluster with 30 pods per node (the whole cluster partitioned).
func BenchmarkPodNotReadyStatus(b *testing.B) {
	const size = 150000
	pods := make([]*v1.Pod, size)
	for i := range pods {
		pods[i] = testutil.Pod("default", fmt.Sprintf("pod-%06d", i), fmt.Sprintf("node-%05d", i/30))
	}
	b.Run(fmt.Sprintf("pods=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pods {
				if _, ok := PodNotReadyStatus(sec(0), p); !ok {
					b.Fatal("PodNotReadyStatus = false")
				}
			}
		}
		b.ReportMetric(size, "pods/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/size, "ns/pod")
	})
}

// BenchmarkOrphanObserve measures one cloud-existence pass over 5,000
// NotReady nodes whose cloud answers Unknown (the broken-API case).
func BenchmarkOrphanObserve(b *testing.B) {
	const size = 5000
	nodes := make([]*v1.Node, size)
	for i := range nodes {
		nodes[i] = readyNode(fmt.Sprintf("node-%05d", i), U, 0, 0)
	}
	b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
		o, err := NewOrphanTracker(DefaultOrphanPolicy())
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range nodes {
			o.Observe(sec(0), n, ExistenceUnknown)
		}
		now := sec(0)
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(5 * time.Second)
			for _, n := range nodes {
				o.Observe(now, n, ExistenceUnknown)
			}
		}
		b.ReportMetric(size, "nodes/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/size, "ns/node")
	})
}

// BenchmarkNextDeadline measures the earliest deadline over every node:
//   - read: NextDeadline alone (O(1)).
//   - renew: one node renews its Lease and NextDeadline is read, as a
//     caller does after each evaluation. The nodes renew in deadline
//     order, so the one renewing is always the earliest: its deadline
//     moves to the back when NextDeadline settles it (O(log n)); a node
//     that renews while not the earliest costs O(1).
func BenchmarkNextDeadline(b *testing.B) {
	const size = 5000
	nodes := make([]*v1.Node, size)
	leases := make([]*coordinationv1.Lease, size)
	tr := newTracker(b)
	for i := range nodes {
		nodes[i] = benchNode(i)
		now := sec(float64(i) / 100) // deadlines spread over 50s
		leases[i] = testutil.Lease(nodes[i].Name, now)
		tr.Observe(now, nodes[i], leases[i])
	}
	b.Run(fmt.Sprintf("read/nodes=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := tr.NextDeadline(); !ok {
				b.Fatal("NextDeadline() = false")
			}
		}
	})
	b.Run(fmt.Sprintf("renew/nodes=%d", size), func(b *testing.B) {
		now, i := sec(50), 0
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(time.Millisecond)
			leases[i].Spec.RenewTime.Time = now
			if r, err := tr.Observe(now, nodes[i], leases[i]); err != nil || r.Stale {
				b.Fatalf("Observe = %s, %v", summary(r), err)
			}
			if _, ok := tr.NextDeadline(); !ok {
				b.Fatal("NextDeadline() = false")
			}
			i = (i + 1) % size
		}
	})
}

// BenchmarkObserveHeld measures a monitor pass over 5,000 nodes while the
// Lease circuit breaker holds (the cache stalled: every cached Lease looks
// past grace), CacheSynced included: no allocation.
func BenchmarkObserveHeld(b *testing.B) {
	const size = 5000
	nodes := make([]*v1.Node, size)
	leases := make([]*coordinationv1.Lease, size)
	tr := newTracker(b)
	for i := range nodes {
		nodes[i] = benchNode(i)
		leases[i] = testutil.Lease(nodes[i].Name, sec(0))
		leases[i].ResourceVersion = "10"
		tr.Observe(sec(0), nodes[i], leases[i])
	}
	now := sec(60)
	if r, _ := tr.Observe(now, nodes[0], leases[0]); r.Confirm == 0 {
		b.Fatal("no confirmation asked")
	}
	live := testutil.Lease(nodes[0].Name, sec(55))
	live.ResourceVersion = "99"
	if v, err := tr.Confirm(now, nodes[0].Name, Live{Lease: live}); v != VerdictCacheBehind {
		b.Fatalf("Confirm = %v, %v", v, err)
	}
	b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(5 * time.Second)
			tr.CacheSynced(CacheLease, "50")
			for i := range nodes {
				if r, err := tr.Observe(now, nodes[i], leases[i]); err != nil || !r.Held {
					b.Fatalf("Observe = %s, %v", summary(r), err)
				}
			}
		}
		reportPerNode(b, size)
	})
}
