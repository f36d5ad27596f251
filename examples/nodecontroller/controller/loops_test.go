package controller_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// stuckPods is a clientset whose pod writes that stuck matches never
// return until release is closed: a client-side rate limiter with hours
// of writes queued. blocked counts the writes held.
type stuckPods struct {
	*podHook
	stuck   func(verb string, data []byte) bool
	release chan struct{}
	blocked atomic.Int32
}

func newStuckPods(client *fake.Clientset, release chan struct{}, stuck func(verb string, data []byte) bool) *stuckPods {
	s := &stuckPods{stuck: stuck, release: release}
	s.podHook = &podHook{Clientset: client, hook: s.hold}
	return s
}

func (s *stuckPods) hold(ctx context.Context, verb, _ string, _ []string, data []byte) error {
	if !s.stuck(verb, data) {
		return nil
	}
	s.blocked.Add(1)
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestRunDutiesDoNotWaitForEachOther: under Run, with the pod marking and
// the evictions on clients of their own (Config.Clients) that are stuck
// (every Ready=False write and every pod deletion hangs), a node that goes
// silent later is still written Unknown by the next monitor pass and
// tainted NoExecute by the tainting loop. Before the duties had loops of
// their own, the monitor pass waited for its pod marking (so node b was
// never written Unknown) and the tainting loop ran the eviction pass
// before its next tainting pass (so no taint came after a stuck deletion).
func TestRunDutiesDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	f := &fixture{t: t, client: client, server: installServerSemantics(client), clock: clocktesting.NewFakeClock(testutil.Epoch)}
	f.ctx = klog.NewContext(context.Background(), klog.Logger{})
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		f.create(readyNode(n, "z1"))
		f.create(lease(n))
	}
	f.create(pod("bare", "a", false))
	for _, p := range []string{"a-web", "b-web"} {
		f.create(pod(p, p[:1], true))
	}
	release := make(chan struct{})
	defer close(release)
	marking := newStuckPods(client, release,
		func(verb string, data []byte) bool { return strings.Contains(string(data), `"type":"Ready"`) })
	evictions := newStuckPods(client, release,
		func(verb string, _ []byte) bool { return verb == "delete" })

	cfg := controller.DefaultConfig()
	cfg.ConflictBackoff.Duration = time.Millisecond
	cfg.Clients = controller.Clients{Marking: marking, Evictions: evictions}
	c, err := controller.New(client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runInBackground(f.ctx, c)
	defer func() { _ = stop() }()

	// a is silent from the start, b from 30s: a goes Unknown at 55s (its
	// pods' marking and bare's deletion hang), b about 30s later.
	deadline := time.Now().Add(20 * time.Second) // a guard against a hang, not a timing assertion
	for nodeReady(f.node("b")) != v1.ConditionUnknown || !hasTaint(f.node("b"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		if time.Now().After(deadline) {
			t.Fatalf("at %v: node b Ready %v, taints %v; want Unknown and tainted NoExecute while a's marking (%d held) and eviction (%d held) hang",
				f.at(), nodeReady(f.node("b")), f.node("b").Spec.Taints, marking.blocked.Load(), evictions.blocked.Load())
		}
		if f.at() < 200*time.Second {
			f.clock.Step(time.Second)
			for _, n := range []string{"c", "d", "e"} {
				f.renew(n)
			}
			if f.at() < 30*time.Second {
				f.renew("b")
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if marking.blocked.Load() == 0 || evictions.blocked.Load() == 0 {
		t.Errorf("held writes: %d Ready=False, %d deletions; want both stuck while b was tainted (else the test proves nothing)",
			marking.blocked.Load(), evictions.blocked.Load())
	}
	if !hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Errorf("node a taints = %v, want unreachable NoExecute", f.node("a").Spec.Taints)
	}
}
