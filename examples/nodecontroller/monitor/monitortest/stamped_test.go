package monitortest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
)

// run drives a Monitor over a cluster of nodes n0..n2 with pods per node
// pods each, added with AddPod or stamped: n0's kubelet stops at t=0 (its
// pods are marked not ready, then evicted after 300s), n1's stops at 100s
// and comes back at 200s (its pods marked not ready, then Ready again), n2
// stays. It returns the Monitor's events, the evictions, the counts and
// n1's pods at the end.
func run(t *testing.T, stamped bool, pods int) ([]monitor.Event, []types.NamespacedName, monitortest.Counts, []*v1.Pod) {
	t.Helper()
	return runReuse(t, stamped, false, pods)
}

// runReuse is run, with Cluster.ReuseEventPods(reuse).
func runReuse(t *testing.T, stamped, reuse bool, pods int) ([]monitor.Event, []types.NamespacedName, monitortest.Counts, []*v1.Pod) {
	t.Helper()
	c := monitortest.New(epoch)
	c.ReuseEventPods(reuse)
	ctx := context.Background()
	tmpl := pod("", "", epoch) // one template for every node
	for _, n := range []string{"n0", "n1", "n2"} {
		c.AddNode(ctx, node(n, "z", epoch), monitortest.NewLease(n, epoch))
		if stamped {
			c.AddStampedPods(ctx, n, tmpl, pods, func(i int) (string, types.UID) {
				name := fmt.Sprintf("p-%s-%d", n, i)
				return name, types.UID("uid-" + name)
			})
			continue
		}
		for i := range pods {
			c.AddPod(ctx, pod(fmt.Sprintf("p-%s-%d", n, i), n, epoch))
		}
	}
	m, events := attach(t, ctx, c)
	for step := range 4500 { // 450s in 100ms steps
		d := time.Duration(step) * 100 * time.Millisecond
		now := epoch.Add(d)
		c.SetNow(now)
		if d%(10*time.Second) == 0 {
			for _, n := range []string{"n1", "n2"} {
				if n == "n1" && d >= 100*time.Second && d < 200*time.Second {
					continue
				}
				c.RenewLease(n, now)
			}
		}
		if d == 200*time.Second {
			c.PostNodeStatus(ctx, "n1", v1.ConditionTrue, now)
			c.SetPodsReady(ctx, "n1", now)
		}
		if d%(5*time.Second) == 0 {
			m.MonitorPass(ctx, now)
		}
		m.TaintPass(ctx, now)
		m.EvictionPass(ctx, now)
	}
	return *events, c.Evicted(), c.Counts(), c.ListPodsOnNode("n1")
}

// TestStampedPodsAsAdded: pods stamped from a template behave exactly as
// the same pods added one by one: the Monitor sees the same events,
// evicts the same pods, and the pods read back are equal.
func TestStampedPodsAsAdded(t *testing.T) {
	events, evicted, counts, n1 := run(t, false, 3)
	sEvents, sEvicted, sCounts, sN1 := run(t, true, 3)
	// n1's pods, made Ready by its kubelet at 200s before the next pass
	// has seen n1 Ready, are not marked again: a status update reaches no
	// Monitor (upstream's podUpdated queues a pod only when its node is set
	// or changes).
	if len(evicted) != 3 || counts.PodsMarkedNotReady != 6 || counts.PodsMarkedReady != 3 {
		t.Fatalf("added pods: %d evicted, counts %+v; want 3 evicted, 6 marked not ready (n0's and n1's, once each), 3 ready again", len(evicted), counts)
	}
	for _, p := range n1 {
		if !podReady(p) {
			t.Errorf("n1's pod %s not Ready at the end, want Ready (its kubelet put Ready back at 200s)", p.Name)
		}
	}
	if !reflect.DeepEqual(sEvents, events) {
		t.Errorf("stamped pods' events = %v\nwant %v", sEvents, events)
	}
	if !reflect.DeepEqual(sEvicted, evicted) || sCounts != counts {
		t.Errorf("stamped pods: evicted %v, counts %+v; want %v, %+v", sEvicted, sCounts, evicted, counts)
	}
	if !reflect.DeepEqual(sN1, n1) {
		t.Errorf("stamped n1 pods = %v\nwant %v", sN1, n1)
	}
}

