// Command nodecontroller runs a node lifecycle controller built from the
// lifecycle packages (examples/nodecontroller/controller) against the
// cluster of -kubeconfig, on the real clock, until interrupted. It logs
// every decision with klog and records the Kubernetes Events upstream's
// controllers record (NodeNotReady, TaintManagerEviction, ...).
//
// Run it only where kube-controller-manager's own node-lifecycle-controller
// and taint-eviction-controller are off (for example
// --controllers=*,-node-lifecycle-controller,-taint-eviction-controller, or
// a bare kube-apiserver), or the two will fight over the same taints.
//
//	go run ./examples/nodecontroller -kubeconfig ~/.kube/config -v=2
//	go run ./examples/nodecontroller -h
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
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
}

// newFlagSet defines the flags on a new FlagSet, with the upstream defaults.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{cfg: controller.DefaultConfig()}
	fs := flag.NewFlagSet("nodecontroller", flag.ContinueOnError)
	fs.SetOutput(out)
	m := &o.cfg.Monitor
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run against (required)")
	fs.Float64Var(&o.qps, "kube-api-qps", 20, "client QPS to the API server")
	fs.IntVar(&o.burst, "kube-api-burst", 30, "client burst to the API server")
	fs.DurationVar(&m.Health.GracePeriod, "node-monitor-grace-period", m.Health.GracePeriod, "silence after which a node is marked Unknown")
	fs.DurationVar(&m.Health.StartupGracePeriod, "node-startup-grace-period", m.Health.StartupGracePeriod, "grace for a node that never posted a Ready condition")
	fs.DurationVar(&m.MonitorPeriod, "node-monitor-period", m.MonitorPeriod, "how often node health is checked")
	fs.DurationVar(&m.TaintPeriod, "node-eviction-period", m.TaintPeriod, "how often the tainting and eviction queues are processed (at the latest)")
	fs.Float64Var(&m.Zones.EvictionQPS, "node-eviction-rate", m.Zones.EvictionQPS, "nodes per second tainted NoExecute per healthy zone")
	fs.Float64Var(&m.Zones.SecondaryEvictionQPS, "secondary-node-eviction-rate", m.Zones.SecondaryEvictionQPS, "nodes per second per zone in partial disruption (large zones)")
	fs.IntVar(&m.Zones.LargeClusterThreshold, "large-cluster-size-threshold", m.Zones.LargeClusterThreshold, "zone size above which partial disruption uses the secondary rate (else 0)")
	fs.Float64Var(&m.Zones.UnhealthyZoneThreshold, "unhealthy-zone-threshold", m.Zones.UnhealthyZoneThreshold, "fraction of not-ready nodes (at least 3) for partial disruption")
	fs.Float64Var(&o.fullQPS, "full-disruption-rate", -1, "nodes per second for a fully disrupted zone while other zones are healthy; negative: the normal rate (upstream)")
	fs.IntVar(&m.Workers, "monitor-workers", m.Workers, "nodes processed at once in a monitor pass")
	fs.IntVar(&o.cfg.Workers, "workers", o.cfg.Workers, "workqueue workers forwarding node and pod events")
	fs.DurationVar(&m.EvictionRetry, "eviction-retry", m.EvictionRetry, "delay before a failed pod deletion is retried (never abandoned)")
	fs.BoolVar(&m.Evictor.UseTaintTimeAdded, "use-taint-time-added", false, "count toleration time from the taint's timeAdded, so a restart does not restart countdowns (#108268)")
	fs.BoolVar(&o.legacy, "legacy-node-eviction", false, "pre-1.27 mode: no NoExecute taints, evict every pod of a node not ready for -pod-eviction-timeout")
	fs.DurationVar(&o.podEvictionTimeout, "pod-eviction-timeout", monitor.LegacyPodEvictionTimeout, "legacy mode only: how long a node must be not ready before its pods are deleted")
	fs.StringVar(&o.snapshotCM, "snapshot-configmap", "", "namespace/name of a ConfigMap where node health is saved across restarts (empty: nothing saved, upstream)")
	fs.DurationVar(&o.cfg.SnapshotPeriod, "snapshot-period", o.cfg.SnapshotPeriod, "how often the snapshot is saved")
	fs.StringVar(&o.cfg.NodeSelector, "node-selector", "", "label selector of the nodes to manage (empty: all)")
	fs.StringVar(&o.cfg.LeaseNamespace, "lease-namespace", o.cfg.LeaseNamespace, "namespace of the node Leases")
	fs.DurationVar(&o.cfg.Resync, "resync", 0, "informer resync period (0: none)")
	return fs, o
}

// config completes the controller configuration from the flags; client is
// used by the snapshot store.
func (o *options) config(client kubernetes.Interface) (controller.Config, error) {
	cfg := o.cfg
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
	if o.snapshotCM != "" {
		ns, name, ok := strings.Cut(o.snapshotCM, "/")
		if !ok {
			return cfg, fmt.Errorf("-snapshot-configmap %q: want namespace/name", o.snapshotCM)
		}
		store, err := controller.NewConfigMapStore(client, ns, name)
		if err != nil {
			return cfg, err
		}
		cfg.Snapshots = store
	}
	cfg.OnEvent = logEvent
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "nodecontroller")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// run connects to the cluster of o.kubeconfig and runs the controller on
// the real clock until ctx is done.
func run(ctx context.Context, o *options) error {
	if o.kubeconfig == "" {
		return errors.New("-kubeconfig is required (see -h)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(o.qps), o.burst
	rc.UserAgent = controller.Name
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	cfg, err := o.config(client)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background())
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	cfg.Recorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name})
	c, err := controller.New(client, clock.RealClock{}, cfg)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
