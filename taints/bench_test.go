package taints

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

// benchSizes are (nodes, pods per node); the last is the
// library's reference scale of 5,000 nodes × 30 pods = 150,000 pods.
var benchSizes = []struct{ nodes, perNode int }{{500, 30}, {5000, 30}}

// benchEvictor returns an Evictor tracking nodes×perNode pods with the
// admission defaults, and the pods.
func benchEvictor(b *testing.B, nodes, perNode int) (*Evictor, [][]*v1.Pod) {
	b.Helper()
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defaults := WithDefaultTolerations(nil, DefaultTolerationTime, DefaultTolerationTime)
	pods := make([][]*v1.Pod, nodes)
	for n := range nodes {
		node := fmt.Sprintf("node-%d", n)
		pods[n] = make([]*v1.Pod, perNode)
		for i := range perNode {
			p := testutil.Pod(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("pod-%d-%d", n, i), node)
			p.Spec.Tolerations = defaults
			pods[n][i] = p
			e.SetPod(testutil.Epoch, p)
		}
	}
	return e, pods
}

func nodeName(n int) string { return fmt.Sprintf("node-%d", n) }

// BenchmarkMatching: 5 tolerations against 3 taints (target ≤ 300 ns, 0
// allocs; upstream GetMatchingTolerations: 560 ns, 1 alloc).
func BenchmarkMatching(b *testing.B) {
	tols, taints := fiveTolerations(), threeTaints()
	entries := make([]taintEntry, len(taints))
	for i := range taints {
		entries[i] = taintEntry{taint: taints[i], start: testutil.Epoch}
	}
	b.Run("tolerations=5,taints=3/MatchingTolerations", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if all, _ := MatchingTolerations(taints, tols); !all {
				b.Fatal("not tolerated")
			}
		}
	})
	b.Run("tolerations=5,taints=3/AppendMatchingTolerations", func(b *testing.B) {
		dst := make([]v1.Toleration, 0, 8)
		b.ReportAllocs()
		for b.Loop() {
			if all, _ := AppendMatchingTolerations(dst[:0], taints, tols); !all {
				b.Fatal("not tolerated")
			}
		}
	})
	b.Run("tolerations=5,taints=3/AppendMatching+MinTolerationTime", func(b *testing.B) {
		dst := make([]v1.Toleration, 0, 8)
		b.ReportAllocs()
		for b.Loop() {
			_, used := AppendMatchingTolerations(dst[:0], taints, tols)
			if d, _ := MinTolerationTime(used); d != 300*time.Second {
				b.Fatal(d)
			}
		}
	})
	b.Run("tolerations=5,taints=3/Evictor-judge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := judge(entries, tols, testutil.Epoch, false); v.kind != vAt {
				b.Fatal(v)
			}
		}
	})
	b.Run("tolerations=5,taints=3/upstream-style-loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if all, _ := referenceMatching(taints, tols, false); !all {
				b.Fatal("not tolerated")
			}
		}
	})
}

// BenchmarkEvictorTaintAll taints every node unreachable and collects every
// due eviction at +300s (target at 5,000 × 30: ≤ 100 ms per op). The reset
// between iterations (untaint, Retry drops the handed-out evictions) is not
// timed.
func BenchmarkEvictorTaintAll(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d,pods=%d", sz.nodes, sz.nodes*sz.perNode), func(b *testing.B) {
			e, _ := benchEvictor(b, sz.nodes, sz.perNode)
			names := make([]string, sz.nodes)
			for n := range names {
				names[n] = nodeName(n)
			}
			taint := []v1.Taint{added(UnreachableTaint(), 0)}
			base := testutil.Epoch
			var evicted int
			b.ReportAllocs()
			for b.Loop() {
				base = base.Add(time.Hour)
				for _, n := range names {
					e.SetNodeTaints(base, n, taint)
				}
				evs := e.Due(base.Add(300 * time.Second))
				evicted = len(evs)
				b.StopTimer()
				if evicted != sz.nodes*sz.perNode {
					b.Fatalf("evicted %d, want %d", evicted, sz.nodes*sz.perNode)
				}
				end := base.Add(300 * time.Second)
				for _, n := range names {
					e.SetNodeTaints(end, n, nil)
				}
				for _, x := range evs {
					e.Retry(end, x.Pod, 0)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(evicted), "evictions/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(evicted), "ns/eviction")
		})
	}
}

