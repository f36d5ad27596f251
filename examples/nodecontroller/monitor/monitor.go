package monitor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// NodeChanged, NodeDeleted, PodChanged and PodDeleted (with
// Config.LeaseEvents, the Lease informer's to LeaseChanged too). A Monitor
// is safe for concurrent use: passes of one kind are serialized, a TaintPass never runs
// while a MonitorPass applies its zone decision (one in flight could taint a
// node after the pass entered full disruption and cleaned it), and every
// other method may run while a pass is in progress. It never holds its state
// lock while it calls the Cluster or the event callback, so both may call
// back into the Monitor's other methods (NodeChanged, PodDeleted, Stats,
// ...), but not start a pass: a TaintPass, and a MonitorPass's zone
// decision, call them with the tainting lock held.
type Monitor struct {
	cfg     Config
	cluster Cluster
	emitFn  func(Event)
	mode    mode // taintMode, or legacyMode when cfg.PodEvictionTimeout > 0

	health  *nodehealth.Tracker
	zones   *zonestate.Tracker
	queues  *zonestate.Queues[*evictionqueue.Queue[string]] // tainting (legacy: pod deletion) queue per zone
	evictor *taints.Evictor

	monitorMu sync.Mutex // one MonitorPass at a time; guards the pass buffers
	taintMu   sync.Mutex // one TaintPass (or zone decision) at a time
	evictMu   sync.Mutex // one EvictionPass at a time

	// evictPaused is set while the cluster is in full disruption, from the
	// zone decision that enters it, before the health taints are removed.
	evictPaused atomic.Bool

	// Buffers reused from pass to pass, so that a steady pass allocates
	// almost nothing. They belong to MonitorPass (monitorMu).
	sorted     []*v1.Node
	lastList   []*v1.Node // the last pass's list, in name order
	results    []nodeResult
	zoneCounts map[string]zonestate.ZoneHealth
	// byPos is the state of the node at each position of the last pass's
	// list. Only MonitorPass writes it, under mu (LeaseChanged reads it).
	byPos []*nodeState
	// nodeNow is SetNodeClock's clock (MonitorPass's, monitorMu), or nil.
	nodeNow func() time.Time
	// healthHook is SetNodeHealthObserver's observer (monitorMu), or nil.
	healthHook func(node string, took time.Duration)
	// quiet is, by position in the pass's list, the quiet state of the
	// node there (Config.LeaseEvents, quiet.go); quietGen ends every
	// node's when it moves. Both belong to MonitorPass (monitorMu).
	quiet    []quietState
	quietGen uint32

	mu    sync.Mutex
	nodes map[string]*nodeState
	// leaseAt is where LeaseChanged last found a node in byPos: a cluster
	// renews Leases in name order, so the next one is usually the next
	// position, found without hashing its name.
	leaseAt int
	zoneMap map[string]*zone
	pass    uint64 // MonitorPass count, stamps nodeState.seen
	// lastZones is the last zone decision's zones (AppendZones).
	lastZones []zonestate.ZoneDecision
	deletes   uint64 // NodeDeleted count
}

// zone is a zone key shared by the zone's nodes, and how many of its nodes
// the current pass counted and found not ready (MonitorPass only). Its
// queue is in Monitor.queues.
type zone struct {
	key    string
	counts zonestate.ZoneHealth
}

// nodeState is what the Monitor remembers per node between passes. Fields
// marked "pass" belong to MonitorPass (monitorMu); the others are guarded by
// Monitor.mu, except deleted, which is atomic. MonitorPass is the only
// writer of ready, so it reads it without the lock.
type nodeState struct {
	name    string
	deleted atomic.Bool // NodeDeleted dropped it (a byPos entry must not revive it)
	// leaseChanged: LeaseChanged since the node's last evaluation
	// (Config.LeaseEvents, quiet.go).
	leaseChanged atomic.Bool
	zone         *zone
	ready        v1.ConditionStatus // Ready status after the last pass; "" before the first
	legacy       legacyStatus
	pos          int32  // mu: the node's position in byPos when it was put there
	seen         uint64 // pass: the last pass that listed the node

	// from is the object zone and excluded were computed from (pass;
	// atomic: with several workers, a worker's look at a state another
	// worker is updating, after the list's positions shifted, is a race
	// otherwise, although the look then fails either way).
	from     atomic.Pointer[v1.Node]
	region   string // its region and zone label values
	zoneName string
	excluded bool // LabelExcludeDisruption is set
	// tainted: from has taints (pass). The mode reads a node's taints
	// only then: at 100,000 nodes, the node's taints are a cache miss
	// of their own.
	tainted bool
	queued  bool // pass: the node may be known to its zone's queue

	// health finds the node's record in the health Tracker without a
	// lookup by name (nodehealth.Tracker.ObserveHandle); only the
	// Tracker reads and writes it, under its own lock.
	health nodehealth.Handle
}

