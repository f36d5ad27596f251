package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubelifecycle/lifecycle/taints"
)

// The device taint eviction duty: kube-controller-manager v1.37.2's
// device-taint-eviction-controller (pkg/controller/devicetainteviction,
// KEP-5055) on taints.DeviceEvictor, which makes every decision.
//
//	informers: ResourceSlices, ResourceClaims (resource.k8s.io/v1), the
//	controller's pod informer (shared), DeviceTaintRules (resource.k8s.io/v1,
//	dynamic client)
//	   │ add/update/delete: DeviceEvictor.SetSlice/SetClaim/SetPod/SetRule, ...
//	   ▼
//	device loop, at DeviceEvictor.NextDeadline or when an event arrives:
//	   RuleStatuses ──► server-side apply of devicetaintrules/status (EvictionInProgress)
//	   Due ───────────► Event DeviceTaintManagerEviction "Marking for deletion",
//	                    Patch(pod status DisruptionTarget, with the UID),
//	                    Delete(pod, UID precondition) ──► Done / Retry
//	   AppendCancelled ► Event DeviceTaintManagerEviction "Cancelling deletion"
//
// With the blast-radius limit (DeviceConfig.Evictor.BlastRadius, ours, off
// by default) a pass also releases the holds operators released
// (AnnotationReleaseEvictionHold) and records each hold change and each
// warning as an Event on the rules and slices concerned: devicehold.go.
// The DeviceEvictor judges its breakers at the pass (RuleStatuses, Due),
// which runs only once the informers have synced, so that no breaker is
// judged on the partial lists of a start.
//
// The handlers call the DeviceEvictor directly, as upstream's handlers
// update its maps under its mutex: it never blocks on I/O. The writes run on
// DeviceConfig.Workers goroutines (upstream's ConcurrentSyncs workers), the
// rule statuses of a pass before its deletions, so that a new rule's first
// status precedes the evictions it causes. A failed write is retried with
// upstream's per-item backoff (client-go's DefaultTypedControllerRateLimiter:
// 5 ms doubling to 1,000 s).
//
// Unlike upstream, which GETs the pod from the API server before each
// deletion, the pod is read from the shared informer cache (from the API
// server only when the cache does not have it): the node Evictor's path
// does the same, and the UID preconditions of the status patch and the
// delete keep a stale read from touching another pod.

// deviceDuty runs the device taint eviction duty of a Controller.
type deviceDuty struct {
	c        *Controller
	cfg      DeviceConfig
	ev       *taints.DeviceEvictor
	client   kubernetes.Interface // writes: Clients.Devices
	disc     discovery.DiscoveryInterface
	recorder record.EventRecorder // nil: no Events
	tr       *trimmer

	factory        informers.SharedInformerFactory
	slices, claims cache.SharedIndexInformer
	synced         []cache.InformerSynced // the handlers' registrations, the informers
	kick           chan struct{}

	startOnce   sync.Once
	startErr    error
	ruleFactory dynamicinformer.DynamicSharedInformerFactory // nil: no rules
	ruleStore   cache.Store                                  // the rules' cache; nil: no rules
	stopMu      sync.Mutex
	stop        context.CancelFunc
	active      bool // start found the resources served and synced

	mu             sync.Mutex
	statusFailures map[types.UID]int
	releases       map[string]ruleRelease // by rule name: rules with AnnotationReleaseEvictionHold

	// The pass' own (devicehold.go): only pass reads and writes them.
	dropped     uint64                           // CancelledDropped already logged
	warnDropped uint64                           // WarningsDropped already logged
	heldRefs    map[string][]*v1.ObjectReference // by driver: the objects its hold's Event went to
	releasedBy  map[string][]*v1.ObjectReference // by driver: the rules that released it in this pass
	holdBuf     []taints.DeviceDriverLimit
	warnBuf     []taints.DeviceWarning

	snapMu  sync.Mutex
	saved   *taints.DeviceSnapshot // the last one saved or restored
	lastTry time.Time              // clock time of the last save attempt (or restore)
	dirty   bool                   // pods were deleted since the last save
}

// ErrDevicesNotServed is returned by StartDevices (and logged by Run,
// which then runs the other duties without it) when the API server does
// not serve resource.k8s.io/v1 ResourceSlices and ResourceClaims.
var ErrDevicesNotServed = errors.New("nodecontroller: the API server does not serve resource.k8s.io/v1 resourceslices and resourceclaims: device taint eviction is off")

