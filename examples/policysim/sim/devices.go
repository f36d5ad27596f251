package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
)

// The device taint eviction controller beside the node lifecycle
// controller. In a scenario with devices, a taints.DeviceEvictor (upstream
// v1.37.2's pkg/controller/devicetainteviction as a caller-driven machine)
// runs on the same virtual clock as the Monitor: it is fed every node's
// ResourceSlices, the ResourceClaims of the pods that use devices, those
// pods and the DeviceTaintRules, as its informers would; the device
// actions change slices and rules; and a device pass at every instant it
// has work (its NextDeadline, or an input changed) writes the rules'
// status, deletes the pods due (through the cluster's EvictPod, with
// upstream's DisruptionTarget condition and a UID precondition, as the node
// path deletes) and reports holds, cancellations and warnings. A pod
// either path deletes is gone for the other (the informer's delete event).

// deviceKeepWarnings is how many warnings a device pass can collect; the
// rest are counted (Summary.Devices.WarningsDropped).
const deviceKeepWarnings = 4096

// devSim is the device side of a run.
type devSim struct {
	d     *taints.DeviceEvictor
	zones []devZone // by scenario zone
	// steps are the device actions, in time order (ties: file order);
	// next is the first not applied.
	steps []devStep
	next  int
	// taints are the drivers' taints, by device (tainted devices only).
	taints map[devKey][]resourcev1.DeviceTaint
	rules  map[string]*devRuleRec
	uids   int // rules created
	// dirty: an input changed at this instant, so the pass runs; passAt is
	// when it last ran.
	dirty  bool
	passAt time.Duration
	// evicting is true while the pass deletes a pod (the BeforeEvict hook
	// then records its node in evictNode instead of treating it as the
	// node path's).
	evicting  bool
	evictNode string

	// What the summary needs: hold changes, evictions per rule, counts.
	holds            []holdRec
	holding          map[string]bool // drivers whose breaker holds
	peakHeld         map[string]int  // per driver: the most pods held at once
	limBuf           []taints.DeviceDriverLimit
	delays           map[string]time.Duration // per driver: the longest an eviction waited past its due time
	ruleEvicted      map[string]int
	ruleStatus       map[string]metav1.Condition
	cancelledDropped uint64

	// Scratch, reused.
	slice    resourcev1.ResourceSlice
	touched  []devKey
	warnBuf  []taints.DeviceWarning
	holdBuf  []taints.DeviceDriverLimit
	cancBuf  []taints.DeviceCancellation
	disrupts v1.PodCondition
}

// devZone is a zone's device layout: its drivers' devices on each node
// and how its pod groups use them.
type devZone struct {
	sets   []devSet
	groups []devGroup // in PodGroups order
}

type devSet struct {
	driver string
	names  []string // device names: <prefix>-0, ...
}

// devGroup is a pod group's claims on each node; set < 0 for a group
// without DeviceClaim.
type devGroup struct {
	name  string
	n     int
	set   int
	shape claimShape
	first int // the index of the group's first claim's first device
	tols  []resourcev1.DeviceToleration
}

// devKey names a device: a node (index in sim.nodes), a device set of its
// zone and a device of the set; dev -1 stands for the set's slice.
type devKey struct {
	node, set, dev int32
}

// devStep is one step of a device action: a device-taint's batch (devs)
// or a whole other action.
type devStep struct {
	at   time.Duration
	ev   *Event
	devs []devKey
}

type devRuleRec struct {
	rule    taints.DeviceTaintRule
	deleted bool
}

// holdRec is a driver's breaker state change.
type holdRec struct {
	at time.Duration
	l  taints.DeviceDriverLimit
}

