package nodehealth

import (
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Record is the persistable state of one node in a Tracker, as returned by
// Snapshot and accepted by Restore. Upstream keeps this state in memory
// only, so a controller restart grants every node a fresh grace period
// (kubernetes/kubernetes#108268) and forgets pods it still had to mark
// NotReady (kubernetes/kubernetes#50067, #135205). A caller that saves the
// Snapshot (for example in a ConfigMap, the struct has JSON tags) and
// restores it on start keeps both. Saved instants carry no monotonic
// reading; Restore compares them with the restoring clock by wall time.
type Record struct {
	// Name is the node name. Records with an empty name are skipped.
	Name string `json:"name"`
	// Probe is the controller-clock time of the node's last fresh signal.
	// Restore reads a zero Probe, or one after its now, as its now.
	Probe time.Time `json:"probe"`
	// ReadyTransition is the controller-clock time of the last Ready
	// transition the Tracker saw (Result.ReadyTransition).
	ReadyTransition time.Time `json:"readyTransition"`
	// Ready is the saved Ready condition, nil when the node had none. Only
	// Status, LastHeartbeatTime and LastTransitionTime are kept and used.
	Ready *v1.NodeCondition `json:"ready,omitempty"`
	// LeaseSeen is true when a Lease was saved for the node.
	LeaseSeen bool `json:"leaseSeen,omitempty"`
	// LeaseRenewTime is the saved Lease's RenewTime, nil when the saved Lease
	// had none (or no Lease was saved). A non-nil value implies LeaseSeen.
	// It is a kubelet-clock time, restored as it is (see Restore).
	LeaseRenewTime *time.Time `json:"leaseRenewTime,omitempty"`
	// PodsNotReady is the unacknowledged MarkPodsNotReady edge.
	PodsNotReady bool `json:"podsNotReady,omitempty"`
	// PodsNotReadyEdge identifies the pending flip
	// (Result.PodsNotReadyEdge); zero when PodsNotReady is false. Restore
	// reads a zero edge of a pending flip (a record written before the field
	// existed) as the Restore instant (moved past the previous edge, as a
	// new flip's), and every later flip gets an edge after the restored
	// ones.
	PodsNotReadyEdge time.Time `json:"podsNotReadyEdge,omitzero"`
	// LeaseOnly is true for a heartbeat timed by ObserveLease rather than a
	// node timed by Observe; Ready and the pods-not-ready fields are then
	// unused.
	LeaseOnly bool `json:"leaseOnly,omitempty"`
}

// Snapshot returns the state of every known node, sorted by name, so that a
// later Restore behaves as if the process never restarted. O(n log n); the
// result shares nothing with the Tracker.
func (t *Tracker) Snapshot() []Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Record, 0, len(t.nodes))
	for name, rec := range t.nodes {
		out = append(out, rec.export(name))
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Restore loads records saved by Snapshot, replacing the state of each node
// it names and leaving other nodes alone (call it on an empty Tracker at
// start-up). Saved times are made safe against the restoring clock:
//
//   - Probe and ReadyTransition after now are clamped to now: a saved time
//     can only be in the future through clock skew between processes, and
//     clamping never postpones a deadline. A zero Probe or ReadyTransition
//     (a hand-written or truncated record) is read as now, so the node gets
//     a full grace period instead of going Unknown on its first Observe.
//   - Probe and ReadyTransition are read against now once and kept on
//     now's clock (now.Add, with its monotonic reading), so the grace
//     periods that run on after the restart are measured on the monotonic
//     clock: a wall-clock step soon after start-up (an NTP sync) does not
//     make every restored node stale at once.
//
// Kubelet timestamps (heartbeat, Ready transition, LeaseRenewTime) are kept
// as they are, even in the future, since they are only ever compared for
// change: any renewal after the restart differs from a saved RenewTime
// that ran ahead, so it still counts, while the same unrenewed Lease does
// not (clamping it would make that Lease look renewed once and grant the
// node a fresh grace period, which Restore exists to prevent). Records
// with an empty name are skipped; with duplicate names the last one wins.
func (t *Tracker) Restore(now time.Time, rs []Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.advance(now)
	for i := range rs {
		r := &rs[i]
		if r.Name == "" {
			continue
		}
		rec := &record{
			name:         r.Name,
			probe:        onClock(r.Probe, now),
			transition:   onClock(r.ReadyTransition, now),
			podsNotReady: r.PodsNotReady,
			leaseOnly:    r.LeaseOnly,
		}
		if r.PodsNotReady {
			rec.podsEdge = r.PodsNotReadyEdge
			if rec.podsEdge.IsZero() {
				rec.podsEdge = t.newEdge(now)
			} else if rec.podsEdge.After(t.edge) {
				t.edge = rec.podsEdge // later flips get later edges
			}
		}
		if r.Ready != nil {
			rec.ready = saveReady(r.Ready)
		}
		if r.LeaseSeen || r.LeaseRenewTime != nil {
			rec.lease.present = true
			if r.LeaseRenewTime != nil {
				rec.lease.renewSet, rec.lease.renew = true, *r.LeaseRenewTime
			}
		}
		t.add(rec)
		t.schedule(rec, rec.probe.Add(t.grace(rec)), false)
	}
}

// export returns the Record of one node.
func (rec *record) export(name string) Record {
	r := Record{
		Name: name, Probe: rec.probe, ReadyTransition: rec.transition,
		LeaseSeen: rec.lease.present, PodsNotReady: rec.podsNotReady,
		LeaseOnly: rec.leaseOnly,
	}
	if rec.podsNotReady {
		r.PodsNotReadyEdge = rec.podsEdge
	}
	if rec.ready.present {
		r.Ready = &v1.NodeCondition{
			Type: v1.NodeReady, Status: rec.ready.status,
			LastHeartbeatTime:  metav1.NewTime(rec.ready.heartbeat),
			LastTransitionTime: metav1.NewTime(rec.ready.transition),
		}
	}
	if rec.lease.renewSet {
		rt := rec.lease.renew
		r.LeaseRenewTime = &rt
	}
	return r
}

// onClock returns t, a wall time from storage or from the API server, as an
// instant of now's clock: t's wall time, with now's monotonic reading (if
// any) moved back by now.Sub(t), so that the intervals later measured from
// it follow the monotonic clock and a wall-clock step does not shorten
// them. A zero t, or one after now (clock skew), is read as now.
func onClock(t, now time.Time) time.Time {
	if t.IsZero() || t.After(now) {
		return now
	}
	return now.Add(t.Sub(now))
}
