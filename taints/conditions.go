package taints

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ForConditions computes the "taint nodes by condition" NoSchedule taints
// for node (upstream pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// doNoScheduleTaintingPass): Ready False →
// node.kubernetes.io/not-ready, Ready Unknown → unreachable, MemoryPressure,
// DiskPressure, PIDPressure and NetworkUnavailable True → the matching key,
// spec.unschedulable → unschedulable, all with effect NoSchedule.
// ConditionTaints.For does the same with a caller-given table.
//
// Only NoSchedule taints with one of those seven keys count as current; the
// diff is by key and effect (values and TimeAdded are ignored). add lists the
// missing taints, each with TimeAdded = now; remove lists the current taints
// that are no longer wanted, as copies of the node's entries. Foreign taints,
// NoExecute taints and PreferNoSchedule taints with the same keys are never
// in either list. Apply both with AddOrUpdate and Remove (upstream does it in
// one SwapNodeControllerTaint call). Both lists are in the order of the table
// above; both are nil when the node is up to date, and then nothing is
// allocated.
//
// Bad input: a nil node gives (nil, nil). A missing Ready condition gives no
// Ready-derived taint (and removes a stale one). When a condition type
// appears more than once, the first one counts, as in GetNodeCondition and
// nodehealth; unlike upstream's taint pass, which derives a taint from every
// copy (a Ready False followed by a Ready Unknown would get both not-ready and
// unreachable).
// Duplicate taints with the same key and effect count once; remove holds the
// first of them, and Remove drops every duplicate.
func ForConditions(node *v1.Node, now time.Time) (add, remove []v1.Taint) {
	return upstreamConditionTaints.For(node, now)
}

// upstreamConditionTaints is ForConditions' table: DefaultConditionTaints
// plus spec.unschedulable. It is built once and never modified.
var upstreamConditionTaints = func() *ConditionTaints {
	c, err := NewConditionTaints(DefaultConditionTaints())
	if err != nil {
		panic(err) // unreachable: the default table is valid (tested)
	}
	c.unschedulable = c.addTaint(v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	return c
}()

// metaTime returns a fresh *metav1.Time holding t.
func metaTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

// copyTaint returns t with its own copy of TimeAdded.
func copyTaint(t v1.Taint) v1.Taint {
	if t.TimeAdded != nil {
		t.TimeAdded = metaTime(t.TimeAdded.Time)
	}
	return t
}

// NoExecuteAction is what DecideNoExecute tells the caller to do with a
// node's NoExecute health taints (node.kubernetes.io/not-ready:NoExecute and
// node.kubernetes.io/unreachable:NoExecute). The zero value is NoExecuteNone.
type NoExecuteAction uint8

const (
	// NoExecuteNone: nothing to do (no Ready condition, or an unknown status).
	NoExecuteNone NoExecuteAction = iota
	// NoExecuteQueue: put the node in its zone's rate-limited tainting queue;
	// when the queue lets it through, apply the returned taint with
	// SwapHealthTaint (deciding again from the node as it is then). As
	// upstream markNodeForTainting, a caller whose node lacks the taint first
	// removes the node from the queue so a stale "done" entry does not swallow
	// the add.
	NoExecuteQueue
	// NoExecuteSwap: apply the returned taint now with SwapHealthTaint (add it,
	// remove the other health taint), without waiting for the rate limiter.
	NoExecuteSwap
	// NoExecuteRemove: the node is Ready: remove both health taints
	// (RemoveHealthTaints) and take the node out of its tainting queue.
	NoExecuteRemove
)

// String returns the action's name.
func (a NoExecuteAction) String() string {
	switch a {
	case NoExecuteNone:
		return "None"
	case NoExecuteQueue:
		return "Queue"
	case NoExecuteSwap:
		return "Swap"
	case NoExecuteRemove:
		return "Remove"
	}
	return "NoExecuteAction(" + strconv.Itoa(int(a)) + ")"
}

// NotReadyTaint returns the node.kubernetes.io/not-ready:NoExecute taint
// (TimeAdded unset; AddOrUpdate and SwapHealthTaint set it).
func NotReadyTaint() v1.Taint {
	return v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
}

// UnreachableTaint returns the node.kubernetes.io/unreachable:NoExecute taint
// (TimeAdded unset; AddOrUpdate and SwapHealthTaint set it).
func UnreachableTaint() v1.Taint {
	return v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
}

// DecideNoExecute decides, for one node in one monitor pass, what to do with
// its NoExecute health taints (upstream
// pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// processTaintBaseEviction),
// from the node's Ready condition and its current taints:
//
//	Ready    node already has          action            taint returned
//	False    unreachable:NoExecute     NoExecuteSwap     not-ready:NoExecute
//	False    otherwise                 NoExecuteQueue    not-ready:NoExecute
//	Unknown  not-ready:NoExecute       NoExecuteSwap     unreachable:NoExecute
//	Unknown  otherwise                 NoExecuteQueue    unreachable:NoExecute
//	True     -                         NoExecuteRemove   zero Taint
//	nil      -                         NoExecuteNone     zero Taint
//
// Since Kubernetes 1.34 (#120816) the decision uses the Ready condition as it
// is after this pass's health update: pass nodehealth's Result.CurrentReady,
// not the condition observed before the update, so a node turned Unknown in
// this pass is queued for tainting in the same pass. Any other status (or a
// condition whose Type is set and is not Ready) gives NoExecuteNone. The
// returned taint has no TimeAdded: SwapHealthTaint sets it when it adds the
// taint. DecideNoExecute does not allocate.
func DecideNoExecute(ready *v1.NodeCondition, current []v1.Taint) (NoExecuteAction, v1.Taint) {
	if ready == nil || (ready.Type != "" && ready.Type != v1.NodeReady) {
		return NoExecuteNone, v1.Taint{}
	}
	switch ready.Status {
	case v1.ConditionFalse:
		other := UnreachableTaint()
		if hasTaint(current, &other) {
			return NoExecuteSwap, NotReadyTaint()
		}
		return NoExecuteQueue, NotReadyTaint()
	case v1.ConditionUnknown:
		other := NotReadyTaint()
		if hasTaint(current, &other) {
			return NoExecuteSwap, UnreachableTaint()
		}
		return NoExecuteQueue, UnreachableTaint()
	case v1.ConditionTrue:
		return NoExecuteRemove, v1.Taint{}
	}
	return NoExecuteNone, v1.Taint{}
}

// hasTaint reports whether taints holds a taint matching t (v1.Taint.MatchTaint).
func hasTaint(taints []v1.Taint, t *v1.Taint) bool {
	for i := range taints {
		if t.MatchTaint(&taints[i]) {
			return true
		}
	}
	return false
}
