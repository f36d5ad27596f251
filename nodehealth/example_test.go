package nodehealth_test

import (
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// epoch is the fixed instant the examples start from.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is the instant d after epoch.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// secs formats t as seconds after epoch.
func secs(t time.Time) string { return fmt.Sprintf("%gs", t.Sub(epoch).Seconds()) }

// readyNode is a node created at epoch whose kubelet last posted Ready=s at
// epoch.
func readyNode(name string, s v1.ConditionStatus) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name), CreationTimestamp: metav1.NewTime(epoch)},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: s,
			LastHeartbeatTime: metav1.NewTime(epoch), LastTransitionTime: metav1.NewTime(epoch),
		}}},
	}
}

// lease is the node's Lease in kube-node-lease, renewed at renew.
func lease(node string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, RenewTime: &metav1.MicroTime{Time: renew}},
	}
}

// readyPod is a running pod bound to node with Ready=True.
func readyPod(name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       v1.PodSpec{NodeName: node},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		}},
	}
}

// Example drives a Tracker the way a node lifecycle controller does: one
// monitor pass every 5s over the nodes in its cache, writing what the Tracker
// asks for and marking pods NotReady when it flips a node to Unknown. Node
// "b" stops renewing its Lease at 10s.
func Example() {
	health, err := nodehealth.NewTracker(nodehealth.DefaultConfig())
	if err != nil {
		panic(err)
	}
	// The "API server": nodes, leases and pods the caller reads and writes.
	nodes := map[string]*v1.Node{}
	for _, name := range []string{"a", "b"} {
		nodes[name] = readyNode(name, v1.ConditionTrue)
	}
	pods := []*v1.Pod{readyPod("web-1", "b"), readyPod("web-2", "a")}

	for now := epoch; !now.After(at(80 * time.Second)); now = now.Add(5 * time.Second) {
		for _, name := range []string{"a", "b"} {
			l := lease(name, now) // kubelet renews every pass...
			if name == "b" && now.After(at(10*time.Second)) {
				l = lease(name, at(10*time.Second)) // ...until b dies
			}
			res, err := health.Observe(now, nodes[name], l)
			if err != nil {
				panic(err)
			}
			if res.StatusUpdate != nil {
				n := nodes[name].DeepCopy()
				n.Status = *res.StatusUpdate // UpdateStatus
				nodes[name] = n
				fmt.Printf("%s: node %s written Ready=%s (%s)\n", secs(now), name, res.CurrentReady.Status, res.CurrentReady.Reason)
			}
			if res.MarkPodsNotReady {
				for i, p := range pods {
					if p.Spec.NodeName != name {
						continue
					}
					if st, ok := nodehealth.PodNotReadyStatus(now, p); ok {
						p = p.DeepCopy()
						p.Status = *st // UpdateStatus
						pods[i] = p
						fmt.Printf("%s: pod %s marked NotReady\n", secs(now), p.Name)
					}
				}
				health.AckPodsNotReady(name)
			}
		}
	}
	// Output:
	// 65s: node b written Ready=Unknown (NodeStatusUnknown)
	// 65s: pod web-1 marked NotReady
}

