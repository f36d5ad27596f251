package monitor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// LabelExcludeDisruption keeps a node out of its zone's health count
// (upstream node.kubernetes.io/exclude-disruption, any value).
const LabelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// Monitor is the node lifecycle controller's decision loop, built from the
// library packages and independent of client-go.
//
// The caller runs MonitorPass every Config.MonitorPeriod and TaintPass and
// EvictionPass every Config.TaintPeriod, and forwards informer events to
// NodeChanged, NodeDeleted, PodChanged and PodDeleted. A Monitor is safe for
// concurrent use: passes of one kind are serialized, a TaintPass never runs
// while a MonitorPass applies its zone decision (one in flight could taint a
// node after the pass entered full disruption and cleaned it), and every
// other method may run while a pass is in progress. It never holds its state lock while it calls
// the Cluster or the event callback, so both may call back into the Monitor.
type Monitor struct {
	cfg     Config
	cluster Cluster
	emitFn  func(Event)

	health  *nodehealth.Tracker
	zones   *zonestate.Tracker
	evictor *taints.Evictor

	monitorMu sync.Mutex // one MonitorPass at a time
	taintMu   sync.Mutex // one TaintPass at a time
	evictMu   sync.Mutex // one EvictionPass at a time

	mu     sync.Mutex
	nodes  map[string]*nodeState
	queues map[string]*evictionqueue.Queue[string] // zone key → tainting (or, legacy, pod eviction) queue
}

// nodeState is what the Monitor remembers per node between passes.
type nodeState struct {
	zone   string
	ready  v1.ConditionStatus // Ready status after the last pass; "" before the first
	legacy legacyStatus
}

// New returns a Monitor for cluster. emit receives every Event; it may be nil,
// and must be safe for concurrent use when cfg.Workers > 1.
func New(cfg Config, cluster Cluster, emit func(Event)) (*Monitor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cluster == nil {
		return nil, fmt.Errorf("%w: nil Cluster", ErrInvalidConfig)
	}
	health, err := nodehealth.NewTracker(cfg.Health)
	if err != nil {
		return nil, err
	}
	zones, err := zonestate.NewTracker(cfg.Zones)
	if err != nil {
		return nil, err
	}
	evictor, err := taints.NewEvictor(cfg.Evictor)
	if err != nil {
		return nil, err
	}
	if emit == nil {
		emit = func(Event) {}
	}
	return &Monitor{
		cfg: cfg, cluster: cluster, emitFn: emit,
		health: health, zones: zones, evictor: evictor,
		nodes:  make(map[string]*nodeState),
		queues: make(map[string]*evictionqueue.Queue[string]),
	}, nil
}

// Config returns the Monitor's configuration.
func (m *Monitor) Config() Config { return m.cfg }

// Health returns the node health tracker, e.g. to Snapshot it before a
// restart and Restore it into the next Monitor.
func (m *Monitor) Health() *nodehealth.Tracker { return m.health }

// Explain says when and why the pod will be evicted, or why not.
func (m *Monitor) Explain(now time.Time, pod types.NamespacedName) taints.Explanation {
	return m.evictor.Explain(now, pod)
}

// legacy reports whether the pre-1.27 pod eviction mode is on.
func (m *Monitor) legacy() bool { return m.cfg.PodEvictionTimeout > 0 }

func (m *Monitor) emit(now time.Time, kind Kind, node, pod, detail string) {
	m.emitFn(Event{At: now, Kind: kind, Node: node, Pod: pod, Zone: m.zoneOf(node), Detail: detail})
}

func (m *Monitor) zoneOf(node string) string {
	if node == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.nodes[node]; ok {
		return s.zone
	}
	return ""
}

// queue returns the zone's queue, creating it at the normal rate (the zone's
// first decision sets its real rate). Queues are kept when a zone disappears
// for a pass, unlike upstream, which drops the queue and its limiter.
func (m *Monitor) queue(now time.Time, zone string) *evictionqueue.Queue[string] {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[zone]
	if !ok {
		q, _ = evictionqueue.New[string](now, evictionqueue.Config{QPS: m.cfg.Zones.EvictionQPS, Burst: 1})
		m.queues[zone] = q
	}
	return q
}

// nodeResult is what one node contributes to the zone decision of a pass,
// and the work the pass does for it after that decision.
type nodeResult struct {
	counted bool
	zone    string
	ready   *v1.NodeCondition

	// enqueue stages the node for its zone queue: the queue sees it only
	// when the pass commits its zone decision (requeue: forget a done
	// entry first).
	enqueue, requeue bool
	// markPods asks for the node's pods to be marked Ready=False after the
	// decision, outside the tainting exclusion.
	markPods bool
}

