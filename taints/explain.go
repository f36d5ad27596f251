package taints

import (
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EvictionState is where a pod stands, as Explain reports it.
type EvictionState uint8

const (
	// EvictionNotTracked: the Evictor has no such pod (never set, deleted,
	// or not bound to a node).
	EvictionNotTracked EvictionState = 1 + iota
	// EvictionNodeNotTainted: the pod's node has no NoExecute taint; the pod
	// is not evicted.
	EvictionNodeNotTainted
	// EvictionToleratedForever: every NoExecute taint on the node is
	// tolerated by a toleration without TolerationSeconds; not evicted.
	EvictionToleratedForever
	// EvictionScheduled: the pod will be evicted at At.
	EvictionScheduled
	// EvictionDue: At has passed; the next Due hands the eviction out.
	EvictionDue
	// EvictionHandedOut: Due handed the eviction out; waiting for Done or
	// Retry (it is not handed out again meanwhile).
	EvictionHandedOut
	// EvictionRetrying: a deletion failed (Retry); it is due again at At.
	EvictionRetrying
	// EvictionDone: the eviction succeeded (Done); the pod is not evicted
	// again while it keeps its UID.
	EvictionDone
)

// String returns the state's name.
func (s EvictionState) String() string {
	switch s {
	case EvictionNotTracked:
		return "NotTracked"
	case EvictionNodeNotTainted:
		return "NodeNotTainted"
	case EvictionToleratedForever:
		return "ToleratedForever"
	case EvictionScheduled:
		return "Scheduled"
	case EvictionDue:
		return "Due"
	case EvictionHandedOut:
		return "HandedOut"
	case EvictionRetrying:
		return "Retrying"
	case EvictionDone:
		return "Done"
	}
	return "EvictionState(" + strconv.Itoa(int(s)) + ")"
}

// Explanation says when a pod will be evicted and what decides it, or why it
// will not be. All pointers are copies owned by the caller.
type Explanation struct {
	State EvictionState
	Pod   types.NamespacedName
	UID   types.UID
	Node  string
	// At is the fire time for Scheduled, Due, HandedOut and Retrying (under
	// RescheduleNever it can differ from Start + the toleration's seconds:
	// a scheduled fire time never moves).
	At time.Time
	// Reason is why the pod is (or was) evicted, for Scheduled, Due,
	// HandedOut, Retrying and Done.
	Reason Reason
	// Taint is the binding taint on the node now: the first one not
	// tolerated, else the one whose toleration runs out first, else (all
	// tolerated forever) the first one. Nil when the node has no NoExecute
	// taint.
	Taint *v1.Taint
	// Toleration is the pod's toleration used for Taint (the first one in
	// pod order that tolerates it), nil when Taint is not tolerated.
	Toleration *v1.Toleration
	// Start is when Taint's countdown started for this pod (the later of the
	// taint's and the pod's start), set when Toleration has TolerationSeconds.
	Start time.Time
	// Attempts is the number of failed deletions (Retry calls) so far.
	Attempts int
}

// Explain reports what the Evictor will do with the pod key and why, as of
// now (a now earlier than one already seen counts as that one). It does not
// change any state. It allocates the copies in the result.
func (e *Evictor) Explain(now time.Time, key types.NamespacedName) Explanation {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Before(e.last) {
		now = e.last
	}
	rec := e.pods.get(key)
	if rec == nil {
		return Explanation{State: EvictionNotTracked, Pod: key}
	}
	x := Explanation{Pod: key, UID: e.uidOf(rec), Node: rec.node.name, Attempts: int(rec.attempts)}
	v := e.judgeRec(rec)
	if v.taint >= 0 {
		t := copyTaint(rec.node.taints[v.taint].taint)
		x.Taint = &t
		if v.tol >= 0 {
			x.Toleration = rec.tols.list[v.tol].DeepCopy()
			if v.kind == vAt {
				x.Start = v.start
			}
		}
	}
	switch rec.state {
	case stEvicted:
		x.State, x.Reason = EvictionDone, rec.reason
	case stHandedOut:
		x.State, x.At, x.Reason = EvictionHandedOut, rec.at, rec.reason
	case stScheduled:
		x.At, x.Reason = rec.at, rec.reason
		switch {
		case rec.attempts > 0:
			x.State = EvictionRetrying
		case !rec.at.After(now):
			x.State = EvictionDue
		default:
			x.State = EvictionScheduled
		}
	default:
		if v.kind == vNone {
			x.State = EvictionNodeNotTainted
		} else {
			x.State = EvictionToleratedForever
		}
	}
	return x
}

// String describes the explanation in one line, times in UTC RFC 3339.
func (x Explanation) String() string {
	var b strings.Builder
	b.WriteString("pod ")
	b.WriteString(x.Pod.String())
	if x.Node != "" {
		b.WriteString(" on node ")
		b.WriteString(x.Node)
	}
	b.WriteString(": ")
	switch x.State {
	case EvictionNotTracked:
		b.WriteString("not tracked")
	case EvictionNodeNotTainted:
		b.WriteString("not evicted: the node has no NoExecute taint")
	case EvictionToleratedForever:
		b.WriteString("not evicted: every NoExecute taint is tolerated forever")
	case EvictionScheduled:
		b.WriteString("evicted at " + stamp(x.At) + " (" + x.Reason.String() + ")")
	case EvictionDue:
		b.WriteString("due since " + stamp(x.At) + " (" + x.Reason.String() + ")")
	case EvictionHandedOut:
		b.WriteString("being deleted (due " + stamp(x.At) + ", " + x.Reason.String() + ")")
	case EvictionRetrying:
		b.WriteString("deletion failed " + strconv.Itoa(x.Attempts) + " time(s), retry at " + stamp(x.At))
	case EvictionDone:
		b.WriteString("evicted (" + x.Reason.String() + "), waiting for the pod to go away")
	default:
		b.WriteString(x.State.String())
	}
	if x.Taint != nil && x.State != EvictionNotTracked {
		b.WriteString("; taint ")
		b.WriteString(x.Taint.ToString())
		switch {
		case x.Toleration == nil:
			b.WriteString(" is not tolerated")
		case x.Toleration.TolerationSeconds == nil:
			b.WriteString(" tolerated forever by " + tolerationString(x.Toleration))
		default:
			b.WriteString(" tolerated for " + strconv.FormatInt(*x.Toleration.TolerationSeconds, 10) + "s by " + tolerationString(x.Toleration))
			if !x.Start.IsZero() {
				b.WriteString(" from " + stamp(x.Start))
			}
		}
	}
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// tolerationString formats a toleration as "Operator key[=value]:effect",
// with "*" for an empty key or effect.
func tolerationString(t *v1.Toleration) string {
	op := string(t.Operator)
	if op == "" {
		op = string(v1.TolerationOpEqual)
	}
	key, effect := t.Key, string(t.Effect)
	if key == "" {
		key = "*"
	}
	if effect == "" {
		effect = "*"
	}
	s := op + " " + key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + effect
}
