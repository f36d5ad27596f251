package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

func init() {
	// The fake clientset's watchers panic when more than DefaultChanSize
	// events are waiting for the informer ("channel full"). A real API
	// server has no such limit; give the informers room.
	watch.DefaultChanSize = 1 << 16
}

var (
	nodesGVR  = v1.SchemeGroupVersion.WithResource("nodes")
	podsGVR   = v1.SchemeGroupVersion.WithResource("pods")
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
)

// serverSemantics makes the fake clientset behave like an API server where
// the controller relies on it, for Nodes and Pods: every write gets a new
// resourceVersion; an update or patch that carries a resourceVersion other
// than the stored one fails with a conflict; a status write changes only the
// status and a main-resource write never the status; a delete honours its
// UID precondition. The plain fake does none of this (it stores objects
// as given), so without it a blind write or a lost taint would go unseen.
type serverSemantics struct {
	tracker k8stesting.ObjectTracker
	rv      atomic.Int64
}

func installServerSemantics(client *fake.Clientset) *serverSemantics {
	s := &serverSemantics{tracker: client.Tracker()}
	s.rv.Store(1000)
	for _, res := range []string{"nodes", "pods", "leases"} {
		client.PrependReactor("create", res, s.create)
		client.PrependReactor("update", res, s.update)
		client.PrependReactor("patch", res, s.patch)
		client.PrependReactor("delete", res, s.delete)
	}
	return s
}

func (s *serverSemantics) nextRV() string { return strconv.FormatInt(s.rv.Add(1), 10) }

func (s *serverSemantics) create(a k8stesting.Action) (bool, runtime.Object, error) {
	obj := a.(k8stesting.CreateAction).GetObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, nil, nil
	}
	m.SetResourceVersion(s.nextRV())
	if m.GetUID() == "" {
		m.SetUID(types.UID("uid-" + m.GetName()))
	}
	return false, nil, nil // the tracker stores the object as changed here
}

func (s *serverSemantics) current(gvr schema.GroupVersionResource, ns, name string) (runtime.Object, metav1.Object, error) {
	cur, err := s.tracker.Get(gvr, ns, name)
	if err != nil {
		return nil, nil, err
	}
	m, err := meta.Accessor(cur)
	return cur, m, err
}

func conflict(gvr schema.GroupVersionResource, name, have, want string) error {
	return apierrors.NewConflict(gvr.GroupResource(), name,
		fmt.Errorf("the object has been modified (resourceVersion %s, write based on %s)", have, want))
}

// merge returns the object to store for a write of obj over cur: only the
// status for the status subresource, everything but the status otherwise.
func merge(cur, obj runtime.Object, status bool) runtime.Object {
	switch o := obj.(type) {
	case *v1.Node:
		out := cur.(*v1.Node).DeepCopy()
		if status {
			out.Status = o.Status
		} else {
			st := out.Status
			out = o.DeepCopy()
			out.Status = st
		}
		return out
	case *v1.Pod:
		out := cur.(*v1.Pod).DeepCopy()
		if status {
			out.Status = o.Status
		} else {
			st := out.Status
			out = o.DeepCopy()
			out.Status = st
		}
		return out
	}
	return obj
}

func (s *serverSemantics) update(a k8stesting.Action) (bool, runtime.Object, error) {
	ua := a.(k8stesting.UpdateAction)
	gvr := ua.GetResource()
	m, err := meta.Accessor(ua.GetObject())
	if err != nil {
		return false, nil, nil
	}
	cur, cm, err := s.current(gvr, ua.GetNamespace(), m.GetName())
	if err != nil {
		return true, nil, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return true, nil, conflict(gvr, m.GetName(), cm.GetResourceVersion(), rv)
	}
	return s.store(gvr, ua.GetNamespace(), merge(cur, ua.GetObject(), ua.GetSubresource() == "status"))
}

