package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// cluster implements monitor.Cluster with informer caches for the reads and
// the clientset for the writes. It also counts failed writes per object, so
// that the queue worker can retry the event whose handling failed.
type cluster struct {
	clients  Clients // every one set (New fills the nil ones with its client)
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseNamespaceLister
	podIndex cache.Indexer // *cachedPod objects (trim.go)
	byNode   *podsByNode   // the pods of each node (podindex.go)
	backoff  wait.Backoff
	recorder record.EventRecorder // nil: no Events
	live     liveCaches           // live.go: the Lease circuit breaker's reads
	mark     func(item)           // queues a pod for the marking workers (loops.go)

	mu       sync.Mutex
	failures map[item]uint64
}

var (
	_ monitor.Cluster         = (*cluster)(nil)
	_ monitor.NodeLabelWriter = (*cluster)(nil)
)

// failed records a failed write to the object it.
func (c *cluster) failed(it item) {
	c.mu.Lock()
	c.failures[it]++
	c.mu.Unlock()
}

// failureCount is how many writes to it have failed so far.
func (c *cluster) failureCount(it item) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failures[it]
}

// forget drops the failure count of an object that is gone.
func (c *cluster) forget(it item) {
	c.mu.Lock()
	delete(c.failures, it)
	c.mu.Unlock()
}

// ListNodes returns every node in the cache.
func (c *cluster) ListNodes() []*v1.Node {
	nodes, _ := c.nodes.List(labels.Everything()) // a cache List never fails
	return nodes
}

// GetNode returns the cached node, or nil.
func (c *cluster) GetNode(name string) *v1.Node {
	n, err := c.nodes.Get(name)
	if err != nil {
		return nil
	}
	return n
}

// GetLease returns the node's cached Lease, or nil.
func (c *cluster) GetLease(name string) *coordinationv1.Lease {
	l, err := c.leases.Get(name)
	if err != nil {
		return nil
	}
	return l
}

