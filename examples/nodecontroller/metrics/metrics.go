// Package metrics exports a node lifecycle controller's numbers as
// Prometheus metrics, on a registry of its own (never the global one), under
// the names, labels, types and buckets kube-controller-manager v1.37.2 uses
// (pkg/controller/nodelifecycle/metrics.go,
// pkg/controller/tainteviction/metrics/metrics.go and
// pkg/controller/devicetainteviction/metrics/metrics.go), so that dashboards and
// alerts written for it keep working, plus the lifecycle_ metrics upstream
// lacks: per-zone queue depth and tainting rate, pending evictions, the
// next deadline and leader status, and the device taint eviction's
// blast-radius limit per DRA driver and warnings by kind.
//
// The numbers come from the Monitor's Events (Metrics.OnEvent), its Stats
// and NextDeadline (read at scrape time), the controller's monitor pass
// hook (Metrics.ObserveMonitorPass) and the DeviceEvictor's DriverLimits
// (read at scrape time, AttachDevices); the library packages know nothing
// of Prometheus.
package metrics

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Metric names. The node_collector_ and taint_eviction_controller_ ones are
// upstream's.
const (
	ZoneHealth                   = "node_collector_zone_health"
	ZoneSize                     = "node_collector_zone_size"
	UnhealthyNodesInZone         = "node_collector_unhealthy_nodes_in_zone"
	EvictionsTotal               = "node_collector_evictions_total"
	UpdateNodeHealthDuration     = "node_collector_update_node_health_duration_seconds"
	UpdateAllNodesHealthDuration = "node_collector_update_all_nodes_health_duration_seconds"
	PodDeletionsTotal            = "taint_eviction_controller_pod_deletions_total"
	PodDeletionDuration          = "taint_eviction_controller_pod_deletion_duration_seconds"
	DevicePodDeletionsTotal      = "device_taint_eviction_controller_pod_deletions_total"
	DevicePodDeletionDuration    = "device_taint_eviction_controller_pod_deletion_duration_seconds"

	ZoneQueueDepth      = "lifecycle_zone_queue_depth"
	ZoneEvictionRate    = "lifecycle_zone_eviction_rate"
	PendingEvictions    = "lifecycle_pending_evictions"
	NextDeadlineSeconds = "lifecycle_next_deadline_seconds"
	Leader              = "lifecycle_leader"
	// PassesHeld counts the monitor passes held by the Lease circuit
	// breaker (monitor.KindHealthHeld): a cache was behind the API server,
	// so no node was written Unknown. Upstream has no metric for it, only
	// a log line per skipped node.
	PassesHeld = "lifecycle_node_health_passes_held_total"

	// The device taint eviction's blast-radius limit
	// (taints.DeviceBlastRadius, ours; no series while it is off), per DRA
	// driver, read at scrape time from DeviceEvictor.DriverLimits: the
	// breaker's state (one series per state, 1 for the current one), the
	// pods whose eviction it holds, the evictions due and waiting for a
	// token of the driver's rate, and the two counts of the share it
	// judges. At most MaxDriverSeries drivers have series (those with a
	// hold, held pods or waiting evictions first, then by name);
	// DeviceDrivers counts them all.
	DeviceHoldState          = "lifecycle_device_taint_eviction_hold_state"
	DeviceHeldPods           = "lifecycle_device_taint_eviction_held_pods"
	DeviceThrottledEvictions = "lifecycle_device_taint_eviction_throttled_evictions"
	DeviceTaintedDevices     = "lifecycle_device_taint_eviction_tainted_devices"
	DeviceAllocatedDevices   = "lifecycle_device_taint_eviction_allocated_devices"
	DeviceDrivers            = "lifecycle_device_taint_eviction_drivers"
	// DeviceWarningsTotal counts the DeviceEvictor's warnings by kind
	// (taints.DeviceWarningKind's String: TimeAddedReset, Escalated,
	// SelectsAll); DeviceWarningsDropped those it did not keep (more than
	// KeepWarnings between two passes).
	DeviceWarningsTotal   = "lifecycle_device_taint_warnings_total"
	DeviceWarningsDropped = "lifecycle_device_taint_warnings_dropped_total"
)

