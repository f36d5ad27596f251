package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// slowPodStatus is a clientset whose pod Ready=False patches (the marking;
// evictions patch DisruptionTarget instead), once gated,
// report the pod on marking and wait for release: a throttled client. It
// waits outside the fake clientset, whose reactors run under one lock that
// would stall every other call too.
type slowPodStatus struct {
	*podHook
	gate, release chan struct{}
	marking       chan string
}

func newSlowPodStatus(client *fake.Clientset) *slowPodStatus {
	s := &slowPodStatus{gate: make(chan struct{}), release: make(chan struct{}), marking: make(chan string, 16)}
	s.podHook = &podHook{Clientset: client, hook: s.hold}
	return s
}

func (s *slowPodStatus) hold(_ context.Context, verb, name string, sub []string, data []byte) error {
	if verb == "patch" && slices.Equal(sub, []string{"status"}) && strings.Contains(string(data), `"type":"Ready"`) {
		select {
		case <-s.gate:
			s.marking <- name
			<-s.release
		default:
		}
	}
	return nil
}

// newSlowFixture is newFixture with the controller on a slowPodStatus
// client; the fixture's own client (server semantics, reads) is the fake
// behind it.
func newSlowFixture(t *testing.T, cfg controller.Config, objs ...runtime.Object) (*fixture, *slowPodStatus) {
	t.Helper()
	client := fake.NewClientset()
	f := &fixture{t: t, client: client, server: installServerSemantics(client), clock: clocktesting.NewFakeClock(testutil.Epoch)}
	f.ctx = klog.NewContext(context.Background(), klog.Logger{})
	for _, o := range objs {
		f.create(o)
	}
	slow := newSlowPodStatus(client)
	cfg.OnEvent = func(e monitor.Event) {
		f.mu.Lock()
		f.events = append(f.events, e)
		f.mu.Unlock()
	}
	c, err := controller.New(slow, f.clock, cfg)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	if f.sel, err = labels.Parse(cfg.NodeSelector); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	f.stop = func() {
		cancel()
		c.Shutdown()
	}
	t.Cleanup(f.stop)
	f.c = c
	f.settle()
	return f, slow
}

// TestTaintingDoesNotWaitForPodMarking: the API server is slow on pod status
// writes (a throttled client: 150,000 pods at 20 QPS take two hours). Node a
// goes Unknown at 55s and the monitor pass starts marking its pods
// Ready=False; the first of those writes blocks. A tainting and eviction
// pass run meanwhile must taint node a NoExecute (within one TaintPeriod of
// the Unknown write) and evict its untolerating pod while the marking is
// still in progress, as upstream's concurrent tainting does.
func TestTaintingDoesNotWaitForPodMarking(t *testing.T) {
	t.Parallel()
	objs := []runtime.Object{}
	for _, n := range []string{"a", "b", "c"} {
		objs = append(objs, readyNode(n, "z1"), lease(n))
	}
	objs = append(objs, pod("bare", "a", false))
	for i := range 5 {
		objs = append(objs, pod(fmt.Sprintf("web-%d", i), "a", true))
	}
	f, slow := newSlowFixture(t, testConfig(), objs...)
	gate, marking, release := slow.gate, slow.marking, slow.release
	released := false
	unblock := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer unblock()

	f.pass(true) // t=0
	f.advance(50*time.Second, liveExcept(f, "a"))
	close(gate)

	// 55s: the monitor pass writes node a Unknown and starts marking its pods.
	f.clock.Step(5 * time.Second)
	liveExcept(f, "a")(f.at())
	f.settle()
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		f.c.MonitorPass(f.ctx)
	}()
	select {
	case <-marking:
	case <-monitorDone:
		t.Fatal("the monitor pass ended without marking a pod")
	}
	if got := nodeReady(f.node("a")); got != v1.ConditionUnknown {
		t.Fatalf("node a Ready while its pods are being marked = %v, want Unknown", got)
	}
	// The informers catch up with the Unknown status (pod status updates
	// are not forwarded to the Monitor, so nothing here waits for the
	// blocked write).
	f.settle()

	// One TaintPeriod later the tainting loop runs its pass.
	f.clock.Step(f.c.Monitor().Config().TaintPeriod)
	taintDone := make(chan struct{})
	go func() {
		defer close(taintDone)
		f.c.TaintPass(f.ctx)
	}()
	select {
	case <-taintDone:
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
		unblock()
		<-taintDone
		t.Fatalf("the tainting pass waited for the monitor pass's pod marking")
	}
	select {
	case <-monitorDone:
		t.Fatalf("pod marking ended before the check; the test proves nothing")
	default:
	}
	if !hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Errorf("node a taints while its pods are being marked = %v, want the unreachable NoExecute taint", f.node("a").Spec.Taints)
	}
	if got, limit := f.first(monitor.KindTaintAdded, "a", "", unreachableNoExecute), 55*time.Second+f.c.Monitor().Config().TaintPeriod; got < 0 || got > limit {
		t.Errorf("NoExecute taint on a at %v, want by %v", got, limit)
	}
	if p := f.pod("bare"); p != nil {
		t.Errorf("pod bare not evicted while the pods were being marked")
	}

	unblock()
	<-monitorDone
	f.settle()
	for i := range 5 {
		if p := f.pod(fmt.Sprintf("web-%d", i)); p == nil || podReady(p) != v1.ConditionFalse {
			t.Errorf("pod web-%d = %v, want kept with Ready=False once marking ends", i, p)
		}
	}
}
