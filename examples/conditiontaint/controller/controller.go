package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// ExcludeDisruptionLabel keeps a node out of its zone's counts (upstream's
// node.kubernetes.io/exclude-disruption); the node is still tainted.
const ExcludeDisruptionLabel = "node.kubernetes.io/exclude-disruption"

// Event reasons. Node events for taint decisions, pod events for
// evictions (TaintManagerEviction is upstream's reason, so existing alerts
// carry over).
const (
	ReasonQueued          = "ConditionTaintQueued"
	ReasonTainted         = "ConditionTaintAdded"
	ReasonWouldTaint      = "ConditionTaintWouldAdd"
	ReasonUntainted       = "ConditionTaintRemoved"
	ReasonWouldUntaint    = "ConditionTaintWouldRemove"
	ReasonHeldByBreaker   = "ConditionTaintHeldByBreaker"
	ReasonWaitingForRate  = "ConditionTaintWaitingForZoneRate"
	ReasonBreakerUntaint  = "ConditionTaintRemovedByBreaker"
	ReasonEvicted         = "TaintManagerEviction"
	ReasonWouldEvict      = "ConditionTaintWouldEvict"
	ReasonEvictionFailed  = "ConditionTaintEvictionFailed"
	ReasonEvictionPaused  = "ConditionTaintEvictionPaused"
	evictionRetryInterval = 5 * time.Second
	conflictRetryInterval = time.Second
)

// Recorder is the part of an events.k8s.io recorder the controller uses
// (controller-runtime's manager.GetEventRecorder, client-go's
// events.FakeRecorder).
type Recorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Options wires a Controller.
type Options struct {
	Config Config
	// Client reads (from the manager's cache in the program) and writes.
	Client client.Client
	// APIReader reads around the cache, just before a taint is written;
	// nil: Client.
	APIReader client.Reader
	Clock     clock.PassiveClock
	Recorder  Recorder
	Metrics   *Metrics
	Log       logr.Logger
}

// Controller turns node conditions into taints through per-zone
// rate-limited queues guarded by the zone breaker, and evicts the pods that
// do not tolerate its NoExecute taints. Its parts:
//
//   - ReconcileNode (a reconciler for Nodes): removes taints whose
//     condition cleared at once, queues nodes that need one in their zone's
//     queue, and tells the Evictor the node's NoExecute taints;
//   - Step (run by Start, the zone Runnable): counts every node per zone,
//     decides each zone's rate with the zone breaker (zonestate), then taints
//     the queued nodes the zone rates allow (evictionqueue);
//   - ReconcilePod and ReconcileEvictions: the taint Evictor's pod inputs
//     and its due evictions, requeued at its NextDeadline; with
//     ZoneConfig.PauseEvictions, the due evictions of a tripped group's
//     nodes are held until the group recovers.
//
// A group is a zone, or the nodes sharing a value of the ZoneConfig.GroupBy
// label.
//
// A Controller is safe for concurrent use.
type Controller struct {
	cfg      Config
	client   client.Client
	reader   client.Reader
	clock    clock.PassiveClock
	rec      Recorder
	metrics  *Metrics
	log      logr.Logger
	selector labels.Selector

	table   *taints.ConditionTaints
	managed []v1.Taint
	tracker *zonestate.Tracker
	queues  *zonestate.Queues[*evictionqueue.Queue[string]]
	evictor *taints.Evictor

	wake        chan struct{}
	evictionsCh chan event.GenericEvent

	mu        sync.Mutex
	zones     map[string]zonestate.ZoneDecision // last decision per group
	full      bool                              // in full disruption mode
	nodeZone  map[string]string                 // node → group key of its queue
	waiting   map[string]string                 // node → last reported wait reason
	dryTaints map[string][]v1.Taint             // dry-run: the taints each node would have
	paused    map[string]bool                   // groups whose evictions are paused, at the last pass
	held      map[types.NamespacedName]taints.Eviction
	lastPass  time.Time
}

