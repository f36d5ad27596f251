package incident

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
)

// Window is a span of the log's time, [From, To).
type Window struct{ From, To time.Time }

// DefaultPassDrift is a typical monitor pass drift
// (ReplayOptions.PassDrift): about what a pass of kube-controller-manager
// takes on a small cluster (1.36ms a pass, measured from the log lines
// quoted in kubernetes/kubernetes#121793). The e2e self-replays of
// kube-controller-manager's recordings use it.
const DefaultPassDrift = time.Millisecond

// DefaultKubeletReaction is how long a kubelet takes at most to put back
// what a controller wrote over its status: its node status update period
// (nodeStatusUpdateFrequency) and its status manager's sync period, both
// 10s at v1.37.2.
const DefaultKubeletReaction = 10 * time.Second

// defaultToleration is what the DefaultTolerationSeconds admission plugin
// gives pods without their own not-ready and unreachable tolerations.
const defaultToleration = 300 * time.Second

// ReplayOptions selects how a replay runs.
type ReplayOptions struct {
	// Policy is the controller's policy to replay under.
	Policy Policy
	// Phase is when the first monitor pass runs after the log's first
	// event (History.First): passes run at First + Phase + k ×
	// Policy.NodeMonitorPeriod. In [0, NodeMonitorPeriod).
	Phase time.Duration
	// ControllerStart is when the controller started, if after the log's
	// first event (zero: before it): no pass runs before it, and the
	// monitor passes run at ControllerStart + Phase + k ×
	// Policy.NodeMonitorPeriod. A recording that begins before its
	// controller ran (a test cluster's nodes registering first) shows
	// when: the controller's first list of nodes.
	ControllerStart time.Time
	// End is when the replay ends, if after the log's last event that
	// plays a part (zero: History.Last): a recording whose last events
	// play no part (every kubelet silent) still shows the controller did
	// nothing more until then.
	End time.Time
	// LeaseWatchStalls and NodeWatchStalls are when the controller's Lease
	// and Node caches stall (modelled: the log cannot tell), in any order;
	// overlapping or touching windows are one stall. During a stall
	// the cache keeps the objects as they were when it began (Leases:
	// monitortest.LeaseStall; Nodes: their Node events do not reach the
	// Monitor and its reads return the frozen nodes) while the kubelets
	// write on; the Lease circuit breaker's live reads see those writes.
	// When a Node stall ends every node reaches the Monitor again.
	LeaseWatchStalls, NodeWatchStalls []Window
	// PassDrift is how much later than Policy.NodeMonitorPeriod each
	// monitor pass follows the one before (0: none; the replay command's
	// -pass-drift). kube-controller-manager
	// runs monitorNodeHealth with wait.UntilWithContext, whose period
	// starts when a pass returns: its passes drift by each pass's
	// duration. Without a drift, a grace period that is a whole number of
	// periods is crossed one pass later than KCM crosses it, at every
	// phase.
	PassDrift time.Duration
	// KubeletReaction bounds when a kubelet reacts to a replayed write the
	// recording lacks (0: DefaultKubeletReaction): at its first write in
	// the log within it after the replayed write.
	KubeletReaction time.Duration
	// KeepRecordedReactions feeds every kubelet status post to the replay
	// as a heartbeat, even one that reacts to a recorded controller write
	// the replay has not made (by default such a post is left out, with a
	// NoteReactionDropped: see reactionWatch).
	KeepRecordedReactions bool
	// Limits bound the replayed decisions (MaxDecisions) and the monitor
	// passes (MaxMonitorPasses).
	Limits Limits
}

// Note is something the replay modelled rather than read: a kubelet's
// reaction to a replayed write, a recorded reaction left out, a stall
// beginning or ending.
type Note struct {
	Time   time.Time
	Kind   string // kubelet-reposted, kubelet-pods-ready, lease-watch-stalled, ...
	Node   string
	Pod    string // namespace/name, for a pod's reaction left out
	Detail string
}

// The kinds of Note.
const (
	NoteKubeletReposted  = "kubelet-reposted"
	NoteKubeletPodsReady = "kubelet-pods-ready"
	// NoteReactionDropped: a kubelet's recorded status post (its node's
	// Ready, or a pod's Ready=True: Note.Pod) reacted to a recorded
	// controller write the replay has not made; it is not fed to the
	// replay.
	NoteReactionDropped = "recorded-reaction-dropped"
	NoteLeaseStalled    = "lease-watch-stalled"
	NoteLeaseResumed    = "lease-watch-resumed"
	NoteNodeStalled     = "node-watch-stalled"
	NoteNodeResumed     = "node-watch-resumed"
)