// mode is what the two eviction modes do differently. New picks one:
// taintMode (tainting.go), or legacyMode (legacy.go) when
// Config.PodEvictionTimeout > 0. The passes call it at fixed points, so one
// mode's part of a pass reads top to bottom in its own file.
type mode interface {
	// decide is the mode's per-node decision in MonitorPass, once the node's
	// health was observed and it has a Ready condition. A node to queue is
	// staged in r; it reaches its zone queue with the pass's zone decision.
	decide(ctx context.Context, now time.Time, node *v1.Node, s *nodeState, res nodehealth.Result, r *nodeResult)
	// queued reports that a node staged by decide entered its zone queue.
	queued(now time.Time, node *v1.Node)
	// admit is TaintPass's work on a node its zone queue lets through.
	admit(ctx context.Context, now time.Time, it evictionqueue.Item[string]) (done bool, retryAfter time.Duration)
	// reachable undoes the mode's work on a node when the cluster enters
	// full disruption.
	reachable(ctx context.Context, now time.Time, node string)
	// feedsEvictor reports whether the taint eviction controller (the
	// Evictor) follows the cluster's NoExecute taints and pods.
	feedsEvictor() bool
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
	if err := evictor.KeepCancellations(cfg.CancelledEvictions); err != nil {
		return nil, err
	}
	queues, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
	})
	if err != nil {
		return nil, err
	}
	if emit == nil {
		emit = func(Event) {}
	}
	m := &Monitor{
		cfg: cfg, cluster: cluster, emitFn: emit,
		health: health, zones: zones, queues: queues, evictor: evictor,
		zoneCounts: make(map[string]zonestate.ZoneHealth),
		nodes:      make(map[string]*nodeState),
		zoneMap:    make(map[string]*zone),
	}
	if cfg.PodEvictionTimeout > 0 {
		m.mode = legacyMode{m}
	} else {
		m.mode = taintMode{m}
	}
	return m, nil
}

// SetNodeClock makes MonitorPass read now once per node, when the node is
// processed: that node's health is evaluated, its Unknown conditions
// written (their lastTransitionTime and lastHeartbeatTime) and its per-node
// decision taken at that instant, as upstream's monitorNodeHealth does
// (tryUpdateNodeHealth reads the controller's clock for each node), rather
// than at the pass's start. now must be safe for concurrent use when
// Config.Workers > 1; an instant before the pass's now counts as the pass's
// now. nil, the default, makes every node use the now MonitorPass was
// given (simulations on a virtual clock). It waits for a MonitorPass in
// progress.
func (m *Monitor) SetNodeClock(now func() time.Time) {
	m.monitorMu.Lock()
	defer m.monitorMu.Unlock()
	m.nodeNow = now
}

