package monitor

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cluster is everything the Monitor reads from and writes to the cluster.
// examples/nodecontroller implements it with client-go informer caches and a
// clientset; examples/policysim with an in-memory virtual cluster.
//
// Reads come from a cache and may lag the writes; the Monitor copes with that
// the way upstream does (a decision made on stale data is made again on the
// next pass). Objects returned by reads are shared and must not be mutated.
// Writes report a missing object with an error for which
// apierrors.IsNotFound is true.
type Cluster interface {
	// ListNodes returns every node.
	ListNodes() []*v1.Node
	// GetNode returns the node, or nil when it does not exist.
	GetNode(name string) *v1.Node
	// GetLease returns the node's Lease in kube-node-lease, or nil.
	GetLease(name string) *coordinationv1.Lease
	// ListPodsOnNode returns the pods whose spec.nodeName is name.
	ListPodsOnNode(name string) []*v1.Pod

	// UpdateNodeStatus writes status as the node's status (UpdateStatus).
	UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error
	// UpdateNodeTaints reads the node, applies mutate, and writes the result
	// with optimistic concurrency when mutate reports a change, re-reading
	// and re-applying on a conflict. It returns the node as written (or as
	// read, when nothing changed).
	UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error)
	// UpdatePodStatus writes status as the pod's status.
	UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error
	// EvictPod adds cond to the pod's status when it is not there yet (nil
	// cond: skip) and deletes the pod, with a UID precondition when uid is
	// not empty.
	EvictPod(ctx context.Context, pod types.NamespacedName, uid types.UID, cond *v1.PodCondition) error
}