// Run is one finished replay.
type Run struct {
	Policy Policy
	Phase  time.Duration
	// Origin is the log's first event (t=0), End its last.
	Origin, End time.Time
	// Replayed are the Monitor's decisions, in time order.
	Replayed []Decision
	// Notes are the modelled events, in time order.
	Notes []Note
	// MonitorPasses counts the monitor passes run.
	MonitorPasses int

	nodes map[string]*nodeFacts
	// leaseStalls and nodeStalls are the options' stalls (Scenario).
	leaseStalls []Window
	nodeStalls  int
	// deleted is, for each pod deleted in the log by someone other than
	// the controller, when and by whom.
	deleted map[string]string
	// pending is, for each pod still in the replay at the end, the
	// Evictor's explanation (why it was not evicted).
	pending map[string]taints.Explanation
}

// nodeFacts are what the replay saw of one node, for the reasons.
type nodeFacts struct {
	lastBeat time.Time
	maxGap   time.Duration
	gapEnd   time.Time // the beat that ended the longest gap (zero: it never ended)
	gapStart time.Time
	held     int
	// silences are the kubelet's silences longer than silenceMin (at most
	// maxSilences), the last possibly open (To zero) at the end.
	silences  []Window
	unknownAt time.Time // first replayed node-unknown
	taintedAt time.Time // first replayed NoExecute taint
}

// replayer is one replay in progress.
type replayer struct {
	ctx    context.Context
	h      *History
	opt    ReplayOptions
	lim    Limits
	origin time.Time
	t      time.Duration
	c      *monitortest.Cluster
	stall  *monitortest.LeaseStall
	m      *monitor.Monitor
	run    *Run
	cls    *classifier

	kubeletReady map[string]v1.ConditionStatus // what each kubelet last reported
	recUnknown   map[string]bool               // the recording has the node Unknown
	recDeleted   map[podKey]bool               // the recorded controller deleted the pod
	nodeSync     map[string]time.Time          // a planned kubelet reaction: its deadline
	podSync      map[string]time.Time
	// reactions finds the recorded kubelet posts that react to recorded
	// controller writes; replayedUnknown and replayedNotReady are when the
	// replay last wrote a node Unknown, a pod Ready=False.
	reactions        *reactionWatch
	replayedUnknown  map[string]time.Time
	replayedNotReady map[podKey]time.Time
	// nodeFrozen is the controller's Node cache while its Node watch is
	// stalled (nil: not stalled).
	nodeFrozen *frozenNodes
	nodeStalls int  // Node stalls begun
	attached   bool // the controller runs (ReplayOptions.ControllerStart)
	err        error
}

// frozenNodes is the Node cache as it was when a stall began: copies at
// the stall's cached resourceVersion (as monitortest.LeaseStall's: 2k-1
// during the k-th stall, 2k for a node written since it began), and the
// objects they were copied from.
type frozenNodes struct {
	list   []*v1.Node
	byName map[string]*v1.Node
	orig   map[string]*v1.Node
	gen    int
}

// replayCluster is the cluster as the Monitor sees it: the Lease cache
// that can stall, and its pod status writes recorded per pod.
type replayCluster struct {
	*monitortest.LeaseStall
	r *replayer
}

// ListNodes returns the nodes as the controller's cache has them: frozen
// while its Node watch is stalled. The Monitor calls the cluster only from
// its passes and informer events, which the replay runs one at a time.
func (c *replayCluster) ListNodes() []*v1.Node {
	if f := c.r.nodeFrozen; f != nil {
		return f.list
	}
	return c.LeaseStall.ListNodes()
}

// GetNode returns the node as the controller's cache has it.
func (c *replayCluster) GetNode(name string) *v1.Node {
	if f := c.r.nodeFrozen; f != nil {
		return f.byName[name]
	}
	return c.LeaseStall.GetNode(name)
}

// LiveNode is the API server's node: the cached copy when it was not
// written since the Node watch stalled, else the current one at the
// stall's live version.
func (c *replayCluster) LiveNode(ctx context.Context, name string) (*v1.Node, error) {
	n := c.LeaseStall.Cluster.GetNode(name)
	f := c.r.nodeFrozen
	if f == nil || n == nil {
		return n, nil
	}
	if f.orig[name] == n {
		return f.byName[name], nil
	}
	n = n.DeepCopy()
	n.ResourceVersion = strconv.Itoa(2 * f.gen)
	return n, nil
}

