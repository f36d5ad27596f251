package incident

import (
	"cmp"
	"slices"
	"time"
)

// Kind is the kind of a Decision, named as policysim names its timeline
// entries.
type Kind string

// The kinds of Decision.
const (
	KindNodeUnknown  Kind = "node-unknown"  // the controller wrote the node's Ready=Unknown
	KindTaintAdded   Kind = "taint-added"   // it added a taint (Detail key:effect)
	KindTaintRemoved Kind = "taint-removed" // it removed one
	KindPodNotReady  Kind = "pod-not-ready" // it wrote a pod's Ready=False
	KindPodEvicted   Kind = "pod-evicted"   // it deleted a pod
)

// kindOrder orders kinds within an instant as a controller makes them.
func kindOrder(k Kind) int {
	switch k {
	case KindNodeUnknown:
		return 1
	case KindPodNotReady:
		return 2
	case KindTaintAdded:
		return 3
	case KindTaintRemoved:
		return 4
	case KindPodEvicted:
		return 5
	}
	return 9
}

// Decision is one write of a node lifecycle controller: recorded (what the
// real controller wrote, read from the log) or replayed (what the Monitor
// wrote in the replay).
type Decision struct {
	Time   time.Time
	Kind   Kind
	Node   string
	Pod    string // namespace/name, for the pod kinds
	Detail string // taint-added, taint-removed: the taint's key:effect
	// Inferred marks a recorded decision the log only implies (a status
	// write without a body, at level Metadata).
	Inferred bool
	// Source is where a recorded decision was read (file:line).
	Source string
}

// object is what a decision is about: the kind and the object, for
// matching recorded with replayed.
func (d Decision) object() string {
	return string(d.Kind) + " " + d.Node + " " + d.Pod + " " + d.Detail
}

func compareDecisions(a, b Decision) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), cmp.Compare(a.Node, b.Node),
		cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Detail, b.Detail), cmp.Compare(a.Source, b.Source))
}

func sortDecisions(ds []Decision) { slices.SortStableFunc(ds, compareDecisions) }
