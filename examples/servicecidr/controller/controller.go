// Package controller is the ServiceCIDR finalizer controller built on
// cidrfinalizer: client-go shared informers for ServiceCIDRs and IPAddresses
// feed a cidrfinalizer.Index, a rate-limited workqueue of ServiceCIDR names
// drives Index.Decide, and the decisions are applied with patches.
//
// It is the upstream kube-controller-manager "service-cidr-controller" with
// the cidrfinalizer fixes (see that package's doc). What it writes:
//
//   - the finalizer, added and removed with strategic-merge patches (never a
//     blind update); NotFound is ignored;
//   - the Ready condition, with a strategic-merge patch of the status
//     subresource, only when the decision carries one (so a steady object
//     causes no writes);
//   - nothing else: a decision's RequeueAfter becomes a delayed requeue.
//
// Event routing follows upstream (pkg/controller/servicecidrs/servicecidrs_controller.go
// at v1.37.2, its event handlers): a ServiceCIDR add requeues it
// and every ServiceCIDR overlapping it; an update requeues it, and, unlike
// upstream, also the overlapping ones when its CIDRs or its deletion state
// changed (the default ServiceCIDR may grow to dual-stack, PR #131263); a
// delete requeues it; an IPAddress add or delete requeues the ServiceCIDRs
// containing its address, and, unlike upstream (which has no IPAddress
// update handler), so does a change of its managed-by label. Failed syncs
// are retried with the workqueue's default controller rate limiter, 15
// times at most.
//
// Time comes from an injected clock.PassiveClock (clock.RealClock{} in
// production, a fake clock in tests). When it also implements
// clock.WithTicker (k8s.io/utils/clock/testing.FakeClock does), the
// workqueue's delayed requeues follow it too, so tests step time instead of
// sleeping.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kubelifecycle/lifecycle/cidrfinalizer"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Name is the controller's name and field manager, as upstream.
const Name = "service-cidr-controller"

// maxRetries is upstream's retry budget for one ServiceCIDR.
const maxRetries = 15

// Config configures a Controller. The zero value is usable: zero fields take
// the defaults documented on each.
type Config struct {
	// Finalizer is the decision policy (cidrfinalizer.DefaultConfig() is the
	// upstream one). It is used as is: a zero GracePeriod means none.
	Finalizer cidrfinalizer.Config
	// Workers is the number of queue workers, at most MaxWorkers; 0 means
	// 1.
	Workers int
	// OnSync, if set, is called after every sync of a ServiceCIDR, from the
	// worker, with the decision taken and applied (or the error). It must
	// not block. Tests and demos use it to observe the controller.
	OnSync func(Sync)
}

// MaxWorkers bounds Config.Workers, each a goroutine: upstream's
// servicecidrs controller runs 5 workers, and kube-controller-manager's
// --concurrent-*-syncs defaults go up to 50.
const MaxWorkers = 1000

// Validate reports whether New accepts cfg (the finalizer policy and the
// worker count), without connecting to anything: a program calls it before
// it creates its client.
func (c Config) Validate() error {
	if c.Workers < 0 || c.Workers > MaxWorkers {
		return fmt.Errorf("servicecidr controller: Workers = %d must be in [0, %d] (MaxWorkers)", c.Workers, MaxWorkers)
	}
	if _, err := cidrfinalizer.NewIndex(c.Finalizer); err != nil {
		return fmt.Errorf("servicecidr controller: %w", err)
	}
	return nil
}

// DefaultConfig returns the upstream policy with one worker.
func DefaultConfig() Config {
	return Config{Finalizer: cidrfinalizer.DefaultConfig(), Workers: 1}
}

// Sync reports one sync of one ServiceCIDR.
type Sync struct {
	Key      string
	Now      time.Time // the clock reading the decision was taken at
	Decision cidrfinalizer.Decision
	Err      error // a decision or API error; nil when the object is gone
}

// Controller is the ServiceCIDR finalizer controller. Create it with New and
// start it with Run.
type Controller struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	clock   clock.PassiveClock
	index   *cidrfinalizer.Index
	queue   workqueue.TypedRateLimitingInterface[string]
	synced  []cache.InformerSynced
	workers int
	onSync  func(Sync)
}

