package controller

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// Kubernetes Event reasons the controller records, the ones upstream's node
// lifecycle and taint eviction controllers use for the same decisions, so
// that dashboards and alerts written for kube-controller-manager keep
// working.
const (
	// ReasonNodeNotReady is recorded on a Node whose Ready condition the
	// controller wrote Unknown ("Node <name> status is now: NodeNotReady"),
	// and as a Warning on each Pod it marks Ready=False ("Node is not
	// ready").
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonTaintManagerEviction is recorded on a Pod deleted because of a
	// NoExecute taint it does not tolerate (any longer) ("Marking for
	// deletion Pod <ns>/<name>"), and on a Pod whose scheduled deletion was
	// cancelled ("Cancelling deletion of Pod <ns>/<name>").
	ReasonTaintManagerEviction = "TaintManagerEviction"
	// ReasonNodeControllerEviction is recorded, in legacy mode, on a Pod
	// deleted because its node was not ready for the pod eviction timeout.
	ReasonNodeControllerEviction = "NodeControllerEviction"
	// ReasonRegisteredNode is recorded on a Node the first monitor pass
	// that sees it ("Node <name> event: Registered Node <name> in
	// Controller").
	ReasonRegisteredNode = "RegisteredNode"
	// ReasonRemovingNode is recorded on a Node the first monitor pass that
	// no longer sees it ("Node <name> event: Removing Node <name> from
	// Controller").
	ReasonRemovingNode = "RemovingNode"
	// ReasonDeletingAllPods is recorded, in legacy mode, on a Node whose pods
	// are about to be deleted.
	ReasonDeletingAllPods = "DeletingAllPods"
)

// recordEvent records the Kubernetes Event upstream records for e, if any.
// Zone and disruption-mode changes, taint changes and failed writes have no
// upstream Event: they are only logged (Config.OnEvent). The per-pod
// "Node is not ready" warning is recorded by the pod status write
// (cluster.UpdatePodStatus), RegisteredNode and RemovingNode by
// MonitorPass.
func (c *Controller) recordEvent(e monitor.Event) {
	r := c.cfg.Recorder
	switch e.Kind {
	case monitor.KindNodeUnknown:
		r.Eventf(c.nodeRef(e.Node), v1.EventTypeNormal, ReasonNodeNotReady,
			"Node %s status is now: %s", e.Node, ReasonNodeNotReady)
	case monitor.KindNodeEvicting:
		r.Eventf(c.nodeRef(e.Node), v1.EventTypeNormal, ReasonDeletingAllPods,
			"Deleting all Pods from Node %s.", e.Node)
	case monitor.KindPodEvicted:
		ref, name := podRef(e.Pod)
		if c.cfg.Monitor.PodEvictionTimeout > 0 {
			r.Eventf(ref, v1.EventTypeNormal, ReasonNodeControllerEviction,
				"Marking for deletion Pod %s from Node %s", name, e.Node)
			return
		}
		if c.cfg.EvictionRecorder != nil {
			r = c.cfg.EvictionRecorder
		}
		r.Eventf(ref, v1.EventTypeNormal, ReasonTaintManagerEviction,
			"Marking for deletion Pod %s", e.Pod)
	case monitor.KindEvictionCancelled:
		// Upstream emitCancelPodDeletionEvent
		// (pkg/controller/tainteviction/taint_eviction.go).
		ref, _ := podRef(e.Pod)
		if c.cfg.EvictionRecorder != nil {
			r = c.cfg.EvictionRecorder
		}
		r.Eventf(ref, v1.EventTypeNormal, ReasonTaintManagerEviction,
			"Cancelling deletion of Pod %s", e.Pod)
	}
}

// DefaultCancelledEvictions is the Monitor's CancelledEvictions bound New
// sets when Config.Monitor leaves it 0 and a recorder is configured, so that
// upstream's "Cancelling deletion of Pod" TaintManagerEviction Event is
// recorded for every scheduled eviction cancelled (beyond that many pending
// between two reports, which come at least every tainting period, they are
// dropped and counted by the Evictor).
const DefaultCancelledEvictions = 4096

// nodeRef references a node by name, with its UID when the cache has it (an
// Event names its object by UID too, so that a re-created node does not
// inherit the old one's events).
func (c *Controller) nodeRef(name string) *v1.ObjectReference {
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name}
	if n := c.cluster.GetNode(name); n != nil {
		ref.UID = n.UID
	}
	return ref
}

// podRef references a pod from its "namespace/name" key and returns the
// name alone.
func podRef(key string) (*v1.ObjectReference, string) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}, name
}

// recordNodeSetChanges records RegisteredNode for every cached node the
// previous monitor passes did not see and RemovingNode for every one they
// saw that is gone, as upstream's monitorNodeHealth does with classifyNodes
// (pkg/controller/nodelifecycle/node_lifecycle_controller.go), through
// controllerutil.RecordNodeEvent ("Node %s event: %s"). Unlike a set
// built every pass, the stamps allocate nothing while no node comes or
// goes.
func (c *Controller) recordNodeSetChanges() {
	if c.cfg.Recorder == nil {
		return
	}
	nodes := c.cluster.ListNodes()
	c.knownMu.Lock()
	defer c.knownMu.Unlock()
	if c.known == nil {
		c.known = make(map[string]knownNode, len(nodes))
	}
	c.knownPass++
	pass := c.knownPass
	for _, n := range nodes {
		k, ok := c.known[n.Name]
		if !ok {
			k.uid = n.UID
			c.recordNodeEvent(n.Name, n.UID, ReasonRegisteredNode, fmt.Sprintf("Registered Node %v in Controller", n.Name))
		}
		k.seen = pass
		c.known[n.Name] = k
	}
	if len(c.known) == len(nodes) {
		return // every known node was listed
	}
	for name, k := range c.known {
		if k.seen != pass {
			delete(c.known, name)
			c.recordNodeEvent(name, k.uid, ReasonRemovingNode, fmt.Sprintf("Removing Node %v from Controller", name))
		}
	}
}

// knownNode is a node recordNodeSetChanges registered: its UID when first
// seen, and the last call that listed it.
type knownNode struct {
	uid  types.UID
	seen uint64
}

func (c *Controller) recordNodeEvent(name string, uid types.UID, reason, event string) {
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
	c.cfg.Recorder.Eventf(ref, v1.EventTypeNormal, reason, "Node %s event: %s", name, event)
}
