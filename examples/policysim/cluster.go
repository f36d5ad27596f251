package main

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
)

// cluster is the virtual cluster: an API server and its informer cache in
// one, implementing monitor.Cluster. Writes apply at once (the cache has
// read-your-writes) and are forwarded to the Monitor as the informer events
// they cause: NodeChanged for node status and taint writes, PodChanged for
// pod status writes, PodDeleted for deletions. Leases have no informer event
// in the Monitor's API; it reads them from the cache on every pass.
//
// Objects handed out are never modified afterwards: every write stores a new
// object (copy on write), and the per-node pod lists are copied when they
// change, so a Monitor iterating a list it got is never disturbed. Pods are
// indexed by node, so ListPodsOnNode costs nothing and a change to one pod
// costs O(pods on its node).
//
// A cluster is safe for concurrent use; it never holds its lock while it
// calls the Monitor or a hook.
type cluster struct {
	mu     sync.Mutex
	m      *monitor.Monitor
	now    time.Time
	nodes  []*nodeRec // sorted by name; rec.idx is the position
	byName map[string]*nodeRec
	cursor int // where the last lookup by name hit (a pass reads nodes in order)
	pods   map[types.NamespacedName]*podRec

	// onEvict, when set, is called (without the lock) while an eviction is
	// being carried out, before the pod goes away: the moment at which
	// Monitor.Explain still describes it.
	onEvict func(now time.Time, pod types.NamespacedName, node *nodeRec)

	podsMarkedNotReady int // pods whose Ready condition went True → False
	podsMarkedReady    int // ... and back, by their kubelet
	podsEvicted        int
}

// nodeRec is one node with its Lease and its pods.
type nodeRec struct {
	idx   int
	zone  int // index in Scenario.Zones
	name  string
	node  *v1.Node
	lease *coordinationv1.Lease
	pods  []*v1.Pod // copy on write
}

type podRec struct {
	pod  *v1.Pod
	node *nodeRec
}

// nodeCreated is when every simulated node (and pod) was created: an hour
// before the run starts.
const nodeCreated = -time.Hour

// Names and labels of the simulated objects.
const (
	podNamespace      = "default"
	leaseNamespace    = "kube-node-lease"
	kubeletReady      = "KubeletReady"
	kubeletNotReady   = "KubeletNotReady"
	kubeletReadyMsg   = "kubelet is posting ready status"
	kubeletNotReadyMs = "container runtime network not ready"
)

// newCluster builds the scenario's cluster at epoch: every node Ready with a
// heartbeat and a Lease renewal at epoch (the kubelets' first beat), and its
// pods running and Ready.
func newCluster(sc *Scenario, epoch time.Time) *cluster {
	c := &cluster{now: epoch, byName: map[string]*nodeRec{}, pods: map[types.NamespacedName]*podRec{}}
	created := epoch.Add(nodeCreated)
	readyPod := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)}}
	for zi := range sc.Zones {
		z := &sc.Zones[zi]
		type group struct {
			name   string
			n      int
			tol    []v1.Toleration
			owners []metav1.OwnerReference
		}
		var groups []group
		for _, g := range z.PodGroups() {
			tol := slices.Clone(g.Tolerations)
			var owners []metav1.OwnerReference
			if g.DaemonSet {
				// The DaemonSet controller's tolerations (forever).
				tol = append(tol,
					v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
					v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
				owners = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: g.Name, UID: types.UID("uid-ds-" + z.Name + "-" + g.Name), Controller: ptr.To(true)}}
			}
			if g.admissionDefaults() {
				tol = taints.WithDefaultTolerations(tol,
					time.Duration(sc.Policy.DefaultNotReadyTolerationSeconds)*time.Second,
					time.Duration(sc.Policy.DefaultUnreachableTolerationSeconds)*time.Second)
			}
			groups = append(groups, group{name: g.Name, n: g.PerNode, tol: tol, owners: owners})
		}
		for i := range z.Nodes {
			name := NodeName(z.Name, i, z.Nodes)
			rec := &nodeRec{zone: zi, name: name, node: newNode(name, z, created, epoch)}
			rec.lease = newLease(&rec.name, epoch)
			for _, g := range groups {
				for j := range g.n {
					p := &v1.Pod{
						ObjectMeta: metav1.ObjectMeta{
							Namespace: podNamespace, Name: podName(name, g.name, j), CreationTimestamp: metav1.NewTime(created),
							OwnerReferences: g.owners,
						},
						Spec:   v1.PodSpec{NodeName: name, Tolerations: g.tol},
						Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: readyPod},
					}
					p.UID = types.UID("uid-" + p.Name)
					rec.pods = append(rec.pods, p)
					c.pods[types.NamespacedName{Namespace: podNamespace, Name: p.Name}] = &podRec{pod: p, node: rec}
				}
			}
			c.nodes = append(c.nodes, rec)
			c.byName[name] = rec
		}
	}
	slices.SortFunc(c.nodes, func(a, b *nodeRec) int { return cmp.Compare(a.name, b.name) })
	for i, rec := range c.nodes {
		rec.idx = i
	}
	return c
}

