// Package monitortest provides an in-memory monitor.Cluster for tests and
// simulations, as net/http/httptest provides a server: an API server and its
// informer cache in one, on a clock the caller sets.
//
// A Cluster holds nodes (sorted by name), their Leases and their pods
// (indexed by node). Writes apply at once (the cache has read-your-writes)
// and are forwarded to the attached Receiver (a *monitor.Monitor) as the
// informer events they cause: NodeChanged for node status and taint writes,
// PodChanged for pods added (a pod status write forwards nothing: the node
// lifecycle controller acts on a pod update only when its node is set or
// changes, which a status write never does), PodDeleted for evictions, and
// LeaseChanged for a Lease change to a Receiver that takes it
// (LeaseReceiver: a Monitor with monitor.Config.LeaseEvents; otherwise the
// Monitor reads the Leases on every pass).
//
// Objects handed out by reads are never modified afterwards, with two
// exceptions: RenewLease moves the stored Lease's renew time in place, as
// the cheapest model of a kubelet renewing every 10 seconds (call it
// between passes, never while a MonitorPass runs); and with
// ReuseListedPods, the next ListPodsOnNode call reuses the pods a list
// handed out.
//
// Objects to fill it with come from NewNode, NewLease and NewPod (plain
// objects; any others do). A large cluster's pods, stamped from a few
// templates, are added with AddStampedPods: about 75 bytes a pod, with no
// pointer for the garbage collector to follow, instead of 1.3 KB, a pod
// object being materialized when one is read (ReuseEventPods: one reused
// for the events they cause). The kubelet's side is methods too: RenewLease,
// PostNodeStatus and SetPodsReady. Faults are injected with FailTaintWrites, FailEvictions and
// SetStaleList.
//
// A Cluster is safe for concurrent use; it never holds its lock while it
// calls the Receiver or the BeforeEvict hook.
//
// # Stability
//
// Like package monitor, this package lives under examples/ and is not
// covered by the module's compatibility promise: its API changes with the
// monitor's in any minor release, each change listed in CHANGELOG.md.
package monitortest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Receiver receives the informer events the Cluster's writes cause.
// *monitor.Monitor implements it.
type Receiver interface {
	NodeChanged(ctx context.Context, now time.Time, node *v1.Node)
	NodeDeleted(name string)
	PodChanged(ctx context.Context, now time.Time, pod *v1.Pod)
	PodDeleted(key types.NamespacedName)
}

// LeaseReceiver is a Receiver that also takes the Lease informer's
// events: *monitor.Monitor's LeaseChanged (see monitor.Config.LeaseEvents).
// The Cluster forwards every change of a stored Lease to it.
type LeaseReceiver interface {
	LeaseChanged(name string)
}

// leaseChanged forwards a Lease change to r when it takes them. Called
// without c.mu.
func leaseChanged(r Receiver, name string) {
	if lr, ok := r.(LeaseReceiver); ok {
		lr.LeaseChanged(name)
	}
}

// ErrInjected is the error of a write failed by FailTaintWrites or
// FailEvictions.
var ErrInjected = errors.New("monitortest: injected API error")

// Counts counts what happened to pods.
type Counts struct {
	PodsMarkedNotReady int // pod status writes that took Ready from True to False
	PodsMarkedReady    int // pods SetPodsReady made Ready again
	PodsEvicted        int
}

// Cluster is the in-memory cluster. The zero value is not usable; call New.
type Cluster struct {
	mu     sync.Mutex
	recv   Receiver
	now    time.Time
	nodes  []*nodeRec // sorted by name; rec.idx is the position
	byName map[string]*nodeRec
	cursor int // where the last lookup by name hit (a pass reads nodes in order)
	pods   map[types.NamespacedName]*podRec
	// stamped indexes the pods added with AddStampedPods (stamped.go).
	stamped stampIndex
	// reuse is ReuseEventPods.
	reuse bool
	// reuseList is ReuseListedPods; listVals and listPtrs are the buffers
	// ListPodsOnNode hands out then.
	reuseList bool
	listVals  []v1.Pod
	listPtrs  []*v1.Pod

	// list is ListNodes' answer, kept between calls: a node write
	// replaces its element, copying the slice first when it was handed out
	// (listShared). Only kept while every record has a node (no deletions).
	list       []*v1.Node
	listOK     bool
	listShared bool

	stale           map[string]*v1.Node
	failTaintWrites int
	failEvictions   int
	beforeEvict     func(now time.Time, pod *v1.Pod)
	evicted         []types.NamespacedName
	counts          Counts
}