// getPod returns the cached pod, or a NotFound error.
func (c *cluster) getPod(namespace, name string) (*v1.Pod, error) {
	obj, ok, err := c.podIndex.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if p := podOf(obj); ok && p != nil {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

// ListPodsOnNode returns the cached pods bound to the node (podsByNode
// names them, the store holds them).
func (c *cluster) ListPodsOnNode(name string) []*v1.Pod {
	keys := c.byNode.list(name)
	if len(keys) == 0 {
		return nil
	}
	pods := make([]*v1.Pod, 0, len(keys))
	for _, k := range keys {
		if p, err := c.getPod(k.Namespace, k.Name); err == nil && p.Spec.NodeName == name {
			pods = append(pods, p)
		}
	}
	return pods
}

// UpdateNodeStatus patches the conditions that differ between the cached
// node and status (nodeStatusPatch): a strategic-merge patch of the status
// subresource that carries the cached resourceVersion, so it fails with a
// conflict if the node changed since; the Monitor decides again on its next
// pass, as upstream does after its retries. Unlike upstream's UpdateStatus
// (tryUpdateNodeHealth), it sends only the conditions, never the rest of the
// status, which the informer cache does not keep (trim.go). A node whose
// conditions repeat a type gets its whole condition list instead, by a JSON
// merge patch with the same precondition (patch.go says why).
func (c *cluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	patch, pt, err := nodeStatusPatch(node, status)
	if err != nil || patch == nil {
		return err
	}
	_, err = c.clients.NodeStatus.CoreV1().Nodes().Patch(ctx, node.Name, pt, patch,
		metav1.PatchOptions{FieldManager: Name}, "status")
	return err
}

// UpdateNodeTaints is a read-modify-write of the node's taints with retry on
// conflict. The first read is from the informer cache (upstream reads the
// API server's watch cache, resourceVersion=0), later ones from the API
// server. The write is a strategic-merge patch of spec.taints that carries
// the resourceVersion that was read: it replaces the whole taint list
// (atomic), and fails with a conflict if anyone changed the node since, so
// no write is blind and no concurrent writer's taint is lost.
func (c *cluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	return c.patchNode(ctx, name, func(node *v1.Node) ([]byte, error) {
		out, changed := mutate(node)
		if !changed || out == nil {
			return nil, nil
		}
		return taintPatch(node.ResourceVersion, out.Spec.Taints)
	})
}

// UpdateNodeLabels implements monitor.NodeLabelWriter: a read-modify-write
// of the labels labels asks for, as UpdateNodeTaints. The write is a
// strategic-merge patch of those labels only (the others are kept) that
// carries the resourceVersion read; upstream's patch carries none
// (AddOrUpdateLabelsOnNode in pkg/controller/controller_utils.go), and is
// sent empty when a fresh read shows nothing left to do, where this sends
// nothing.
func (c *cluster) UpdateNodeLabels(ctx context.Context, name string, labels func(*v1.Node) map[string]string) error {
	_, err := c.patchNode(ctx, name, func(node *v1.Node) ([]byte, error) {
		set := labels(node)
		if len(set) == 0 {
			return nil, nil
		}
		var p struct {
			Metadata struct {
				ResourceVersion string            `json:"resourceVersion,omitempty"`
				Labels          map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		p.Metadata.ResourceVersion, p.Metadata.Labels = node.ResourceVersion, set
		return json.Marshal(&p)
	})
	return err
}

// patchNode is the read-modify-write of both node patches: read the node
// (from the informer cache first, then from the API server), build the
// patch from it (nil: nothing to write), send it, and start again on a
// conflict. A failure other than NotFound marks the node's item failed, so
// the event is retried. It returns the node as written, or as read when
// nothing was written.
func (c *cluster) patchNode(ctx context.Context, name string, build func(*v1.Node) ([]byte, error)) (*v1.Node, error) {
	backoff := c.backoff
	backoff.Steps = max(backoff.Steps, 1)
	var result *v1.Node
	first := true
	err := retry.RetryOnConflict(backoff, func() error {
		node, err := c.readNode(ctx, name, first)
		first = false
		if err != nil {
			return err
		}
		patch, err := build(node)
		if err != nil || patch == nil {
			result = node
			return err
		}
		result, err = c.clients.Taints.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: Name})
		return err
	})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.failed(item{kind: kindNode, name: name})
		}
		return nil, err
	}
	return result, nil
}

// readNode reads the node from the cache when cached is true and the cache
// has it, else from the API server.
func (c *cluster) readNode(ctx context.Context, name string, cached bool) (*v1.Node, error) {
	if cached {
		if n, err := c.nodes.Get(name); err == nil {
			return n, nil
		}
	}
	return c.clients.Taints.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// taintPatch is the strategic-merge patch that sets spec.taints and
// requires resourceVersion rv (when not empty). Nil taints delete the field.
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
	if len(taints) > 0 {
		p.Spec.Taints = taints
	}
	return json.Marshal(&p)
}

