package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// Controller is a node lifecycle controller: a monitor.Monitor fed by
// client-go shared informers and a workqueue, and applied with a clientset.
// Create it with New; run it with Run, or, in tests, drive it step by step
// with Start, ProcessEvents, MonitorPass and TaintPass. A Controller is safe
// for concurrent use.
type Controller struct {
	cfg     Config
	client  kubernetes.Interface
	clock   clock.WithTicker
	mon     *monitor.Monitor
	cluster *cluster
	queue   workqueue.TypedRateLimitingInterface[item]

	factories []informers.SharedInformerFactory
	synced    []cache.InformerSynced
	nodes     cache.SharedIndexInformer
	pods      cache.SharedIndexInformer

	kick           chan struct{} // wakes the tainting loop early
	evictKick      chan struct{} // wakes the eviction loop early
	progress       atomic.Uint64 // taints written so far (and, in legacy mode, pods evicted)
	evictProgress  atomic.Uint64 // pods evicted so far (taint-based mode)
	markQueue      workqueue.TypedRateLimitingInterface[item]
	asyncMarking   atomic.Bool // Run's marking workers take the monitor passes' Ready=False writes
	memoryReleased atomic.Bool // Run has released the initial sync's memory (ReleaseMemoryAfterSync)

	startOnce sync.Once
	startErr  error
	stopMu    sync.Mutex
	stopInf   context.CancelFunc // stops the informers started by Start

	knownMu   sync.Mutex
	known     map[string]knownNode // nodes seen by the monitor passes (RegisteredNode, RemovingNode)
	knownPass uint64               // recordNodeSetChanges calls, stamps knownNode.seen

	snapMu   sync.Mutex
	lastSnap time.Time // clock time of the last saved snapshot
	snapped  bool

	dev *deviceDuty // nil: the device duty is off (device.go)
}

