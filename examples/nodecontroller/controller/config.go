package controller

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Name is the controller's name, used as the field manager of its writes and
// in its log lines.
const Name = "node-lifecycle-controller"

// Config configures a Controller: the decision policy (monitor.Config) plus
// the knobs of the client-go wiring. The API clients' QPS and burst belong to
// the caller's rest.Config, not here (see Clients). DefaultConfig returns
// the upstream v1.37.2 defaults.
type Config struct {
	// Monitor is the whole node lifecycle policy: grace periods, eviction
	// rates and thresholds, monitor and tainting periods, the Evictor
	// (Monitor.Evictor.UseTaintTimeAdded keeps countdowns across restarts)
	// and legacy mode. It is validated by monitor.New. The monitor reads
	// the controller's clock per node (monitor.Monitor.SetNodeClock), so
	// that each node's conditions carry the time of that node's write.
	Monitor monitor.Config

	// LeaseNamespace is where the node Leases live. Empty means
	// kube-node-lease (v1.NamespaceNodeLease), the only namespace kubelets
	// use.
	LeaseNamespace string
	// NodeSelector, when not empty, is a label selector: the controller sees
	// and manages only the nodes it selects (and only their Leases and pods
	// matter). Empty selects every node, as upstream. Useful to run several
	// controllers on one test cluster.
	NodeSelector string
	// Resync is the informers' resync period; 0 disables resyncs (the
	// kube-controller-manager default is 12h with jitter, and the monitor
	// pass re-reads every node anyway).
	Resync time.Duration
	// Workers is the number of workqueue workers that forward informer
	// events to the Monitor, at most MaxWorkers. 0 means 1.
	Workers int
	// ConflictBackoff paces the re-reads of a node taint write that hit a
	// conflict (retry.RetryOnConflict). It waits on real time: it is about
	// the API server, not the policy. The zero value means one attempt and
	// no retry; DefaultConfig has upstream's UpdateTaintBackoff (5 steps,
	// 100ms, jitter 1.0).
	ConflictBackoff wait.Backoff

	// Clients are the clients of the controller's write duties, so that
	// no duty queues behind another's client-side rate limiter; a nil one
	// is the client New is given. See Clients.
	Clients Clients

	// Snapshots persists the node health state so that a restart keeps the
	// grace-period countdowns and the pods-not-ready edges
	// (nodehealth.Tracker.Snapshot and Restore). nil means NoSnapshots.
	// Only the records of nodes that exist are restored and saved. A
	// snapshot that cannot be read does not stop the controller: it starts
	// without it (upstream behaviour), logs an error and records a Warning
	// Event (ReasonSnapshotUnreadable) through Recorder.
	Snapshots SnapshotStore
	// SnapshotPeriod is how often Run saves a snapshot, after a monitor
	// pass; 0 means after every pass. Run also saves one when it stops.
	SnapshotPeriod time.Duration

	// SkipFinalSnapshot, when true, keeps Run from saving a snapshot when
	// it stops. Set it when ctx ending may mean another replica writes
	// already (leader election: the lease was lost or released), so that
	// this one writes nothing after that; the periodic saves remain.
	SkipFinalSnapshot bool

	// ReleaseMemoryAfterSync, when true, makes Run return the memory the
	// initial sync used and no longer needs to the operating system once,
	// when the workers have taken the initial list's items
	// (debug.FreeOSMemory: one forced collection, tens of milliseconds at
	// 30,000 pods). The decoded objects of the initial list and the
	// garbage of handling them make the heap peak at start; without this
	// the Go runtime keeps those pages for minutes, and the process's RSS
	// shows them. DefaultConfig sets it; it changes no decision.
	ReleaseMemoryAfterSync bool

	// OnMonitorPass, if not nil, is called after every monitor pass (Run's
	// and MonitorPass') with the pass' duration on the controller's clock
	// and the nodes the informer cache holds then (shared: read only). The
	// metrics of examples/nodecontroller/metrics use it.
	OnMonitorPass func(took time.Duration, nodes []*v1.Node)
	// OnZones, if not nil, is called after every monitor pass (after
	// OnMonitorPass) with the pass' duration and the Monitor's zone decision
	// of that pass (Monitor.AppendZones; a new slice each time). The
	// metrics of examples/nodecontroller/metrics use it: the zone gauges
	// are those figures, as upstream's handleDisruption sets them.
	OnZones func(took time.Duration, zones []zonestate.ZoneDecision)
	// OnNodeHealth, if not nil, is called during every monitor pass for
	// each node with the time its health update took on the controller's
	// clock (reading its Lease, evaluating it, writing its status when
	// needed), as upstream observes each tryUpdateNodeHealth call. It runs
	// on the monitor's workers: it must be quick and safe for concurrent
	// use. metrics.Metrics.ObserveNodeHealth fits.
	OnNodeHealth func(node string, took time.Duration)

	// OnEvent, if not nil, receives every monitor.Event, synchronously, from
	// the goroutine that made the decision: it must be quick and safe for
	// concurrent use. main.go logs them with klog; tests record them.
	OnEvent func(monitor.Event)
	// Recorder, if not nil, records the Kubernetes Events upstream's
	// controllers record for the same decisions: NodeNotReady on a node
	// written Unknown, TaintManagerEviction (NodeControllerEviction and
	// DeletingAllPods in legacy mode) on evicted pods, and
	// TaintManagerEviction "Cancelling deletion of Pod" on a pod whose
	// scheduled eviction was cancelled (New then sets
	// Monitor.CancelledEvictions to DefaultCancelledEvictions when it is
	// 0). main.go passes a
	// record.EventBroadcaster's recorder; tests can pass
	// record.NewFakeRecorder. It is called like OnEvent, and client-go's
	// recorders never block.
	Recorder record.EventRecorder
	// EvictionRecorder, if not nil, records the Events of the taint
	// eviction side (TaintManagerEviction), which upstream records with
	// source component taint-eviction-controller, while Recorder's are
	// node-controller's. nil means Recorder.
	EvictionRecorder record.EventRecorder

	// DisableNodeLifecycle, when true, turns off the node lifecycle duties
	// (kube-controller-manager's node-lifecycle-controller and
	// taint-eviction-controller): no Node or Lease informer, no monitor,
	// tainting, eviction or marking loop, no node health snapshot. The pod
	// informer runs when Devices needs it. The zero value runs them, as
	// before.
	DisableNodeLifecycle bool
	// Devices configures the device taint eviction duty
	// (kube-controller-manager's device-taint-eviction-controller), off
	// unless Devices.Enabled. See DeviceConfig.
	Devices DeviceConfig
}

