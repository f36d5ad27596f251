package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
	"github.com/kubelifecycle/lifecycle/taints"
)

// deviceSource is a DeviceSource with fixed values.
type deviceSource struct {
	limits  []taints.DeviceDriverLimit
	dropped uint64
}

func (s deviceSource) DriverLimits(dst []taints.DeviceDriverLimit) []taints.DeviceDriverLimit {
	return append(dst, s.limits...)
}
func (s deviceSource) WarningsDropped() uint64 { return s.dropped }

// TestDeviceBlastRadiusMetrics: the per-driver series read from
// DriverLimits at scrape time (the hold state one-hot), the warnings by
// kind (an unknown kind in one "Other" series) and the dropped count;
// nothing once detached.
func TestDeviceBlastRadiusMetrics(t *testing.T) {
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	m.AttachDevices(deviceSource{dropped: 2, limits: []taints.DeviceDriverLimit{
		{Driver: "gpu.example.com", State: taints.DeviceHoldHolding, AllocatedDevices: 4, TaintedDevices: 4, HeldPods: 7},
		{Driver: "nic.example.com", State: taints.DeviceHoldArmed, AllocatedDevices: 10, TaintedDevices: 1, Throttled: 1},
	}})
	for _, k := range []taints.DeviceWarningKind{taints.DeviceWarningSelectsAll, taints.DeviceWarningSelectsAll, taints.DeviceWarningTimeAddedReset, 99} {
		m.ObserveDeviceWarning(taints.DeviceWarning{Kind: k})
	}
	const exposition = `
# HELP lifecycle_device_taint_eviction_allocated_devices Devices of the DRA driver allocated to at least one ResourceClaim (the breaker's denominator).
# TYPE lifecycle_device_taint_eviction_allocated_devices gauge
lifecycle_device_taint_eviction_allocated_devices{driver="gpu.example.com"} 4
lifecycle_device_taint_eviction_allocated_devices{driver="nic.example.com"} 10
# HELP lifecycle_device_taint_eviction_drivers DRA drivers the blast-radius limit tracks (per-driver series are kept for at most 32 of them).
# TYPE lifecycle_device_taint_eviction_drivers gauge
lifecycle_device_taint_eviction_drivers 2
# HELP lifecycle_device_taint_eviction_held_pods Pods whose eviction the DRA driver's blast-radius breaker holds.
# TYPE lifecycle_device_taint_eviction_held_pods gauge
lifecycle_device_taint_eviction_held_pods{driver="gpu.example.com"} 7
lifecycle_device_taint_eviction_held_pods{driver="nic.example.com"} 0
# HELP lifecycle_device_taint_eviction_hold_state 1 for the blast-radius breaker's state of the DRA driver (Armed: its taints evict; Holding: more than the max share of its allocated devices are tainted, its taints evict no pod; Released: an operator released the hold), 0 for the others.
# TYPE lifecycle_device_taint_eviction_hold_state gauge
lifecycle_device_taint_eviction_hold_state{driver="gpu.example.com",state="Armed"} 0
lifecycle_device_taint_eviction_hold_state{driver="gpu.example.com",state="Holding"} 1
lifecycle_device_taint_eviction_hold_state{driver="gpu.example.com",state="Released"} 0
lifecycle_device_taint_eviction_hold_state{driver="nic.example.com",state="Armed"} 1
lifecycle_device_taint_eviction_hold_state{driver="nic.example.com",state="Holding"} 0
lifecycle_device_taint_eviction_hold_state{driver="nic.example.com",state="Released"} 0
# HELP lifecycle_device_taint_eviction_tainted_devices Allocated devices of the DRA driver with a NoExecute taint one of their claims does not tolerate forever (the breaker's numerator).
# TYPE lifecycle_device_taint_eviction_tainted_devices gauge
lifecycle_device_taint_eviction_tainted_devices{driver="gpu.example.com"} 4
lifecycle_device_taint_eviction_tainted_devices{driver="nic.example.com"} 1
# HELP lifecycle_device_taint_eviction_throttled_evictions Evictions due and waiting for a token of the DRA driver's eviction rate.
# TYPE lifecycle_device_taint_eviction_throttled_evictions gauge
lifecycle_device_taint_eviction_throttled_evictions{driver="gpu.example.com"} 0
lifecycle_device_taint_eviction_throttled_evictions{driver="nic.example.com"} 1
# HELP lifecycle_device_taint_warnings_dropped_total Device taint hazards not kept: more were found between two passes than the controller keeps (-device-taint-warnings).
# TYPE lifecycle_device_taint_warnings_dropped_total counter
lifecycle_device_taint_warnings_dropped_total 2
# HELP lifecycle_device_taint_warnings_total Device taint hazards found (TimeAdded reset, escalation keeping an old TimeAdded, a DeviceTaintRule selecting every device), by kind; each is also a Warning Event.
# TYPE lifecycle_device_taint_warnings_total counter
lifecycle_device_taint_warnings_total{kind="Other"} 1
lifecycle_device_taint_warnings_total{kind="SelectsAll"} 2
lifecycle_device_taint_warnings_total{kind="TimeAddedReset"} 1
`
	names := []string{metrics.DeviceHoldState, metrics.DeviceHeldPods, metrics.DeviceThrottledEvictions, metrics.DeviceTaintedDevices,
		metrics.DeviceAllocatedDevices, metrics.DeviceDrivers, metrics.DeviceWarningsTotal, metrics.DeviceWarningsDropped}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(exposition), names...); err != nil {
		t.Error(err)
	}
	m.AttachDevices(nil)
	if n := testutil.CollectAndCount(m.Registry, metrics.DeviceHoldState, metrics.DeviceDrivers, metrics.DeviceWarningsDropped); n != 0 {
		t.Errorf("%d device series once detached, want 0", n)
	}
}