// TestStampedPodsReadsAndReplacement: Pod materializes a stamped pod,
// ListPodsOnNode lists a node's added pods then its stamped ones, AddPod
// replaces a stamped pod of the
// same key, and an evicted one is gone.
func TestStampedPodsReadsAndReplacement(t *testing.T) {
	c := monitortest.New(epoch)
	ctx := context.Background()
	c.AddNode(ctx, node("n0", "z", epoch), nil)
	c.AddPod(ctx, pod("added", "n0", epoch))
	c.AddStampedPods(ctx, "n0", pod("", "", epoch), 3, func(i int) (string, types.UID) {
		return fmt.Sprintf("s%d", i), types.UID(fmt.Sprintf("uid-s%d", i))
	})
	names := func() []string {
		var out []string
		for _, p := range c.ListPodsOnNode("n0") {
			out = append(out, p.Name+"/"+string(p.UID))
		}
		return out
	}
	if got, want := names(), []string{"added/uid-added", "s0/uid-s0", "s1/uid-s1", "s2/uid-s2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ListPodsOnNode = %v, want %v", got, want)
	}
	if p := c.Pod(types.NamespacedName{Namespace: "default", Name: "s1"}); p == nil || p.UID != "uid-s1" || p.Spec.NodeName != "n0" {
		t.Errorf("Pod(s1) = %v, want the stamped pod", p)
	}
	c.AddPod(ctx, pod("s1", "n0", epoch)) // replaces the stamped s1
	if err := c.EvictPod(ctx, types.NamespacedName{Namespace: "default", Name: "s0"}, "uid-s0", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.EvictPod(ctx, types.NamespacedName{Namespace: "default", Name: "s0"}, "", nil); err == nil {
		t.Error("EvictPod(s0) twice = nil, want not found")
	}
	if err := c.EvictPod(ctx, types.NamespacedName{Namespace: "default", Name: "s2"}, "uid-other", nil); err == nil {
		t.Error("EvictPod(s2, wrong UID) = nil, want a conflict")
	}
	if got, want := names(), []string{"added/uid-added", "s1/uid-s1", "s2/uid-s2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListPodsOnNode after replacing s1 and evicting s0 = %v, want %v", got, want)
	}
}

// TestStampedPodMemory: a stamped pod costs the cluster about 75 bytes,
// its name and index slot included (147 before stamps held no pointers),
// against about 1.3 KB for a v1.Pod.
func TestStampedPodMemory(t *testing.T) {
	const nodes, perNode = 1000, 30
	names := make([]string, perNode)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%02d", i)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	nodeNames := make([]string, nodes)
	for i := range nodeNames {
		nodeNames[i] = fmt.Sprintf("n%04d", i)
	}
	tmpl := pod("", "", epoch)
	before := heap()
	c := monitortest.New(epoch)
	for _, n := range nodeNames {
		c.AddStampedPods(context.Background(), n, tmpl, perNode, func(i int) (string, types.UID) {
			return n + names[i], ""
		})
	}
	per := float64(heap()-before) / (nodes * perNode)
	runtime.KeepAlive(c)
	t.Logf("%.0f bytes a stamped pod", per)
	if per > 100 {
		t.Errorf("a stamped pod costs %.0f bytes, want at most 100", per)
	}
}

// TestReuseEventPods: with ReuseEventPods, the Monitor sees the same
// events, evicts the same pods and reads back the same pods; the pod
// events (Sync's: status writes forward none) carry the same contents, in
// objects reused from node to node.
func TestReuseEventPods(t *testing.T) {
	events, evicted, counts, n1 := runReuse(t, true, false, 3)
	rEvents, rEvicted, rCounts, rN1 := runReuse(t, true, true, 3)
	if !reflect.DeepEqual(rEvents, events) || !reflect.DeepEqual(rEvicted, evicted) || rCounts != counts {
		t.Errorf("reusing: events %v, evicted %v, counts %+v\nwant %v, %v, %+v", rEvents, rEvicted, rCounts, events, evicted, counts)
	}
	if !reflect.DeepEqual(rN1, n1) {
		t.Errorf("reusing: n1's pods = %v, want %v", rN1, n1)
	}

	sent := func(reuse bool) (pods []v1.Pod, objects int) {
		c := monitortest.New(epoch)
		c.ReuseEventPods(reuse)
		ctx := context.Background()
		for _, n := range []string{"n0", "n1"} {
			c.AddNode(ctx, node(n, "z", epoch), nil)
			c.AddStampedPods(ctx, n, pod("", "", epoch), 3, func(i int) (string, types.UID) {
				return fmt.Sprint("p", n, i), types.UID(fmt.Sprint("uid-p", n, i))
			})
		}
		r := &podRecorder{seen: map[*v1.Pod]bool{}}
		c.Attach(r)
		c.Sync(ctx)
		if err := c.UpdatePodStatus(ctx, c.Pod(types.NamespacedName{Namespace: "default", Name: "pn01"}), &v1.PodStatus{Phase: v1.PodFailed}); err != nil {
			t.Fatal(err)
		}
		c.SetPodsReady(ctx, "n0", epoch.Add(time.Second))
		return r.pods, len(r.seen)
	}
	fresh, objects := sent(false)
	reused, rObjects := sent(true)
	if !reflect.DeepEqual(reused, fresh) {
		t.Errorf("reusing, the pods sent = %v\nwant %v", reused, fresh)
	}
	// Sync reuses its objects from node to node; the status write and
	// SetPodsReady send nothing.
	if len(fresh) != 6 || objects != len(fresh) || rObjects != 3 {
		t.Errorf("%d pod events in %d objects, %d reusing; want 6 (synced; none for the status writes) in 6, 3 reusing", len(fresh), objects, rObjects)
	}
}

