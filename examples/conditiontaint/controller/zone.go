package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Step is one turn of the zone Runnable: a zone pass, then the taints the
// zone rates allow. It returns when the queues next have work (false: none
// pending at a positive rate). The zone pass runs first every time, so no
// taint is written on a zone decision older than the cache.
func (c *Controller) Step(ctx context.Context) (time.Time, bool, error) {
	err := c.ZonePass(ctx)
	next, ok := c.ProcessQueues(ctx)
	return next, ok, err
}

// ZonePass counts every selected node per group (a zone, or a value of the
// GroupBy label; a node is unhealthy when a condition calls for one of the
// table's taints; nodes labelled ExcludeDisruptionLabel are not counted),
// decides each group's rate and breaker state
// (zonestate.Tracker.UpdateCounts, and MaxUnhealthy when set), applies the
// rates to the group queues, and brings the queues in line with the nodes:
// every node that needs a taint is queued, every other one is taken out.
// When every group is fully unhealthy (full disruption mode) it removes the
// controller's taints from every node, as upstream does for its own. With
// PauseEvictions it records which groups' evictions are paused, and wakes
// the eviction reconciler when that changes.
func (c *Controller) ZonePass(ctx context.Context) error {
	start := time.Now()
	defer func() { c.metrics.ZonePassDuration.Observe(time.Since(start).Seconds()) }()
	now := c.clock.Now()
	var list v1.NodeList
	if err := c.client.List(ctx, &list, client.MatchingLabelsSelector{Selector: c.selector}); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	type entry struct {
		node *v1.Node
		zone string
		add  []v1.Taint
	}
	entries := make([]entry, 0, len(list.Items))
	counts := map[string]zonestate.ZoneHealth{}
	for i := range list.Items {
		node := c.view(&list.Items[i])
		add, remove := c.table.For(node, now)
		zone := c.groupKey(node)
		entries = append(entries, entry{node, zone, add})
		if _, excluded := node.Labels[ExcludeDisruptionLabel]; excluded {
			continue
		}
		h := counts[zone]
		h.Size++
		if c.unhealthy(node, add, remove) {
			h.Unhealthy++
		}
		counts[zone] = h
	}
	d := c.tracker.UpdateCounts(counts)
	if c.cfg.Zones.MaxUnhealthy != nil {
		c.applyMaxUnhealthy(&d)
	}
	applyErr := c.queues.Apply(now, d)

	c.mu.Lock()
	first := c.lastPass.IsZero()
	for _, z := range d.Zones {
		c.zones[z.Key] = z
	}
	for _, k := range d.Removed {
		delete(c.zones, k)
	}
	c.full = d.InFullDisruption
	c.lastPass = now
	type pauseChange struct {
		key    string
		paused bool
		why    string
	}
	var changes []pauseChange
	if c.cfg.Zones.PauseEvictions {
		for _, k := range d.Removed {
			delete(c.paused, k)
		}
		for _, z := range d.Zones {
			why, paused := c.groupPausedLocked(z.Key)
			if paused != c.paused[z.Key] {
				changes = append(changes, pauseChange{z.Key, paused, why})
			}
			c.paused[z.Key] = paused
		}
	}
	c.mu.Unlock()
	for _, ch := range changes {
		if ch.paused {
			c.log.Info("evictions paused", "group", ZoneName(ch.key), "why", ch.why)
		} else {
			c.log.Info("evictions resumed", "group", ZoneName(ch.key))
		}
	}
	if len(changes) > 0 || (first && c.cfg.Zones.PauseEvictions) {
		c.kickEvictions()
	}

	for _, z := range d.Zones {
		name := ZoneName(z.Key)
		c.metrics.ZoneSize.WithLabelValues(name).Set(float64(z.Size))
		c.metrics.ZoneUnhealthy.WithLabelValues(name).Set(float64(z.NotReady))
		c.metrics.ZoneRate.WithLabelValues(name).Set(z.QPS)
		for _, s := range []zonestate.State{zonestate.StateNormal, zonestate.StatePartialDisruption, zonestate.StateFullDisruption} {
			v := 0.0
			if s == z.State {
				v = 1
			}
			c.metrics.ZoneState.WithLabelValues(name, s.String()).Set(v)
		}
		if c.cfg.Zones.PauseEvictions {
			c.mu.Lock()
			v := 0.0
			if c.paused[z.Key] {
				v = 1
			}
			c.mu.Unlock()
			c.metrics.ZoneEvictionsPaused.WithLabelValues(name).Set(v)
		}
		if z.State != z.Previous && z.Previous != zonestate.StateInitial {
			c.log.Info("zone state changed", "zone", name, "from", z.Previous.String(), "to", z.State.String(),
				"unhealthy", z.NotReady, "size", z.Size, "rate", z.QPS)
		}
	}
	for _, k := range d.Removed {
		c.metrics.forgetZone(ZoneName(k))
	}
	full := 0.0
	if d.InFullDisruption {
		full = 1
	}
	c.metrics.FullDisruption.Set(full)

	var errs []error
	if applyErr != nil {
		errs = append(errs, applyErr)
	}
	if d.EnteredFullDisruption {
		c.log.Info("every zone is fully unhealthy: full disruption mode, removing this controller's taints and tainting nothing")
	}
	for _, e := range entries {
		if d.EnteredFullDisruption {
			var own []v1.Taint
			for i := range e.node.Spec.Taints {
				if c.isManaged(&e.node.Spec.Taints[i]) {
					own = append(own, e.node.Spec.Taints[i])
				}
			}
			if len(own) > 0 {
				updated, err := c.untaint(ctx, now, e.node, own, ReasonBreakerUntaint, ReasonBreakerUntaint, DecisionBreakerUntaint,
					"every zone is fully unhealthy: full disruption mode")
				if err != nil {
					errs = append(errs, err)
				} else {
					// The node reconciler would tell the Evictor on the
					// update's watch event; a dry run writes nothing to watch.
					c.evictor.SetNodeTaints(now, e.node.Name, c.evictorTaints(updated))
				}
				e.node = updated
				e.add, _ = c.table.For(updated, now)
			}
		}
		c.mu.Lock()
		c.nodeZone[e.node.Name] = e.zone
		rate, known := c.rateLocked(e.zone)
		c.mu.Unlock()
		if !known {
			// A group of excluded nodes only has no decision: the normal rate
			// (0 in full disruption mode).
			rate = c.cfg.Zones.Rate
			if d.InFullDisruption {
				rate = 0
			}
		}
		q, err := c.queues.Ensure(now, e.zone, rate)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.enqueue(now, q, e.node, e.zone, e.add)
	}
	return errors.Join(errs...)
}