// MaxDriverSeries bounds the drivers with per-driver series: DRA drivers
// are few, but the label comes from objects any driver may publish.
const MaxDriverSeries = 32

// DeviceSource is what the device metrics read at scrape time: a
// *taints.DeviceEvictor.
type DeviceSource interface {
	DriverLimits(dst []taints.DeviceDriverLimit) []taints.DeviceDriverLimit
	WarningsDropped() uint64
}

// Source is what the scrape-time metrics read: a Monitor.
type Source interface {
	Stats() monitor.Stats
	NextDeadline() (time.Time, bool)
}

// Metrics holds the collectors and the Registry they are registered on.
// Create it with New; it is safe for concurrent use.
type Metrics struct {
	// Registry holds every metric; serve it with promhttp.HandlerFor.
	Registry *prometheus.Registry

	clock clock.PassiveClock

	zoneHealth, zoneSize, unhealthy *prometheus.GaugeVec
	evictions                       *prometheus.CounterVec
	nodeHealthDuration, allNodes    prometheus.Histogram
	podDeletions                    prometheus.Counter
	podDeletionDuration             prometheus.Histogram
	devicePodDeletions              prometheus.Counter
	devicePodDeletionDuration       prometheus.Histogram
	zoneRate                        *prometheus.GaugeVec
	leader                          prometheus.Gauge
	passesHeld                      prometheus.Counter
	deviceWarnings                  *prometheus.CounterVec

	mu     sync.Mutex
	src    Source
	devSrc DeviceSource
	legacy bool
	zones  map[string]bool // zones with node_collector_zone_* series
}

// New returns Metrics on a new registry; clk is the controller's clock
// (NextDeadlineSeconds and the pod deletion latency are measured on it).
func New(clk clock.PassiveClock) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		clock:    clk,
		zones:    map[string]bool{},
		zoneHealth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ZoneHealth,
			Help: "Gauge measuring percentage of healthy nodes per zone."}, []string{"zone"}),
		zoneSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ZoneSize,
			Help: "Gauge measuring number of registered Nodes per zones."}, []string{"zone"}),
		unhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: UnhealthyNodesInZone,
			Help: "Gauge measuring number of not Ready Nodes per zones."}, []string{"zone"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: EvictionsTotal,
			Help: "Number of Node evictions that happened since current instance of NodeController started."}, []string{"zone"}),
		nodeHealthDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: UpdateNodeHealthDuration,
			Help:    "Duration in seconds for NodeController to update the health of a single node.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		allNodes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: UpdateAllNodesHealthDuration,
			Help:    "Duration in seconds for NodeController to update the health of all nodes.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8)}),
		podDeletions: prometheus.NewCounter(prometheus.CounterOpts{Name: PodDeletionsTotal,
			Help: "Total number of Pods deleted by TaintEvictionController since its start."}),
		podDeletionDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: PodDeletionDuration,
			Help:    "Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}}),
		devicePodDeletions: prometheus.NewCounter(prometheus.CounterOpts{Name: DevicePodDeletionsTotal,
			Help: "Total number of Pods deleted by DeviceTaintEvictionController since its start."}),
		devicePodDeletionDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: DevicePodDeletionDuration,
			Help:    "Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}}),
		zoneRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ZoneEvictionRate,
			Help: "Nodes per second the zone's NoExecute tainting queue lets through (0: stopped), set when the zone's state changes."}, []string{"zone"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: Leader,
			Help: "1 while this replica holds the leader lease (or runs without leader election), else 0."}),
	}
	m.Registry.MustRegister(m.zoneHealth, m.zoneSize, m.unhealthy, m.evictions, m.nodeHealthDuration, m.allNodes,
		m.podDeletions, m.podDeletionDuration, m.devicePodDeletions, m.devicePodDeletionDuration,
		m.zoneRate, m.leader, (*sourceCollector)(m))
	m.passesHeld = prometheus.NewCounter(prometheus.CounterOpts{Name: PassesHeld,
		Help: "Monitor passes held because the Lease (or Node) cache was behind the API server (NodeControllerLeaseCircuitBreaker): no node was written Unknown."})
	m.Registry.MustRegister(m.passesHeld)
	m.deviceWarnings = prometheus.NewCounterVec(prometheus.CounterOpts{Name: DeviceWarningsTotal,
		Help: "Device taint hazards found (TimeAdded reset, escalation keeping an old TimeAdded, a DeviceTaintRule selecting every device), by kind; each is also a Warning Event."}, []string{"kind"})
	m.Registry.MustRegister(m.deviceWarnings, (*deviceCollector)(m))
	return m
}