// nodeRec is one node with its Lease and its pods. A record stays when its
// node is deleted while pods still name it (node == nil).
type nodeRec struct {
	idx    int
	name   string
	node   *v1.Node
	lease  *coordinationv1.Lease
	pods   []*v1.Pod // copy on write once handed out
	shared bool      // pods was handed out: copy before changing it
	// stamps are the node's stamped pods (AddStampedPods), live of them
	// not gone.
	stamps []*stampRun
	live   int
	// statuses are the statuses written to the node's stamped pods, each
	// shared by the pods written it at one instant (stamp.status), the last
	// one lastStatus.
	statuses   []*v1.PodStatus
	lastStatus uint32
}

type podRec struct {
	pod *v1.Pod
	rec *nodeRec // nil for a pod without a node
}

// New returns an empty cluster whose clock reads now.
func New(now time.Time) *Cluster {
	return &Cluster{now: now, byName: map[string]*nodeRec{}, pods: map[types.NamespacedName]*podRec{}}
}

// Attach sets the Receiver of the cluster's informer events (nil: none).
func (c *Cluster) Attach(r Receiver) {
	c.mu.Lock()
	c.recv = r
	c.mu.Unlock()
}

// SetNow sets the cluster's clock: the instant passed with the events its
// writes cause.
func (c *Cluster) SetNow(now time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// Now returns the cluster's clock.
func (c *Cluster) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// BeforeEvict sets a hook called (without the lock) while EvictPod carries
// out an eviction, before the pod goes away: the moment at which
// Monitor.Explain still describes it. nil removes it.
func (c *Cluster) BeforeEvict(hook func(now time.Time, pod *v1.Pod)) {
	c.mu.Lock()
	c.beforeEvict = hook
	c.mu.Unlock()
}

// FailTaintWrites makes the next n UpdateNodeTaints writes (calls whose
// mutate reports a change) fail with ErrInjected.
func (c *Cluster) FailTaintWrites(n int) {
	c.mu.Lock()
	c.failTaintWrites = n
	c.mu.Unlock()
}

// FailEvictions makes the next n EvictPod calls on existing pods fail with
// ErrInjected.
func (c *Cluster) FailEvictions(n int) {
	c.mu.Lock()
	c.failEvictions = n
	c.mu.Unlock()
}

// SetStaleList makes ListNodes return node in place of the current object
// of its name (a lagging list); nil node restores the current one.
func (c *Cluster) SetStaleList(name string, node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if node == nil {
		delete(c.stale, name)
		return
	}
	if c.stale == nil {
		c.stale = map[string]*v1.Node{}
	}
	c.stale[name] = node
}

// setNode stores n as rec's node, keeping ListNodes' slice current. c.mu
// must be held.
func (c *Cluster) setNode(rec *nodeRec, n *v1.Node) {
	rec.node = n
	if !c.listOK {
		return
	}
	if n == nil {
		c.listOK = false
		return
	}
	if c.listShared {
		c.list, c.listShared = slices.Clone(c.list), false
	}
	c.list[rec.idx] = n
}

// record returns the record of name, creating it. c.mu must be held.
func (c *Cluster) record(name string) *nodeRec {
	if rec, ok := c.byName[name]; ok {
		return rec
	}
	rec := &nodeRec{name: name}
	c.listOK = false
	i, _ := slices.BinarySearchFunc(c.nodes, name, func(r *nodeRec, n string) int { return cmp.Compare(r.name, n) })
	c.nodes = slices.Insert(c.nodes, i, rec)
	for j := i; j < len(c.nodes); j++ {
		c.nodes[j].idx = j
	}
	c.byName[name] = rec
	return rec
}

// AddNode stores node and its Lease (nil: none) and forwards NodeChanged.
// An existing node of the name is replaced. O(nodes) unless nodes are added
// in name order.
func (c *Cluster) AddNode(ctx context.Context, node *v1.Node, lease *coordinationv1.Lease) {
	c.mu.Lock()
	rec := c.record(node.Name)
	c.setNode(rec, node)
	rec.lease = lease
	recv, now := c.recv, c.now
	c.mu.Unlock()
	if recv != nil {
		recv.NodeChanged(ctx, now, node)
		leaseChanged(recv, node.Name)
	}
}

// PutNode replaces the stored node without forwarding an event: a write the
// informer has not delivered yet. The node must exist.
func (c *Cluster) PutNode(node *v1.Node) {
	c.mu.Lock()
	if rec, ok := c.byName[node.Name]; ok && rec.node != nil {
		c.setNode(rec, node)
	}
	c.mu.Unlock()
}

// DeleteNode deletes the node and its Lease (its pods stay, as in an API
// server) and forwards NodeDeleted.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	rec, ok := c.byName[name]
	if ok {
		c.setNode(rec, nil)
		rec.lease = nil
	}
	recv := c.recv
	c.mu.Unlock()
	if ok && recv != nil {
		recv.NodeDeleted(name)
	}
}