// applyMaxUnhealthy trips, in d, the groups with more unhealthy nodes than
// MaxUnhealthy allows: the Tracker (at threshold 1, see Config.policy)
// decides only Normal and FullDisruption, and full disruption mode. A
// tripped group's rate is 0. Previous is the state the Controller last
// decided, and every rate is applied again (SetRate ignores an unchanged
// one), since the Tracker's own last rate may differ.
func (c *Controller) applyMaxUnhealthy(d *zonestate.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range d.Zones {
		z := &d.Zones[i]
		if last, ok := c.zones[z.Key]; ok && z.Previous != zonestate.StateInitial {
			z.Previous = last.State
		}
		if z.State == zonestate.StateNormal && z.NotReady > c.cfg.Zones.maxUnhealthy(z.Size) {
			z.State, z.QPS = zonestate.StatePartialDisruption, 0
		}
		z.RateChanged = true
	}
}

// groupPausedLocked says whether the evictions on the group's nodes are
// paused, and why: PauseEvictions is set and the group is tripped
// (PartialDisruption or FullDisruption), every group is in full disruption
// mode, or no zone pass has run yet. c.mu must be held.
func (c *Controller) groupPausedLocked(key string) (string, bool) {
	switch z, ok := c.zones[key]; {
	case !c.cfg.Zones.PauseEvictions:
		return "", false
	case c.lastPass.IsZero():
		return "no zone pass has run yet", true
	case c.full:
		return "every zone is fully unhealthy (full disruption mode)", true
	case ok && (z.State == zonestate.StatePartialDisruption || z.State == zonestate.StateFullDisruption):
		return c.breakerWhy(key, z), true
	}
	return "", false
}

// rateLocked is the zone's current rate; c.mu must be held.
func (c *Controller) rateLocked(zone string) (float64, bool) {
	if c.full {
		return 0, true
	}
	z, ok := c.zones[zone]
	return z.QPS, ok
}

// ProcessQueues taints the queued nodes each zone's rate allows now, then
// reports, once per node and reason, why each still-queued node waits:
// held by the breaker (the zone's rate is 0) or waiting for the zone rate.
// It returns the queues' next deadline.
func (c *Controller) ProcessQueues(ctx context.Context) (time.Time, bool) {
	now := c.clock.Now()
	c.queues.Each(func(zone string, q *evictionqueue.Queue[string]) bool {
		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			return c.taintNode(ctx, now, zone, it)
		})
		c.reportWaiting(zone, q)
		return true
	})
	return c.queues.NextDeadline()
}