// DeviceEvictorConfig returns the taints.DeviceEvictorConfig a scenario's
// devices run with: upstream's (taints.DefaultDeviceEvictorConfig) with
// the policy's blast-radius limit, which is off by default; and, changing
// no decision, warnings kept and every cancellation reported.
func DeviceEvictorConfig(sc *Scenario) taints.DeviceEvictorConfig {
	p := sc.Policy
	cfg := taints.DefaultDeviceEvictorConfig()
	cfg.BlastRadius = taints.DeviceBlastRadius{QPS: p.DeviceEvictionQPS, MaxShare: p.DeviceMaxShare, MinDevices: p.DeviceMinDevices,
		ResumeShare: p.DeviceResumeShare, ResumeAfter: p.DeviceResumeAfter.D()}
	if p.DeviceEvictionQPS > 0 {
		cfg.BlastRadius.Burst = p.DeviceEvictionBurst
	}
	cfg.KeepCancellations = taints.MaxCancellationsLimit
	cfg.KeepWarnings = deviceKeepWarnings
	return cfg
}

// newDevSim builds the device side of s (whose cluster is built): the
// DeviceEvictor fed every slice, claim and pod with a claim at Epoch, and
// the device actions' steps.
func newDevSim(s *sim) (*devSim, error) {
	sc := s.sc
	d, err := taints.NewDeviceEvictor(DeviceEvictorConfig(sc))
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	dv := &devSim{d: d, taints: map[devKey][]resourcev1.DeviceTaint{}, rules: map[string]*devRuleRec{},
		ruleEvicted: map[string]int{}, delays: map[string]time.Duration{}, holding: map[string]bool{}, peakHeld: map[string]int{}, ruleStatus: map[string]metav1.Condition{}, passAt: -1,
		disrupts: taints.DeviceDisruptionTargetCondition(Epoch)}
	dv.zones = make([]devZone, len(sc.Zones))
	for zi := range sc.Zones {
		z := &dv.zones[zi]
		for _, set := range sc.zoneDevices(zi) {
			prefix, _, _ := strings.Cut(set.Driver, ".")
			ds := devSet{driver: set.Driver, names: make([]string, set.PerNode)}
			for k := range ds.names {
				ds.names[k] = prefix + "-" + strconv.Itoa(k)
			}
			z.sets = append(z.sets, ds)
		}
		used := make([]int, len(z.sets))
		for _, g := range sc.Zones[zi].PodGroups() {
			dg := devGroup{name: g.Name, n: max(g.PerNode, 0), set: -1}
			if c := g.DeviceClaim; c != nil {
				dg.set = slices.IndexFunc(z.sets, func(ds devSet) bool { return ds.driver == c.Driver })
				dg.shape, dg.first, dg.tols = g.shape(), used[dg.set], slices.Clone(c.Tolerations)
				used[dg.set] += dg.shape.claims * dg.shape.devices
			}
			z.groups = append(z.groups, dg)
		}
	}
	if err := dv.feed(s); err != nil {
		return nil, err
	}
	dv.steps = expandDeviceEvents(s, dv)
	return dv, nil
}

