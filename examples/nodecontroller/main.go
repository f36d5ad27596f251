// Command nodecontroller runs a node lifecycle controller built from the
// lifecycle packages (examples/nodecontroller/controller) on the real
// clock, until interrupted: in a pod with the in-cluster configuration (its
// ServiceAccount), or against the cluster of -kubeconfig. It logs every
// decision with klog, records the Kubernetes Events upstream's controllers
// record (NodeNotReady, TaintManagerEviction, DeviceTaintManagerEviction,
// ...) and, with the device taints' blast-radius limit (the
// -device-taint-eviction-* flags, ours, off by default), its hold changes
// (DeviceTaintEvictionHeld, ...) on the DeviceTaintRules and
// ResourceSlices behind them, and serves /healthz,
// /readyz and /metrics over plain HTTP on -bind-address:-port.
//
// Every flag is checked, and the whole controller configuration built and
// validated, before the process creates a client: a bad value (say
// -node-monitor-period=-5s or -unhealthy-zone-threshold=7) exits with
// status 1 and an error naming it, without touching the API.
//
// With -leader-elect (the default) replicas elect a leader on a
// coordination.k8s.io Lease (-leader-elect-resource-namespace/-name), as
// kube-controller-manager does: only the leader runs the controller and
// writes; a replica that loses the lease stops every write at once and
// exits, to start again as a standby. A leader whose controller stops
// (it cannot be built or its Run returns) gives the Lease up once every
// write has stopped, so that a standby takes over at once, and exits with
// status 1 (kube-controller-manager v1.37 exits too, and releases only
// behind its alpha ControllerManagerReleaseLeaderElectionLockOnExit gate:
// cmd/kube-controller-manager/app/controllermanager.go, Run); until it has
// exited, /healthz fails. A new leader continues where the old one stopped: in
// this mode the node health snapshot ConfigMap and -use-taint-time-added
// are on by default.
//
// The garbage collector runs at GOGC=25 unless the GOGC environment
// variable says otherwise (gogc.go: a quarter less memory for a few percent
// more CPU); a GOGC the runtime cannot parse is an error.
//
// It runs kube-controller-manager's node-lifecycle-controller,
// taint-eviction-controller and device-taint-eviction-controller, chosen
// with kube-controller-manager's --controllers flag (all three by default;
// the first two together) and feature gates (DRADeviceTaints,
// DRADeviceTaintRules). Run it only where kube-controller-manager's own
// are off (for example
// --controllers=*,-node-lifecycle-controller,-taint-eviction-controller,-device-taint-eviction-controller,
// or a bare kube-apiserver), or the two will fight over the same taints and
// pods. deploy/ has the image and manifests (kubectl apply -k).
//
//	go run ./examples/nodecontroller -kubeconfig ~/.kube/config -leader-elect=false -v=2
//	go run ./examples/nodecontroller -h
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/internal/flagcheck"
	"github.com/kubelifecycle/lifecycle/examples/internal/httpserver"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/metrics"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/taints"
)

// Event source components, upstream's: the node lifecycle controller
// records as node-controller, the taint eviction controller as
// taint-eviction-controller (the device taint eviction controller as
// device-taint-eviction-controller: controller.DeviceName).
const (
	nodeComponent     = "node-controller"
	evictionComponent = "taint-eviction-controller"
)

// options are the command-line flags.
type options struct {
	kubeconfig         string
	qps                float64
	burst              int
	cfg                controller.Config
	fullQPS            float64 // < 0: unset (upstream: a Full zone uses the normal rate)
	legacy             bool
	snapshotCM         string // namespace/name
	podEvictionTimeout time.Duration

	leaderElect                  bool
	leaseDuration, renewDeadline time.Duration
	retryPeriod                  time.Duration
	leNamespace, leName          string

	bindAddress string
	port        int

	controllers *controllersFlag
	gates       gateSettings
	// deviceFields name the flags of the DeviceEvictor's fields (deviceFlag).
	deviceFields []deviceField

	set map[string]bool // flags given on the command line

	events  kubernetes.Interface // Events client; nil: the main client (tests)
	dynamic dynamic.Interface    // DeviceTaintRules client; nil: built from the main client's config (run), or none (tests)
}