func podName(node, group string, i int) string {
	return node + "-" + group + "-" + strconv.Itoa(i)
}

func newNode(name string, z *Zone, created, heartbeat time.Time) *v1.Node {
	labels := map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: z.Name}
	if z.Region != "" {
		labels[v1.LabelTopologyRegion] = z.Region
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels, CreationTimestamp: metav1.NewTime(created)},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: kubeletReady, Message: kubeletReadyMsg,
			LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(created),
		}}},
	}
}

// leaseDuration is the kubelet's Lease duration (shared, never modified).
var leaseDuration = ptr.To[int32](40)

// newLease returns the node's Lease renewed at renew, in one allocation
// (1.8 million renewals an hour at 5,000 nodes). holder is shared.
func newLease(holder *string, renew time.Time) *coordinationv1.Lease {
	l := &struct {
		lease coordinationv1.Lease
		renew metav1.MicroTime
	}{renew: metav1.MicroTime{Time: renew}}
	l.lease.Name, l.lease.Namespace = *holder, leaseNamespace
	l.lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: leaseDuration, RenewTime: &l.renew}
	return &l.lease
}

// sync delivers the informers' initial list to the Monitor: every node, then
// every pod, in name order.
func (c *cluster) sync(ctx context.Context) {
	c.mu.Lock()
	now, nodes := c.now, slices.Clone(c.nodes)
	c.mu.Unlock()
	for _, rec := range nodes {
		c.m.NodeChanged(ctx, now, rec.node)
	}
	for _, rec := range nodes {
		for _, p := range rec.pods {
			c.m.PodChanged(ctx, now, p)
		}
	}
}

func (c *cluster) setNow(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// ListNodes returns every node, in name order (a fresh slice).
func (c *cluster) ListNodes() []*v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*v1.Node, len(c.nodes))
	for i, rec := range c.nodes {
		out[i] = rec.node
	}
	return out
}

// lookup finds a node by name. A monitor pass reads the nodes in name
// order, so the node after the last one found is tried before the map.
// c.mu must be held.
func (c *cluster) lookup(name string) *nodeRec {
	for _, i := range [2]int{c.cursor, c.cursor + 1} {
		if i < len(c.nodes) && c.nodes[i].name == name {
			c.cursor = i
			return c.nodes[i]
		}
	}
	rec, ok := c.byName[name]
	if !ok {
		return nil
	}
	c.cursor = rec.idx
	return rec
}

// GetNode returns the node, or nil.
func (c *cluster) GetNode(name string) *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec := c.lookup(name); rec != nil {
		return rec.node
	}
	return nil
}

// GetLease returns the node's Lease, or nil.
func (c *cluster) GetLease(name string) *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec := c.lookup(name); rec != nil {
		return rec.lease
	}
	return nil
}

// ListPodsOnNode returns the node's pods (shared; never modified later).
func (c *cluster) ListPodsOnNode(name string) []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec := c.lookup(name); rec != nil {
		return rec.pods
	}
	return nil
}

// UpdateNodeStatus stores status as the node's status.
func (c *cluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	if node == nil || status == nil {
		return errors.New("policysim: UpdateNodeStatus with a nil node or status")
	}
	c.mu.Lock()
	rec, ok := c.byName[node.Name]
	if !ok {
		c.mu.Unlock()
		return notFound("nodes", node.Name)
	}
	n := *rec.node
	n.Status = *status.DeepCopy()
	rec.node = &n
	now := c.now
	c.mu.Unlock()
	c.m.NodeChanged(ctx, now, &n)
	return nil
}

// UpdateNodeTaints applies mutate to the current node and stores the result
// when it reports a change, re-reading when the node changed meanwhile.
func (c *cluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	for {
		c.mu.Lock()
		rec, ok := c.byName[name]
		if !ok {
			c.mu.Unlock()
			return nil, notFound("nodes", name)
		}
		cur := rec.node
		c.mu.Unlock()
		out, changed := mutate(cur)
		if !changed || out == nil {
			return cur, nil
		}
		c.mu.Lock()
		if rec.node != cur { // a conflict: read again
			c.mu.Unlock()
			continue
		}
		rec.node = out
		now := c.now
		c.mu.Unlock()
		c.m.NodeChanged(ctx, now, out)
		return out, nil
	}
}

