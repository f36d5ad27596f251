package incident

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PhaseReport is how a replay's outcome depends on the monitor passes'
// phase, which no log records: the replay is run at N phases evenly spread
// over one --node-monitor-period, and each pod saved or newly lost, and
// each node whose Unknown write is missing or extra, is counted.
type PhaseReport struct {
	Phases []time.Duration
	// Items, by kind then object.
	Items []PhaseItem
}

// PhaseItem is one object's outcome over the phases.
type PhaseItem struct {
	// Outcome is "saved", "newly-lost" (pods), "unknown-missing" or
	// "unknown-extra" (nodes).
	Outcome string
	Object  string // namespace/name of a pod, name of a node
	// In counts the phases with that outcome; At lists them.
	In int
	At []time.Duration
}

// PhaseOffsets returns n phases evenly spread over period: 0, period/n, ...
func PhaseOffsets(period time.Duration, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := range n {
		out = append(out, period*time.Duration(i)/time.Duration(n))
	}
	return out
}

// Phases replays the log (opened with open for each run) under opt at
// each phase, one after the other, and returns the sensitivity report and
// the runs, in phase order. A caller that runs replays in parallel runs
// ReplayOptions.AtPhases' options itself and calls NewPhaseReport.
func Phases(ctx context.Context, h *History, open Opener, opt ReplayOptions, phases []time.Duration) (*PhaseReport, []*Run, error) {
	var runs []*Run
	for _, o := range opt.AtPhases(phases) {
		run, err := ReplayOpen(ctx, h, open, o)
		if err != nil {
			return nil, nil, fmt.Errorf("phase %v: %w", o.Phase, err)
		}
		runs = append(runs, run)
	}
	return NewPhaseReport(h, runs), runs, nil
}

// AtPhases returns opt at each phase.
func (opt ReplayOptions) AtPhases(phases []time.Duration) []ReplayOptions {
	out := make([]ReplayOptions, 0, len(phases))
	for _, ph := range phases {
		o := opt
		o.Phase = ph
		out = append(out, o)
	}
	return out
}

// ReplayOpen opens the log with open, replays it (Replay) and closes it
// when the Source has a Close method.
func ReplayOpen(ctx context.Context, h *History, open Opener, opt ReplayOptions) (*Run, error) {
	src, err := open()
	if err != nil {
		return nil, err
	}
	run, err := Replay(ctx, h, src, opt)
	if c, ok := src.(interface{ Close() error }); ok {
		c.Close()
	}
	return run, err
}

// NewPhaseReport returns the phase sensitivity of runs of one log at
// different phases (Run.Phase), in the runs' order.
func NewPhaseReport(h *History, runs []*Run) *PhaseReport {
	pr := &PhaseReport{}
	items := map[[2]string]*PhaseItem{}
	for _, run := range runs {
		ph := run.Phase
		pr.Phases = append(pr.Phases, ph)
		c := Compare(h, run)
		note := func(outcome, obj string) {
			k := [2]string{outcome, obj}
			it := items[k]
			if it == nil {
				it = &PhaseItem{Outcome: outcome, Object: obj}
				items[k] = it
			}
			if len(it.At) == 0 || it.At[len(it.At)-1] != ph {
				it.In++
				it.At = append(it.At, ph)
			}
		}
		for _, p := range c.Saved {
			note("saved", p.Pod)
		}
		for _, p := range c.NewlyLost {
			note("newly-lost", p.Pod)
		}
		for _, d := range c.Missing {
			if d.Kind == KindNodeUnknown {
				note("unknown-missing", d.Node)
			}
		}
		for _, d := range c.Extra {
			if d.Kind == KindNodeUnknown {
				note("unknown-extra", d.Node)
			}
		}
	}
	for _, it := range items {
		pr.Items = append(pr.Items, *it)
	}
	slices.SortFunc(pr.Items, func(a, b PhaseItem) int {
		return cmp.Or(cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(a.Object, b.Object))
	})
	return pr
}

type phaseItemJSON struct {
	Outcome string   `json:"outcome"`
	Object  string   `json:"object"`
	In      string   `json:"in"`
	Phases  []string `json:"phases"`
}

type phasesJSON struct {
	Phases []string        `json:"phases"`
	Items  []phaseItemJSON `json:"items"`
}

func (p *PhaseReport) json() phasesJSON {
	j := phasesJSON{Items: []phaseItemJSON{}}
	for _, ph := range p.Phases {
		j.Phases = append(j.Phases, ph.String())
	}
	for _, it := range p.Items {
		var at []string
		for _, a := range it.At {
			at = append(at, a.String())
		}
		j.Items = append(j.Items, phaseItemJSON{it.Outcome, it.Object, fmt.Sprintf("%d of %d", it.In, len(p.Phases)), at})
	}
	return j
}

func (p *PhaseReport) writeText(b *strings.Builder) {
	var ph []string
	for _, x := range p.Phases {
		ph = append(ph, x.String())
	}
	fmt.Fprintf(b, "\nPhase sensitivity (%d monitor pass phases: %s):\n", len(p.Phases), strings.Join(ph, ", "))
	if len(p.Items) == 0 {
		b.WriteString("  at no phase is a pod saved or newly lost, or a node's Unknown write missing or extra\n")
	}
	// A node's pods with the same outcome and phases on one line.
	type group struct {
		outcome, in string
		objs        []string
	}
	var groups []group
	for _, it := range p.Items {
		in := fmt.Sprintf("%d of %d phases", it.In, len(p.Phases))
		if n := len(groups); n > 0 && groups[n-1].outcome == it.Outcome && groups[n-1].in == in {
			groups[n-1].objs = append(groups[n-1].objs, it.Object)
			continue
		}
		groups = append(groups, group{it.Outcome, in, []string{it.Object}})
	}
	for _, g := range groups {
		objs := g.objs
		if len(objs) > 5 {
			objs = append(objs[:5:5], fmt.Sprintf("and %d more", len(g.objs)-5))
		}
		fmt.Fprintf(b, "  %s in %s: %s\n", g.outcome, g.in, strings.Join(objs, ", "))
	}
}
