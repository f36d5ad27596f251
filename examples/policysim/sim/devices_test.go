package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/taints"
)

const gpuDriver = "gpu.nvidia.com"

// xidStorm returns the embedded xid-storm scenario with a policy field
// set ("" for none).
func xidStorm(t testing.TB, field, value string) *Scenario {
	t.Helper()
	sc := loadEmbedded(t, "xid-storm")
	if field == "" {
		return sc
	}
	sc, err := sc.With(field, value)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// deviceTimes returns the instants of the device-pod-evicted entries.
func deviceTimes(res *Result) []time.Duration {
	var out []time.Duration
	for _, e := range find(res, KindDevicePodEvicted, "", "") {
		out = append(out, e.At)
	}
	return out
}

func driverSummary(t *testing.T, res *Result) DriverSummary {
	t.Helper()
	d := res.Summary.Devices
	if d == nil || len(d.Drivers) != 1 || d.Drivers[0].Driver != gpuDriver {
		t.Fatalf("Summary.Devices = %+v, want one driver %s", d, gpuDriver)
	}
	return d.Drivers[0]
}

// TestXIDStorm is the embedded scenario under upstream's behaviour (the
// default): the driver taints 400 of the 4,000 GPUs, 34 or so every 5s
// from 2m to 2m55s, and every pod on a tainted GPU (300 training pods
// with a GPU each, 100 claims shared by 2 inference pods) is deleted the
// instant its GPU's taint lands: 500 pods, none tolerating it.
func TestXIDStorm(t *testing.T) {
	res := mustRun(t, loadEmbedded(t, "xid-storm"), Options{})
	d := driverSummary(t, res)
	taintAt := map[string]time.Duration{}
	for _, e := range find(res, KindDeviceTaint, "", "") {
		taintAt[e.Device] = e.At
	}
	for _, e := range find(res, KindDevicePodEvicted, "", "") {
		if at, ok := taintAt[e.Device]; !ok || at != e.At {
			t.Errorf("%s evicted at %v, its device %s tainted at %v (%v); want the same instant", e.Pod, e.At, e.Device, at, ok)
			break
		}
	}
	verify(t, []check{
		{"device-taint instants", instants(find(res, KindDeviceTaint, "", "")), step(2*time.Minute, 5*sec, 12)},
		{"devices tainted", len(taintAt), 400},
		{"eviction instants", instants(find(res, KindDevicePodEvicted, "", "")), step(2*time.Minute, 5*sec, 12)},
		{"summary", []any{d.Devices, d.AllocatedDevices, d.Claims, d.PodsWithClaims, d.DevicesTainted, d.PodsEvicted, *d.FirstEviction, *d.LastEviction},
			[]any{4000, 4000, 4000, 5000, 400, 500, 2 * time.Minute, 2*time.Minute + 55*sec}},
		{"inference pods evicted", countPods(res, "-infer-"), 200},
		{"training pods evicted", countPods(res, "-train-"), 300},
		{"by 2m30s", res.DeviceEvictedBy(gpuDriver, 150*sec), res.DeviceEvictedBy("", 150*sec)},
		{"all pods evicted, none by the node path", []int{res.Summary.PodsEvicted, res.Summary.Zones[0].PodsEvicted + res.Summary.Zones[1].PodsEvicted,
			res.Summary.Zones[0].DevicePodsEvicted + res.Summary.Zones[1].DevicePodsEvicted}, []int{500, 0, 500}},
		{"no hold, nothing held, delayed, cancelled or pending", []any{len(d.Holds), d.PeakHeld, d.PodsHeld, d.LongestDelay, d.Cancelled, d.EvictionsPending, res.Pending.Done},
			[]any{0, 0, 0, time.Duration(0), 0, 0, true}},
		{"untainted node by node from 6m, every 10s", instants(find(res, KindDeviceUntaint, "", "")), step(6*time.Minute, 10*sec, 6)},
		{"untainted", len(find(res, KindDeviceUntaint, "", "")), 400},
	})
	evictedByDevice := 0
	for _, o := range res.Pods() {
		if o.EvictedByDevice {
			evictedByDevice++
		}
		if !o.Evicted && strings.Contains(o.Pod.Name, "-train-") && (o.Device == nil || o.Device.State != taints.DeviceNotTainted) {
			t.Errorf("pod %s kept: device explanation %v, want NotTainted", o.Pod, o.Device)
			break
		}
	}
	if evictedByDevice != 500 {
		t.Errorf("Pods(): %d evicted by device taints, want 500", evictedByDevice)
	}
}

func countPods(res *Result, part string) int {
	n := 0
	for _, e := range find(res, KindDevicePodEvicted, "", "") {
		if strings.Contains(e.Pod, part) {
			n++
		}
	}
	return n
}

// TestXIDStormLimits is the same storm against the blast-radius limit: a
// breaker at 5% holds once the 7th batch (2m30s) takes the driver past
// 200 of its 4,000 allocated GPUs, after the first 250 pods went; the hold
// lasts through the roll-back, node by node from 6m to 6m50s (resume
// share 0: until none is tainted), and the held pods stay: no deletion
// and no cancellation. Without hysteresis (deviceResumeShare =
// deviceMaxShare) the hold ends half-way, at 6m20s when the share is back
// at 5%, and the 127 pods still on tainted GPUs are deleted there and
// then, each a batch or more before its own node's untaint. At 20% it
// never trips (10% are tainted): upstream's 500. A rate of one pod a
// second evicts one a second from 2m until the roll-back reaches each
// pod's node; it cancels the rest. An operator's release at 4m lets the
// 250 held pods go at once.
func TestXIDStormLimits(t *testing.T) {
	upstream := deviceTimes(mustRun(t, loadEmbedded(t, "xid-storm"), Options{}))

	res := mustRun(t, xidStorm(t, "deviceMaxShare", "0.05"), Options{})
	d := driverSummary(t, res)
	verify(t, []check{
		{"breaker: holds", d.Holds, []HoldChange{{T: 150 * sec, State: "Holding", TaintedDevices: 234, AllocatedDevices: 4000}, {T: 6*time.Minute + 50*sec, State: "Armed", TaintedDevices: 0, AllocatedDevices: 4000}}},
		{"breaker: evicted, last, most held, held at the end", []any{d.PodsEvicted, *d.LastEviction, d.PeakHeld, d.PodsHeld, d.FinalState}, []any{250, 145 * sec, 250, 0, "Armed"}},
		{"breaker: nothing deleted or cancelled during the roll-back", []int{res.DeviceEvictedBy("", 8*time.Minute) - res.DeviceEvictedBy("", 6*time.Minute-1), d.Cancelled}, []int{0, 0}},
		{"breaker: the evictions are upstream's before the hold", deviceTimes(res), upstream[:250]},
		{"breaker: hold entries", len(find(res, KindDeviceHold, "", "")), 2},
	})
	if hold := find(res, KindDeviceHold, "", ""); len(hold) > 0 && hold[0].Detail != "DeviceTaintEvictionHeld: Evictions held: 234 of 4000 allocated devices of driver gpu.nvidia.com (5.9%) have an untolerated NoExecute taint, more than 5%; the hold ends when none is tainted." {
		t.Errorf("hold entry detail = %q", hold[0].Detail)
	}

	sc, err := xidStorm(t, "deviceMaxShare", "0.05").With("deviceResumeShare", "0.05")
	if err != nil {
		t.Fatal(err)
	}
	res = mustRun(t, sc, Options{})
	d = driverSummary(t, res)
	verify(t, []check{
		{"no hysteresis: holds", d.Holds, []HoldChange{{T: 150 * sec, State: "Holding", TaintedDevices: 234, AllocatedDevices: 4000}, {T: 6*time.Minute + 20*sec, State: "Armed", TaintedDevices: 200, AllocatedDevices: 4000}}},
		{"no hysteresis: deleted during the roll-back", res.DeviceEvictedBy("", 8*time.Minute) - res.DeviceEvictedBy("", 6*time.Minute-1), 127},
		{"no hysteresis: eviction instants", instants(find(res, KindDevicePodEvicted, "", "")), append(step(2*time.Minute, 5*sec, 6), 6*time.Minute+20*sec)},
		{"no hysteresis: evicted, cancelled", []int{d.PodsEvicted, d.Cancelled}, []int{377, 0}},
	})
	// Each of them was deleted before the roll-back reached its node.
	untainted := map[string]time.Duration{}
	for _, e := range find(res, KindDeviceUntaint, "", "") {
		untainted[e.Device] = e.At
	}
	for _, e := range find(res, KindDevicePodEvicted, "", "") {
		if at, ok := untainted[e.Device]; e.At > 6*time.Minute && (!ok || at <= e.At) {
			t.Errorf("no hysteresis: %s evicted at %v, its device %s untainted at %v (%v); want before", e.Pod, e.At, e.Device, at, ok)
			break
		}
	}

	// With deviceResumeAfter the hold ends 30s after the roll-back, at the
	// DeviceEvictor's deadline, with nothing to evict.
	sc, err = xidStorm(t, "deviceMaxShare", "0.05").With("deviceResumeAfter", "30s")
	if err != nil {
		t.Fatal(err)
	}
	res = mustRun(t, sc, Options{})
	d = driverSummary(t, res)
	verify(t, []check{
		{"resume after: holds", d.Holds, []HoldChange{{T: 150 * sec, State: "Holding", TaintedDevices: 234, AllocatedDevices: 4000}, {T: 7*time.Minute + 20*sec, State: "Armed", TaintedDevices: 0, AllocatedDevices: 4000}}},
		{"resume after: evicted, cancelled", []int{d.PodsEvicted, d.Cancelled}, []int{250, 0}},
	})

	res = mustRun(t, xidStorm(t, "deviceMaxShare", "0.2"), Options{})
	if got := deviceTimes(res); !slices.Equal(got, upstream) {
		t.Errorf("breaker at 20%%: %d evictions, want upstream's %d at the same times", len(got), len(upstream))
	}

	res = mustRun(t, xidStorm(t, "deviceEvictionQPS", "1"), Options{})
	d = driverSummary(t, res)
	verify(t, []check{
		{"rate: eviction instants", instants(find(res, KindDevicePodEvicted, "", "")), step(2*time.Minute, sec, 290)},
		{"rate: evicted, cancelled, pending", []int{d.PodsEvicted, d.Cancelled, d.EvictionsPending, d.PodsHeld}, []int{290, 210, 0, 0}},
		{"rate: cancelled as the roll-back goes", instants(find(res, KindDeviceEvictionCancelled, "", "")), step(6*time.Minute, 10*sec, 6)},
		// The last one evicted, at 6m49s, fell due at 2m40s.
		{"rate: longest delay", d.LongestDelay, 4*time.Minute + 9*sec},
	})

	sc = xidStorm(t, "deviceMaxShare", "0.05").On(ReleaseDeviceHold(4*time.Minute, gpuDriver))
	res = mustRun(t, sc, Options{})
	d = driverSummary(t, res)
	verify(t, []check{
		{"release: holds", []string{d.Holds[0].State, d.Holds[1].State, d.Holds[2].State}, []string{"Holding", "Released", "Armed"}},
		{"release: instants", []time.Duration{d.Holds[0].T, d.Holds[1].T, d.Holds[2].T}, []time.Duration{150 * sec, 4 * time.Minute, 6*time.Minute + 50*sec}},
		{"release: evicted by 2m25s, at 4m", []int{res.DeviceEvictedBy("", 145*sec), len(find(res, KindDevicePodEvicted, "", "")) - res.DeviceEvictedBy("", 4*time.Minute-1)}, []int{250, 250}},
		{"release: entry", find(res, KindDeviceHoldRelease, "", "")[0].Detail, "scenario: an operator releases the hold on driver gpu.nvidia.com"},
	})
}

// deviceMix exercises what xid-storm does not: a cluster-wide driver and a
// zone's own, claims shared by pods and of several devices, tolerations
// with tolerationSeconds and forever, a share of a group's pods, taints at
// off-grid instants one device at a time, NoSchedule taints, a
// DeviceTaintRule's dry run (None) and its NoExecute change, an empty
// selector, rule deletion, and an untaint cancelling countdowns.
const deviceMix = `name: device-mix
duration: 6m
devices: [{driver: fpga.example.com, perNode: 1}]
zones:
  - name: a
    nodes: 6
    devices: [{driver: gpu.example.com, perNode: 6}]
    pods:
      - {name: solo, perNode: 2, deviceClaim: {driver: gpu.example.com}}
      - name: pair
        perNode: 4
        deviceClaim:
          driver: gpu.example.com
          podsPerClaim: 2
          share: 0.5
          tolerations: [{key: gpu.example.com/unhealthy, operator: Exists, effect: NoExecute, tolerationSeconds: 17}]
      - name: wide
        perNode: 1
        deviceClaim:
          driver: gpu.example.com
          devicesPerClaim: 3
          tolerations:
            - {key: gpu.example.com/unhealthy, operator: Exists, effect: NoExecute, tolerationSeconds: 45}
            - {key: maintenance, operator: Equal, value: "", effect: NoExecute, tolerationSeconds: 4}
      - {name: web, perNode: 2}
  - name: b
    nodes: 3
    devices: [{driver: nic.example.com, perNode: 2}]
    pods:
      - {name: net, perNode: 2, deviceClaim: {driver: nic.example.com, podsPerClaim: 2}}
      - {name: fpga, perNode: 1, deviceClaim: {driver: fpga.example.com, tolerations: [{operator: Exists}]}}
events:
  - {at: 10.3s, action: device-taint, driver: gpu.example.com, share: 0.5, over: 47s}
  - {at: 20s, action: device-taint, driver: fpga.example.com, zone: a, taint: {key: slow, effect: NoSchedule}}
  - {at: 30s, action: device-rule, rule: nics, selector: {driver: nic.example.com}, taint: {key: maintenance, effect: None}}
  - {at: 1m, action: device-rule, rule: nics, selector: {driver: nic.example.com, pool: b-1}, taint: {key: maintenance, effect: NoExecute}}
  - {at: 1m2.5s, action: device-untaint, driver: gpu.example.com, nodes: [a-4, a-5]}
  - {at: 1m30s, action: device-rule, rule: all, selector: {}, taint: {key: audit, effect: None}}
  - {at: 2m, action: device-rule-delete, rule: nics}
  - {at: 2m10s, action: device-taint, driver: fpga.example.com, zone: b}
  - {at: 1m40s, action: device-rule, rule: a-5, selector: {pool: a-5}, taint: {key: maintenance}}
`

// TestDeviceParity: with the limits off (the default) the simulation's
// device side decides exactly what a taints.DeviceEvictor with
// DefaultDeviceEvictorConfig (upstream v1.37.2) decides on the same
// inputs, driven by a plain loop here: the same evictions at the same
// instants, the same cancellations and rule statuses. So do limits that
// never bind (a breaker at 100%, a rate of a million pods a second).
func TestDeviceParity(t *testing.T) {
	sc := load(t, deviceMix)
	res := mustRun(t, sc, Options{})
	// Ties within an instant may come in another order: the two callers
	// republish an instant's slices in different orders.
	got := slices.Sorted(slices.Values(deviceDecisions(res)))
	want := slices.Sorted(slices.Values(driveDevices(t, sc, res)))
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the simulation's device decisions differ from the DeviceEvictor's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range []string{"device-pod-evicted", "device-eviction-cancelled", "device-rule-status", "device-warning"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, " "+k+" ") }) {
			t.Errorf("deviceMix has no %s; it should exercise it", k)
		}
	}
	for _, p := range [][2]string{{"deviceMaxShare", "1"}, {"deviceEvictionQPS", "1e6"}} {
		sc2, err := sc.With(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if sc2, err = sc2.With("deviceEvictionBurst", "1000000"); err != nil {
			t.Fatal(err)
		}
		var evs, evs2 []string
		for _, s := range deviceDecisions(res) {
			if strings.Contains(s, " device-pod-evicted ") {
				evs = append(evs, s)
			}
		}
		for _, s := range deviceDecisions(mustRun(t, sc2, Options{})) {
			if strings.Contains(s, " device-pod-evicted ") {
				evs2 = append(evs2, s)
			}
		}
		if !slices.Equal(evs, evs2) {
			t.Errorf("%s=%s: evictions differ from the limits off:\n%s\nwant\n%s", p[0], p[1], strings.Join(evs2, "\n"), strings.Join(evs, "\n"))
		}
	}
}