// BenchmarkEvictorDueNothingDue: every pod scheduled in the future; Due is
// O(1) and allocates nothing whatever the size.
func BenchmarkEvictorDueNothingDue(b *testing.B) {
	for _, sz := range append([]struct{ nodes, perNode int }{{0, 0}}, benchSizes...) {
		b.Run(fmt.Sprintf("nodes=%d,pods=%d", sz.nodes, sz.nodes*sz.perNode), func(b *testing.B) {
			e, _ := benchEvictor(b, sz.nodes, sz.perNode)
			for n := range sz.nodes {
				e.SetNodeTaints(testutil.Epoch, nodeName(n), []v1.Taint{UnreachableTaint()})
			}
			now := testutil.At(time.Minute)
			b.ReportAllocs()
			for b.Loop() {
				if evs := e.Due(now); evs != nil {
					b.Fatal("something due")
				}
			}
		})
	}
}

// BenchmarkEvictorSetPod: steady state re-sends an unchanged pod (informer
// resync or a status-only update), which allocates nothing; churn flips a
// pod's tolerations on a tainted node, which re-evaluates it and moves it
// in the queue (RescheduleRecompute) and switches its shared toleration set
// (interned: no copy once each variant exists).
func BenchmarkEvictorSetPod(b *testing.B) {
	for _, sz := range benchSizes {
		total := sz.nodes * sz.perNode
		b.Run(fmt.Sprintf("steady/nodes=%d,pods=%d", sz.nodes, total), func(b *testing.B) {
			e, pods := benchEvictor(b, sz.nodes, sz.perNode)
			for n := range sz.nodes {
				e.SetNodeTaints(testutil.Epoch, nodeName(n), []v1.Taint{UnreachableTaint()})
			}
			now := testutil.At(time.Minute)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				e.SetPod(now, pods[i%sz.nodes][i/sz.nodes%sz.perNode])
				i++
			}
			b.ReportMetric(float64(total), "pods")
		})
		b.Run(fmt.Sprintf("churn/nodes=%d,pods=%d", sz.nodes, total), func(b *testing.B) {
			e, pods := benchEvictor(b, sz.nodes, sz.perNode)
			e.cfg.Reschedule = RescheduleRecompute
			for n := range sz.nodes {
				e.SetNodeTaints(testutil.Epoch, nodeName(n), []v1.Taint{UnreachableTaint()})
			}
			alt := [2][]v1.Toleration{
				WithDefaultTolerations(nil, 600*time.Second, 600*time.Second),
				WithDefaultTolerations(nil, 120*time.Second, 120*time.Second),
			}
			variants := make([][2]*v1.Pod, 0, 1024)
			for i := range 1024 {
				p := pods[i%sz.nodes][i/sz.nodes%sz.perNode]
				var v [2]*v1.Pod
				for k := range v {
					v[k] = p.DeepCopy()
					v[k].Spec.Tolerations = alt[k]
				}
				variants = append(variants, v)
			}
			now := testutil.At(time.Minute)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				e.SetPod(now, variants[i%len(variants)][i/len(variants)%2])
				i++
			}
		})
	}
}

// BenchmarkEvictorSetNodeTaints: a node update whose NoExecute taints did
// not change (the common informer event) costs a comparison.
func BenchmarkEvictorSetNodeTaints(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("unchanged/nodes=%d,pods=%d", sz.nodes, sz.nodes*sz.perNode), func(b *testing.B) {
			e, _ := benchEvictor(b, sz.nodes, sz.perNode)
			taints := []v1.Taint{ns(v1.TaintNodeUnschedulable), added(UnreachableTaint(), 0)}
			for n := range sz.nodes {
				e.SetNodeTaints(testutil.Epoch, nodeName(n), taints)
			}
			names := make([]string, sz.nodes)
			for n := range names {
				names[n] = nodeName(n)
			}
			now := testutil.At(time.Minute)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				e.SetNodeTaints(now, names[i%sz.nodes], taints)
				i++
			}
		})
	}
}

