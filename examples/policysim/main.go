package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Nearly all of a simulation's heap is live (the cluster and the
		// Monitor's state), so the default GOGC=100 lets the process grow
		// to twice what it needs. At 50, the 13,000-node scale of gke-65k
		// peaks at 335 MB instead of 489 MB for 15% more CPU time.
		debug.SetGCPercent(50)
	}
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(exitCode(err))
}

// exitCode is the process's exit status for run's error: 0 for success and
// for a requested help (-h, as Go's commands do), 2 otherwise.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// run parses args and does what they say, writing to stdout (reports) and
// stderr (usage).
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("policysim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("scenario", "", "run the scenario in this YAML `file`")
	list := fs.Bool("list", false, "list the embedded scenarios and exit")
	name := fs.String("run", "", "run the embedded scenario `name` (default "+sim.DefaultScenario+")")
	show := fs.Bool("show", false, "print the scenario's YAML (embedded: as shipped) and exit")
	format := fs.String("format", "text", "output `format`: text or json")
	svg := fs.String("svg", "", "also draw the timeline as SVG into `file`")
	legacy := fs.Bool("legacy-node-eviction", false, "model the pre-1.27 eviction mode (--enable-taint-manager=false)")
	timeout := fs.Duration("pod-eviction-timeout", 5*time.Minute, "with -legacy-node-eviction or -compare: the removed --pod-eviction-timeout")
	compare := fs.Bool("compare", false, "run taint-based and legacy eviction and print their key numbers side by side")
	summaryOnly := fs.Bool("summary", false, "text format: print the summary without the timeline")
	tick := fs.Bool("tick", false, "run the taint pass at every 100ms tick instead of only when it has work (same results, slower)")
	var sweep sweepFlag
	fs.Var(&sweep, "sweep", "run the scenario once per value, in parallel, and print a table: `FIELD=v1,v2,...` (e.g. nodeEvictionRate=0.05,0.1,0.2, defaultUnreachableTolerationSeconds=60,300 or deviceMaxShare=0,0.05,0.2); repeat it for a grid: every combination of the fields' values, at most "+fmt.Sprint(sim.MaxSweepRuns)+" runs")
	maxPasses := fs.Int64("max-node-passes", sim.DefaultMaxNodePasses, "refuse scenarios needing more than `n` node passes (nodes × (monitor passes + Lease renewals + status posts))")
	maxPods := fs.Int64("max-pods", sim.DefaultMaxPods, "refuse scenarios with more than `n` pods")
	maxEvents := fs.Int64("max-event-steps", sim.DefaultMaxEventSteps, "refuse scenarios whose events need more than `n` steps (Σ over events of targeted nodes × (1 + pods per node))")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: policysim [flags]\n\nSimulates node outages in virtual time through the node lifecycle controller's decision loop.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\n"+sim.SchemaHelp)
	}
	ctx := context.Background()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("policysim: unexpected arguments %q (see -h)", fs.Args())
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("policysim: -format must be text or json, got %q", *format)
	}
	if *timeout <= 0 {
		return fmt.Errorf("policysim: -pod-eviction-timeout must be positive, got %v", *timeout)
	}
	if *list {
		for _, n := range sim.EmbeddedNames() {
			sc, err := sim.LoadEmbedded(n)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%-20s %s\n", n, sc.Description)
		}
		return nil
	}
	if len(sweep) > 0 && (*compare || *svg != "") {
		return errors.New("policysim: -sweep prints a table; use it without -compare and -svg")
	}
	if *compare && *svg != "" {
		return errors.New("policysim: -svg draws one run; use it without -compare")
	}
	if *file != "" && *name != "" {
		return errors.New("policysim: use -scenario or -run, not both")
	}
	var (
		sc  *sim.Scenario
		src []byte
		err error
	)
	switch {
	case *file != "":
		f, ferr := os.Open(*file)
		if ferr != nil {
			return fmt.Errorf("policysim: %w", ferr)
		}
		sc, src, err = sim.ReadScenario(*file, f)
		f.Close()
	default:
		n := *name
		if n == "" {
			n = sim.DefaultScenario
		}
		if sc, err = sim.LoadEmbedded(n); err == nil {
			src, err = sim.EmbeddedSource(n)
		}
	}
	if err != nil {
		return err
	}
	if *show {
		_, err := stdout.Write(src)
		return err
	}

	opt := sim.Options{Tick: *tick, Budget: sim.Budget{NodePasses: *maxPasses, Pods: *maxPods, EventSteps: *maxEvents}}
	if *legacy {
		opt.PodEvictionTimeout = *timeout
	}
	if len(sweep) > 0 {
		return runSweep(ctx, sc, opt, sweep, *format, stdout)
	}
	if *compare {
		return runCompare(ctx, sc, opt, *timeout, *format, stdout)
	}
	start := time.Now()
	res, err := sim.RunOptions(ctx, sc, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if *svg != "" {
		if err := writeSVGFile(*svg, res); err != nil {
			return err
		}
	}
	if *format == "json" {
		return sim.WriteJSON(stdout, res, elapsed)
	}
	if err := sim.WriteText(stdout, res, *summaryOnly); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nsimulated %s in %d ms of real time\n", sim.Dur(sc.Duration.D()), elapsed.Milliseconds())
	return err
}

