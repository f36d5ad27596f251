package sim

import (
	"slices"
	"time"
)

// NewScenario returns a scenario named name that simulates duration over
// zones, with the Kubernetes v1.37.2 defaults (DefaultPolicy, DefaultKubelet)
// and no events: the same value LoadScenario returns for a file with only
// those fields. Add events with Scenario.On or to Events directly.
func NewScenario(name string, duration time.Duration, zones ...Zone) *Scenario {
	return &Scenario{Name: name, Duration: Duration(duration), Policy: DefaultPolicy(), Kubelet: DefaultKubelet(), Zones: zones}
}

// On appends events to the scenario and returns it.
func (sc *Scenario) On(events ...Event) *Scenario {
	sc.Events = append(sc.Events, events...)
	return sc
}

// NewZone returns a zone of nodes identical nodes carrying the pod groups
// (none: no pods).
func NewZone(name string, nodes int, pods ...PodGroup) Zone {
	return Zone{Name: name, Nodes: nodes, Pods: pods}
}

// NewPods returns a pod group of perNode pods on every node with the
// admission plugin's default tolerations (300s, or the policy's).
func NewPods(name string, perNode int) PodGroup {
	return PodGroup{Name: name, PerNode: perNode}
}

// NewDaemonSetPods returns a group of perNode DaemonSet pods on every node:
// they tolerate not-ready and unreachable forever.
func NewDaemonSetPods(name string, perNode int) PodGroup {
	return PodGroup{Name: name, PerNode: perNode, DaemonSet: true}
}

// Stop returns an event stopping the kubelets of the first count nodes of
// zone at at (count 0: every node of the zone).
func Stop(at time.Duration, zone string, count int) Event {
	return Event{At: Duration(at), Action: ActionStop, Zone: zone, Count: count}
}

// StopNodes returns an event stopping the kubelets of the named nodes at at.
func StopNodes(at time.Duration, nodes ...string) Event {
	return Event{At: Duration(at), Action: ActionStop, Nodes: nodes}
}

// Resume returns an event resuming the kubelets of the first count nodes of
// zone at at (count 0: every node of the zone).
func Resume(at time.Duration, zone string, count int) Event {
	return Event{At: Duration(at), Action: ActionResume, Zone: zone, Count: count}
}

// NotReady returns an event making the kubelets of the first count nodes of
// zone report Ready=False at at (count 0: every node of the zone).
func NotReady(at time.Duration, zone string, count int) Event {
	return Event{At: Duration(at), Action: ActionNotReady, Zone: zone, Count: count}
}

// ZoneDark returns an event stopping every kubelet of zone at at.
func ZoneDark(at time.Duration, zone string) Event {
	return Event{At: Duration(at), Action: ActionZoneDark, Zone: zone}
}

// ZoneRestore returns an event resuming every kubelet of zone at at.
func ZoneRestore(at time.Duration, zone string) Event {
	return Event{At: Duration(at), Action: ActionZoneRestore, Zone: zone}
}

// LeaseWatchStall returns an event freezing the controller's Lease cache
// at at (its Lease watch stalls) while the kubelets keep renewing (action
// lease-watch-stall).
func LeaseWatchStall(at time.Duration) Event {
	return Event{At: Duration(at), Action: ActionLeaseWatchStall}
}

// LeaseWatchResume returns an event letting the controller's Lease cache
// catch up at at (action lease-watch-resume).
func LeaseWatchResume(at time.Duration) Event {
	return Event{At: Duration(at), Action: ActionLeaseWatchResume}
}

// NewDevices returns perNode devices of a DRA driver on every node: put it
// in Zone.Devices (that zone's nodes, see Zone.WithDevices) or
// Scenario.Devices (every zone's).
func NewDevices(driver string, perNode int) DeviceSet {
	return DeviceSet{Driver: driver, PerNode: perNode}
}

// WithDevices returns the zone with device sets added to its Devices.
func (z Zone) WithDevices(sets ...DeviceSet) Zone {
	z.Devices = append(slices.Clone(z.Devices), sets...)
	return z
}

// NewClaimPods returns a pod group of perNode pods on every node, each
// with a ResourceClaim of its own allocated one device of driver on its
// node (DeviceClaim: set its PodsPerClaim, DevicesPerClaim, Share or
// Tolerations for more), and the admission plugin's default tolerations.
func NewClaimPods(name string, perNode int, driver string) PodGroup {
	return PodGroup{Name: name, PerNode: perNode, DeviceClaim: &DeviceClaim{Driver: driver}}
}

// TaintDevices returns a device-taint event: from at, driver taints share
// of its devices in the cluster (0: all of them) NoExecute with
// <driver>/unhealthy, one after the other over over (0: all at once).
// Narrow it with the event's Zone, Node or Nodes, use Count instead of a
// share, set Every to taint in batches or Taint for another taint, as in
// YAML.
func TaintDevices(at time.Duration, driver string, share float64, over time.Duration) Event {
	return Event{At: Duration(at), Action: ActionDeviceTaint, Driver: driver, Share: share, Over: Duration(over)}
}

// UntaintDevices returns a device-untaint event: at at, driver removes its
// taint <driver>/unhealthy (set the event's Taint for another key) from
// every device of the cluster (or of its Zone, Node or Nodes).
func UntaintDevices(at time.Duration, driver string) Event {
	return Event{At: Duration(at), Action: ActionDeviceUntaint, Driver: driver}
}

// AddDeviceRule returns a device-rule event: at at, the DeviceTaintRule
// name is created (or changed) with selector (nil selects no device, the
// empty selector every device) and taint (Effect "" is NoExecute).
func AddDeviceRule(at time.Duration, name string, selector *DeviceSelector, taint DeviceTaintSpec) Event {
	return Event{At: Duration(at), Action: ActionDeviceRule, Rule: name, Selector: selector, Taint: &taint}
}

// DeleteDeviceRule returns a device-rule-delete event: the DeviceTaintRule
// name is deleted at at.
func DeleteDeviceRule(at time.Duration, name string) Event {
	return Event{At: Duration(at), Action: ActionDeviceRuleDelete, Rule: name}
}

// ReleaseDeviceHold returns a device-release-hold event: at at, an
// operator releases the blast-radius breaker's hold on driver
// (taints.DeviceEvictor.ReleaseHold).
func ReleaseDeviceHold(at time.Duration, driver string) Event {
	return Event{At: Duration(at), Action: ActionDeviceReleaseHold, Driver: driver}
}