// newFlagSet defines the flags on a new FlagSet, with the upstream defaults.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{cfg: controller.DefaultConfig(), controllers: newControllersFlag(), gates: gateSettings{deviceTaints: true, deviceTaintRules: true}}
	fs := flag.NewFlagSet("nodecontroller", flag.ContinueOnError)
	fs.SetOutput(out)
	m := &o.cfg.Monitor
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run against; empty: the in-cluster configuration (the pod's ServiceAccount), else the usual loading rules ($KUBECONFIG, ~/.kube/config)")
	fs.Float64Var(&o.qps, "kube-api-qps", 20, fmt.Sprintf("QPS to the API server of each of the %d clients (informers and node status; pod marking; taints; evictions; device taint evictions; Events), as kube-controller-manager's applies to each controller's client", duties))
	fs.IntVar(&o.burst, "kube-api-burst", 30, fmt.Sprintf("burst to the API server of each of the %d clients", duties))
	fs.DurationVar(&m.Health.GracePeriod, "node-monitor-grace-period", m.Health.GracePeriod, "silence after which a node is marked Unknown")
	fs.DurationVar(&m.Health.StartupGracePeriod, "node-startup-grace-period", m.Health.StartupGracePeriod, "grace for a node that never posted a Ready condition")
	fs.Var(&featureGates{&m.Health, &o.gates}, "feature-gates", "comma-separated Gate=true|false, as kube-controller-manager's; known: "+GateLeaseCircuitBreaker+" (default true: confirm with a live read before writing a node Unknown, and hold while the Lease or Node cache is behind; false: the v1.36 behaviour), "+
		GateDeviceTaints+" (default true; false: no "+ctrlDeviceTaintEviction+"), "+GateDeviceTaintRules+" (default true; false: DeviceTaintRules ignored), "+GateDynamicResourceAllocation+" (locked to true)")
	fs.Var(o.controllers, "controllers", "controllers to run, as kube-controller-manager's flag: '*' enables all on-by-default controllers, 'foo' enables foo, '-foo' disables foo; all: "+
		strings.Join(knownControllers, ", ")+" (on by default; "+ctrlNodeLifecycle+" and "+ctrlTaintEviction+" only together)")
	fs.IntVar(&o.cfg.Devices.Workers, "concurrent-device-taint-eviction-syncs", o.cfg.Devices.Workers, fmt.Sprintf("the number of operations (evicting pods, updating DeviceTaintRule status) allowed to run concurrently (1 to %d)", controller.MaxWorkers))
	// The device taint eviction's blast-radius limit and warnings
	// (taints.DeviceBlastRadius, KeepWarnings; ours, upstream has none):
	// off by default. A field added to DeviceBlastRadius needs one line
	// here; TestDeviceFlagsCoverBlastRadius fails until it has one.
	br := &o.cfg.Devices.Evictor.BlastRadius
	br.Burst = 1 // ignored while the rate is 0
	deviceFlag(o, fs, &br.QPS, "device-taint-eviction-rate", "BlastRadius.QPS",
		"pods per second each DRA driver's device taints may evict (a token bucket per driver, ours); 0: no limit (upstream)")
	deviceFlag(o, fs, &br.Burst, "device-taint-eviction-burst", "BlastRadius.Burst",
		"evictions each DRA driver may start at once under -device-taint-eviction-rate (at least 1)")
	deviceFlag(o, fs, &br.MaxShare, "device-taint-eviction-max-share", "BlastRadius.MaxShare",
		"hold every eviction by a DRA driver's device taints while more than this share (0 to 1) of its allocated devices are tainted, until the share falls to -device-taint-eviction-resume-share or an operator releases the hold (annotation "+
			controller.AnnotationReleaseEvictionHold+"=<driver> on a DeviceTaintRule; ours); 0: no breaker (upstream)")
	deviceFlag(o, fs, &br.MinDevices, "device-taint-eviction-min-devices", "BlastRadius.MinDevices",
		"the breaker trips only when more than this many of the driver's allocated devices are tainted")
	deviceFlag(o, fs, &br.ResumeShare, "device-taint-eviction-resume-share", "BlastRadius.ResumeShare",
		"a holding driver resumes only when the share of its tainted devices falls to this level (0 to the max share; the max share: no hysteresis); 0: when none is tainted")
	deviceFlag(o, fs, &br.ResumeAfter, "device-taint-eviction-resume-after", "BlastRadius.ResumeAfter",
		"how long the share must stay at or below the resume share before a hold ends; 0: at once")
	deviceFlag(o, fs, &o.cfg.Devices.Evictor.KeepWarnings, "device-taint-warnings", "KeepWarnings",
		fmt.Sprintf("look for device taint hazards (a taint's timeAdded reset or kept on escalation, a DeviceTaintRule selecting every device) and record each as a Warning Event on its ResourceSlice or DeviceTaintRule (at most %d a pass); the number kept between two passes, 0: none looked for (upstream)", controller.MaxWarningEvents))
	fs.DurationVar(&m.MonitorPeriod, "node-monitor-period", m.MonitorPeriod, "how often node health is checked")
	fs.DurationVar(&m.TaintPeriod, "node-eviction-period", m.TaintPeriod, "how often the tainting and eviction queues are processed (at the latest)")
	fs.Float64Var(&m.Zones.EvictionQPS, "node-eviction-rate", m.Zones.EvictionQPS, "nodes per second tainted NoExecute per healthy zone")
	fs.Float64Var(&m.Zones.SecondaryEvictionQPS, "secondary-node-eviction-rate", m.Zones.SecondaryEvictionQPS, "nodes per second per zone in partial disruption (large zones)")
	fs.IntVar(&m.Zones.LargeClusterThreshold, "large-cluster-size-threshold", m.Zones.LargeClusterThreshold, "zone size above which partial disruption uses the secondary rate (else 0)")
	fs.Float64Var(&m.Zones.UnhealthyZoneThreshold, "unhealthy-zone-threshold", m.Zones.UnhealthyZoneThreshold, "fraction of not-ready nodes (at least 3) for partial disruption")
	fs.Float64Var(&o.fullQPS, "full-disruption-rate", -1, "nodes per second for a fully disrupted zone while other zones are healthy; negative: the normal rate (upstream)")
	fs.IntVar(&m.Workers, "monitor-workers", m.Workers, fmt.Sprintf("nodes processed at once in a monitor pass (1 to %d)", monitor.MaxWorkers))
	fs.IntVar(&o.cfg.Workers, "workers", o.cfg.Workers, fmt.Sprintf("workqueue workers forwarding node and pod events (0 to %d; 0: 1)", controller.MaxWorkers))
	fs.DurationVar(&m.EvictionRetry, "eviction-retry", m.EvictionRetry, "delay before a failed pod deletion is retried (never abandoned)")
	fs.BoolVar(&m.Evictor.UseTaintTimeAdded, "use-taint-time-added", false, "count toleration time from the taint's timeAdded, so a restart or a new leader does not restart countdowns (kubernetes/kubernetes#108268); default: the value of -leader-elect")
	fs.BoolVar(&o.legacy, "legacy-node-eviction", false, "pre-1.27 mode: no NoExecute taints, evict every pod of a node not ready for -pod-eviction-timeout")
	fs.DurationVar(&o.podEvictionTimeout, "pod-eviction-timeout", monitor.LegacyPodEvictionTimeout, "legacy mode only: how long a node must be not ready before its pods are deleted")
	fs.StringVar(&o.snapshotCM, "snapshot-configmap", "", "namespace/name of a ConfigMap where node health is saved across restarts and leader changes; empty: nothing saved (upstream); default with -leader-elect: <leader-elect-resource-namespace>/<leader-elect-resource-name>-snapshot")
	fs.DurationVar(&o.cfg.SnapshotPeriod, "snapshot-period", o.cfg.SnapshotPeriod, "how often the snapshot is saved")
	fs.StringVar(&o.cfg.NodeSelector, "node-selector", "", "label selector of the nodes to manage (empty: all)")
	fs.StringVar(&o.cfg.LeaseNamespace, "lease-namespace", o.cfg.LeaseNamespace, "namespace of the node Leases")
	fs.DurationVar(&o.cfg.Resync, "resync", 0, "informer resync period (0: none)")

	// Leader election: kube-controller-manager's flags and defaults.
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among the replicas on a coordination.k8s.io Lease; only the leader writes")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the last renewal before taking the lease over")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up leading (less than the lease duration)")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how long a replica waits between attempts to acquire or renew the lease")
	fs.StringVar(&o.leNamespace, "leader-elect-resource-namespace", metav1.NamespaceSystem, "namespace of the leader election Lease")
	fs.StringVar(&o.leName, "leader-elect-resource-name", controller.Name, "name of the leader election Lease")

	fs.StringVar(&o.bindAddress, "bind-address", "0.0.0.0", "address of the /healthz, /readyz and /metrics endpoints")
	fs.IntVar(&o.port, "port", 10258, "port of the /healthz, /readyz and /metrics endpoints, served over plain HTTP (no TLS, no authentication: unlike kube-controller-manager's --secure-port); 0: no endpoints")
	return fs, o
}