// feed gives the DeviceEvictor the cluster's slices, claims and pods with
// claims, as the informers' initial lists. The pods' UIDs are the
// cluster's (build numbers them in this order).
func (dv *devSim) feed(s *sim) error {
	now := Epoch
	var seq uint64
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: podNamespace}}
	claim.Status.Allocation = &resourcev1.AllocationResult{}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNamespace}, Spec: v1.PodSpec{ResourceClaims: make([]v1.PodResourceClaim, 1)}}
	for i, n := range s.nodes {
		if err := s.spend(1 + s.podsPerNode[n.zone]); err != nil {
			return err
		}
		z := &dv.zones[n.zone]
		for si := range z.sets {
			if err := dv.d.SetSlice(now, dv.sliceOf(s, devKey{node: int32(i), set: int32(si), dev: -1})); err != nil {
				return fmt.Errorf("policysim: %w", err)
			}
		}
		for _, g := range z.groups {
			base := seq
			seq += uint64(g.n)
			if g.set < 0 {
				continue
			}
			driver := z.sets[g.set].driver
			for c := range g.shape.claims {
				claim.Name = claimName(n.name, g.name, c)
				res := make([]resourcev1.DeviceRequestAllocationResult, g.shape.devices)
				for k := range res {
					res[k] = resourcev1.DeviceRequestAllocationResult{Request: "device", Driver: driver, Pool: n.name,
						Device: z.sets[g.set].names[g.first+c*g.shape.devices+k], Tolerations: g.tols}
				}
				claim.Status.Allocation.Devices.Results = res
				claim.Status.ReservedFor = claim.Status.ReservedFor[:0]
				for j := c * g.shape.perClaim; j < min((c+1)*g.shape.perClaim, g.shape.pods); j++ {
					claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{
						Resource: "pods", Name: podName(n.name, g.name, j), UID: podUID(base + uint64(j) + 1)})
				}
				if err := dv.d.SetClaim(now, claim); err != nil {
					return fmt.Errorf("policysim: %w", err)
				}
			}
			pod.Spec.NodeName = n.name
			for j := range g.shape.pods {
				pod.Name, pod.UID = podName(n.name, g.name, j), podUID(base+uint64(j)+1)
				name := claimName(n.name, g.name, j/g.shape.perClaim)
				pod.Spec.ResourceClaims[0] = v1.PodResourceClaim{Name: "device", ResourceClaimName: &name}
				if err := dv.d.SetPod(now, pod); err != nil {
					return fmt.Errorf("policysim: %w", err)
				}
			}
		}
	}
	return nil
}

// claimName is the name of a node's c-th claim of a pod group.
func claimName(node, group string, c int) string {
	return node + "-" + group + "-claim-" + strconv.Itoa(c)
}

// sliceName is the name of a node's ResourceSlice of a driver.
func sliceName(node, driver string) string { return node + "-" + driver }

// sliceOf returns the ResourceSlice of k's node and set (k.dev is
// ignored) with the drivers' taints, in a buffer the next call reuses.
func (dv *devSim) sliceOf(s *sim, k devKey) *resourcev1.ResourceSlice {
	n := s.nodes[k.node]
	set := &dv.zones[n.zone].sets[k.set]
	sl := &dv.slice
	sl.Name = sliceName(n.name, set.driver)
	sl.Spec.Driver = set.driver
	sl.Spec.Pool = resourcev1.ResourcePool{Name: n.name, Generation: 1, ResourceSliceCount: 1}
	sl.Spec.NodeName = &n.name
	if cap(sl.Spec.Devices) < len(set.names) {
		sl.Spec.Devices = make([]resourcev1.Device, len(set.names))
	}
	sl.Spec.Devices = sl.Spec.Devices[:len(set.names)]
	for i, name := range set.names {
		sl.Spec.Devices[i] = resourcev1.Device{Name: name, Taints: dv.taints[devKey{node: k.node, set: k.set, dev: int32(i)}]}
	}
	return sl
}

// deviceOf names a device as driver/pool/device.
func (dv *devSim) deviceOf(s *sim, k devKey) string {
	n := s.nodes[k.node]
	set := &dv.zones[n.zone].sets[k.set]
	return set.driver + "/" + n.name + "/" + set.names[k.dev]
}

// scopeNodes returns the node indexes of a device event's scope, in name
// order: its node, nodes or zone, or every node.
func (s *sim) scopeNodes(e *Event) []int {
	if e.Node != "" || len(e.Nodes) > 0 {
		return s.targets(e)
	}
	var out []int
	for i, n := range s.nodes {
		if e.Zone == "" || s.sc.Zones[n.zone].Name == e.Zone {
			out = append(out, i)
		}
	}
	return out
}

// setOf returns the index of driver's set on node i, or -1.
func (dv *devSim) setOf(s *sim, i int, driver string) int {
	return slices.IndexFunc(dv.zones[s.nodes[i].zone].sets, func(ds devSet) bool { return ds.driver == driver })
}