// TestDeviceDriverSeriesCapped: at most MaxDriverSeries drivers get
// series, those with a hold, held pods or waiting evictions first; the
// drivers gauge counts them all.
func TestDeviceDriverSeriesCapped(t *testing.T) {
	var ls []taints.DeviceDriverLimit
	for i := range metrics.MaxDriverSeries + 8 {
		ls = append(ls, taints.DeviceDriverLimit{Driver: fmt.Sprintf("d%02d.example.com", i), State: taints.DeviceHoldArmed, AllocatedDevices: 1})
	}
	ls[len(ls)-1].State = taints.DeviceHoldHolding // last by name
	ls[len(ls)-2].Throttled = 3
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	m.AttachDevices(deviceSource{limits: ls})
	if n := testutil.CollectAndCount(m.Registry, metrics.DeviceHeldPods); n != metrics.MaxDriverSeries {
		t.Errorf("%d held_pods series, want %d", n, metrics.MaxDriverSeries)
	}
	if n := testutil.CollectAndCount(m.Registry, metrics.DeviceHoldState); n != 3*metrics.MaxDriverSeries {
		t.Errorf("%d hold_state series, want %d", n, 3*metrics.MaxDriverSeries)
	}
	want := fmt.Sprintf(`
# HELP lifecycle_device_taint_eviction_drivers DRA drivers the blast-radius limit tracks (per-driver series are kept for at most 32 of them).
# TYPE lifecycle_device_taint_eviction_drivers gauge
lifecycle_device_taint_eviction_drivers %d
`, len(ls))
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), metrics.DeviceDrivers); err != nil {
		t.Error(err)
	}
	if v, ok := driverValue(t, m, metrics.DeviceThrottledEvictions, ls[len(ls)-2].Driver); !ok || v != 3 {
		t.Errorf("throttled of a busy driver beyond the cap by name = %v, %v; want 3 (kept)", v, ok)
	}
	if v, ok := driverValue(t, m, metrics.DeviceHeldPods, ls[len(ls)-1].Driver); !ok || v != 0 {
		t.Errorf("held pods of the holding driver last by name = %v, %v; want 0 (kept)", v, ok)
	}
	if _, ok := driverValue(t, m, metrics.DeviceHeldPods, ls[len(ls)-3].Driver); ok {
		t.Errorf("a quiet driver beyond the cap has series")
	}
}

// driverValue returns the value of name's series for driver.
func driverValue(t *testing.T, m *metrics.Metrics, name, driver string) (float64, bool) {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "driver" && l.GetValue() == driver {
					return s.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestDeviceMetricsOffByDefault: a DeviceEvictor without a blast-radius
// limit (upstream's behaviour) gives no per-driver series.
func TestDeviceMetricsOffByDefault(t *testing.T) {
	ev, err := taints.NewDeviceEvictor(taints.DefaultDeviceEvictorConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(clocktesting.NewFakeClock(epoch))
	m.AttachDevices(ev)
	if n := testutil.CollectAndCount(m.Registry, metrics.DeviceHoldState, metrics.DeviceHeldPods, metrics.DeviceDrivers, metrics.DeviceWarningsTotal); n != 0 {
		t.Errorf("%d device series with the limit off, want 0", n)
	}
}