// BenchmarkForConditions: one up-to-date node (the steady state of the
// NoSchedule pass) allocates nothing.
func BenchmarkForConditions(b *testing.B) {
	now := testutil.At(time.Minute)
	nodes := make([]*v1.Node, 5000)
	for i := range nodes {
		n := testutil.WithReady(testutil.Node(nodeName(i), testutil.Epoch), v1.ConditionTrue, now, testutil.Epoch)
		for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeNetworkUnavailable} {
			n = testutil.WithCondition(n, testutil.NodeCondition(c, v1.ConditionFalse, now, testutil.Epoch))
		}
		nodes[i] = testutil.WithTaints(n, ns("example.com/dedicated"))
	}
	b.Run("steady/nodes=5000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, n := range nodes {
				if add, _ := ForConditions(n, now); add != nil {
					b.Fatal(add)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(nodes)), "ns/node")
	})
}

// manyTaints returns n distinct NoExecute taints (key example.com/t-i).
func manyTaints(n int) []v1.Taint {
	out := make([]v1.Taint, n)
	for i := range out {
		out[i] = ne(fmt.Sprintf("example.com/t-%d", i), "v")
	}
	return out
}

// BenchmarkEvictorSetNodeTaintsMany: a node with 20,000 NoExecute taints
// (hostile or broken tooling); one node update, unchanged or with one taint
// added, must stay O(n log n), not O(n²).
func BenchmarkEvictorSetNodeTaintsMany(b *testing.B) {
	const n = 20000
	base := manyTaints(n)
	grown := append(manyTaints(n), ne("example.com/extra"))
	b.Run("unchanged/taints=20000", func(b *testing.B) {
		e, _ := NewEvictor(EvictorConfig{})
		e.SetPod(testutil.Epoch, pod("a", "n1", v1.Toleration{Operator: v1.TolerationOpExists}))
		e.SetNodeTaints(testutil.Epoch, "n1", base)
		now := testutil.At(time.Minute)
		b.ReportAllocs()
		for b.Loop() {
			e.SetNodeTaints(now, "n1", base)
		}
	})
	b.Run("changed/taints=20000", func(b *testing.B) {
		e, _ := NewEvictor(EvictorConfig{})
		e.SetPod(testutil.Epoch, pod("a", "n1", v1.Toleration{Operator: v1.TolerationOpExists}))
		now := testutil.At(time.Minute)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if i%2 == 0 {
				e.SetNodeTaints(now, "n1", base)
			} else {
				e.SetNodeTaints(now, "n1", grown)
			}
			i++
		}
	})
}

// BenchmarkEvictorAddPods: 150,000 pods with the admission-default
// tolerations added to an empty Evictor (an informer's initial list). The
// toleration list is interned, so a new pod costs its record and a slot of
// the pod index; B/op divided by the pods is the allocation per pod
// (including the index's growth), TestMemoryPerPod pins what stays live.
func BenchmarkEvictorAddPods(b *testing.B) {
	const n = 150000
	pods := memPods(n)
	b.ReportAllocs()
	for b.Loop() {
		e, _ := NewEvictor(EvictorConfig{})
		for _, p := range pods {
			e.SetPod(testutil.Epoch, p)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pod")
}

// BenchmarkEvictorMemory reports the live heap the Evictor keeps per pod
// (B/pod) for 150,000 pods with the admission-default tolerations; the time
// includes two full collections per op and means nothing.
func BenchmarkEvictorMemory(b *testing.B) {
	const n = 150000
	pods := memPods(n)
	var per float64
	for b.Loop() {
		before := heapBytes()
		e, _ := NewEvictor(EvictorConfig{})
		for _, p := range pods {
			e.SetPod(testutil.Epoch, p)
		}
		after := heapBytes()
		runtime.KeepAlive(e)
		per = float64(int64(after)-int64(before)) / n
	}
	b.ReportMetric(per, "B/pod")
}
