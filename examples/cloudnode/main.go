// Command cloudnode runs a cloud node lifecycle controller built on
// nodehealth (examples/cloudnode/controller) with a fake cloud
// (examples/cloudnode/fakecloud) behind k8s.io/cloud-provider's
// InstancesV2.
//
// With -compare it needs no cluster: it runs the scale-set incident on a
// fake clientset and a virtual clock with our decision and with upstream's,
// and prints the cloud calls each made and the nodes each left behind.
//
//	go run ./examples/cloudnode -compare
//
// With -kubeconfig it runs against a cluster on the real clock until
// interrupted. The fake cloud holds one running instance for every node
// whose spec.providerID is fake://<set>/<id> when it starts; -delete-scale-set
// deletes a set after -delete-after, to watch the nodes go. Run it only where
// no other cloud-node-lifecycle-controller runs.
//
//	go run ./examples/cloudnode -kubeconfig ~/.kube/config -delete-scale-set a -delete-after 1m -v=2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
	"github.com/kubelifecycle/lifecycle/examples/internal/httpserver"
)

// options are the command-line flags.
type options struct {
	kubeconfig  string
	cfg         controller.Config
	compare     bool
	sc          scenario
	deleteSet   string
	deleteAfter time.Duration
	metricsAddr string
	metricsLn   net.Listener // bound by run before the client exists
}