// SyncedResourceVersion is the version the controller's caches have
// synced to: the Lease cache's (monitortest.LeaseStall), and the Node
// cache's, 2k-1 during the k-th Node stall and 2k after it.
func (c *replayCluster) SyncedResourceVersion(cache nodehealth.Cache) string {
	if cache != nodehealth.CacheNode {
		return c.LeaseStall.SyncedResourceVersion(cache)
	}
	switch {
	case c.r.nodeStalls == 0:
		return ""
	case c.r.nodeFrozen != nil:
		return strconv.Itoa(2*c.r.nodeStalls - 1)
	}
	return strconv.Itoa(2 * c.r.nodeStalls)
}

// receiver is the controller's informers: the cluster's events reach the
// Monitor, but for the Node events while the Node watch is stalled.
type receiver struct{ r *replayer }

func (rc receiver) NodeChanged(ctx context.Context, now time.Time, node *v1.Node) {
	if rc.r.nodeFrozen == nil {
		rc.r.m.NodeChanged(ctx, now, node)
	}
}

func (rc receiver) NodeDeleted(name string) { rc.r.m.NodeDeleted(name) }

func (rc receiver) PodChanged(ctx context.Context, now time.Time, pod *v1.Pod) {
	rc.r.m.PodChanged(ctx, now, pod)
}

func (rc receiver) PodDeleted(key types.NamespacedName) { rc.r.m.PodDeleted(key) }

func (rc receiver) LeaseChanged(name string) { rc.r.m.LeaseChanged(name) }

func (c *replayCluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	was := podReady(&pod.Status)
	if err := c.LeaseStall.UpdatePodStatus(ctx, pod, status); err != nil {
		return err
	}
	if podReady(status) == v1.ConditionFalse && was != v1.ConditionFalse {
		c.r.podNotReady(pod)
	}
	return nil
}

func podReady(st *v1.PodStatus) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status
		}
	}
	return ""
}

// Replay runs the log src (read again from its start: the second pass)
// through the node lifecycle controller's decision loop (monitor on
// monitortest) under opt.Policy, and returns what the Monitor decided. At
// every instant, in this order: the log's writes of that instant apply (a
// kubelet's Lease renewal or status post, a pod created, bound or deleted
// by someone other than the controller; the recorded controller's own
// writes are not applied) and the kubelets react; the stalls begin or end;
// the monitor pass runs (every NodeMonitorPeriod from First+Phase); then
// the taint and eviction passes (every 100ms from First, when they have
// work). The replay ends at the log's last event, or at opt.End when that
// is later. ctx is looked at between instants.
func Replay(ctx context.Context, h *History, src Source, opt ReplayOptions) (*Run, error) {
	p := opt.Policy
	if p.NodeMonitorPeriod <= 0 {
		return nil, fmt.Errorf("incident: --%s=%v must be positive", FlagNodeMonitorPeriod, p.NodeMonitorPeriod)
	}
	if opt.Phase < 0 || opt.Phase >= p.NodeMonitorPeriod {
		return nil, fmt.Errorf("incident: phase %v outside [0, %v)", opt.Phase, p.NodeMonitorPeriod)
	}
	if opt.PassDrift < 0 || opt.PassDrift >= p.NodeMonitorPeriod {
		return nil, fmt.Errorf("incident: pass drift %v outside [0, %v)", opt.PassDrift, p.NodeMonitorPeriod)
	}
	lim := opt.Limits.withDefaults()
	last := h.Last
	if opt.End.After(last) {
		last = opt.End
	}
	if passes := int64(last.Sub(h.First) / p.NodeMonitorPeriod); passes > lim.MaxMonitorPasses {
		return nil, fmt.Errorf("%w: %d monitor passes (the log's %v every --%s=%v), over MaxMonitorPasses=%d (-max-monitor-passes)",
			ErrLimit, passes, last.Sub(h.First), FlagNodeMonitorPeriod, p.NodeMonitorPeriod, lim.MaxMonitorPasses)
	}
	if opt.KubeletReaction <= 0 {
		opt.KubeletReaction = DefaultKubeletReaction
	}
	for _, w := range append(slices.Clone(opt.LeaseWatchStalls), opt.NodeWatchStalls...) {
		if !w.To.After(w.From) {
			return nil, fmt.Errorf("incident: stall window %s/%s: must end after it begins", w.From.Format(time.RFC3339Nano), w.To.Format(time.RFC3339Nano))
		}
	}
	// A cache stalls once over overlapping or touching windows, in any
	// order.
	opt.LeaseWatchStalls = mergeWindows(slices.Clone(opt.LeaseWatchStalls))
	opt.NodeWatchStalls = mergeWindows(slices.Clone(opt.NodeWatchStalls))
	r := &replayer{ctx: ctx, h: h, opt: opt, lim: lim, origin: h.First,
		run: &Run{Policy: p, Phase: opt.Phase, Origin: h.First, End: last, nodes: map[string]*nodeFacts{}, deleted: map[string]string{},
			leaseStalls: opt.LeaseWatchStalls, nodeStalls: len(opt.NodeWatchStalls)},
		cls:          newClassifier(h.opt.ControllerUsers, h.opt.Limits.withDefaults()),
		kubeletReady: map[string]v1.ConditionStatus{}, recUnknown: map[string]bool{}, recDeleted: map[podKey]bool{},
		nodeSync: map[string]time.Time{}, podSync: map[string]time.Time{},
		reactions: newReactionWatch(opt.KubeletReaction), replayedUnknown: map[string]time.Time{}, replayedNotReady: map[podKey]time.Time{}}
	r.build()
	cfg := p.Config()
	// The cluster forwards every Lease change (LeaseChanged), so a pass
	// evaluates a steady node only when its Lease or Node changed or its
	// deadline passed: the same decisions, less work (as policysim).
	cfg.LeaseEvents = true
	m, err := monitor.New(cfg, &replayCluster{LeaseStall: r.stall, r: r}, r.emit)
	if err != nil {
		return nil, fmt.Errorf("incident: %w", err)
	}
	r.m = m
	if !opt.ControllerStart.After(h.First) {
		r.attach()
	}
	if err := r.loop(src); err != nil {
		return nil, err
	}
	r.finish()
	return r.run, nil
}

