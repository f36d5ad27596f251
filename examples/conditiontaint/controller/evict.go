package controller

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if pod.DeletionTimestamp != nil {
		c.evictor.DeletePod(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	c.evictor.SetPod(now, pod)
	c.kickEvictions()
	return reconcile.Result{}, nil
}

// ReconcileEvictions performs the Evictor's due evictions (one request key,
// triggered by the node and pod reconcilers) and asks to run again at the
// Evictor's NextDeadline.
func (c *Controller) ReconcileEvictions(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	for _, x := range c.evictor.Due(now) {
		c.evict(ctx, now, x)
	}
	c.metrics.ScheduledEvicts.Set(float64(c.evictor.Len()))
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
