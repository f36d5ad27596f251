package controller

import (
	v1 "k8s.io/api/core/v1"
)

// Kubernetes Event reasons, upstream's (k8s.io/cloud-provider v0.37.2,
// node_lifecycle_controller.go, MonitorNodes; unchanged since v0.36),
// recorded with source component Name.
const (
	// ReasonDeletingNode (Normal) is recorded on a Node just before it is
	// deleted: "Deleting node <name> because it does not exist in the cloud
	// provider".
	ReasonDeletingNode = "DeletingNode"
	// ReasonDeletingNodeFailed (Warning) is recorded when the deletion
	// fails: "Failed deleting node <name>: <error>".
	ReasonDeletingNodeFailed = "DeletingNodeFailed"
)

// nodeRef references the node as upstream's Events do: API version v1,
// kind Node, name and UID (an Event without involvedObject.apiVersion is
// one upstream's Test_NodesShutdown rejects).
func nodeRef(n *v1.Node) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
}

func (c *Controller) event(ref *v1.ObjectReference, typ, reason, format string, args ...any) {
	if c.cfg.Recorder != nil {
		c.cfg.Recorder.Eventf(ref, typ, reason, format, args...)
	}
}