func (r *replayer) now() time.Time { return r.origin.Add(r.t) }

// attach starts the controller: the Monitor receives the cluster's
// objects as they are (its informers' initial list) and every change
// from then on.
func (r *replayer) attach() {
	r.c.Attach(receiver{r})
	r.c.Sync(r.ctx)
	r.attached = true
}

// build fills the cluster at the origin with what existed before the log:
// each node Ready with its Lease renewed at the origin, each pod of a known
// node running and Ready.
func (r *replayer) build() {
	r.c = monitortest.New(r.origin)
	r.stall = monitortest.NewLeaseStall(r.c)
	ctx := context.Background()
	for i := range r.h.Nodes {
		n := &r.h.Nodes[i]
		if !n.Existed() {
			continue
		}
		var lease *coordinationv1.Lease
		if n.HasLease {
			lease = monitortest.NewLease(n.Name, r.origin)
		}
		r.c.AddNode(ctx, r.newNode(n, r.origin.Add(-time.Hour), true), lease)
		r.facts(n.Name).lastBeat = r.origin
	}
	for i := range r.h.Pods {
		p := &r.h.Pods[i]
		if p.Created.IsZero() && p.Node != "" {
			r.c.AddPod(ctx, r.newPod(p, p.Node, r.origin.Add(-time.Hour)))
		}
	}
}

func (r *replayer) newNode(n *NodeInfo, created time.Time, ready bool) *v1.Node {
	labels := map[string]string{v1.LabelHostname: n.Name}
	if n.Zone != "" {
		labels[v1.LabelTopologyZone] = n.Zone
	}
	if n.Region != "" {
		labels[v1.LabelTopologyRegion] = n.Region
	}
	uid := n.UID
	if uid == "" {
		uid = "uid-" + n.Name
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID(uid), Labels: labels, CreationTimestamp: metav1.NewTime(created)}}
	if ready {
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: monitortest.ReasonKubeletReady,
			LastHeartbeatTime: metav1.NewTime(r.origin), LastTransitionTime: metav1.NewTime(created)}}
	}
	return node
}