// MonitorPass is one run of upstream monitorNodeHealth: observe every node's
// health, write Unknown conditions, decide NoExecute taints (or, in legacy
// mode, pod eviction), decide every zone's state and rate and the
// full-disruption mode, and mark the pods of nodes that went Unknown
// Ready=False.
//
// Only the zone decision excludes TaintPass: nodes this pass queues reach
// their zone queue together with the decision, so a TaintPass running
// meanwhile works on the nodes queued by earlier passes and never sees one
// that the decision is about to clean (entering full disruption empties the
// queues and removes the health taints while no TaintPass runs). Pod marking
// (one write per pod, hours for a large outage behind a throttled client)
// comes after the decision and blocks no TaintPass or EvictionPass.
// Upstream (pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// monitorNodeHealth and doNoExecuteTaintingPass) taints concurrently too,
// but lets a tainting pass pick a node the current monitor pass queued before
// its handleDisruption ran.
func (m *Monitor) MonitorPass(ctx context.Context, now time.Time) {
	m.monitorMu.Lock()
	defer m.monitorMu.Unlock()

	nodes := slices.Clone(m.cluster.ListNodes())
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	m.forgetVanished(now, nodes)

	results := make([]nodeResult, len(nodes))
	m.forEach(len(nodes), func(i int) { results[i] = m.processNode(ctx, now, nodes[i]) })

	zones := make(map[string][]*v1.NodeCondition)
	for _, r := range results {
		if r.counted {
			zones[r.zone] = append(zones[r.zone], r.ready)
		}
	}
	m.decide(ctx, now, zones, nodes, results)

	m.forEach(len(nodes), func(i int) {
		if results[i].markPods && m.markPodsNotReady(ctx, now, nodes[i].Name) {
			// Before the node's next Observe (the next pass), so the ack
			// cannot clear a newer edge.
			m.health.AckPodsNotReady(nodes[i].Name)
		}
	})
}

// decide applies the zone decision and commits the queue additions staged by
// the pass, with no TaintPass running.
func (m *Monitor) decide(ctx context.Context, now time.Time, zones map[string][]*v1.NodeCondition, nodes []*v1.Node, results []nodeResult) {
	m.taintMu.Lock()
	defer m.taintMu.Unlock()
	d := m.zones.Update(zones)
	m.applyZoneDecision(ctx, now, d, nodes)
	if d.EnteredFullDisruption {
		return // the queues were emptied: nothing this pass queued survives
	}
	for i, r := range results {
		if r.enqueue {
			m.commitEnqueue(now, nodes[i], r)
		}
	}
}

// commitEnqueue adds a node staged by processNode to its zone queue, unless
// it was deleted meanwhile.
func (m *Monitor) commitEnqueue(now time.Time, node *v1.Node, r nodeResult) {
	m.mu.Lock()
	_, known := m.nodes[node.Name]
	q := m.queues[r.zone]
	m.mu.Unlock()
	if !known || q == nil {
		return
	}
	if r.requeue {
		q.Remove(node.Name)
	}
	if q.Add(now, node.Name, node.UID) && m.legacy() {
		m.emit(now, KindNodeEvicting, node.Name, "", fmt.Sprintf("not ready for longer than pod-eviction-timeout %v: pods queued for deletion", m.cfg.PodEvictionTimeout))
	}
}

// forEach runs fn(0..n-1) on cfg.Workers goroutines.
func (m *Monitor) forEach(n int, fn func(i int)) {
	workers := min(m.cfg.Workers, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// forgetVanished drops every known node that is no longer listed.
func (m *Monitor) forgetVanished(now time.Time, nodes []*v1.Node) {
	listed := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		listed[n.Name] = true
	}
	m.mu.Lock()
	var gone []string
	for name := range m.nodes {
		if !listed[name] {
			gone = append(gone, name)
		}
	}
	m.mu.Unlock()
	for _, name := range gone {
		m.NodeDeleted(name)
	}
}

// processNode is upstream's per-node work in monitorNodeHealth.
func (m *Monitor) processNode(ctx context.Context, now time.Time, node *v1.Node) nodeResult {
	zone := zonestate.Key(node)
	m.queue(now, zone)
	res, err := m.health.Observe(now, node, m.cluster.GetLease(node.Name))
	if err != nil {
		return nodeResult{}
	}
	if res.StatusUpdate != nil {
		if err := m.cluster.UpdateNodeStatus(ctx, node, res.StatusUpdate); err != nil {
			if !apierrors.IsNotFound(err) {
				m.emit(now, KindWriteFailed, node.Name, "", "node status: "+err.Error())
			}
			// Upstream skips the node for this pass: not counted in its
			// zone, no taint or pod work. The next pass decides again.
			return nodeResult{}
		}
	}
	m.noteReady(now, node.Name, zone, res)
	r := nodeResult{zone: zone, ready: res.CurrentReady}
	_, r.counted = node.Labels[LabelExcludeDisruption]
	r.counted = !r.counted
	if res.CurrentReady == nil {
		return r
	}
	if m.legacy() {
		m.legacyDecide(ctx, now, node, zone, res, &r)
	} else {
		m.taintDecide(ctx, now, node, zone, res.CurrentReady, &r)
	}
	r.markPods = res.MarkPodsNotReady
	return r
}

// noteReady records the node's Ready status after this pass and reports a
// change as an Event.
func (m *Monitor) noteReady(now time.Time, name, zone string, res nodehealth.Result) {
	var status v1.ConditionStatus
	if res.CurrentReady != nil {
		status = res.CurrentReady.Status
	}
	m.mu.Lock()
	s, ok := m.nodes[name]
	if !ok {
		s = &nodeState{}
		m.nodes[name] = s
	}
	prev := s.ready
	s.zone, s.ready = zone, status
	m.mu.Unlock()
	if status == prev || (prev == "" && status == v1.ConditionTrue) {
		return
	}
	switch status {
	case v1.ConditionTrue:
		m.emit(now, KindNodeReady, name, "", "kubelet reports Ready")
	case v1.ConditionFalse:
		m.emit(now, KindNodeNotReady, name, "", "kubelet reports Ready=False: "+res.CurrentReady.Reason)
	case v1.ConditionUnknown:
		detail := "Ready=Unknown" // e.g. found so after a controller restart
		if res.StatusUpdate != nil {
			detail = fmt.Sprintf("no heartbeat for more than %v: Ready=Unknown written", res.GracePeriod)
		}
		m.emit(now, KindNodeUnknown, name, "", detail)
	}
}

// readyStatus is the node's Ready status as of the last pass.
func (m *Monitor) readyStatus(name string) v1.ConditionStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.nodes[name]; ok {
		return s.ready
	}
	return ""
}

