package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
)

// TestCollector: the metrics read the Stats of a controller that backed off
// a failing cloud for one node and deleted another whose instance is gone.
func TestCollector(t *testing.T) {
	f := newFixture(t, testConfig(), fakecloud.Config{},
		node("a1", "A", v1.ConditionFalse), node("b1", "B", v1.ConditionFalse))
	f.cloud.DeleteInstance("A", "a1")
	f.pass(0) // a1 NotFound: deleted; b1 exists, running
	f.cloud.Fail(time.Minute)
	f.pass(5 * time.Second)  // b1 Unknown: backoff 5s
	f.pass(7 * time.Second)  // skipped
	f.pass(10 * time.Second) // b1 Unknown: backoff 10s
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.c.Collector())
	want := `
# HELP lifecycle_cloudnode_cloud_calls_total Cloud calls made, by method (InstanceExists, InstanceShutdown) and classified answer (exists, not_found, unknown; running, shutdown, error).
# TYPE lifecycle_cloudnode_cloud_calls_total counter
lifecycle_cloudnode_cloud_calls_total{method="InstanceExists",result="exists"} 1
lifecycle_cloudnode_cloud_calls_total{method="InstanceExists",result="not_found"} 1
lifecycle_cloudnode_cloud_calls_total{method="InstanceExists",result="unknown"} 2
lifecycle_cloudnode_cloud_calls_total{method="InstanceShutdown",result="error"} 0
lifecycle_cloudnode_cloud_calls_total{method="InstanceShutdown",result="running"} 1
lifecycle_cloudnode_cloud_calls_total{method="InstanceShutdown",result="shutdown"} 0
# HELP lifecycle_cloudnode_nodes_backing_off Nodes whose last cloud answer was Unknown, so they are in an exponential backoff now.
# TYPE lifecycle_cloudnode_nodes_backing_off gauge
lifecycle_cloudnode_nodes_backing_off 1
# HELP lifecycle_cloudnode_nodes_deleted_total Nodes deleted because their cloud instance was confirmed gone.
# TYPE lifecycle_cloudnode_nodes_deleted_total counter
lifecycle_cloudnode_nodes_deleted_total 1
# HELP lifecycle_cloudnode_cloud_calls_skipped_total Node visits that made no cloud call, by reason (backoff: Unknown backoff, NotFound ageing or the API's Retry-After; uninitialized).
# TYPE lifecycle_cloudnode_cloud_calls_skipped_total counter
lifecycle_cloudnode_cloud_calls_skipped_total{reason="backoff"} 1
lifecycle_cloudnode_cloud_calls_skipped_total{reason="uninitialized"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		controller.MetricCloudCalls, controller.MetricBackingOff, controller.MetricNodesDeleted, controller.MetricCallsSkipped); err != nil {
		t.Error(err)
	}
	// 15 of ours; upstream's histogram; upstream's call counter for the
	// results seen: instance_exists success, instance_not_found and error,
	// instance_shutdown success.
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 20 {
		t.Errorf("GatherAndCount = %d, %v, want 20 series", n, err)
	}
}

// TestMonitorNodesMetrics is upstream's test of the same name (v1.37.2):
// two Ready nodes and one NotReady node whose instance exists make one
// instance_exists and one instance_shutdown call, both "success", and a
// pass is one observation of the duration histogram. Further cases check
// upstream's result labels: a gone instance is instance_not_found, a
// throttled call error.
func TestMonitorNodesMetrics(t *testing.T) {
	ready := func(name string) *v1.Node { return node(name, "S", v1.ConditionTrue) }
	for _, tc := range []struct {
		name  string
		setup func(*fakecloud.Cloud)
		want  string
	}{
		{"exists", func(*fakecloud.Cloud) {}, `
cloud_node_lifecycle_controller_cloud_provider_calls_total{operation="instance_exists",result="success"} 1
cloud_node_lifecycle_controller_cloud_provider_calls_total{operation="instance_shutdown",result="success"} 1
`},
		{"gone", func(c *fakecloud.Cloud) { c.DeleteInstance("S", "node2") }, `
cloud_node_lifecycle_controller_cloud_provider_calls_total{operation="instance_exists",result="instance_not_found"} 1
`},
		{"throttled", func(c *fakecloud.Cloud) { c.Throttle(time.Minute, time.Minute) }, `
cloud_node_lifecycle_controller_cloud_provider_calls_total{operation="instance_exists",result="error"} 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testConfig(), fakecloud.Config{},
				ready("node0"), ready("node1"), node("node2", "S", v1.ConditionFalse))
			tc.setup(f.cloud)
			f.pass(0)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(f.c.Collector())
			want := `
# HELP cloud_node_lifecycle_controller_cloud_provider_calls_total [ALPHA] The total number of cloud provider API calls, labeled by operation and result.
# TYPE cloud_node_lifecycle_controller_cloud_provider_calls_total counter
` + strings.TrimPrefix(tc.want, "\n")
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), controller.MetricCloudProviderCalls); err != nil {
				t.Error(err)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var h *dto.Histogram
			for _, mf := range mfs {
				if mf.GetName() == controller.MetricMonitorNodesDuration {
					h = mf.GetMetric()[0].GetHistogram()
				}
			}
			if h == nil || h.GetSampleCount() != 1 || len(h.GetBucket()) != 15 ||
				h.GetBucket()[0].GetUpperBound() != 0.001 || h.GetBucket()[14].GetUpperBound() != 16.384 {
				t.Errorf("%s = %v, want 1 sample in 15 buckets from 0.001 to 16.384", controller.MetricMonitorNodesDuration, h)
			}
		})
	}
}

// backwardsClock is a fake clock stepped back a minute during every pass.
type backwardsClock struct{ *clocktesting.FakeClock }

func (backwardsClock) Since(time.Time) time.Duration { return -time.Minute }

// TestPassDurationClockBackwards: a pass during which the clock went back
// is observed as taking no time, not a negative one.
func TestPassDurationClockBackwards(t *testing.T) {
	clk := backwardsClock{clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	c, err := controller.New(fake.NewClientset(), &fakecloud.Provider{API: fakecloud.New(clk, fakecloud.Config{})}, clk, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.Pass(context.Background())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == controller.MetricMonitorNodesDuration {
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 0 {
				t.Errorf("%s: %d samples, sum %v; want 1 sample, sum 0", mf.GetName(), h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Errorf("no %s", controller.MetricMonitorNodesDuration)
}