// createTaints returns a created node's taints: the body's (a response
// shows what admission added, a request what the creator asked for) with
// the not-ready:NoSchedule taint the NodeTaint admission plugin
// (plugin/pkg/admission/nodetaint, on by default) adds to every new node,
// which the controller removes once the node is Ready.
func createTaints(b *object) []v1.Taint {
	ts, _, _ := b.taints()
	if !slices.ContainsFunc(ts, func(t v1.Taint) bool {
		return t.Key == v1.TaintNodeNotReady && t.Effect == v1.TaintEffectNoSchedule
	}) {
		ts = append(ts, v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule})
	}
	return ts
}

func (r *replayer) newPod(p *PodInfo, node string, created time.Time) *v1.Pod {
	tol := taints.WithDefaultTolerations(p.Tolerations, defaultToleration, defaultToleration)
	pod := monitortest.NewPod(p.Namespace, p.Name, node, created, tol...)
	pod.UID = types.UID(p.UID)
	return pod
}

func (r *replayer) facts(node string) *nodeFacts {
	f := r.run.nodes[node]
	if f == nil {
		f = &nodeFacts{}
		r.run.nodes[node] = f
	}
	return f
}

// stallChange is a stall beginning or ending.
type stallChange struct {
	at    time.Duration
	node  bool // the Node cache (else the Lease cache)
	begin bool
}

func (r *replayer) stallChanges() []stallChange {
	var out []stallChange
	for _, w := range r.opt.LeaseWatchStalls {
		out = append(out, stallChange{at: max(w.From.Sub(r.origin), 0), begin: true}, stallChange{at: max(w.To.Sub(r.origin), 0)})
	}
	for _, w := range r.opt.NodeWatchStalls {
		out = append(out, stallChange{at: max(w.From.Sub(r.origin), 0), node: true, begin: true}, stallChange{at: max(w.To.Sub(r.origin), 0), node: true})
	}
	slices.SortStableFunc(out, func(a, b stallChange) int { return cmp.Compare(a.at, b.at) })
	return out
}

const never = time.Duration(1<<63 - 1)

// silenceMin is the shortest kubelet silence a scenario export keeps: two
// Lease renewal intervals (a renewal missed).
const silenceMin = 20 * time.Second

// maxSilences bounds the silences kept per node.
const maxSilences = 1000

func (r *replayer) loop(src Source) error {
	cfg := r.m.Config()
	mp, tp := cfg.MonitorPeriod, cfg.TaintPeriod
	end := r.run.End.Sub(r.origin)
	stalls := r.stallChanges()
	start := max(r.opt.ControllerStart.Sub(r.origin), 0)
	nextMonitor, nextTick := start+r.opt.Phase, start
	var (
		it     item
		have   bool
		itemAt time.Duration
		si     int
	)
	next := func() error {
		for {
			e, err := src.Next()
			if errors.Is(err, io.EOF) {
				have = false
				return nil
			}
			if err != nil {
				return fmt.Errorf("incident: reading the log again: %w", err)
			}
			x, ok, err := r.cls.classify(e)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			it, have, itemAt = x, true, max(x.at.Sub(r.origin), r.t)
			return nil
		}
	}
	if err := next(); err != nil {
		return err
	}
	for {
		t := nextMonitor
		if have && itemAt < t {
			t = itemAt
		}
		if si < len(stalls) && stalls[si].at < t {
			t = stalls[si].at
		}
		if !r.attached && start < t {
			t = start
		}
		t = min(t, nextTick)
		if t > end {
			r.t = end
			r.c.SetNow(r.now())
			return r.err
		}
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("incident: stopped at %s: %w", r.now().Format(time.RFC3339Nano), err)
		}
		r.t = t
		r.c.SetNow(r.now())
		for have && itemAt <= t {
			r.apply(&it)
			if err := next(); err != nil {
				return err
			}
		}
		for si < len(stalls) && stalls[si].at <= t {
			r.applyStall(stalls[si])
			si++
		}
		if !r.attached && t >= start {
			r.attach()
		}
		if t == nextMonitor {
			r.m.MonitorPass(r.ctx, r.now())
			r.run.MonitorPasses++
			nextMonitor += mp + r.opt.PassDrift
		}
		if t%tp == 0 && t >= start && r.hasWork(t) {
			r.m.TaintPass(r.ctx, r.now())
			r.m.EvictionPass(r.ctx, r.now())
		}
		if r.err != nil {
			return r.err
		}
		nextTick = r.nextTick(t, tp)
	}
}