// complete applies the defaults that depend on other flags, after parsing:
// with leader election, the snapshot ConfigMap and -use-taint-time-added
// are on unless given.
func (o *options) complete(fs *flag.FlagSet) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if !o.leaderElect {
		return
	}
	if !o.set["snapshot-configmap"] {
		o.snapshotCM = o.leNamespace + "/" + o.leName + "-snapshot"
	}
	if !o.set["use-taint-time-added"] {
		o.cfg.Monitor.Evictor.UseTaintTimeAdded = true
	}
}

// validate checks the flags the controller configuration does not hold.
func (o *options) validate() error {
	if err := flagcheck.APIRate(o.qps, o.burst); err != nil {
		return err
	}
	if o.leaderElect {
		if o.leNamespace == "" || o.leName == "" {
			return errors.New("-leader-elect-resource-namespace and -leader-elect-resource-name must not be empty")
		}
		if err := flagcheck.LeaderElection(o.leaseDuration, o.renewDeadline, o.retryPeriod); err != nil {
			return err
		}
	}
	return flagcheck.Port("-port", o.port)
}

// settings checks every flag and builds and validates the whole controller
// configuration (controller.Config.Validate) without a client: run calls it
// before it connects to anything, so that a bad value stops the process at
// once rather than a leader that runs no controller. The snapshot store,
// which needs the client, is left to config.
func (o *options) settings() (controller.Config, error) {
	cfg := o.cfg
	if err := o.validate(); err != nil {
		return cfg, err
	}
	if math.IsNaN(o.fullQPS) {
		return cfg, errors.New("-full-disruption-rate: NaN is not a rate")
	}
	if o.fullQPS >= 0 {
		q := o.fullQPS
		cfg.Monitor.Zones.FullDisruptionQPS = &q
	}
	if o.legacy {
		cfg.Monitor.PodEvictionTimeout = o.podEvictionTimeout
	}
	if _, _, err := o.snapshotConfigMap(); err != nil {
		return cfg, err
	}
	if err := o.duties(&cfg); err != nil {
		return cfg, err
	}
	if err := o.validateDevices(cfg.Devices.Evictor); err != nil {
		return cfg, err
	}
	cfg.OnEvent = logEvent
	cfg.SkipFinalSnapshot = o.leaderElect
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid flags (see -h for the flag of each field): %w", err)
	}
	return cfg, nil
}

