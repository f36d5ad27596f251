package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// Controller is a cloud node lifecycle controller: every MonitorPeriod it
// looks at each node in its informer cache, asks the cloud (through
// cloudprovider.InstancesV2) whether the instance of each node that is not
// Ready still exists and whether it is shut down, deletes the nodes whose
// instance is confirmed gone and taints the ones whose instance is shut
// down. Decisions come from a nodehealth.OrphanTracker (or, with
// Config.UpstreamStyle, from upstream's rules). Create it with New; run it
// with Run, or, in tests, Start it and call Pass. A Controller is safe for
// concurrent use; passes never overlap.
type Controller struct {
	cfg     Config
	client  kubernetes.Interface
	cloud   cloudprovider.InstancesV2
	clock   clock.WithTicker
	orphans *nodehealth.OrphanTracker // nil when UpstreamStyle

	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	lister  corelisters.NodeLister

	passMu sync.Mutex // one pass at a time

	startOnce sync.Once
	startErr  error
	stopMu    sync.Mutex
	stopInf   context.CancelFunc // stops the informer started by Start

	passDuration prometheus.Histogram // upstream's, observed by Pass

	mu            sync.Mutex
	seen          map[string]*nodeState  // by node name
	deleted       map[types.UID]struct{} // deleted by us, until the informer drops them
	stats         Stats
	providerCalls providerCalls // upstream's cloud_provider_calls_total
}

// nodeState is what the controller keeps per node beside the tracker.
type nodeState struct {
	uid types.UID
	// uninitEnd is when the uninitialized-node delay ends, on the
	// controller's clock (see uninitializedYoung).
	uninitEnd time.Time
	notBefore time.Time // the cloud's Retry-After
	unknown   bool      // the last existence answer was Unknown
}

// New returns a controller that watches the Nodes NodeSelector selects
// through client, asks cloud about their instances and reads time from clk
// (clock.RealClock{} in production, a k8s.io/utils/clock/testing.FakeClock
// in tests). Nothing runs until Start or Run.
func New(client kubernetes.Interface, cloud cloudprovider.InstancesV2, clk clock.WithTicker, cfg Config) (*Controller, error) {
	if client == nil || cloud == nil || clk == nil {
		return nil, fmt.Errorf("%w: nil client, cloud or clock", ErrInvalidConfig)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:     cfg,
		client:  client,
		cloud:   cloud,
		clock:   clk,
		seen:    make(map[string]*nodeState),
		deleted: make(map[types.UID]struct{}),

		passDuration: newPassDuration(),
	}
	if !cfg.UpstreamStyle {
		o, err := nodehealth.NewOrphanTracker(cfg.trackerPolicy())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		c.orphans = o
	}
	c.factory = informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync,
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = cfg.NodeSelector }))
	ni := c.factory.Core().V1().Nodes()
	c.nodes, c.lister = ni.Informer(), ni.Lister()
	if _, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.onDelete}); err != nil {
		return nil, fmt.Errorf("cloudnode: %w", err)
	}
	return c, nil
}

func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// onDelete drops what the controller keeps about a deleted node.
func (c *Controller) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.deleted, n.UID)
	if st := c.seen[n.Name]; st != nil && st.uid == n.UID {
		delete(c.seen, n.Name)
		if c.orphans != nil {
			c.orphans.Forget(n.Name)
		}
	}
}

// ErrNotSynced is returned by Start and Run when ctx ends before the
// informer cache has synced.
var ErrNotSynced = errors.New("cloudnode: informer cache did not sync")

// Start starts the informer (it stops when ctx is done or at Shutdown) and
// waits for its cache to sync. Only the first call does anything; later
// calls return its result.
func (c *Controller) Start(ctx context.Context) error {
	c.startOnce.Do(func() {
		ictx, cancel := context.WithCancel(ctx)
		c.stopMu.Lock()
		c.stopInf = cancel
		c.stopMu.Unlock()
		c.factory.Start(ictx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), c.nodes.HasSynced) {
			c.startErr = ErrNotSynced
		}
	})
	return c.startErr
}

// Shutdown stops the informer and waits for its goroutines to end. Run
// does this itself when it returns.
func (c *Controller) Shutdown() {
	c.stopMu.Lock()
	if c.stopInf != nil {
		c.stopInf()
	}
	c.stopMu.Unlock()
	c.factory.Shutdown()
}

