package monitor

import (
	"context"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// NodeChanged forwards a node add or update: the Evictor learns the node's
// NoExecute taints (taint-based mode), the NoSchedule taints that mirror
// its conditions are reconciled, then its beta OS and architecture labels
// when the Cluster is a NodeLabelWriter (upstream
// doNodeProcessingPassWorker).
func (m *Monitor) NodeChanged(ctx context.Context, now time.Time, node *v1.Node) {
	if node == nil {
		return
	}
	if m.mode.feedsEvictor() {
		m.evictor.SetNodeTaints(now, node.Name, node.Spec.Taints)
		m.reportCancelled(now)
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
	m.reconcileLabels(ctx, now, node)
}

// NodeDeleted forwards a node deletion: its health record, queue entry and
// Evictor state are dropped.
func (m *Monitor) NodeDeleted(name string) {
	m.evictor.DeleteNode(name)
	m.health.Forget(name)
	m.mu.Lock()
	m.deletes++
	var zone string
	s, ok := m.nodes[name]
	if ok {
		zone = s.zone.key
		s.deleted.Store(true)
		delete(m.nodes, name)
	}
	m.mu.Unlock()
	if ok {
		if q, qok := m.queue(zone); qok {
			q.Remove(name)
		}
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
	if m.mode.feedsEvictor() && written != nil {
		m.evictor.SetNodeTaints(now, name, written.Spec.Taints)
		m.reportCancelled(now)
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
