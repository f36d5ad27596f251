package controller

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
)

// ReconcilePod feeds one pod to the Evictor: its node and tolerations, or
// its deletion.
func (c *Controller) ReconcilePod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	pod := &v1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			c.evictor.DeletePod(req.NamespacedName)
			c.forgetHeld(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if pod.DeletionTimestamp != nil {
		c.evictor.DeletePod(req.NamespacedName)
		c.forgetHeld(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	c.evictor.SetPod(now, pod)
	c.kickEvictions()
	return reconcile.Result{}, nil
}

// ReconcileEvictions performs the Evictor's due evictions (one request key,
// triggered by the node and pod reconcilers and the zone pass) and asks to
// run again at the Evictor's NextDeadline. With PauseEvictions, a due
// eviction on a node of a tripped group is held (event
// ConditionTaintEvictionPaused, once) and handed back to the Evictor when
// the group recovers, which evaluates it again: a pod whose node lost the
// taint meanwhile stays.
func (c *Controller) ReconcileEvictions(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	c.resumeHeld(now)
	for _, x := range c.evictor.Due(now) {
		if why, paused := c.nodePaused(x.Node); paused {
			c.hold(ctx, x, why)
			continue
		}
		c.evict(ctx, now, x)
	}
	c.metrics.ScheduledEvicts.Set(float64(c.evictor.Len()))
	c.mu.Lock()
	held := len(c.held)
	c.mu.Unlock()
	c.metrics.PausedEvicts.Set(float64(held))
	next, ok := c.evictor.NextDeadline()
	if !ok {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(next.Sub(c.clock.Now()), time.Millisecond)}, nil
}

// evict performs one eviction: the DisruptionTarget condition, then a
// delete with a UID precondition (in dry-run mode: an event only).
func (c *Controller) evict(ctx context.Context, now time.Time, x taints.Eviction) {
	pod := &v1.Pod{}
	if err := c.client.Get(ctx, x.Pod, pod); err != nil || pod.UID != x.UID || pod.DeletionTimestamp != nil {
		if err == nil || apierrors.IsNotFound(err) {
			c.metrics.decision(DecisionEvictionSkipped, c.cfg.DryRun)
			c.evictor.DoneEviction(x)
			return
		}
		c.evictor.RetryEviction(now, x, evictionRetryInterval)
		return
	}
	why := c.evictor.Explain(now, x.Pod).String()
	if c.cfg.DryRun {
		c.metrics.decision(DecisionEvicted, true)
		c.rec.Eventf(pod, nil, v1.EventTypeNormal, ReasonWouldEvict, "Evict", "dry run: would delete pod %s (%s)", x.Pod, why)
		c.evictor.DoneEviction(x)
		return
	}
	if status, ok := nodehealth.DisruptionTargetStatus(now, pod); ok {
		updated := pod.DeepCopy()
		updated.Status = *status
		// A strategic merge patch merges conditions by type, as upstream
		// PatchPodStatus does (a JSON merge patch would replace the list).
		if err := c.client.Status().Patch(ctx, updated, client.StrategicMergeFrom(pod)); err != nil && !apierrors.IsNotFound(err) {
			c.failed(now, pod, x, err)
			return
		}
	}
	uid := x.UID
	if err := c.client.Delete(ctx, pod, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.failed(now, pod, x, err)
		return
	}
	c.metrics.decision(DecisionEvicted, false)
	c.rec.Eventf(pod, nil, v1.EventTypeNormal, ReasonEvicted, "Evict", "Marking for deletion Pod %s (%s)", x.Pod, why)
	c.log.Info("evicted pod", "pod", x.Pod, "node", x.Node, "reason", x.Reason.String())
	c.evictor.DoneEviction(x)
}

func (c *Controller) failed(now time.Time, pod *v1.Pod, x taints.Eviction, err error) {
	c.metrics.decision(DecisionEvictionFailed, c.cfg.DryRun)
	c.rec.Eventf(pod, nil, v1.EventTypeWarning, ReasonEvictionFailed, "Evict", "deleting pod %s failed (attempt %d), retrying in %v: %v", x.Pod, x.Attempt, evictionRetryInterval, err)
	c.evictor.RetryEviction(now, x, evictionRetryInterval)
}

// nodePaused says whether evictions on the node are paused, and why.
func (c *Controller) nodePaused(node string) (string, bool) {
	if !c.cfg.Zones.PauseEvictions {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodePausedLocked(node)
}

// nodePausedLocked is nodePaused with c.mu held.
func (c *Controller) nodePausedLocked(node string) (string, bool) {
	group, ok := c.nodeZone[node]
	if !ok && !c.lastPass.IsZero() {
		return "", false
	}
	return c.groupPausedLocked(group)
}

// hold keeps a due eviction, handed out by the Evictor, until its group
// recovers; the first time, it records why.
func (c *Controller) hold(ctx context.Context, x taints.Eviction, why string) {
	c.mu.Lock()
	old, had := c.held[x.Pod]
	c.held[x.Pod] = x
	c.mu.Unlock()
	if had && old.UID == x.UID {
		return
	}
	c.metrics.decision(DecisionEvictionPaused, c.cfg.DryRun)
	pod := &v1.Pod{}
	var ref runtime.Object = &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: x.Pod.Namespace, Name: x.Pod.Name, UID: x.UID}
	if err := c.client.Get(ctx, x.Pod, pod); err == nil && pod.UID == x.UID {
		ref = pod
	}
	c.rec.Eventf(ref, nil, v1.EventTypeWarning, ReasonEvictionPaused, "Evict",
		"not evicting pod %s (due since %s: %s): %s; held until evictions resume (zones.pauseEvictions)",
		x.Pod, x.At.UTC().Format(time.RFC3339), x.Reason, why)
}

// resumeHeld hands the held evictions of the groups no longer paused back
// to the Evictor, due now if the pod must still go.
func (c *Controller) resumeHeld(now time.Time) {
	c.mu.Lock()
	var resume []taints.Eviction
	for k, x := range c.held {
		if _, paused := c.nodePausedLocked(x.Node); !paused {
			resume = append(resume, x)
			delete(c.held, k)
		}
	}
	c.mu.Unlock()
	for _, x := range resume {
		c.evictor.RetryEviction(now, x, 0)
	}
}

// releaseHeld hands back the held evictions on a node that lost its
// NoExecute taints (or was deleted): the Evictor drops them.
func (c *Controller) releaseHeld(now time.Time, node string) {
	c.mu.Lock()
	var release []taints.Eviction
	for k, x := range c.held {
		if x.Node == node {
			release = append(release, x)
			delete(c.held, k)
		}
	}
	c.mu.Unlock()
	for _, x := range release {
		c.evictor.RetryEviction(now, x, 0)
	}
}

// forgetHeld drops a deleted pod's held eviction (the Evictor forgot it).
func (c *Controller) forgetHeld(pod types.NamespacedName) {
	c.mu.Lock()
	delete(c.held, pod)
	c.mu.Unlock()
}

// EvictionPaused reports whether the pod's eviction is due but held
// because its node's group is tripped (ZoneConfig.PauseEvictions), and why.
func (c *Controller) EvictionPaused(pod client.ObjectKey) (string, bool) {
	c.mu.Lock()
	x, ok := c.held[pod]
	c.mu.Unlock()
	if !ok {
		return "", false
	}
	return c.nodePaused(x.Node)
}
