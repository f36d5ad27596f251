package sim

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// The kubelet's answer to the controller's writes (Kubelet.Reconcile), as
// the kubelet behaves at v1.37.2:
//
//   - Its node status loop runs every nodeStatusUpdateFrequency (10s;
//     wait.JitterUntil with a jitter factor of 0.04, sliding, started when
//     the kubelet starts: Kubelet.Run in pkg/kubelet/kubelet.go). Each run
//     (syncNodeStatus, tryUpdateNodeStatus in
//     pkg/kubelet/kubelet_node_status.go) reads the Node from its informer,
//     computes the status the setters give (Ready=True for a working
//     kubelet: nodestatus.ReadyCondition) and patches it when it differs
//     from what it read (nodeStatusHasChanged) or nodeStatusReportFrequency
//     (5m) has passed. The controller's Ready=Unknown differs, so the
//     kubelet posts Ready=True, with a new heartbeat, at its next run.
//   - Its status manager syncs every syncPeriod (10s, a time.Ticker started
//     with it: manager.Start in pkg/kubelet/status/status_manager.go). Each
//     sync (syncBatch) writes back every pod whose status in the API
//     differs from its own in a field the kubelet owns (needsReconcile); a
//     pod's Ready condition is one. A status-only change of a pod does not
//     make the kubelet sync it at once (config.checkAndUpdatePod calls it a
//     reconcile; HandlePodReconcile resyncs only pods with readiness
//     gates, whose status would come out the same), so the controller's
//     Ready=False is put back at the status manager's next sync.
//
// The simulator plans a reaction when the controller writes over a running
// kubelet's status (its Ready=Unknown; its pods' Ready=False) and runs it
// at the kubelet's next tick after the write, counted from the kubelet's (re)start: at most one period later.
// Unlike upstream, without jitter (the node status loop's 4% is left out, so
// a reaction is at most one period late where upstream's may be 4% later),
// and the kubelet's 5-minute reports (StatusUpdateInterval) keep their
// schedule after a reaction (upstream moves the next one to the reaction
// plus the report frequency ± a random half of it: calculateDelay).
//
// A kubelet reporting Ready=False leaves its pods as they are (the
// simulator does not model their readiness), and one that has just resumed
// puts its pods back Ready first PodReadyDelay after it started (beatPods).
// Pods a kubelet puts back Ready while the controller still sees their node
// not ready stay Ready: the controller acts on a pod update only when the
// pod's node is set or changes (upstream's podUpdated queues nothing for a
// status update; monitortest forwards none), so it does not mark them again.

// nextSync returns the first tick after t of a loop that started at start
// and ticks every every.
func nextSync(start, every, t time.Duration) time.Duration {
	if t < start {
		return start
	}
	return start + ((t-start)/every+1)*every
}

// written follows the Monitor's write of kind about node i: the API's Ready
// status and pods (downtime.go) and, with Reconcile, the kubelet's
// reaction to it.
func (s *sim) written(i int, kind monitor.Kind) {
	switch kind {
	case monitor.KindNodeUnknown:
		s.nodeAPI(i, v1.ConditionUnknown)
		s.planNodeSync(i)
	case monitor.KindPodsNotReady:
		marked := s.markedDelta()
		s.downs[s.nodes[i].zone].marked += marked
		s.podsAPI(i, s.down[i].pods+marked)
		s.planPodSync(i)
	case monitor.KindPodEvicted:
		if d := &s.down[i]; d.pods > 0 {
			s.podsAPI(i, d.pods-1)
		}
	}
}

// planNodeSync plans kubelet i's next node status update, when it runs and
// reconciles.
func (s *sim) planNodeSync(i int) {
	k := &s.kubelets[i]
	if !s.sc.Kubelet.Reconcile || !k.alive || k.nodeSync {
		return
	}
	k.nodeSync = true
	s.cal.add(nextSync(k.start, s.sc.Kubelet.NodeStatusUpdateFrequency.D(), s.t), calEntry{node: int32(i), what: beatNodeSync, gen: k.gen})
}

// planPodSync plans kubelet i's next pod status sync, when it runs,
// reconciles, reports Ready and has its pods Ready (before, its restart's
// beatPods puts them back).
func (s *sim) planPodSync(i int) {
	k := &s.kubelets[i]
	if !s.sc.Kubelet.Reconcile || !k.alive || k.podSync || k.ready != v1.ConditionTrue || s.t < k.podsReadyAt {
		return
	}
	k.podSync = true
	s.cal.add(nextSync(k.start, s.sc.Kubelet.PodStatusSyncPeriod.D(), s.t), calEntry{node: int32(i), what: beatPodSync, gen: k.gen})
}

// nodeSync is kubelet i's node status update: it posts its status when the
// node's Ready condition in the API differs from it.
func (s *sim) nodeSync(i int) {
	k := &s.kubelets[i]
	k.nodeSync = false
	n := s.nodes[i]
	node := s.c.GetNode(n.name)
	if node == nil {
		return
	}
	api := v1.ConditionUnknown
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			api = c.Status
		}
	}
	if api == k.ready {
		return
	}
	s.entries = append(s.entries, Entry{At: s.t, Kind: KindKubeletReposted, Node: n.name, Zone: s.sc.Zones[n.zone].Name,
		Detail: fmt.Sprintf("kubelet found Ready=%s in the API and posted Ready=%s (node status update every %v)", api, k.ready, s.sc.Kubelet.NodeStatusUpdateFrequency.D())})
	s.post(i, k.ready)
}

// podSync is kubelet i's pod status sync: it puts back Ready on the pods
// the controller marked not ready.
func (s *sim) podSync(i int) error {
	k := &s.kubelets[i]
	k.podSync = false
	if k.ready != v1.ConditionTrue || s.t < k.podsReadyAt {
		return nil
	}
	n := s.nodes[i]
	at := len(s.entries) // the entry goes before what the write sets off
	if restored := s.podsReady(i); restored > 0 {
		detail := fmt.Sprintf("kubelet put Ready=True back on %s (pod status sync every %v)", plural(restored, "pod", "pods"), s.sc.Kubelet.PodStatusSyncPeriod.D())
		s.entries = slices.Insert(s.entries, at, Entry{At: s.t, Kind: KindKubeletPodsReady, Node: n.name, Zone: s.sc.Zones[n.zone].Name, Detail: detail})
	}
	return s.spend(s.podsPerNode[n.zone])
}

// post is kubelet i posting Ready=ready now.
func (s *sim) post(i int, ready v1.ConditionStatus) {
	s.c.PostNodeStatus(s.ctx, s.nodes[i].name, ready, s.now())
	s.nodeAPI(i, ready)
}

// podsReady is kubelet i setting its pods Ready now. It returns how many
// pods it made Ready. The Monitor does not mark them not ready again, even
// when it still sees the node not ready: a pod status update reaches no
// Monitor (upstream's podUpdated acts only on a pod whose node is set or
// changes).
func (s *sim) podsReady(i int) (restored int) {
	restored = s.c.SetPodsReady(s.ctx, s.nodes[i].name, s.now())
	s.podsAPI(i, max(s.down[i].pods-restored, 0))
	return restored
}

// markedDelta returns how many pods were marked not ready since it was
// last called.
func (s *sim) markedDelta() int {
	c := s.c.Counts()
	n := c.PodsMarkedNotReady - s.counts.PodsMarkedNotReady
	s.counts = c
	return n
}
