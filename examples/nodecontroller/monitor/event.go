package monitor

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Kind is the kind of an Event. The values are the strings policysim prints.
type Kind string

// The kinds of Event.
const (
	KindNodeUnknown    Kind = "node-unknown"    // the Monitor wrote Ready=Unknown
	KindNodeNotReady   Kind = "node-not-ready"  // the kubelet reported Ready=False
	KindNodeReady      Kind = "node-ready"      // Ready=True again after being not ready
	KindTaintAdded     Kind = "taint-added"     // a taint the Monitor manages was added
	KindTaintRemoved   Kind = "taint-removed"   // ... or removed
	KindPodsNotReady   Kind = "pods-not-ready"  // the node's pods were marked Ready=False
	KindPodEvicted     Kind = "pod-evicted"     // a pod was deleted by the eviction logic
	KindZoneState      Kind = "zone-state"      // a zone changed state
	KindDisruptionMode Kind = "disruption-mode" // full disruption mode entered or exited
	KindWriteFailed    Kind = "write-failed"    // an API write failed and will be retried
	KindNodeEvicting   Kind = "node-evicting"   // legacy mode: the node's pods are queued for deletion
	// KindEvictionCancelled: a pod's scheduled NoExecute eviction was
	// cancelled (reported only with Config.CancelledEvictions > 0).
	KindEvictionCancelled Kind = "eviction-cancelled"
)

// Event is one thing the Monitor did or saw, for timelines, Kubernetes
// events and logs. Detail is human-readable; the typed fields carry the same
// facts for programs.
type Event struct {
	At     time.Time
	Kind   Kind
	Node   string
	Pod    string // namespace/name
	Zone   string
	Detail string

	// Taint is the taint added or removed (KindTaintAdded, KindTaintRemoved).
	Taint v1.Taint
	// State and QPS are the zone's new state and tainting rate in nodes/s
	// (KindZoneState).
	State zonestate.State
	QPS   float64
	// Entered is true when full disruption mode is entered and false when
	// it is exited (KindDisruptionMode).
	Entered bool
}