func (s *serverSemantics) patch(a k8stesting.Action) (bool, runtime.Object, error) {
	pa := a.(k8stesting.PatchAction)
	gvr := pa.GetResource()
	cur, cm, err := s.current(gvr, pa.GetNamespace(), pa.GetName())
	if err != nil {
		return true, nil, err
	}
	raw, err := json.Marshal(cur)
	if err != nil {
		return true, nil, err
	}
	var out []byte
	switch pa.GetPatchType() {
	case types.StrategicMergePatchType:
		out, err = strategicpatch.StrategicMergePatch(raw, pa.GetPatch(), cur.DeepCopyObject())
	case types.MergePatchType:
		out, err = controller.ApplyMergePatch(raw, pa.GetPatch())
	default:
		return true, nil, apierrors.NewBadRequest("test server: only strategic-merge and JSON merge patches")
	}
	if err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	zero := cur.DeepCopyObject()
	switch z := zero.(type) {
	case *v1.Node:
		*z = v1.Node{}
	case *v1.Pod:
		*z = v1.Pod{}
	case *coordinationv1.Lease:
		*z = coordinationv1.Lease{}
	}
	if err := json.Unmarshal(out, zero); err != nil {
		return true, nil, err
	}
	pm, _ := meta.Accessor(zero)
	if rv := pm.GetResourceVersion(); rv != cm.GetResourceVersion() {
		return true, nil, conflict(gvr, pa.GetName(), cm.GetResourceVersion(), rv)
	}
	if pm.GetUID() != cm.GetUID() {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: gvr.Resource}, pa.GetName(), nil)
	}
	return s.store(gvr, pa.GetNamespace(), merge(cur, zero, pa.GetSubresource() == "status"))
}

func (s *serverSemantics) store(gvr schema.GroupVersionResource, ns string, obj runtime.Object) (bool, runtime.Object, error) {
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(s.nextRV())
	if err := s.tracker.Update(gvr, obj, ns); err != nil {
		return true, nil, err
	}
	return true, obj.DeepCopyObject(), nil
}

func (s *serverSemantics) delete(a k8stesting.Action) (bool, runtime.Object, error) {
	da := a.(k8stesting.DeleteActionImpl)
	_, cm, err := s.current(da.GetResource(), da.GetNamespace(), da.GetName())
	if err != nil {
		return true, nil, err
	}
	if p := da.DeleteOptions.Preconditions; p != nil && p.UID != nil && *p.UID != cm.GetUID() {
		return true, nil, apierrors.NewConflict(da.GetResource().GroupResource(), da.GetName(),
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, cm.GetUID()))
	}
	return false, nil, nil
}

// fixture runs a Controller on a fake clientset with server semantics and a
// fake clock, without Run: the test drives passes at chosen virtual times.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	server *serverSemantics
	clock  *clocktesting.FakeClock
	c      *controller.Controller
	stop   func() // stops c
	sel    labels.Selector

	mu     sync.Mutex
	events []monitor.Event
}

// testConfig is the default policy with one monitor worker (deterministic
// order) and a fast conflict backoff.
func testConfig() controller.Config {
	cfg := controller.DefaultConfig()
	cfg.Monitor.Workers = 1
	cfg.Workers = 1
	cfg.ConflictBackoff.Duration = time.Millisecond
	return cfg
}

func newFixture(t *testing.T, cfg controller.Config, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset()
	f := &fixture{t: t, client: client, server: installServerSemantics(client), clock: clocktesting.NewFakeClock(testutil.Epoch)}
	f.ctx = klog.NewContext(context.Background(), klog.Logger{}) // quiet
	for _, o := range objs {
		f.create(o)
	}
	f.start(cfg)
	return f
}

// start creates and starts a controller on f's clientset and clock.
func (f *fixture) start(cfg controller.Config) {
	f.t.Helper()
	prev := cfg.OnEvent
	cfg.OnEvent = func(e monitor.Event) {
		f.mu.Lock()
		f.events = append(f.events, e)
		f.mu.Unlock()
		if prev != nil {
			prev(e)
		}
	}
	c, err := controller.New(f.client, f.clock, cfg)
	if err != nil {
		f.t.Fatalf("New() = %v", err)
	}
	if f.sel, err = labels.Parse(cfg.NodeSelector); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	if err := c.Start(ctx); err != nil {
		f.t.Fatalf("Start() = %v", err)
	}
	f.stop = func() {
		cancel()
		c.Shutdown()
	}
	f.t.Cleanup(f.stop)
	f.c = c
	f.settle()
}