// DeviceName is the device taint eviction duty's name: the name of
// kube-controller-manager v1.37.2's device-taint-eviction-controller
// (cmd/kube-controller-manager/names), its Event source component and the
// field manager of its DeviceTaintRule status writes, as upstream's.
const DeviceName = taints.DeviceControllerName

// DeviceConfig configures the device taint eviction duty: pods using a
// ResourceClaim allocated a device with a NoExecute taint (in its
// ResourceSlice, or from a DeviceTaintRule) that the claim does not
// tolerate are deleted, as kube-controller-manager v1.37.2's
// device-taint-eviction-controller does (pkg/controller/devicetainteviction;
// the decisions are taints.DeviceEvictor's). It shares the controller's pod
// informer and watches ResourceSlices, ResourceClaims (resource.k8s.io/v1)
// and, unless NoRules, DeviceTaintRules (resource.k8s.io/v1, through
// Dynamic: client-go v0.35 has no typed client for them).
type DeviceConfig struct {
	// Enabled runs the duty. DefaultConfig leaves it off: it needs
	// Dynamic for the rules (main.go turns it on, as
	// kube-controller-manager's --controllers default does).
	Enabled bool
	// NoRules ignores DeviceTaintRules (no informer, no status writes), as
	// upstream with the DRADeviceTaintRules feature gate off. The duty
	// also runs without rules when the API server does not serve
	// resource.k8s.io/v1 devicetaintrules (see Controller.Run).
	NoRules bool
	// Evictor is the DeviceEvictor's configuration (rule status period,
	// limits). DefaultConfig sets taints.DefaultDeviceEvictorConfig().
	// With Evictor.BlastRadius (ours, off by default) the duty records
	// each driver's hold changes as Events on the DeviceTaintRules and
	// ResourceSlices behind them and releases the holds operators release
	// with AnnotationReleaseEvictionHold; with Evictor.KeepWarnings > 0 it
	// records each warning as a Warning Event on its slice or rule (see
	// devicehold.go).
	Evictor taints.DeviceEvictorConfig
	// Workers is how many deletions and rule status writes run at once
	// (kube-controller-manager's --concurrent-device-taint-eviction-syncs,
	// default 8), in [1, MaxWorkers].
	Workers int
	// Dynamic reads DeviceTaintRules and writes their status (server-side
	// apply of the EvictionInProgress condition, as upstream). Required
	// unless NoRules.
	Dynamic dynamic.Interface
	// Recorder, if not nil, records the duty's Events
	// (DeviceTaintManagerEviction), which upstream records with source
	// component device-taint-eviction-controller. nil means Recorder.
	Recorder record.EventRecorder
	// OnDeletion, if not nil, is called for every pod the duty deleted
	// (or found terminating already, as upstream counts it) with the time
	// from when the eviction was due to now, on the controller's clock:
	// upstream's device_taint_eviction_controller_pod_deletions_total and
	// pod_deletion_duration_seconds (metrics.Metrics.ObserveDeviceDeletion
	// fits). It must be safe for concurrent use.
	OnDeletion func(latency time.Duration)
	// OnWarning, if not nil, is called for every warning the DeviceEvictor
	// reports (Evictor.KeepWarnings > 0), from the duty's loop
	// (metrics.Metrics.ObserveDeviceWarning fits).
	OnWarning func(taints.DeviceWarning)
}