func (r *replayer) hasWork(t time.Duration) bool {
	return r.m.PassDue(r.origin.Add(t))
}

func (r *replayer) nextTick(t, tp time.Duration) time.Duration {
	if next, ok := r.m.NextPassTick(r.origin, t, tp); ok {
		return next
	}
	return never
}

func (r *replayer) applyStall(s stallChange) {
	now := r.now()
	switch {
	case !s.node && s.begin && !r.stall.Stalled():
		r.stall.Stall()
		r.note(Note{Time: now, Kind: NoteLeaseStalled, Detail: "modelled: the controller's Lease watch stalls; kubelets keep renewing"})
	case !s.node && !s.begin && r.stall.Stalled():
		r.stall.Resume()
		r.note(Note{Time: now, Kind: NoteLeaseResumed, Detail: "modelled: the controller's Lease cache catches up"})
	case s.node && s.begin && r.nodeFrozen == nil:
		r.nodeStalls++
		f := &frozenNodes{byName: map[string]*v1.Node{}, orig: map[string]*v1.Node{}, gen: r.nodeStalls}
		rv := strconv.Itoa(2*r.nodeStalls - 1)
		for _, n := range r.c.ListNodes() {
			cp := n.DeepCopy()
			cp.ResourceVersion = rv
			f.list = append(f.list, cp)
			f.byName[n.Name], f.orig[n.Name] = cp, n
		}
		r.nodeFrozen = f
		r.note(Note{Time: now, Kind: NoteNodeStalled, Detail: "modelled: the controller's Node watch stalls; its Node cache stays as it is while kubelets post"})
	case s.node && !s.begin && r.nodeFrozen != nil:
		r.nodeFrozen = nil
		nodes := r.c.ListNodes()
		for _, n := range nodes {
			r.m.NodeChanged(r.ctx, now, n)
		}
		r.note(Note{Time: now, Kind: NoteNodeResumed, Detail: fmt.Sprintf("modelled: the controller's Node cache catches up (%d nodes)", len(nodes))})
	}
}

func (r *replayer) note(n Note) { r.run.Notes = append(r.run.Notes, n) }

// apply applies one write of the log.
func (r *replayer) apply(it *item) {
	ctx, now := r.ctx, r.now()
	b := it.body
	switch it.op {
	case opLease:
		if r.c.RenewLease(it.node, now) {
			r.beat(it.node, now)
		}
		r.kubeletWrote(it.node)
	case opNodeStatus:
		ready := b.ready(string(v1.NodeReady))
		if ready == "" {
			ready = r.reported(it.node)
		}
		r.kubeletReady[it.node] = ready
		r.recUnknown[it.node] = ready == v1.ConditionUnknown
		if ctl, ok := r.reactions.nodePost(it.node, it.at, ready); ok && r.dropNodeReaction(it.node, now) {
			r.note(Note{Time: now, Kind: NoteReactionDropped, Node: it.node,
				Detail: fmt.Sprintf("left out: the kubelet's recorded Ready=%s post reacts to the recorded controller's Ready=Unknown write at %s, which the replay has not made",
					ready, Offset(r.origin, ctl))})
			return
		}
		if r.c.PostNodeStatus(ctx, it.node, ready, now) {
			r.beat(it.node, now)
		}
		delete(r.nodeSync, it.node) // the post is the reaction
		r.kubeletWrote(it.node)
	case opNodeCreate:
		if n := r.h.Node(it.node); n != nil && r.c.GetNode(it.node) == nil {
			node := r.newNode(n, now, false)
			node.Spec.Taints = createTaints(b)
			r.c.AddNode(ctx, node, nil)
		}
	case opNodeDelete:
		r.c.DeleteNode(it.node)
	case opPodCreate, opPodBind:
		if it.op == opPodCreate {
			delete(r.recDeleted, it.pod) // a new pod of the name
		}
		p := r.h.Pod(it.pod.Namespace, it.pod.Name)
		if p == nil {
			return
		}
		node := ""
		if b != nil {
			node = b.Spec.NodeName
			if it.op == opPodBind {
				node = b.Target.Name
			}
		}
		if node == "" && it.op == opPodBind {
			node = p.Node
		}
		if node != "" {
			r.c.AddPod(ctx, r.newPod(p, node, now))
		}
	case opCtlPodDelete:
		r.recDeleted[it.pod] = true
	case opPodDelete:
		if r.recDeleted[it.pod] {
			// The end of the recorded controller's eviction (the kubelet's
			// or the pod garbage collector's final deletion): its
			// consequence, not an input.
			return
		}
		key := types.NamespacedName{Namespace: it.pod.Namespace, Name: it.pod.Name}
		if r.c.Pod(key) != nil {
			_ = r.c.EvictPod(ctx, key, "", nil)
			r.run.deleted[it.pod.String()] = fmt.Sprintf("deleted by %s at %s", it.user, Offset(r.origin, now))
		}
	case opPodStatus:
		key := types.NamespacedName{Namespace: it.pod.Namespace, Name: it.pod.Name}
		ready := b.ready(string(v1.PodReady))
		if ctl, ok := r.reactions.podPost(it.pod, it.at, ready); ok && r.dropPodReaction(it.pod, now) {
			r.note(Note{Time: now, Kind: NoteReactionDropped, Node: it.node, Pod: it.pod.String(),
				Detail: fmt.Sprintf("left out: the kubelet's recorded Ready=True post of pod %s reacts to the recorded controller's Ready=False write at %s, which the replay has not made",
					it.pod, Offset(r.origin, ctl))})
			return
		}
		if ready != "" {
			if pod := r.c.Pod(key); pod != nil && podReady(&pod.Status) != ready {
				st := pod.Status.DeepCopy()
				setPodReady(st, ready, now)
				_ = r.c.UpdatePodStatus(ctx, pod, st)
			}
		}
		r.kubeletWrote(it.node)
	case opCtlNodeStatus:
		ready := b.ready(string(v1.NodeReady))
		if b == nil {
			ready = v1.ConditionUnknown
		}
		if ready != "" {
			r.recUnknown[it.node] = ready == v1.ConditionUnknown
		}
		r.reactions.ctlNode(it.node, it.at, ready)
	case opCtlPodStatus:
		r.reactions.ctlPod(it.pod, it.at, b.ready(string(v1.PodReady)))
	}
}