// duties sets which duties cfg runs from --controllers and the feature
// gates, as kube-controller-manager decides which controllers to start:
// device-taint-eviction-controller needs DRADeviceTaints, its rules
// DRADeviceTaintRules. node-lifecycle-controller and
// taint-eviction-controller run together or not at all: unlike
// kube-controller-manager, this program's Monitor makes the decisions of
// both in one loop.
func (o *options) duties(cfg *controller.Config) error {
	if err := o.controllers.validate(); err != nil {
		return err
	}
	node, taint := o.controllers.enabled(ctrlNodeLifecycle), o.controllers.enabled(ctrlTaintEviction)
	if node != taint {
		on, off := ctrlNodeLifecycle, ctrlTaintEviction
		if taint {
			on, off = off, on
		}
		return fmt.Errorf("--controllers=%s enables %s but not %s: this program runs the two together (disable or enable both)", o.controllers, on, off)
	}
	cfg.DisableNodeLifecycle = !node
	cfg.Devices.Enabled = o.controllers.enabled(ctrlDeviceTaintEviction) && o.gates.deviceTaints
	cfg.Devices.NoRules = !o.gates.deviceTaintRules
	if !node && !cfg.Devices.Enabled {
		return fmt.Errorf("--controllers=%s with --feature-gates=%s=%t: no controller to run", o.controllers, GateDeviceTaints, o.gates.deviceTaints)
	}
	return nil
}

