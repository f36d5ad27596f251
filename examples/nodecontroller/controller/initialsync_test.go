package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/taints"
)

// TestInitialListQueuesNodesNotPods: the initial list queues one item per
// node for the pods bound to it (and one per unbound pod), not one per
// pod, and handling those items forwards every pod to the Monitor as
// per-pod items would. A pod created after the sync is queued as itself.
func TestInitialListQueuesNodesNotPods(t *testing.T) {
	tests := []struct {
		name               string
		nodes, podsPerNode int
		unbound            int
	}{
		{name: "one node", nodes: 1, podsPerNode: 1},
		{name: "many pods per node", nodes: 3, podsPerNode: 20},
		{name: "unbound pods queued alone", nodes: 2, podsPerNode: 5, unbound: 3},
		{name: "no pods", nodes: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			var pods []types.NamespacedName
			for i := range tc.nodes {
				name := fmt.Sprintf("node-%d", i)
				// Tainted unreachable:NoExecute, so the Evictor schedules
				// each pod it is given (300s tolerations).
				n := testutil.WithTaints(testutil.WithReady(testutil.Node(name, testutil.Epoch), v1.ConditionUnknown, testutil.Epoch, testutil.Epoch),
					v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute})
				objs = append(objs, n, testutil.Lease(name, testutil.Epoch))
				for j := range tc.podsPerNode {
					objs = append(objs, syncTestPod(fmt.Sprintf("p-%d-%02d", i, j), name))
					pods = append(pods, types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("p-%d-%02d", i, j)})
				}
			}
			for j := range tc.unbound {
				objs = append(objs, syncTestPod(fmt.Sprintf("unbound-%d", j), ""))
			}
			client := fake.NewSimpleClientset(objs...)
			clk := clocktesting.NewFakeClock(testutil.Epoch)
			c, err := New(client, clk, DefaultConfig())
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
			t.Cleanup(func() { cancel(); c.Shutdown() })
			require.NoError(t, c.Start(ctx))

			// Start returns once the handlers have queued the initial list.
			assert.Equal(t, tc.nodes+min(tc.podsPerNode, 1)*tc.nodes+tc.unbound, c.queue.Len(),
				"queue length after the initial list, want nodes + nodes with pods + unbound pods")
			for c.ProcessEvents(ctx) > 0 {
			}
			for _, p := range pods {
				e := c.Monitor().Explain(clk.Now(), p)
				assert.Equal(t, taints.EvictionScheduled, e.State, "Explain(%s).State", p)
				assert.Equal(t, testutil.Epoch.Add(300*time.Second), e.At, "Explain(%s).At", p)
			}

			// After the sync a new pod is its own item (node items may come
			// too: the Monitor's writes to the nodes).
			require.NoError(t, client.Tracker().Add(syncTestPod("late", "node-0")))
			var got []item
			require.Eventually(t, func() bool {
				for c.queue.Len() > 0 {
					it, _ := c.queue.Get()
					c.queue.Done(it)
					if it.kind != kindNode {
						got = append(got, it)
					}
				}
				return len(got) > 0
			}, 10*time.Second, time.Millisecond)
			assert.Equal(t, []item{{kind: kindPod, namespace: "default", name: "late"}}, got)

			// The pods of a node follow binding and deletion; the pod
			// informer keeps no index of its own.
			assert.Empty(t, c.pods.GetIndexer().GetIndexers(), "pod informer indexers")
			unbound := syncTestPod("bound-late", "")
			require.NoError(t, client.Tracker().Add(unbound))
			bound := unbound.DeepCopy()
			bound.Spec.NodeName = "node-0"
			require.NoError(t, client.Tracker().Update(podsGVR, bound, "default"))
			onNode := func(name string) bool {
				return slices.ContainsFunc(c.cluster.ListPodsOnNode("node-0"), func(p *v1.Pod) bool { return p.Name == name })
			}
			require.Eventually(t, func() bool { return onNode("bound-late") }, 10*time.Second, time.Millisecond)
			require.NoError(t, client.Tracker().Delete(podsGVR, "default", "bound-late"))
			require.Eventually(t, func() bool { return !onNode("bound-late") }, 10*time.Second, time.Millisecond)
			// podsByNode follows the store by the handler's delivery.
			require.Eventually(t, func() bool { return len(c.cluster.byNode.list("node-0")) == tc.podsPerNode+1 }, 10*time.Second, time.Millisecond,
				"pods of node-0 (the late one included)")
		})
	}
}

var podsGVR = v1.SchemeGroupVersion.WithResource("pods")

func syncTestPod(name, node string) *v1.Pod {
	p := testutil.Pod("default", name, node)
	p.UID = types.UID("uid-" + name)
	p.Spec.Tolerations = taints.WithDefaultTolerations(nil, taints.DefaultTolerationTime, taints.DefaultTolerationTime)
	return p
}

// TestReleaseMemoryAfterSync: Run releases the initial sync's memory once
// the workers have taken the initial list, only when configured to.
func TestReleaseMemoryAfterSync(t *testing.T) {
	for _, release := range []bool{true, false} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			client := fake.NewSimpleClientset(testutil.Lease("node-0", testutil.Epoch), syncTestPod("p", "node-0"),
				testutil.WithReady(testutil.Node("node-0", testutil.Epoch), v1.ConditionTrue, testutil.Epoch, testutil.Epoch))
			clk := clocktesting.NewFakeClock(testutil.Epoch)
			cfg := DefaultConfig()
			assert.True(t, cfg.ReleaseMemoryAfterSync, "DefaultConfig().ReleaseMemoryAfterSync")
			cfg.ReleaseMemoryAfterSync = release
			cfg.SkipFinalSnapshot = true
			c, err := New(client, clk, cfg)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			require.Eventually(t, func() bool { return c.HasSynced() && c.queue.Len() == 0 }, 10*time.Second, time.Millisecond)
			// The check runs every 100ms of the controller's clock.
			if release {
				require.Eventually(t, func() bool {
					clk.Step(100 * time.Millisecond)
					return c.memoryReleased.Load()
				}, 10*time.Second, time.Millisecond)
			} else {
				clk.Step(time.Second)
				assert.False(t, c.memoryReleased.Load(), "memory released with ReleaseMemoryAfterSync false")
			}
			cancel()
			require.NoError(t, <-done)
		})
	}
}
