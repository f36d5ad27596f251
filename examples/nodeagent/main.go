// Command nodeagent plays the kubelet for one or more Nodes on top of the
// lifecycle podworker package (examples/nodeagent/agent), with an in-memory
// container runtime: it registers the Nodes, renews their Leases, posts
// their status, runs the pods bound to them (and the static pods of
// -pod-manifest-path) through the pod worker, confirms graceful deletions,
// and serves the kubelet's pod worker metrics on /metrics and /healthz over
// plain HTTP on -address:-port. Every flag is checked (agent.Config.Validate)
// and the port bound before it creates a client: a bad value exits at once
// with an error naming it. Use it to exercise a control plane without
// real nodes, or as the skeleton of a virtual-kubelet-style provider (put
// your runtime behind agent.Runtime).
//
//	go run ./examples/nodeagent -kubeconfig ~/.kube/config -node-name n1,n2 -node-labels topology.kubernetes.io/zone=a -v=2
//	go run ./examples/nodeagent -h
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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/internal/flagcheck"
	"github.com/kubelifecycle/lifecycle/examples/internal/httpserver"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
)

// options are the command-line flags (the kubelet's names where one
// exists).
type options struct {
	kubeconfig string
	nodes      string
	labels     string
	leaseSecs  int
	cfg        agent.Config
	address    string
	port       int
	qps        float64
	burst      int
}

func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{cfg: agent.DefaultConfig()}
	fs := flag.NewFlagSet("nodeagent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: in-cluster, then the default loading rules")
	fs.StringVar(&o.nodes, "node-name", "", "comma-separated names of the Nodes this agent serves (required)")
	fs.StringVar(&o.labels, "node-labels", "", "labels added to every Node at registration, key=value[,key=value] (zone and region labels, for example)")
	fs.IntVar(&o.leaseSecs, "node-lease-duration-seconds", int(agent.DefaultLeaseDuration/time.Second), "the Leases' leaseDurationSeconds; they are renewed every quarter of it")
	fs.DurationVar(&o.cfg.StatusUpdateFrequency, "node-status-update-frequency", o.cfg.StatusUpdateFrequency, "how often each Node's status is posted")
	fs.DurationVar(&o.cfg.StatusReportFrequency, "node-status-report-frequency", o.cfg.StatusReportFrequency, "when positive, a status update posts only what differs from the Node in the API, or everything once this long has passed (the kubelet's nodeStatusReportFrequency, 5m); 0: post at every update")
	fs.DurationVar(&o.cfg.HousekeepingPeriod, "housekeeping-period", o.cfg.HousekeepingPeriod, "how often pod workers are reconciled with the API and the runtime")
	fs.DurationVar(&o.cfg.PodWorker.ResyncInterval, "sync-frequency", o.cfg.PodWorker.ResyncInterval, "how often a running pod is synced again")
	fs.DurationVar(&o.cfg.PodWorker.BackoffPeriod, "backoff-period", o.cfg.PodWorker.BackoffPeriod, "delay before a failed pod worker step is retried")
	fs.IntVar(&o.cfg.Parallelism, "parallelism", o.cfg.Parallelism, "goroutines running pod worker steps")
	fs.StringVar(&o.cfg.StaticPodPath, "pod-manifest-path", "", "directory of static pod manifests (bound to the first node)")
	fs.DurationVar(&o.cfg.FileCheckFrequency, "file-check-frequency", o.cfg.FileCheckFrequency, "how often -pod-manifest-path is read")
	fs.StringVar(&o.address, "address", "0.0.0.0", "address of the /metrics and /healthz server")
	fs.IntVar(&o.port, "port", 10255, "port of the /metrics and /healthz server (0: no server)")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "QPS to the apiserver")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "burst to the apiserver")
	return fs, o
}

// complete turns the string flags into the config and checks every
// setting (agent.Config.Validate), the runtime included: nothing it
// accepts fails later for a bad value.
func (o *options) complete() error {
	if err := flagcheck.APIRate(o.qps, o.burst); err != nil {
		return err
	}
	if err := flagcheck.Port("-port", o.port); err != nil {
		return err
	}
	var labels map[string]string
	if o.labels != "" {
		labels = map[string]string{}
		for _, kv := range strings.Split(o.labels, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("-node-labels: %q is not key=value", kv)
			}
			labels[k] = v
		}
	}
	if o.nodes == "" {
		return errors.New("-node-name is required")
	}
	for _, n := range strings.Split(o.nodes, ",") {
		o.cfg.Nodes = append(o.cfg.Nodes, agent.NodeConfig{Name: strings.TrimSpace(n), Labels: labels})
	}
	if o.leaseSecs < 1 || o.leaseSecs > int(agent.MaxLeaseDuration/time.Second) {
		return fmt.Errorf("-node-lease-duration-seconds %d: want 1 to %d", o.leaseSecs, int(agent.MaxLeaseDuration/time.Second))
	}
	o.cfg.LeaseDuration = time.Duration(o.leaseSecs) * time.Second
	o.cfg.LeaseRenewInterval = o.cfg.LeaseDuration / 4
	if o.cfg.StaticPodPath != "" {
		fi, err := os.Stat(o.cfg.StaticPodPath)
		if err != nil {
			return fmt.Errorf("-pod-manifest-path: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("-pod-manifest-path %q: not a directory", o.cfg.StaticPodPath)
		}
	}
	o.cfg.Runtime = agent.NewFakeRuntime(clock.RealClock{})
	if err := o.cfg.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
}

// newMux serves /metrics (the agent's registry only) and /healthz.
func newMux(a *agent.Agent) *http.ServeMux {
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.HasSynced() {
			http.Error(w, "pods not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	return mux
}

// run creates the client and runs the agent until ctx is done; the flags
// were checked by complete. The endpoints' port is bound first, so that a
// port in use stops the agent before it registers anything.
func run(ctx context.Context, o *options) error {
	var handler delegate
	if o.port != 0 {
		_, stop, err := httpserver.Listen(net.JoinHostPort(o.address, strconv.Itoa(o.port)), &handler,
			func(err error) { klog.FromContext(ctx).Error(err, "HTTP server failed") })
		if err != nil {
			return err
		}
		defer stop()
	}
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(o.qps), o.burst
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	a, err := agent.New(client, clock.RealClock{}, o.cfg)
	if err != nil {
		return err
	}
	handler.set(newMux(a))
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// delegate serves 503 until set gives it the handler: the port is bound
// before the agent exists.
type delegate struct{ h atomic.Pointer[http.ServeMux] }

func (d *delegate) set(h *http.ServeMux) { d.h.Store(h) }

func (d *delegate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := d.h.Load(); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	http.Error(w, "starting", http.StatusServiceUnavailable)
}

func main() {
	klog.InitFlags(nil)
	fs, o := newFlagSet(os.Stderr)
	flag.CommandLine.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "nodeagent: unexpected arguments:", fs.Args())
		os.Exit(2)
	}
	if err := o.complete(); err != nil {
		fmt.Fprintln(os.Stderr, "nodeagent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "nodeagent failed")
		os.Exit(1)
	}
}
