package metrics_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type source struct {
	stats monitor.Stats
	next  time.Time
}

func (s source) Stats() monitor.Stats            { return s.stats }
func (s source) NextDeadline() (time.Time, bool) { return s.next, !s.next.IsZero() }

func node(name, zone string, ready v1.ConditionStatus, labels ...string) *v1.Node {
	l := map[string]string{v1.LabelTopologyZone: zone}
	for _, k := range labels {
		l[k] = ""
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}}}
}

// TestUpstreamNamesTypesBuckets: every metric is exported under upstream's
// name, type, labels and buckets (kube-controller-manager v1.37.2), and
// ours under lifecycle_.
func TestUpstreamNamesTypesBuckets(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	m := metrics.New(clk)
	zone := zonestate.Key(node("a", "z1", v1.ConditionTrue))
	m.ObserveMonitorPass(20*time.Millisecond, []*v1.Node{node("a", "z1", v1.ConditionTrue)})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindTaintAdded, Zone: zone,
		Taint: v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindPodEvicted, Zone: zone, Pod: "default/p"})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindZoneState, Zone: zone, QPS: 0.1})
	m.Attach(source{stats: monitor.Stats{QueuedByZone: map[string]int{zone: 2}, Evictions: 3}, next: epoch.Add(5 * time.Second)}, false)
	m.SetLeader(true)

	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		got[f.GetName()] = f
	}
	exp := func(start, factor float64, n int) []float64 {
		var b []float64
		for range n {
			b = append(b, start)
			start *= factor
		}
		return b
	}
	tests := []struct {
		name    string
		typ     dto.MetricType
		labels  []string
		buckets []float64
	}{
		{metrics.ZoneHealth, dto.MetricType_GAUGE, []string{"zone"}, nil},
		{metrics.ZoneSize, dto.MetricType_GAUGE, []string{"zone"}, nil},
		{metrics.UnhealthyNodesInZone, dto.MetricType_GAUGE, []string{"zone"}, nil},
		{metrics.EvictionsTotal, dto.MetricType_COUNTER, []string{"zone"}, nil},
		{metrics.UpdateNodeHealthDuration, dto.MetricType_HISTOGRAM, nil, exp(0.001, 4, 8)},
		{metrics.UpdateAllNodesHealthDuration, dto.MetricType_HISTOGRAM, nil, exp(0.01, 4, 8)},
		{metrics.PodDeletionsTotal, dto.MetricType_COUNTER, nil, nil},
		{metrics.PodDeletionDuration, dto.MetricType_HISTOGRAM, nil, []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}},
		{metrics.ZoneQueueDepth, dto.MetricType_GAUGE, []string{"zone"}, nil},
		{metrics.ZoneEvictionRate, dto.MetricType_GAUGE, []string{"zone"}, nil},
		{metrics.PendingEvictions, dto.MetricType_GAUGE, nil, nil},
		{metrics.NextDeadlineSeconds, dto.MetricType_GAUGE, nil, nil},
		{metrics.Leader, dto.MetricType_GAUGE, nil, nil},
	}
	want := []string{
		"node_collector_zone_health", "node_collector_zone_size", "node_collector_unhealthy_nodes_in_zone",
		"node_collector_evictions_total", "node_collector_update_node_health_duration_seconds",
		"node_collector_update_all_nodes_health_duration_seconds", "taint_eviction_controller_pod_deletions_total",
		"taint_eviction_controller_pod_deletion_duration_seconds",
	}
	for i, n := range want {
		if tests[i].name != n {
			t.Errorf("metric %d named %q, want upstream's %q", i, tests[i].name, n)
		}
	}
	for _, tt := range tests {
		f := got[tt.name]
		if f == nil {
			if tt.name != metrics.UpdateNodeHealthDuration { // registered, not observed in this test: still exported
				t.Errorf("%s not exported", tt.name)
			}
			continue
		}
		if f.GetType() != tt.typ {
			t.Errorf("%s type %v, want %v", tt.name, f.GetType(), tt.typ)
		}
		for _, mm := range f.GetMetric() {
			var labels []string
			for _, l := range mm.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if !slices.Equal(labels, tt.labels) {
				t.Errorf("%s labels %q, want %q", tt.name, labels, tt.labels)
			}
			if tt.buckets != nil {
				var b []float64
				for _, bk := range mm.GetHistogram().GetBucket() {
					b = append(b, bk.GetUpperBound())
				}
				if len(b) != len(tt.buckets) {
					t.Errorf("%s buckets %v, want %v", tt.name, b, tt.buckets)
				}
				for i := range min(len(b), len(tt.buckets)) {
					if d := b[i] - tt.buckets[i]; d > 1e-12 || d < -1e-12 {
						t.Errorf("%s bucket %d = %v, want %v", tt.name, i, b[i], tt.buckets[i])
					}
				}
			}
		}
	}
	if _, ok := got[metrics.UpdateNodeHealthDuration]; !ok {
		// A histogram without observations is still gathered.
		t.Errorf("%s not exported", metrics.UpdateNodeHealthDuration)
	}
}

