package monitor

import (
	"errors"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Config is the whole policy of a node lifecycle controller. DefaultConfig
// returns the Kubernetes v1.37.2 defaults.
type Config struct {
	// Health holds the grace periods (--node-monitor-grace-period,
	// --node-startup-grace-period).
	Health nodehealth.Config
	// Zones holds the eviction rates and disruption thresholds.
	Zones zonestate.Policy
	// Evictor configures the NoExecute taint eviction controller.
	Evictor taints.EvictorConfig

	// MonitorPeriod is how often the caller runs MonitorPass
	// (--node-monitor-period, 5s).
	MonitorPeriod time.Duration
	// TaintPeriod is how often the caller runs TaintPass and EvictionPass
	// (upstream NodeEvictionPeriod, 100ms).
	TaintPeriod time.Duration
	// Workers is how many nodes MonitorPass processes at once (upstream 8),
	// 1 to MaxWorkers. 1 makes a pass fully deterministic, as a simulation
	// needs.
	Workers int

	// TaintRetry is how long a node waits in its zone queue when it cannot be
	// decided on (no Ready condition yet): upstream 50ms.
	TaintRetry time.Duration
	// WriteRetry is how long a node waits in its zone queue after a failed
	// taint (or, in legacy mode, pod deletion) write. Upstream retries at the
	// next token (1ns).
	WriteRetry time.Duration
	// EvictionRetry is how long a failed pod deletion waits before the
	// Evictor hands it out again. Unlike upstream (5 tries 10ms apart, then
	// abandoned, kubernetes/kubernetes#140639) it is retried until it
	// succeeds or is cancelled.
	EvictionRetry time.Duration

	// PodEvictionTimeout > 0 selects the pre-1.27 eviction mode
	// (--enable-taint-manager=false, removed in 1.27): no NoExecute taints;
	// a node's pods are all deleted through the zone queue once Ready has
	// been False for PodEvictionTimeout since its transition, or Unknown for
	// PodEvictionTimeout since the last heartbeat. 0 is the taint-based mode
	// of every release since 1.27.
	PodEvictionTimeout time.Duration

	// CancelledEvictions > 0 makes the Monitor report every cancelled
	// scheduled eviction as a KindEvictionCancelled Event (upstream records
	// "Cancelling deletion of Pod <ns>/<name>", cancelWorkWithEvent in
	// pkg/controller/tainteviction/taint_eviction.go); it bounds how many
	// are kept between two reports (taints.Evictor.KeepCancellations, at
	// most taints.MaxCancellationsLimit). They are reported by the
	// NodeChanged, PodChanged and EvictionPass call that follows the
	// cancellation (PodDeleted and NodeDeleted take no time: their
	// cancellations wait for the next of those). 0, the default, reports
	// none, so simulations keep their timelines.
	CancelledEvictions int

	// LeaseEvents is the caller's promise that it forwards every change of
	// a cached Lease to LeaseChanged (the Lease informer's add, update and
	// delete events), as it forwards Node changes to NodeChanged. MonitorPass
	// then skips the health evaluation of a node its last evaluation found
	// quiet: Ready and fresh with nothing to do (no health taint, not
	// queued, no write, no pods to mark) until its Deadline; or stale,
	// already Unknown, waiting in its zone queue or tainted, its pods
	// marked, with no live read to make. It is evaluated
	// again once its Node object or Lease changes, its Deadline passes or a
	// zone's state changes: until then upstream's tryUpdateNodeHealth would
	// find no new heartbeat and change nothing either, so every decision is
	// the same (quiet.go); only the work goes (a simulation of 65,000
	// nodes evaluates a node when its Lease is renewed, not at every
	// pass). Taint-based mode only, and not while a node clock is set
	// (SetNodeClock). A caller that changes the health Tracker's records
	// itself (Health().Restore, Forget, ResetProbes) does so before the
	// first pass. False, the default, evaluates every node at every pass.
	LeaseEvents bool
}

// DefaultConfig returns the Kubernetes v1.37.2 controller defaults.
func DefaultConfig() Config {
	return Config{
		Health:        nodehealth.DefaultConfig(),
		Zones:         zonestate.DefaultPolicy(),
		Evictor:       taints.DefaultEvictorConfig(),
		MonitorPeriod: 5 * time.Second,
		TaintPeriod:   100 * time.Millisecond,
		Workers:       8,
		TaintRetry:    50 * time.Millisecond,
		WriteRetry:    time.Nanosecond,
		EvictionRetry: 5 * time.Second,
	}
}

// LegacyPodEvictionTimeout is the default of the removed
// --pod-eviction-timeout flag.
const LegacyPodEvictionTimeout = 5 * time.Minute

// MaxWorkers bounds Config.Workers: each worker is a goroutine of every
// pass. Upstream's node lifecycle controller uses 8, and the largest
// default of kube-controller-manager's --concurrent-*-syncs flags is 50
// (the resourceclaim controller's); a thousand is more than any cluster
// needs and still a bounded number of goroutines.
const MaxWorkers = 1000

// ErrInvalidConfig is wrapped by New for a Config it rejects.
var ErrInvalidConfig = errors.New("monitor: invalid config")

// Validate reports whether New accepts c: the checks of New, those of
// nodehealth.NewTracker, zonestate.NewTracker and taints.NewEvictor
// included, without building anything that runs. A program calls it
// before it connects to anything, so that a bad setting stops it at once
// instead of after it has started (or won an election). The error wraps
// ErrInvalidConfig and names the field and its value.
func (c Config) Validate() error {
	err := c.validate()
	var errs []error
	if _, err := nodehealth.NewTracker(c.Health); err != nil {
		errs = append(errs, fmt.Errorf("node health config Health: %w", err))
	}
	if _, err := zonestate.NewTracker(c.Zones); err != nil {
		errs = append(errs, fmt.Errorf("zone policy Zones: %w", err))
	}
	if _, err := taints.NewEvictor(c.Evictor); err != nil {
		errs = append(errs, fmt.Errorf("evictor config Evictor: %w", err))
	}
	if cerr := errors.Join(errs...); cerr != nil {
		err = errors.Join(err, fmt.Errorf("%w: %w", ErrInvalidConfig, cerr))
	}
	return err
}

func (c Config) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
		pos  bool
	}{
		{"MonitorPeriod", c.MonitorPeriod, true},
		{"TaintPeriod", c.TaintPeriod, true},
		{"TaintRetry", c.TaintRetry, false},
		{"WriteRetry", c.WriteRetry, false},
		{"EvictionRetry", c.EvictionRetry, false},
		{"PodEvictionTimeout", c.PodEvictionTimeout, false},
	} {
		if d.v < 0 || (d.pos && d.v == 0) {
			errs = append(errs, fmt.Errorf("%s = %v must be %s", d.name, d.v, map[bool]string{true: "positive", false: "non-negative"}[d.pos]))
		}
	}
	if c.CancelledEvictions < 0 || c.CancelledEvictions > taints.MaxCancellationsLimit {
		errs = append(errs, fmt.Errorf("CancelledEvictions = %d must be in [0, %d]", c.CancelledEvictions, taints.MaxCancellationsLimit))
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("worker count Workers = %d must be in [1, %d] (MaxWorkers)", c.Workers, MaxWorkers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