// dropNodeReaction says whether a kubelet's post reacting to a recorded
// Unknown write of node is left out at now: unless kept
// (KeepRecordedReactions), when the replay has not made the write (the
// node is not Unknown in the replay, and the replay did not write it
// Unknown within the reaction time: the post may react to that write).
func (r *replayer) dropNodeReaction(node string, now time.Time) bool {
	if r.opt.KeepRecordedReactions {
		return false
	}
	if n := r.c.GetNode(node); n != nil && nodeReady(n) == v1.ConditionUnknown {
		return false
	}
	u, ok := r.replayedUnknown[node]
	return !ok || now.Sub(u) > r.opt.KubeletReaction
}

// dropPodReaction is dropNodeReaction for a pod's Ready=True post after a
// recorded Ready=False write.
func (r *replayer) dropPodReaction(k podKey, now time.Time) bool {
	if r.opt.KeepRecordedReactions {
		return false
	}
	if pod := r.c.Pod(types.NamespacedName{Namespace: k.Namespace, Name: k.Name}); pod != nil && podReady(&pod.Status) == v1.ConditionFalse {
		return false
	}
	u, ok := r.replayedNotReady[k]
	return !ok || now.Sub(u) > r.opt.KubeletReaction
}

func setPodReady(st *v1.PodStatus, ready v1.ConditionStatus, now time.Time) {
	c := v1.PodCondition{Type: v1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(now)}
	if i := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodReady }); i >= 0 {
		st.Conditions[i] = c
	} else {
		st.Conditions = append(st.Conditions, c)
	}
}

// reported returns what the kubelet last reported (True when it never
// said).
func (r *replayer) reported(node string) v1.ConditionStatus {
	if s, ok := r.kubeletReady[node]; ok {
		return s
	}
	return v1.ConditionTrue
}

// beat notes a heartbeat of node at now.
func (r *replayer) beat(node string, now time.Time) {
	f := r.facts(node)
	if !f.lastBeat.IsZero() {
		gap := now.Sub(f.lastBeat)
		if gap > f.maxGap {
			f.maxGap, f.gapStart, f.gapEnd = gap, f.lastBeat, now
		}
		if gap > silenceMin && len(f.silences) < maxSilences {
			f.silences = append(f.silences, Window{From: f.lastBeat, To: now})
		}
	}
	f.lastBeat = now
}