// TestValues: the values follow the Monitor's events and stats.
func TestValues(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	m := metrics.New(clk)
	z1 := zonestate.Key(node("a", "z1", v1.ConditionTrue))
	z2 := zonestate.Key(node("d", "z2", v1.ConditionTrue))
	nodes := []*v1.Node{
		node("a", "z1", v1.ConditionTrue), node("b", "z1", v1.ConditionUnknown), node("c", "z1", v1.ConditionFalse),
		node("x", "z1", v1.ConditionFalse, monitor.LabelExcludeDisruption), node("d", "z2", v1.ConditionTrue),
	}
	m.ObserveMonitorPass(time.Second, nodes)
	checks := []struct {
		name, zone string
		want       float64
	}{
		{metrics.ZoneSize, z1, 3}, {metrics.UnhealthyNodesInZone, z1, 2},
		{metrics.ZoneSize, z2, 1}, {metrics.ZoneHealth, z2, 100}, {metrics.UnhealthyNodesInZone, z2, 0},
	}
	gauge := func(name, zone string) float64 {
		t.Helper()
		var v float64
		switch name {
		case metrics.ZoneSize, metrics.UnhealthyNodesInZone, metrics.ZoneHealth, metrics.EvictionsTotal, metrics.ZoneEvictionRate:
			fams, _ := m.Registry.Gather()
			for _, f := range fams {
				if f.GetName() != name {
					continue
				}
				for _, mm := range f.GetMetric() {
					if mm.GetLabel()[0].GetValue() == zone {
						v = mm.GetGauge().GetValue() + mm.GetCounter().GetValue()
					}
				}
			}
		}
		return v
	}
	for _, c := range checks {
		if got := gauge(c.name, c.zone); got != c.want {
			t.Errorf("%s{zone=%q} = %v, want %v", c.name, c.zone, got, c.want)
		}
	}
	if got := gauge(metrics.ZoneHealth, z1); got < 33.3 || got > 33.4 {
		t.Errorf("zone health z1 = %v, want 100/3", got)
	}
	// z2 loses its node: size 0, health 100.
	m.ObserveMonitorPass(time.Second, nodes[:3])
	if got := gauge(metrics.ZoneSize, z2); got != 0 {
		t.Errorf("zone size z2 after its node went = %v, want 0", got)
	}

	noExec := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	noSched := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindTaintAdded, Zone: z1, Taint: noExec})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindTaintAdded, Zone: z1, Taint: noSched})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindTaintRemoved, Zone: z1, Taint: noExec})
	if got := gauge(metrics.EvictionsTotal, z1); got != 1 {
		t.Errorf("evictions_total z1 = %v, want 1 (NoExecute taints added only)", got)
	}
	clk.Step(1500 * time.Millisecond)
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindPodEvicted, Zone: z1, Pod: "default/p"})
	m.Attach(source{}, true) // legacy: not the taint eviction controller's
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindPodEvicted, Zone: z1, Pod: "default/q"})
	m.OnEvent(monitor.Event{At: epoch, Kind: monitor.KindNodeEvicting, Zone: z1, Node: "b"})
	if got := gauge(metrics.EvictionsTotal, z1); got != 2 {
		t.Errorf("evictions_total z1 = %v, want 2 (legacy node eviction counts)", got)
	}
	exposition := `
# HELP taint_eviction_controller_pod_deletions_total Total number of Pods deleted by TaintEvictionController since its start.
# TYPE taint_eviction_controller_pod_deletions_total counter
taint_eviction_controller_pod_deletions_total 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(exposition), metrics.PodDeletionsTotal); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry, metrics.PodDeletionDuration); n != 1 {
		t.Errorf("deletion duration series = %d, want 1", n)
	}

	// Scrape-time metrics: nothing without a source, the source's numbers
	// with one.
	m.Attach(nil, false)
	if n := testutil.CollectAndCount(m.Registry, metrics.PendingEvictions, metrics.ZoneQueueDepth, metrics.NextDeadlineSeconds); n != 0 {
		t.Errorf("scrape-time series without a source = %d, want 0", n)
	}
	m.Attach(source{stats: monitor.Stats{QueuedByZone: map[string]int{z1: 2, z2: 0}, Evictions: 3}, next: clk.Now().Add(-2 * time.Second)}, false)
	m.SetLeader(true)
	exposition = `