// New returns a controller that watches Nodes (those NodeSelector selects),
// their Leases in LeaseNamespace and all Pods through client, and reads time
// from clk (clock.RealClock{} in production, a
// k8s.io/utils/clock/testing.FakeClock in tests: the monitor and tainting
// loops and the workqueue's delays all follow it). It builds its own
// informers (pods and nodes trimmed to what the controller reads, trim.go;
// managed fields stripped; the pods of each node kept by name, podindex.go); it writes through
// cfg.Clients (client for those left nil); nothing runs until Start or Run.
func New(client kubernetes.Interface, clk clock.WithTicker, cfg Config) (*Controller, error) {
	if client == nil || clk == nil {
		return nil, fmt.Errorf("%w: nil client or clock", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = v1.NamespaceNodeLease
	}
	if cfg.Snapshots == nil {
		cfg.Snapshots = NoSnapshots{}
	}
	tr := newTrimmer()
	trim := informers.WithTransform(tr.transform)
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync, trim,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = cfg.NodeSelector }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync, trim)
	leaseFactory := informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync, informers.WithTransform(stripManagedFields),
		informers.WithNamespace(cfg.LeaseNamespace))

	nodes := nodeFactory.Core().V1().Nodes()
	// The pod informer without the factory's namespace index (a key per
	// pod in a set per namespace, about 60 bytes per pod): pods are read
	// by key and by node (podsByNode), never listed by namespace.
	pods := podFactory.InformerFor(&v1.Pod{}, func(cl kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(cl, metav1.NamespaceAll, resync, cache.Indexers{}, nil)
	})
	leases := leaseFactory.Coordination().V1().Leases()

	c := &Controller{
		cfg:    cfg,
		client: client,
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "nodelifecycle", Clock: clk}),
		factories: []informers.SharedInformerFactory{nodeFactory, podFactory, leaseFactory},
		nodes:     nodes.Informer(),
		pods:      pods,
		kick:      make(chan struct{}, 1),
		evictKick: make(chan struct{}, 1),
	}
	c.markQueue = newMarkQueue(c)
	c.cluster = &cluster{
		clients:  cfg.Clients.withDefault(client),
		nodes:    nodes.Lister(),
		leases:   leases.Lister().Leases(cfg.LeaseNamespace),
		podIndex: pods.GetIndexer(),
		byNode:   newPodsByNode(),
		backoff:  cfg.ConflictBackoff,
		recorder: cfg.Recorder,
		failures: make(map[item]uint64),
		live:     liveCaches{cfg.LeaseNamespace, nodes.Informer(), leases.Informer()},
		mark:     func(it item) { c.markQueue.Add(it) },
	}
	mcfg := cfg.Monitor
	if mcfg.CancelledEvictions == 0 && cfg.Recorder != nil {
		// Record upstream's "Cancelling deletion of Pod" events.
		mcfg.CancelledEvictions = DefaultCancelledEvictions
	}
	mon, err := monitor.New(mcfg, c.cluster, c.emit)
	if err != nil {
		return nil, fmt.Errorf("nodecontroller: %w", err)
	}
	// Each node's conditions carry the time of that node's write, as
	// upstream's monitorNodeHealth.
	mon.SetNodeClock(clk.Now)
	if cfg.OnNodeHealth != nil {
		mon.SetNodeHealthObserver(cfg.OnNodeHealth)
	}
	c.mon = mon
	if cfg.DisableNodeLifecycle {
		// The node and lease informers are never started (their listers
		// stay empty) and the Monitor is never fed: only the pod informer
		// runs, for the device duty.
		c.factories = []informers.SharedInformerFactory{podFactory}
		c.synced = []cache.InformerSynced{c.pods.HasSynced}
	} else {
		nodeReg, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onNode,
			UpdateFunc: func(_, obj any) { c.onNode(obj) },
			DeleteFunc: c.onNode,
		})
		if err != nil {
			return nil, fmt.Errorf("nodecontroller: %w", err)
		}
		podReg, err := c.pods.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    c.onPodAdd,
			UpdateFunc: c.onPodUpdate,
			DeleteFunc: c.onPodDelete,
		})
		if err != nil {
			return nil, fmt.Errorf("nodecontroller: %w", err)
		}
		// Synced once the caches are, and the handlers have queued the
		// initial list.
		c.synced = []cache.InformerSynced{c.nodes.HasSynced, c.pods.HasSynced, leases.Informer().HasSynced,
			nodeReg.HasSynced, podReg.HasSynced}
	}
	if cfg.Devices.Enabled {
		if c.dev, err = newDeviceDuty(c, client, tr); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// stripManagedFields drops managed fields from cached objects: the
// controller never reads them, and they are often the largest part of an
// object (kube-controller-manager does the same). It never changes its
// argument: the object a transform receives may be shared with the client
// that decoded it (client-go's fake clientset hands a watcher the object it
// keeps), so it returns a shallow copy without managed fields (the copy
// shares the rest, which nobody writes) and the object itself when there is
// nothing to strip.
func stripManagedFields(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Node:
		if o.ManagedFields != nil {
			c := *o
			c.ManagedFields = nil
			return &c, nil
		}
	case *v1.Pod:
		if o.ManagedFields != nil {
			c := *o
			c.ManagedFields = nil
			return &c, nil
		}
	case *coordinationv1.Lease:
		if o.ManagedFields != nil {
			c := *o
			c.ManagedFields = nil
			return &c, nil
		}
	case runtime.Object:
		if a, err := meta.Accessor(o); err == nil && a.GetManagedFields() != nil {
			c := o.DeepCopyObject()
			if ca, err := meta.Accessor(c); err == nil {
				ca.SetManagedFields(nil)
				return c, nil
			}
		}
	}
	return obj, nil
}

// Monitor returns the decision loop, for Explain and Stats (and Health, to
// inspect the node health records).
func (c *Controller) Monitor() *monitor.Monitor { return c.mon }