// A node that stops sending signals is stale strictly after probe + grace,
// and its Ready condition is then written Unknown.
func ExampleTracker_Observe() {
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	node := readyNode("n1", v1.ConditionTrue)
	for _, d := range []time.Duration{0, 50 * time.Second, 55 * time.Second} {
		res, _ := health.Observe(at(d), node, nil)
		fmt.Printf("at %v: stale=%v deadline=%s write=%v pods=%v\n",
			d, res.Stale, secs(res.Deadline), res.StatusUpdate != nil, res.MarkPodsNotReady)
		if res.StatusUpdate != nil {
			for _, c := range res.StatusUpdate.Conditions {
				fmt.Printf("  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	// Output:
	// at 0s: stale=false deadline=50s write=false pods=false
	// at 50s: stale=false deadline=50s write=false pods=false
	// at 55s: stale=true deadline=50s write=true pods=true
	//   Ready=Unknown NodeStatusUnknown: Kubelet stopped posting node status.
	//   MemoryPressure=Unknown NodeStatusNeverUpdated: Kubelet never posted node status.
	//   DiskPressure=Unknown NodeStatusNeverUpdated: Kubelet never posted node status.
	//   PIDPressure=Unknown NodeStatusNeverUpdated: Kubelet never posted node status.
}

// A renewed Lease is a fresh signal even when the node's status never
// changes: any change of RenewTime counts, even backwards (a kubelet whose
// clock was corrected; unlike upstream, which needs a newer one), and an
// equal RenewTime does not.
func ExampleTracker_Observe_lease() {
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	node := readyNode("n1", v1.ConditionTrue)
	for _, step := range []struct{ at, renew time.Duration }{
		{0, 0}, {40 * time.Second, 40 * time.Second}, {80 * time.Second, 40 * time.Second}, {91 * time.Second, 30 * time.Second},
	} {
		res, _ := health.Observe(at(step.at), node, lease("n1", at(step.renew)))
		fmt.Printf("at %v, lease renewed at %v: deadline=%s stale=%v\n", step.at, step.renew, secs(res.Deadline), res.Stale)
	}
	// Output:
	// at 0s, lease renewed at 0s: deadline=50s stale=false
	// at 40s, lease renewed at 40s: deadline=90s stale=false
	// at 1m20s, lease renewed at 40s: deadline=90s stale=false
	// at 1m31s, lease renewed at 30s: deadline=141s stale=false
}

// Snapshot and Restore carry the grace period and the pods-not-ready edge
// across a controller restart: the restarted Tracker does not grant a fresh
// grace period (kubernetes/kubernetes#108268).
func ExampleTracker_Snapshot() {
	node := readyNode("n1", v1.ConditionTrue)
	before, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	before.Observe(at(0), node, nil)
	saved := before.Snapshot() // e.g. stored in a ConfigMap as JSON

	after, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	after.Restore(at(30*time.Second), saved)
	res, _ := after.Observe(at(51*time.Second), node, nil)
	fmt.Printf("restored: deadline=%s stale=%v\n", secs(res.Deadline), res.Stale)

	fresh, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	res, _ = fresh.Observe(at(51*time.Second), node, nil)
	fmt.Printf("not restored: deadline=%s stale=%v\n", secs(res.Deadline), res.Stale)
	// Output:
	// restored: deadline=50s stale=true
	// not restored: deadline=101s stale=false
}

// A caller that marks pods from a worker pool acknowledges the flip it
// handled with AckPodsNotReadyEdge: a late acknowledgement of an older flip
// leaves a newer one pending.
func ExampleTracker_AckPodsNotReadyEdge() {
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	silent := readyNode("n1", v1.ConditionTrue)
	health.Observe(at(0), silent, nil)
	res, _ := health.Observe(at(51*time.Second), silent, nil) // Ready -> Unknown
	first := res.PodsNotReadyEdge
	fmt.Println("flip at", secs(first)) // handed to a worker

	back := readyNode("n1", v1.ConditionTrue)
	back.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(at(60 * time.Second))
	health.Observe(at(60*time.Second), back, nil)           // the kubelet is back...
	res, _ = health.Observe(at(111*time.Second), back, nil) // ...and silent again
	fmt.Println("flip at", secs(res.PodsNotReadyEdge))

	fmt.Println("late ack of the first flip:", health.AckPodsNotReadyEdge("n1", first))
	fmt.Println("ack of the second flip:", health.AckPodsNotReadyEdge("n1", res.PodsNotReadyEdge))
	// Output:
	// flip at 51s
	// flip at 111s
	// late ack of the first flip: false
	// ack of the second flip: true
}

// PodNotReadyStatus computes the status to write for one pod of a node the
// Tracker flipped to Unknown.
func ExamplePodNotReadyStatus() {
	pod := readyPod("web-1", "n1")
	st, ok := nodehealth.PodNotReadyStatus(at(55*time.Second), pod)
	fmt.Println(ok, st.Conditions[0].Type, st.Conditions[0].Status, secs(st.Conditions[0].LastTransitionTime.Time))
	_, ok = nodehealth.PodNotReadyStatus(at(60*time.Second), &v1.Pod{Status: *st})
	fmt.Println(ok)
	// Output:
	// true Ready False 55s
	// false
}

// DisruptionTargetStatus is the status to patch before deleting a pod for a
// NoExecute taint, as upstream's taint eviction controller does; a second
// call on the patched pod has nothing to write.
func ExampleDisruptionTargetStatus() {
	now := at(5 * time.Minute)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", Generation: 2},
		Spec:       v1.PodSpec{NodeName: "b"},
	}
	st, ok := nodehealth.DisruptionTargetStatus(now, pod)
	c := st.Conditions[len(st.Conditions)-1]
	fmt.Println(ok, c.Type, c.Status, c.Reason, c.ObservedGeneration)
	fmt.Println(c.Message)

	pod.Status = *st // PatchPodStatus, then Delete
	_, ok = nodehealth.DisruptionTargetStatus(now.Add(time.Minute), pod)
	fmt.Println("again:", ok)
	// Output:
	// true DisruptionTarget True DeletionByTaintManager 2
	// Taint manager: deleting due to NoExecute taint
	// again: false
}

// ClassifyExistence never reads an error as "exists" or "gone", except the
// not-found sentinels, which a provider wraps.
func ExampleClassifyExistence() {
	fmt.Println(nodehealth.ClassifyExistence(true, nil))
	fmt.Println(nodehealth.ClassifyExistence(false, nil))
	fmt.Println(nodehealth.ClassifyExistence(false, fmt.Errorf("vmss gone: %w", nodehealth.ErrParentNotFound)))
	fmt.Println(nodehealth.ClassifyExistence(false, errors.New("HTTP 429")))
	// Output:
	// Exists
	// NotFound
	// NotFound
	// Unknown
}

// An OrphanTracker with a stricter policy than upstream's: three NotFound
// answers over at least a minute before a NotReady node is deleted; cloud
// errors back off.
func ExampleOrphanTracker() {
	orphans, _ := nodehealth.NewOrphanTracker(nodehealth.OrphanPolicy{
		Confirmations: 3, MinNotFoundAge: time.Minute,
		UnknownBackoff: 5 * time.Second, MaxUnknownBackoff: 5 * time.Minute,
	})
	node := readyNode("n1", v1.ConditionUnknown)
	throttled := errors.New("HTTP 429")
	for _, step := range []struct {
		at  time.Duration
		err error
	}{
		{0, nodehealth.ErrInstanceNotFound},
		{5 * time.Second, throttled},
		{10 * time.Second, nodehealth.ErrInstanceNotFound},
		{20 * time.Second, nodehealth.ErrInstanceNotFound},
		{60 * time.Second, nodehealth.ErrInstanceNotFound},
	} {
		d := orphans.Observe(at(step.at), node, nodehealth.ClassifyExistence(false, step.err))
		fmt.Printf("at %v: delete=%v reason=%v next=%s\n", step.at, d.Delete, d.Reason, secs(d.NextCheck))
	}
	// Output:
	// at 0s: delete=false reason=AwaitingConfirmations next=0s
	// at 5s: delete=false reason=CloudUnknown next=10s
	// at 10s: delete=false reason=AwaitingConfirmations next=10s
	// at 20s: delete=false reason=AwaitingAge next=60s
	// at 1m0s: delete=true reason=NotFound next=60s
}

// A controller author times their own agent's Lease (in their own
// namespace) with ObserveLease: no Node object, no status to write, and
// Expired marks the one pass on which the heartbeat was first found stale.
func ExampleTracker_ObserveLease() {
	beats, _ := nodehealth.NewTracker(nodehealth.Config{GracePeriod: 40 * time.Second, StartupGracePeriod: time.Minute})
	renewed := func(t time.Time) *coordinationv1.Lease {
		holder := "agent-0"
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "acme-system", Name: "acme-agent-0"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &metav1.MicroTime{Time: t}},
		}
	}
	// The agent renews every 10s until 30s, then stops.
	for s := time.Duration(0); s <= 90*time.Second; s += 10 * time.Second {
		l := renewed(at(min(s, 30*time.Second)))
		res, _ := beats.ObserveLease(at(s), "acme-system/acme-agent-0", l)
		if res.Expired {
			fmt.Printf("%s: expired (deadline %s), restart the agent\n", secs(at(s)), secs(res.Deadline))
		}
	}
	next, ok := beats.NextDeadline()
	fmt.Println("next deadline:", ok, next.IsZero())
	// Output:
	// 80s: expired (deadline 70s), restart the agent
	// next deadline: false true
}

// NextDeadline is when to wake up for the next node that may go stale: one
// nanosecond after the earliest Deadline, since a node is stale strictly
// after it.
func ExampleTracker_NextDeadline() {
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	health.Observe(at(0), readyNode("a", v1.ConditionTrue), nil)
	health.Observe(at(0), readyNode("b", v1.ConditionTrue), lease("b", at(0)))
	health.Observe(at(20*time.Second), readyNode("b", v1.ConditionTrue), lease("b", at(20*time.Second)))
	next, _ := health.NextDeadline()
	fmt.Println("wake at", secs(next)) // a's deadline: 0s + 50s

	res, _ := health.Observe(next, readyNode("a", v1.ConditionTrue), nil)
	fmt.Println("a stale:", res.Stale)
	next, _ = health.NextDeadline()
	fmt.Println("wake at", secs(next)) // a left the set; b's deadline: 20s + 50s
	// Output:
	// wake at 50.000000001s
	// a stale: true
	// wake at 70.000000001s
}

// ExampleTracker_ObserveHandle keeps a Handle in the caller's own per-node
// state, so that each pass finds the node's record without a lookup by
// name. The decisions are Observe's.
func ExampleTracker_ObserveHandle() {
	health, _ := nodehealth.NewTracker(nodehealth.DefaultConfig())
	type nodeState struct {
		node   *v1.Node
		health nodehealth.Handle
	}
	states := []*nodeState{{node: readyNode("a", v1.ConditionTrue)}, {node: readyNode("b", v1.ConditionTrue)}}
	for _, now := range []time.Time{at(0), at(40 * time.Second), at(60 * time.Second)} {
		for _, s := range states {
			l := lease(s.node.Name, now) // a renews its Lease, b stopped at 0s
			if s.node.Name == "b" {
				l = lease("b", epoch)
			}
			res, err := health.ObserveHandle(now, &s.health, s.node, l)
			if err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Printf("%s %s: stale=%v write=%v\n", secs(now), s.node.Name, res.Stale, res.StatusUpdate != nil)
		}
	}
	// Output:
	// 0s a: stale=false write=false
	// 0s b: stale=false write=false
	// 40s a: stale=false write=false
	// 40s b: stale=false write=false
	// 60s a: stale=false write=false
	// 60s b: stale=true write=true
}