// New returns a controller that registers its event handlers on the
// ServiceCIDR and IPAddress informers of factory (networking.k8s.io/v1) and
// writes through client. clk must not be nil.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, clk clock.PassiveClock, cfg Config) (*Controller, error) {
	if client == nil || factory == nil || clk == nil {
		return nil, errors.New("servicecidr controller: nil client, informer factory or clock")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	index, err := cidrfinalizer.NewIndex(cfg.Finalizer)
	if err != nil {
		return nil, fmt.Errorf("servicecidr controller: %w", err)
	}
	qcfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: "servicecidrs"}
	if t, ok := clk.(clock.WithTicker); ok {
		qcfg.Clock = t
	}
	c := &Controller{
		client:  client,
		factory: factory,
		clock:   clk,
		index:   index,
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), qcfg),
		workers: max(cfg.Workers, 1),
		onSync:  cfg.OnSync,
	}
	cidrs := factory.Networking().V1().ServiceCIDRs().Informer()
	if _, err := cidrs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addServiceCIDR,
		UpdateFunc: c.updateServiceCIDR,
		DeleteFunc: c.deleteServiceCIDR,
	}); err != nil {
		return nil, fmt.Errorf("servicecidr controller: %w", err)
	}
	ips := factory.Networking().V1().IPAddresses().Informer()
	if _, err := ips.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addIPAddress,
		UpdateFunc: c.updateIPAddress,
		DeleteFunc: c.deleteIPAddress,
	}); err != nil {
		return nil, fmt.Errorf("servicecidr controller: %w", err)
	}
	c.synced = []cache.InformerSynced{cidrs.HasSynced, ips.HasSynced}
	return c, nil
}

// Run starts the informers (factory.Start is idempotent), waits for their
// caches, and processes the queue until ctx is done. It returns nil after a
// normal shutdown and an error if the caches never synced.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	ctx = klog.NewContext(ctx, logger)
	c.factory.Start(ctx.Done())
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		c.queue.ShutDown()
		return errors.New("servicecidr controller: informer caches did not sync")
	}
	logger.Info("Starting controller", "workers", c.workers)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.worker, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Shutting down controller")
	return nil
}

// Index returns the controller's index (read-only use: its decisions and
// routing helpers), for diagnostics.
func (c *Controller) Index() *cidrfinalizer.Index { return c.index }

func (c *Controller) enqueue(names ...string) {
	for _, n := range names {
		c.queue.Add(n)
	}
}

func (c *Controller) addServiceCIDR(obj any) {
	sc, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return
	}
	if err := c.index.SetServiceCIDR(sc); err != nil {
		utilruntime.HandleError(err)
	}
	c.enqueue(sc.Name)
	c.enqueue(c.index.OverlappingServiceCIDRs(sc)...)
}

func (c *Controller) updateServiceCIDR(oldObj, obj any) {
	sc, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return
	}
	if err := c.index.SetServiceCIDR(sc); err != nil {
		utilruntime.HandleError(err)
	}
	c.enqueue(sc.Name)
	if old, ok := oldObj.(*networkingv1.ServiceCIDR); ok &&
		(!slices.Equal(old.Spec.CIDRs, sc.Spec.CIDRs) || (old.DeletionTimestamp == nil) != (sc.DeletionTimestamp == nil)) {
		c.enqueue(c.index.OverlappingServiceCIDRs(old)...)
		c.enqueue(c.index.OverlappingServiceCIDRs(sc)...)
	}
}

func (c *Controller) deleteServiceCIDR(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	sc, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return
	}
	c.index.DeleteServiceCIDR(sc.Name)
	c.enqueue(sc.Name)
	c.enqueue(c.index.OverlappingServiceCIDRs(sc)...)
}

func (c *Controller) addIPAddress(obj any) {
	ip, ok := obj.(*networkingv1.IPAddress)
	if !ok {
		return
	}
	if err := c.index.SetIPAddress(ip); err != nil {
		utilruntime.HandleError(err)
	}
	c.enqueue(c.index.ContainingServiceCIDRs(ip)...)
}