func runCompare(ctx context.Context, sc *sim.Scenario, opt sim.Options, timeout time.Duration, format string, stdout io.Writer) error {
	start := time.Now()
	opt.PodEvictionTimeout = 0
	taint, err := sim.RunOptions(ctx, sc, opt)
	if err != nil {
		return err
	}
	opt.PodEvictionTimeout = timeout
	legacy, err := sim.RunOptions(ctx, sc, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if format == "json" {
		out := map[string]sim.JSONReport{"taint": sim.NewJSONReport(taint), "legacy": sim.NewJSONReport(legacy)}
		return sim.WriteJSONValue(stdout, out)
	}
	if err := sim.WriteComparison(stdout, taint, legacy); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nsimulated %s twice in %d ms of real time\n", sim.Dur(sc.Duration.D()), elapsed.Milliseconds())
	return err
}

// sweepFlag is the repeatable -sweep flag: one field and its values each.
type sweepFlag []sim.SweepField

func (f *sweepFlag) String() string {
	if f == nil {
		return ""
	}
	parts := make([]string, len(*f))
	for i, sf := range *f {
		parts[i] = sf.Field + "=" + strings.Join(sf.Values, ",")
	}
	return strings.Join(parts, " ")
}

func (f *sweepFlag) Set(s string) error {
	field, values, err := sim.ParseSweep(s)
	if err != nil {
		return err
	}
	*f = append(*f, sim.SweepField{Field: field, Values: values})
	return nil
}

func runSweep(ctx context.Context, sc *sim.Scenario, opt sim.Options, fields []sim.SweepField, format string, stdout io.Writer) error {
	start := time.Now()
	runs, err := sim.SweepGrid(ctx, sc, fields, opt, 0)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Field
	}
	if format == "json" {
		// field and value: a one-field sweep's, as they always were.
		type run struct {
			Value   string      `json:"value,omitempty"`
			Values  []string    `json:"values"`
			Summary sim.Summary `json:"summary"`
		}
		out := struct {
			Field  string   `json:"field,omitempty"`
			Fields []string `json:"fields"`
			Runs   []run    `json:"runs"`
		}{Fields: names}
		if len(fields) == 1 {
			out.Field = names[0]
		}
		for _, r := range runs {
			one := run{Values: r.Values, Summary: r.Result.Summary}
			if len(fields) == 1 {
				one.Value = r.Value
			}
			out.Runs = append(out.Runs, one)
		}
		return sim.WriteJSONValue(stdout, out)
	}
	if err := sim.WriteSweepGrid(stdout, names, runs); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nsimulated %s %d times in %d ms of real time (%d CPUs)\n", sim.Dur(sc.Duration.D()), len(runs), elapsed.Milliseconds(), runtime.NumCPU())
	return err
}

func writeSVGFile(path string, res *sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("policysim: %w", err)
	}
	if err := sim.WriteSVG(f, res); err != nil {
		f.Close()
		return fmt.Errorf("policysim: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("policysim: %w", err)
	}
	return nil
}