// Clients are the clients of the controller's separate write duties. Each
// should be built from its own rest.Config (kubernetes.NewForConfig gives
// each its own QPS/burst token bucket), as kube-controller-manager's
// node-lifecycle-controller and taint-eviction-controller each have their
// own client and --kube-api-qps/--kube-api-burst apply to each. With one
// shared client, a large outage queues the NoExecute taints behind
// thousands of pod Ready=False writes and deletions. The informers and the
// snapshot use the client New is given; Kubernetes Events go through the
// caller's recorders.
type Clients struct {
	// NodeStatus writes the nodes' Unknown conditions (the monitor pass).
	NodeStatus kubernetes.Interface
	// Marking writes the pods' Ready=False conditions (upstream
	// MarkPodsNotReady) and, in legacy mode, their NodeLost reason.
	Marking kubernetes.Interface
	// Taints writes the nodes' taints and beta labels, and reads a node
	// again after a conflict.
	Taints kubernetes.Interface
	// Evictions writes the DisruptionTarget conditions and deletes the
	// pods (upstream's taint-eviction-controller).
	Evictions kubernetes.Interface
	// Devices writes the device taint eviction duty's DisruptionTarget
	// conditions and deletes its pods (upstream's
	// device-taint-eviction-controller has a client of its own).
	Devices kubernetes.Interface
}

// withDefault returns cs with every nil client set to client.
func (cs Clients) withDefault(client kubernetes.Interface) Clients {
	for _, c := range []*kubernetes.Interface{&cs.NodeStatus, &cs.Marking, &cs.Taints, &cs.Evictions, &cs.Devices} {
		if *c == nil {
			*c = client
		}
	}
	return cs
}

