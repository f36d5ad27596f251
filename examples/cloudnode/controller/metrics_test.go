package controller_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"

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
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 15 {
		t.Errorf("GatherAndCount = %d, %v, want 15 series", n, err)
	}
}
