package lifecycle_test

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// world is what a controller's informer caches would hold. Writes replace
// objects, as an API server would.
type world struct {
	nodes map[string]*v1.Node
	pods  map[types.NamespacedName]*v1.Pod
}

func exampleNode(name, zone string, epoch time.Time) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(epoch.Add(-time.Hour)),
			Labels:            map[string]string{v1.LabelTopologyZone: zone},
		},
	}
}

func examplePod(name, node string, tol ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid")},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tol},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		}},
	}
}

// post is a kubelet posting its Ready condition with a fresh heartbeat.
func (w *world) post(name string, s v1.ConditionStatus, now time.Time) {
	n := w.nodes[name].DeepCopy()
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: s, LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	if len(n.Status.Conditions) == 1 && n.Status.Conditions[0].Status == s {
		ready.LastTransitionTime = n.Status.Conditions[0].LastTransitionTime
	}
	n.Status.Conditions = []v1.NodeCondition{ready}
	w.nodes[name] = n
}

// Example runs the node lifecycle loop that ties the packages together on a
// virtual clock, every 5 seconds for 7 minutes, in three acts: node a1 goes
// silent (Unknown, tainted at zone a's rate, pods evicted as their
// tolerations allow), comes back NotReady (the health taint is swapped, not
// added) and then Ready (the taint goes, and the node's key leaves the
// tainting queue so that it can be queued again); finally every node goes
// silent, every zone is fully disrupted and the circuit breaker empties the
// queues instead of tainting the whole cluster. The nodes are queued again
// on the next pass, but every zone's rate is 0 until one recovers.
func Example() {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(t time.Time) string { return fmt.Sprintf("%3.0fs", t.Sub(epoch).Seconds()) }

	w := &world{nodes: map[string]*v1.Node{}, pods: map[types.NamespacedName]*v1.Pod{}}
	for _, n := range []*v1.Node{exampleNode("a1", "a", epoch), exampleNode("a2", "a", epoch), exampleNode("b1", "b", epoch)} {
		w.nodes[n.Name] = n
	}
	forever := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	thirty := int64(30)
	for _, p := range []*v1.Pod{
		examplePod("web", "a1"),
		examplePod("cache", "a1", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &thirty}),
		examplePod("agent", "a1", forever),
		examplePod("db", "b1"),
	} {
		w.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}

	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	zones, _ := zonestate.NewTracker(zonestate.DefaultPolicy())
	evictor, _ := taints.NewEvictor(taints.DefaultEvictorConfig())
	// One tainting queue per zone, kept in step with the zone decisions.
	queues, _ := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	for _, p := range w.pods {
		evictor.SetPod(epoch, p)
	}

	// writeTaints stands for the conditional taint patch; the Evictor is fed
	// from the node informer's event.
	writeTaints := func(now time.Time, n *v1.Node) {
		w.nodes[n.Name] = n
		evictor.SetNodeTaints(now, n.Name, n.Spec.Taints)
	}

	for now := epoch; !now.After(epoch.Add(7 * time.Minute)); now = now.Add(5 * time.Second) {
		// The kubelets: a1 is silent from 10s to 100s, then reports NotReady,
		// then Ready from 120s; everybody is silent from 150s on.
		for _, name := range []string{"a1", "a2", "b1"} {
			switch t := now.Sub(epoch); {
			case t >= 150*time.Second:
			case name != "a1", t < 10*time.Second, t >= 120*time.Second:
				w.post(name, v1.ConditionTrue, now)
			case t >= 100*time.Second:
				w.post(name, v1.ConditionFalse, now)
			}
		}

		// Monitor pass. Informer List returns map order: walk nodes sorted so
		// that the tainting order is reproducible.
		names := make([]string, 0, len(w.nodes))
		for name := range w.nodes {
			names = append(names, name)
		}
		slices.Sort(names)
		ready := map[string][]*v1.NodeCondition{}
		for _, name := range names {
			node := w.nodes[name]
			res, err := health.Observe(now, node, nil)
			if err != nil {
				continue
			}
			if res.StatusUpdate != nil { // the status write: Ready turned Unknown
				node = node.DeepCopy()
				node.Status = *res.StatusUpdate
				w.nodes[name] = node
				fmt.Printf("%s %s: Ready=%s\n", at(now), name, res.CurrentReady.Status)
			}
			if res.MarkPodsNotReady {
				marked := 0
				for key, pod := range w.pods {
					if st, ok := nodehealth.PodNotReadyStatus(now, pod); ok && pod.Spec.NodeName == name {
						pod = pod.DeepCopy()
						pod.Status = *st
						w.pods[key] = pod
						marked++
					}
				}
				health.AckPodsNotReady(name) // acknowledged before this node's next Observe
				if marked > 0 {
					fmt.Printf("%s %s: %d pods marked not ready\n", at(now), name, marked)
				}
			}
			zone := zonestate.Key(node)
			ready[zone] = append(ready[zone], res.CurrentReady)
			queue, _ := queues.Ensure(now, zone, zonestate.DefaultPolicy().EvictionQPS)
			switch action, taint := taints.DecideNoExecute(res.CurrentReady, node.Spec.Taints); action {
			case taints.NoExecuteQueue: // rate limited: through the zone's queue
				if queue.Add(now, name, node.UID) {
					fmt.Printf("%s %s: queued for tainting\n", at(now), name)
				}
			case taints.NoExecuteSwap: // not-ready <-> unreachable: at once, never both
				if n, changed := taints.SwapHealthTaint(node, taint, now); changed {
					writeTaints(now, n)
					fmt.Printf("%s %s: health taint swapped to %s\n", at(now), name, taint.Key)
				}
			case taints.NoExecuteRemove:
				if n, changed := taints.RemoveHealthTaints(node); changed {
					writeTaints(now, n)
					fmt.Printf("%s %s: health taints removed\n", at(now), name)
				}
				// The key was marked done when the taint was applied: it must
				// leave the queue before the node can be queued again.
				queue.Remove(name)
			}
		}

		decision := zones.Update(ready)
		queued := queues.Len()
		// Apply sets each zone's rate; entering full disruption it empties and
		// stops every queue, and exiting it restores the rates.
		_ = queues.Apply(now, decision)
		if decision.EnteredFullDisruption {
			// The circuit breaker: every zone is dark, so the problem is more
			// likely the control plane's network than the nodes. Taint nothing,
			// and take back the taints already applied.
			for _, name := range names {
				if n, changed := taints.RemoveHealthTaints(w.nodes[name]); changed {
					writeTaints(now, n)
				}
			}
			fmt.Printf("%s full disruption: %d queued nodes dropped, health taints removed\n", at(now), queued)
		}
		if decision.ExitedFullDisruption {
			health.ResetProbes(now)
		}

		// Tainting pass (upstream: every 100ms; here once per step).
		queues.Each(func(_ string, q *evictionqueue.Queue[string]) bool {
			q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
				node := w.nodes[it.Key]
				action, taint := taints.DecideNoExecute(readyOf(node), node.Spec.Taints)
				if action != taints.NoExecuteQueue {
					return true, 0 // healthy again, or tainted meanwhile
				}
				n, _ := taints.SwapHealthTaint(node, taint, now)
				writeTaints(now, n)
				fmt.Printf("%s %s: tainted %s:NoExecute\n", at(now), it.Key, taint.Key)
				return true, 0
			})
			return true
		})

		// Eviction pass: each eviction is handed out once, then acknowledged.
		for _, ev := range evictor.Due(now) {
			delete(w.pods, ev.Pod) // DisruptionTarget condition, then a delete with a UID precondition
			evictor.DeletePod(ev.Pod)
			evictor.DoneEviction(ev)
			fmt.Printf("%s evicted %s from %s\n", at(now), ev.Pod, ev.Node)
		}
	}
	fmt.Printf("pods left: %d\n", len(w.pods))

	// Output:
	//  60s a1: Ready=Unknown
	//  60s a1: 3 pods marked not ready
	//  60s a1: queued for tainting
	//  60s a1: tainted node.kubernetes.io/unreachable:NoExecute
	//  60s evicted default/web from a1
	//  90s evicted default/cache from a1
	// 100s a1: health taint swapped to node.kubernetes.io/not-ready
	// 120s a1: health taints removed
	// 200s a1: Ready=Unknown
	// 200s a1: queued for tainting
	// 200s a2: Ready=Unknown
	// 200s a2: queued for tainting
	// 200s b1: Ready=Unknown
	// 200s b1: 1 pods marked not ready
	// 200s b1: queued for tainting
	// 200s full disruption: 3 queued nodes dropped, health taints removed
	// 205s a1: queued for tainting
	// 205s a2: queued for tainting
	// 205s b1: queued for tainting
	// pods left: 2
}

func readyOf(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