// AddPod stores pod (on the node its spec.nodeName names, which need not
// exist) and forwards PodChanged. An existing pod of the key is replaced.
func (c *Cluster) AddPod(ctx context.Context, pod *v1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	c.removeLocked(key)
	pr := &podRec{pod: pod}
	if pod.Spec.NodeName != "" {
		rec := c.lookup(pod.Spec.NodeName)
		if rec == nil {
			rec = c.record(pod.Spec.NodeName)
		}
		pr.rec = rec
		rec.pods = append(rec.ownPods(), pod)
	}
	c.pods[key] = pr
	recv, now := c.recv, c.now
	c.mu.Unlock()
	if recv != nil {
		recv.PodChanged(ctx, now, pod)
	}
}

// Reserve makes room for nodes more nodes and pods more pods, so filling a
// large cluster does not regrow its indexes.
func (c *Cluster) Reserve(nodes, pods int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = slices.Grow(c.nodes, nodes)
	if len(c.byName) == 0 && len(c.pods) == 0 {
		c.byName = make(map[string]*nodeRec, nodes)
		c.pods = make(map[types.NamespacedName]*podRec, pods)
	}
}

// Sync forwards every node, then every pod, in name order (pods of a node
// in the order they were added): an informer's initial list, for a cluster
// filled before its Receiver was attached. It stops early, with part of the
// cluster forwarded, once ctx has ended (looked at every syncCheckEvery
// objects): the caller checks ctx.Err() afterwards.
func (c *Cluster) Sync(ctx context.Context) {
	c.mu.Lock()
	recv, now, reuse := c.recv, c.now, c.reuse
	if recv == nil {
		c.mu.Unlock()
		return
	}
	// The objects and pod lists as they are now (a pod list handed out is
	// copied before a later change): writes may run while they are sent.
	nodes := make([]*v1.Node, 0, len(c.nodes))
	pods := make([][]*v1.Pod, 0, len(c.nodes))
	recs := slices.Clone(c.nodes)
	count := 0
	for _, rec := range c.nodes {
		if rec.node != nil {
			nodes = append(nodes, rec.node)
		}
		rec.shared = true
		pods = append(pods, rec.pods)
		count += len(rec.pods) + rec.live
	}
	c.mu.Unlock()
	if r, ok := recv.(interface{ ReservePods(n int) }); ok {
		r.ReservePods(count) // *monitor.Monitor: its Evictor makes room at once
	}
	sent := 0
	ended := func() bool {
		sent++
		return sent%syncCheckEvery == 0 && ctx.Err() != nil
	}
	for _, n := range nodes {
		if ended() {
			return
		}
		recv.NodeChanged(ctx, now, n)
	}
	var (
		scratch []*v1.Pod
		vals    []v1.Pod // with reuse: the objects scratch points to
	)
	for i, ps := range pods {
		if len(recs[i].stamps) > 0 {
			// Stamped pods are materialized one node at a time, as they are
			// sent, not all at once; with ReuseEventPods, into the same
			// objects for every node.
			if !reuse {
				vals = nil // the Receiver's to keep
			}
			c.mu.Lock()
			vals = recs[i].appendStampedValues(vals[:0])
			c.mu.Unlock()
			scratch = pointers(scratch[:0], vals)
			ps = append(slices.Clip(ps), scratch...)
		}
		for _, p := range ps {
			if ended() {
				return
			}
			recv.PodChanged(ctx, now, p)
		}
	}
}