// podReady reports whether p's Ready condition is True.
func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// TestPodStatusUpdatesNotForwarded: UpdatePodStatus and SetPodsReady, on
// plain and stamped pods, store the status and count it
// (Counts.PodsMarkedNotReady, Counts.PodsMarkedReady) but forward no
// PodChanged: upstream's node lifecycle controller queues a pod (podUpdated)
// only when it is added or its spec.nodeName is set or changes, so a
// kubelet putting Ready=True back while the controller still holds its node
// not ready does not get it marked Ready=False again.
func TestPodStatusUpdatesNotForwarded(t *testing.T) {
	for _, stamped := range []bool{false, true} {
		t.Run(fmt.Sprint("stamped=", stamped), func(t *testing.T) {
			c := monitortest.New(epoch)
			ctx := context.Background()
			c.AddNode(ctx, node("n0", "z", epoch), nil)
			names := []string{"p0", "p1"}
			if stamped {
				c.AddStampedPods(ctx, "n0", pod("", "", epoch), len(names), func(i int) (string, types.UID) {
					return names[i], types.UID("uid-" + names[i])
				})
			} else {
				for _, n := range names {
					c.AddPod(ctx, pod(n, "n0", epoch))
				}
			}
			r := &podRecorder{seen: map[*v1.Pod]bool{}}
			c.Attach(r)
			for _, n := range names {
				key := types.NamespacedName{Namespace: "default", Name: n}
				p := c.Pod(key)
				st := p.Status.DeepCopy()
				st.Conditions[0].Status = v1.ConditionFalse
				if err := c.UpdatePodStatus(ctx, p, st); err != nil {
					t.Fatal(err)
				}
				if podReady(c.Pod(key)) {
					t.Errorf("%s Ready after UpdatePodStatus(Ready=False), want the status stored", n)
				}
			}
			if got := c.Counts().PodsMarkedNotReady; got != len(names) {
				t.Errorf("Counts().PodsMarkedNotReady = %d, want %d", got, len(names))
			}
			if n := c.SetPodsReady(ctx, "n0", epoch.Add(time.Second)); n != len(names) {
				t.Errorf("SetPodsReady = %d, want %d", n, len(names))
			}
			if got := c.Counts().PodsMarkedReady; got != len(names) {
				t.Errorf("Counts().PodsMarkedReady = %d, want %d", got, len(names))
			}
			for _, p := range c.ListPodsOnNode("n0") {
				if !podReady(p) {
					t.Errorf("%s not Ready after SetPodsReady", p.Name)
				}
			}
			if len(r.pods) != 0 {
				t.Errorf("the receiver got %d PodChanged for status updates, want none: %v", len(r.pods), r.pods)
			}
		})
	}
}

// podRecorder records copies of the pods of PodChanged events, and the
// objects they came in.
type podRecorder struct {
	pods []v1.Pod
	seen map[*v1.Pod]bool
}

func (r *podRecorder) NodeChanged(context.Context, time.Time, *v1.Node) {}
func (r *podRecorder) NodeDeleted(string)                               {}
func (r *podRecorder) PodDeleted(types.NamespacedName)                  {}
func (r *podRecorder) PodChanged(_ context.Context, _ time.Time, p *v1.Pod) {
	r.pods = append(r.pods, *p.DeepCopy())
	r.seen[p] = true
}

