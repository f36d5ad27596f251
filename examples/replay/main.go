// Command replay replays a cluster's recorded outage from kube-apiserver
// audit logs through the node lifecycle controller's decision loop under
// any policy, and compares what it decides with what the recorded
// controller wrote. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

func main() {
	err := run(context.Background(), os.Args[1:], opener, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errMoreEvictions) {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(exitCode(err))
}

// errMoreEvictions is run's error when -fail-on-more-evictions is given and
// the replay evicts pods the recording did not.
var errMoreEvictions = errors.New("replay: the replay evicts pods the recording did not")

// exitCode is the exit status for run's error: 0 for success and -h, 3
// for errMoreEvictions, 2 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errMoreEvictions):
		return 3
	}
	return 2
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// policyFlag is one of kube-controller-manager's flags, set on a Policy.
type policyFlag struct {
	p    *incident.Policy
	name string
}

func (f policyFlag) String() string {
	if f.p == nil {
		return ""
	}
	for _, v := range f.p.Values() {
		if v.Flag == f.name {
			return v.Value
		}
	}
	return ""
}

func (f policyFlag) Set(v string) error { return f.p.Set(f.name, v) }

// run parses args and does what they say; open opens the audit files
// given (tests pass in-memory logs).
func run(ctx context.Context, args []string, open func([]string) incident.Opener, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pol := incident.DefaultPolicy()
	for _, name := range incident.PolicyFlags {
		usage := "kube-controller-manager's --" + name + " (default: guessed from the log, reported as guessed; else v1.37.2's, reported as assumed)"
		if name == incident.FlagFeatureGates {
			usage = "kube-controller-manager's --feature-gates; known: " + incident.GateLeaseCircuitBreaker + "=true|false (default: guessed from the log, else true)"
		}
		fs.Var(policyFlag{&pol, name}, name, usage)
	}
	format := fs.String("format", "text", "output `format`: text, json or svg (a timeline; not with -doctor or -sweep)")
	doctor := fs.Bool("doctor", false, "report what the log can rebuild and what is missing or modelled, and exit")
	guessPolicy := fs.Bool("guess-policy", true, "give the policy flags not set the values the log shows the recorded controller ran with (kube-controller-manager's command line in a pod create, else its timing), reported as guessed; false: v1.37.2's defaults, reported as assumed")
	var users, leaseStalls, nodeStalls, sweeps listFlag
	fs.Var(&users, "controller-user", "a `user` whose writes are the recorded controller's (repeatable; default: "+strings.Join(incident.DefaultControllerUsers, ", ")+")")
	fs.Var(&leaseStalls, "lease-watch-stall", "the controller's Lease watch stalls `FROM/TO` (RFC 3339, or offsets like +10s from the log's first event; repeatable)")
	fs.Var(&nodeStalls, "node-watch-stall", "the controller's Node watch stalls `FROM/TO` (as -lease-watch-stall; repeatable)")
	fs.Var(&sweeps, "sweep", "replay once per value and print one table: `flag=v1,v2,...` with a policy flag's name (repeatable: a grid)")
	phases := fs.Int("phases", 5, "replay under `n` monitor pass phases spread over one --node-monitor-period and report how outcomes depend on it (1: only -phase)")
	drift := fs.Duration("pass-drift", 0, "each monitor pass follows the one before `d` later than --node-monitor-period, as kube-controller-manager's passes drift by their own duration (1ms is typical: incident.DefaultPassDrift; 0: none)")
	phase := fs.Duration("phase", 0, "the main replay's monitor pass `phase` after the log's first event, in [0, --node-monitor-period)")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "run up to `n` replays of -phases or -sweep at once (each reads the log itself and holds its own cluster)")
	export := fs.String("export-scenario", "", "write a policysim scenario with the same timeline to `file` (YAML)")
	keepReactions := fs.Bool("keep-reactions", false, "feed the replay the kubelets' status posts that react to a recorded controller write it did not make (by default they are left out and listed)")
	watch := addWatchFlags(fs)
	failMore := fs.Bool("fail-on-more-evictions", false, "exit 3 when the replay (with -sweep: any of its runs) evicts pods the recording did not")
	lim := incident.DefaultLimits()
	fs.IntVar(&lim.MaxNodes, "max-nodes", lim.MaxNodes, "refuse logs naming more than `n` nodes")
	fs.IntVar(&lim.MaxPods, "max-pods", lim.MaxPods, "refuse logs naming more than `n` pods")
	fs.Int64Var(&lim.MaxObjectBytes, "max-object-bytes", lim.MaxObjectBytes, "refuse bodies over `n` bytes")
	fs.IntVar(&lim.MaxLabels, "max-labels", lim.MaxLabels, "refuse objects with more than `n` labels")
	fs.IntVar(&lim.MaxTaints, "max-taints", lim.MaxTaints, "refuse objects with more than `n` taints or tolerations")
	fs.IntVar(&lim.MaxDecisions, "max-decisions", lim.MaxDecisions, "refuse more than `n` recorded (or replayed) decisions")
	fs.DurationVar(&lim.MaxSpan, "max-span", lim.MaxSpan, "refuse logs spanning more than `duration`")
	fs.Int64Var(&lim.MaxMonitorPasses, "max-monitor-passes", lim.MaxMonitorPasses, "refuse replays of more than `n` monitor passes (the log's span over --node-monitor-period)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: replay [flags] AUDIT-LOG...\n\nReplays an outage recorded in kube-apiserver audit logs through the node lifecycle controller's decision loop under a policy, and compares with what the recorded controller wrote.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		return errors.New("replay: no audit log given (see -h)")
	}
	if *format != "text" && *format != "json" && *format != "svg" {
		return fmt.Errorf("replay: -format must be text, json or svg, got %q", *format)
	}
	// The SVG is the report's timeline: a doctor's report or a sweep's
	// table has none.
	if *format == "svg" && (*doctor || len(sweeps) > 0) {
		return errors.New("replay: -format svg draws one replay's timeline: use text or json with -doctor and -sweep")
	}
	if *parallel < 1 {
		return fmt.Errorf("replay: -parallel must be positive, got %d", *parallel)
	}
	if *drift < 0 {
		return fmt.Errorf("replay: -pass-drift must not be negative, got %v", *drift)
	}
	if *phases < 1 || *phases > 100 {
		return fmt.Errorf("replay: -phases must be in [1, 100], got %d", *phases)
	}
	if lim.MaxNodes <= 0 || lim.MaxPods <= 0 || lim.MaxObjectBytes <= 0 || lim.MaxLabels <= 0 || lim.MaxTaints <= 0 || lim.MaxDecisions <= 0 || lim.MaxSpan <= 0 || lim.MaxMonitorPasses <= 0 {
		return errors.New("replay: the -max-* limits must be positive")
	}
	axes, err := parseSweeps(sweeps)
	if err != nil {
		return err
	}
	op := open(files)
	opt := incident.Options{ControllerUsers: users, Limits: lim}
	src, err := op()
	if err != nil {
		return err
	}
	h, err := incident.Inventory(src, opt)
	notes := readerNotes(src)
	closeSource(src)
	if err != nil {
		return err
	}
	if h.Used == 0 {
		return fmt.Errorf("replay: no event of the log plays a part (%d read): no Lease renewals, node or pod writes", h.Events)
	}
	if *doctor {
		d := h.Doctor()
		d.Reader = notes
		d.Policy = h.Guess.Lines(pol)
		if !*guessPolicy {
			d.Policy = append([]string{"not applied (-guess-policy=false): the flags not given are v1.37.2's defaults, assumed"}, d.Policy...)
		}
		if err := watch.doctor(&d, h, op); err != nil {
			return err
		}
		if *format == "json" {
			return d.WriteJSON(stdout)
		}
		return d.WriteText(stdout)
	}
	if *guessPolicy {
		// Given flags win: the guess fills only the others.
		pol = h.Guess.Apply(pol)
	}
	ropt := incident.ReplayOptions{Policy: pol, Phase: *phase, PassDrift: *drift, Limits: lim, KeepRecordedReactions: *keepReactions}
	if ropt.LeaseWatchStalls, err = parseWindows(h.First, "lease-watch-stall", leaseStalls); err != nil {
		return err
	}
	if ropt.NodeWatchStalls, err = parseWindows(h.First, "node-watch-stall", nodeStalls); err != nil {
		return err
	}
	var watchNotes []string
	if ropt, watchNotes, err = watch.apply(h, op, ropt); err != nil {
		return err
	}
	if len(axes) > 0 {
		return runSweep(ctx, h, op, ropt, axes, *parallel, *format, *failMore, stdout)
	}
	// The main replay, and the phase sensitivity: when the main replay's
	// phase is one of them, its run is reused.
	var (
		primary *incident.Run
		pr      *incident.PhaseReport
	)
	if *phases > 1 {
		offsets := incident.PhaseOffsets(pol.NodeMonitorPeriod, *phases)
		runs, err := runAll(ctx, h, op, ropt.AtPhases(offsets), *parallel)
		if err != nil {
			return err
		}
		pr = incident.NewPhaseReport(h, runs)
		if i := slices.Index(offsets, *phase); i >= 0 {
			primary = runs[i]
		}
	}
	if primary == nil {
		if primary, err = incident.ReplayOpen(ctx, h, op, ropt); err != nil {
			return err
		}
	}
	rep := incident.NewReport(h, ropt, primary)
	rep.Reader = notes
	rep.Watch = watchNotes
	rep.Phases = pr
	if *export != "" {
		if err := exportScenario(*export, h, primary); err != nil {
			return err
		}
	}
	switch *format {
	case "json":
		err = rep.WriteJSON(stdout)
	case "svg":
		err = rep.WriteSVG(stdout)
	default:
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if *failMore && len(rep.Comparison.NewlyLost) > 0 {
		return errMoreEvictions
	}
	return nil
}

// parseWindows parses FROM/TO windows: RFC 3339 instants or offsets
// (+10s) from origin.
func parseWindows(origin time.Time, flagName string, vals []string) ([]incident.Window, error) {
	var out []incident.Window
	for _, v := range vals {
		from, to, ok := strings.Cut(v, "/")
		if !ok {
			return nil, fmt.Errorf("replay: -%s=%s: want FROM/TO", flagName, v)
		}
		f, err := parseInstant(origin, from)
		if err != nil {
			return nil, fmt.Errorf("replay: -%s=%s: %w", flagName, v, err)
		}
		t, err := parseInstant(origin, to)
		if err != nil {
			return nil, fmt.Errorf("replay: -%s=%s: %w", flagName, v, err)
		}
		if !t.After(f) {
			return nil, fmt.Errorf("replay: -%s=%s: TO must be after FROM", flagName, v)
		}
		out = append(out, incident.Window{From: f, To: t})
	}
	return out, nil
}

func parseInstant(origin time.Time, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return time.Time{}, err
		}
		if d < 0 {
			return time.Time{}, fmt.Errorf("negative offset %s", s)
		}
		return origin.Add(d), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
