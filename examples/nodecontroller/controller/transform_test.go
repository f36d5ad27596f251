package controller_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestTransformKeepsSharedObjects: the informers strip managed fields from
// what they cache without writing to the objects the client hands them (a
// list's items, a watch event's object), which the client may share (the
// fake clientset does). Stripping them in place was a data race that made
// the suite flake under -race.
func TestTransformKeepsSharedObjects(t *testing.T) {
	t.Parallel()
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	node := readyNode("a", "z1")
	node.ManagedFields = managed
	nodes := &v1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []v1.Node{*node}}
	p := pod("p", "a", true)
	p.ManagedFields = managed

	client := fake.NewClientset()
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nodes, nil // the same list every time: shared with the test
	})
	podWatch := watch.NewFakeWithChanSize(1, false)
	client.PrependWatchReactor("pods", k8stesting.DefaultWatchReactor(podWatch, nil))

	c, err := controller.New(client, clocktesting.NewFakeClock(testutil.Epoch), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	defer c.Shutdown()
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	podWatch.Add(p) // the test keeps p
	deadline := time.Now().Add(10 * time.Second)
	for len(c.Cluster().ListPodsOnNode("a")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pod informer did not see the pod")
		}
		time.Sleep(time.Millisecond)
	}

	if got := len(nodes.Items[0].ManagedFields); got != 1 {
		t.Errorf("listed node has %d managed fields after caching, want 1 (the transform wrote to the client's object)", got)
	}
	if got := len(p.ManagedFields); got != 1 {
		t.Errorf("watched pod has %d managed fields after caching, want 1 (the transform wrote to the client's object)", got)
	}
	if n := c.Cluster().GetNode("a"); n == nil || n.ManagedFields != nil {
		t.Errorf("cached node = %v, want it without managed fields", n)
	}
	if ps := c.Cluster().ListPodsOnNode("a"); ps[0].ManagedFields != nil {
		t.Errorf("cached pod has managed fields %v, want none", ps[0].ManagedFields)
	}
}