// AttachDevices makes the device metrics read src (the leader's
// DeviceEvictor, Controller.Devices); AttachDevices(nil) detaches it.
func (m *Metrics) AttachDevices(src DeviceSource) {
	m.mu.Lock()
	m.devSrc = src
	m.mu.Unlock()
}

// ObserveDeviceWarning counts one warning in
// lifecycle_device_taint_warnings_total; it fits
// controller.DeviceConfig.OnWarning.
func (m *Metrics) ObserveDeviceWarning(w taints.DeviceWarning) {
	kind := w.Kind.String()
	switch w.Kind {
	case taints.DeviceWarningTimeAddedReset, taints.DeviceWarningEscalated, taints.DeviceWarningSelectsAll:
	default:
		kind = "Other" // a kind this build does not know: one series, not one per value
	}
	m.deviceWarnings.WithLabelValues(kind).Inc()
}

// Attach makes the scrape-time metrics read src (the leader's Monitor);
// legacy says the Monitor runs in legacy mode (its pod deletions are not
// the taint eviction controller's). Attach(nil, false) detaches it.
func (m *Metrics) Attach(src Source, legacy bool) {
	m.mu.Lock()
	m.src, m.legacy = src, legacy
	m.mu.Unlock()
}

// SetLeader sets the leader gauge.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// OnEvent counts the Monitor's decisions: node_collector_evictions_total
// for each NoExecute taint added by the tainting pass (upstream counts
// there, in doNoExecuteTaintingPass) and each node whose pods legacy mode
// starts deleting; taint_eviction_controller_pod_deletions_total and the
// deletion latency for each pod the Evictor deleted; the zone rate on a
// zone state change; lifecycle_node_health_passes_held_total for each held
// monitor pass.
func (m *Metrics) OnEvent(e monitor.Event) {
	switch e.Kind {
	case monitor.KindTaintAdded:
		if e.Taint.Effect == v1.TaintEffectNoExecute {
			m.evictions.WithLabelValues(e.Zone).Inc()
		}
	case monitor.KindNodeEvicting:
		m.evictions.WithLabelValues(e.Zone).Inc()
	case monitor.KindPodEvicted:
		m.mu.Lock()
		legacy := m.legacy
		m.mu.Unlock()
		if legacy {
			return
		}
		m.podDeletions.Inc()
		// The latency from the start of the eviction pass that deleted
		// the pod (e.At) to now: the pass runs at the Monitor's next
		// deadline, so when the controller keeps up this is upstream's
		// time since the deletion was due. Unlike upstream v1.37.2, which
		// observes the duration times 1e9 (kubernetes/kubernetes#141311),
		// the value is in seconds.
		m.podDeletionDuration.Observe(max(m.clock.Since(e.At).Seconds(), 0))
	case monitor.KindZoneState:
		m.zoneRate.WithLabelValues(e.Zone).Set(e.QPS)
	case monitor.KindHealthHeld:
		m.passesHeld.Inc()
	}
}

// ObserveDeviceDeletion counts one pod deleted by the device taint
// eviction duty (or found terminating already, as upstream counts it) in
// device_taint_eviction_controller_pod_deletions_total, and records the
// time from when its eviction was due (the taint's TimeAdded plus the
// toleration) to the deletion in
// device_taint_eviction_controller_pod_deletion_duration_seconds, in
// seconds, as upstream's maybeDeletePod does; it fits
// controller.DeviceConfig.OnDeletion. A negative latency counts as 0.
func (m *Metrics) ObserveDeviceDeletion(latency time.Duration) {
	m.devicePodDeletions.Inc()
	m.devicePodDeletionDuration.Observe(max(latency.Seconds(), 0))
}

