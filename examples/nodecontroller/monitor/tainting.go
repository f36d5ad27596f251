package monitor

import (
	"context"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// taintDecide is upstream processTaintBaseEviction, fed the Ready condition
// after this pass's update (1.34+).
// A node to queue is staged in r and reaches the queue with the pass's zone
// decision.
func (m *Monitor) taintDecide(ctx context.Context, now time.Time, node *v1.Node, zone string, ready *v1.NodeCondition, r *nodeResult) {
	action, t := taints.DecideNoExecute(ready, node.Spec.Taints)
	q := m.queue(now, zone)
	switch action {
	case taints.NoExecuteQueue:
		switch q.State(node.Name) {
		case evictionqueue.KeyAbsent:
			r.enqueue = true
		case evictionqueue.KeyDone:
			// Done but untainted: the taint was removed by hand, or the
			// tainting pass read a cache that did not show the new
			// condition yet. Queue it again, as upstream does.
			if !hasTaint(node.Spec.Taints, t) {
				r.enqueue, r.requeue = true, true
			}
		}
		// A node already waiting keeps its place. Unlike upstream, which
		// removes and re-adds it on every pass and so reshuffles the order
		// of every waiting node every 5s.
	case taints.NoExecuteSwap:
		_, _ = m.writeTaints(ctx, now, node.Name, func(n *v1.Node) (*v1.Node, bool) {
			return taints.SwapHealthTaint(n, t, now)
		})
	case taints.NoExecuteRemove:
		if hasHealthTaint(node.Spec.Taints) {
			_, _ = m.writeTaints(ctx, now, node.Name, taints.RemoveHealthTaints)
		}
		q.Remove(node.Name)
	}
}

// TaintPass is upstream doNoExecuteTaintingPass: every zone queue lets the
// nodes its rate allows through, and each is tainted according to its
// Ready condition as cached now. In legacy mode it deletes the pods of the
// nodes let through instead.
func (m *Monitor) TaintPass(ctx context.Context, now time.Time) {
	m.taintMu.Lock()
	defer m.taintMu.Unlock()
	m.mu.Lock()
	zones := make([]string, 0, len(m.queues))
	for k := range m.queues {
		zones = append(zones, k)
	}
	m.mu.Unlock()
	slices.Sort(zones)
	for _, zone := range zones {
		q := m.queue(now, zone)
		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			if m.legacy() {
				return m.legacyEvict(ctx, now, it)
			}
			return m.taintNode(ctx, now, it)
		})
	}
}

// taintNode decides at processing time, from the cached node (upstream's
// table in spec b.2).
func (m *Monitor) taintNode(ctx context.Context, now time.Time, it evictionqueue.Item[string]) (bool, time.Duration) {
	node := m.cluster.GetNode(it.Key)
	if node == nil || (it.UID != "" && node.UID != it.UID) {
		return true, 0 // gone, or re-created under the same name
	}
	ready := readyCondition(node)
	if ready == nil {
		return false, m.cfg.TaintRetry
	}
	var t v1.Taint
	switch ready.Status {
	case v1.ConditionFalse:
		t = taints.NotReadyTaint()
	case v1.ConditionUnknown:
		t = taints.UnreachableTaint()
	default:
		return true, 0 // healthy again: nothing to taint
	}
	if _, err := m.writeTaints(ctx, now, it.Key, func(n *v1.Node) (*v1.Node, bool) {
		return taints.SwapHealthTaint(n, t, now)
	}); err != nil && !apierrors.IsNotFound(err) {
		return false, m.cfg.WriteRetry
	}
	return true, 0
}

// NodeChanged forwards a node add or update: the Evictor learns the node's
// NoExecute taints, and the NoSchedule taints that mirror its conditions are
// reconciled (upstream doNodeProcessingPassWorker).
func (m *Monitor) NodeChanged(ctx context.Context, now time.Time, node *v1.Node) {
	if node == nil {
		return
	}
	if !m.legacy() {
		m.evictor.SetNodeTaints(now, node.Name, node.Spec.Taints)
	}
	if add, remove := taints.ForConditions(node, now); len(add)+len(remove) > 0 {
		_, _ = m.writeTaints(ctx, now, node.Name, func(n *v1.Node) (*v1.Node, bool) {
			add, remove := taints.ForConditions(n, now) // again, on the node as read for the write
			out, changed := n, false
			for _, t := range remove {
				var c bool
				out, c = taints.Remove(out, t)
				changed = changed || c
			}
			for _, t := range add {
				var c bool
				out, c = taints.AddOrUpdate(out, t, now)
				changed = changed || c
			}
			return out, changed
		})
	}
}

// writeTaints applies mutate through the Cluster, reports the taints it added
// and removed, and feeds the written node to the Evictor at once (it would
// also come back through NodeChanged).
func (m *Monitor) writeTaints(ctx context.Context, now time.Time, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	var added, removed []v1.Taint
	written, err := m.cluster.UpdateNodeTaints(ctx, name, func(n *v1.Node) (*v1.Node, bool) {
		out, changed := mutate(n)
		added, removed = nil, nil
		if changed {
			added, removed = diffTaints(n.Spec.Taints, out.Spec.Taints)
		}
		return out, changed
	})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			m.emit(now, KindWriteFailed, name, "", "node taints: "+err.Error())
		}
		return nil, err
	}
	zone := m.zoneOf(name)
	if zone == "" && written != nil {
		zone = zonestate.Key(written) // before the node's first monitor pass
	}
	for _, t := range added {
		m.emitFn(Event{At: now, Kind: KindTaintAdded, Node: name, Zone: zone, Taint: t, Detail: taintString(t)})
	}
	for _, t := range removed {
		m.emitFn(Event{At: now, Kind: KindTaintRemoved, Node: name, Zone: zone, Taint: t, Detail: taintString(t)})
	}
	if !m.legacy() && written != nil {
		m.evictor.SetNodeTaints(now, name, written.Spec.Taints)
	}
	return written, nil
}

func readyCondition(node *v1.Node) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(ts []v1.Taint, t v1.Taint) bool {
	return slices.ContainsFunc(ts, func(x v1.Taint) bool { return x.MatchTaint(&t) })
}

func hasHealthTaint(ts []v1.Taint) bool {
	return hasTaint(ts, taints.NotReadyTaint()) || hasTaint(ts, taints.UnreachableTaint())
}

// diffTaints returns the taints of after not in before, and of before not in
// after, by key and effect.
func diffTaints(before, after []v1.Taint) (added, removed []v1.Taint) {
	for _, t := range after {
		if !hasTaint(before, t) {
			added = append(added, t)
		}
	}
	for _, t := range before {
		if !hasTaint(after, t) {
			removed = append(removed, t)
		}
	}
	return added, removed
}

func taintString(t v1.Taint) string {
	var b strings.Builder
	b.WriteString(t.Key)
	if t.Value != "" {
		b.WriteString("=" + t.Value)
	}
	b.WriteString(":" + string(t.Effect))
	return b.String()
}