func (f *fixture) create(o runtime.Object) {
	f.t.Helper()
	var err error
	switch o := o.(type) {
	case *v1.Node:
		_, err = f.client.CoreV1().Nodes().Create(f.ctx, o, metav1.CreateOptions{})
	case *v1.Pod:
		_, err = f.client.CoreV1().Pods(o.Namespace).Create(f.ctx, o, metav1.CreateOptions{})
	case *coordinationv1.Lease:
		_, err = f.client.CoordinationV1().Leases(o.Namespace).Create(f.ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("unsupported %T", o)
	}
	if err != nil {
		f.t.Fatalf("create %T: %v", o, err)
	}
}

// inSync reports whether the controller's caches show every Node, Lease and
// bound Pod at the resourceVersion the clientset holds.
func (f *fixture) inSync() bool {
	cl := f.c.Cluster()
	nodes, err := f.client.Tracker().List(nodesGVR, v1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		f.t.Fatal(err)
	}
	var nl []v1.Node
	for _, n := range nodes.(*v1.NodeList).Items {
		if f.sel.Matches(labels.Set(n.Labels)) {
			nl = append(nl, n)
		}
	}
	if len(cl.ListNodes()) != len(nl) {
		return false
	}
	for _, n := range nl {
		if c := cl.GetNode(n.Name); c == nil || c.ResourceVersion != n.ResourceVersion {
			return false
		}
		if l, err := f.client.Tracker().Get(leasesGVR, v1.NamespaceNodeLease, n.Name); err == nil {
			if c := cl.GetLease(n.Name); c == nil || c.ResourceVersion != l.(*coordinationv1.Lease).ResourceVersion {
				return false
			}
		}
	}
	pods, err := f.client.Tracker().List(podsGVR, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		f.t.Fatal(err)
	}
	selected := map[string]bool{}
	for _, n := range nl {
		selected[n.Name] = true
	}
	want := map[string]string{}
	for _, p := range pods.(*v1.PodList).Items {
		if selected[p.Spec.NodeName] {
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
	}
	got := 0
	for _, n := range nl {
		for _, p := range cl.ListPodsOnNode(n.Name) {
			if want[p.Namespace+"/"+p.Name] != p.ResourceVersion {
				return false
			}
			got++
		}
	}
	return got == len(want)
}

// settle waits (briefly, in real time) until the informers have caught up
// with the clientset and every queued event has been handled, twice in a
// row a few milliseconds apart (event handlers run just after the cache is
// updated).
func (f *fixture) settle() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	quiet := 0
	for quiet < 2 {
		if time.Now().After(deadline) {
			f.t.Fatalf("informers did not catch up with the clientset")
		}
		if f.c.ProcessEvents(f.ctx) == 0 && f.inSync() {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(time.Millisecond)
	}
}

// eventually polls cond, handling events and settling in between, for up to
// 10s of real time. The fake clock does not move.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		f.c.ProcessEvents(f.ctx)
		time.Sleep(2 * time.Millisecond)
	}
}

// pass runs what Run would at the current virtual time: a monitor pass,
// then tainting and eviction passes until nothing more happens.
func (f *fixture) pass(monitorPass bool) {
	f.t.Helper()
	f.settle()
	if monitorPass {
		f.c.MonitorPass(f.ctx)
		f.settle()
	}
	for range 3 {
		f.c.TaintPass(f.ctx)
		f.settle()
	}
}

// at is the elapsed virtual time.
func (f *fixture) at() time.Duration { return f.clock.Now().Sub(testutil.Epoch) }