// ObserveNodeHealth records one node's health update in
// node_collector_update_node_health_duration_seconds, as upstream's
// monitorNodeHealth does for each tryUpdateNodeHealth call; it fits
// controller.Config.OnNodeHealth. The node's name is not a label (upstream
// has none).
func (m *Metrics) ObserveNodeHealth(_ string, took time.Duration) {
	m.nodeHealthDuration.Observe(took.Seconds())
}

// ObserveZones records a monitor pass: its duration and the zone gauges
// from the Monitor's zone decision of the pass (controller.Config.OnZones),
// as upstream's handleDisruption sets them: size, not-ready nodes, and
// health = 100 × ready / size. A zone that has no node any more keeps its
// series with size 0 and health 100, as upstream's zone states do not
// vanish either.
func (m *Metrics) ObserveZones(took time.Duration, zones []zonestate.ZoneDecision) {
	m.allNodes.Observe(took.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.zones {
		if !slices.ContainsFunc(zones, func(z zonestate.ZoneDecision) bool { return z.Key == k }) {
			m.zoneSize.WithLabelValues(k).Set(0)
			m.zoneHealth.WithLabelValues(k).Set(100)
			m.unhealthy.WithLabelValues(k).Set(0)
		}
	}
	for _, z := range zones {
		if z.Size == 0 {
			continue
		}
		m.zones[z.Key] = true
		m.zoneSize.WithLabelValues(z.Key).Set(float64(z.Size))
		m.zoneHealth.WithLabelValues(z.Key).Set(float64(100*(z.Size-z.NotReady)) / float64(z.Size))
		m.unhealthy.WithLabelValues(z.Key).Set(float64(z.NotReady))
	}
}

// ObserveMonitorPass records a monitor pass from the nodes the cache holds
// (controller.Config.OnMonitorPass): it counts the zones again as upstream's
// handleDisruption does (a node without Ready=True is unhealthy; nodes
// labelled node.kubernetes.io/exclude-disruption are not counted), then
// records them as ObserveZones. ObserveZones is cheaper and reports the
// Monitor's own decision; use this one without a Monitor.
func (m *Metrics) ObserveMonitorPass(took time.Duration, nodes []*v1.Node) {
	var zones []zonestate.ZoneDecision
	index := map[string]int{}
	for _, n := range nodes {
		if _, excluded := n.Labels[monitor.LabelExcludeDisruption]; excluded {
			continue
		}
		k := zonestate.Key(n)
		i, ok := index[k]
		if !ok {
			i = len(zones)
			index[k] = i
			zones = append(zones, zonestate.ZoneDecision{Key: k})
		}
		zones[i].Size++
		if !nodeReady(n) {
			zones[i].NotReady++
		}
	}
	m.ObserveZones(took, zones)
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// sourceCollector is the scrape-time part of Metrics: it reads the
// attached Source on every scrape.
type sourceCollector Metrics

var (
	queueDepthDesc = prometheus.NewDesc(ZoneQueueDepth,
		"Nodes waiting in the zone's NoExecute tainting (legacy: pod eviction) queue.", []string{"zone"}, nil)
	pendingDesc = prometheus.NewDesc(PendingEvictions,
		"Pods with a scheduled eviction (a NoExecute taint they tolerate for a while, or not at all, and not yet deleted).", nil, nil)
	nextDeadlineDesc = prometheus.NewDesc(NextDeadlineSeconds,
		"Seconds until the next tainting or eviction deadline (negative: overdue); absent when none is pending.", nil, nil)
)

// Describe sends the scrape-time descriptors.
func (s *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- pendingDesc
	ch <- nextDeadlineDesc
}

// Collect reads the attached Source; nothing when none is attached (a
// replica that is not the leader runs no Monitor).
func (s *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	src := s.src
	s.mu.Unlock()
	if src == nil {
		return
	}
	st := src.Stats()
	for zone, n := range st.QueuedByZone {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), zone)
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.Evictions))
	if at, ok := src.NextDeadline(); ok {
		d := at.Sub(s.clock.Now()).Seconds()
		if !math.IsNaN(d) {
			ch <- prometheus.MustNewConstMetric(nextDeadlineDesc, prometheus.GaugeValue, d)
		}
	}
}