// expandDeviceEvents turns the scenario's device actions into steps in
// time order. A device-taint picks Count (or Share, or all) of its scope's
// devices of the driver, evenly spaced over them in name order (node, then
// device), and taints them one after the other in a fixed shuffled order
// (a golden-ratio stride over the picked devices, so that consecutive ones
// are far apart in the cluster), the q-th of m at at + over×q/m, rounded
// down to a multiple of every when set; those of one instant are one step.
func expandDeviceEvents(s *sim, dv *devSim) []devStep {
	var steps []devStep
	for i := range s.sc.Events {
		e := &s.sc.Events[i]
		if !isDeviceAction(e.Action) {
			continue
		}
		if e.Action == ActionDeviceUntaint && e.Over > 0 {
			steps = untaintSteps(s, dv, e, steps)
			continue
		}
		if e.Action != ActionDeviceTaint {
			steps = append(steps, devStep{at: e.At.D(), ev: e})
			continue
		}
		var all []devKey // the scope's devices, in name order
		for _, ni := range s.scopeNodes(e) {
			if si := dv.setOf(s, ni, e.Driver); si >= 0 {
				for k := range dv.zones[s.nodes[ni].zone].sets[si].names {
					all = append(all, devKey{node: int32(ni), set: int32(si), dev: int32(k)})
				}
			}
		}
		n := len(all)
		m := e.chosen(n)
		if m == 0 {
			continue
		}
		picked := make([]devKey, m)
		for q := range m {
			picked[q] = all[int(int64(q)*int64(n)/int64(m))]
		}
		stride := strideFor(m)
		over, every := e.Over.D(), e.Every.D()
		for q := range m {
			off := time.Duration(0)
			if over > 0 {
				off = over/time.Duration(m)*time.Duration(q) + over%time.Duration(m)*time.Duration(q)/time.Duration(m)
				if every > 0 {
					off = off / every * every
				}
			}
			k := picked[int(int64(q)*int64(stride)%int64(m))]
			at := e.At.D() + off
			if last := len(steps) - 1; last >= 0 && steps[last].ev == e && steps[last].at == at {
				steps[last].devs = append(steps[last].devs, k)
			} else {
				steps = append(steps, devStep{at: at, ev: e, devs: []devKey{k}})
			}
		}
	}
	slices.SortStableFunc(steps, func(a, b devStep) int { return cmp.Compare(a.at, b.at) })
	return steps
}

// untaintSteps appends a spread device-untaint's steps: the scope's nodes
// with the driver's devices, in node order, evenly over Over (in batches
// Every apart), each step naming its nodes' device sets (dev -1).
func untaintSteps(s *sim, dv *devSim, e *Event, steps []devStep) []devStep {
	var sets []devKey
	for _, ni := range s.scopeNodes(e) {
		if si := dv.setOf(s, ni, e.Driver); si >= 0 {
			sets = append(sets, devKey{node: int32(ni), set: int32(si), dev: -1})
		}
	}
	m := time.Duration(len(sets))
	over, every := e.Over.D(), e.Every.D()
	for q, k := range sets {
		off := over/m*time.Duration(q) + over%m*time.Duration(q)/m
		if every > 0 {
			off = off / every * every
		}
		at := e.At.D() + off
		if last := len(steps) - 1; last >= 0 && steps[last].ev == e && steps[last].at == at {
			steps[last].devs = append(steps[last].devs, k)
		} else {
			steps = append(steps, devStep{at: at, ev: e, devs: []devKey{k}})
		}
	}
	return steps
}