// New validates o.Config and returns a Controller.
func New(o Options) (*Controller, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Client == nil || o.Clock == nil || o.Recorder == nil || o.Metrics == nil {
		return nil, errors.New("conditiontaint: Options needs Client, Clock, Recorder and Metrics")
	}
	table, err := taints.NewConditionTaints(o.Config.table())
	if err != nil {
		return nil, err
	}
	tracker, err := zonestate.NewTracker(o.Config.policy())
	if err != nil {
		return nil, err
	}
	queues, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: o.Config.Zones.burst()})
	})
	if err != nil {
		return nil, err
	}
	// Count toleration time from the taint's TimeAdded: a restarted
	// controller or a new leader keeps the countdowns.
	evictor, err := taints.NewEvictor(taints.EvictorConfig{UseTaintTimeAdded: true})
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(o.Config.NodeSelector)
	if err != nil {
		return nil, err
	}
	reader := o.APIReader
	if reader == nil {
		reader = o.Client
	}
	return &Controller{
		cfg: o.Config, client: o.Client, reader: reader, clock: o.Clock, rec: o.Recorder, metrics: o.Metrics,
		log: o.Log, selector: sel,
		table: table, managed: table.Taints(), tracker: tracker, queues: queues, evictor: evictor,
		wake:        make(chan struct{}, 1),
		evictionsCh: make(chan event.GenericEvent, 1),
		zones:       map[string]zonestate.ZoneDecision{},
		nodeZone:    map[string]string{},
		waiting:     map[string]string{},
		dryTaints:   map[string][]v1.Taint{},
		paused:      map[string]bool{},
		held:        map[types.NamespacedName]taints.Eviction{},
	}, nil
}

// groupKey is the node's group: its zone key (zonestate.Key), or its value
// of the GroupBy label ("" without it).
func (c *Controller) groupKey(node *v1.Node) string {
	if c.cfg.Zones.GroupBy == "" {
		return zonestate.Key(node)
	}
	return node.Labels[c.cfg.Zones.GroupBy]
}

// groupDesc names a group in messages: zone "a", or
// group karpenter.sh/nodepool="general".
func (c *Controller) groupDesc(key string) string {
	switch {
	case c.cfg.Zones.GroupBy != "" && key == "":
		return fmt.Sprintf("group %s=\"\" (nodes without the label)", c.cfg.Zones.GroupBy)
	case c.cfg.Zones.GroupBy != "":
		return fmt.Sprintf("group %s=%q", c.cfg.Zones.GroupBy, key)
	case key == "":
		return `zone "" (nodes without topology labels)`
	}
	return fmt.Sprintf("zone %q", ZoneName(key))
}

// breakerWhy says why a group's breaker holds it: its state and counts,
// and the threshold it passed.
func (c *Controller) breakerWhy(key string, z zonestate.ZoneDecision) string {
	why := fmt.Sprintf("%s is %s: %d of %d nodes unhealthy", c.groupDesc(key), z.State, z.NotReady, z.Size)
	switch m := c.cfg.Zones.MaxUnhealthy; {
	case z.State == zonestate.StateFullDisruption:
		return why
	case m == nil:
		return why + fmt.Sprintf(", breaker threshold %v", c.cfg.Zones.UnhealthyThreshold)
	case m.Type == intstr.String:
		return why + fmt.Sprintf(", more than maxUnhealthy %s (%d)", m.StrVal, c.cfg.Zones.maxUnhealthy(z.Size))
	default:
		return why + fmt.Sprintf(", more than maxUnhealthy %d", m.IntVal)
	}
}

// ZoneName renders a zone key (region + ":\x00:" + zone, see
// zonestate.Key) for labels and messages: "zone", or "region/zone".
func ZoneName(key string) string {
	region, zone, ok := strings.Cut(key, ":\x00:")
	if !ok {
		return strings.ReplaceAll(key, "\x00", "")
	}
	if region == "" {
		return zone
	}
	return region + "/" + zone
}

