package e2e

// The cloud node lifecycle controller (examples/cloudnode/controller) with
// its fake cloud (examples/cloudnode/fakecloud) against the real apiserver:
// the Azure VMSS scale-set deletion race (kubernetes/kubernetes#95288) as a
// running system. Each test's controller selects only the test's nodes (a
// lifecycle-e2e/cloudnode label) and writes through an audited transport:
// a node taint patch must carry metadata.resourceVersion and a node delete
// a UID precondition; any other write fails the test. Kubernetes Events go
// through the test's own client.
//
// The incident and shutdown tests run the controller with Run on the real
// clock (monitor period 100 ms); the outage and re-creation tests drive
// Pass on a fake clock, so 30 minutes of controller time take about a
// second and every decision happens at a known instant.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
)

var everythingSel = labels.Everything()

const (
	cnSelectorKey = "lifecycle-e2e/cloudnode"
	cnPeriod      = 100 * time.Millisecond
)

// cnEnv is one test's nodes, fake cloud and controllers.
type cnEnv struct {
	t     *testing.T
	c     *cluster.Cluster
	cs    kubernetes.Interface // the test's admin client (not audited)
	clk   clock.WithTicker
	cloud *fakecloud.Cloud
	audit *cnAudit
	rec   record.EventRecorder
}

func newCNEnv(t *testing.T, clk clock.WithTicker, cloudCfg fakecloud.Config) *cnEnv {
	t.Helper()
	c := env.Cluster(t)
	e := &cnEnv{t: t, c: c, cs: c.Clientset(t), clk: clk, cloud: fakecloud.New(clk, cloudCfg), audit: &cnAudit{}}
	t.Cleanup(func() { // registered first: runs after every controller stopped
		for _, v := range e.audit.violations() {
			t.Errorf("blind write by the controller: %s", v)
		}
		t.Logf("controller writes: %s", e.audit.summary())
	})
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	e.rec = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name})
	return e
}

// config is the controller configuration for the nodes labelled sel.
func (e *cnEnv) config(sel string) controller.Config {
	cfg := controller.DefaultConfig()
	cfg.NodeSelector = cnSelectorKey + "=" + sel
	cfg.Recorder = e.rec
	cfg.ConflictBackoff.Duration = 10 * time.Millisecond
	return cfg
}

// addNode creates a node labelled sel whose instance is in scale set set,
// with the given Ready status, and its instance. The node is deleted when
// the test ends.
func (e *cnEnv) addNode(cloud *fakecloud.Cloud, sel, prefix, set string, ready v1.ConditionStatus) *v1.Node {
	t := e.t
	t.Helper()
	name := cluster.UniqueName(t, prefix)
	in, err := cloud.AddInstance(set, name, name, "zone-1")
	if err != nil {
		t.Fatal(err)
	}
	return e.createNode(name, sel, in.ProviderID(), ready)
}

func (e *cnEnv) createNode(name, sel, providerID string, ready v1.ConditionStatus) *v1.Node {
	t := e.t
	t.Helper()
	ctx := context.Background()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{cnSelectorKey: sel}},
		Spec:       v1.NodeSpec{ProviderID: providerID},
	}
	got, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(node %s) = %v", name, err)
	}
	t.Cleanup(func() {
		err := e.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: Delete(node %s) = %v", name, err)
		}
	})
	return e.setReady(got, ready)
}

func (e *cnEnv) setReady(n *v1.Node, s v1.ConditionStatus) *v1.Node {
	e.t.Helper()
	return setNodeReady(e.t, e.cs, n, s)
}

// controller returns a controller on an audited client, the env's clock
// and cloud (the env's unless given), started (informer synced) with a
// logger on t; it stops when the test ends.
func (e *cnEnv) controller(cfg controller.Config, cloud *fakecloud.Cloud) (*controller.Controller, context.Context) {
	t := e.t
	t.Helper()
	cs := auditedClient(t, e.c, e.audit.wrap)
	c, err := controller.New(cs, &fakecloud.Provider{API: cloud}, e.clk, cfg)
	if err != nil {
		t.Fatalf("controller.New() = %v", err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

// run runs c until the test ends.
func (e *cnEnv) run(c *controller.Controller, ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run() = %v", err)
		}
	})
}