// newDeviceDuty builds the duty's DeviceEvictor, informers and handlers
// (nothing starts until StartDevices).
func newDeviceDuty(c *Controller, client kubernetes.Interface, tr *trimmer) (*deviceDuty, error) {
	cfg := c.cfg.Devices
	if !cfg.NoRules && cfg.Dynamic == nil {
		return nil, fmt.Errorf("%w: Devices.Dynamic is nil: DeviceTaintRules need a dynamic client (or set Devices.NoRules)", ErrInvalidConfig)
	}
	ev, err := taints.NewDeviceEvictor(cfg.Evictor)
	if err != nil {
		return nil, fmt.Errorf("nodecontroller: %w", err)
	}
	d := &deviceDuty{
		c: c, cfg: cfg, ev: ev, client: c.cluster.clients.Devices, disc: client.Discovery(), tr: tr,
		recorder: cfg.Recorder, kick: make(chan struct{}, 1), statusFailures: map[types.UID]int{},
		releases: map[string]ruleRelease{}, heldRefs: map[string][]*v1.ObjectReference{}, releasedBy: map[string][]*v1.ObjectReference{},
	}
	if d.recorder == nil {
		d.recorder = c.cfg.Recorder
	}
	d.factory = informers.NewSharedInformerFactoryWithOptions(client, c.cfg.Resync, informers.WithTransform(tr.transform))
	d.slices = d.factory.Resource().V1().ResourceSlices().Informer()
	d.claims = d.factory.Resource().V1().ResourceClaims().Informer()
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		fns cache.ResourceEventHandler
	}{
		{d.slices, cache.ResourceEventHandlerFuncs{AddFunc: d.onSlice, UpdateFunc: func(_, obj any) { d.onSlice(obj) }, DeleteFunc: d.onSliceDelete}},
		{d.claims, cache.ResourceEventHandlerFuncs{AddFunc: d.onClaim, UpdateFunc: func(_, obj any) { d.onClaim(obj) }, DeleteFunc: d.onClaimDelete}},
		{c.pods, cache.ResourceEventHandlerFuncs{AddFunc: d.onPodAdd, UpdateFunc: d.onPodUpdate, DeleteFunc: d.onPodDelete}},
	} {
		reg, err := h.inf.AddEventHandler(h.fns)
		if err != nil {
			return nil, fmt.Errorf("nodecontroller: %w", err)
		}
		d.synced = append(d.synced, h.inf.HasSynced, reg.HasSynced)
	}
	return d, nil
}

// Devices returns the device taint eviction duty's DeviceEvictor (for
// Explain), nil when the duty is off.
func (c *Controller) Devices() *taints.DeviceEvictor {
	if c.dev == nil {
		return nil
	}
	return c.dev.ev
}

// StartDevices starts the device taint eviction duty for a Controller
// driven step by step (Run does it itself): it calls Start, asks the API
// server whether it serves resource.k8s.io/v1 ResourceSlices, ResourceClaims
// and DeviceTaintRules, starts their informers (the rules' only when served
// and not DeviceConfig.NoRules), waits for their caches, and restores the
// device snapshot when Config.Snapshots is a DeviceSnapshotStore. Only the
// first call does anything. It returns ErrDevicesNotServed when the API
// server serves neither slices nor claims, ErrNotSynced when ctx ends
// first, and nil when the duty is off.
func (c *Controller) StartDevices(ctx context.Context) error {
	if c.dev == nil {
		return nil
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	return c.dev.start(ctx)
}

func (d *deviceDuty) start(ctx context.Context) error {
	d.startOnce.Do(func() {
		logger := klog.FromContext(ctx)
		served, rules := d.served(ctx)
		if !served {
			d.startErr = ErrDevicesNotServed
			return
		}
		ictx, cancel := context.WithCancel(ctx)
		d.stopMu.Lock()
		d.stop = cancel
		d.stopMu.Unlock()
		synced := slices.Clone(d.synced)
		switch {
		case d.cfg.NoRules:
			logger.Info("DeviceTaintRules ignored (DRADeviceTaintRules off)")
		case !rules:
			// Upstream's informer would retry the list forever and its
			// controller never start; this runs without the rules, as
			// with DRADeviceTaintRules off.
			logger.Error(nil, "The API server does not serve resource.k8s.io/v1 devicetaintrules: running without DeviceTaintRules")
		default:
			d.ruleFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(d.cfg.Dynamic, d.c.cfg.Resync, metav1.NamespaceAll, nil)
			inf := d.ruleFactory.ForResource(DeviceTaintRulesResource).Informer()
			if err := inf.SetTransform(d.tr.transform); err != nil {
				d.startErr = fmt.Errorf("nodecontroller: %w", err)
				return
			}
			reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: d.onRule, UpdateFunc: func(_, obj any) { d.onRule(obj) }, DeleteFunc: d.onRuleDelete,
			})
			if err != nil {
				d.startErr = fmt.Errorf("nodecontroller: %w", err)
				return
			}
			synced = append(synced, inf.HasSynced, reg.HasSynced)
			d.ruleStore = inf.GetStore()
			d.ruleFactory.Start(ictx.Done())
		}
		d.factory.Start(ictx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			d.startErr = ErrNotSynced
			return
		}
		d.synced = synced
		d.active = true
		d.restore(ctx)
	})
	return d.startErr
}