// UpdatePodStatus stores status as the pod's status.
func (c *cluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	if pod == nil || status == nil {
		return errors.New("policysim: UpdatePodStatus with a nil pod or status")
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	pr, ok := c.pods[key]
	if !ok {
		c.mu.Unlock()
		return notFound("pods", pod.Name)
	}
	p := *pr.pod
	p.Status = *status.DeepCopy()
	if podReady(pr.pod) && !podReady(&p) {
		c.podsMarkedNotReady++
	}
	pods := slices.Clone(pr.node.pods)
	if i := slices.Index(pods, pr.pod); i >= 0 {
		pods[i] = &p
	}
	pr.node.pods, pr.pod = pods, &p
	now := c.now
	c.mu.Unlock()
	c.m.PodChanged(ctx, now, &p)
	return nil
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// EvictPod deletes the pod (the DisruptionTarget condition and the deletion
// are one write here: only the delete event is forwarded), with a UID
// precondition when uid is set.
func (c *cluster) EvictPod(ctx context.Context, key types.NamespacedName, uid types.UID, cond *v1.PodCondition) error {
	c.mu.Lock()
	pr, ok := c.pods[key]
	if !ok {
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	if uid != "" && pr.pod.UID != uid {
		c.mu.Unlock()
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, key.Name, errors.New("UID precondition failed"))
	}
	now, hook := c.now, c.onEvict
	c.mu.Unlock()
	if hook != nil {
		hook(now, key, pr.node)
	}
	c.mu.Lock()
	if cur, ok := c.pods[key]; !ok || cur != pr { // gone meanwhile
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	delete(c.pods, key)
	rec := pr.node
	rec.pods = slices.DeleteFunc(slices.Clone(rec.pods), func(p *v1.Pod) bool { return p == pr.pod })
	c.podsEvicted++
	c.mu.Unlock()
	c.m.PodDeleted(key)
	return nil
}

// renewLease is the kubelet renewing its Lease at now.
func (c *cluster) renewLease(rec *nodeRec, now time.Time) {
	l := newLease(&rec.name, now)
	c.mu.Lock()
	rec.lease = l
	c.mu.Unlock()
}

// postStatus is the kubelet posting its status at now: a Ready condition
// with status s and a new heartbeat; the transition time moves when the
// status differs from the node's current one.
func (c *cluster) postStatus(ctx context.Context, rec *nodeRec, s v1.ConditionStatus, now time.Time) {
	c.mu.Lock()
	cur := rec.node
	n := *cur
	n.Status.Conditions = slices.Clone(cur.Status.Conditions)
	cond := v1.NodeCondition{Type: v1.NodeReady, Status: s, LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	cond.Reason, cond.Message = kubeletReady, kubeletReadyMsg
	if s != v1.ConditionTrue {
		cond.Reason, cond.Message = kubeletNotReady, kubeletNotReadyMs
	}
	i := slices.IndexFunc(n.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == v1.NodeReady })
	if i < 0 {
		n.Status.Conditions = append(n.Status.Conditions, cond)
	} else {
		if n.Status.Conditions[i].Status == s {
			cond.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
		}
		n.Status.Conditions[i] = cond
	}
	rec.node = &n
	c.mu.Unlock()
	c.m.NodeChanged(ctx, now, &n)
}

// markPodsReady is the kubelet reporting every pod on the node Ready again.
func (c *cluster) markPodsReady(ctx context.Context, rec *nodeRec, now time.Time) {
	c.mu.Lock()
	var changed []*v1.Pod
	pods := slices.Clone(rec.pods)
	for i, cur := range pods {
		if podReady(cur) {
			continue
		}
		p := *cur
		p.Status.Conditions = slices.Clone(cur.Status.Conditions)
		cond := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
		if j := slices.IndexFunc(p.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodReady }); j >= 0 {
			p.Status.Conditions[j] = cond
		} else {
			p.Status.Conditions = append(p.Status.Conditions, cond)
		}
		pods[i] = &p
		c.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}].pod = &p
		changed = append(changed, &p)
	}
	if len(changed) > 0 {
		rec.pods = pods
	}
	c.podsMarkedReady += len(changed)
	c.mu.Unlock()
	for _, p := range changed {
		c.m.PodChanged(ctx, now, p)
	}
}
