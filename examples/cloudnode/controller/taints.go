package controller

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/kubelifecycle/lifecycle/taints"
)

var (
	// shutdownTaint is upstream's ShutdownTaint.
	shutdownTaint = &v1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: v1.TaintEffectNoSchedule}
	// uninitializedTaint is upstream's UninitializedTaint.
	uninitializedTaint = &v1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}
)

func hasTaint(n *v1.Node, t *v1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(t) {
			return true
		}
	}
	return false
}

// setShutdownTaint adds (on) or removes the shutdown taint with a
// read-modify-write: the first read is the cached node, later ones (after a
// conflict) come from the API server. The write is a strategic-merge patch
// of the whole taint list carrying the resourceVersion that was read, so it
// fails with a conflict if anyone changed the node since: no write is
// blind, and no other writer's taint is lost.
func (c *Controller) setShutdownTaint(ctx context.Context, n *v1.Node, on bool) {
	node, first, wrote := n, true, false
	err := retry.RetryOnConflict(c.conflictBackoff(), func() error {
		if !first {
			var err error
			node, err = c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if node.UID != n.UID {
				return nil // another node by the same name now
			}
		}
		first = false
		if hasTaint(node, shutdownTaint) == on {
			return nil
		}
		updated, _ := taints.Remove(node, *shutdownTaint)
		if on {
			updated, _ = taints.AddOrUpdate(updated, *shutdownTaint, time.Time{})
		}
		patch, err := taintPatch(node.ResourceVersion, updated.Spec.Taints)
		if err != nil {
			return err
		}
		_, err = c.client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: Name})
		wrote = err == nil
		return err
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		if !apierrors.IsNotFound(err) {
			c.stats.TaintFailures++
			klog.FromContext(ctx).Error(err, "Updating the shutdown taint, will retry next pass", "node", n.Name, "add", on)
		}
	case !wrote: // after a conflict, the node was found as wanted (or replaced)
	case on:
		c.stats.TaintsAdded++
	default:
		c.stats.TaintsRemoved++
	}
}

func (c *Controller) conflictBackoff() wait.Backoff {
	b := c.cfg.ConflictBackoff
	b.Steps = max(b.Steps, 1)
	return b
}

// taintPatch is the strategic-merge patch that sets spec.taints and
// requires resourceVersion rv. Nil taints delete the field.
func taintPatch(rv string, taints []v1.Taint) ([]byte, error) {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion,omitempty"`
		} `json:"metadata"`
		Spec struct {
			Taints []v1.Taint `json:"taints"`
		} `json:"spec"`
	}
	p.Metadata.ResourceVersion = rv
	p.Spec.Taints = taints
	return json.Marshal(&p)
}