// served asks the API server which of the duty's resources it serves. An
// error other than NotFound counts as served (the informers then retry, as
// upstream's do).
func (d *deviceDuty) served(ctx context.Context) (slicesAndClaims, rules bool) {
	list, err := d.disc.ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, false
	case err != nil:
		klog.FromContext(ctx).Error(err, "Discovery of resource.k8s.io/v1 failed: assuming its resources are served")
		return true, true
	}
	has := map[string]bool{}
	for _, r := range list.APIResources {
		has[r.Name] = true
	}
	return has["resourceslices"] && has["resourceclaims"], has[DeviceTaintRulesResource.Resource]
}

// hasSynced reports whether the duty's caches have synced (true while it
// has not started, and when the API server does not serve it).
func (d *deviceDuty) hasSynced() bool {
	d.stopMu.Lock()
	started := d.stop != nil
	d.stopMu.Unlock()
	if !started {
		return true
	}
	for _, s := range d.synced {
		if !s() {
			return false
		}
	}
	return true
}

// shutdown stops the duty's informers.
func (d *deviceDuty) shutdown() {
	d.stopMu.Lock()
	if d.stop != nil {
		d.stop()
	}
	d.stopMu.Unlock()
	d.factory.Shutdown()
	if d.ruleFactory != nil {
		d.ruleFactory.Shutdown()
	}
}

// wake tells the device loop that new work may be due.
func (d *deviceDuty) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *deviceDuty) logError(err error, msg string, kv ...any) {
	if err != nil {
		klog.Background().Error(err, msg, append(kv, "controller", DeviceName)...)
	}
}

func (d *deviceDuty) onSlice(obj any) {
	if s, ok := obj.(*resourcev1.ResourceSlice); ok {
		d.logError(d.ev.SetSlice(d.c.clock.Now(), s), "ResourceSlice ignored", "resourceSlice", s.Name)
		d.wake()
	}
}

func (d *deviceDuty) onSliceDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if s, ok := obj.(*resourcev1.ResourceSlice); ok {
		d.ev.DeleteSlice(d.c.clock.Now(), s.Name)
		d.wake()
	}
}

func (d *deviceDuty) onClaim(obj any) {
	if c, ok := obj.(*resourcev1.ResourceClaim); ok {
		d.logError(d.ev.SetClaim(d.c.clock.Now(), c), "ResourceClaim ignored", "resourceClaim", klog.KObj(c))
		d.wake()
	}
}

func (d *deviceDuty) onClaimDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if c, ok := obj.(*resourcev1.ResourceClaim); ok {
		d.ev.DeleteClaim(d.c.clock.Now(), types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
		d.wake()
	}
}

func (d *deviceDuty) onRule(obj any) {
	r, ok := obj.(*cachedRule)
	if !ok {
		return
	}
	if r.decodeErr != nil {
		d.logError(r.decodeErr, "DeviceTaintRule not readable: it selects no device")
	}
	d.ev.SetRule(d.c.clock.Now(), r.rule)
	d.noteRelease(r)
	d.wake()
}

func (d *deviceDuty) onRuleDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if r, ok := obj.(*cachedRule); ok {
		d.ev.DeleteRule(d.c.clock.Now(), r.Name)
		d.forgetRelease(r.Name)
		d.wake()
	}
}