# HELP lifecycle_leader 1 while this replica holds the leader lease (or runs without leader election), else 0.
# TYPE lifecycle_leader gauge
lifecycle_leader 1
# HELP lifecycle_next_deadline_seconds Seconds until the next tainting or eviction deadline (negative: overdue); absent when none is pending.
# TYPE lifecycle_next_deadline_seconds gauge
lifecycle_next_deadline_seconds -2
# HELP lifecycle_pending_evictions Pods with a scheduled eviction (a NoExecute taint they tolerate for a while, or not at all, and not yet deleted).
# TYPE lifecycle_pending_evictions gauge
lifecycle_pending_evictions 3
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(exposition), metrics.Leader, metrics.NextDeadlineSeconds, metrics.PendingEvictions); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry, metrics.ZoneQueueDepth); n != 2 {
		t.Errorf("queue depth series = %d, want 2", n)
	}
}

// TestDeviceMetrics: the device taint eviction controller's two metrics
// under upstream's names, help texts, types, (no) labels and buckets
// (pkg/controller/devicetainteviction/metrics at v1.37.2), observed in
// seconds.
func TestDeviceMetrics(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	m.ObserveDeviceDeletion(3 * time.Second)
	m.ObserveDeviceDeletion(-time.Second) // a clock step: 0
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		got[f.GetName()] = f
	}
	total, hist := got["device_taint_eviction_controller_pod_deletions_total"], got["device_taint_eviction_controller_pod_deletion_duration_seconds"]
	if total == nil || hist == nil {
		t.Fatalf("device metrics not exported: %v", fams)
	}
	if total.GetType() != dto.MetricType_COUNTER || total.GetHelp() != "Total number of Pods deleted by DeviceTaintEvictionController since its start." ||
		len(total.GetMetric()) != 1 || len(total.GetMetric()[0].GetLabel()) != 0 || total.GetMetric()[0].GetCounter().GetValue() != 2 {
		t.Errorf("pod_deletions_total = %v", total)
	}
	h := hist.GetMetric()[0].GetHistogram()
	if hist.GetType() != dto.MetricType_HISTOGRAM ||
		hist.GetHelp() != "Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController." ||
		h.GetSampleCount() != 2 || h.GetSampleSum() != 3 {
		t.Errorf("pod_deletion_duration_seconds = %v", hist)
	}
	var b []float64
	for _, bk := range h.GetBucket() {
		b = append(b, bk.GetUpperBound())
	}
	if want := []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}; !slices.Equal(b, want) {
		t.Errorf("buckets %v, want %v", b, want)
	}
}