// deviceField is a field of taints.DeviceEvictorConfig, as its
// validation errors name it ("BlastRadius.QPS"), and its flag.
type deviceField struct{ field, flag string }

// deviceFlag defines the flag name on p, the field of o's
// taints.DeviceEvictorConfig that the library's validation errors call
// field (validateDevices then names the flag), with p's value as the
// default.
func deviceFlag[T float64 | int | time.Duration | bool](o *options, fs *flag.FlagSet, p *T, name, field, usage string) {
	switch p := any(p).(type) {
	case *float64:
		fs.Float64Var(p, name, *p, usage)
	case *int:
		fs.IntVar(p, name, *p, usage)
	case *time.Duration:
		fs.DurationVar(p, name, *p, usage)
	case *bool:
		fs.BoolVar(p, name, *p, usage)
	}
	o.deviceFields = append(o.deviceFields, deviceField{field: field, flag: name})
}

// validateDevices checks the DeviceEvictor's configuration as
// taints.NewDeviceEvictor does; an error that names a field with a flag
// (the first it names) is prefixed with the flag.
func (o *options) validateDevices(c taints.DeviceEvictorConfig) error {
	_, err := taints.NewDeviceEvictor(c)
	if err == nil {
		return nil
	}
	msg, at, name := err.Error(), -1, ""
	for _, f := range o.deviceFields {
		if i := strings.Index(msg, f.field+" "); i >= 0 && (at < 0 || i < at) {
			at, name = i, f.flag
		}
	}
	if at < 0 {
		return err
	}
	return fmt.Errorf("-%s: %w", name, err)
}

// snapshotConfigMap splits -snapshot-configmap; empty names mean none.
func (o *options) snapshotConfigMap() (namespace, name string, err error) {
	if o.snapshotCM == "" {
		return "", "", nil
	}
	ns, name, ok := strings.Cut(o.snapshotCM, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("-snapshot-configmap %q: want namespace/name", o.snapshotCM)
	}
	return ns, name, nil
}

// config is settings with the snapshot store on client.
func (o *options) config(client kubernetes.Interface) (controller.Config, error) {
	cfg, err := o.settings()
	if err != nil {
		return cfg, err
	}
	if ns, name, _ := o.snapshotConfigMap(); name != "" {
		store, err := controller.NewConfigMapStore(client, ns, name)
		if err != nil {
			return cfg, err
		}
		cfg.Snapshots = store
	}
	return cfg, nil
}