// onPodAdd hands a pod that uses claims to the DeviceEvictor (a pod
// without claims is not tracked: nothing to do).
func (d *deviceDuty) onPodAdd(obj any) {
	if p, ok := obj.(*cachedPod); ok && p.hasClaims() {
		d.setPod(p)
	}
}

// onPodUpdate hands the pod over when it uses claims, or used them (so
// that the DeviceEvictor forgets it), unless nothing it reads changed (a
// status update: upstream's handlePodChange skips them too).
func (d *deviceDuty) onPodUpdate(oldObj, obj any) {
	old, ok1 := oldObj.(*cachedPod)
	p, ok2 := obj.(*cachedPod)
	if !ok2 || !p.hasClaims() && (!ok1 || !old.hasClaims()) {
		return
	}
	if ok1 && old.nodeName == p.nodeName && old.sameUID(p) && (old.deleting == nil) == (p.deleting == nil) &&
		old.hasClaims() && reflect.DeepEqual(old.extra.claims, p.extra.claims) {
		return
	}
	d.setPod(p)
}

func (d *deviceDuty) setPod(p *cachedPod) {
	d.logError(d.ev.SetPod(d.c.clock.Now(), p.pod()), "Pod ignored", "pod", klog.KRef(p.namespace, p.name))
	d.wake()
}

// onPodDelete makes the DeviceEvictor forget the pod. The delete event of
// a pod the duty is evicting (its own Delete's, which the informer may
// deliver before the Delete call returns) needs no care: DeviceEvictor.Done
// after DeletePod still counts the pod for its DeviceTaintRules, as
// upstream counts every pod it deleted.
func (d *deviceDuty) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	_, key, ok := podKey(obj)
	if !ok {
		return
	}
	d.ev.DeletePod(key)
}

// run is the device loop of Run: start, then a pass whenever work is due
// or an event arrived, until ctx is done.
func (d *deviceDuty) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("controller", DeviceName)
	ctx = klog.NewContext(ctx, logger)
	if err := d.c.StartDevices(ctx); err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Device taint eviction does not run")
		}
		return
	}
	logger.Info("Starting", "numWorkers", d.cfg.Workers)
	for ctx.Err() == nil {
		d.pass(ctx)
		wait := time.Hour
		now := d.c.clock.Now()
		if at, ok := d.ev.NextDeadline(); ok {
			wait = at.Sub(now)
		}
		if at, ok := d.snapshotDue(); ok {
			wait = min(wait, at.Sub(now))
		}
		if !d.c.sleep(ctx, max(wait, time.Millisecond), d.kick) {
			break
		}
	}
	logger.Info("Shut down controller")
}

// DevicePass runs one pass of the device taint eviction duty at the
// clock's current time (StartDevices must have returned nil): the holds
// released by AnnotationReleaseEvictionHold are released, the due
// DeviceTaintRule statuses are written (the DeviceEvictor judges its
// breakers first, on every object the informers delivered), then the due
// pods are deleted, on up to DeviceConfig.Workers goroutines, and the
// cancellations, hold changes and warnings are recorded (a hold the pass
// started that an annotation releases is released then, for the next
// pass); the device snapshot is saved when Config.SnapshotPeriod has
// passed since the last save and something changed. It returns when every
// write has. Nothing once ctx is done, or when the duty is off.
func (c *Controller) DevicePass(ctx context.Context) {
	if c.dev == nil || ctx.Err() != nil || !c.dev.active {
		return
	}
	c.dev.pass(ctx)
}