// Run starts the controller (Start) and makes a pass at once and then
// every MonitorPeriod of its clock, until ctx is done; it returns nil then,
// or ErrNotSynced. It calls Shutdown on its way out.
func (c *Controller) Run(ctx context.Context) error {
	defer c.Shutdown()
	if err := c.Start(ctx); err != nil {
		return err
	}
	t := c.clock.NewTicker(c.cfg.MonitorPeriod)
	defer t.Stop()
	for {
		c.Pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Lister returns the controller's node cache, which tests use to wait until
// it has caught up.
func (c *Controller) Lister() corelisters.NodeLister { return c.lister }

// Pass looks at every cached node once (upstream's MonitorNodes): in name
// order with one ConcurrentNodeLifecycleSyncs, else split among that many
// workers. It records the pass's duration on the controller's clock in
// upstream's monitor_nodes_duration_seconds histogram, also when ctx ends
// it early.
func (c *Controller) Pass(ctx context.Context) {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	start := c.clock.Now()
	// The indexer's List is one presized slice; the lister's would grow
	// another. Nothing else in a steady-state pass with one worker
	// allocates.
	nodes := c.nodes.GetIndexer().List()
	slices.SortFunc(nodes, func(a, b any) int { return strings.Compare(nodeName(a), nodeName(b)) })
	c.mu.Lock()
	c.stats.Passes++
	c.mu.Unlock()
	if w := c.cfg.ConcurrentNodeLifecycleSyncs; w > 1 {
		workqueue.ParallelizeUntil(ctx, w, len(nodes), func(i int) { c.syncObject(ctx, nodes[i]) })
	} else {
		for _, obj := range nodes {
			if ctx.Err() != nil {
				break
			}
			c.syncObject(ctx, obj)
		}
	}
	// A clock stepped backwards during the pass counts as no time.
	c.passDuration.Observe(max(c.clock.Since(start), 0).Seconds())
}

// syncObject syncs obj if it is a node.
func (c *Controller) syncObject(ctx context.Context, obj any) {
	if n, ok := obj.(*v1.Node); ok {
		c.syncNode(ctx, n)
	}
}

// state returns the node's state, new when the name is new or now belongs
// to another UID (a node deleted and created again, its deletion perhaps
// unseen: the informer relisted). Call with c.mu held.
func (c *Controller) state(now time.Time, n *v1.Node) *nodeState {
	st := c.seen[n.Name]
	if st != nil && st.uid == n.UID {
		return st
	}
	// The OrphanTracker drops its record by itself when the UID changes.
	// The delay runs from the creationTimestamp, or from now when that is
	// zero or after now (clock skew). The server's wall time is read
	// against now once; the rest is measured on now's monotonic clock.
	start := n.CreationTimestamp.Time
	if start.IsZero() || start.After(now) {
		start = now
	}
	st = &nodeState{uid: n.UID, uninitEnd: now.Add(start.Sub(now) + c.cfg.Policy.UninitializedNodeDelay)}
	c.seen[n.Name] = st
	return st
}

// syncNode decides for one node.
func (c *Controller) syncNode(ctx context.Context, n *v1.Node) {
	logger := klog.FromContext(ctx)
	now := c.clock.Now()
	c.mu.Lock()
	if _, gone := c.deleted[n.UID]; gone {
		c.mu.Unlock()
		return
	}
	st := c.state(now, n)
	ready := isReady(n)
	if ready && c.orphans != nil {
		c.orphans.Observe(now, n, nodehealth.ExistenceUnknown) // Ready: resets, asks nothing
		st.unknown = false
	}
	wait := ""
	switch {
	case ready:
	case c.uninitializedYoung(now, n, st):
		wait = "uninitialized"
		c.stats.SkippedUninitialized++
	case c.orphans == nil:
	case now.Before(st.notBefore):
		wait = "retry-after"
		c.stats.SkippedBackoff++
	default:
		if next, ok := c.orphans.NextCheck(n.Name); ok && now.Before(next) {
			wait = "backoff"
			c.stats.SkippedBackoff++
		}
	}
	c.mu.Unlock()

	if ready {
		// Upstream removes the shutdown taint from a Ready node.
		if hasTaint(n, shutdownTaint) {
			c.setShutdownTaint(ctx, n, false)
		}
		return
	}
	if wait != "" {
		if v := logger.V(4); v.Enabled() {
			v.Info("Not asking the cloud yet", "node", n.Name, "wait", wait)
		}
		return
	}

	exists, err := c.cloud.InstanceExists(ctx, n)
	e := nodehealth.ClassifyExistence(exists, err)
	c.mu.Lock()
	c.stats.ExistsCalls[e]++
	c.providerCalls.observe(opInstanceExists, existsErr(exists, err))
	c.mu.Unlock()

	if c.orphans == nil { // upstream's MonitorNodes
		switch {
		case err != nil:
			logger.Error(err, "Checking whether the instance exists", "node", n.Name)
		case !exists:
			c.deleteNode(ctx, n)
		default:
			c.checkShutdown(ctx, n)
		}
		return
	}

	now = c.clock.Now()
	d := c.orphans.Observe(now, n, e)
	c.mu.Lock()
	st.unknown = d.Reason == nodehealth.OrphanCloudUnknown
	if after := retryAfter(err); after > 0 {
		// Capped as the Unknown backoff is: a provider's "retry after 100
		// years" must not silence a node for good.
		st.notBefore = now.Add(min(after, c.cfg.Policy.MaxUnknownBackoff))
	}
	c.mu.Unlock()
	if v := logger.V(2); v.Enabled() {
		v.Info("Cloud answered", "node", n.Name, "existence", e, "decision", d.Reason, "notFound", d.NotFound,
			"nextCheck", d.NextCheck, "err", err)
	}
	switch {
	case d.Delete:
		c.deleteNode(ctx, n)
	case e == nodehealth.ExistenceExists:
		c.checkShutdown(ctx, n)
	}
}

// deleteNode records DeletingNode and deletes the node, with a UID
// precondition so that a node created again under the same name is never
// deleted on its predecessor's answers.
func (c *Controller) deleteNode(ctx context.Context, n *v1.Node) {
	logger := klog.FromContext(ctx)
	ref := nodeRef(n)
	logger.Info("Deleting node since it is no longer present in cloud provider", "node", n.Name, "uid", n.UID)
	c.event(ref, v1.EventTypeNormal, ReasonDeletingNode,
		"Deleting node %s because it does not exist in the cloud provider", n.Name)
	err := c.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{
		Preconditions: metav1.NewUIDPreconditions(string(n.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Unable to delete node", "node", n.Name)
		c.event(ref, v1.EventTypeWarning, ReasonDeletingNodeFailed, "Failed deleting node %s: %v", n.Name, err)
		c.mu.Lock()
		c.stats.DeleteFailures++
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.stats.NodesDeleted++
	} // else: gone already
	c.deleted[n.UID] = struct{}{}
	if c.orphans != nil {
		c.orphans.Forget(n.Name)
	}
	delete(c.seen, n.Name)
}

// checkShutdown asks whether the existing instance is shut down and sets or
// removes the shutdown taint. Unlike upstream, which removes the taint only
// once the node is Ready again, a running instance removes it too.
func (c *Controller) checkShutdown(ctx context.Context, n *v1.Node) {
	shutdown, err := c.cloud.InstanceShutdown(ctx, n)
	c.mu.Lock()
	c.providerCalls.observe(opInstanceShutdown, err)
	switch {
	case err != nil:
		c.stats.ShutdownCalls.Errors++
	case shutdown:
		c.stats.ShutdownCalls.Shutdown++
	default:
		c.stats.ShutdownCalls.Running++
	}
	c.mu.Unlock()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Checking whether the instance is shut down", "node", n.Name)
		return
	}
	switch has := hasTaint(n, shutdownTaint); {
	case shutdown && !has:
		c.setShutdownTaint(ctx, n, true)
	case !shutdown && has && !c.cfg.UpstreamStyle:
		c.setShutdownTaint(ctx, n, false)
	}
}

// Stats returns the controller's counters.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	for _, st := range c.seen {
		if st.unknown {
			s.BackingOff++
		}
	}
	return s
}

// retryAfter returns the wait an error asks for through a
// RetryAfter() time.Duration method (an API's 429), or 0. The caller caps
// it at Policy.MaxUnknownBackoff.
func retryAfter(err error) time.Duration {
	if err == nil {
		return 0
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}

func nodeName(obj any) string {
	if n, ok := obj.(*v1.Node); ok {
		return n.Name
	}
	return ""
}

func isReady(n *v1.Node) bool {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return n.Status.Conditions[i].Status == v1.ConditionTrue
		}
	}
	return false
}

// uninitializedYoung reports whether n is a node the cloud controller has
// not initialized yet (no providerID and upstream's uninitialized taint)
// younger than Policy.UninitializedNodeDelay, so the cloud is not asked
// about it at all, as upstream. Its age is measured as the OrphanTracker
// measures it: from its creationTimestamp, or, when that is zero or after
// now (clock skew), from when this controller first saw it (state).
func (c *Controller) uninitializedYoung(now time.Time, n *v1.Node, st *nodeState) bool {
	if c.cfg.Policy.UninitializedNodeDelay <= 0 || n.Spec.ProviderID != "" || !hasTaint(n, uninitializedTaint) {
		return false
	}
	return now.Before(st.uninitEnd)
}
