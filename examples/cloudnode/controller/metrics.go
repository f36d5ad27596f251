package controller

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	cloudprovider "k8s.io/cloud-provider"
)

// Upstream's metric names (k8s.io/cloud-provider v0.37.2,
// controllers/nodelifecycle/metrics.go; new in v1.37), with their types,
// labels, buckets and help texts, so dashboards and alerts carry over:
//
//   - MetricMonitorNodesDuration, a histogram of the duration of one pass
//     (MonitorNodes), buckets 1ms doubling to 16.384s (15 buckets). Unlike
//     upstream, which reads the real clock, it is measured on the
//     controller's clock.
//   - MetricCloudProviderCalls, a counter of cloud calls by operation
//     (instance_exists, instance_shutdown; upstream also counts
//     instance_metadata, which this controller never calls) and result,
//     classified as upstream's observeInstanceOp does: not_implemented,
//     instance_not_found (also an InstanceExists answer of false with no
//     error), canceled, error, success. A series appears at its first call,
//     as upstream's. An error wrapping nodehealth.ErrParentNotFound alone
//     counts as error, as it would upstream.
const (
	MetricMonitorNodesDuration = "cloud_node_lifecycle_controller_monitor_nodes_duration_seconds"
	MetricCloudProviderCalls   = "cloud_node_lifecycle_controller_cloud_provider_calls_total"
)

// Our metric names, in the lifecycle_ namespace: the decisions upstream
// does not make (backoff, confirmations) and what they cost.
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
	// Upstream's help texts carry component-base's stability annotation.
	descProviderCalls = prometheus.NewDesc(MetricCloudProviderCalls,
		"[ALPHA] The total number of cloud provider API calls, labeled by operation and result.",
		[]string{"operation", "result"}, nil)
)

// newPassDuration returns upstream's monitor_nodes_duration_seconds
// histogram, one per Controller.
func newPassDuration() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    MetricMonitorNodesDuration,
		Help:    "[ALPHA] A metric measuring the duration in seconds of a single MonitorNodes loop execution.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})
}

// The operation and result label values of MetricCloudProviderCalls,
// upstream's.
const (
	opInstanceExists = iota
	opInstanceShutdown
	numOps
)

var (
	opLabels     = [numOps]string{"instance_exists", "instance_shutdown"}
	resultLabels = [...]string{"success", "not_implemented", "instance_not_found", "canceled", "error"}
)

// providerCalls counts cloud calls by operation and result label index.
type providerCalls [numOps][len(resultLabels)]int

// observe counts one call of op that returned err, classified as
// upstream's observeInstanceOp does (the first match wins).
func (p *providerCalls) observe(op int, err error) {
	r := 0
	switch {
	case err == nil:
	case errors.Is(err, cloudprovider.NotImplemented):
		r = 1
	case errors.Is(err, cloudprovider.InstanceNotFound):
		r = 2
	case errors.Is(err, context.Canceled):
		r = 3
	default:
		r = 4
	}
	p[op][r]++
}

// existsErr is the error upstream counts for an InstanceExists answer:
// cloudprovider.InstanceNotFound for "does not exist" with no error.
func existsErr(exists bool, err error) error {
	if err == nil && !exists {
		return cloudprovider.InstanceNotFound
	}
	return err
}

// Collector returns a prometheus.Collector of the controller's metrics,
// upstream's and ours. The counters are read from what the controller
// counts anyway, at scrape time (nothing is counted twice, and the
// decision path pays nothing for them); Pass observes the duration
// histogram, which allocates nothing. Register it on the caller's
// registry.
func (c *Controller) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Controller }

func (k collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPasses, descCloudCalls, descCallsSkipped, descNodesDeleted,
		descDeleteFailures, descTaintWrites, descBackingOff, descProviderCalls} {
		ch <- d
	}
	k.c.passDuration.Describe(ch)
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
	k.c.mu.Lock()
	calls := k.c.providerCalls
	k.c.mu.Unlock()
	for op := range calls {
		for r, v := range calls[op] {
			if v > 0 {
				counter(descProviderCalls, v, opLabels[op], resultLabels[r])
			}
		}
	}
	k.c.passDuration.Collect(ch)
}