// kubeletWrote is the kubelet of node writing something at now: it is
// alive, and it reacts to the replayed writes planned for it within the
// reaction time.
func (r *replayer) kubeletWrote(node string) {
	if node == "" {
		return
	}
	now := r.now()
	if dl, ok := r.nodeSync[node]; ok {
		delete(r.nodeSync, node)
		if !now.After(dl) {
			ready := r.reported(node)
			if n := r.c.GetNode(node); n != nil && nodeReady(n) != ready {
				r.c.PostNodeStatus(r.ctx, node, ready, now)
				r.note(Note{Time: now, Kind: NoteKubeletReposted, Node: node,
					Detail: fmt.Sprintf("modelled: the kubelet found the replayed Ready=%s and posted Ready=%s", nodeReady(n), ready)})
			}
		}
	}
	if dl, ok := r.podSync[node]; ok {
		delete(r.podSync, node)
		if !now.After(dl) && r.reported(node) == v1.ConditionTrue {
			if n := r.c.SetPodsReady(r.ctx, node, now); n > 0 {
				r.note(Note{Time: now, Kind: NoteKubeletPodsReady, Node: node,
					Detail: fmt.Sprintf("modelled: the kubelet's status manager put Ready=True back on %d pods", n)})
			}
		}
	}
}

func nodeReady(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// emit receives the Monitor's events.
func (r *replayer) emit(e monitor.Event) {
	d := Decision{Time: e.At, Node: e.Node}
	switch e.Kind {
	case monitor.KindNodeUnknown:
		d.Kind = KindNodeUnknown
		r.replayedUnknown[e.Node] = e.At
		if f := r.facts(e.Node); f.unknownAt.IsZero() {
			f.unknownAt = e.At
		}
		if !r.recUnknown[e.Node] {
			r.nodeSync[e.Node] = e.At.Add(r.opt.KubeletReaction)
		}
	case monitor.KindTaintAdded:
		d.Kind, d.Detail = KindTaintAdded, e.Taint.Key+":"+string(e.Taint.Effect)
		if f := r.facts(e.Node); f.taintedAt.IsZero() && e.Taint.Effect == v1.TaintEffectNoExecute {
			f.taintedAt = e.At
		}
	case monitor.KindTaintRemoved:
		d.Kind, d.Detail = KindTaintRemoved, e.Taint.Key+":"+string(e.Taint.Effect)
	case monitor.KindPodEvicted:
		d.Kind, d.Pod = KindPodEvicted, e.Pod
	case monitor.KindHealthHeld:
		if e.Node != "" {
			r.facts(e.Node).held++
		}
		return
	default:
		return
	}
	r.decide(d)
}

func (r *replayer) podNotReady(pod *v1.Pod) {
	node := pod.Spec.NodeName
	r.replayedNotReady[podKey{pod.Namespace, pod.Name}] = r.now()
	r.decide(Decision{Time: r.now(), Kind: KindPodNotReady, Node: node, Pod: pod.Namespace + "/" + pod.Name})
	if !r.recUnknown[node] {
		if _, ok := r.podSync[node]; !ok {
			r.podSync[node] = r.now().Add(r.opt.KubeletReaction)
		}
	}
}

func (r *replayer) decide(d Decision) {
	if len(r.run.Replayed) >= r.lim.MaxDecisions {
		if r.err == nil {
			r.err = fmt.Errorf("%w: more than MaxDecisions=%d replayed decisions (-max-decisions)", ErrLimit, r.lim.MaxDecisions)
		}
		return
	}
	r.run.Replayed = append(r.run.Replayed, d)
}

func (r *replayer) finish() {
	end := r.now()
	for _, f := range r.run.nodes {
		if !f.lastBeat.IsZero() {
			gap := end.Sub(f.lastBeat)
			if gap > f.maxGap {
				f.maxGap, f.gapStart, f.gapEnd = gap, f.lastBeat, time.Time{}
			}
			if gap > silenceMin && len(f.silences) < maxSilences {
				f.silences = append(f.silences, Window{From: f.lastBeat})
			}
		}
	}
	sortDecisions(r.run.Replayed)
	// Why each recorded eviction the replay did not make did not happen.
	r.run.pending = map[string]taints.Explanation{}
	for _, d := range r.h.Recorded {
		if d.Kind != KindPodEvicted {
			continue
		}
		ns, name, _ := cut(d.Pod)
		r.run.pending[d.Pod] = r.m.Explain(end, types.NamespacedName{Namespace: ns, Name: name})
	}
}
