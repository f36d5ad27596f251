package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DeviceSet is a DRA driver's devices on every node of a zone (Zone.Devices)
// or of every zone (Scenario.Devices): on each node one ResourceSlice named
// <node>-<driver>, whose pool is the node's name, publishing PerNode
// devices named <prefix>-0 … <prefix>-<PerNode-1>, prefix being the
// driver name's first label ("gpu" for gpu.nvidia.com).
type DeviceSet struct {
	Driver  string `json:"driver"`  // a DNS subdomain of at most 63 characters, as the API wants
	PerNode int    `json:"perNode"` // 1 to 128 (the API's ResourceSliceMaxDevices)
}

// DeviceClaim gives a pod group's pods ResourceClaims allocated devices of
// Driver on their node (spec.resourceClaims naming the claim; the claim's
// status.reservedFor naming its pods). On each node the first
// round(Share × perNode) pods of the group use a claim, PodsPerClaim pods
// each, and each claim is allocated DevicesPerClaim devices: the groups'
// claims take the node's devices of the driver in order (the first group's
// first claim gets <prefix>-0, ...), one claim per device.
type DeviceClaim struct {
	Driver string `json:"driver"`
	// Share is the share of the group's pods on each node that use a
	// claim (rounded to the nearest pod, half up); omitted: 1, all of them.
	Share *float64 `json:"share"`
	// PodsPerClaim is how many pods share one claim: 1 to 256 (the API's
	// ResourceClaimReservedForMaxSize); omitted or 0: 1.
	PodsPerClaim int `json:"podsPerClaim"`
	// DevicesPerClaim is how many devices a claim is allocated: 1 to 32
	// (the API's AllocationResultsMaxSize); omitted or 0: 1.
	DevicesPerClaim int `json:"devicesPerClaim"`
	// Tolerations are the claim's device tolerations, on each of its
	// allocation results (at most 16, validated as the API server does):
	// a NoExecute taint they match without tolerationSeconds never
	// evicts; with it, it evicts that long after the taint's TimeAdded.
	Tolerations []resourcev1.DeviceToleration `json:"tolerations"`
}

// DeviceTaintSpec is a device taint. Key defaults to <driver>/unhealthy
// for a driver's taint (device-taint, device-untaint) and is required for a
// DeviceTaintRule; Effect is NoExecute (the default: it evicts), NoSchedule
// or None (a rule's dry run). The taint's TimeAdded is the instant it is
// added.
type DeviceTaintSpec struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"`
}

// DeviceSelector is a DeviceTaintRule's device selector: every field that
// is set must equal the device's driver, pool (a node's name) or name. The
// empty selector ({}) selects every device of the cluster
// (kubernetes/kubernetes#141422); a rule without one selects none, as
// upstream.
type DeviceSelector struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
}

// The device actions.
const (
	// ActionDeviceTaint: a DRA driver taints devices (republishing their
	// ResourceSlices): Driver, a scope (Node, Nodes or Zone; none: the
	// cluster), Count or Share of the scope's devices (default all),
	// spread over Over in batches Every apart, Taint.
	ActionDeviceTaint = "device-taint"
	// ActionDeviceUntaint: the driver removes its taint with Taint's key
	// from every device of the scope: at once, or node by node (a
	// roll-back) in node order, spread over Over in batches Every apart.
	ActionDeviceUntaint = "device-untaint"
	// ActionDeviceRule: an admin creates (or changes) the DeviceTaintRule
	// Rule with Selector and Taint.
	ActionDeviceRule = "device-rule"
	// ActionDeviceRuleDelete: the DeviceTaintRule Rule is deleted.
	ActionDeviceRuleDelete = "device-rule-delete"
	// ActionDeviceReleaseHold: an operator releases the breaker's hold on
	// Driver (taints.DeviceEvictor.ReleaseHold).
	ActionDeviceReleaseHold = "device-release-hold"
)