func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{cfg: controller.DefaultConfig(), sc: scenario{NodesA: 3, NodesB: 2, Outage: 30 * time.Minute, After: time.Hour, SetDeleteDelay: time.Minute}}
	fs := flag.NewFlagSet("cloudnode", flag.ContinueOnError)
	fs.SetOutput(out)
	p := &o.cfg.Policy
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run against")
	fs.DurationVar(&o.cfg.MonitorPeriod, "node-monitor-period", o.cfg.MonitorPeriod, "how often every node is looked at")
	fs.IntVar(&o.cfg.ConcurrentNodeLifecycleSyncs, "concurrent-node-lifecycle-syncs", o.cfg.ConcurrentNodeLifecycleSyncs,
		fmt.Sprintf("how many nodes a pass syncs at once, 1..%d (upstream's flag, new in v1.37; 1 syncs them one after another, as v1.36)", controller.MaxConcurrentNodeLifecycleSyncs))
	fs.IntVar(&p.Confirmations, "confirmations", p.Confirmations, "NotFound answers needed before a node is deleted")
	fs.DurationVar(&p.MinNotFoundAge, "min-not-found-age", p.MinNotFoundAge, "how long the NotFound answers must span before a node is deleted")
	fs.DurationVar(&p.UnknownBackoff, "unknown-backoff", p.UnknownBackoff, "wait after the first cloud error for a node; doubles on each further error")
	fs.DurationVar(&p.MaxUnknownBackoff, "max-unknown-backoff", p.MaxUnknownBackoff, "cap of the per-node backoff")
	fs.DurationVar(&p.UninitializedNodeDelay, "uninitialized-node-delay", p.UninitializedNodeDelay, "how long a node with no providerID and the uninitialized taint is left alone after its creation")
	fs.BoolVar(&o.cfg.UpstreamStyle, "upstream-style", false, "decide as upstream does (every error means keep, retried every period)")
	fs.StringVar(&o.cfg.NodeSelector, "node-selector", "", "label selector of the nodes to manage (empty: all)")
	fs.StringVar(&o.deleteSet, "delete-scale-set", "", "fake cloud: scale set to delete after -delete-after")
	fs.DurationVar(&o.deleteAfter, "delete-after", time.Minute, "fake cloud: when to delete -delete-scale-set")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "", "address (host:port) to serve the metrics (upstream's cloud_node_lifecycle_controller_* and our lifecycle_cloudnode_*) on at /metrics, over plain HTTP; empty: none")
	fs.BoolVar(&o.compare, "compare", false, "run the scale-set incident offline with both decisions and print the cloud calls")
	fs.IntVar(&o.sc.NodesA, "compare-nodes-a", o.sc.NodesA, "-compare: NotReady nodes in scale set a (deleted as the outage starts)")
	fs.IntVar(&o.sc.NodesB, "compare-nodes-b", o.sc.NodesB, "-compare: NotReady nodes in scale set b")
	fs.DurationVar(&o.sc.Outage, "compare-outage", o.sc.Outage, "-compare: how long the cloud API fails every call")
	fs.DurationVar(&o.sc.After, "compare-after", o.sc.After, "-compare: how long the run goes on after set a is deleted")
	fs.DurationVar(&o.sc.SetDeleteDelay, "compare-set-delete-delay", o.sc.SetDeleteDelay, "-compare: how long the deleted set stays after its instances")
	return fs, o
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
	if err := run(ctx, o, os.Stdout); err != nil {
		klog.ErrorS(err, "cloudnode")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// run checks every setting, then runs the mode the flags chose: -compare
// offline, or the live controller on -kubeconfig's cluster.
func run(ctx context.Context, o *options, out io.Writer) error {
	if err := o.cfg.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	if o.deleteAfter < 0 {
		return fmt.Errorf("-delete-after %v: must not be negative", o.deleteAfter)
	}
	if o.compare {
		if o.sc.NodesA < 0 || o.sc.NodesB < 0 || o.sc.NodesA+o.sc.NodesB > 10000 {
			return fmt.Errorf("-compare-nodes-a and -b: %d and %d, want 0..10000 nodes in all", o.sc.NodesA, o.sc.NodesB)
		}
		if o.sc.Outage < 0 || o.sc.After < 0 || o.sc.Outage+o.sc.After > 7*24*time.Hour {
			return fmt.Errorf("-compare-outage and -after: %v and %v, want 0..168h in all", o.sc.Outage, o.sc.After)
		}
		ctx = klog.NewContext(ctx, klog.Logger{}) // the passes' logs would drown the table
		rs, err := compare(ctx, o.sc, o.cfg)
		if err != nil {
			return err
		}
		return printCompare(out, o.sc, rs)
	}
	if o.kubeconfig == "" {
		return errors.New("-kubeconfig or -compare is required (see -h)")
	}
	if o.metricsAddr != "" { // bound before anything runs: an address in use stops the program
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("-metrics-bind-address: %w", err)
		}
		defer ln.Close()
		o.metricsLn = ln
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = controller.Name
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return runLive(ctx, o, client, clock.RealClock{}, nil)
}

// liveClock is what runLive needs of a clock: clock.RealClock and the fake
// clock of k8s.io/utils/clock/testing have it.
type liveClock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// runLive runs the controller on client and clk with a fake cloud seeded
// from the nodes, until ctx is done; stats, if not nil, receives the
// controller's Stats and the cloud's call counts as it stops.
func runLive(ctx context.Context, o *options, client kubernetes.Interface, clk liveClock, stats func(controller.Stats, fakecloud.CallStats)) error {
	cloud := fakecloud.New(clk, fakecloud.Config{SetDeleteDelay: time.Minute})
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: o.cfg.NodeSelector})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if set, id, err := fakecloud.ParseProviderID(n.Spec.ProviderID); err == nil {
			if _, err := cloud.AddInstance(set, id, n.Name, n.Labels[v1.LabelTopologyZone]); err != nil {
				return err
			}
		}
	}
	ctx = klog.NewContext(ctx, klog.Background())
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	o.cfg.Recorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: controller.Name})
	c, err := controller.New(client, &fakecloud.Provider{API: cloud}, clk, o.cfg)
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c.Collector())
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ln := o.metricsLn
		if ln == nil {
			if ln, err = net.Listen("tcp", o.metricsAddr); err != nil {
				return fmt.Errorf("-metrics-bind-address: %w", err)
			}
		}
		defer httpserver.Serve(ln, mux, func(err error) { klog.ErrorS(err, "Serving /metrics") })()
	}
	if o.deleteSet != "" {
		// On its own goroutine: a fake clock runs AfterFunc callbacks with
		// its lock held, and DeleteScaleSet reads the clock.
		t := clk.AfterFunc(o.deleteAfter, func() {
			go func() {
				klog.InfoS("Fake cloud: deleting scale set", "set", o.deleteSet, "existed", cloud.DeleteScaleSet(o.deleteSet))
			}()
		})
		defer t.Stop()
	}
	err = c.Run(ctx)
	klog.InfoS("Stopped", "stats", fmt.Sprintf("%+v", c.Stats()), "cloudCalls", cloud.Calls().String())
	if stats != nil {
		stats(c.Stats(), cloud.Calls())
	}
	return err
}