// syncCheckEvery is how many objects Sync forwards between two looks at its
// context.
const syncCheckEvery = 4096

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// lookup finds a node's record by name. A monitor pass reads the nodes in
// name order, so the record after the last one found is tried before the
// map, then that one (the same node read again). The next one comes first:
// a try that fails compares the names' bytes, at 100,000 nodes a cache
// miss, and a pass reads each node once. c.mu must be held.
func (c *Cluster) lookup(name string) *nodeRec {
	for _, i := range [2]int{c.cursor + 1, c.cursor} {
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

// ListNodes returns every node in name order. The slice is shared and
// never modified afterwards (a later write copies it first), so it does not
// allocate unless a node changed since the last call; callers must not
// modify it.
func (c *Cluster) ListNodes() []*v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stale) == 0 {
		if !c.listOK {
			c.list = c.list[:0:0]
			c.listOK = true
			for _, rec := range c.nodes {
				if rec.node == nil {
					c.listOK = false
					break
				}
				c.list = append(c.list, rec.node)
			}
		}
		if c.listOK {
			c.listShared = true
			return c.list
		}
	}
	out := make([]*v1.Node, 0, len(c.nodes))
	for _, rec := range c.nodes {
		n := rec.node
		if s, ok := c.stale[rec.name]; ok {
			n = s
		}
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// GetNode returns the node, or nil. It does not allocate.
func (c *Cluster) GetNode(name string) *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec := c.lookup(name); rec != nil {
		return rec.node
	}
	return nil
}

// GetLease returns the node's Lease, or nil. It does not allocate.
func (c *Cluster) GetLease(name string) *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec := c.lookup(name); rec != nil {
		return rec.lease
	}
	return nil
}

// ListPodsOnNode returns the node's pods in the order they were added
// (shared, never modified later; with ReuseListedPods, until the next
// call). It does not allocate, unless the node
// has stamped pods (AddStampedPods), which it materializes (with
// ReuseListedPods, into buffers the next call reuses).
func (c *Cluster) ListPodsOnNode(name string) []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.lookup(name)
	switch {
	case rec == nil:
		return nil
	case c.reuseList:
		return c.listedPods(rec)
	}
	return rec.podsView()
}

// Pod returns the pod, or nil.
func (c *Cluster) Pod(key types.NamespacedName) *v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pr, ok := c.pods[key]; ok {
		return pr.pod
	}
	if s, ok := c.stamped.get(key); ok {
		return s.pod()
	}
	return nil
}

// Evicted returns the pods evicted so far, in eviction order (a copy).
func (c *Cluster) Evicted() []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evicted)
}

// Counts returns what happened to pods so far.
func (c *Cluster) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// UpdateNodeStatus stores status as the node's status and forwards
// NodeChanged.
func (c *Cluster) UpdateNodeStatus(ctx context.Context, node *v1.Node, status *v1.NodeStatus) error {
	if node == nil || status == nil {
		return errors.New("monitortest: UpdateNodeStatus with a nil node or status")
	}
	c.mu.Lock()
	rec, ok := c.byName[node.Name]
	if !ok || rec.node == nil {
		c.mu.Unlock()
		return notFound("nodes", node.Name)
	}
	n := *rec.node
	n.Status = *status.DeepCopy()
	c.setNode(rec, &n)
	recv, now := c.recv, c.now
	c.mu.Unlock()
	if recv != nil {
		recv.NodeChanged(ctx, now, &n)
	}
	return nil
}