// SetNodeHealthObserver makes MonitorPass call observe for every node with
// the time its health update took (reading its Lease, evaluating it and
// writing its status when needed) on the SetNodeClock clock, as upstream's
// monitorNodeHealth observes each tryUpdateNodeHealth call in
// node_collector_update_node_health_duration_seconds. Without a node clock
// it is never called. observe runs on the pass's workers (it must be safe
// for concurrent use when Config.Workers > 1) and must be quick. nil
// removes it. It waits for a MonitorPass in progress.
func (m *Monitor) SetNodeHealthObserver(observe func(node string, took time.Duration)) {
	m.monitorMu.Lock()
	defer m.monitorMu.Unlock()
	m.healthHook = observe
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

// nodeResult is what one node contributes to the zone decision of a pass,
// and the work the pass does for it after that decision.
type nodeResult struct {
	zone *zone // nil: the node is skipped this pass
	// notReady: the node's Ready condition after the pass is missing or
	// not True (zonestate counts it as not ready).
	notReady bool
	counted  bool
	// enqueue stages the node for its zone queue (requeue: forget a done
	// entry first); the queue sees it only with the pass's zone decision.
	enqueue, requeue bool
	// markPods asks for the node's pods to be marked Ready=False after the
	// decision, outside the tainting exclusion; edge is the flip they are
	// marked for.
	markPods bool
	// settled: the mode's decision did nothing (no write, nothing staged
	// or removed) and does nothing again while its inputs stay the same
	// (quiet.go).
	settled bool
	edge    time.Time
	state   *nodeState
}

// MonitorPass is one run of upstream monitorNodeHealth
// (pkg/controller/nodelifecycle/node_lifecycle_controller.go): per node,
// observe its health, write its Unknown conditions and let the mode decide
// (queue it for NoExecute tainting or, in legacy mode, for pod deletion);
// then decide every zone's state and rate and the full-disruption mode
// (handleDisruption); then mark the pods of the nodes that went Unknown
// Ready=False (MarkPodsNotReady).
//
// Only the zone decision excludes TaintPass: the nodes a pass queues reach
// their zone queue together with the decision, so a TaintPass running
// meanwhile works on the nodes queued by earlier passes and never sees one
// the decision is about to clean (entering full disruption empties the
// queues and removes the health taints while no TaintPass runs). Pod marking
// (one write per pod, hours for a large outage behind a throttled client)
// comes after the decision and holds up no TaintPass or EvictionPass.
// Upstream taints concurrently too (doNoExecuteTaintingPass), but unlike
// here a tainting pass may pick a node the running monitor pass queued
// before its handleDisruption ran.
func (m *Monitor) MonitorPass(ctx context.Context, now time.Time) {
	m.monitorMu.Lock()
	defer m.monitorMu.Unlock()
	m.mu.Lock()
	m.pass++
	pass, deletes := m.pass, m.deletes
	m.mu.Unlock()

	m.syncCaches(now)
	nodes := m.listNodes()
	// Every pass leaves the results it used zero (below), and Grow's new
	// elements are zero: at 100,000 nodes another clear here would cost a
	// few nanoseconds a node.
	m.results = slices.Grow(m.results[:0], len(nodes))[:len(nodes)]
	results := m.results
	if len(m.byPos) != len(nodes) {
		m.mu.Lock() // LeaseChanged reads byPos under mu
		m.byPos = slices.Grow(m.byPos[:0], len(nodes))[:len(nodes)]
		m.mu.Unlock()
	}
	if m.cfg.LeaseEvents && len(m.quiet) != len(nodes) {
		m.quiet = slices.Grow(m.quiet[:0], len(nodes))[:len(nodes)]
	}
	if m.cfg.Workers == 1 { // no closure for the goroutines to share: no allocation
		for i, node := range nodes {
			m.observeNode(ctx, now, pass, i, node, &results[i])
		}
	} else {
		m.forEach(len(nodes), func(i int) { m.observeNode(ctx, now, pass, i, nodes[i], &results[i]) })
	}
	m.forgetVanished(pass, deletes, len(nodes))
	if m.heldPass(now) {
		// A cache is behind (confirm.go): the whole pass holds, no
		// zone decision, taint or pod work. Unlike upstream, whose
		// skipped nodes drop out of handleDisruption's zone count
		// (deleting their zones' states), the zones keep their state.
		clear(results)
		return
	}

	marks := m.decide(ctx, now, nodes, results)
	if marks > 0 {
		m.forEach(len(nodes), func(i int) {
			if r := &results[i]; r.markPods && m.markPodsNotReady(ctx, now, nodes[i].Name) {
				m.health.AckPodsNotReadyEdge(nodes[i].Name, r.edge)
			}
		})
	}
	clear(results) // drop the references until the next pass
}

// listNodes returns the cluster's nodes in name order; a list already in
// order is used as is. Checking the order compares only the neighbours of
// nodes that are not where the last pass's list had them: an unchanged
// pair was in order then and, nodes being immutable, still is. So a steady
// pass does not read every node's name twice (at 100,000 nodes, names
// spread over memory).
func (m *Monitor) listNodes() []*v1.Node {
	nodes := m.cluster.ListNodes()
	byName := func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) }
	prev := m.lastList
	sorted := true
	for i := 1; i < len(nodes); i++ {
		if i < len(prev) && nodes[i] == prev[i] && nodes[i-1] == prev[i-1] {
			continue
		}
		if byName(nodes[i-1], nodes[i]) > 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		m.sorted = append(m.sorted[:0], nodes...)
		slices.SortFunc(m.sorted, byName)
		nodes = m.sorted
	}
	m.lastList = append(m.lastList[:0], nodes...)
	return nodes
}