// markPodsNotReady is upstream MarkPodsNotReady for one node. It reports
// whether every pod was handled, so the edge can be acknowledged.
func (m *Monitor) markPodsNotReady(ctx context.Context, now time.Time, node string) bool {
	ok, marked := true, 0
	for _, pod := range m.cluster.ListPodsOnNode(node) {
		if pod.Spec.NodeName != node {
			continue
		}
		st, change := nodehealth.PodNotReadyStatus(now, pod)
		if !change {
			continue
		}
		if err := m.cluster.UpdatePodStatus(ctx, pod, st); err != nil && !apierrors.IsNotFound(err) {
			m.emit(now, KindWriteFailed, node, pod.Namespace+"/"+pod.Name, "pod Ready=False: "+err.Error())
			ok = false
			continue
		}
		marked++
	}
	if marked > 0 {
		m.emit(now, KindPodsNotReady, node, "", fmt.Sprintf("%d pods marked Ready=False", marked))
	}
	return ok
}

// applyZoneDecision sets every zone's rate and handles full disruption mode
// (upstream handleDisruption).
func (m *Monitor) applyZoneDecision(ctx context.Context, now time.Time, d zonestate.Decision, nodes []*v1.Node) {
	for _, z := range d.Zones {
		q := m.queue(now, z.Key)
		if z.RateChanged {
			if err := q.SetRate(now, z.QPS); err != nil {
				m.emitFn(Event{At: now, Kind: KindWriteFailed, Zone: z.Key, Detail: err.Error()})
			}
		}
		if z.State != z.Previous {
			m.emitFn(Event{At: now, Kind: KindZoneState, Zone: z.Key, State: z.State, QPS: z.QPS, Detail: fmt.Sprintf(
				"%v -> %v (%d of %d not ready, rate %g nodes/s)", z.Previous, z.State, z.NotReady, z.Size, z.QPS)})
		}
	}
	if d.EnteredFullDisruption {
		m.emitFn(Event{At: now, Kind: KindDisruptionMode, Entered: true, Detail: "entered full disruption: no Ready node in any zone, evictions stop"})
		// Empty the queues (their rates are 0 already) before the cleanup.
		m.mu.Lock()
		for _, q := range m.queues {
			q.Clear()
		}
		m.mu.Unlock()
		// Upstream markNodeAsReachable for every node: the most likely cause
		// is the control plane's own connectivity, not the nodes. The removal
		// decides on the node as read for the write, not on the list read at
		// the start of the pass, which misses taints added meanwhile.
		for _, node := range nodes {
			if m.legacy() {
				m.legacyCancel(now, node.Name)
			} else {
				_, _ = m.writeTaints(ctx, now, node.Name, taints.RemoveHealthTaints)
			}
		}
	}
	if d.ExitedFullDisruption {
		m.health.ResetProbes(now)
		m.emitFn(Event{At: now, Kind: KindDisruptionMode, Detail: "exited full disruption: every node gets a fresh grace period"})
	}
}

// NextDeadline is the earliest instant at which TaintPass or EvictionPass
// has work, if any is pending. MonitorPass runs on its own period.
func (m *Monitor) NextDeadline() (time.Time, bool) {
	at, ok := m.evictor.NextDeadline()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.queues {
		if t, qok := q.NextDeadline(); qok && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

// Stats is a snapshot of the Monitor's queues, for tests and dashboards.
type Stats struct {
	Nodes        int            // nodes known
	QueuedByZone map[string]int // nodes waiting in each zone queue
	Evictions    int            // pods the Evictor tracks with a pending eviction
}

// Stats returns the current Stats.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Nodes: len(m.nodes), QueuedByZone: make(map[string]int, len(m.queues)), Evictions: m.evictor.Len()}
	for k, q := range m.queues {
		s.QueuedByZone[k] = q.Len()
	}
	return s
}