// deviceCollector is the scrape-time part of the device metrics.
type deviceCollector Metrics

var (
	holdStateDesc = prometheus.NewDesc(DeviceHoldState,
		"1 for the blast-radius breaker's state of the DRA driver (Armed: its taints evict; Holding: more than the max share of its allocated devices are tainted, its taints evict no pod; Released: an operator released the hold), 0 for the others.",
		[]string{"driver", "state"}, nil)
	heldPodsDesc = prometheus.NewDesc(DeviceHeldPods,
		"Pods whose eviction the DRA driver's blast-radius breaker holds.", []string{"driver"}, nil)
	throttledDesc = prometheus.NewDesc(DeviceThrottledEvictions,
		"Evictions due and waiting for a token of the DRA driver's eviction rate.", []string{"driver"}, nil)
	taintedDevicesDesc = prometheus.NewDesc(DeviceTaintedDevices,
		"Allocated devices of the DRA driver with a NoExecute taint one of their claims does not tolerate forever (the breaker's numerator).", []string{"driver"}, nil)
	allocatedDevicesDesc = prometheus.NewDesc(DeviceAllocatedDevices,
		"Devices of the DRA driver allocated to at least one ResourceClaim (the breaker's denominator).", []string{"driver"}, nil)
	driversDesc = prometheus.NewDesc(DeviceDrivers,
		"DRA drivers the blast-radius limit tracks (per-driver series are kept for at most "+strconv.Itoa(MaxDriverSeries)+" of them).", nil, nil)
	warningsDroppedDesc = prometheus.NewDesc(DeviceWarningsDropped,
		"Device taint hazards not kept: more were found between two passes than the controller keeps (-device-taint-warnings).", nil, nil)
	holdStates = []taints.DeviceHoldState{taints.DeviceHoldArmed, taints.DeviceHoldHolding, taints.DeviceHoldReleased}
)

// Describe sends the device descriptors.
func (c *deviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{holdStateDesc, heldPodsDesc, throttledDesc, taintedDevicesDesc, allocatedDevicesDesc, driversDesc, warningsDroppedDesc} {
		ch <- d
	}
}

// Collect reads the attached DeviceSource; nothing when none is attached,
// and no driver series while the blast-radius limit is off (DriverLimits
// reports no driver then).
func (c *deviceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.devSrc
	c.mu.Unlock()
	if src == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(warningsDroppedDesc, prometheus.CounterValue, float64(src.WarningsDropped()))
	ls := src.DriverLimits(nil)
	if len(ls) == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(driversDesc, prometheus.GaugeValue, float64(len(ls)))
	busy := func(l taints.DeviceDriverLimit) bool {
		return l.State != taints.DeviceHoldArmed || l.HeldPods > 0 || l.Throttled > 0
	}
	slices.SortStableFunc(ls, func(a, b taints.DeviceDriverLimit) int { // busy drivers first, each part by name (as given)
		switch ba, bb := busy(a), busy(b); {
		case ba && !bb:
			return -1
		case bb && !ba:
			return 1
		}
		return 0
	})
	for _, l := range ls[:min(len(ls), MaxDriverSeries)] {
		for _, s := range holdStates {
			v := 0.0
			if l.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(holdStateDesc, prometheus.GaugeValue, v, l.Driver, s.String())
		}
		ch <- prometheus.MustNewConstMetric(heldPodsDesc, prometheus.GaugeValue, float64(l.HeldPods), l.Driver)
		ch <- prometheus.MustNewConstMetric(throttledDesc, prometheus.GaugeValue, float64(l.Throttled), l.Driver)
		ch <- prometheus.MustNewConstMetric(taintedDevicesDesc, prometheus.GaugeValue, float64(l.TaintedDevices), l.Driver)
		ch <- prometheus.MustNewConstMetric(allocatedDevicesDesc, prometheus.GaugeValue, float64(l.AllocatedDevices), l.Driver)
	}
}