// Cluster returns the informer-backed monitor.Cluster the Monitor reads and
// writes through. Its reads show what the controller's caches hold, which
// tests use to wait until the informers have caught up.
func (c *Controller) Cluster() monitor.Cluster { return c.cluster }

// ErrNotSynced is returned by Start and Run when ctx ends before the
// informer caches have synced.
var ErrNotSynced = errors.New("nodecontroller: informer caches did not sync")

// Start starts the informers (they stop when ctx is done), waits for their
// caches to sync, and restores the node health snapshot from
// Config.Snapshots (see restore: a snapshot that cannot be read is logged
// and skipped, it does not stop the controller). Only the first call does anything; later calls return
// its result. Run calls it; tests call it and then drive the controller
// with ProcessEvents, MonitorPass and TaintPass, and call Shutdown at the end.
func (c *Controller) Start(ctx context.Context) error {
	c.startOnce.Do(func() {
		ictx, cancel := context.WithCancel(ctx)
		c.stopMu.Lock()
		c.stopInf = cancel
		c.stopMu.Unlock()
		for _, f := range c.factories {
			f.Start(ictx.Done())
		}
		if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			c.startErr = ErrNotSynced
			return
		}
		if !c.cfg.DisableNodeLifecycle {
			c.restore(ctx)
		}
	})
	return c.startErr
}

// HasSynced reports whether Start has synced the informer caches, and
// the device duty (when on and the API server serves its resources) its
// own.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return c.dev == nil || c.dev.hasSynced()
}

// Shutdown stops the workqueue and the informers and waits for the
// informers' goroutines to end. Run does this itself.
func (c *Controller) Shutdown() {
	c.queue.ShutDown()
	c.markQueue.ShutDown()
	c.stopMu.Lock()
	if c.stopInf != nil {
		c.stopInf()
	}
	c.stopMu.Unlock()
	for _, f := range c.factories {
		f.Shutdown()
	}
	if c.dev != nil {
		c.dev.shutdown()
	}
}

