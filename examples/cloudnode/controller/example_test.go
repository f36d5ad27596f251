package controller_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
)

// ExampleConfig_concurrentNodeLifecycleSyncs: upstream's
// --concurrent-node-lifecycle-syncs must be at least 1; ours is also at
// most MaxConcurrentNodeLifecycleSyncs, and New says which field and value
// it rejects.
func ExampleConfig_concurrentNodeLifecycleSyncs() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := &fakecloud.Provider{API: fakecloud.New(clk, fakecloud.Config{})}
	for _, workers := range []int{4, 0, 1000} {
		cfg := controller.DefaultConfig()
		cfg.ConcurrentNodeLifecycleSyncs = workers
		_, err := controller.New(fake.NewClientset(), cloud, clk, cfg)
		fmt.Println(workers, err)
	}
	// Output:
	// 4 <nil>
	// 0 cloudnode: invalid config: ConcurrentNodeLifecycleSyncs (--concurrent-node-lifecycle-syncs) = 0, want 1..256
	// 1000 cloudnode: invalid config: ConcurrentNodeLifecycleSyncs (--concurrent-node-lifecycle-syncs) = 1000, want 1..256
}

// ExampleController_Collector: after one pass over a Ready node and a
// NotReady node whose instance is gone, upstream's call counter has one
// instance_exists call with result instance_not_found, and the duration
// histogram one pass.
func ExampleController_Collector() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := fakecloud.New(clk, fakecloud.Config{}) // holds no instance
	var nodes []runtime.Object
	for name, ready := range map[string]v1.ConditionStatus{"ready": v1.ConditionTrue, "gone": v1.ConditionFalse} {
		nodes = append(nodes, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid")},
			Spec:       v1.NodeSpec{ProviderID: fakecloud.ProviderID("S", name)},
			Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}},
		})
	}
	client := fake.NewClientset(nodes...)
	c, err := controller.New(client, &fakecloud.Provider{API: cloud}, clk, controller.DefaultConfig())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	defer cancel()
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	defer c.Shutdown()
	c.Pass(ctx)

	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case controller.MetricCloudProviderCalls:
			for _, m := range mf.GetMetric() {
				fmt.Print(mf.GetName())
				for _, l := range m.GetLabel() {
					fmt.Printf(" %s=%s", l.GetName(), l.GetValue())
				}
				fmt.Println(":", m.GetCounter().GetValue())
			}
		case controller.MetricMonitorNodesDuration:
			fmt.Println(mf.GetName(), "passes:", mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	// Output:
	// cloud_node_lifecycle_controller_cloud_provider_calls_total operation=instance_exists result=instance_not_found: 1
	// cloud_node_lifecycle_controller_monitor_nodes_duration_seconds passes: 1
}