// UpdatePodStatus patches what differs between the cached pod's status and
// status (podStatusPatch: the Ready condition, or in legacy mode
// status.reason and message), carrying the cached resourceVersion and UID: a
// conflict fails the write and the Monitor tries again later. Unlike
// upstream's UpdateStatus of the whole pod (MarkPodsNotReady), it never
// sends what the informer cache does not keep (container statuses and the
// rest, trim.go). A pod whose conditions repeat a type is read from the API
// server and gets its whole condition list, by a JSON merge patch with the
// same preconditions (podConditionsMergePatch; patch.go says why). A write
// that turns the pod's Ready condition False records
// upstream's per-pod Warning NodeNotReady "Node is not ready"
// (MarkPodsNotReady in pkg/controller/util/node/controller_utils.go, which
// records it after the write unless the pod is gone). In a monitor pass
// run by Run, a Ready=False write is queued for the marking workers
// instead and reported done (loops.go).
func (c *cluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	if c.mark != nil && deferMarking(ctx) && marksNotReady(pod, status) {
		c.mark(item{kind: kindPod, namespace: pod.Namespace, name: pod.Name})
		return nil
	}
	pods := c.clients.Marking.CoreV1().Pods(pod.Namespace)
	var live *v1.Pod
	var err error
	if podConditionsRepeat(pod, status) {
		live, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err == nil {
		patch, pt := []byte(nil), types.StrategicMergePatchType
		if live != nil {
			patch, err = podConditionsMergePatch(pod, live, status)
			pt = types.MergePatchType
		} else {
			patch, err = podStatusPatch(pod, status)
		}
		if err != nil && !apierrors.IsConflict(err) || err == nil && patch == nil {
			return err // a change that cannot be patched, or none
		}
		if err == nil {
			_, err = pods.Patch(ctx, pod.Name, pt, patch, metav1.PatchOptions{FieldManager: Name}, "status")
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		c.failed(item{kind: kindPod, namespace: pod.Namespace, name: pod.Name})
	}
	if c.recorder != nil && !apierrors.IsNotFound(err) &&
		podReady(&pod.Status) != v1.ConditionFalse && podReady(status) == v1.ConditionFalse {
		c.recorder.Event(pod, v1.EventTypeWarning, ReasonNodeNotReady, "Node is not ready")
	}
	return err
}

// podReady is the status of the Ready condition, "" when there is none.
func podReady(st *v1.PodStatus) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status
		}
	}
	return ""
}

// EvictPod writes the DisruptionTarget status upstream's taint eviction
// controller writes (nodehealth.DisruptionTargetStatus at
// cond.LastTransitionTime: observedGeneration is the pod's generation) by a
// strategic-merge patch of the status subresource, skipped when the pod has
// that condition already, then deletes the pod with a UID precondition. cond
// must be a DisruptionTarget condition (the Monitor passes
// taints.DisruptionTargetCondition), or nil to only delete. The pod is read
// from the cache (from the API server when the cache does not have it yet).
// A cached pod with another UID is reported as a conflict: it is a new pod
// under the same name, not the one the decision was for.
func (c *cluster) EvictPod(ctx context.Context, key types.NamespacedName, uid types.UID, cond *v1.PodCondition) error {
	pods := c.clients.Evictions.CoreV1().Pods(key.Namespace)
	if cond != nil {
		if cond.Type != v1.DisruptionTarget {
			return fmt.Errorf("nodecontroller: evict pod %s: condition %s, want %s", key, cond.Type, v1.DisruptionTarget)
		}
		pod, err := c.getPod(key.Namespace, key.Name)
		if err != nil {
			pod, err = pods.Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
		}
		if uid != "" && pod.UID != uid {
			return uidConflict(key, uid, pod.UID)
		}
		if st, change := nodehealth.DisruptionTargetStatus(cond.LastTransitionTime.Time, pod); change {
			i := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
			patch, err := conditionPatch(pod.UID, &st.Conditions[i])
			if err != nil {
				return err
			}
			if _, err := pods.Patch(ctx, key.Name, types.StrategicMergePatchType, patch,
				metav1.PatchOptions{FieldManager: Name}, "status"); err != nil {
				return err
			}
		}
	}
	var opts metav1.DeleteOptions
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	return pods.Delete(ctx, key.Name, opts)
}

func uidConflict(key types.NamespacedName, want, have types.UID) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, key.String(),
		fmt.Errorf("UID precondition failed: the pod is %s now, the eviction was for %s", have, want))
}

// conditionPatch is the strategic-merge patch of the status subresource
// that adds or replaces cond (conditions merge by type). It carries the
// pod's UID, as upstream's PatchPodStatus does, so it cannot land on a
// re-created pod of the same name.
func conditionPatch(uid types.UID, cond *v1.PodCondition) ([]byte, error) {
	var p struct {
		Metadata struct {
			UID types.UID `json:"uid,omitempty"`
		} `json:"metadata"`
		Status struct {
			Conditions []v1.PodCondition `json:"conditions"`
		} `json:"status"`
	}
	p.Metadata.UID = uid
	p.Status.Conditions = []v1.PodCondition{*cond}
	return json.Marshal(&p)
}