// Limits of the device part of a scenario.
const (
	// MaxDevices bounds the devices of a scenario, every node's summed.
	MaxDevices = 1_000_000
	// MaxDeviceRules bounds the DeviceTaintRules a scenario names.
	MaxDeviceRules = 100
	// maxDevicesPerNode is the API's ResourceSliceMaxDevices.
	maxDevicesPerNode = resourcev1.ResourceSliceMaxDevices
)

func isDeviceAction(a string) bool {
	switch a {
	case ActionDeviceTaint, ActionDeviceUntaint, ActionDeviceRule, ActionDeviceRuleDelete, ActionDeviceReleaseHold:
		return true
	}
	return false
}

// HasDevices reports whether the scenario has DRA devices, and so runs the
// device taint eviction controller.
func (sc *Scenario) HasDevices() bool {
	if len(sc.Devices) > 0 {
		return true
	}
	for i := range sc.Zones {
		if len(sc.Zones[i].Devices) > 0 {
			return true
		}
	}
	return false
}

// zoneDevices returns zone zi's device sets: the cluster-wide ones, then
// the zone's.
func (sc *Scenario) zoneDevices(zi int) []DeviceSet {
	if len(sc.Devices) == 0 {
		return sc.Zones[zi].Devices
	}
	return append(slices.Clone(sc.Devices), sc.Zones[zi].Devices...)
}

// claimShape is how a pod group uses claims on each node.
type claimShape struct {
	pods, perClaim, claims, devices int // pods with a claim, pods per claim, claims, devices per claim
}

// shape returns how the group's pods use claims on each node (zero for a
// group without DeviceClaim).
func (g *PodGroup) shape() claimShape {
	c := g.DeviceClaim
	if c == nil || g.PerNode <= 0 {
		return claimShape{}
	}
	share := 1.0
	if c.Share != nil {
		share = min(max(*c.Share, 0), 1)
	}
	s := claimShape{pods: int(math.Floor(share*float64(g.PerNode) + 0.5)), perClaim: max(c.PodsPerClaim, 1), devices: max(c.DevicesPerClaim, 1)}
	s.claims = (s.pods + s.perClaim - 1) / s.perClaim
	return s
}

// defaultTaintKey is a driver's taint key when an event names none.
func defaultTaintKey(driver string) string { return driver + "/unhealthy" }

// taintOf returns the event's taint with its defaults.
func (e *Event) taintOf() DeviceTaintSpec {
	var t DeviceTaintSpec
	if e.Taint != nil {
		t = *e.Taint
	}
	if t.Key == "" && e.Driver != "" {
		t.Key = defaultTaintKey(e.Driver)
	}
	if t.Effect == "" {
		t.Effect = string(resourcev1.DeviceTaintEffectNoExecute)
	}
	return t
}

// String writes the taint as key[=value]:Effect.
func (t DeviceTaintSpec) String() string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + t.Effect
}

// devicePolicy checks the blast-radius fields.
func (v *validator) devicePolicy(p *Policy) {
	w := v.w
	if r := p.DeviceEvictionQPS; math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		w.failAt("policy.deviceEvictionQPS", "must be a finite number >= 0 (pods per second per driver), got %v", r)
	} else if r > 1e6 {
		w.failAt("policy.deviceEvictionQPS", "at most 1e6 pods per second, got %v", r)
	}
	if b := p.DeviceEvictionBurst; b < 0 || b > 1_000_000 || p.DeviceEvictionQPS > 0 && b < 1 {
		w.failAt("policy.deviceEvictionBurst", "must be in [1, 1000000] (pods), got %d", b)
	}
	if s := p.DeviceMaxShare; math.IsNaN(s) || s < 0 || s > 1 {
		w.failAt("policy.deviceMaxShare", "must be in [0, 1], got %v", s)
	}
	if n := p.DeviceMinDevices; n < 0 || n > MaxDevices {
		w.failAt("policy.deviceMinDevices", "must be in [0, %d], got %d", MaxDevices, n)
	}
	if s := p.DeviceResumeShare; math.IsNaN(s) || s < 0 || s > p.DeviceMaxShare {
		w.failAt("policy.deviceResumeShare", "must be in [0, deviceMaxShare (%v)], got %v", p.DeviceMaxShare, s)
	}
	if d := p.DeviceResumeAfter; d < 0 || d.D() > MaxDuration {
		w.failAt("policy.deviceResumeAfter", "must be in [0, %v], got %v", MaxDuration, d.D())
	}
}