// observeNode is upstream's per-node work in monitorNodeHealth, up to the
// mode's decision, at the pass's now or, with SetNodeClock, at the node's
// own instant.
func (m *Monitor) observeNode(ctx context.Context, now time.Time, pass uint64, i int, node *v1.Node, r *nodeResult) {
	s := m.state(pass, i, node)
	if m.cfg.LeaseEvents && m.stillQuiet(now, i, s, node) {
		*r = nodeResult{zone: s.zone, notReady: m.quiet[i].notReady, counted: !s.excluded, state: s, settled: true}
		return
	}
	if m.nodeNow != nil {
		if t := m.nodeNow(); t.After(now) {
			now = t // this node's instant (upstream reads the clock per node)
		}
	}
	if m.cfg.LeaseEvents {
		s.leaseChanged.Store(false) // before the read: a change after it sets it again
	}
	res, err := m.health.ObserveHandle(now, &s.health, node, m.cluster.GetLease(node.Name))
	if err != nil {
		m.observedHealth(node.Name, now)
		return
	}
	// Every stale verdict is confirmed (res.Confirm), also for a node
	// already Unknown: upstream reads the live Lease of every node past its
	// grace, so a kubelet that is back holds the pass while the cache lags.
	if res.Held || !m.confirm(ctx, now, node.Name, res) {
		m.observedHealth(node.Name, now)
		return // skipped: not counted in its zone, no taint or pod work
	}
	if res.StatusUpdate != nil {
		if err := m.cluster.UpdateNodeStatus(ctx, node, res.StatusUpdate); err != nil {
			m.observedHealth(node.Name, now)
			if !apierrors.IsNotFound(err) {
				m.emit(now, KindWriteFailed, node.Name, "", "node status: "+err.Error())
			}
			// Upstream skips the node for this pass: not counted in its
			// zone, no taint or pod work. The next pass decides again.
			return
		}
	}
	m.observedHealth(node.Name, now)
	m.noteReady(now, node.Name, s, res)
	notReady := res.CurrentReady == nil || res.CurrentReady.Status != v1.ConditionTrue
	*r = nodeResult{zone: s.zone, notReady: notReady, counted: !s.excluded, state: s}
	if res.CurrentReady == nil {
		return
	}
	m.mode.decide(ctx, now, node, s, res, r)
	r.markPods, r.edge = res.MarkPodsNotReady, res.PodsNotReadyEdge
	if m.cfg.LeaseEvents {
		m.noteQuiet(i, s, node, &res, r)
	}
}

// observedHealth reports a node's health update, started at start, to the
// SetNodeHealthObserver observer.
func (m *Monitor) observedHealth(node string, start time.Time) {
	if m.healthHook == nil || m.nodeNow == nil {
		return
	}
	m.healthHook(node, max(m.nodeNow().Sub(start), 0))
}