// logEvent logs a monitor event with klog: failures as errors, decisions at
// the default level, zone and mode changes too.
func logEvent(e monitor.Event) {
	kv := []any{"kind", string(e.Kind)}
	for _, f := range []struct{ k, v string }{{"node", e.Node}, {"pod", e.Pod}, {"zone", strings.ReplaceAll(e.Zone, "\x00", "")}} {
		if f.v != "" {
			kv = append(kv, f.k, f.v)
		}
	}
	if e.Kind == monitor.KindHealthHeld { // upstream's words, logged per skipped node
		klog.ErrorS(errors.New(e.Detail), "Update health of Node from Controller error, Skipping - no pods will be evicted", kv...)
		return
	}
	if e.Kind == monitor.KindWriteFailed {
		klog.ErrorS(errors.New(e.Detail), "Write failed, will retry", kv...)
		return
	}
	klog.InfoS(e.Detail, kv...)
}

func main() {
	fs, o := newFlagSet(os.Stderr)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	klogFlags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	o.complete(fs)
	if err := applyGOGC(os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "nodecontroller:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "nodecontroller")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// newController is controller.New; tests replace it.
var newController = controller.New

// inClusterConfig is rest.InClusterConfig; tests replace it.
var inClusterConfig = rest.InClusterConfig

// restConfig returns the client configuration: from kubeconfig when it is
// not empty; else the in-cluster one (the pod's ServiceAccount), falling
// back to clientcmd's default loading rules ($KUBECONFIG, ~/.kube/config)
// outside a pod.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	rc, err := inClusterConfig()
	if err == nil {
		return rc, nil
	}
	rc, lerr := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if lerr != nil {
		return nil, fmt.Errorf("no -kubeconfig, not in a cluster (%w), and no usable default kubeconfig: %w", err, lerr)
	}
	return rc, nil
}

// run checks the settings, then connects to the cluster and runs the
// controller on the real clock until ctx is done: at once without leader
// election, else while this replica leads. It returns an error when
// leadership is lost (the process exits and restarts as a standby, as
// kube-controller-manager does) and when the controller stops while ctx is
// not done.
func run(ctx context.Context, o *options) error {
	if _, err := o.settings(); err != nil {
		return err
	}
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(o.qps), o.burst
	rc.UserAgent = controller.Name
	withProtobuf(rc)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if o.cfg.Clients, o.events, o.dynamic, err = dutyClients(rc); err != nil {
		return err
	}
	return runWith(ctx, o, client, clock.RealClock{})
}

// runWith is run on a given client and clock (tests pass a fake clientset
// and a fake clock; leader election always uses the real clock).
func runWith(ctx context.Context, o *options, client kubernetes.Interface, clk clock.WithTicker) error {
	cfg, err := o.config(client)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background())
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	eventClient := client
	if o.events != nil {
		eventClient = o.events
	}
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventClient.CoreV1().Events("")})
	cfg.Recorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: nodeComponent})
	cfg.EvictionRecorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: evictionComponent})
	cfg.Devices.Recorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.DeviceName})
	if cfg.Devices.Dynamic == nil {
		cfg.Devices.Dynamic = o.dynamic
	}
	if cfg.Devices.Enabled && !cfg.Devices.NoRules && cfg.Devices.Dynamic == nil {
		klog.InfoS("No dynamic client: DeviceTaintRules ignored")
		cfg.Devices.NoRules = true
	}

	m := metrics.New(clk)
	wire(&cfg, m)
	r := &runner{metrics: m, legacy: cfg.Monitor.PodEvictionTimeout > 0,
		newController: func() (*controller.Controller, error) { return newController(client, clk, cfg) }}

	var healthz *leaderelection.HealthzAdaptor
	var le *leaderelection.LeaderElector
	var lock *resourcelock.LeaseLock
	leCtx, leCancel := context.WithCancel(ctx)
	defer leCancel()
	live := func() error { return r.live(func() bool { return le == nil || le.IsLeader() }) }
	if o.leaderElect {
		healthz = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second) // kube-controller-manager's
		r.abort = leCancel
		le, lock, err = newLeaderElector(client, o, events.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name}), r, healthz)
		if err != nil {
			return err
		}
	}
	if o.port != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(o.bindAddress, strconv.Itoa(o.port)))
		if err != nil {
			return err
		}
		stop := httpserver.Serve(ln, newMux(m, healthz, live, r.ready), func(err error) { klog.ErrorS(err, "Serving the endpoints") })
		defer stop()
		klog.InfoS("Serving /healthz, /readyz and /metrics over plain HTTP", "address", ln.Addr().String())
	}
	if le == nil {
		err := r.lead(ctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("the controller stopped")
		}
		return err
	}
	le.Run(leCtx)
	if err := r.failure(); err != nil {
		// OnStoppedLeading has returned: nothing of this replica writes
		// any more, so a standby may take over at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.renewDeadline)
		defer cancel()
		if rerr := releaseLease(rctx, lock); rerr != nil {
			return fmt.Errorf("the controller stopped while leading (%w); releasing the lease failed: %w", err, rerr)
		}
		return fmt.Errorf("the controller stopped while leading, lease released: %w", err)
	}
	if ctx.Err() == nil {
		return errors.New("leader election lost")
	}
	return r.err()
}

