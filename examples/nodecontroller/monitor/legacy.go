package monitor

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// legacyStatus is upstream's per-node eviction status of the pre-1.27
// pod eviction mode (nodeEvictionMap).
type legacyStatus uint8

const (
	legacyUnmarked legacyStatus = iota
	legacyToBeEvicted
	legacyEvicted
)

// legacyMode is the pod eviction mode removed in Kubernetes 1.27
// (--enable-taint-manager=false with --pod-eviction-timeout): no NoExecute
// taints and no Evictor; MonitorPass queues a node that has been not ready
// for the timeout in its zone, and TaintPass deletes its pods at the zone's
// rate. Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go
// at v1.26, processNoTaintBaseEviction, evictPods, doEvictionPass and
// cancelPodEviction.
type legacyMode struct{ m *Monitor }

func (legacyMode) feedsEvictor() bool { return false }

// decide is upstream processNoTaintBaseEviction (v1.26): a node whose
// Ready has been False for PodEvictionTimeout since its transition, or
// Unknown for PodEvictionTimeout since its last heartbeat, has its pods
// queued for deletion; a Ready node's pending eviction is cancelled. As in
// those releases, the decision uses the Ready condition observed before this
// pass's update.
func (l legacyMode) decide(ctx context.Context, now time.Time, node *v1.Node, s *nodeState, res nodehealth.Result, r *nodeResult) {
	timeout := l.m.cfg.PodEvictionTimeout
	switch res.ObservedReady.Status {
	case v1.ConditionFalse:
		if now.After(res.ReadyTransition.Add(timeout)) {
			l.evictPods(ctx, now, node, s, r)
		}
	case v1.ConditionUnknown:
		probe := res.Deadline.Add(-res.GracePeriod)
		if now.After(probe.Add(timeout)) {
			l.evictPods(ctx, now, node, s, r)
		}
	case v1.ConditionTrue:
		l.cancel(node.Name)
	}
}

// evictPods is upstream evictPods: a node already evicted has its new pods
// deleted at once; otherwise it is staged in r for its zone queue.
func (l legacyMode) evictPods(ctx context.Context, now time.Time, node *v1.Node, s *nodeState, r *nodeResult) {
	m := l.m
	m.mu.Lock()
	status := s.legacy
	if status == legacyUnmarked {
		s.legacy = legacyToBeEvicted
	}
	m.mu.Unlock()
	switch status {
	case legacyEvicted:
		_, _ = m.deletePods(ctx, now, node.Name)
	case legacyUnmarked:
		r.enqueue = true
	}
}

func (l legacyMode) queued(now time.Time, node *v1.Node) {
	l.m.emit(now, KindNodeEvicting, node.Name, "", fmt.Sprintf("not ready for longer than pod-eviction-timeout %v: pods queued for deletion", l.m.cfg.PodEvictionTimeout))
}

// admit is the zone pod evictor's callback (upstream doEvictionPass).
func (l legacyMode) admit(ctx context.Context, now time.Time, it evictionqueue.Item[string]) (bool, time.Duration) {
	m := l.m
	if node := m.cluster.GetNode(it.Key); node == nil || (it.UID != "" && node.UID != it.UID) {
		return true, 0
	}
	if _, err := m.deletePods(ctx, now, it.Key); err != nil {
		return false, m.cfg.WriteRetry
	}
	m.mu.Lock()
	if s, ok := m.nodes[it.Key]; ok {
		s.legacy = legacyEvicted
	}
	m.mu.Unlock()
	return true, 0
}

// reachable is upstream cancelPodEviction on entering full disruption.
func (l legacyMode) reachable(_ context.Context, _ time.Time, node string) {
	l.cancel(node)
}

// cancel is upstream cancelPodEviction.
func (l legacyMode) cancel(name string) {
	m := l.m
	m.mu.Lock()
	s, ok := m.nodes[name]
	cancel := ok && s.legacy != legacyUnmarked
	var zone string
	if cancel {
		s.legacy = legacyUnmarked
		zone = s.zone.key
	}
	m.mu.Unlock()
	if !cancel {
		return
	}
	if q, ok := m.queue(zone); ok {
		q.Remove(name)
	}
}

// Upstream's reason and message for a pod deleted because its node was lost
// (pkg/util/node: NodeUnreachablePodReason, NodeUnreachablePodMessage).
const (
	nodeLostReason  = "NodeLost"
	nodeLostMessage = "Node %v which was running pod %v is unresponsive"
)

// deletePods is upstream DeletePods (pkg/controller/util/node/controller_utils.go):
// every pod on the node first gets status reason NodeLost with upstream's
// message (SetPodTerminationReason; a conflict skips the pod and fails the
// call, so it is retried), then every pod that is not already terminating
// and not a DaemonSet pod is deleted.
func (m *Monitor) deletePods(ctx context.Context, now time.Time, node string) (int, error) {
	var firstErr error
	deleted := 0
	for _, pod := range m.cluster.ListPodsOnNode(node) {
		if pod.Spec.NodeName != node {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if pod.Status.Reason != nodeLostReason {
			st := pod.Status.DeepCopy()
			st.Reason = nodeLostReason
			st.Message = fmt.Sprintf(nodeLostMessage, node, pod.Name)
			err := m.cluster.UpdatePodStatus(ctx, pod, st)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case apierrors.IsConflict(err):
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			// Upstream deletes the pod after any other failure.
		}
		if pod.DeletionTimestamp != nil || isDaemonSetPod(pod) {
			continue
		}
		if err := m.cluster.EvictPod(ctx, key, pod.UID, nil); err != nil && !apierrors.IsNotFound(err) {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		deleted++
		m.emit(now, KindPodEvicted, node, key.String(), "legacy node eviction")
	}
	return deleted, firstErr
}

func isDaemonSetPod(pod *v1.Pod) bool {
	c := metav1.GetControllerOf(pod)
	return c != nil && c.Kind == "DaemonSet"
}
