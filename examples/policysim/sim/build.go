package sim

import "time"

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
