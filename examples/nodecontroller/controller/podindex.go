package controller

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// podsByNode is the pods bound to each node, by namespace and name: what
// the controller's ListPodsOnNode reads, in place of an informer index on
// spec.nodeName. An informer index keeps, per pod, a key string in a set
// per node (about 120 bytes per pod at 30 pods per node); this keeps two
// string headers that share the cached pod's strings (32 bytes). The pod
// handlers keep it up to date (a pod's node changes only from "" when it
// is bound, but any change is followed); the objects themselves are read
// from the informer's store, so a pod's state is never older than the
// cache's, only its membership can trail the store by the handler's
// delivery, as the workqueue's items do. It is safe for concurrent use.
type podsByNode struct {
	mu    sync.RWMutex
	nodes map[string][]types.NamespacedName
}

func newPodsByNode() *podsByNode {
	return &podsByNode{nodes: make(map[string][]types.NamespacedName)}
}

// add records that pod is bound to node ("": not bound, not recorded).
func (x *podsByNode) add(node string, pod types.NamespacedName) {
	if node == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	pods := x.nodes[node]
	if slices.Contains(pods, pod) {
		return
	}
	x.nodes[node] = append(pods, pod)
}

// remove forgets that pod is bound to node; a node left without pods is
// dropped.
func (x *podsByNode) remove(node string, pod types.NamespacedName) {
	if node == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	pods := x.nodes[node]
	i := slices.Index(pods, pod)
	if i < 0 {
		return
	}
	if len(pods) == 1 {
		delete(x.nodes, node)
		return
	}
	last := len(pods) - 1
	pods[i] = pods[last]
	pods[last] = types.NamespacedName{}
	pods = pods[:last]
	if cap(pods) > 2*len(pods)+8 {
		pods = slices.Clip(slices.Clone(pods)) // release most of a shrunk node's array
	}
	x.nodes[node] = pods
}

// list returns a copy of the pods bound to node, in no particular order.
func (x *podsByNode) list(node string) []types.NamespacedName {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.nodes[node])
}
