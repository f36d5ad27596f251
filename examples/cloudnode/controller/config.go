package controller

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// Name is the controller's name: the source component of its Events (the
// one upstream's controller uses, so dashboards and alerts carry over), the
// field manager of its writes and its user agent.
const Name = "cloud-node-lifecycle-controller"

// Config configures a Controller. DefaultConfig returns upstream's values.
type Config struct {
	// Policy decides when a node whose instance is reported gone is deleted,
	// how a cloud that cannot answer is backed off and how long an
	// uninitialized node is left alone (nodehealth.OrphanTracker).
	// Policy.MaxUnknownBackoff also caps the wait a provider's Retry-After
	// asks for. With UpstreamStyle only Policy.UninitializedNodeDelay is
	// used.
	Policy nodehealth.OrphanPolicy
	// MonitorPeriod is how often every node is looked at (upstream's
	// --node-monitor-period, 5s). A node in an Unknown backoff, or waiting
	// for its NotFound answers to age, is not asked about before its
	// NextCheck.
	MonitorPeriod time.Duration
	// ConcurrentNodeLifecycleSyncs is how many nodes a pass syncs at once
	// (upstream's --concurrent-node-lifecycle-syncs, new in v1.37, default
	// 1). With 1 a pass syncs the nodes one after another, in name order,
	// as v1.36 did; with more, the pass is split among that many workers
	// (workqueue.ParallelizeUntil, as upstream's MonitorNodes at v1.37.2),
	// so one node's slow cloud call does not hold up the others. It must be
	// between 1 and MaxConcurrentNodeLifecycleSyncs.
	ConcurrentNodeLifecycleSyncs int
	// UpstreamStyle makes the controller decide as upstream's MonitorNodes
	// does, for comparison: every error is read as "exists" (the node is
	// kept and asked about again next period), (false, nil) deletes at
	// once, no confirmations, no backoff, and the shutdown taint is removed
	// only when the node is Ready again.
	UpstreamStyle bool

	// NodeSelector, when not empty, is a label selector: the controller sees
	// and manages only the nodes it selects. Empty selects every node.
	NodeSelector string
	// Resync is the informer's resync period; 0 disables resyncs.
	Resync time.Duration
	// ConflictBackoff paces the re-reads of a taint write that hit a
	// conflict (real time: it is about the API server, not the policy). The
	// zero value means one attempt; DefaultConfig has upstream's
	// UpdateTaintBackoff (5 steps, 100ms, jitter 1.0).
	ConflictBackoff wait.Backoff
	// Recorder, if not nil, records upstream's Events: DeletingNode (Normal)
	// before a node is deleted and DeletingNodeFailed (Warning) when the
	// deletion fails.
	Recorder record.EventRecorder
}

// DefaultConfig returns upstream's values: nodehealth.DefaultOrphanPolicy
// (one NotFound answer deletes; an uninitialized node is left alone for a
// minute; unlike upstream, an Unknown answer backs off from 5s doubling to
// 5m), a 5s monitor period and one node sync at a time.
func DefaultConfig() Config {
	return Config{
		Policy:                       nodehealth.DefaultOrphanPolicy(),
		MonitorPeriod:                5 * time.Second,
		ConcurrentNodeLifecycleSyncs: 1,
		ConflictBackoff:              wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 1, Jitter: 1},
	}
}

// MaxConcurrentNodeLifecycleSyncs bounds Config.ConcurrentNodeLifecycleSyncs.
// Unlike upstream, which only requires at least 1, the count is bounded:
// each worker holds one cloud call in flight, so the bound is the most
// concurrent calls a pass can make, and a typo (10000) fails at start
// instead of becoming a burst of thousands of calls at the cloud's API
// once the nodes are NotReady.
const MaxConcurrentNodeLifecycleSyncs = 256

// ErrInvalidConfig is wrapped by New for a Config it rejects.
var ErrInvalidConfig = errors.New("cloudnode: invalid config")

// Validate reports whether New accepts c (the orphan policy included,
// unless UpstreamStyle), without connecting to anything: a program calls
// it before it creates its client. The error wraps ErrInvalidConfig.
func (c Config) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	if !c.UpstreamStyle {
		if _, err := nodehealth.NewOrphanTracker(c.trackerPolicy()); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// trackerPolicy is the policy of the controller's orphan tracker: Policy
// without the uninitialized-node delay, which is the controller's own
// check (uninitializedYoung), in both modes; the tracker applying it again
// would start a second delay when the first one ends.
func (c Config) trackerPolicy() nodehealth.OrphanPolicy {
	p := c.Policy
	p.UninitializedNodeDelay = 0
	return p
}

func (c Config) validate() error {
	var errs []error
	if c.MonitorPeriod <= 0 {
		errs = append(errs, fmt.Errorf("MonitorPeriod = %v must be positive", c.MonitorPeriod))
	}
	if c.ConcurrentNodeLifecycleSyncs < 1 || c.ConcurrentNodeLifecycleSyncs > MaxConcurrentNodeLifecycleSyncs {
		errs = append(errs, fmt.Errorf("ConcurrentNodeLifecycleSyncs (--concurrent-node-lifecycle-syncs) = %d, want 1..%d",
			c.ConcurrentNodeLifecycleSyncs, MaxConcurrentNodeLifecycleSyncs))
	}
	if c.Resync < 0 {
		errs = append(errs, fmt.Errorf("resync period Resync = %v must be non-negative", c.Resync))
	}
	if c.Policy.UninitializedNodeDelay < 0 { // the controller's own check, in both modes
		errs = append(errs, fmt.Errorf("Policy.UninitializedNodeDelay = %v must be non-negative", c.Policy.UninitializedNodeDelay))
	}
	if c.ConflictBackoff.Steps < 0 || c.ConflictBackoff.Duration < 0 || c.ConflictBackoff.Jitter < 0 || c.ConflictBackoff.Factor < 0 {
		errs = append(errs, fmt.Errorf("ConflictBackoff = %+v must not be negative", c.ConflictBackoff))
	}
	if _, err := labels.Parse(c.NodeSelector); err != nil {
		errs = append(errs, fmt.Errorf("NodeSelector %q: %w", c.NodeSelector, err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