// TestStampIndexModel: stamped pods added (over and over, in several
// namespaces, UIDs that end with the name and UIDs that do not), replaced
// by plain pods and evicted are found as a map of key to UID says, through
// the index's growth and its deleted slots.
func TestStampIndexModel(t *testing.T) {
	c := monitortest.New(epoch)
	c.ReserveStamped(100) // then grown
	ctx := context.Background()
	model := map[types.NamespacedName]types.UID{}
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() types.NamespacedName {
		return types.NamespacedName{Namespace: []string{"a", "b"}[rnd.IntN(2)], Name: fmt.Sprint("p", rnd.IntN(300))}
	}
	for step := range 3000 {
		switch op := rnd.IntN(10); {
		case op < 5: // a run of stamps, names possibly repeated within it
			ns, n := []string{"a", "b"}[rnd.IntN(2)], 1+rnd.IntN(20)
			keys := make([]types.NamespacedName, n)
			uids := make([]types.UID, n)
			for i := range keys {
				keys[i] = key()
				keys[i].Namespace = ns
				uids[i] = types.UID(fmt.Sprint("uid-", step, "-", keys[i].Name))
				if rnd.IntN(2) == 0 {
					uids[i] = types.UID(fmt.Sprint("other-", step, "-", i))
				}
				model[keys[i]] = uids[i]
			}
			tmpl := pod("", "", epoch)
			tmpl.Namespace = ns
			c.AddStampedPods(ctx, fmt.Sprint("n", rnd.IntN(5)), tmpl, n, func(i int) (string, types.UID) { return keys[i].Name, uids[i] })
		case op < 6: // replaced by a plain pod
			k := key()
			p := pod(k.Name, "n9", epoch)
			p.Namespace = k.Namespace
			c.AddPod(ctx, p)
			model[k] = p.UID
		default: // evicted
			k := key()
			err := c.EvictPod(ctx, k, "", nil)
			if _, ok := model[k]; ok != (err == nil) {
				t.Fatalf("step %d: EvictPod(%v) = %v, model has it: %v", step, k, err, ok)
			}
			delete(model, k)
		}
	}
	for _, ns := range []string{"a", "b"} {
		for i := range 300 {
			k := types.NamespacedName{Namespace: ns, Name: fmt.Sprint("p", i)}
			p := c.Pod(k)
			if uid, ok := model[k]; ok != (p != nil) || (ok && (p.UID != uid || p.Name != k.Name || p.Namespace != ns)) {
				t.Errorf("Pod(%v) = %v, want UID %q (present: %v)", k, p, uid, ok)
			}
		}
	}
	listed := 0
	for i := range 10 {
		listed += len(c.ListPodsOnNode(fmt.Sprint("n", i)))
	}
	if listed != len(model) {
		t.Errorf("%d pods listed on the nodes, want %d", listed, len(model))
	}
}

// TestStampedPodUIDs: every UID a stamped pod is given reads back as
// given, whether canonical UUIDs numbered one after the other (kept as a
// base), canonical ones out of order (16 bytes each), or any other string.
func TestStampedPodUIDs(t *testing.T) {
	ctx := context.Background()
	uuid := func(n int) types.UID { return types.UID(fmt.Sprintf("6f1c2a34-8b9d-4e5f-a6b7-%012x", n)) }
	for _, tc := range []struct {
		name string
		uids []types.UID
	}{
		{"numbered", []types.UID{uuid(7), uuid(8), uuid(9), uuid(10)}},
		{"carry", []types.UID{"6f1c2a34-8b9d-4e5f-ffff-fffffffffffe", "6f1c2a34-8b9d-4e5f-ffff-ffffffffffff", "6f1c2a34-8b9d-4e5f-0000-000000000000"}},
		{"out of order", []types.UID{uuid(7), uuid(8), uuid(3), uuid(9)}},
		{"mixed", []types.UID{uuid(1), "uid-b", uuid(3), "", "6F1C2A34-8B9D-4E5F-A6B7-000000000005", uuid(5)}},
		{"others", []types.UID{"uid-a", "uid-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := monitortest.New(epoch)
			c.AddNode(ctx, node("n0", "z", epoch), monitortest.NewLease("n0", epoch))
			c.AddStampedPods(ctx, "n0", pod("", "", epoch), len(tc.uids), func(i int) (string, types.UID) {
				return fmt.Sprintf("p%d", i), tc.uids[i]
			})
			for i, want := range tc.uids {
				p := c.Pod(types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("p%d", i)})
				if p == nil || p.UID != want {
					t.Errorf("pod p%d: %v, want UID %q", i, p, want)
				}
			}
		})
	}
}