func (d *deviceDuty) pass(ctx context.Context) {
	now := d.c.clock.Now()
	d.releaseHolds(ctx, now)
	// RuleStatuses, then Due, judge the breakers on every input so far
	// (the informers have synced): the hold changes are recorded after.
	statuses := d.ev.RuleStatuses(now)
	parallel(d.cfg.Workers, len(statuses), func(i int) { d.applyStatus(ctx, statuses[i]) })
	due := d.ev.Due(now)
	parallel(d.cfg.Workers, len(due), func(i int) { d.evict(ctx, due[i]) })
	if len(due) > 0 {
		d.snapMu.Lock()
		d.dirty = true
		d.snapMu.Unlock()
	}
	if d.recorder != nil {
		for _, x := range d.ev.AppendCancelled(nil) {
			d.recorder.Eventf(devicePodRef(x.Pod, x.UID), v1.EventTypeNormal, taints.DeviceEventReason, taints.DeviceEventCancelling)
		}
	} else {
		d.ev.AppendCancelled(nil)
	}
	d.recordHoldChanges(ctx)
	if d.releaseHolds(ctx, now) {
		d.wake() // a hold this pass started, released: its evictions at the next pass
	}
	// TimeAdded and selector hazards (DeviceEvictorConfig.KeepWarnings;
	// none are looked for by default, as upstream).
	d.recordWarnings(ctx)
	if n := d.ev.CancelledDropped(); n != d.dropped {
		klog.FromContext(ctx).Info("Cancellations not recorded as Events (too many at once)", "count", n-d.dropped)
		d.dropped = n
	}
	if at, ok := d.snapshotDue(); ok && !d.c.clock.Now().Before(at) {
		if err := d.c.SaveDeviceSnapshot(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Saving the device taint eviction snapshot")
		}
	}
}

// parallel runs fn(0..n-1) on up to workers goroutines and returns when all
// have returned.
func parallel(workers, n int, fn func(int)) {
	if n == 0 {
		return
	}
	if workers <= 1 || n == 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// deviceBackoff is upstream's per-item retry delay after attempt failed
// attempts (client-go's DefaultTypedControllerRateLimiter: 5 ms, doubling,
// at most 1,000 s).
func deviceBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 30 {
		return 1000 * time.Second
	}
	return min(5*time.Millisecond<<(attempt-1), 1000*time.Second)
}

// devicePodRef is the involved object of upstream's device Events: the
// pod's API version, kind, namespace, name and UID, nothing else
// (emitPodDeletionEvent, emitCancelPodDeletionEvent).
func devicePodRef(key types.NamespacedName, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: key.Namespace, Name: key.Name, UID: uid}
}

// evict performs one handed-out eviction as upstream's maybeDeletePod and
// addConditionAndDeletePod do, and reports the outcome to the
// DeviceEvictor: a pod gone or replaced (another UID) is done and not
// counted; one terminating already is done and counted (upstream counts
// it) without an Event; otherwise the Event, the DisruptionTarget
// condition and the delete with a UID precondition.
func (d *deviceDuty) evict(ctx context.Context, x taints.DeviceEviction) {
	pods := d.client.CoreV1().Pods(x.Pod.Namespace)
	pod, err := d.c.cluster.getPod(x.Pod.Namespace, x.Pod.Name)
	if apierrors.IsNotFound(err) {
		pod, err = pods.Get(ctx, x.Pod.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err) || err == nil && pod.UID != x.UID:
		d.ev.Done(d.c.clock.Now(), x, taints.DeviceGone)
		return
	case err != nil:
		d.retry(ctx, x, err)
		return
	case pod.DeletionTimestamp != nil:
		d.deleted(ctx, x)
		return
	}
	if d.recorder != nil {
		d.recorder.Eventf(devicePodRef(x.Pod, x.UID), v1.EventTypeNormal, taints.DeviceEventReason, taints.DeviceEventEvicting)
	}
	if patch := deviceDisruptionPatch(d.c.clock.Now(), pod); patch != nil {
		_, err = pods.Patch(ctx, x.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: DeviceName}, "status")
	}
	if err == nil {
		err = pods.Delete(ctx, x.Pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(x.UID))})
	}
	switch {
	case err == nil:
		d.deleted(ctx, x)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone, or replaced by a pod of the same name (the UID
		// precondition): upstream's next attempt finds that and stops.
		d.ev.Done(d.c.clock.Now(), x, taints.DeviceGone)
	default:
		d.retry(ctx, x, err)
	}
}

// deleted reports a deleted (or terminating) pod: Done, upstream's
// metrics and log line.
func (d *deviceDuty) deleted(ctx context.Context, x taints.DeviceEviction) {
	now := d.c.clock.Now()
	d.ev.Done(now, x, taints.DeviceDeleted)
	latency := now.Sub(x.At)
	if d.cfg.OnDeletion != nil {
		d.cfg.OnDeletion(latency)
	}
	klog.FromContext(ctx).V(2).Info("Evicted pod by deleting it", "pod", x.Pod, "latency", latency, "reason", deviceReasons(x.Taints))
}