// deviceSets checks a list of device sets at path; it returns their
// drivers' devices per node.
func (v *validator) deviceSets(path string, sets []DeviceSet, into map[string]int) {
	w := v.w
	for i, d := range sets {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case d.Driver == "":
			w.failAt(p+".driver", "required (a DRA driver name such as gpu.nvidia.com)")
		case !validDriver(d.Driver):
			w.failAt(p+".driver", "%q is not a valid driver name: a DNS subdomain of at most 63 characters", d.Driver)
		case into[d.Driver] != 0:
			w.failAt(p+".driver", "driver %q listed twice for the same nodes", d.Driver)
		}
		if d.PerNode < 1 || d.PerNode > maxDevicesPerNode {
			w.failAt(p+".perNode", "must be in [1, %d] (ResourceSliceMaxDevices), got %d", maxDevicesPerNode, d.PerNode)
			continue
		}
		if d.Driver != "" && into[d.Driver] == 0 {
			into[d.Driver] = d.PerNode
		}
	}
}

func validDriver(name string) bool {
	return len(name) <= 63 && len(validation.IsDNS1123Subdomain(name)) == 0
}

// devicesOf checks the scenario's devices and claims and records, per
// zone, each driver's devices per node (v.zoneDrivers) and the rules the
// events name (v.rules).
func (v *validator) devicesOf(sc *Scenario) {
	w := v.w
	cluster := map[string]int{}
	v.deviceSets("devices", sc.Devices, cluster)
	v.zoneDrivers = map[string]map[string]int{}
	v.drivers = map[string]bool{}
	total := 0
	for zi := range sc.Zones {
		z := &sc.Zones[zi]
		path := fmt.Sprintf("zones[%d]", zi)
		drivers := map[string]int{}
		for k, n := range cluster {
			drivers[k] = n
		}
		v.deviceSets(path+".devices", z.Devices, drivers)
		for d := range drivers {
			v.drivers[d] = true
		}
		if _, ok := v.zoneDrivers[z.Name]; !ok {
			v.zoneDrivers[z.Name] = drivers
		}
		perNode := 0
		for _, n := range drivers {
			perNode += n
		}
		if z.Nodes > 0 && z.Nodes <= MaxNodes {
			total = min(total+z.Nodes*perNode, MaxDevices+1)
		}
		used := map[string]int{}
		for j := range z.Pods {
			g := &z.Pods[j]
			c := g.DeviceClaim
			if c == nil {
				continue
			}
			cp := fmt.Sprintf("%s.pods[%d].deviceClaim", path, j)
			switch {
			case c.Driver == "":
				w.failAt(cp+".driver", "required")
			case drivers[c.Driver] == 0:
				w.failAt(cp+".driver", "zone %q has no devices of driver %q (drivers: %s)", z.Name, c.Driver, driverList(drivers))
			}
			if c.Share != nil && (math.IsNaN(*c.Share) || *c.Share < 0 || *c.Share > 1) {
				w.failAt(cp+".share", "must be in [0, 1], got %v", *c.Share)
			}
			if c.PodsPerClaim < 0 || c.PodsPerClaim > resourcev1.ResourceClaimReservedForMaxSize {
				w.failAt(cp+".podsPerClaim", "must be in [1, %d] (ResourceClaimReservedForMaxSize), got %d", resourcev1.ResourceClaimReservedForMaxSize, c.PodsPerClaim)
			}
			if c.DevicesPerClaim < 0 || c.DevicesPerClaim > resourcev1.AllocationResultsMaxSize {
				w.failAt(cp+".devicesPerClaim", "must be in [1, %d] (AllocationResultsMaxSize), got %d", resourcev1.AllocationResultsMaxSize, c.DevicesPerClaim)
			}
			if n := len(c.Tolerations); n > resourcev1.DeviceTolerationsMaxLength {
				w.failAt(cp+".tolerations", "at most %d (DeviceTolerationsMaxLength), got %d", resourcev1.DeviceTolerationsMaxLength, n)
			} else {
				for k := range c.Tolerations {
					v.deviceToleration(fmt.Sprintf("%s.tolerations[%d]", cp, k), &c.Tolerations[k])
				}
			}
			if g.PerNode > 0 && g.PerNode <= MaxPods && c.PodsPerClaim >= 0 && c.DevicesPerClaim >= 0 && c.DevicesPerClaim <= resourcev1.AllocationResultsMaxSize {
				s := g.shape()
				used[c.Driver] += s.claims * s.devices
			}
		}
		for _, d := range slices.Sorted(maps.Keys(used)) {
			if have := drivers[d]; have > 0 && used[d] > have {
				w.failAt(path+".pods", "the pod groups' claims need %d %s devices on each node, the zone has %d (one claim per device)", used[d], d, have)
			}
		}
	}
	if total > MaxDevices {
		w.failAt("zones", "more than %d devices in all (MaxDevices)", MaxDevices)
	}
	v.rules = map[string]bool{}
	for _, e := range sc.Events {
		if e.Action == ActionDeviceRule && e.Rule != "" {
			v.rules[e.Rule] = true
		}
	}
}

