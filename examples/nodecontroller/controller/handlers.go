package controller

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// itemKind says what a queue item names.
type itemKind uint8

const (
	kindNode itemKind = 1 + iota
	kindPod
	kindNodePods
)

// item is a workqueue key: a node name, a pod's namespace and name, or
// (kindNodePods) a node name standing for the pods the initial list found
// on that node. The worker reads the objects' current state from the cache,
// so an item carries no object and repeated events for one object are
// handled once.
type item struct {
	kind      itemKind
	namespace string
	name      string
}

func (c *Controller) onNode(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*v1.Node); ok {
		c.queue.Add(item{kind: kindNode, name: n.Name})
	}
}

// onPodAdd queues a pod the informer added. A pod of the initial list
// that is bound to a node is queued as its node's kindNodePods item, so
// that the initial sync queues one item per node instead of one per pod:
// a workqueue's sets never shrink, and 30,000 pod keys queued at once
// would stay allocated (about 160 bytes per pod) for the life of the
// process. The pods are then handled by node, each as its own item would
// be (handleNodePods).
func (c *Controller) onPodAdd(obj any, isInInitialList bool) {
	node, key, ok := podKey(obj)
	if !ok {
		return
	}
	c.cluster.byNode.add(node, key)
	if isInInitialList && node != "" {
		c.queue.Add(item{kind: kindNodePods, name: node})
		return
	}
	c.queue.Add(item{kind: kindPod, namespace: key.Namespace, name: key.Name})
}

func (c *Controller) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, key, ok := podKey(obj)
	if !ok {
		return
	}
	c.cluster.byNode.remove(node, key)
	c.queue.Add(item{kind: kindPod, namespace: key.Namespace, name: key.Name})
}

// podKey returns the node and the namespace and name of a cached pod (a
// *cachedPod, or a *v1.Pod).
func podKey(obj any) (node string, key types.NamespacedName, ok bool) {
	switch p := obj.(type) {
	case *cachedPod:
		return p.nodeName, types.NamespacedName{Namespace: p.namespace, Name: p.name}, true
	case *v1.Pod:
		return p.Spec.NodeName, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, true
	}
	return "", types.NamespacedName{}, false
}

// onPodUpdate queues a pod only when what the Monitor uses changed: its
// node, its UID (re-created in between) or its tolerations. Status updates,
// including the controller's own Ready=False and DisruptionTarget writes,
// are not queued.
func (c *Controller) onPodUpdate(oldObj, obj any) {
	oldNode, _, _ := podKey(oldObj)
	node, key, ok := podKey(obj)
	if !ok {
		return
	}
	if oldNode != node {
		c.cluster.byNode.remove(oldNode, key)
		c.cluster.byNode.add(node, key)
	}
	old, ok1 := oldObj.(*cachedPod)
	cur, ok2 := obj.(*cachedPod)
	if !ok1 || !ok2 || old.nodeName != cur.nodeName || !old.sameUID(cur) ||
		!slices.EqualFunc(old.tolerationList(), cur.tolerationList(), tolerationEqual) {
		c.queue.Add(item{kind: kindPod, namespace: key.Namespace, name: key.Name})
	}
}

func tolerationEqual(a, b v1.Toleration) bool {
	if a.Key != b.Key || a.Operator != b.Operator || a.Value != b.Value || a.Effect != b.Effect {
		return false
	}
	if a.TolerationSeconds == nil || b.TolerationSeconds == nil {
		return a.TolerationSeconds == nil && b.TolerationSeconds == nil
	}
	return *a.TolerationSeconds == *b.TolerationSeconds
}

// ProcessEvents handles every item queued now, in the calling goroutine, and
// returns how many it handled. Items a failed write put back with a delay
// come back when the clock reaches it. It is for tests that drive the
// controller without Run: it must not be called while Run's workers are
// running (it could block in the queue).
func (c *Controller) ProcessEvents(ctx context.Context) int {
	n := 0
	for c.queue.Len() > 0 && c.processNext(ctx, c.queue) {
		n++
	}
	return n
}

// processNext handles one item of q (the event queue, or the marking
// queue); false when q is shut down.
func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[item]) bool {
	it, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(it)
	if c.handle(ctx, it) {
		q.Forget(it)
		return true
	}
	klog.FromContext(ctx).V(2).Info("Write failed while handling an event, retrying", "kind", it.kind, "namespace", it.namespace, "name", it.name)
	q.AddRateLimited(it)
	return true
}

// handle forwards the object's current cached state to the Monitor. It
// reports false when a write made while handling it failed (a NoSchedule
// condition taint, or a pod's Ready=False), so the item is retried with
// backoff: unlike upstream, which logs such failures and waits for the next
// event.
func (c *Controller) handle(ctx context.Context, it item) bool {
	now := c.clock.Now()
	before := c.cluster.failureCount(it)
	switch it.kind {
	case kindNode:
		node, err := c.cluster.nodes.Get(it.name)
		if apierrors.IsNotFound(err) {
			c.mon.NodeDeleted(it.name)
			c.cluster.forget(it)
			return true
		}
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Reading node from the cache", "node", it.name)
			return false
		}
		c.mon.NodeChanged(ctx, now, node)
	case kindPod:
		pod, err := c.cluster.getPod(it.namespace, it.name)
		if apierrors.IsNotFound(err) {
			c.mon.PodDeleted(types.NamespacedName{Namespace: it.namespace, Name: it.name})
			c.cluster.forget(it)
			return true
		}
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Reading pod from the cache", "pod", it.namespace+"/"+it.name)
			return false
		}
		c.mon.PodChanged(ctx, now, pod)
	case kindNodePods:
		c.handleNodePods(ctx, now, it.name)
	}
	c.wake()
	return c.cluster.failureCount(it) == before
}

// handleNodePods forwards every cached pod of the node to the Monitor, as
// handle does one pod; a pod whose handling made a write fail is queued
// again as its own item, with the workqueue's backoff, so that the node's
// other pods are not handled twice. A pod gone from the cache is not
// listed: its deletion event queues it.
func (c *Controller) handleNodePods(ctx context.Context, now time.Time, node string) {
	for _, pod := range c.cluster.ListPodsOnNode(node) {
		pit := item{kind: kindPod, namespace: pod.Namespace, name: pod.Name}
		before := c.cluster.failureCount(pit)
		c.mon.PodChanged(ctx, now, pod)
		if c.cluster.failureCount(pit) != before {
			c.queue.AddRateLimited(pit)
		}
	}
}