// nodeRef is a reference to a node for events, without a read.
func nodeRef(name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// view is the node as the controller's decisions see it: in dry-run mode,
// with the taints it would have written.
func (c *Controller) view(node *v1.Node) *v1.Node {
	if !c.cfg.DryRun {
		return node
	}
	c.mu.Lock()
	dry := c.dryTaints[node.Name]
	c.mu.Unlock()
	if len(dry) == 0 {
		return node
	}
	n := node.DeepCopy()
	for _, t := range dry {
		n, _ = taints.AddOrUpdate(n, t, t.TimeAdded.Time)
	}
	return n
}

// isManaged reports whether t is one of the table's taints (key and effect).
func (c *Controller) isManaged(t *v1.Taint) bool { return containsTaint(c.managed, t) }

// evictorTaints are the node's NoExecute taints this controller manages:
// the Evictor acts on those only (node.kubernetes.io/* are
// kube-controller-manager's).
func (c *Controller) evictorTaints(node *v1.Node) []v1.Taint {
	var out []v1.Taint
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == v1.TaintEffectNoExecute && c.isManaged(t) {
			out = append(out, *t)
		}
	}
	return out
}

// unhealthy reports whether the node's conditions call for one of the
// table's taints, given For's answer.
func (c *Controller) unhealthy(node *v1.Node, add, remove []v1.Taint) bool {
	if len(add) > 0 {
		return true
	}
	have := 0
	for i := range node.Spec.Taints {
		if c.isManaged(&node.Spec.Taints[i]) {
			have++
		}
	}
	return have > len(remove)
}

// kick asks for a zone pass and queue processing now.
func (c *Controller) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// evictionsEvent is the one event that asks for ReconcileEvictions.
var evictionsEvent = event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "evictions"}}}

// kickEvictions asks ReconcileEvictions to run.
func (c *Controller) kickEvictions() {
	if !c.cfg.EvictPods {
		return
	}
	select {
	case c.evictionsCh <- evictionsEvent:
	default:
	}
}

// ReconcileNode handles one node: a taint whose condition cleared is
// removed at once (removal is never rate limited, as upstream); a node
// whose condition calls for a taint is queued in its zone's queue (tainted
// later by Step, at the zone's rate); the Evictor learns the node's
// NoExecute taints.
func (c *Controller) ReconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	node := &v1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			c.forgetNode(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !c.selector.Matches(labels.Set(node.Labels)) {
		c.forgetNode(node.Name)
		return reconcile.Result{}, nil
	}
	view := c.view(node)
	add, remove := c.table.For(view, now)
	if len(remove) > 0 {
		var err error
		if view, err = c.untaint(ctx, now, view, remove, ReasonUntainted, ReasonWouldUntaint, DecisionUntainted, "condition cleared"); err != nil {
			return reconcile.Result{}, err
		}
	}
	zone := c.groupKey(node)
	c.mu.Lock()
	old, had := c.nodeZone[node.Name]
	c.nodeZone[node.Name] = zone
	c.mu.Unlock()
	if had && old != zone {
		if q, ok := c.queues.Get(old); ok {
			q.Remove(node.Name)
		}
	}
	// A zone pass is due when the node joined its queue, or when its zone
	// has no queue yet (only ZonePass creates one); a node already waiting
	// is tainted when the queue's deadline wakes the loop.
	q, haveQueue := c.queues.Get(zone)
	queued := haveQueue && c.enqueue(now, q, view, zone, add)
	if len(add) > 0 && (!haveQueue || queued) {
		c.kick()
	}
	noExecute := c.evictorTaints(view)
	c.evictor.SetNodeTaints(now, node.Name, noExecute)
	if len(noExecute) == 0 {
		c.releaseHeld(now, node.Name)
	}
	c.kickEvictions()
	return reconcile.Result{}, nil
}