// releaseLease gives up lock's Lease if this replica still holds it, as
// client-go's LeaderElector does with ReleaseOnCancel (its release): an
// empty holder and a duration of one second, which any standby may take
// at once. Unlike ReleaseOnCancel, which releases before OnStoppedLeading
// has stopped the controller's writes, run calls it after le.Run returned.
func releaseLease(ctx context.Context, lock *resourcelock.LeaseLock) error {
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return err
	}
	if rec.HolderIdentity != lock.Identity() {
		return nil // another replica holds it already
	}
	now := metav1.Now()
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
}

// wire sends the controller's events and monitor passes to the log and the
// metrics.
func wire(cfg *controller.Config, m *metrics.Metrics) {
	log := cfg.OnEvent
	cfg.OnEvent = func(e monitor.Event) {
		if log != nil {
			log(e)
		}
		m.OnEvent(e)
	}
	cfg.OnZones = m.ObserveZones
	cfg.OnNodeHealth = m.ObserveNodeHealth
	cfg.Devices.OnDeletion = m.ObserveDeviceDeletion
	cfg.Devices.OnWarning = m.ObserveDeviceWarning
}

// newLeaderElector returns the elector of a Lease lock named by the
// -leader-elect-* flags, with identity hostname_uuid (kube-controller-
// manager's), calling r's callbacks, and the lock.
func newLeaderElector(client kubernetes.Interface, o *options, rec record.EventRecorder, r *runner, healthz *leaderelection.HealthzAdaptor) (*leaderelection.LeaderElector, *resourcelock.LeaseLock, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, nil, err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.leNamespace, Name: o.leName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID()), EventRecorder: rec},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: o.leaseDuration,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retryPeriod,
		Callbacks:     r.callbacks(),
		WatchDog:      healthz,
		Name:          o.leName,
	})
	return le, lock, err
}

// runner runs the controller while this replica leads: a new Controller
// for each term (a Controller runs once), stopped with all its writes when
// the term ends. A term whose controller stops while the term goes on is
// a failure: the runner records it and calls abort, which ends the leader
// election (run then releases the Lease and exits).
type runner struct {
	newController func() (*controller.Controller, error)
	metrics       *metrics.Metrics
	legacy        bool
	abort         func() // nil: none

	mu      sync.Mutex
	ctrl    *controller.Controller // while leading
	running bool                   // from the start of lead to its return
	cancel  context.CancelFunc
	done    chan struct{} // closed when the term's Run returned
	lastErr error
	failed  error // the controller stopped while its term went on
}