// strideFor returns the step of the shuffled order over m devices: the
// integer nearest m×0.618 (the golden ratio's fraction) that is coprime
// with m, so that q → q×stride mod m visits every device once.
func strideFor(m int) int {
	st := max(int(float64(m)*0.6180339887+0.5), 1)
	for gcd(st, m) != 1 {
		st++
	}
	return st
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// applyDevices applies the device steps due at t. It stops when ctx ends.
func (s *sim) applyDevices(t time.Duration) error {
	dv := s.dev
	for dv.next < len(dv.steps) && dv.steps[dv.next].at == t {
		st := &dv.steps[dv.next]
		dv.next++
		if err := s.spend(1 + len(st.devs)); err != nil {
			return err
		}
		if err := s.applyDeviceStep(st); err != nil {
			return err
		}
		dv.dirty = true
	}
	return nil
}

func (s *sim) applyDeviceStep(st *devStep) error {
	dv, e, now := s.dev, st.ev, s.now()
	switch e.Action {
	case ActionDeviceTaint:
		t := e.taintOf()
		taint := resourcev1.DeviceTaint{Key: t.Key, Value: t.Value, Effect: resourcev1.DeviceTaintEffect(t.Effect), TimeAdded: &metav1.Time{Time: now}}
		dv.touched = dv.touched[:0]
		for _, k := range st.devs {
			ts := dv.taints[k]
			i := slices.IndexFunc(ts, func(x resourcev1.DeviceTaint) bool { return x.Key == taint.Key })
			switch {
			case i < 0:
				ts = append(ts, taint)
			case ts[i].Value == taint.Value && ts[i].Effect == taint.Effect:
				continue // already so: the driver keeps its TimeAdded
			default:
				ts = slices.Clone(ts)
				ts[i] = taint
			}
			dv.taints[k] = ts
			dv.touched = append(dv.touched, k)
			s.deviceEntry(KindDeviceTaint, k, "scenario: driver "+e.Driver+" adds taint "+t.String())
		}
		return dv.republish(s)
	case ActionDeviceUntaint:
		key := e.taintOf().Key
		dv.touched = dv.touched[:0]
		var nodes []int
		if st.devs != nil { // a spread untaint's step: its nodes
			for _, k := range st.devs {
				nodes = append(nodes, int(k.node))
			}
		} else {
			nodes = s.scopeNodes(e)
		}
		for _, ni := range nodes {
			si := dv.setOf(s, ni, e.Driver)
			if si < 0 {
				continue
			}
			for k := range dv.zones[s.nodes[ni].zone].sets[si].names {
				dk := devKey{node: int32(ni), set: int32(si), dev: int32(k)}
				ts := dv.taints[dk]
				i := slices.IndexFunc(ts, func(x resourcev1.DeviceTaint) bool { return x.Key == key })
				if i < 0 {
					continue
				}
				if ts = slices.Delete(slices.Clone(ts), i, i+1); len(ts) == 0 {
					delete(dv.taints, dk)
				} else {
					dv.taints[dk] = ts
				}
				dv.touched = append(dv.touched, dk)
				s.deviceEntry(KindDeviceUntaint, dk, "scenario: driver "+e.Driver+" removes taint "+key)
			}
		}
		return dv.republish(s)
	case ActionDeviceRule:
		s.applyRule(e)
	case ActionDeviceRuleDelete:
		r := dv.rules[e.Rule]
		detail := "scenario: DeviceTaintRule " + e.Rule + " deleted"
		if r == nil || r.deleted {
			detail += " (it does not exist: nothing changes)"
		} else {
			r.deleted = true
			dv.d.DeleteRule(now, e.Rule)
		}
		s.entries = append(s.entries, Entry{At: s.t, Kind: KindDeviceRuleDeleted, Detail: detail})
	case ActionDeviceReleaseHold:
		detail := "scenario: an operator releases the hold on driver " + e.Driver
		if !dv.d.ReleaseHold(now, e.Driver) {
			detail += " (not holding: nothing to release)"
		}
		s.entries = append(s.entries, Entry{At: s.t, Kind: KindDeviceHoldRelease, Driver: e.Driver, Detail: detail})
	}
	return nil
}

// applyRule creates or changes a DeviceTaintRule. A new rule's taint is
// added now; a changed one keeps its TimeAdded unless its effect changed
// (the API server then sets the current time, as it does for a client
// that sets none).
func (s *sim) applyRule(e *Event) {
	dv, now := s.dev, s.now()
	t := e.taintOf()
	taint := resourcev1.DeviceTaint{Key: t.Key, Value: t.Value, Effect: resourcev1.DeviceTaintEffect(t.Effect), TimeAdded: &metav1.Time{Time: now}}
	r := dv.rules[e.Rule]
	verb := "changed"
	if r == nil || r.deleted {
		dv.uids++
		r = &devRuleRec{rule: taints.DeviceTaintRule{Name: e.Rule, UID: types.UID("uid-devicetaintrule-" + strconv.Itoa(dv.uids)), Generation: 1}}
		dv.rules[e.Rule] = r
		verb = "created"
	} else {
		if old := r.rule.Taint; old.Effect == taint.Effect && old.TimeAdded != nil {
			taint.TimeAdded = old.TimeAdded
		}
		r.rule.Generation++
	}
	var sel *taints.DeviceTaintSelector
	selText := "none: it selects no device"
	if es := e.Selector; es != nil {
		sel = &taints.DeviceTaintSelector{}
		var parts []string
		for _, f := range []struct {
			name, v string
			p       **string
		}{{"driver", es.Driver, &sel.Driver}, {"pool", es.Pool, &sel.Pool}, {"device", es.Device, &sel.Device}} {
			if f.v != "" {
				v := f.v
				*f.p = &v
				parts = append(parts, f.name+": "+v)
			}
		}
		selText = "{" + strings.Join(parts, ", ") + "}"
		if len(parts) == 0 {
			selText = "{} (every device)"
		}
	}
	r.rule.Selector, r.rule.Taint = sel, taint
	dv.d.SetRule(now, r.rule)
	s.entries = append(s.entries, Entry{At: s.t, Kind: KindDeviceRule,
		Detail: fmt.Sprintf("scenario: DeviceTaintRule %s %s: selector %s, taint %s", e.Rule, verb, selText, t.String())})
}

// republish sends the touched devices' slices to the DeviceEvictor, each
// once, in node then driver order.
func (dv *devSim) republish(s *sim) error {
	for i := range dv.touched {
		dv.touched[i].dev = -1
	}
	slices.SortFunc(dv.touched, func(a, b devKey) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.set, b.set))
	})
	for _, k := range slices.Compact(dv.touched) {
		if err := dv.d.SetSlice(s.now(), dv.sliceOf(s, k)); err != nil {
			return fmt.Errorf("policysim: %w", err)
		}
	}
	return nil
}

