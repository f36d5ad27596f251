package controller

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Decision values of the lifecycle_conditiontaint_decisions_total metric.
const (
	DecisionQueued          = "queued"            // a node needs a taint and waits in its zone's queue
	DecisionTainted         = "tainted"           // a taint was added
	DecisionUntainted       = "untainted"         // the condition cleared: the taint was removed
	DecisionHeldByBreaker   = "held_by_breaker"   // the zone's breaker stops tainting
	DecisionWaitingForRate  = "waiting_for_rate"  // the zone's rate limit delays the taint
	DecisionBreakerUntaint  = "breaker_untainted" // every zone is unhealthy: taint removed
	DecisionEvicted         = "evicted"           // a pod was deleted
	DecisionEvictionFailed  = "eviction_failed"   // a pod deletion failed and is retried
	DecisionEvictionSkipped = "eviction_skipped"  // the pod was gone or replaced
	DecisionEvictionPaused  = "eviction_paused"   // a due eviction held: its group is tripped
)

// Metrics are the controller's Prometheus metrics, all in the
// lifecycle_conditiontaint_ namespace.
type Metrics struct {
	Decisions        *prometheus.CounterVec // decision, dry_run
	ZoneSize         *prometheus.GaugeVec   // zone
	ZoneUnhealthy    *prometheus.GaugeVec   // zone
	ZoneRate         *prometheus.GaugeVec   // zone
	ZoneState        *prometheus.GaugeVec   // zone, state (1 for the current state)
	Pending          *prometheus.GaugeVec   // zone, reason (held_by_breaker, waiting_for_rate)
	FullDisruption   prometheus.Gauge
	ScheduledEvicts  prometheus.Gauge
	ZonePassDuration prometheus.Histogram
	// PausedEvicts counts the due evictions held while their group is
	// tripped (ZoneConfig.PauseEvictions).
	PausedEvicts prometheus.Gauge
	// ZoneEvictionsPaused is 1 for a group whose evictions are paused
	// (zone).
	ZoneEvictionsPaused *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime registry in the program, a fresh one in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "lifecycle", "conditiontaint"
	m := &Metrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "decisions_total",
			Help: "Decisions taken, by decision (queued, tainted, untainted, held_by_breaker, waiting_for_rate, breaker_untainted, evicted, eviction_failed, eviction_skipped, eviction_paused) and dry_run."},
			[]string{"decision", "dry_run"}),
		ZoneSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "zone_size",
			Help: "Nodes counted in the zone at the last zone pass."}, []string{"zone"}),
		ZoneUnhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "zone_unhealthy_nodes",
			Help: "Nodes of the zone whose conditions call for a taint, at the last zone pass."}, []string{"zone"}),
		ZoneRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "zone_taint_rate",
			Help: "Nodes per second the zone's nodes may be tainted at (0: held by the breaker)."}, []string{"zone"}),
		ZoneState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "zone_state",
			Help: "1 for the zone's current state (Normal, PartialDisruption, FullDisruption)."}, []string{"zone", "state"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "pending_nodes",
			Help: "Nodes waiting for a taint, by zone and reason (held_by_breaker, waiting_for_rate)."}, []string{"zone", "reason"}),
		FullDisruption: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "full_disruption",
			Help: "1 while every zone is fully unhealthy: nothing is tainted."}),
		ScheduledEvicts: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "scheduled_evictions",
			Help: "Pod evictions scheduled by toleration time."}),
		ZonePassDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "zone_pass_duration_seconds",
			Help: "Duration of a zone pass (count, decide, queue).", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8)}),
		PausedEvicts: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "paused_evictions",
			Help: "Due pod evictions held because their node's group is tripped (zones.pauseEvictions)."}),
		ZoneEvictionsPaused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "zone_evictions_paused",
			Help: "1 while the group's evictions are paused: it is tripped and zones.pauseEvictions is set."}, []string{"zone"}),
	}
	for _, c := range []prometheus.Collector{m.Decisions, m.ZoneSize, m.ZoneUnhealthy, m.ZoneRate, m.ZoneState, m.Pending,
		m.FullDisruption, m.ScheduledEvicts, m.ZonePassDuration, m.PausedEvicts, m.ZoneEvictionsPaused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// decision counts one decision.
func (m *Metrics) decision(d string, dryRun bool) {
	dr := "false"
	if dryRun {
		dr = "true"
	}
	m.Decisions.WithLabelValues(d, dr).Inc()
}

// forgetZone drops a removed zone's series.
func (m *Metrics) forgetZone(zone string) {
	m.ZoneSize.DeleteLabelValues(zone)
	m.ZoneUnhealthy.DeleteLabelValues(zone)
	m.ZoneRate.DeleteLabelValues(zone)
	m.ZoneState.DeletePartialMatch(prometheus.Labels{"zone": zone})
	m.Pending.DeletePartialMatch(prometheus.Labels{"zone": zone})
	m.ZoneEvictionsPaused.DeleteLabelValues(zone)
}