// UpdateNodeTaints applies mutate to the current node and stores the result
// when it reports a change, re-reading when the node changed meanwhile.
func (c *Cluster) UpdateNodeTaints(ctx context.Context, name string, mutate func(*v1.Node) (*v1.Node, bool)) (*v1.Node, error) {
	for {
		c.mu.Lock()
		rec, ok := c.byName[name]
		if !ok || rec.node == nil {
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
		if c.failTaintWrites > 0 {
			c.failTaintWrites--
			c.mu.Unlock()
			return nil, ErrInjected
		}
		c.setNode(rec, out)
		recv, now := c.recv, c.now
		c.mu.Unlock()
		if recv != nil {
			recv.NodeChanged(ctx, now, out)
		}
		return out, nil
	}
}

// UpdatePodStatus stores status as the pod's status. It forwards
// nothing: a status update changes neither the pod's node, its UID nor its
// tolerations, the only pod updates the node lifecycle controller acts on
// (upstream podUpdated queues a pod only when its node is set or changes;
// examples/nodecontroller's informer handler filters the same way), so a
// kubelet putting Ready=True back on a node the Monitor still holds not
// ready is not marked Ready=False again.
func (c *Cluster) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) error {
	if pod == nil || status == nil {
		return errors.New("monitortest: UpdatePodStatus with a nil pod or status")
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	pr, ok := c.pods[key]
	if !ok {
		return c.updateStampStatus(key, status)
	}
	p := *pr.pod
	p.Status = *status.DeepCopy()
	if podReady(pr.pod) && !podReady(&p) {
		c.counts.PodsMarkedNotReady++
	}
	c.replacePod(pr, &p)
	c.mu.Unlock()
	return nil
}

// updateStampStatus is UpdatePodStatus for a stamped pod. c.mu is held
// on entry and released.
func (c *Cluster) updateStampStatus(key types.NamespacedName, status *v1.PodStatus) error {
	st, ok := c.stamped.get(key)
	if !ok {
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	was := st.ready()
	st.s().status = st.run.rec.shareStatus(status)
	if was && !st.ready() {
		c.counts.PodsMarkedNotReady++
	}
	c.mu.Unlock()
	return nil
}

// replacePod stores p as pr's pod, copying the node's pod list. c.mu must
// be held.
func (c *Cluster) replacePod(pr *podRec, p *v1.Pod) {
	if rec := pr.rec; rec != nil {
		pods := rec.ownPods()
		if i := slices.Index(pods, pr.pod); i >= 0 {
			pods[i] = p
		}
	}
	pr.pod = p
}

// ownPods returns the node's pod list for changing in place, copying it
// first when it was handed out. c.mu must be held.
func (rec *nodeRec) ownPods() []*v1.Pod {
	if rec.shared {
		rec.pods, rec.shared = slices.Clone(rec.pods), false
	}
	return rec.pods
}

func podReady(p *v1.Pod) bool { return readyIn(&p.Status) }

func readyIn(st *v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// EvictPod deletes the pod, with a UID precondition when uid is set, and
// forwards PodDeleted. The DisruptionTarget condition and the deletion are
// one write here: only the delete event is forwarded.
func (c *Cluster) EvictPod(ctx context.Context, key types.NamespacedName, uid types.UID, cond *v1.PodCondition) error {
	c.mu.Lock()
	pr, ok := c.pods[key]
	if !ok {
		return c.evictStamp(ctx, key, uid)
	}
	if err := c.evictPrecondition(key, pr.pod.UID, uid); err != nil {
		return err
	}
	c.beforeEvictHook(pr.pod)
	if cur, ok := c.pods[key]; !ok || cur != pr { // gone meanwhile
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	delete(c.pods, key)
	if rec := pr.rec; rec != nil {
		rec.pods = slices.DeleteFunc(rec.ownPods(), func(p *v1.Pod) bool { return p == pr.pod })
	}
	return c.evictDone(key)
}

// evictPrecondition fails an eviction of key whose pod has UID have when
// the precondition uid is set and differs, or when an injected failure is
// due. c.mu is held on entry and released when it returns an error.
func (c *Cluster) evictPrecondition(key types.NamespacedName, have, uid types.UID) error {
	switch {
	case uid != "" && have != uid:
		c.mu.Unlock()
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, key.Name, errors.New("UID precondition failed"))
	case c.failEvictions > 0:
		c.failEvictions--
		c.mu.Unlock()
		return ErrInjected
	}
	return nil
}

// beforeEvictHook runs the BeforeEvict hook, if any, on pod with c.mu
// released: c.mu is held on entry and on return.
func (c *Cluster) beforeEvictHook(pod *v1.Pod) {
	now, hook := c.now, c.beforeEvict
	c.mu.Unlock()
	if hook != nil {
		hook(now, pod)
	}
	c.mu.Lock()
}

// evictDone counts key as evicted, releases c.mu and forwards PodDeleted.
func (c *Cluster) evictDone(key types.NamespacedName) error {
	c.evicted = append(c.evicted, key)
	c.counts.PodsEvicted++
	recv := c.recv
	c.mu.Unlock()
	if recv != nil {
		recv.PodDeleted(key)
	}
	return nil
}

// evictStamp is EvictPod for a stamped pod. c.mu is held on entry and
// released.
func (c *Cluster) evictStamp(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	st, ok := c.stamped.get(key)
	if !ok {
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	if err := c.evictPrecondition(key, st.uid(), uid); err != nil {
		return err
	}
	c.beforeEvictHook(st.pod())
	if st.s().gone { // gone meanwhile
		c.mu.Unlock()
		return notFound("pods", key.Name)
	}
	c.dropStamp(c.stamped.find(key.Namespace, key.Name))
	return c.evictDone(key)
}

// LeaseNamespace is where node Leases live.
const LeaseNamespace = v1.NamespaceNodeLease

// NewLease returns a node Lease as the kubelet keeps it: holder and name
// the node, 40s duration, renewed at renew.
func NewLease(node string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: renew},
		},
	}
}

// RenewLease is the kubelet renewing the node's Lease at now: the stored
// Lease's RenewTime moves in place (no new object; see the package doc).
// A node without a Lease gets one. It reports whether the node exists.
func (c *Cluster) RenewLease(name string, now time.Time) bool {
	c.mu.Lock()
	rec := c.lookup(name)
	if rec == nil || rec.node == nil {
		c.mu.Unlock()
		return false
	}
	switch l := rec.lease; {
	case l == nil:
		rec.lease = NewLease(name, now)
	case l.Spec.RenewTime == nil:
		l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	default:
		l.Spec.RenewTime.Time = now
	}
	recv := c.recv
	c.mu.Unlock()
	leaseChanged(recv, name)
	return true
}

// leasesChanged forwards a change of every node's Lease: a Lease cache
// that caught up at once (LeaseStall).
func (c *Cluster) leasesChanged() {
	c.mu.Lock()
	lr, ok := c.recv.(LeaseReceiver)
	var names []string
	if ok {
		names = make([]string, 0, len(c.nodes))
		for _, rec := range c.nodes {
			names = append(names, rec.name)
		}
	}
	c.mu.Unlock()
	for _, name := range names {
		lr.LeaseChanged(name)
	}
}

// The kubelet's Ready condition reasons and messages.
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"
	messageReady          = "kubelet is posting ready status"
	messageNotReady       = "container runtime network not ready"
)

