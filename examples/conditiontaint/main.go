// Command conditiontaint turns custom node conditions (node-problem-detector's
// KernelDeadlock, ReadonlyFilesystem, …) into taints on a controller-runtime
// manager, with upstream's per-zone rate limits and zone breaker, and evicts
// the pods that do not tolerate its NoExecute taints. It never touches the
// node.kubernetes.io/* taints, so it runs next to kube-controller-manager on
// managed clusters. See README.md.
//
// "conditiontaint simulate" is an offline dry run of a configuration on
// nodes and pods read from files, on a virtual clock (package simulate).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/simulate"
	"github.com/kubelifecycle/lifecycle/examples/internal/flagcheck"
)

// flags are the command line, with kube-controller-manager's names for
// leader election.
type flags struct {
	config          string
	dryRun          bool
	dryRunSet       bool
	leaderElect     bool
	leaseNamespace  string
	leaseName       string
	leaseDuration   time.Duration
	renewDeadline   time.Duration
	retryPeriod     time.Duration
	metricsAddr     string
	probeAddr       string
	kubeAPIQPS      float64
	kubeAPIBurst    int
	zapDevelopement bool
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("conditiontaint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "/etc/conditiontaint/config.yaml", "configuration file (YAML, at most 64 KiB; see README.md)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "record Events and metrics for every decision, write no taint and delete no pod (overrides the file's dryRun)")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader on a Lease before tainting")
	fs.StringVar(&f.leaseNamespace, "leader-elect-resource-namespace", "", "namespace of the Lease (default: the pod's namespace)")
	fs.StringVar(&f.leaseName, "leader-elect-resource-name", "lifecycle-conditiontaint", "name of the Lease")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "lease duration")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "renew deadline")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "retry period")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics (0 disables)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	fs.Float64Var(&f.kubeAPIQPS, "kube-api-qps", 20, "QPS to the API server")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 30, "burst to the API server")
	fs.BoolVar(&f.zapDevelopement, "log-development", false, "human-readable logs")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	fs.Visit(func(fl *flag.Flag) { f.dryRunSet = f.dryRunSet || fl.Name == "dry-run" })
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	// Checked here, before anything connects: the manager would find a
	// bad leader election setting only once it runs.
	if err := flagcheck.APIRate(f.kubeAPIQPS, f.kubeAPIBurst); err != nil {
		return f, err
	}
	if f.leaderElect {
		if err := flagcheck.LeaderElection(f.leaseDuration, f.renewDeadline, f.retryPeriod); err != nil {
			return f, err
		}
	}
	return f, nil
}

// loadConfig reads the file (bounded) and applies -dry-run.
func loadConfig(f flags) (controller.Config, error) {
	fh, err := os.Open(f.config)
	if err != nil {
		return controller.Config{}, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, controller.MaxConfigBytes+1))
	if err != nil {
		return controller.Config{}, err
	}
	cfg, err := controller.LoadConfig(data)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", f.config, err)
	}
	if f.dryRunSet {
		cfg.DryRun = f.dryRun
	}
	return cfg, nil
}

// managerOptions builds the manager's options: leader election, metrics,
// probes, a node cache restricted to the configured selector and a pod
// cache of bound pods.
func managerOptions(f flags, cfg controller.Config) (manager.Options, error) {
	sel, err := labels.Parse(cfg.NodeSelector)
	if err != nil {
		return manager.Options{}, err
	}
	return manager.Options{
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaseName,
		LeaderElectionNamespace:       f.leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1.Node{}: {Label: sel},
			// Only bound pods can be evicted; pending ones stay out of memory.
			&v1.Pod{}: {Field: fields.OneTermNotEqualSelector("spec.nodeName", "")},
		}},
	}, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "simulate" {
		if err := simulateCmd(os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			if !errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "conditiontaint simulate:", err)
			}
			os.Exit(2)
		}
		return
	}
	f, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(f.zapDevelopement)))
	log := ctrl.Log.WithName("conditiontaint")
	if err := run(f); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(f flags) error {
	cfg, err := loadConfig(f)
	if err != nil {
		return err
	}
	rest, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	rest.QPS, rest.Burst = float32(f.kubeAPIQPS), f.kubeAPIBurst
	opts, err := managerOptions(f, cfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(rest, opts)
	if err != nil {
		return err
	}
	metrics, err := controller.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	c, err := controller.New(controller.Options{
		Config:    cfg,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clock.RealClock{},
		Recorder:  mgr.GetEventRecorder("conditiontaint"),
		Metrics:   metrics,
		Log:       ctrl.Log.WithName("conditiontaint"),
	})
	if err != nil {
		return err
	}
	if err := c.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("zone-loop", c.Healthz); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("conditiontaint").Info("starting", "dryRun", cfg.DryRun, "rows", len(cfg.Conditions),
		"rate", cfg.Zones.Rate, "unhealthyThreshold", cfg.Zones.UnhealthyThreshold, "evictPods", cfg.EvictPods)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// simulateCmd is "conditiontaint simulate": an offline dry run of the
// configuration on nodes and pods read from files (YAML or JSON, as
// kubectl get nodes,pods -A -o yaml prints them; "-" is stdin), on a
// virtual clock. It prints what would be tainted, held and evicted, and
// when (package simulate).
func simulateCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("conditiontaint simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "/etc/conditiontaint/config.yaml", "configuration file (its dryRun is ignored: nothing is written)")
	horizon := fs.Duration("for", simulate.DefaultFor, "virtual time to play")
	start := fs.String("start", "", "virtual start time, RFC 3339 (default: the latest time in the objects)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: conditiontaint simulate [-config file] [-for 1h] [-start time] objects.yaml...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no object files")
	}
	cfg, err := loadConfig(flags{config: *config})
	if err != nil {
		return err
	}
	var opts simulate.Options
	opts.For = *horizon
	if *start != "" {
		if opts.Start, err = time.Parse(time.RFC3339, *start); err != nil {
			return fmt.Errorf("-start: %w", err)
		}
	}
	var nodes []v1.Node
	var pods []v1.Pod
	for _, name := range fs.Args() {
		r := stdin
		if name != "-" {
			fh, err := os.Open(name)
			if err != nil {
				return err
			}
			defer fh.Close()
			r = fh
		}
		n, p, err := simulate.ReadObjects(r)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		nodes, pods = append(nodes, n...), append(pods, p...)
	}
	res, err := simulate.Run(cfg, nodes, pods, opts)
	if err != nil {
		return err
	}
	return res.Print(stdout)
}