// advance steps the clock to elapsed time end in TaintPeriod steps, as Run
// would: a monitor pass at every multiple of the monitor period (before it,
// live(t) may play kubelets), and a tainting pass in between whenever the
// Monitor's next deadline has come.
func (f *fixture) advance(end time.Duration, live func(at time.Duration)) {
	f.t.Helper()
	cfg := f.c.Monitor().Config()
	for f.at() < end {
		f.clock.Step(cfg.TaintPeriod)
		at := f.at()
		if at%cfg.MonitorPeriod == 0 {
			if live != nil {
				live(at)
			}
			f.pass(true)
			continue
		}
		f.c.ProcessEvents(f.ctx)
		if d, ok := f.c.Monitor().NextDeadline(); ok && !d.After(f.clock.Now()) {
			f.pass(false)
		}
	}
}

func (f *fixture) node(name string) *v1.Node {
	f.t.Helper()
	n, err := f.client.Tracker().Get(nodesGVR, "", name)
	if err != nil {
		f.t.Fatalf("node %s: %v", name, err)
	}
	return n.(*v1.Node)
}

func (f *fixture) pod(name string) *v1.Pod {
	f.t.Helper()
	p, err := f.client.Tracker().Get(podsGVR, "default", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("pod %s: %v", name, err)
	}
	return p.(*v1.Pod)
}

// renew renews the node's Lease at the current virtual time (the kubelet).
func (f *fixture) renew(name string) {
	f.t.Helper()
	l, err := f.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("lease %s: %v", name, err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: f.clock.Now()}
	if _, err := f.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(f.ctx, l, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("renew lease %s: %v", name, err)
	}
}

// setReady writes the node's Ready condition as the kubelet would.
func (f *fixture) setReady(name string, s v1.ConditionStatus) {
	f.t.Helper()
	n := f.node(name).DeepCopy()
	now := f.clock.Now()
	testutil.WithReady(n, s, now, now)
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("kubelet status %s: %v", name, err)
	}
}

// first returns the elapsed time of the first event of kind matching node,
// pod and detail (empty matches any), or -1.
func (f *fixture) first(kind monitor.Kind, node, pod, detail string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		if e.Kind == kind && (node == "" || e.Node == node) && (pod == "" || e.Pod == pod) && (detail == "" || e.Detail == detail) {
			return e.At.Sub(testutil.Epoch)
		}
	}
	return -1
}

// actions returns the recorded client actions with the verb, resource and
// subresource given (empty subresource matches only the main resource).
func (f *fixture) actions(verb, resource, sub string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			out = append(out, a)
		}
	}
	return out
}

// Builders.

func readyNode(name, zone string) *v1.Node {
	n := testutil.WithReady(testutil.Node(name, testutil.Epoch.Add(-time.Hour)), v1.ConditionTrue, testutil.Epoch, testutil.Epoch.Add(-time.Hour))
	if zone != "" {
		testutil.WithZone(n, "region", zone)
	}
	n.UID = types.UID("uid-" + name)
	return n
}

func lease(node string) *coordinationv1.Lease {
	return testutil.Lease(node, testutil.Epoch)
}

// pod builds a Ready pod on node; withDefaults adds the admission's 300s
// tolerations after tol.
func pod(name, node string, withDefaults bool, tol ...v1.Toleration) *v1.Pod {
	p := testutil.WithTolerations(testutil.Pod("default", name, node), tol...)
	if withDefaults {
		p.Spec.Tolerations = taints.WithDefaultTolerations(p.Spec.Tolerations, taints.DefaultTolerationTime, taints.DefaultTolerationTime)
	}
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(testutil.Epoch)
	return p
}

func hasTaint(n *v1.Node, key string, effect v1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key && t.Effect == effect })
}

func podReady(p *v1.Pod) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status
		}
	}
	return ""
}

func nodeReady(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// runInBackground runs c.Run(ctx) on a goroutine of its own. stop cancels
// it and returns Run's error; calling it again returns the same error.
func runInBackground(ctx context.Context, c *controller.Controller) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	})
}