// deviceEntry records a device's entry.
func (s *sim) deviceEntry(kind Kind, k devKey, detail string) {
	n := s.nodes[k.node]
	s.entries = append(s.entries, Entry{At: s.t, Kind: kind, Node: n.name, Zone: s.sc.Zones[n.zone].Name,
		Driver: s.dev.zones[n.zone].sets[k.set].driver, Device: s.dev.deviceOf(s, k), Detail: detail})
}

// deviceNext returns the next instant the device side needs: its next step
// or the DeviceEvictor's deadline, after now (the last instant processed)
// unless it is a step's.
func (dv *devSim) deviceNext(now time.Duration) time.Duration {
	t := never
	if dv.next < len(dv.steps) {
		t = dv.steps[dv.next].at
	}
	if dl, ok := dv.d.NextDeadline(); ok {
		// A token may be a hair short at its estimated instant: the
		// DeviceEvictor's deadline then stays put, and the next instant
		// is a nanosecond on.
		t = min(t, max(dl.Sub(Epoch), now+1))
	}
	return t
}

// deviceDue reports whether the device pass must run at t.
func (dv *devSim) deviceDue(t time.Duration) bool {
	if dv.dirty {
		return true
	}
	dl, ok := dv.d.NextDeadline()
	return ok && dl.Sub(Epoch) <= t
}