// state returns the state of the node at position i of the pass's list,
// stamped as listed by pass, with its zone and exclusion label recomputed
// when the node object changed. A list in the same order as the last pass's
// finds each state without a map lookup, and a node whose object did not
// change since takes no lock either.
func (m *Monitor) state(pass uint64, i int, node *v1.Node) *nodeState {
	if s := m.byPos[i]; s != nil && s.from.Load() == node && !s.deleted.Load() {
		s.seen = pass // the same object: same name, zone and labels
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.byPos[i]
	if s == nil || s.deleted.Load() || s.name != node.Name {
		var ok bool
		if s, ok = m.nodes[node.Name]; !ok {
			s = &nodeState{name: node.Name}
			m.nodes[node.Name] = s
		}
		m.byPos[i], s.pos = s, int32(i)
	}
	s.seen = pass
	if s.from.Load() != node {
		s.from.Store(node)
		s.tainted = len(node.Spec.Taints) > 0
		_, s.excluded = node.Labels[LabelExcludeDisruption]
		if region, zoneName := zonestate.KeyLabels(node); s.zone == nil || region != s.region || zoneName != s.zoneName {
			s.region, s.zoneName = region, zoneName
			s.zone = m.zoneLocked(zonestate.Key(node))
		}
	}
	return s
}

// zoneLocked returns the zone of key, creating it at first sight. m.mu must
// be held.
func (m *Monitor) zoneLocked(key string) *zone {
	z, ok := m.zoneMap[key]
	if !ok {
		z = &zone{key: key}
		m.zoneMap[key] = z
	}
	return z
}

// forgetVanished drops every known node the pass did not list. Nothing needs
// a look when every known node was listed and none was deleted meanwhile.
func (m *Monitor) forgetVanished(pass, deletes uint64, listed int) {
	m.mu.Lock()
	if len(m.nodes) == listed && m.deletes == deletes {
		m.mu.Unlock()
		return
	}
	var gone []string
	for name, s := range m.nodes {
		if s.seen != pass {
			gone = append(gone, name)
		}
	}
	m.mu.Unlock()
	for _, name := range gone {
		m.NodeDeleted(name)
	}
}

// decide applies the zone decision and commits the queue additions staged by
// the pass, with no TaintPass running. It returns how many nodes have pods
// to mark.
func (m *Monitor) decide(ctx context.Context, now time.Time, nodes []*v1.Node, results []nodeResult) (marks int) {
	// The zones are counted from the pass's results (zonestate's Compute
	// on the counted nodes' Ready conditions, as counts), not from the
	// conditions themselves: at 100,000 nodes, reading every node's
	// condition again costs a cache miss per node.
	clear(m.zoneCounts)
	for i := range results {
		r := &results[i]
		if r.zone != nil && r.counted {
			r.zone.counts.Size++
			if r.notReady {
				r.zone.counts.Unhealthy++
			}
		}
		if r.markPods {
			marks++
		}
	}
	m.mu.Lock()
	for _, z := range m.zoneMap {
		if z.counts.Size > 0 {
			m.zoneCounts[z.key] = z.counts
		}
		z.counts = zonestate.ZoneHealth{}
	}
	m.mu.Unlock()

	m.taintMu.Lock()
	defer m.taintMu.Unlock()
	d := m.zones.UpdateCounts(m.zoneCounts)
	m.mu.Lock()
	m.lastZones = append(m.lastZones[:0], d.Zones...)
	m.mu.Unlock()
	m.evictPaused.Store(d.InFullDisruption)
	m.applyZoneDecision(ctx, now, d, nodes)
	if d.EnteredFullDisruption {
		return marks // the queues were emptied: nothing this pass queued goes in
	}
	qps := m.cfg.Zones.EvictionQPS // a zone without a decision: only excluded nodes
	if d.InFullDisruption {
		qps = 0
	}
	for i := range results {
		if r := &results[i]; r.enqueue {
			m.commitEnqueue(now, nodes[i], r, qps)
		}
	}
	return marks
}

// commitEnqueue adds a node staged by the mode's decision to its zone's
// queue, unless it was deleted meanwhile.
func (m *Monitor) commitEnqueue(now time.Time, node *v1.Node, r *nodeResult, qps float64) {
	m.mu.Lock()
	known := m.nodes[node.Name] == r.state
	m.mu.Unlock()
	if !known {
		return
	}
	q, err := m.queues.Ensure(now, r.zone.key, qps)
	if err != nil {
		m.emitFn(Event{At: now, Kind: KindWriteFailed, Node: node.Name, Zone: r.zone.key, Detail: err.Error()})
		return
	}
	if r.requeue {
		q.Remove(node.Name)
	}
	r.state.queued = true
	if q.Add(now, node.Name, node.UID) {
		m.mode.queued(now, node)
	}
}

// applyZoneDecision sets every zone's rate and handles full disruption mode
// (upstream handleDisruption): zonestate.Queues creates, re-rates, empties
// and stops the zone queues; the mode cleans every node on entering.
func (m *Monitor) applyZoneDecision(ctx context.Context, now time.Time, d zonestate.Decision, nodes []*v1.Node) {
	if err := m.queues.Apply(now, d); err != nil {
		m.emitFn(Event{At: now, Kind: KindWriteFailed, Detail: err.Error()})
	}
	for _, zd := range d.Zones {
		if zd.State != zd.Previous {
			m.emitFn(Event{At: now, Kind: KindZoneState, Zone: zd.Key, State: zd.State, QPS: zd.QPS, Detail: fmt.Sprintf(
				"%v -> %v (%d of %d not ready, rate %g nodes/s)", zd.Previous, zd.State, zd.NotReady, zd.Size, zd.QPS)})
		}
	}
	if d.EnteredFullDisruption || d.ExitedFullDisruption || zoneStateChanged(d) {
		// Every node is cleaned, or gets a fresh grace period, or its
		// zone queue may have been emptied or stopped: evaluate all.
		m.quietGen++
	}
	if d.EnteredFullDisruption {
		m.emitFn(Event{At: now, Kind: KindDisruptionMode, Entered: true, Detail: "entered full disruption: no Ready node in any zone, evictions stop"})
		// The queues are empty and stopped (Apply). Upstream markNodeAsReachable (or, in legacy mode,
		// cancelPodEviction) for every node: the most likely cause is the
		// control plane's own connectivity, not the nodes.
		for _, node := range nodes {
			m.mode.reachable(ctx, now, node.Name)
		}
	}
	if d.ExitedFullDisruption {
		m.health.ResetProbes(now)
		m.emitFn(Event{At: now, Kind: KindDisruptionMode, Detail: "exited full disruption: every node gets a fresh grace period"})
	}
}

// TaintPass is upstream doNoExecuteTaintingPass (doEvictionPass in legacy
// mode): every zone queue, in zone key order, lets the nodes its rate allows
// through to the mode, which taints each according to its Ready condition as
// cached now (in legacy mode, deletes its pods).
func (m *Monitor) TaintPass(ctx context.Context, now time.Time) {
	m.taintMu.Lock()
	defer m.taintMu.Unlock()
	admit := func(it evictionqueue.Item[string]) (bool, time.Duration) { return m.mode.admit(ctx, now, it) }
	m.queues.Each(func(_ string, q *evictionqueue.Queue[string]) bool {
		q.Try(now, admit)
		return true
	})
}

// queue returns the zone's queue, if it has one.
func (m *Monitor) queue(zone string) (*evictionqueue.Queue[string], bool) {
	return m.queues.Get(zone)
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

// noteReady records the node's Ready status after this pass and reports a
// change as an Event.
func (m *Monitor) noteReady(now time.Time, name string, s *nodeState, res nodehealth.Result) {
	var status v1.ConditionStatus
	if res.CurrentReady != nil {
		status = res.CurrentReady.Status
	}
	prev := s.ready // MonitorPass is its only writer
	if status == prev {
		return
	}
	m.mu.Lock()
	s.ready = status
	m.mu.Unlock()
	if prev == "" && status == v1.ConditionTrue {
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

func (m *Monitor) emit(now time.Time, kind Kind, node, pod, detail string) {
	m.emitFn(Event{At: now, Kind: kind, Node: node, Pod: pod, Zone: m.zoneOf(node), Detail: detail})
}

func (m *Monitor) zoneOf(node string) string {
	if node == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.nodes[node]; ok && s.zone != nil {
		return s.zone.key
	}
	return ""
}

// NextDeadline is the earliest instant at which TaintPass or EvictionPass
// has work, if any is pending (none from EvictionPass while the cluster is
// in full disruption). MonitorPass runs on its own period.
func (m *Monitor) NextDeadline() (time.Time, bool) {
	at, ok := m.EvictionDeadline()
	if t, qok := m.TaintDeadline(); qok && (!ok || t.Before(at)) {
		at, ok = t, true
	}
	return at, ok
}

// Stats is a snapshot of the Monitor's queues, for tests and dashboards.
type Stats struct {
	Nodes        int            // nodes known
	QueuedByZone map[string]int // nodes waiting in each zone queue
	// NextByZone is, per zone queue with work it can do, when TaintPass can
	// next let a node through (evictionqueue.Queue.NextDeadline: the head
	// due and a token available); a stopped or empty queue has no entry.
	NextByZone map[string]time.Time
	Evictions  int // pods the Evictor tracks with a pending eviction
}

// AppendZones appends the zones of the last monitor pass's decision
// (zonestate.Tracker.Update: key, counted nodes, not-ready nodes, state,
// rate) to dst and returns it. These are the figures upstream's
// handleDisruption sets its zone gauges from: excluded nodes and nodes
// skipped after a failed status write are not counted.
func (m *Monitor) AppendZones(dst []zonestate.ZoneDecision) []zonestate.ZoneDecision {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(dst, m.lastZones...)
}

// Stats returns the current Stats.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	s := Stats{Nodes: len(m.nodes), QueuedByZone: map[string]int{}, NextByZone: map[string]time.Time{}, Evictions: m.evictor.Len()}
	m.mu.Unlock()
	m.queues.Each(func(zone string, q *evictionqueue.Queue[string]) bool {
		s.QueuedByZone[zone] = q.Len()
		if at, ok := q.NextDeadline(); ok {
			s.NextByZone[zone] = at
		}
		return true
	})
	return s
}