func driverList(drivers map[string]int) string {
	if len(drivers) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(drivers)), ", ")
}

// deviceToleration applies the API server's validation of a device
// toleration (validateDeviceToleration at v1.37.2).
func (v *validator) deviceToleration(path string, t *resourcev1.DeviceToleration) {
	w := v.w
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			w.failAt(path+".key", "%q is not a valid taint key: %s", t.Key, strings.Join(errs, "; "))
		}
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			w.failAt(path+".value", "must be empty when operator is Exists")
		}
	case resourcev1.DeviceTolerationOpEqual:
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			w.failAt(path+".value", "%q is not a valid value: %s", t.Value, strings.Join(errs, "; "))
		}
	case "":
		w.failAt(path+".operator", "required (Exists or Equal)")
	default:
		w.failAt(path+".operator", "must be Exists or Equal, got %q", t.Operator)
	}
	switch t.Effect {
	case "", resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone:
	default:
		w.failAt(path+".effect", "must be NoExecute, NoSchedule or None, got %q", t.Effect)
	}
}

// deviceTaint checks a device taint; a rule's needs a key.
func (v *validator) deviceTaint(path string, t *DeviceTaintSpec, needKey bool) {
	w := v.w
	if t.Key == "" {
		if needKey {
			w.failAt(path+".key", "required")
		}
	} else if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		w.failAt(path+".key", "%q is not a valid taint key: %s", t.Key, strings.Join(errs, "; "))
	}
	if t.Value != "" {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			w.failAt(path+".value", "%q is not a valid value: %s", t.Value, strings.Join(errs, "; "))
		}
	}
	switch resourcev1.DeviceTaintEffect(t.Effect) {
	case "", resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone:
	default:
		w.failAt(path+".effect", "must be NoExecute, NoSchedule or None, got %q", t.Effect)
	}
}

// eventFields names an event's optional fields in YAML order, for the
// errors about fields an action does not take.
var eventFields = []string{"node", "nodes", "zone", "count", "driver", "share", "over", "every", "taint", "rule", "selector"}

func setFields(e *Event) map[string]bool {
	return map[string]bool{"node": e.Node != "", "nodes": len(e.Nodes) > 0, "zone": e.Zone != "", "count": e.Count != 0,
		"driver": e.Driver != "", "share": e.Share != 0, "over": e.Over != 0, "every": e.Every != 0, "taint": e.Taint != nil,
		"rule": e.Rule != "", "selector": e.Selector != nil}
}

// deviceActionFields are the fields each device action takes.
var deviceActionFields = map[string][]string{
	ActionDeviceTaint:       {"driver", "node", "nodes", "zone", "count", "share", "over", "every", "taint"},
	ActionDeviceUntaint:     {"driver", "node", "nodes", "zone", "over", "every", "taint"},
	ActionDeviceRule:        {"rule", "selector", "taint"},
	ActionDeviceRuleDelete:  {"rule"},
	ActionDeviceReleaseHold: {"driver"},
}

