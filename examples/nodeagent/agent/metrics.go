package agent

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The kubelet's pod worker metrics (pkg/kubelet/metrics/metrics.go at
// v1.37.2, added by kubernetes/kubernetes#113145, ALPHA), set from the
// podworker.Stats of the last housekeeping pass as upstream sets them in
// HandlePodCleanups.
var (
	desiredPodsDesc = prometheus.NewDesc("kubelet_desired_pods",
		"The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.",
		[]string{"static"}, nil)
	activePodsDesc = prometheus.NewDesc("kubelet_active_pods",
		"The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.",
		[]string{"static"}, nil)
	mirrorPodsDesc = prometheus.NewDesc("kubelet_mirror_pods",
		"The number of mirror pods the kubelet will try to create (one per admitted static pod)", nil, nil)
	workingPodsDesc = prometheus.NewDesc("kubelet_working_pods",
		"Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.",
		[]string{"lifecycle", "config", "static"}, nil)
	restartedPodsDesc = prometheus.NewDesc("kubelet_restarted_pods_total",
		"Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
		[]string{"static"}, nil)
	orphanedRuntimePodsDesc = prometheus.NewDesc("kubelet_orphaned_runtime_pods_total",
		"Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual.",
		nil, nil)
)

// Collector returns a prometheus.Collector for the agent's pod worker
// metrics under the kubelet's names; register it on a registry of your own.
func (a *Agent) Collector() prometheus.Collector { return collector{a} }

type collector struct{ a *Agent }

// Describe sends the six descriptors.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{desiredPodsDesc, activePodsDesc, mirrorPodsDesc, workingPodsDesc, restartedPodsDesc, orphanedRuntimePodsDesc} {
		ch <- d
	}
}

// Collect sends the values of the last housekeeping pass.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.PublishedStats()
	g := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(desiredPodsDesc, s.DesiredPods, "")
	g(desiredPodsDesc, s.DesiredStaticPods, "true")
	g(activePodsDesc, s.ActivePods, "")
	g(activePodsDesc, s.ActiveStaticPods, "true")
	g(mirrorPodsDesc, s.MirrorPods)
	for _, w := range s.Working {
		g(workingPodsDesc, w.Count, w.Lifecycle.String(), w.Config.String(), w.StaticLabel())
	}
	ch <- prometheus.MustNewConstMetric(restartedPodsDesc, prometheus.CounterValue, float64(s.RestartedPods), "")
	ch <- prometheus.MustNewConstMetric(restartedPodsDesc, prometheus.CounterValue, float64(s.RestartedStaticPods), "true")
	ch <- prometheus.MustNewConstMetric(orphanedRuntimePodsDesc, prometheus.CounterValue, float64(s.OrphanedRuntimePods))
}