// Run starts the controller and blocks until ctx is done: informers, then
// Config.Workers queue workers forwarding events to the Monitor, a monitor
// pass every Monitor.MonitorPeriod (the first at once), a tainting pass and
// an eviction pass each on a loop of its own every Monitor.TaintPeriod,
// earlier when their deadline or a new decision calls for it, and
// Monitor.Workers marking workers taking the monitor passes' pod
// Ready=False writes (loops.go: no duty waits behind another's writes);
// none of these with Config.DisableNodeLifecycle. With Config.Devices
// enabled, the device taint eviction duty runs on a loop of its own
// (device.go): StartDevices, whose caches do not hold the node duties (an
// API server that does not serve resource.k8s.io/v1 slices and claims
// leaves the duty off, with an error logged), then DevicePass whenever
// work is due or an informer event arrives.
// When ctx is done every loop stops and in-flight writes are cancelled
// with it; then, unless Config.SkipFinalSnapshot, Run saves a last
// snapshot (with a 10s timeout), the device one too. It returns
// ErrNotSynced when it cannot start, nil after a normal shutdown.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	base := klog.FromContext(ctx)
	logger := base.WithValues("controller", Name)
	ctx = klog.NewContext(ctx, logger)
	defer c.Shutdown()
	if err := c.Start(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	if !c.cfg.DisableNodeLifecycle {
		logger.Info("Starting controller", "workers", max(c.cfg.Workers, 1),
			"monitorPeriod", c.cfg.Monitor.MonitorPeriod, "gracePeriod", c.cfg.Monitor.Health.GracePeriod)
		for range max(c.cfg.Workers, 1) {
			wg.Go(func() {
				for c.processNext(ctx, c.queue) {
				}
			})
		}
		c.asyncMarking.Store(true)
		for range max(c.cfg.Monitor.Workers, 1) {
			wg.Go(func() {
				for c.processNext(ctx, c.markQueue) {
				}
			})
		}
		wg.Go(func() { c.monitorLoop(ctx) })
		wg.Go(func() { c.taintLoop(ctx) })
		wg.Go(func() { c.evictionLoop(ctx) })
	}
	if c.dev != nil {
		wg.Go(func() { c.dev.run(klog.NewContext(ctx, base)) }) // its logger names its own controller
	}
	if c.cfg.ReleaseMemoryAfterSync {
		wg.Go(func() { c.releaseMemoryAfterSync(ctx) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.markQueue.ShutDown()
	wg.Wait()
	if !c.cfg.DisableNodeLifecycle {
		defer logger.Info("Shutting down controller")
	}
	if c.cfg.SkipFinalSnapshot {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if !c.cfg.DisableNodeLifecycle {
		if err := c.SaveSnapshot(sctx); err != nil {
			logger.Error(err, "Saving the node health snapshot on shutdown")
		}
	}
	if c.dev != nil {
		if err := c.SaveDeviceSnapshot(sctx); err != nil {
			base.Error(err, "Saving the device taint eviction snapshot on shutdown", "controller", DeviceName)
		}
	}
	return nil
}

// releaseMemoryAfterSync waits until the workers have taken every item of
// the initial list (Start returns once the handlers have queued them all),
// checking every 100ms of the controller's clock, then returns the unused
// heap to the operating system, once (Config.ReleaseMemoryAfterSync).
func (c *Controller) releaseMemoryAfterSync(ctx context.Context) {
	for c.queue.Len() > 0 {
		if !c.sleep(ctx, 100*time.Millisecond, nil) {
			return
		}
	}
	debug.FreeOSMemory()
	c.memoryReleased.Store(true)
}

// MonitorPass runs one monitor pass at the clock's current time, then saves
// a snapshot if Config.SnapshotPeriod has passed since the last one. It
// does nothing once ctx is done: a controller that stopped (its leader
// lost the lease) writes nothing more, Kubernetes Events included.
func (c *Controller) MonitorPass(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := c.clock.Now()
	c.recordNodeSetChanges()
	if c.asyncMarking.Load() {
		ctx = context.WithValue(ctx, markingKey{}, true)
	}
	c.mon.MonitorPass(ctx, now)
	took := c.clock.Since(now)
	if c.cfg.OnMonitorPass != nil {
		c.cfg.OnMonitorPass(took, c.cluster.ListNodes())
	}
	if c.cfg.OnZones != nil {
		c.cfg.OnZones(took, c.mon.AppendZones(nil))
	}
	c.wake()
	c.maybeSnapshot(ctx, now)
}

// TaintPass runs one tainting pass and one eviction pass at the clock's
// current time (Monitor.TaintPass and Monitor.EvictionPass); nothing once
// ctx is done.
func (c *Controller) TaintPass(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := c.clock.Now()
	c.mon.TaintPass(ctx, now)
	c.mon.EvictionPass(ctx, c.clock.Now()) // not now: the tainting pass may have taken a while
}

// ReasonSnapshotUnreadable is the reason of the Warning Event recorded on
// the snapshot's object (the ConfigMap of a ConfigMapStore) when the
// snapshot cannot be read and the controller starts without it.
const ReasonSnapshotUnreadable = "SnapshotUnreadable"

// restore loads the snapshot and restores the records of the nodes the
// cache holds. Records of nodes that no longer exist are dropped (they
// would otherwise stay in the Tracker and be saved again forever). A
// snapshot that cannot be read is logged as an error and recorded as a
// Warning Event on the store's object (when the store has one, an
// ObjectReference method, as ConfigMapStore does), and the controller
// starts without it: every node gets a fresh grace period, as upstream
// always does.
func (c *Controller) restore(ctx context.Context) {
	logger := klog.FromContext(ctx)
	rs, err := c.cfg.Snapshots.Load(ctx)
	if err != nil && ctx.Err() != nil {
		return // stopping (leadership lost): no Event, the controller writes nothing more
	}
	if err != nil {
		logger.Error(err, "Cannot read the node health snapshot, starting without it: every node gets a fresh grace period")
		if ref, ok := c.cfg.Snapshots.(interface{ ObjectReference() *v1.ObjectReference }); ok && c.cfg.Recorder != nil {
			c.cfg.Recorder.Eventf(ref.ObjectReference(), v1.EventTypeWarning, ReasonSnapshotUnreadable,
				"Cannot read the node health snapshot, starting without it: %v", err)
		}
		return
	}
	kept := c.existing(rs)
	if dropped := len(rs) - len(kept); dropped > 0 {
		logger.Info("Dropped the snapshot records of nodes that no longer exist", "records", dropped)
	}
	if len(kept) > 0 {
		c.mon.Health().Restore(c.clock.Now(), kept)
		logger.Info("Restored node health snapshot", "nodes", len(kept))
	}
}

// SaveSnapshot saves the node health records to Config.Snapshots now: those
// of the nodes the cache holds (a record of a node deleted since is not
// saved).
func (c *Controller) SaveSnapshot(ctx context.Context) error {
	if _, none := c.cfg.Snapshots.(NoSnapshots); none {
		return nil
	}
	now := c.clock.Now()
	rs := c.mon.Health().Snapshot()
	kept := c.existing(rs)
	err := c.cfg.Snapshots.Save(ctx, kept)
	if err == nil {
		c.snapMu.Lock()
		c.lastSnap, c.snapped = now, true
		c.snapMu.Unlock()
	}
	return err
}

// existing returns the records of rs whose node the cache holds, in place.
func (c *Controller) existing(rs []nodehealth.Record) []nodehealth.Record {
	return slices.DeleteFunc(rs, func(r nodehealth.Record) bool { return c.cluster.GetNode(r.Name) == nil })
}

func (c *Controller) maybeSnapshot(ctx context.Context, now time.Time) {
	if _, none := c.cfg.Snapshots.(NoSnapshots); none {
		return
	}
	c.snapMu.Lock()
	due := !c.snapped || !now.Before(c.lastSnap.Add(c.cfg.SnapshotPeriod))
	c.snapMu.Unlock()
	if !due {
		return
	}
	if err := c.SaveSnapshot(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Saving the node health snapshot")
		if c.cfg.OnEvent != nil {
			c.cfg.OnEvent(monitor.Event{At: now, Kind: monitor.KindWriteFailed, Detail: "snapshot: " + err.Error()})
		}
	}
}

// emit counts the events that show the tainting loop made progress, records
// the Kubernetes Events upstream records, and forwards every event to
// Config.OnEvent.
func (c *Controller) emit(e monitor.Event) {
	switch e.Kind {
	case monitor.KindTaintAdded, monitor.KindTaintRemoved:
		c.progress.Add(1)
	case monitor.KindPodEvicted:
		if c.cfg.Monitor.PodEvictionTimeout > 0 {
			c.progress.Add(1) // legacy mode: the tainting pass deletes
		} else {
			c.evictProgress.Add(1)
		}
	}
	if c.cfg.Recorder != nil {
		c.recordEvent(e)
	}
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(e)
	}
}

// wake tells the tainting and eviction loops that new work may be due.
func (c *Controller) wake() {
	for _, k := range []chan struct{}{c.kick, c.evictKick} {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// sleep waits for d on the controller's clock, or for a wake-up when wake is
// not nil. It reports false when ctx is done.
func (c *Controller) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	case <-wake:
	}
	return true
}

// monitorLoop runs a monitor pass at once and then every MonitorPeriod.
func (c *Controller) monitorLoop(ctx context.Context) {
	for {
		c.MonitorPass(ctx)
		if !c.sleep(ctx, c.cfg.Monitor.MonitorPeriod, nil) {
			return
		}
	}
}