func (d *deviceDuty) retry(ctx context.Context, x taints.DeviceEviction, err error) {
	after := deviceBackoff(x.Attempt)
	klog.FromContext(ctx).V(3).Info("Processing work item failed, will retry", "pod", x.Pod, "err", err, "after", after)
	d.ev.Retry(d.c.clock.Now(), x, after)
}

// deviceReasons formats the taints behind an eviction as upstream's
// evictionReason does ("ResourceSlice s driver/pool/device taint #0, ...").
func deviceReasons(ts []taints.DeviceTaintSource) string {
	var b []byte
	for i, t := range ts {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, t.String()...)
	}
	return string(b)
}

// deviceDisruptionPatch is the status patch upstream's
// addConditionAndDeletePod sends (apipod.UpdatePodCondition, then
// PatchPodStatus): the DisruptionTarget condition of
// taints.DeviceDisruptionTargetCondition, appended or replacing the pod's
// first one, its lastTransitionTime kept when that one was True already;
// nil when the pod has it already (status, reason, message and
// lastProbeTime equal). Every field of the condition is given (null
// deletes: upstream's condition has no observedGeneration nor
// lastProbeTime), and the pod's UID, as PatchPodStatus puts it, so that
// the patch cannot land on a pod re-created under the same name.
func deviceDisruptionPatch(now time.Time, pod *v1.Pod) []byte {
	want := taints.DeviceDisruptionTargetCondition(now)
	if old := podCondition(pod.Status.Conditions, v1.DisruptionTarget); old != nil {
		if old.Status == want.Status {
			want.LastTransitionTime = old.LastTransitionTime
		}
		if old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message &&
			old.LastProbeTime.Equal(&want.LastProbeTime) {
			return nil
		}
	}
	var p struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
		Status struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	p.Metadata.UID = pod.UID
	p.Status.Conditions = []map[string]any{{
		"type": want.Type, "status": want.Status, "reason": want.Reason, "message": want.Message,
		"lastTransitionTime": timeOrNull(want.LastTransitionTime), "lastProbeTime": nil, "observedGeneration": nil,
	}}
	b, err := json.Marshal(&p)
	if err != nil {
		return nil // cannot happen: strings and a time
	}
	return b
}

// applyStatus writes a rule's EvictionInProgress condition as upstream's
// maybeUpdateRuleStatus does: server-side apply of the status
// subresource, field manager device-taint-eviction-controller, force, the
// rule's UID as a precondition. A failure is retried with upstream's
// per-item backoff.
func (d *deviceDuty) applyStatus(ctx context.Context, s taints.DeviceRuleStatus) {
	_, err := d.cfg.Dynamic.Resource(DeviceTaintRulesResource).ApplyStatus(ctx, s.Rule, ruleStatusApply(s),
		metav1.ApplyOptions{FieldManager: DeviceName, Force: true})
	d.mu.Lock()
	if err == nil {
		delete(d.statusFailures, s.UID)
		d.mu.Unlock()
		klog.FromContext(ctx).V(4).Info("Updated DeviceTaintRule status", "deviceTaintRule", s.Rule, "condition", s.Condition)
		return
	}
	d.statusFailures[s.UID]++
	n := d.statusFailures[s.UID]
	d.mu.Unlock()
	after := deviceBackoff(n)
	klog.FromContext(ctx).V(3).Info("Processing work item failed, will retry", "deviceTaintRule", s.Rule, "err", err, "after", after)
	d.ev.RetryRuleStatus(d.c.clock.Now(), s, after)
}

// ruleStatusApply is the apply configuration upstream sends: the rule's
// name and UID and the one condition, every field given.
func ruleStatusApply(s taints.DeviceRuleStatus) *unstructured.Unstructured {
	c := s.Condition
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": DeviceTaintRulesResource.GroupVersion().String(),
		"kind":       "DeviceTaintRule",
		"metadata":   map[string]any{"name": s.Rule, "uid": string(s.UID)},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"observedGeneration": c.ObservedGeneration,
			"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		}}},
	}}
}

// DeviceSnapshotStore is a SnapshotStore that also keeps the device taint
// eviction duty's restart state (taints.DeviceSnapshot: the pods it
// evicted, so that one still terminating is not evicted or counted again,
// and each DeviceTaintRule's count of evicted pods, which upstream starts
// afresh). ConfigMapStore is one. Implementations must be safe for
// concurrent use.
type DeviceSnapshotStore interface {
	LoadDevices(ctx context.Context) (taints.DeviceSnapshot, error)
	SaveDevices(ctx context.Context, s taints.DeviceSnapshot) error
}

