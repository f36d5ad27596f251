package taints

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// AddOrUpdate returns a copy of node carrying t, and true, or node itself and
// false when nothing changes. Identity is v1.Taint.MatchTaint (key and
// effect): a node taint with the same identity and the same value and
// TimeAdded is left alone (no change); with a different value or TimeAdded
// it is replaced in place; otherwise t is appended. The input node is never
// modified; the copy is a deep copy and owns its TimeAdded.
//
// A NoExecute taint with no TimeAdded gets TimeAdded = now, except when the
// node already carries the same taint (same key, effect and value) with a
// TimeAdded, which is kept: re-asserting a taint is not re-adding it, so the
// eviction countdowns that start at TimeAdded do not restart. Unlike
// upstream AddOrUpdateTaintOnNode, which refreshes TimeAdded whenever the
// caller's differs. Pass an explicit TimeAdded to force a refresh. Other
// effects keep TimeAdded as given.
//
// Bad input: a nil node gives (nil, false). When the node has several
// taints with t's identity (invalid, but possible in a cached object), the
// first is replaced by t and the others are dropped, and that counts as a
// change.
func AddOrUpdate(node *v1.Node, t v1.Taint, now time.Time) (*v1.Node, bool) {
	if node == nil {
		return nil, false
	}
	taints, changed := withTaint(node.Spec.Taints, t, now)
	if !changed {
		return node, false
	}
	out := node.DeepCopy()
	out.Spec.Taints = taints
	return out, true
}

// Remove returns a copy of node without any taint matching t
// (v1.Taint.MatchTaint: same key and effect, value ignored) and true, or
// node itself and false when it has no such taint. Duplicates are all
// removed. The input node is never modified. A nil node gives (nil, false).
func Remove(node *v1.Node, t v1.Taint) (*v1.Node, bool) {
	if node == nil {
		return nil, false
	}
	taints, changed := withoutTaint(node.Spec.Taints, &t)
	if !changed {
		return node, false
	}
	out := node.DeepCopy()
	out.Spec.Taints = taints
	return out, true
}

// SwapHealthTaint applies a NoExecuteSwap (or a NoExecuteQueue the zone
// queue let through): it returns a copy of node carrying t, added as by
// AddOrUpdate, and without the other NoExecute health taint (not-ready ↔
// unreachable), as upstream SwapNodeControllerTaint. t is normally the
// taint DecideNoExecute returned; any other taint is only added. The result
// is node itself and false when nothing changes; a nil node gives (nil,
// false).
func SwapHealthTaint(node *v1.Node, t v1.Taint, now time.Time) (*v1.Node, bool) {
	if node == nil {
		return nil, false
	}
	taints, added := withTaint(node.Spec.Taints, t, now)
	removed := false
	if t.Effect == v1.TaintEffectNoExecute {
		var other v1.Taint
		switch t.Key {
		case v1.TaintNodeNotReady:
			other = UnreachableTaint()
		case v1.TaintNodeUnreachable:
			other = NotReadyTaint()
		}
		if other.Key != "" {
			taints, removed = withoutTaint(taints, &other)
		}
	}
	if !added && !removed {
		return node, false
	}
	out := node.DeepCopy()
	out.Spec.Taints = taints
	return out, true
}

// RemoveHealthTaints applies a NoExecuteRemove: it returns a copy of node
// without node.kubernetes.io/unreachable:NoExecute and
// node.kubernetes.io/not-ready:NoExecute, or node itself and false when it
// carries neither (upstream makes no API call then). A nil node gives (nil,
// false).
func RemoveHealthTaints(node *v1.Node) (*v1.Node, bool) {
	if node == nil {
		return nil, false
	}
	unreachable, notReady := UnreachableTaint(), NotReadyTaint()
	taints, r1 := withoutTaint(node.Spec.Taints, &unreachable)
	taints, r2 := withoutTaint(taints, &notReady)
	if !r1 && !r2 {
		return node, false
	}
	out := node.DeepCopy()
	out.Spec.Taints = taints
	return out, true
}

// withTaint returns taints with t added or updated (see AddOrUpdate), as a
// new slice when changed; taints itself is never modified.
func withTaint(taints []v1.Taint, t v1.Taint, now time.Time) ([]v1.Taint, bool) {
	first, dups := -1, 0
	for i := range taints {
		if t.MatchTaint(&taints[i]) {
			if first < 0 {
				first = i
			} else {
				dups++
			}
		}
	}
	// The effective TimeAdded, decided without allocating so that the
	// common no-change case costs nothing.
	var ta time.Time
	hasTA := t.TimeAdded != nil
	if hasTA {
		ta = t.TimeAdded.Time
	} else if t.Effect == v1.TaintEffectNoExecute {
		hasTA = true
		ta = now
		if first >= 0 && taints[first].Value == t.Value && taints[first].TimeAdded != nil {
			ta = taints[first].TimeAdded.Time
		}
	}
	if first >= 0 && dups == 0 {
		cur := &taints[first]
		if cur.Key == t.Key && cur.Value == t.Value && cur.Effect == t.Effect && (cur.TimeAdded != nil) == hasTA &&
			(!hasTA || cur.TimeAdded.Time.Equal(ta)) {
			return taints, false
		}
	}
	t.TimeAdded = nil
	if hasTA {
		t.TimeAdded = metaTime(ta)
	}
	out := make([]v1.Taint, 0, len(taints)+1-dups)
	for i := range taints {
		switch {
		case i == first:
			out = append(out, t)
		case first >= 0 && t.MatchTaint(&taints[i]):
			// a duplicate of t's identity: dropped
		default:
			out = append(out, copyTaint(taints[i]))
		}
	}
	if first < 0 {
		out = append(out, t)
	}
	return out, true
}

// withoutTaint returns taints without the ones matching t, as a new slice
// when changed; taints itself is never modified.
func withoutTaint(taints []v1.Taint, t *v1.Taint) ([]v1.Taint, bool) {
	n := 0
	for i := range taints {
		if t.MatchTaint(&taints[i]) {
			n++
		}
	}
	if n == 0 {
		return taints, false
	}
	out := make([]v1.Taint, 0, len(taints)-n)
	for i := range taints {
		if !t.MatchTaint(&taints[i]) {
			out = append(out, copyTaint(taints[i]))
		}
	}
	return out, true
}

// sameTaint reports whether a and b have the same key, value, effect and
// TimeAdded (both unset, or equal instants).
func sameTaint(a, b *v1.Taint) bool {
	if a.Key != b.Key || a.Value != b.Value || a.Effect != b.Effect {
		return false
	}
	if a.TimeAdded == nil || b.TimeAdded == nil {
		return a.TimeAdded == nil && b.TimeAdded == nil
	}
	return a.TimeAdded.Time.Equal(b.TimeAdded.Time)
}