// deviceDecisions lists a run's device decisions as "t kind pod-or-detail".
func deviceDecisions(res *Result) []string {
	var out []string
	for _, e := range res.Entries {
		switch e.Kind {
		case KindDevicePodEvicted, KindDeviceEvictionCancelled:
			out = append(out, fmt.Sprintf("%v %s %s", e.At, e.Kind, e.Pod))
		case KindDeviceRuleStatus, KindDeviceWarning:
			out = append(out, fmt.Sprintf("%v %s %s", e.At, e.Kind, e.Detail))
		}
	}
	return out
}

// driveDevices runs a DeviceEvictor with DefaultDeviceEvictorConfig (and
// warnings) on the scenario's objects and the device inputs res recorded
// (which devices each action tainted or untainted, and when; the rules
// from the scenario), as a plain caller loop, and returns its decisions
// as deviceDecisions does.
func driveDevices(t *testing.T, sc *Scenario, res *Result) []string {
	t.Helper()
	cfg := taints.DefaultDeviceEvictorConfig()
	cfg.KeepWarnings = 100
	d, err := taints.NewDeviceEvictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The objects: every node, in name order, its slices, claims and pods.
	type devSet struct {
		driver  string
		perNode int
	}
	var names []string
	zoneOf := map[string]int{}
	for zi, z := range sc.Zones {
		for i := range z.Nodes {
			n := NodeName(z.Name, i, z.Nodes)
			names = append(names, n)
			zoneOf[n] = zi
		}
	}
	slices.Sort(names)
	slice := func(node string, set devSet, taintsOf func(dev string) []resourcev1.DeviceTaint) *resourcev1.ResourceSlice {
		s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + set.driver}}
		s.Spec.Driver, s.Spec.Pool = set.driver, resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}
		s.Spec.NodeName = &node
		prefix, _, _ := strings.Cut(set.driver, ".")
		for k := range set.perNode {
			name := fmt.Sprintf("%s-%d", prefix, k)
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: name, Taints: taintsOf(set.driver + "/" + node + "/" + name)})
		}
		return s
	}
	sets := func(zi int) []devSet {
		var out []devSet
		for _, ds := range append(slices.Clone(sc.Devices), sc.Zones[zi].Devices...) {
			out = append(out, devSet{ds.Driver, ds.PerNode})
		}
		return out
	}
	none := func(string) []resourcev1.DeviceTaint { return nil }
	seq := uint64(0)
	for _, node := range names {
		zi := zoneOf[node]
		for _, set := range sets(zi) {
			if err := d.SetSlice(Epoch, slice(node, set, none)); err != nil {
				t.Fatal(err)
			}
		}
		next := map[string]int{}
		for _, g := range sc.Zones[zi].PodGroups() {
			base := seq
			seq += uint64(g.PerNode)
			c := g.DeviceClaim
			if c == nil {
				continue
			}
			sh := g.shape()
			prefix, _, _ := strings.Cut(c.Driver, ".")
			for k := range sh.claims {
				claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%s-claim-%d", node, g.Name, k)}}
				claim.Status.Allocation = &resourcev1.AllocationResult{}
				for range sh.devices {
					claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
						Request: "r", Driver: c.Driver, Pool: node, Device: fmt.Sprintf("%s-%d", prefix, next[c.Driver]), Tolerations: c.Tolerations})
					next[c.Driver]++
				}
				for j := k * sh.perClaim; j < min((k+1)*sh.perClaim, sh.pods); j++ {
					claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{
						Resource: "pods", Name: fmt.Sprintf("%s-%s-%d", node, g.Name, j), UID: podUID(base + uint64(j) + 1)})
				}
				if err := d.SetClaim(Epoch, claim); err != nil {
					t.Fatal(err)
				}
			}
			for j := range sh.pods {
				cn := fmt.Sprintf("%s-%s-claim-%d", node, g.Name, j/sh.perClaim)
				if err := d.SetPod(Epoch, &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%s-%d", node, g.Name, j), UID: podUID(base + uint64(j) + 1)},
					Spec:       v1.PodSpec{NodeName: node, ResourceClaims: []v1.PodResourceClaim{{Name: "c", ResourceClaimName: &cn}}},
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The inputs, by instant: the devices each action tainted (with the
	// taint of the scenario's event of that driver and instant) or
	// untainted, then the rules.
	type input struct {
		at    time.Duration
		apply func(now time.Time)
	}
	var inputs []input
	devTaints := map[string][]resourcev1.DeviceTaint{}
	republish := func(now time.Time, device string) {
		parts := strings.Split(device, "/") // driver/pool/device
		node := parts[1]
		for _, set := range sets(zoneOf[node]) {
			if set.driver == parts[0] {
				if err := d.SetSlice(now, slice(node, set, func(dev string) []resourcev1.DeviceTaint { return devTaints[dev] })); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, e := range res.Entries {
		switch e.Kind {
		case KindDeviceTaint:
			var spec DeviceTaintSpec
			for _, ev := range sc.Events {
				if ev.Action == ActionDeviceTaint && ev.Driver == e.Driver && ev.At.D() <= e.At && e.At <= (ev.At+ev.Over).D() {
					spec = ev.taintOf()
				}
			}
			inputs = append(inputs, input{e.At, func(now time.Time) {
				devTaints[e.Device] = append(devTaints[e.Device], resourcev1.DeviceTaint{Key: spec.Key, Value: spec.Value,
					Effect: resourcev1.DeviceTaintEffect(spec.Effect), TimeAdded: &metav1.Time{Time: now}})
				republish(now, e.Device)
			}})
		case KindDeviceUntaint:
			inputs = append(inputs, input{e.At, func(now time.Time) {
				devTaints[e.Device] = nil
				republish(now, e.Device)
			}})
		}
	}
	rules := map[string]*taints.DeviceTaintRule{}
	uids := 0
	for _, ev := range sc.Events {
		switch ev.Action {
		case ActionDeviceRule:
			inputs = append(inputs, input{ev.At.D(), func(now time.Time) {
				tt := ev.taintOf()
				r := rules[ev.Rule]
				taint := resourcev1.DeviceTaint{Key: tt.Key, Value: tt.Value, Effect: resourcev1.DeviceTaintEffect(tt.Effect), TimeAdded: &metav1.Time{Time: now}}
				if r == nil {
					uids++
					r = &taints.DeviceTaintRule{Name: ev.Rule, UID: types.UID(fmt.Sprintf("uid-devicetaintrule-%d", uids)), Generation: 1}
					rules[ev.Rule] = r
				} else {
					r.Generation++
					if r.Taint.Effect == taint.Effect {
						taint.TimeAdded = r.Taint.TimeAdded
					}
				}
				r.Taint, r.Selector = taint, nil
				if s := ev.Selector; s != nil {
					r.Selector = &taints.DeviceTaintSelector{}
					if s.Driver != "" {
						r.Selector.Driver = &s.Driver
					}
					if s.Pool != "" {
						r.Selector.Pool = &s.Pool
					}
				}
				d.SetRule(now, *r)
			}})
		case ActionDeviceRuleDelete:
			inputs = append(inputs, input{ev.At.D(), func(now time.Time) {
				delete(rules, ev.Rule)
				d.DeleteRule(now, ev.Rule)
			}})
		}
	}
	slices.SortStableFunc(inputs, func(a, b input) int { return cmp.Compare(a.at, b.at) })
	// The caller loop.
	var out []string
	end := sc.Duration.D()
	for i := 0; ; {
		t0 := end + 1
		if i < len(inputs) {
			t0 = inputs[i].at
		}
		if dl, ok := d.NextDeadline(); ok && dl.Sub(Epoch) < t0 {
			t0 = dl.Sub(Epoch)
		}
		if t0 > end {
			return out
		}
		now := Epoch.Add(t0)
		for ; i < len(inputs) && inputs[i].at == t0; i++ {
			inputs[i].apply(now)
		}
		for _, w := range d.AppendWarnings(nil) {
			out = append(out, fmt.Sprintf("%v %s %s", t0, KindDeviceWarning, w.Kind.Reason()+": "+w.Message()))
		}
		for _, c := range d.AppendCancelled(nil) {
			out = append(out, fmt.Sprintf("%v %s %s", t0, KindDeviceEvictionCancelled, c.Pod))
		}
		for _, s := range d.RuleStatuses(now) {
			c := s.Condition
			detail := fmt.Sprintf("DeviceTaintRule %s: %s=%s %s", s.Rule, c.Type, c.Status, c.Reason)
			if c.Message != "" {
				detail += ": " + c.Message
			}
			out = append(out, fmt.Sprintf("%v %s %s", t0, KindDeviceRuleStatus, detail))
			if r := rules[s.Rule]; r != nil {
				r.Conditions = []metav1.Condition{c}
				d.SetRule(now, *r)
			}
		}
		for _, x := range d.Due(now) {
			out = append(out, fmt.Sprintf("%v %s %s", t0, KindDevicePodEvicted, x.Pod))
			d.Done(now, x, taints.DeviceDeleted)
			d.DeletePod(x.Pod)
		}
	}
}

// TestDeviceDeterministic: two runs of a device scenario give byte-identical
// JSON and text reports (the device side's maps never order anything).
func TestDeviceDeterministic(t *testing.T) {
	for _, sc := range []*Scenario{load(t, deviceMix), xidStorm(t, "deviceEvictionQPS", "2"), xidStorm(t, "deviceMaxShare", "0.05")} {
		var reports [2]string
		for i := range reports {
			res := mustRun(t, sc, Options{})
			reports[i] = report(t, res, "json") + report(t, res, "text")
		}
		if reports[0] != reports[1] {
			t.Errorf("%s: two runs' reports differ", sc.Name)
		}
	}
}

// TestDeviceSkippingEqualsTicking: the device pass runs at its own
// deadlines whether or not the taint pass ticks.
func TestDeviceSkippingEqualsTicking(t *testing.T) {
	for _, sc := range []*Scenario{load(t, deviceMix), xidStorm(t, "deviceEvictionQPS", "3")} {
		skip := mustRun(t, sc, Options{})
		tick := mustRun(t, sc, Options{Tick: true})
		if !reflect.DeepEqual(skip.Entries, tick.Entries) {
			t.Errorf("%s: skipping gives %d entries, ticking %d; first difference: %s", sc.Name, len(skip.Entries), len(tick.Entries), firstDiff(skip.Entries, tick.Entries))
		}
	}
}

// TestDeviceAndNodePaths: a pod either path deletes is gone for the other.
// zone-a-0's kubelet stops at 0: its pods go at 5m55s (300s tolerations),
// and its GPUs' taint at 6m evicts nothing. zone-a-1's GPUs are tainted at
// 1m (its claimed pods go then) and its kubelet stops at 2m: the node path
// evicts only the pods left (at 7m55s). Every pod is evicted once.
func TestDeviceAndNodePaths(t *testing.T) {
	sc := load(t, `name: both
duration: 9m
zones:
  - name: zone-a
    nodes: 3
    devices: [{driver: gpu.example.com, perNode: 2}]
    pods:
      - {name: train, perNode: 2, deviceClaim: {driver: gpu.example.com}}
      - {name: web, perNode: 3}
events:
  - {at: 0s, action: stop, node: zone-a-0}
  - {at: 6m, action: device-taint, driver: gpu.example.com, node: zone-a-0}
  - {at: 1m, action: device-taint, driver: gpu.example.com, node: zone-a-1}
  - {at: 2m, action: stop, node: zone-a-1}
`)
	for _, opt := range []Options{{}, {PodEvictionTimeout: 2 * time.Minute}, {plain: true}} {
		res := mustRun(t, sc, opt)
		seen := map[string]int{}
		for _, e := range res.Entries {
			if e.Kind == KindPodEvicted || e.Kind == KindDevicePodEvicted {
				seen[e.Pod]++
			}
		}
		for p, n := range seen {
			if n != 1 {
				t.Errorf("%s: pod %s evicted %d times", opt.Mode(), p, n)
			}
		}
		z := res.Summary.Zones[0]
		verify(t, []check{
			{opt.Mode() + ": device evictions", instants(find(res, KindDevicePodEvicted, "", "")), []time.Duration{time.Minute}},
			{opt.Mode() + ": by device, by node, all", []int{z.DevicePodsEvicted, z.PodsEvicted, res.Summary.PodsEvicted, len(seen)}, []int{2, 8, 10, 10}},
		})
		if opt.PodEvictionTimeout == 0 {
			verify(t, []check{{"node evictions", instants(find(res, KindPodEvicted, "", "")), []time.Duration{5*time.Minute + 55*sec, 7*time.Minute + 55*sec}}})
		}
	}
}

// TestDeviceRulesAndWarnings: an empty selector is warned about; a
// DeviceTaintRule's dry run (None) says what it would evict, its NoExecute
// change evicts and its status follows.
func TestDeviceRulesAndWarnings(t *testing.T) {
	res := mustRun(t, load(t, gpuZone+`events:
  - {at: 1m, action: device-rule, rule: drain, selector: {}, taint: {key: maintenance, effect: None}}
  - {at: 2m, action: device-rule, rule: drain, selector: {pool: a-1}, taint: {key: maintenance}}
  - {at: 3m, action: device-rule-delete, rule: drain}
`), Options{})
	statuses := find(res, KindDeviceRuleStatus, "", "")
	var got []string
	for _, e := range statuses {
		got = append(got, Offset(e.At)+" "+e.Detail)
	}
	want := []string{
		"+1m0.0s DeviceTaintRule drain: EvictionInProgress=False NoEffect: 32 published devices selected. 8 allocated devices selected. 8 pods would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.",
		"+2m0.0s DeviceTaintRule drain: EvictionInProgress=True PodsPendingEviction: 2 pods need to be evicted in 1 namespace.",
		"+2m10.0s DeviceTaintRule drain: EvictionInProgress=False Completed: 2 pods evicted since starting the controller.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rule statuses:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	verify(t, []check{
		{"warning", find(res, KindDeviceWarning, "", "")[0].Detail, "DeviceTaintRuleSelectsAll: DeviceTaintRule drain: empty device selector selects every device in the cluster (taint maintenance:None)."},
		{"evictions", instants(find(res, KindDevicePodEvicted, "", "")), []time.Duration{2 * time.Minute}},
		{"rule summary", res.Summary.Devices.Rules, []RuleSummary{{Rule: "drain", Deleted: true, PodsEvicted: 2, Status: "False", Reason: "Completed", Message: "2 pods evicted since starting the controller."}}},
		{"scenario entries", []int{len(find(res, KindDeviceRule, "", "")), len(find(res, KindDeviceRuleDeleted, "", ""))}, []int{2, 1}},
	})
}

// TestXIDStormBuiltInGo: the embedded xid-storm scenario is the same built
// with the constructors.
func TestXIDStormBuiltInGo(t *testing.T) {
	one := 0.1
	_ = one
	pods := func() []PodGroup {
		infer := NewClaimPods("infer", 4, gpuDriver)
		infer.DeviceClaim.PodsPerClaim = 2
		return []PodGroup{NewClaimPods("train", 6, gpuDriver), infer, NewPods("web", 10)}
	}
	storm := TaintDevices(2*time.Minute, gpuDriver, 0.1, time.Minute)
	storm.Every, storm.Taint = Duration(5*time.Second), &DeviceTaintSpec{Key: "gpu.nvidia.com/xid", Value: "79", Effect: "NoExecute"}
	rollBack := UntaintDevices(6*time.Minute, gpuDriver)
	rollBack.Over, rollBack.Every = Duration(time.Minute), Duration(10*time.Second)
	rollBack.Taint = &DeviceTaintSpec{Key: "gpu.nvidia.com/xid"}
	built := NewScenario("xid-storm", 8*time.Minute,
		NewZone("zone-a", 250, pods()...).WithDevices(NewDevices(gpuDriver, 8)),
		NewZone("zone-b", 250, pods()...).WithDevices(NewDevices(gpuDriver, 8)),
	).On(storm, rollBack)
	shipped := loadEmbedded(t, "xid-storm")
	shipped.Description = ""
	if !reflect.DeepEqual(built, shipped) {
		t.Errorf("built in Go:\n%+v\nshipped:\n%+v", built, shipped)
	}
	loaded := load(t, gpuZone+`events:
  - {at: 1m, action: device-rule, rule: r, selector: {pool: a-1}, taint: {key: k, effect: None}}
  - {at: 2m, action: device-rule-delete, rule: r}
  - {at: 3m, action: device-release-hold, driver: gpu.example.com}
`)
	want := []Event{AddDeviceRule(time.Minute, "r", &DeviceSelector{Pool: "a-1"}, DeviceTaintSpec{Key: "k", Effect: "None"}),
		DeleteDeviceRule(2*time.Minute, "r"), ReleaseDeviceHold(3*time.Minute, "gpu.example.com")}
	if !reflect.DeepEqual(loaded.Events, want) {
		t.Errorf("loaded events %+v, constructors %+v", loaded.Events, want)
	}
}

// TestXIDStormSVG: the chart draws the devices: the driver's chart with
// its breaker's hold, the node rows' device taints and evictions, the
// legend.
func TestXIDStormSVG(t *testing.T) {
	res := mustRun(t, xidStorm(t, "deviceMaxShare", "0.05"), Options{})
	doc := svgOf(t, res)
	root, text := wellFormed(t, doc)
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	for _, want := range []string{"DEVICES (per driver)", "breaker over 5% tainted", "gpu.nvidia.com", "400 of 4000 devices tainted", "250/500 pods evicted",
		"Holding +2m30.0s", "device tainted by its driver", "pods evicted for device taints", "driver's breaker holding", "(250 for device taints)"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG lacks the text %q", want)
		}
	}
	for _, want := range []string{"<title>breaker Holding from +2m30.0s (234 of 4000 allocated devices tainted)</title>",
		"<title>pods evicted for device taints: 250 at the end</title>", "<title>1 pods evicted for device taints at +2m0.0s</title>",
		"<title>device tainted by its driver from +2m"} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	// Without devices nothing of it is drawn.
	if plain := svgOf(t, runEmbedded(t, "offline-node", Options{})); bytes.Contains(plain, []byte("DEVICES")) || bytes.Contains(plain, []byte("device")) {
		t.Errorf("a scenario without devices draws device elements")
	}
}

// TestDeviceSweep: -sweep over the blast-radius fields, with the device
// table.
func TestDeviceSweep(t *testing.T) {
	runs, err := Sweep(context.Background(), loadEmbedded(t, "xid-storm"), "deviceMaxShare", []string{"0", "0.05", "0.2"}, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var evicted []int
	for _, r := range runs {
		evicted = append(evicted, r.Result.Summary.Devices.PodsEvicted)
	}
	if want := []int{500, 250, 500}; !slices.Equal(evicted, want) {
		t.Errorf("pods evicted per deviceMaxShare = %v, want %v", evicted, want)
	}
	var b strings.Builder
	if err := WriteSweep(&b, "deviceMaxShare", runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nDEVICES\n", "deviceMaxShare  driver          devices tainted  pods evicted",
		"0.05            gpu.nvidia.com  400              250           +2m0.0s         +2m25.0s       0.0s           +2m30.0s Holding, +6m50.0s Armed  250"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sweep table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestDeviceJSON: the JSON report carries the device entries' driver and
// device and the device summary, in seconds, and decodes to the same.
func TestDeviceJSON(t *testing.T) {
	res := mustRun(t, xidStorm(t, "deviceMaxShare", "0.05"), Options{})
	var b strings.Builder
	if err := WriteJSON(&b, res, -1); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`"kind":"device-taint","node":"zone-a-`, `"driver":"gpu.nvidia.com","device":"gpu.nvidia.com/zone-`,
		`"kind":"device-hold","node":"","pod":"","zone":"","detail":"DeviceTaintEvictionHeld: Evictions held: 234 of 4000`,
		`"devices": {`, `"holds": [`, `"t": 150,`, `"peakHeld": 250,`, `"lastEviction": 145,`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	var r JSONReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Summary.Devices, res.Summary.Devices) {
		t.Errorf("decoded devices summary = %+v, want %+v", r.Summary.Devices, res.Summary.Devices)
	}
	// Without devices the JSON has no device field.
	var plain strings.Builder
	if err := WriteJSON(&plain, runEmbedded(t, "offline-node", Options{}), -1); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), `"devices"`) || strings.Contains(plain.String(), `"driver"`) || strings.Contains(plain.String(), `devicePodsEvicted`) {
		t.Errorf("a scenario without devices has device fields in its JSON")
	}
}

// TestDeviceUntaintSpread: a device-untaint with over and every rolls the
// scope back node by node, in node order, as device-taint spreads devices:
// 4 nodes over 1m are at offsets 0, 15s, 30s and 45s, in batches every
// 20s: a-0 and a-1 at 3m, a-2 at 3m20s, a-3 at 3m40s. Without over, every
// node at once.
func TestDeviceUntaintSpread(t *testing.T) {
	for _, tt := range []struct {
		untaint string
		want    map[string]time.Duration
	}{
		{"{at: 3m, action: device-untaint, driver: gpu.example.com, over: 1m, every: 20s}",
			map[string]time.Duration{"a-0": 3 * time.Minute, "a-1": 3 * time.Minute, "a-2": 3*time.Minute + 20*sec, "a-3": 3*time.Minute + 40*sec}},
		{"{at: 3m, action: device-untaint, driver: gpu.example.com, zone: a}",
			map[string]time.Duration{"a-0": 3 * time.Minute, "a-1": 3 * time.Minute, "a-2": 3 * time.Minute, "a-3": 3 * time.Minute}},
	} {
		res := mustRun(t, load(t, gpuZone+"events:\n  - {at: 1m, action: device-taint, driver: gpu.example.com}\n  - "+tt.untaint+"\n"), Options{})
		got := map[string]time.Duration{}
		n := 0
		for _, e := range find(res, KindDeviceUntaint, "", "") {
			if at, ok := got[e.Node]; ok && at != e.At {
				t.Errorf("%s: node %s untainted at %v and %v", tt.untaint, e.Node, at, e.At)
			}
			got[e.Node] = e.At
			n++
		}
		if !reflect.DeepEqual(got, tt.want) || n != 32 {
			t.Errorf("%s: untainted %d devices at %v, want 32 at %v", tt.untaint, n, got, tt.want)
		}
	}
}
