package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// nodeIndex indexes the pod informer by spec.nodeName.
const nodeIndex = "node"

// Agent plays the kubelet for one or more Nodes: it registers them, renews
// their Leases, posts their status, and drives a podworker.Workers for the
// pods bound to them against a Runtime. Create it with New and start it
// with Run; the query methods are safe for concurrent use.
type Agent struct {
	cfg     Config
	client  kubernetes.Interface
	clock   clock.WithTicker
	workers *podworker.Workers

	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer

	nodes map[string]*node
	wake  chan struct{}

	// configMu serialises config events (informer handlers, static pod
	// files) with Housekeeping, as the kubelet's single sync loop does:
	// the desired set, SyncKnownPods and the runtime listing must see the
	// same config, or a pod added in between is taken for an orphan.
	configMu sync.Mutex

	mu      sync.Mutex
	cancels map[types.UID]context.CancelFunc // steps in flight
	exits   map[types.UID]RuntimePod         // last kill result, for the final status
	// written is, per pod, the start of the containers whose running
	// status the agent wrote (its status cache: a sync of the same run
	// writes nothing); resync marks the pods SyncStatuses found changed
	// by another writer, whose next sync writes again.
	written  map[types.UID]time.Time
	resync   map[types.UID]bool
	static   *staticSource
	counters Counters
	lastPub  podworker.Stats
	synced   bool
}

// Counters are the agent's own figures, beyond podworker.Stats.
type Counters struct {
	// Steps counts the steps run, by type; StepErrors the failed ones.
	Steps, StepErrors map[podworker.WorkType]int
	// PodsDeleted counts the final deletes (grace 0, UID precondition) the
	// agent sent and the API accepted.
	PodsDeleted int
	// StatusWrites counts pod status updates; StatusConflicts the ones the
	// API refused as stale.
	StatusWrites, StatusConflicts int
	// LeaseRenewals counts successful Lease updates; MaxRenewLag is the
	// longest delay between a renewal being due and it succeeding.
	LeaseRenewals int
	MaxRenewLag   time.Duration
	// NodeStatusPosts counts successful node status patches.
	NodeStatusPosts int
	// StatusSyncs counts status syncs (SyncStatuses), the last of which
	// started at LastStatusSync; StatusResyncs counts the pods they handed
	// to the workers.
	StatusSyncs, StatusResyncs int
	LastStatusSync             time.Time
	// Housekeepings counts housekeeping passes.
	Housekeepings int
}

// New returns an agent for cfg that talks to client on clk. It validates
// cfg (wrapping ErrInvalidConfig) and does no I/O.
func New(client kubernetes.Interface, clk clock.WithTicker, cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := podworker.New(cfg.PodWorker)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{cfg: cfg, client: client, clock: clk, workers: w,
		nodes: make(map[string]*node, len(cfg.Nodes)), wake: make(chan struct{}, 1),
		cancels: map[types.UID]context.CancelFunc{}, exits: map[types.UID]RuntimePod{},
		written: map[types.UID]time.Time{}, resync: map[types.UID]bool{},
		counters: Counters{Steps: map[podworker.WorkType]int{}, StepErrors: map[podworker.WorkType]int{}}}
	for _, n := range cfg.Nodes {
		a.nodes[n.Name] = newNode(n)
	}
	// One watch for every node: spec.nodeName=<name> for one node, every
	// bound pod otherwise (field selectors have no "in"), filtered by the
	// handlers and indexed by node.
	selector := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	if len(cfg.Nodes) == 1 {
		selector = fields.OneTermEqualSelector("spec.nodeName", cfg.Nodes[0].Name).String()
	}
	a.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
	a.informer = a.factory.Core().V1().Pods().Informer()
	if err := a.informer.AddIndexers(cache.Indexers{nodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*v1.Pod); ok {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if _, err := a.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.podEvent(nil, obj) },
		UpdateFunc: func(old, obj any) { a.podEvent(old, obj) },
		DeleteFunc: a.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.StaticPodPath != "" {
		a.static = newStaticSource(cfg.StaticPodPath)
	}
	return a, nil
}

// Workers returns the agent's pod worker (for queries and Stats).
func (a *Agent) Workers() *podworker.Workers { return a.workers }

// Counters returns a copy of the agent's counters.
func (a *Agent) Counters() Counters {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counters
	c.Steps, c.StepErrors = map[podworker.WorkType]int{}, map[podworker.WorkType]int{}
	for k, v := range a.counters.Steps {
		c.Steps[k] = v
	}
	for k, v := range a.counters.StepErrors {
		c.StepErrors[k] = v
	}
	return c
}

// PublishedStats returns the podworker.Stats of the last housekeeping pass,
// the values /metrics reports (upstream sets its gauges in
// HandlePodCleanups).
func (a *Agent) PublishedStats() podworker.Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastPub
}

// HasSynced reports whether the pod informer has synced and the first
// housekeeping pass (orphans included) ran.
func (a *Agent) HasSynced() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.synced
}

// Run registers the nodes, starts the informer, the node loops, the pod
// worker pool and housekeeping, and blocks until ctx is done. It returns
// ctx's error, or an error when the informer cannot sync.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	for _, n := range a.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); a.runNode(ctx, n) }()
	}
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.informer.HasSynced) {
		return fmt.Errorf("agent: pod informer did not sync: %w", ctx.Err())
	}
	if a.static != nil {
		a.syncStatic(ctx)
	}
	a.Housekeeping(ctx)
	a.mu.Lock()
	a.synced = true
	a.mu.Unlock()
	logger.V(2).Info("Agent started", "nodes", len(a.nodes))

	for range a.cfg.Parallelism {
		wg.Add(1)
		go func() { defer wg.Done(); a.worker(ctx) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := a.clock.NewTicker(a.cfg.HousekeepingPeriod)
		defer t.Stop()
		st := a.clock.NewTicker(a.cfg.StatusSyncPeriod)
		defer st.Stop()
		var files <-chan time.Time
		if a.static != nil {
			ft := a.clock.NewTicker(a.cfg.FileCheckFrequency)
			defer ft.Stop()
			files = ft.C()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-files:
				a.syncStatic(ctx)
			case <-t.C():
				a.Housekeeping(ctx)
			case <-st.C():
				a.SyncStatuses(ctx)
			}
		}
	}()
	<-ctx.Done()
	return ctx.Err()
}

// kick wakes one idle worker.
func (a *Agent) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// worker runs pod worker steps until ctx is done: it takes the next due
// step, wakes another worker in case more are due, runs it and completes
// it; when nothing is due it waits for the next deadline or a kick.
func (a *Agent) worker(ctx context.Context) {
	for ctx.Err() == nil {
		work, ok := a.workers.Next(a.clock.Now())
		if ok {
			a.kick()
			res := a.RunStep(ctx, work)
			a.workers.Complete(a.clock.Now(), work, res)
			a.kick()
			continue
		}
		var timer <-chan time.Time
		var t clock.Timer
		if d, ok := a.workers.NextDeadline(); ok {
			t = a.clock.NewTimer(d.Sub(a.clock.Now()))
			timer = t.C()
		}
		select {
		case <-ctx.Done():
		case <-a.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
	}
}