// reportWaiting records one event per node and reason change for the
// nodes still queued in zone, and the pending_nodes gauge.
func (c *Controller) reportWaiting(zone string, q *evictionqueue.Queue[string]) {
	items := q.Items()
	c.mu.Lock()
	rate, _ := c.rateLocked(zone)
	z := c.zones[zone]
	full := c.full
	type ev struct {
		it     evictionqueue.Item[string]
		reason string
		ahead  int // its position in the queue
	}
	var evs []ev
	reason := ReasonWaitingForRate
	if rate == 0 {
		reason = ReasonHeldByBreaker
	}
	for i, it := range items {
		if c.waiting[it.Key] != reason {
			c.waiting[it.Key] = reason
			evs = append(evs, ev{it, reason, i})
		}
	}
	c.mu.Unlock()
	name := ZoneName(zone)
	held, waiting := 0, 0
	if reason == ReasonHeldByBreaker {
		held = len(items)
	} else {
		waiting = len(items)
	}
	c.metrics.Pending.WithLabelValues(name, DecisionHeldByBreaker).Set(float64(held))
	c.metrics.Pending.WithLabelValues(name, DecisionWaitingForRate).Set(float64(waiting))
	next, hasNext := q.NextDeadline()
	for _, e := range evs {
		ref := nodeRef(e.it.Key, e.it.UID)
		if e.reason == ReasonHeldByBreaker {
			c.metrics.decision(DecisionHeldByBreaker, c.cfg.DryRun)
			why := c.breakerWhy(zone, z)
			switch {
			case full:
				why = "every zone is fully unhealthy (full disruption mode)"
			case z.State == zonestate.StateNormal:
				why = fmt.Sprintf("%s's rate is 0 (zones.rate)", c.groupDesc(zone))
			}
			c.rec.Eventf(ref, nil, v1.EventTypeWarning, ReasonHeldByBreaker, "Hold", "not tainting: %s", why)
			continue
		}
		c.metrics.decision(DecisionWaitingForRate, c.cfg.DryRun)
		when := "unknown"
		if hasNext {
			when = next.UTC().Format(time.RFC3339)
		}
		c.rec.Eventf(ref, nil, v1.EventTypeNormal, ReasonWaitingForRate, "Wait",
			"waiting for %s's rate of %v nodes/s: %d queued ahead, next taint at %s", c.groupDesc(zone), rate, e.ahead, when)
	}
}

// taintNode is the zone queue's callback: it re-reads the node around the
// cache and writes the taints its conditions call for (in dry-run mode,
// records them only).
func (c *Controller) taintNode(ctx context.Context, now time.Time, zone string, it evictionqueue.Item[string]) (bool, time.Duration) {
	node := &v1.Node{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: it.Key}, node); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return true, 0
		}
		c.log.Error(err, "read node to taint", "node", it.Key)
		return false, conflictRetryInterval
	}
	if node.UID != it.UID || !c.selector.Matches(labels.Set(node.Labels)) {
		return true, 0
	}
	view := c.view(node)
	add, _ := c.table.For(view, now)
	c.mu.Lock()
	delete(c.waiting, node.Name)
	c.mu.Unlock()
	if len(add) == 0 {
		return true, 0
	}
	why := c.describeAdd(node, add)
	if c.cfg.DryRun {
		c.mu.Lock()
		c.dryTaints[node.Name] = append(c.dryTaints[node.Name], add...)
		c.mu.Unlock()
		c.metrics.decision(DecisionTainted, true)
		c.rec.Eventf(nodeRef(node.Name, node.UID), nil, v1.EventTypeNormal, ReasonWouldTaint, "Taint",
			"dry run: would add %s (%s; %s)", taintList(add), why, c.groupDesc(zone))
		c.evictor.SetNodeTaints(now, node.Name, c.evictorTaints(c.view(node)))
		c.kickEvictions()
		return true, 0
	}
	updated := node
	for _, t := range add {
		updated, _ = taints.AddOrUpdate(updated, t, now)
	}
	if err := c.client.Patch(ctx, updated, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		c.log.Error(err, "taint node", "node", node.Name)
		return false, conflictRetryInterval
	}
	c.metrics.decision(DecisionTainted, false)
	c.rec.Eventf(nodeRef(node.Name, node.UID), nil, v1.EventTypeNormal, ReasonTainted, "Taint",
		"added %s (%s; %s)", taintList(add), why, c.groupDesc(zone))
	c.log.Info("tainted node", "node", node.Name, "taints", taintList(add), "zone", ZoneName(zone))
	c.evictor.SetNodeTaints(now, node.Name, c.evictorTaints(updated))
	c.kickEvictions()
	return true, 0
}

// Start is the zone Runnable (it needs leader election): after the cache
// synced it runs Step every PassPeriod, at the queues' next deadline, and
// whenever a node reconcile queued a node.
func (c *Controller) Start(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-c.wake:
		}
		next, ok, err := c.Step(ctx)
		if err != nil {
			c.log.Error(err, "zone pass")
		}
		d := c.cfg.PassPeriod.Duration
		if ok {
			d = min(d, next.Sub(c.clock.Now()))
		}
		timer.Reset(max(d, 10*time.Millisecond))
	}
}

// NeedLeaderElection makes Start run on the leader only.
func (c *Controller) NeedLeaderElection() bool { return true }

// Explain says what the Evictor will do with a pod, and why.
func (c *Controller) Explain(pod client.ObjectKey) taints.Explanation {
	return c.evictor.Explain(c.clock.Now(), pod)
}