// lead runs a new controller until ctx is done and returns Run's error. A
// term that ended before its controller could be registered for stop (the
// leader elector runs OnStartedLeading on a goroutine of its own, and may
// cancel ctx and call OnStoppedLeading before it gets here) runs nothing.
func (r *runner) lead(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	r.setRunning(true)
	defer r.setRunning(false)
	c, err := r.newController()
	if err != nil {
		r.setErr(err)
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.mu.Lock()
	if ctx.Err() != nil { // stop ran first (the elector cancels ctx before it calls OnStoppedLeading)
		r.mu.Unlock()
		cancel()
		return nil
	}
	r.ctrl, r.cancel, r.done = c, cancel, done
	r.mu.Unlock()
	r.metrics.Attach(c.Monitor(), r.legacy)
	if ev := c.Devices(); ev != nil { // not a typed nil in the interface
		r.metrics.AttachDevices(ev)
	}
	r.metrics.SetLeader(true)
	defer func() {
		r.metrics.SetLeader(false)
		r.metrics.Attach(nil, false)
		r.metrics.AttachDevices(nil)
		r.mu.Lock()
		r.ctrl = nil
		r.mu.Unlock()
		close(done)
	}()
	err = c.Run(ctx)
	r.setErr(err)
	return err
}

// stop cancels the running term, if any, and waits until its controller
// has stopped: when it returns, this replica writes nothing more.
func (r *runner) stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (r *runner) setRunning(on bool) {
	r.mu.Lock()
	r.running = on
	r.mu.Unlock()
}

// fail records that the controller stopped while its term went on (err:
// why) and ends the leader election.
func (r *runner) fail(err error) {
	if err == nil {
		err = errors.New("the controller returned")
	}
	r.mu.Lock()
	r.failed = err
	r.mu.Unlock()
	if r.abort != nil {
		r.abort()
	}
}

// failure returns what fail recorded, nil if nothing.
func (r *runner) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// live is the runner's part of /healthz: it fails once a controller has
// stopped while its term went on, and while leading (as leading reports)
// with no controller running, so that a leader that runs nothing is
// restarted instead of holding the lease.
func (r *runner) live(leading func() bool) error {
	r.mu.Lock()
	failed, running := r.failed, r.running
	r.mu.Unlock()
	switch {
	case failed != nil:
		return fmt.Errorf("the controller stopped while leading: %w", failed)
	case !running && leading():
		return errors.New("leading, but the controller is not running")
	}
	return nil
}

func (r *runner) setErr(err error) {
	if err != nil {
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
	}
}

func (r *runner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// callbacks start a term when this replica starts leading and stop it (all
// writes at once) when it stops.
func (r *runner) callbacks() leaderelection.LeaderCallbacks {
	return leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			klog.FromContext(ctx).Info("Started leading")
			err := r.lead(ctx)
			if ctx.Err() != nil {
				return // the term ended (OnStoppedLeading): a normal stop
			}
			// Nobody would run the controller while this replica holds
			// the lease: give it up (run releases it and exits).
			klog.FromContext(ctx).Error(err, "Controller stopped while leading: giving up the lease")
			r.fail(err)
		},
		OnStoppedLeading: func() {
			klog.InfoS("Stopped leading: stopping every write")
			r.stop()
		},
		OnNewLeader: func(id string) { klog.InfoS("Leader", "identity", id) },
	}
}

// ready is the readiness check: a standby is ready (to take over); the
// leader once its informer caches have synced.
func (r *runner) ready() error {
	r.mu.Lock()
	c := r.ctrl
	r.mu.Unlock()
	if c != nil && !c.HasSynced() {
		return errors.New("informer caches not synced")
	}
	return nil
}

// newMux serves /healthz (the process is up, live holds and, with leader
// election, the leader renews its lease: leaderelection.HealthzAdaptor, as
// kube-controller-manager), /readyz (ready) and /metrics (m's registry).
// live may be nil.
func newMux(m *metrics.Metrics, healthz *leaderelection.HealthzAdaptor, live, ready func() error) *http.ServeMux {
	check := func(fn func(*http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			if err := fn(req); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			io.WriteString(w, "ok")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", check(func(req *http.Request) error {
		if live != nil {
			if err := live(); err != nil {
				return err
			}
		}
		if healthz != nil {
			if err := healthz.Check(req); err != nil {
				return fmt.Errorf("%s: %w", healthz.Name(), err)
			}
		}
		return nil
	}))
	mux.Handle("/readyz", check(func(*http.Request) error { return ready() }))
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	return mux
}