// enqueue puts the node in its zone's queue when add is not empty, and
// takes it out (forgetting a done mark) when it is. It reports whether the
// node joined the queue now.
func (c *Controller) enqueue(now time.Time, q *evictionqueue.Queue[string], node *v1.Node, zone string, add []v1.Taint) (added bool) {
	if len(add) == 0 {
		q.Remove(node.Name)
		c.mu.Lock()
		delete(c.waiting, node.Name)
		c.mu.Unlock()
		return false
	}
	if !q.Add(now, node.Name, node.UID) {
		return false
	}
	c.metrics.decision(DecisionQueued, c.cfg.DryRun)
	c.rec.Eventf(nodeRef(node.Name, node.UID), nil, v1.EventTypeNormal, ReasonQueued, "Queue",
		"%s: queued for %s in %s", c.describeAdd(node, add), taintList(add), c.groupDesc(zone))
	return true
}

// describeAdd names the conditions behind the taints.
func (c *Controller) describeAdd(node *v1.Node, add []v1.Taint) string {
	var parts []string
	for _, r := range c.cfg.Conditions {
		for i := range node.Status.Conditions {
			cond := &node.Status.Conditions[i]
			if string(cond.Type) != r.Type || string(cond.Status) != r.Status {
				continue
			}
			for _, t := range add {
				if t.Key == r.Taint.Key && string(t.Effect) == r.Taint.Effect {
					parts = append(parts, r.Type+"="+r.Status)
				}
			}
		}
	}
	if len(parts) == 0 {
		return "conditions"
	}
	return strings.Join(parts, ", ")
}

func taintList(ts []v1.Taint) string {
	s := make([]string, len(ts))
	for i := range ts {
		s[i] = ts[i].ToString()
	}
	return strings.Join(s, ", ")
}

// untaint removes ts from node (in dry-run mode: from the taints it would
// have) and records the decision. It returns the node as it is now.
func (c *Controller) untaint(ctx context.Context, now time.Time, node *v1.Node, ts []v1.Taint, reason, dryReason, decision, why string) (*v1.Node, error) {
	updated := node
	for _, t := range ts {
		updated, _ = taints.Remove(updated, t)
	}
	if c.cfg.DryRun {
		c.mu.Lock()
		dry := c.dryTaints[node.Name][:0:0]
		for _, t := range c.dryTaints[node.Name] {
			if !containsTaint(ts, &t) {
				dry = append(dry, t)
			}
		}
		if len(dry) == 0 {
			delete(c.dryTaints, node.Name)
		} else {
			c.dryTaints[node.Name] = dry
		}
		c.mu.Unlock()
		c.metrics.decision(decision, true)
		c.rec.Eventf(nodeRef(node.Name, node.UID), nil, v1.EventTypeNormal, dryReason, "Untaint", "dry run: would remove %s (%s)", taintList(ts), why)
		return updated, nil
	}
	if err := c.client.Patch(ctx, updated, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		return node, fmt.Errorf("remove taints %s from node %s: %w", taintList(ts), node.Name, err)
	}
	c.metrics.decision(decision, false)
	c.rec.Eventf(nodeRef(node.Name, node.UID), nil, v1.EventTypeNormal, reason, "Untaint", "removed %s (%s)", taintList(ts), why)
	c.log.Info("removed taints", "node", node.Name, "taints", taintList(ts), "why", why)
	return updated, nil
}

func containsTaint(ts []v1.Taint, t *v1.Taint) bool {
	return slices.ContainsFunc(ts, func(x v1.Taint) bool { return x.MatchTaint(t) })
}

// forgetNode drops a deleted (or no longer selected) node.
func (c *Controller) forgetNode(name string) {
	c.mu.Lock()
	zone, ok := c.nodeZone[name]
	delete(c.nodeZone, name)
	delete(c.waiting, name)
	delete(c.dryTaints, name)
	c.mu.Unlock()
	if ok {
		if q, ok := c.queues.Get(zone); ok {
			q.Remove(name)
		}
	}
	c.evictor.DeleteNode(name)
	c.releaseHeld(c.clock.Now(), name)
	c.kick()
}
