package controller

import (
	"errors"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// SetupWithManager registers the Node reconciler, the Pod and eviction
// reconcilers (when EvictPods is set) and the zone Runnable with mgr.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).Named("conditiontaint-node").For(&v1.Node{}).
		Complete(reconcile.Func(c.ReconcileNode)); err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	if c.cfg.EvictPods {
		if err := ctrl.NewControllerManagedBy(mgr).Named("conditiontaint-pod").For(&v1.Pod{}).
			Complete(reconcile.Func(c.ReconcilePod)); err != nil {
			return fmt.Errorf("pod controller: %w", err)
		}
		if err := ctrl.NewControllerManagedBy(mgr).Named("conditiontaint-eviction").
			WatchesRawSource(source.Channel(c.evictionsCh, &handler.TypedEnqueueRequestForObject[client.Object]{})).
			Complete(reconcile.Func(c.ReconcileEvictions)); err != nil {
			return fmt.Errorf("eviction controller: %w", err)
		}
	}
	return mgr.Add(c)
}

// Healthz fails when the zone loop, once started, has not completed a pass
// for ten pass periods (plus a minute): the leader's loop is stuck.
func (c *Controller) Healthz(_ *http.Request) error {
	c.mu.Lock()
	last := c.lastPass
	c.mu.Unlock()
	if last.IsZero() {
		return nil
	}
	if late := c.clock.Since(last); late > 10*c.cfg.PassPeriod.Duration+60e9 {
		return errors.New("conditiontaint: no zone pass for " + late.String())
	}
	return nil
}
