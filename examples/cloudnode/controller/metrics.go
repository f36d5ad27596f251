package controller

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Upstream's cloud node lifecycle controller exports no
// metrics of its own (only kube-controller-manager's generic
// controller-started gauge), so all of these are ours, in the lifecycle_
// namespace.
const (
	MetricPasses         = "lifecycle_cloudnode_passes_total"
	MetricCloudCalls     = "lifecycle_cloudnode_cloud_calls_total"
	MetricCallsSkipped   = "lifecycle_cloudnode_cloud_calls_skipped_total"
	MetricNodesDeleted   = "lifecycle_cloudnode_nodes_deleted_total"
	MetricDeleteFailures = "lifecycle_cloudnode_node_delete_failures_total"
	MetricTaintWrites    = "lifecycle_cloudnode_shutdown_taint_writes_total"
	MetricBackingOff     = "lifecycle_cloudnode_nodes_backing_off"
)

var (
	descPasses = prometheus.NewDesc(MetricPasses,
		"Monitor passes made.", nil, nil)
	descCloudCalls = prometheus.NewDesc(MetricCloudCalls,
		"Cloud calls made, by method (InstanceExists, InstanceShutdown) and classified answer (exists, not_found, unknown; running, shutdown, error).",
		[]string{"method", "result"}, nil)
	descCallsSkipped = prometheus.NewDesc(MetricCallsSkipped,
		"Node visits that made no cloud call, by reason (backoff: Unknown backoff, NotFound ageing or the API's Retry-After; uninitialized).",
		[]string{"reason"}, nil)
	descNodesDeleted = prometheus.NewDesc(MetricNodesDeleted,
		"Nodes deleted because their cloud instance was confirmed gone.", nil, nil)
	descDeleteFailures = prometheus.NewDesc(MetricDeleteFailures,
		"Node deletions that failed (each also records a DeletingNodeFailed Event).", nil, nil)
	descTaintWrites = prometheus.NewDesc(MetricTaintWrites,
		"Shutdown taint writes, by operation (add, remove) and result (ok, error).", []string{"op", "result"}, nil)
	descBackingOff = prometheus.NewDesc(MetricBackingOff,
		"Nodes whose last cloud answer was Unknown, so they are in an exponential backoff now.", nil, nil)
)

// Collector returns a prometheus.Collector that reads the controller's
// Stats at scrape time (nothing is counted twice, and the decision path
// pays nothing for metrics). Register it on the caller's registry.
func (c *Controller) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Controller }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPasses, descCloudCalls, descCallsSkipped, descNodesDeleted,
		descDeleteFailures, descTaintWrites, descBackingOff} {
		ch <- d
	}
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	s := k.c.Stats()
	counter := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descPasses, s.Passes)
	counter(descCloudCalls, s.ExistsCalls[1], "InstanceExists", "exists")
	counter(descCloudCalls, s.ExistsCalls[2], "InstanceExists", "not_found")
	counter(descCloudCalls, s.ExistsCalls[0], "InstanceExists", "unknown")
	counter(descCloudCalls, s.ShutdownCalls.Running, "InstanceShutdown", "running")
	counter(descCloudCalls, s.ShutdownCalls.Shutdown, "InstanceShutdown", "shutdown")
	counter(descCloudCalls, s.ShutdownCalls.Errors, "InstanceShutdown", "error")
	counter(descCallsSkipped, s.SkippedBackoff, "backoff")
	counter(descCallsSkipped, s.SkippedUninitialized, "uninitialized")
	counter(descNodesDeleted, s.NodesDeleted)
	counter(descDeleteFailures, s.DeleteFailures)
	counter(descTaintWrites, s.TaintsAdded, "add", "ok")
	counter(descTaintWrites, s.TaintsRemoved, "remove", "ok")
	counter(descTaintWrites, s.TaintFailures, "any", "error")
	ch <- prometheus.MustNewConstMetric(descBackingOff, prometheus.GaugeValue, float64(s.BackingOff))
}