// PostNodeStatus is the kubelet posting its status at now: a Ready
// condition with status s and a new heartbeat (the transition time moves
// when s differs from the current status), forwarded as NodeChanged. It
// reports whether the node exists.
func (c *Cluster) PostNodeStatus(ctx context.Context, name string, s v1.ConditionStatus, now time.Time) bool {
	c.mu.Lock()
	rec := c.lookup(name)
	if rec == nil || rec.node == nil {
		c.mu.Unlock()
		return false
	}
	cur := rec.node
	n := *cur
	n.Status.Conditions = slices.Clone(cur.Status.Conditions)
	cond := v1.NodeCondition{Type: v1.NodeReady, Status: s, LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
		Reason: ReasonKubeletReady, Message: messageReady}
	if s != v1.ConditionTrue {
		cond.Reason, cond.Message = ReasonKubeletNotReady, messageNotReady
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
	c.setNode(rec, &n)
	recv := c.recv
	c.mu.Unlock()
	if recv != nil {
		recv.NodeChanged(ctx, now, &n)
	}
	return true
}

// SetPodsReady is the kubelet reporting every pod on the node Ready at now.
// It returns how many changed, and forwards nothing (a status update, as
// UpdatePodStatus).
func (c *Cluster) SetPodsReady(ctx context.Context, name string, now time.Time) int {
	c.mu.Lock()
	rec := c.lookup(name)
	if rec == nil {
		c.mu.Unlock()
		return 0
	}
	// The node's pods are copied at the first change: the old list may be
	// shared with a Sync in progress.
	var pods []*v1.Pod
	n := 0
	readyAt := func(cur *v1.Pod) *v1.Pod {
		p := *cur
		p.Status.Conditions = slices.Clone(cur.Status.Conditions)
		cond := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
		if j := slices.IndexFunc(p.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodReady }); j >= 0 {
			p.Status.Conditions[j] = cond
		} else {
			p.Status.Conditions = append(p.Status.Conditions, cond)
		}
		return &p
	}
	for i, cur := range rec.pods {
		if podReady(cur) {
			continue
		}
		if pods == nil {
			pods = slices.Clone(rec.pods)
		}
		p := readyAt(cur)
		pods[i] = p
		c.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}].pod = p
		n++
	}
	if n > 0 {
		rec.pods, rec.shared = pods, false
	}
	n += rec.setStampsReady(readyAt)
	c.counts.PodsMarkedReady += n
	c.mu.Unlock()
	return n
}
