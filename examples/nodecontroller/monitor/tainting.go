package monitor

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
)

// taintMode is the taint-based eviction mode of every release since 1.27:
// MonitorPass queues an unhealthy node in its zone, TaintPass taints it
// NoExecute at the zone's rate, and the Evictor (EvictionPass) deletes the
// pods that do not tolerate the taint long enough. Upstream:
// pkg/controller/nodelifecycle/node_lifecycle_controller.go at v1.37.2,
// processTaintBaseEviction, doNoExecuteTaintingPass and markNodeAsReachable,
// and pkg/controller/tainteviction.
type taintMode struct{ m *Monitor }

func (taintMode) feedsEvictor() bool { return true }

// decide is upstream processTaintBaseEviction, fed the Ready condition after
// this pass's update (1.34+, kubernetes/kubernetes#120816).
func (t taintMode) decide(ctx context.Context, now time.Time, node *v1.Node, s *nodeState, res nodehealth.Result, r *nodeResult) {
	m := t.m
	var current []v1.Taint // node.Spec.Taints, read only when the node has some
	if s.tainted {
		current = node.Spec.Taints
	}
	wrote := false
	if m.evictPaused.Load() && hasHealthTaint(current) {
		// Left by a failed full-disruption cleanup (upstream tries
		// markNodeAsReachable once, on entering): removed again, so that
		// no pod is evicted while the cluster is in full disruption.
		_, _ = m.writeTaints(ctx, now, node.Name, taints.RemoveHealthTaints)
		wrote = true
	}
	action, taint := taints.DecideNoExecute(res.CurrentReady, current)
	switch action {
	case taints.NoExecuteNone:
		r.settled = !wrote
	case taints.NoExecuteQueue:
		state := evictionqueue.KeyAbsent
		if q, ok := m.queue(s.zone.key); ok {
			state = q.State(node.Name)
		}
		switch state {
		case evictionqueue.KeyAbsent:
			r.enqueue = true
		case evictionqueue.KeyDone:
			// Done but untainted: the taint was removed by hand, or the
			// tainting pass read a cache that did not show the new
			// condition yet. Queue it again, as upstream does.
			if !hasTaint(current, taint) {
				r.enqueue, r.requeue = true, true
			} else {
				r.settled = !wrote
			}
		default: // waiting: it leaves the queue only as the node changes (tainted, deleted, re-created)
			r.settled = !wrote
		}
		// A node already waiting keeps its place. Unlike upstream, which
		// removes and re-adds it on every pass and so reshuffles the order
		// of every waiting node every 5s.
	case taints.NoExecuteSwap:
		// Decided again on the node as read for the write: only a node that
		// still has a health taint has it swapped. Unlike upstream
		// (SwapNodeControllerTaint adds the new taint whatever the node
		// holds), a list that lags the full-disruption cleanup cannot taint
		// a node again while evictions are stopped; a node whose taint went
		// otherwise is queued again by the next pass.
		_, _ = m.writeTaints(ctx, now, node.Name, func(n *v1.Node) (*v1.Node, bool) {
			if !hasHealthTaint(n.Spec.Taints) {
				return n, false
			}
			return taints.SwapHealthTaint(n, taint, now)
		})
	case taints.NoExecuteRemove:
		r.settled = !wrote && !hasHealthTaint(current) && !s.queued
		if hasHealthTaint(current) {
			_, _ = m.writeTaints(ctx, now, node.Name, taints.RemoveHealthTaints)
		}
		if s.queued {
			if q, ok := m.queue(s.zone.key); ok {
				q.Remove(node.Name)
			}
			s.queued = false
		}
	}
}

func (taintMode) queued(time.Time, *v1.Node) {}

// admit taints a node its zone queue let through, deciding at processing
// time from the cached node as upstream doNoExecuteTaintingPass does: the
// not-ready taint for Ready=False, the unreachable one for Unknown, nothing
// for a node that is Ready again, gone, or re-created under the same name.
func (t taintMode) admit(ctx context.Context, now time.Time, it evictionqueue.Item[string]) (bool, time.Duration) {
	m := t.m
	node := m.cluster.GetNode(it.Key)
	if node == nil || (it.UID != "" && node.UID != it.UID) {
		return true, 0
	}
	ready := readyCondition(node)
	if ready == nil {
		return false, m.cfg.TaintRetry
	}
	var taint v1.Taint
	switch ready.Status {
	case v1.ConditionFalse:
		taint = taints.NotReadyTaint()
	case v1.ConditionUnknown:
		taint = taints.UnreachableTaint()
	default:
		return true, 0
	}
	if _, err := m.writeTaints(ctx, now, it.Key, func(n *v1.Node) (*v1.Node, bool) {
		return taints.SwapHealthTaint(n, taint, now)
	}); err != nil && !apierrors.IsNotFound(err) {
		return false, m.cfg.WriteRetry
	}
	return true, 0
}

// reachable is upstream markNodeAsReachable on entering full disruption: the
// health taints go, decided on the node as read for the write (not on the
// pass's list, which misses taints added meanwhile).
func (t taintMode) reachable(ctx context.Context, now time.Time, node string) {
	_, _ = t.m.writeTaints(ctx, now, node, taints.RemoveHealthTaints)
}