// exists reports whether the node name exists with uid (any UID if empty).
func (e *cnEnv) exists(name string, uid types.UID) bool {
	e.t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return uid == "" || n.UID == uid
}

func (e *cnEnv) waitGone(what string, names ...string) {
	e.t.Helper()
	cluster.Eventually(e.t, waitTimeout, what, func(context.Context) (bool, error) {
		for _, n := range names {
			if e.exists(n, "") {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitCached waits until c's cache holds exactly the nodes by name and UID.
func waitCached(t *testing.T, c *controller.Controller, want map[string]types.UID) {
	t.Helper()
	cluster.Eventually(t, waitTimeout, fmt.Sprintf("the controller's cache holds %d nodes", len(want)), func(context.Context) (bool, error) {
		list, err := c.Lister().List(everythingSel)
		if err != nil || len(list) != len(want) {
			return false, err
		}
		for _, n := range list {
			if want[n.Name] != n.UID {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitDeletingNodeEvents waits for upstream's DeletingNode Event on each
// node, recorded as upstream records it: on {APIVersion: v1, Kind: Node,
// the node's name and UID}.
func (e *cnEnv) waitDeletingNodeEvents(nodes ...*v1.Node) {
	t := e.t
	t.Helper()
	for _, n := range nodes {
		sel := "involvedObject.kind=Node,involvedObject.name=" + n.Name + ",reason=" + controller.ReasonDeletingNode
		want := "Deleting node " + n.Name + " because it does not exist in the cloud provider"
		// The involvedObject upstream's MonitorNodes records.
		ref := v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
		var wrong []string // an Event recorded otherwise: no use waiting
		cluster.Eventually(t, waitTimeout, "DeletingNode Event on "+n.Name, func(ctx context.Context) (bool, error) {
			l, err := e.cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				return false, err
			}
			for _, ev := range l.Items {
				if ev.Type != v1.EventTypeNormal || ev.Message != want || ev.Source.Component != "cloud-node-lifecycle-controller" || ev.InvolvedObject != ref {
					wrong = append(wrong, fmt.Sprintf("type %s, message %q, source %q, involvedObject %+v", ev.Type, ev.Message, ev.Source.Component, ev.InvolvedObject))
				}
			}
			return len(l.Items) > 0, nil
		})
		for _, w := range wrong {
			t.Errorf("DeletingNode Event on %s: %s; want Normal, %q, cloud-node-lifecycle-controller, %+v", n.Name, w, want, ref)
		}
	}
}

// TestCloudNodeScaleSetDeleted is the incident: 3 nodes in set A (one
// Ready), 2 in set B. Set A is deleted (its instances at once, the set 1 s
// later, after which every question about its instances answers "parent
// not found"). A's NotReady nodes are deleted once 3 NotFound answers span
// 1 s, with upstream's DeletingNode Event; B's nodes stay; the Ready a3
// stays until it stops being Ready, then goes the same way.
func TestCloudNodeScaleSetDeleted(t *testing.T) {
	e := newCNEnv(t, clock.RealClock{}, fakecloud.Config{SetDeleteDelay: time.Second})
	sel := cluster.UniqueName(t, "cn")
	cfg := e.config(sel)
	cfg.MonitorPeriod = cnPeriod
	cfg.Policy.Confirmations, cfg.Policy.MinNotFoundAge = 3, time.Second
	cfg.Policy.UnknownBackoff, cfg.Policy.MaxUnknownBackoff = cnPeriod, time.Second
	a1 := e.addNode(e.cloud, sel, "a1", "A", v1.ConditionFalse)
	a2 := e.addNode(e.cloud, sel, "a2", "A", v1.ConditionUnknown)
	a3 := e.addNode(e.cloud, sel, "a3", "A", v1.ConditionTrue)
	b1 := e.addNode(e.cloud, sel, "b1", "B", v1.ConditionFalse)
	b2 := e.addNode(e.cloud, sel, "b2", "B", v1.ConditionTrue)
	c, ctx := e.controller(cfg, e.cloud)
	e.run(c, ctx)
	time.Sleep(3 * cnPeriod) // a few passes with every instance there: nothing happens
	for _, n := range []*v1.Node{a1, a2, a3, b1, b2} {
		if !e.exists(n.Name, n.UID) {
			t.Fatalf("node %s deleted while its instance exists", n.Name)
		}
	}

	deleted := time.Now()
	e.cloud.DeleteScaleSet("A")
	e.waitGone("a1 and a2 deleted", a1.Name, a2.Name)
	if d := time.Since(deleted); d < cfg.Policy.MinNotFoundAge {
		t.Errorf("a1, a2 deleted %v after the set, want at least MinNotFoundAge %v", d, cfg.Policy.MinNotFoundAge)
	}
	e.waitDeletingNodeEvents(a1, a2)
	time.Sleep(time.Second) // past the set's removal: "parent not found" from now on
	for _, n := range []*v1.Node{a3, b1, b2} {
		if !e.exists(n.Name, n.UID) {
			t.Fatalf("node %s deleted, want kept (Ready, or its instance exists)", n.Name)
		}
	}
	e.setReady(a3, v1.ConditionFalse)
	e.waitGone("a3 deleted once not Ready", a3.Name)
	e.waitDeletingNodeEvents(a3)
	time.Sleep(5 * cnPeriod)
	for _, n := range []*v1.Node{b1, b2} {
		if !e.exists(n.Name, n.UID) {
			t.Errorf("node %s of set B deleted, want kept", n.Name)
		}
	}
	st := c.Stats()
	t.Logf("stats: %+v; cloud calls: %v", st, e.cloud.Calls())
	if st.NodesDeleted != 3 || st.DeleteFailures != 0 {
		t.Errorf("NodesDeleted, DeleteFailures = %d, %d, want 3, 0", st.NodesDeleted, st.DeleteFailures)
	}
	if e.cloud.Calls()[fakecloud.CallKey{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultParentNotFound}] == 0 {
		t.Error("a3 was never answered \"parent not found\"; the test did not exercise it")
	}
}

// TestCloudNodeAPIOutage: set A is deleted as the cloud API starts failing
// every call for 30 minutes of controller time (a fake clock, a pass every
// 5 s as upstream). Our controller and one deciding as upstream does run
// side by side, each on its own 5 nodes (3 in A, 2 in B, all NotReady) and
// its own fake cloud. During the outage neither deletes a node; ours stays
// within its backoff budget (5 s doubling to 5 m: 11 calls per node) and
// makes at least 30x fewer calls. In the 10 minutes after, ours deletes
// A's nodes and upstream's leaves them, asking about each every 5 s.
func TestCloudNodeAPIOutage(t *testing.T) {
	const outage, after = 30 * time.Minute, 10 * time.Minute
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newCNEnv(t, clk, fakecloud.Config{SetDeleteDelay: time.Minute})
	type side struct {
		name  string
		cloud *fakecloud.Cloud
		c     *controller.Controller
		ctx   context.Context
		a, b  []*v1.Node
	}
	var sides []*side
	for _, upstream := range []bool{false, true} {
		s := &side{name: "lifecycle", cloud: e.cloud}
		if upstream {
			s.name, s.cloud = "upstream-style", fakecloud.New(clk, fakecloud.Config{SetDeleteDelay: time.Minute})
		}
		sel := cluster.UniqueName(t, "cn")
		cfg := e.config(sel)
		cfg.UpstreamStyle = upstream
		want := map[string]types.UID{}
		for i := range 5 {
			set := "A"
			if i >= 3 {
				set = "B"
			}
			n := e.addNode(s.cloud, sel, fmt.Sprintf("%s%d", strings.ToLower(set), i+1), set, v1.ConditionUnknown)
			want[n.Name] = n.UID
			if set == "A" {
				s.a = append(s.a, n)
			} else {
				s.b = append(s.b, n)
			}
		}
		s.c, s.ctx = e.controller(cfg, s.cloud)
		s.ctx = klog.NewContext(s.ctx, klog.Logger{}) // 1800 logged cloud errors would drown the report
		waitCached(t, s.c, want)
		sides = append(sides, s)
	}
	period := controller.DefaultConfig().MonitorPeriod
	runFor := func(d time.Duration) {
		for end := clk.Now().Add(d); clk.Now().Before(end); clk.Step(period) {
			for _, s := range sides {
				s.c.Pass(s.ctx)
			}
		}
	}
	for _, s := range sides {
		s.cloud.Fail(outage)
		s.cloud.DeleteScaleSet("A")
	}
	runFor(outage)
	var outageCalls []int
	for _, s := range sides {
		calls := s.cloud.Calls().Total()
		outageCalls = append(outageCalls, calls)
		t.Logf("%s: %d cloud calls in the %v outage for 5 nodes = %.1f calls per node per hour (%v)",
			s.name, calls, outage, float64(calls)/5/outage.Hours(), s.cloud.Calls())
		for _, n := range append(slices.Clone(s.a), s.b...) {
			if !e.exists(n.Name, n.UID) {
				t.Errorf("%s: node %s deleted during the outage", s.name, n.Name)
			}
		}
	}
	// Budget: checks at 0, 5, 15, 35, 75, 155, 315 s, then every 300 s.
	if budget := 5 * 11; outageCalls[0] > budget {
		t.Errorf("lifecycle: %d calls in the outage, want at most the backoff budget %d", outageCalls[0], budget)
	}
	if outageCalls[1] < 30*outageCalls[0] {
		t.Errorf("upstream-style made %d calls, lifecycle %d: want at least 30x fewer", outageCalls[1], outageCalls[0])
	}
	t.Logf("ratio: upstream-style made %.1fx the calls of lifecycle during the outage",
		float64(outageCalls[1])/float64(outageCalls[0]))

	runFor(after)
	for i, s := range sides {
		calls := s.cloud.Calls().Total() - outageCalls[i]
		t.Logf("%s: %d cloud calls in the %v after the outage, %d nodes deleted", s.name, calls, after, s.c.Stats().NodesDeleted)
		for _, n := range s.a {
			if gone := !e.exists(n.Name, n.UID); gone != (i == 0) {
				t.Errorf("%s: node %s of the deleted set A gone = %v, want %v", s.name, n.Name, gone, i == 0)
			}
		}
		for _, n := range s.b {
			if !e.exists(n.Name, n.UID) {
				t.Errorf("%s: node %s of set B deleted", s.name, n.Name)
			}
		}
	}
	e.waitDeletingNodeEvents(sides[0].a...)
}

// TestCloudNodeShutdownTaint: a NotReady node's instance is stopped → the
// node.cloudprovider.kubernetes.io/shutdown NoSchedule taint appears;
// started again → it goes (while the node is still NotReady). Another
// writer's taint on the node is kept throughout.
func TestCloudNodeShutdownTaint(t *testing.T) {
	e := newCNEnv(t, clock.RealClock{}, fakecloud.Config{})
	sel := cluster.UniqueName(t, "cn")
	cfg := e.config(sel)
	cfg.MonitorPeriod = cnPeriod
	n := e.addNode(e.cloud, sel, "s", "B", v1.ConditionFalse)
	other := v1.Taint{Key: "example.com/other", Effect: v1.TaintEffectNoSchedule}
	n.Spec.Taints = append(n.Spec.Taints, other)
	if _, err := e.cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, ctx := e.controller(cfg, e.cloud)
	e.run(c, ctx)
	set, id, _ := fakecloud.ParseProviderID(n.Spec.ProviderID)
	shutdown := v1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: v1.TaintEffectNoSchedule}
	waitTaint := func(what string, want bool) {
		t.Helper()
		cluster.Eventually(t, waitTimeout, what, func(ctx context.Context) (bool, error) {
			got, err := e.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			has := slices.ContainsFunc(got.Spec.Taints, func(t v1.Taint) bool { return t.MatchTaint(&shutdown) })
			if !slices.ContainsFunc(got.Spec.Taints, func(t v1.Taint) bool { return t.MatchTaint(&other) }) {
				return false, fmt.Errorf("the other writer's taint is gone: %v", got.Spec.Taints)
			}
			return has == want, nil
		})
	}
	time.Sleep(3 * cnPeriod)
	waitTaint("no shutdown taint while running", false)
	e.cloud.SetPower(set, id, fakecloud.PowerStopped)
	waitTaint("shutdown taint once stopped", true)
	e.cloud.SetPower(set, id, fakecloud.PowerRunning)
	waitTaint("no shutdown taint once started", false)
	if !e.exists(n.Name, n.UID) {
		t.Error("node deleted")
	}
	if st := c.Stats(); st.TaintsAdded < 1 || st.TaintsRemoved < 1 {
		t.Errorf("stats %+v: want the taint added and removed", st)
	}
}

// TestCloudNodeRecreated: node n's instance is gone and n has 2 of the 3
// NotFound answers it needs when n is deleted and created again under the
// same name (a new UID) while the old instance is still gone. The next
// answer is the new node's first: it is not deleted then, only on its own
// third, and the delete carries its own UID.
func TestCloudNodeRecreated(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newCNEnv(t, clk, fakecloud.Config{})
	sel := cluster.UniqueName(t, "cn")
	cfg := e.config(sel)
	cfg.Policy.Confirmations = 3
	old := e.addNode(e.cloud, sel, "n", "A", v1.ConditionFalse)
	set, id, _ := fakecloud.ParseProviderID(old.Spec.ProviderID)
	e.cloud.DeleteInstance(set, id)
	c, ctx := e.controller(cfg, e.cloud)
	waitCached(t, c, map[string]types.UID{old.Name: old.UID})
	pass := func() { c.Pass(ctx); clk.Step(cfg.MonitorPeriod) }
	pass()
	pass()
	if !e.exists(old.Name, old.UID) {
		t.Fatal("old node deleted after 2 of 3 NotFound answers")
	}
	if err := e.cs.CoreV1().Nodes().Delete(context.Background(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("old node deleted by the test", old.Name)
	again := e.createNode(old.Name, sel, old.Spec.ProviderID, v1.ConditionFalse)
	if again.UID == old.UID {
		t.Fatalf("re-created node has the old UID %s", old.UID)
	}
	waitCached(t, c, map[string]types.UID{again.Name: again.UID})
	pass()
	if !e.exists(again.Name, again.UID) {
		t.Fatal("re-created node deleted on its first NotFound answer (the old node's two counted)")
	}
	pass()
	if !e.exists(again.Name, again.UID) {
		t.Fatal("re-created node deleted on its second NotFound answer")
	}
	pass()
	if e.exists(again.Name, again.UID) {
		t.Error("re-created node kept after its own third NotFound answer")
	}
	for _, w := range e.audit.deletes() {
		if w != string(again.UID) {
			t.Errorf("node delete with UID precondition %s, want only %s", w, again.UID)
		}
	}
}

// cnAudit records the controller's writes: a node taint patch must carry
// metadata.resourceVersion, a node delete a UID precondition; any other
// write is a violation.
type cnAudit struct {
	mu      sync.Mutex
	writes  []string
	bad     []string
	delUIDs []string
}

func (a *cnAudit) wrap(rt http.RoundTripper) http.RoundTripper { return cnAuditTransport{rt, a} }

type cnAuditTransport struct {
	next  http.RoundTripper
	audit *cnAudit
}

func (t cnAuditTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		return t.next.RoundTrip(req)
	}
	body, readErr := requestBody(req)
	var b struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Preconditions *metav1.Preconditions `json:"preconditions"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(body), &b)
	w := req.Method + " " + req.URL.Path
	problem := ""
	if readErr != nil {
		problem = "body unreadable: " + readErr.Error()
	}
	isNode := strings.HasPrefix(req.URL.Path, "/api/v1/nodes/") && !strings.Contains(strings.TrimPrefix(req.URL.Path, "/api/v1/nodes/"), "/")
	switch {
	case problem != "":
	case req.Method == http.MethodPatch && isNode:
		if b.Metadata.ResourceVersion == "" {
			problem = "no metadata.resourceVersion"
		}
	case req.Method == http.MethodDelete && isNode:
		if b.Preconditions == nil || b.Preconditions.UID == nil || *b.Preconditions.UID == "" {
			problem = "no UID precondition"
		}
	default:
		problem = "not a write the controller should make"
	}
	resp, err := t.next.RoundTrip(req)
	a := t.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		w += " " + resp.Status
	}
	a.writes = append(a.writes, w)
	if problem != "" {
		a.bad = append(a.bad, w+": "+problem)
	} else if req.Method == http.MethodDelete {
		a.delUIDs = append(a.delUIDs, string(*b.Preconditions.UID))
	}
	return resp, err
}

func (a *cnAudit) violations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bad)
}

func (a *cnAudit) deletes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.delUIDs)
}

func (a *cnAudit) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%d (%s)", len(a.writes), strings.Join(a.writes, "; "))
}