func (c *Controller) updateIPAddress(oldObj, obj any) {
	ip, ok := obj.(*networkingv1.IPAddress)
	if !ok {
		return
	}
	if err := c.index.SetIPAddress(ip); err != nil {
		utilruntime.HandleError(err)
	}
	// Upstream ignores updates; the managed-by label can change, though.
	if old, ok := oldObj.(*networkingv1.IPAddress); ok &&
		old.Labels[networkingv1.LabelManagedBy] != ip.Labels[networkingv1.LabelManagedBy] {
		c.enqueue(c.index.ContainingServiceCIDRs(old)...)
		c.enqueue(c.index.ContainingServiceCIDRs(ip)...)
	}
}

func (c *Controller) deleteIPAddress(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ip, ok := obj.(*networkingv1.IPAddress)
	if !ok {
		return
	}
	c.index.DeleteIPAddress(ip.Name)
	c.enqueue(c.index.ContainingServiceCIDRs(ip)...)
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	s := c.sync(ctx, key)
	switch {
	case s.Err == nil:
		c.queue.Forget(key)
	case c.queue.NumRequeues(key) < maxRetries:
		klog.FromContext(ctx).V(2).Info("Error syncing ServiceCIDR, retrying", "serviceCIDR", key, "err", s.Err)
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		utilruntime.HandleErrorWithContext(ctx, s.Err, "Dropping ServiceCIDR out of the queue", "serviceCIDR", key)
	}
	if c.onSync != nil {
		c.onSync(s)
	}
	return true
}

// sync decides for one ServiceCIDR and applies the decision. The delayed
// requeue is registered first, at the clock reading the decision was taken
// at, so a clock step during the API writes cannot move the deadline.
func (c *Controller) sync(ctx context.Context, key string) Sync {
	now := c.clock.Now()
	d, err := c.index.Decide(now, key)
	s := Sync{Key: key, Now: now, Decision: d}
	switch {
	case errors.Is(err, cidrfinalizer.ErrNotFound):
		return s // gone: nothing to do
	case errors.Is(err, cidrfinalizer.ErrInvalidCIDR):
		// A retry cannot fix a malformed spec; an update event will requeue it.
		klog.FromContext(ctx).Info("Ignoring ServiceCIDR with a malformed CIDR", "serviceCIDR", key, "err", err)
		return s
	case err != nil:
		s.Err = err
		return s
	}
	if d.RequeueAfter > 0 {
		c.queue.AddAfter(key, d.RequeueAfter)
	}
	logger := klog.FromContext(ctx)
	if d.Action == cidrfinalizer.ActionAddFinalizer {
		if s.Err = c.patchFinalizer(ctx, key, true); s.Err != nil {
			return s
		}
	}
	if d.Condition != nil {
		if s.Err = c.patchCondition(ctx, key, d.Condition); s.Err != nil {
			return s
		}
	}
	switch d.Action {
	case cidrfinalizer.ActionRemoveFinalizer:
		if s.Err = c.patchFinalizer(ctx, key, false); s.Err == nil {
			logger.V(2).Info("Released ServiceCIDR", "serviceCIDR", key)
		}
	case cidrfinalizer.ActionBlock:
		logger.V(2).Info("ServiceCIDR deletion blocked", "serviceCIDR", key, "addresses", len(d.Blocking))
	}
	return s
}

func (c *Controller) patchFinalizer(ctx context.Context, name string, add bool) error {
	field := "finalizers"
	if !add {
		field = "$deleteFromPrimitiveList/finalizers"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: []string{cidrfinalizer.Finalizer}}})
	if err != nil {
		return err
	}
	_, err = c.client.NetworkingV1().ServiceCIDRs().Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: Name})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) patchCondition(ctx context.Context, name string, cond *metav1.Condition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []metav1.Condition{*cond}}})
	if err != nil {
		return err
	}
	_, err = c.client.NetworkingV1().ServiceCIDRs().Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: Name}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
