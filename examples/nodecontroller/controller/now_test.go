package controller_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestLastTransitionTimePerNode: the controller's clock advances while a
// monitor pass writes the nodes' statuses (here 1s per write, stepped by a
// reactor on the fake clientset); as upstream's monitorNodeHealth, each
// node's Unknown Ready condition carries the time of that node's write, not
// the pass's start.
func TestLastTransitionTimePerNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	f.pass(true)
	f.clock.Step(2 * time.Minute) // no Lease renewed: every grace period has run out
	f.settle()
	start := f.clock.Now()
	f.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			f.clock.Step(time.Second) // this write took a second
		}
		return false, nil, nil
	})
	f.c.MonitorPass(f.ctx)
	f.settle()
	for i, n := range []string{"a", "b", "c"} {
		node := f.node(n)
		var ready *v1.NodeCondition
		for j := range node.Status.Conditions {
			if node.Status.Conditions[j].Type == v1.NodeReady {
				ready = &node.Status.Conditions[j]
			}
		}
		if ready == nil || ready.Status != v1.ConditionUnknown {
			t.Fatalf("node %s Ready = %+v, want Unknown", n, ready)
		}
		// Node i is processed after i writes (Workers = 1, name order).
		want := start.Add(time.Duration(i) * time.Second).Truncate(time.Second)
		if got := ready.LastTransitionTime.Time; !got.Equal(want) {
			t.Errorf("node %s Ready lastTransitionTime = %v, want %v (the time of its own write)", n, got, want)
		}
	}
}

// TestOnNodeHealth: Config.OnNodeHealth sees every node once per monitor
// pass with its health update's duration on the controller's clock: here
// each status write takes a second (a reactor steps the fake clock), and a
// node with nothing to write takes none.
func TestOnNodeHealth(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	took := map[string][]time.Duration{}
	cfg := testConfig()
	cfg.OnNodeHealth = func(node string, d time.Duration) {
		mu.Lock()
		took[node] = append(took[node], d)
		mu.Unlock()
	}
	f := newFixture(t, cfg, cluster3()...)
	f.pass(true)
	f.clock.Step(2 * time.Minute) // every grace period has run out
	f.settle()
	f.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			f.clock.Step(time.Second)
		}
		return false, nil, nil
	})
	f.c.MonitorPass(f.ctx)
	f.settle()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range []string{"a", "b", "c"} {
		if want := []time.Duration{0, time.Second}; !slices.Equal(took[n], want) {
			t.Errorf("node %s health updates took %v, want %v (nothing written, then one 1s write)", n, took[n], want)
		}
	}
}