// noDeviceFields reports device fields on a kubelet or cache event.
func (v *validator) noDeviceFields(path string, e *Event) {
	set := setFields(e)
	var extra []string
	for _, f := range eventFields[4:] {
		if set[f] {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 && e.Action != "" && slices.Contains(actions, e.Action) {
		v.w.failAt(path, "%s takes no %s (fields of the device actions)", e.Action, strings.Join(extra, ", "))
	}
}

// deviceEvent checks a device action.
func (v *validator) deviceEvent(sc *Scenario, path string, e *Event) {
	w := v.w
	set := setFields(e)
	takes := deviceActionFields[e.Action]
	var extra []string
	for _, f := range eventFields {
		if set[f] && !slices.Contains(takes, f) {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		w.failAt(path, "%s takes no %s (it takes %s)", e.Action, strings.Join(extra, ", "), strings.Join(takes, ", "))
	}
	if slices.Contains(takes, "driver") {
		switch {
		case e.Driver == "":
			w.failAt(path+".driver", "required")
		case !v.drivers[e.Driver]:
			w.failAt(path+".driver", "no devices of driver %q (drivers: %s)", e.Driver, driverList(boolsToInts(v.drivers)))
		}
	}
	switch e.Action {
	case ActionDeviceTaint, ActionDeviceUntaint:
		v.deviceScope(sc, path, e)
		if e.Taint != nil {
			v.deviceTaint(path+".taint", e.Taint, false)
			if e.Action == ActionDeviceUntaint && (e.Taint.Value != "" || e.Taint.Effect != "") {
				w.failAt(path+".taint", "device-untaint removes the taint with this key: give the key alone")
			}
		}
	case ActionDeviceRule:
		v.ruleName(path+".rule", e.Rule)
		if e.Taint == nil {
			w.failAt(path+".taint", "required (key, and value and effect: NoExecute by default)")
		} else {
			v.deviceTaint(path+".taint", e.Taint, true)
		}
		if s := e.Selector; s != nil {
			if s.Driver != "" && !validDriver(s.Driver) {
				w.failAt(path+".selector.driver", "%q is not a valid driver name: a DNS subdomain of at most 63 characters", s.Driver)
			}
			if s.Pool != "" && len(validation.IsDNS1123Subdomain(s.Pool)) > 0 {
				w.failAt(path+".selector.pool", "%q is not a valid pool name", s.Pool)
			}
			if s.Device != "" && len(validation.IsDNS1123Label(s.Device)) > 0 {
				w.failAt(path+".selector.device", "%q is not a valid device name", s.Device)
			}
		}
	case ActionDeviceRuleDelete:
		v.ruleName(path+".rule", e.Rule)
		if e.Rule != "" && !v.rules[e.Rule] {
			w.failAt(path+".rule", "no device-rule event creates rule %q", e.Rule)
		}
	}
}

func boolsToInts(m map[string]bool) map[string]int {
	out := make(map[string]int, len(m))
	for k := range m {
		out[k] = 1
	}
	return out
}

func (v *validator) ruleName(path, name string) {
	switch {
	case name == "":
		v.w.failAt(path, "required (the DeviceTaintRule's name)")
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		v.w.failAt(path, "%q is not a valid DeviceTaintRule name: %s", name, strings.Join(validation.IsDNS1123Subdomain(name), "; "))
	}
}

// deviceScope checks a device-taint or device-untaint's scope, selection
// and window.
func (v *validator) deviceScope(sc *Scenario, path string, e *Event) {
	w := v.w
	targets := 0
	for _, b := range []bool{e.Node != "", len(e.Nodes) > 0, e.Zone != ""} {
		if b {
			targets++
		}
	}
	if targets > 1 {
		w.failAt(path, "%s needs at most one of node, nodes or zone (none: the whole cluster)", e.Action)
	}
	n, ok := 0, true // the scope's devices of the driver
	perNode := func(zone string) int { return v.zoneDrivers[zone][e.Driver] }
	switch {
	case e.Node != "":
		v.node(path+".node", e.Node)
		if z, _, found := v.parseNode(e.Node); found {
			n = perNode(z)
		} else {
			ok = false
		}
	case len(e.Nodes) > 0:
		for i, name := range e.Nodes {
			v.node(fmt.Sprintf("%s.nodes[%d]", path, i), name)
			if z, _, found := v.parseNode(name); found {
				n += perNode(z)
			} else {
				ok = false
			}
		}
	case e.Zone != "":
		if z, found := v.zones[e.Zone]; !found {
			w.failAt(path+".zone", "unknown zone %q (zones: %s)", e.Zone, strings.Join(zoneNames(sc), ", "))
			ok = false
		} else {
			n = z.Nodes * perNode(e.Zone)
		}
	default:
		for _, z := range sc.Zones {
			if z.Nodes > 0 && z.Nodes <= MaxNodes {
				n = min(n+z.Nodes*perNode(z.Name), MaxDevices+1)
			}
		}
	}
	if ok && n == 0 && e.Driver != "" && v.drivers[e.Driver] {
		w.failAt(path+".driver", "driver %q has no devices in the event's scope", e.Driver)
	}
	switch {
	case e.Count < 0:
		w.failAt(path+".count", "must be in [1, %d] (the scope's %s devices), got %d", n, e.Driver, e.Count)
	case ok && n > 0 && e.Count > n:
		w.failAt(path+".count", "must be in [1, %d] (the scope's %s devices), got %d", n, e.Driver, e.Count)
	}
	if math.IsNaN(e.Share) || e.Share < 0 || e.Share > 1 {
		w.failAt(path+".share", "must be in [0, 1] (0: use count, or every device), got %v", e.Share)
	} else if e.Share > 0 && e.Count != 0 {
		w.failAt(path+".share", "use either count or share, not both")
	}
	if e.Over < 0 {
		w.failAt(path+".over", "must not be negative, got %v", e.Over.D())
	} else if sc.Duration > 0 && e.At >= 0 && e.Over.D() > sc.Duration.D()-e.At.D() {
		w.failAt(path+".over", "the window ends at %v, after the end of the run (duration %v)", (e.At + e.Over).D(), sc.Duration.D())
	}
	switch {
	case e.Every < 0:
		w.failAt(path+".every", "must not be negative, got %v", e.Every.D())
	case e.Every > 0 && e.Over <= 0:
		w.failAt(path+".every", "needs over (the window its batches spread over)")
	case e.Every > 0 && (e.Every.D() < MinInterval || e.Every > e.Over):
		w.failAt(path+".every", "must be in [%v, over (%v)], got %v", MinInterval, e.Over.D(), e.Every.D())
	}
}

// deviceEventLimits checks what spans the events: at most MaxDeviceRules
// rules, and at most the API's DeviceTaintsMaxLength taint keys per
// driver (every device of a driver could carry each).
func (v *validator) deviceEventLimits(sc *Scenario) {
	if len(v.rules) > MaxDeviceRules {
		v.w.failAt("events", "%d DeviceTaintRules named; at most %d (MaxDeviceRules)", len(v.rules), MaxDeviceRules)
	}
	keys := map[string]map[string]bool{}
	for i := range sc.Events {
		e := &sc.Events[i]
		if e.Action != ActionDeviceTaint || e.Driver == "" {
			continue
		}
		if keys[e.Driver] == nil {
			keys[e.Driver] = map[string]bool{}
		}
		k := e.taintOf().Key
		if !keys[e.Driver][k] && len(keys[e.Driver]) == resourcev1.DeviceTaintsMaxLength {
			v.w.failAt(fmt.Sprintf("events[%d].taint.key", i), "driver %q would get more than %d taint keys (DeviceTaintsMaxLength)", e.Driver, resourcev1.DeviceTaintsMaxLength)
			continue
		}
		keys[e.Driver][k] = true
	}
}

// deviceWork is the event steps of the scenario's device events: the
// devices each device-taint or device-untaint targets times 1 + the pods
// on a device, and for each rule event and release every device and pod
// with a claim (a rule re-evaluates every claim it selects, a release
// every claim of its driver); with a breaker, every pod with a claim again
// for each instant of a device-taint (the pods held are counted then).
func (sc *Scenario) deviceWork() int64 {
	if !sc.HasDevices() {
		return 0
	}
	var devices, claimed, podsPerDevice int64
	for zi := range sc.Zones {
		z := &sc.Zones[zi]
		nodes := int64(max(z.Nodes, 0))
		for _, d := range sc.zoneDevices(zi) {
			devices = satAdd(devices, satMul(nodes, int64(max(d.PerNode, 0))))
		}
		for _, g := range z.PodGroups() {
			s := g.shape()
			claimed = satAdd(claimed, satMul(nodes, int64(s.pods)))
			if s.devices > 0 {
				podsPerDevice = max(podsPerDevice, int64((s.perClaim+s.devices-1)/s.devices))
			}
		}
	}
	var w int64
	for i := range sc.Events {
		e := &sc.Events[i]
		switch e.Action {
		case ActionDeviceTaint:
			m := e.chosen(sc.scopeDevices(e))
			w = satAdd(w, satMul(int64(m), 1+podsPerDevice))
			if sc.Policy.DeviceMaxShare > 0 {
				// While a breaker holds, each step counts the pods held.
				w = satAdd(w, satMul(int64(e.steps(m)), claimed))
			}
		case ActionDeviceUntaint:
			m := sc.scopeDevices(e)
			w = satAdd(w, satMul(int64(m), 1+podsPerDevice))
			if sc.Policy.DeviceMaxShare > 0 {
				// At most one step per device (node by node).
				w = satAdd(w, satMul(int64(e.steps(m)), claimed))
			}
		case ActionDeviceRule, ActionDeviceRuleDelete, ActionDeviceReleaseHold:
			w = satAdd(w, satAdd(devices, claimed))
		}
	}
	return w
}

// driverPerNode returns how many devices of driver each node of zone has.
func (sc *Scenario) driverPerNode(zone, driver string) int {
	for zi := range sc.Zones {
		if sc.Zones[zi].Name != zone {
			continue
		}
		for _, d := range sc.zoneDevices(zi) {
			if d.Driver == driver {
				return max(d.PerNode, 0)
			}
		}
	}
	return 0
}

// scopeDevices returns how many devices of its driver a device-taint or
// device-untaint event's scope holds (of a valid scenario).
func (sc *Scenario) scopeDevices(e *Event) int {
	zoneOf := func(node string) string {
		if i := strings.LastIndexByte(node, '-'); i > 0 {
			return node[:i]
		}
		return ""
	}
	n := 0
	switch {
	case e.Node != "":
		n = sc.driverPerNode(zoneOf(e.Node), e.Driver)
	case len(e.Nodes) > 0:
		for _, name := range e.Nodes {
			n += sc.driverPerNode(zoneOf(name), e.Driver)
		}
	case e.Zone != "":
		for _, z := range sc.Zones {
			if z.Name == e.Zone {
				n = max(z.Nodes, 0) * sc.driverPerNode(z.Name, e.Driver)
			}
		}
	default:
		for _, z := range sc.Zones {
			n += max(z.Nodes, 0) * sc.driverPerNode(z.Name, e.Driver)
		}
	}
	return n
}

// steps returns how many instants a device-taint of m devices spreads
// over: one without over, one per batch with every, else one per device.
func (e *Event) steps(m int) int {
	switch {
	case e.Over <= 0 || m <= 1:
		return min(m, 1)
	case e.Every > 0:
		return min(m, int(e.Over/e.Every)+1)
	}
	return m
}

// chosen returns how many of a scope's n devices a device-taint event
// taints: Count, or Share of them (rounded to the nearest, half up), or
// all.
func (e *Event) chosen(n int) int {
	switch {
	case e.Count > 0:
		return min(e.Count, n)
	case e.Share > 0:
		return min(int(math.Floor(e.Share*float64(n)+0.5)), n)
	}
	return n
}