// restore loads the device snapshot, when Config.Snapshots keeps one, into
// the DeviceEvictor (after the caches synced, before the first pass). A
// snapshot that cannot be read is logged and recorded as the node
// snapshot's is (ReasonSnapshotUnreadable), and skipped: the duty starts
// as upstream always does.
func (d *deviceDuty) restore(ctx context.Context) {
	store, ok := d.c.cfg.Snapshots.(DeviceSnapshotStore)
	if !ok {
		return
	}
	logger := klog.FromContext(ctx)
	s, err := store.LoadDevices(ctx)
	if err == nil {
		s = d.existing(s)
		err = d.ev.Restore(d.c.clock.Now(), s)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		logger.Error(err, "Cannot read the device taint eviction snapshot, starting without it")
		if ref, ok := d.c.cfg.Snapshots.(interface{ ObjectReference() *v1.ObjectReference }); ok && d.recorder != nil {
			d.recorder.Eventf(ref.ObjectReference(), v1.EventTypeWarning, ReasonSnapshotUnreadable,
				"Cannot read the device taint eviction snapshot, starting without it: %v", err)
		}
		return
	}
	d.snapMu.Lock()
	d.saved, d.lastTry = &s, d.c.clock.Now()
	d.snapMu.Unlock()
	if len(s.Evicted)+len(s.Rules) > 0 {
		logger.Info("Restored device taint eviction snapshot", "evictedPods", len(s.Evicted), "rules", len(s.Rules))
	}
}

// existing returns the entries of s whose pod (by namespace, name and
// UID) or rule (by name and UID) the synced caches hold, in place. The
// DeviceEvictor keeps restored entries of objects it has not seen, and
// Snapshot reports them again, so without this the UIDs of pods deleted
// while no controller ran would be saved and restored forever.
func (d *deviceDuty) existing(s taints.DeviceSnapshot) taints.DeviceSnapshot {
	s.Evicted = slices.DeleteFunc(s.Evicted, func(e taints.DeviceEvictedPod) bool {
		p, err := d.c.cluster.getPod(e.Pod.Namespace, e.Pod.Name)
		return err != nil || p.UID != e.UID
	})
	s.Rules = slices.DeleteFunc(s.Rules, func(r taints.DeviceRuleCount) bool {
		if d.ruleStore == nil {
			return true
		}
		obj, ok, err := d.ruleStore.GetByKey(r.Rule)
		cr, isRule := obj.(*cachedRule)
		return err != nil || !ok || !isRule || cr.UID != r.UID
	})
	return s
}

// snapshotDue returns when the device snapshot is next to be saved: when
// a pass deleted pods since the last save, SnapshotPeriod after it.
func (d *deviceDuty) snapshotDue() (time.Time, bool) {
	if _, ok := d.c.cfg.Snapshots.(DeviceSnapshotStore); !ok {
		return time.Time{}, false
	}
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	if !d.dirty {
		return time.Time{}, false
	}
	if d.lastTry.IsZero() {
		return d.c.clock.Now(), true
	}
	return d.lastTry.Add(d.c.cfg.SnapshotPeriod), true
}

// SaveDeviceSnapshot saves the device taint eviction duty's snapshot
// (DeviceEvictor.Snapshot) when Config.Snapshots is a DeviceSnapshotStore
// and the snapshot changed since the last save; nil otherwise.
func (c *Controller) SaveDeviceSnapshot(ctx context.Context) error {
	if c.dev == nil || !c.dev.active {
		return nil
	}
	d := c.dev
	store, ok := c.cfg.Snapshots.(DeviceSnapshotStore)
	if !ok {
		return nil
	}
	s := d.ev.Snapshot()
	d.snapMu.Lock()
	same := d.saved != nil && reflect.DeepEqual(*d.saved, s)
	if same {
		d.dirty = false
	}
	d.snapMu.Unlock()
	if same {
		return nil
	}
	err := store.SaveDevices(ctx, s)
	d.snapMu.Lock()
	d.lastTry = c.clock.Now()
	if err == nil {
		d.saved, d.dirty = &s, false
	}
	d.snapMu.Unlock()
	return err
}