// DefaultConfig returns the upstream defaults: monitor.DefaultConfig(), the
// kube-node-lease namespace, no resync, 4 workers (upstream's pod-update
// worker count), upstream's taint-write backoff and no snapshots; the
// memory of the initial sync released once (ReleaseMemoryAfterSync); the
// device duty off, with upstream's settings when turned on
// (taints.DefaultDeviceEvictorConfig, 8 workers).
func DefaultConfig() Config {
	return Config{
		Monitor:                monitor.DefaultConfig(),
		LeaseNamespace:         v1.NamespaceNodeLease,
		Workers:                4,
		ConflictBackoff:        wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 1, Jitter: 1},
		SnapshotPeriod:         30 * time.Second,
		ReleaseMemoryAfterSync: true,
		Devices:                DeviceConfig{Evictor: taints.DefaultDeviceEvictorConfig(), Workers: DefaultDeviceWorkers},
	}
}

// DefaultDeviceWorkers is DeviceConfig.Workers' default: kube-controller-manager
// v1.37.2's --concurrent-device-taint-eviction-syncs
// (RecommendedDefaultDeviceTaintEvictionControllerConfiguration).
const DefaultDeviceWorkers = 8

// MaxWorkers bounds Config.Workers, each a goroutine: upstream's
// --concurrent-*-syncs flags have no maximum but default to 1 to 50, and
// the node lifecycle controller uses 4 pod workers; monitor.MaxWorkers
// gives the reasoning.
const MaxWorkers = monitor.MaxWorkers

// ErrInvalidConfig is wrapped by New for a Config it rejects.
var ErrInvalidConfig = errors.New("nodecontroller: invalid config")

// Validate reports whether New accepts c, Monitor included
// (monitor.Config.Validate), without connecting to anything: a program
// checks its settings with it before it creates a client or joins a
// leader election. The error wraps ErrInvalidConfig (and, for Monitor,
// monitor.ErrInvalidConfig) and names each bad field and its value.
func (c Config) Validate() error {
	err := c.validate()
	if merr := c.Monitor.Validate(); merr != nil {
		err = errors.Join(err, fmt.Errorf("%w: Monitor: %w", ErrInvalidConfig, merr))
	}
	return err
}

func (c Config) validate() error {
	var errs []error
	if c.Resync < 0 {
		errs = append(errs, fmt.Errorf("resync period Resync = %v must be non-negative", c.Resync))
	}
	if c.SnapshotPeriod < 0 {
		errs = append(errs, fmt.Errorf("SnapshotPeriod = %v must be non-negative", c.SnapshotPeriod))
	}
	if c.Workers < 0 || c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("worker count Workers = %d must be in [0, %d] (MaxWorkers)", c.Workers, MaxWorkers))
	}
	if c.ConflictBackoff.Steps < 0 || c.ConflictBackoff.Duration < 0 || c.ConflictBackoff.Jitter < 0 || c.ConflictBackoff.Factor < 0 {
		errs = append(errs, fmt.Errorf("ConflictBackoff = %+v must not be negative", c.ConflictBackoff))
	}
	if _, err := labels.Parse(c.NodeSelector); err != nil {
		errs = append(errs, fmt.Errorf("NodeSelector %q: %w", c.NodeSelector, err))
	}
	if c.DisableNodeLifecycle && !c.Devices.Enabled {
		errs = append(errs, errors.New("DisableNodeLifecycle with Devices.Enabled false: no duty to run"))
	}
	if d := c.Devices; d.Enabled {
		if d.Workers < 1 || d.Workers > MaxWorkers {
			errs = append(errs, fmt.Errorf("Devices.Workers = %d must be in [1, %d] (MaxWorkers)", d.Workers, MaxWorkers))
		}
		if _, err := taints.NewDeviceEvictor(d.Evictor); err != nil {
			errs = append(errs, fmt.Errorf("Devices.Evictor: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