// devicePass is the device taint eviction controller's work at the current
// instant: the hazards its inputs caused, the evictions they cancelled,
// the rules' status (before the evictions, as upstream intends), the
// deletions due and the hold changes (the DeviceEvictor judges its
// breakers at the pass's first call with now, RuleStatuses).
func (s *sim) devicePass() error {
	dv, now := s.dev, s.now()
	d := dv.d
	inputs := dv.dirty
	dv.passAt, dv.dirty = s.t, false
	dv.warnBuf = d.AppendWarnings(dv.warnBuf[:0])
	for _, w := range dv.warnBuf {
		en := Entry{At: s.t, Kind: KindDeviceWarning, Driver: w.Driver, Detail: w.Kind.Reason() + ": " + w.Message()}
		if w.Rule == "" {
			en.Device = w.Driver + "/" + w.Pool + "/" + w.Device
			if i, ok := s.byName[w.Pool]; ok {
				en.Node, en.Zone = w.Pool, s.sc.Zones[s.nodes[i].zone].Name
			}
		}
		s.entries = append(s.entries, en)
	}
	s.deviceHolds()
	dv.cancBuf = d.AppendCancelled(dv.cancBuf[:0])
	if err := s.spend(len(dv.cancBuf)); err != nil {
		return err
	}
	for _, c := range dv.cancBuf {
		en := Entry{At: s.t, Kind: KindDeviceEvictionCancelled, Pod: c.Pod.String(),
			Detail: taints.DeviceEventReason + ": " + taints.DeviceEventCancelling + " (it was due at " + Offset(c.At.Sub(Epoch)) + ")"}
		if p := s.c.Pod(c.Pod); p != nil {
			s.podEntry(&en, p.Spec.NodeName, c.Pod.Name)
		}
		s.entries = append(s.entries, en)
	}
	dv.cancelledDropped = d.CancelledDropped()
	for _, st := range d.RuleStatuses(now) {
		c := st.Condition
		dv.ruleStatus[st.Rule] = c
		detail := fmt.Sprintf("DeviceTaintRule %s: %s=%s %s", st.Rule, c.Type, c.Status, c.Reason)
		if c.Message != "" {
			detail += ": " + c.Message
		}
		s.entries = append(s.entries, Entry{At: s.t, Kind: KindDeviceRuleStatus, Detail: detail})
		// The write, as the rule's informer delivers it back.
		if r := dv.rules[st.Rule]; r != nil && !r.deleted && r.rule.UID == st.UID {
			r.rule.Conditions = []metav1.Condition{c}
			d.SetRule(now, r.rule)
		}
	}
	due := d.Due(now)
	if err := s.spend(len(due)); err != nil {
		return err
	}
	dv.disrupts.LastTransitionTime = metav1.NewTime(now)
	for _, x := range due {
		dv.evicting, dv.evictNode = true, ""
		err := s.c.EvictPod(s.ctx, x.Pod, x.UID, &dv.disrupts)
		dv.evicting = false
		switch {
		case err == nil:
			d.Done(now, x, taints.DeviceDeleted)
			d.DeletePod(x.Pod) // the informer's delete event
			s.deviceEvicted(x, dv.evictNode)
		case apierrors.IsNotFound(err):
			d.Done(now, x, taints.DeviceGone)
		default:
			// The simulated API server fails no write but a UID
			// precondition, which a pod of the simulation never
			// fails: the device side has lost track of the cluster.
			return fmt.Errorf("policysim: device eviction of %s: %w", x.Pod, err)
		}
	}
	// A hold starts or ends at the pass's first call with now
	// (RuleStatuses): its change is reported after the evictions it let
	// through.
	s.deviceHolds()
	if inputs && len(dv.holding) > 0 {
		// The pods held change only with the inputs (and the holds,
		// judged at this pass): count them, for the peak (Scenario.Work
		// counts this work).
		dv.limBuf = d.DriverLimits(dv.limBuf[:0])
		for _, l := range dv.limBuf {
			dv.peakHeld[l.Driver] = max(dv.peakHeld[l.Driver], l.HeldPods)
		}
	}
	return nil
}

