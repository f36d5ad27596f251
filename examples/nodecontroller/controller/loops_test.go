package controller_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// stuckPods is a clientset whose pod writes that stuck matches never
// return until release is closed: a client-side rate limiter with hours
// of writes queued. blocked counts the writes held.
type stuckPods struct {
	*fake.Clientset
	stuck   func(verb string, data []byte) bool
	release chan struct{}
	blocked atomic.Int32
}

func (c *stuckPods) CoreV1() corev1.CoreV1Interface { return stuckCore{c.Clientset.CoreV1(), c} }

type stuckCore struct {
	corev1.CoreV1Interface
	c *stuckPods
}

func (s stuckCore) Pods(ns string) corev1.PodInterface {
	return stuckPodClient{s.CoreV1Interface.Pods(ns), s.c}
}

type stuckPodClient struct {
	corev1.PodInterface
	c *stuckPods
}

func (p stuckPodClient) hold(ctx context.Context, verb string, data []byte) error {
	if !p.c.stuck(verb, data) {
		return nil
	}
	p.c.blocked.Add(1)
	select {
	case <-p.c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p stuckPodClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	if err := p.hold(ctx, "patch", data); err != nil {
		return nil, err
	}
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

func (p stuckPodClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := p.hold(ctx, "delete", nil); err != nil {
		return err
	}
	return p.PodInterface.Delete(ctx, name, opts)
}

var _ kubernetes.Interface = (*stuckPods)(nil)

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
	marking := &stuckPods{Clientset: client, release: release,
		stuck: func(verb string, data []byte) bool { return strings.Contains(string(data), `"type":"Ready"`) }}
	evictions := &stuckPods{Clientset: client, release: release,
		stuck: func(verb string, _ []byte) bool { return verb == "delete" }}

	cfg := controller.DefaultConfig()
	cfg.ConflictBackoff.Duration = time.Millisecond
	cfg.Clients = controller.Clients{Marking: marking, Evictions: evictions}
	c, err := controller.New(client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

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