// deviceHolds records the breakers' hold changes since the last call.
func (s *sim) deviceHolds() {
	dv := s.dev
	dv.holdBuf = dv.d.AppendHoldChanges(dv.holdBuf[:0])
	for _, h := range dv.holdBuf {
		dv.holds = append(dv.holds, holdRec{at: s.t, l: h})
		if h.State == taints.DeviceHoldHolding {
			dv.holding[h.Driver] = true
		} else {
			delete(dv.holding, h.Driver)
		}
		s.entries = append(s.entries, Entry{At: s.t, Kind: KindDeviceHold, Driver: h.Driver, State: h.State.String(), Detail: h.Reason() + ": " + h.Message()})
	}
}

// podEntry fills an entry's node, zone, driver and device for a pod of
// node named pod (its claim's first device).
func (s *sim) podEntry(en *Entry, node, pod string) {
	i, ok := s.byName[node]
	if !ok {
		return
	}
	n := s.nodes[i]
	en.Node, en.Zone = node, s.sc.Zones[n.zone].Name
	z := &s.dev.zones[n.zone]
	group, j := podGroupName(node, pod), -1
	if k := strings.LastIndexByte(pod, '-'); k >= 0 {
		j, _ = strconv.Atoi(pod[k+1:])
	}
	for _, g := range z.groups {
		if g.name == group && g.set >= 0 && j >= 0 && j < g.shape.pods {
			en.Driver = z.sets[g.set].driver
			en.Device = s.dev.deviceOf(s, devKey{node: int32(i), set: int32(g.set), dev: int32(g.first + j/g.shape.perClaim*g.shape.devices)})
			return
		}
	}
}

// deviceEvicted records a pod the device pass deleted.
func (s *sim) deviceEvicted(x taints.DeviceEviction, node string) {
	en := Entry{At: s.t, Kind: KindDevicePodEvicted, Pod: x.Pod.String(), Detail: taints.DeviceDisruptionTargetReason + ": " + deviceReasons(x.Taints)}
	s.podEntry(&en, node, x.Pod.Name)
	if len(x.Taints) > 0 && x.Taints[0].Rule == "" {
		en.Driver, en.Device = x.Taints[0].Driver, x.Taints[0].Driver+"/"+x.Taints[0].Pool+"/"+x.Taints[0].Device
	}
	if due := x.At.Sub(Epoch); due < s.t {
		en.Detail += " (due at " + Offset(due) + ")"
		if en.Driver != "" {
			s.dev.delays[en.Driver] = max(s.dev.delays[en.Driver], s.t-due)
		}
	}
	s.entries = append(s.entries, en)
	for _, src := range x.Taints {
		if src.Rule != "" {
			s.dev.ruleEvicted[src.Rule]++
		}
	}
	if i, ok := s.byName[node]; ok {
		s.written(i, monitor.KindPodEvicted)
	}
}

// deviceReasons says which taints an eviction is for, without naming the
// device (so that a node's, and an instant's, alike evictions group).
func deviceReasons(srcs []taints.DeviceTaintSource) string {
	if len(srcs) == 0 {
		return "no taint"
	}
	t := srcs[0].Taint
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	s += ":" + string(t.Effect)
	if srcs[0].Rule != "" {
		s = "DeviceTaintRule " + srcs[0].Rule + " " + s
	} else {
		s = "device taint " + s
	}
	if len(srcs) > 1 {
		s += fmt.Sprintf(" and %d more", len(srcs)-1)
	}
	return s
}
