package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// MaxSweepRuns bounds the runs of a sweep (the product of its axes'
// values).
const MaxSweepRuns = 64

// SweepAxis is one policy flag and the values a sweep replays it at.
type SweepAxis struct {
	Flag   string
	Values []string
}

// ParseSweepAxis parses "flag=v1,v2,...".
func ParseSweepAxis(s string) (SweepAxis, error) {
	name, vals, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "-"), "=")
	if !ok || vals == "" {
		return SweepAxis{}, fmt.Errorf("incident: sweep %q: want flag=v1,v2 and so on", s)
	}
	ax := SweepAxis{Flag: name}
	if name == FlagFeatureGates {
		// Gate=true,false: the values are the gate's.
		gate, bools, ok := strings.Cut(vals, "=")
		if !ok {
			return SweepAxis{}, fmt.Errorf("incident: sweep %q: want feature-gates=Gate=true,false", s)
		}
		for _, b := range strings.Split(bools, ",") {
			ax.Values = append(ax.Values, gate+"="+strings.TrimSpace(b))
		}
	} else {
		for _, v := range strings.Split(vals, ",") {
			ax.Values = append(ax.Values, strings.TrimSpace(v))
		}
	}
	p := DefaultPolicy()
	for _, v := range ax.Values {
		if err := p.Set(name, v); err != nil {
			return SweepAxis{}, err
		}
	}
	return ax, nil
}

// SweepRow is one run of a sweep.
type SweepRow struct {
	// Settings are the axes' flag=value of the run, in axis order.
	Settings                                       []string
	Replayed, Matched, Missing, Extra, Saved, Lost int
	// First is the first divergence, "" when none.
	First string
}

// Sweep replays the log under base with every combination of the axes'
// values (the first axis varying slowest), one after the other, and
// returns one row per run. A caller that runs replays in parallel runs
// SweepOptions' options itself and calls NewSweepRow.
func Sweep(ctx context.Context, h *History, open Opener, base ReplayOptions, axes []SweepAxis) ([]SweepRow, error) {
	opts, settings, err := SweepOptions(base, axes)
	if err != nil {
		return nil, err
	}
	var rows []SweepRow
	for i, opt := range opts {
		run, err := ReplayOpen(ctx, h, open, opt)
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", strings.Join(settings[i], " "), err)
		}
		rows = append(rows, NewSweepRow(h, settings[i], run))
	}
	return rows, nil
}

// SweepOptions returns the options of every run of a sweep (the first
// axis varying slowest) and each run's settings (flag=value, in axis
// order). More than MaxSweepRuns runs is an error wrapping ErrLimit.
func SweepOptions(base ReplayOptions, axes []SweepAxis) ([]ReplayOptions, [][]string, error) {
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
		if n > MaxSweepRuns {
			return nil, nil, fmt.Errorf("%w: the sweep needs more than MaxSweepRuns=%d runs", ErrLimit, MaxSweepRuns)
		}
	}
	var (
		opts     []ReplayOptions
		settings [][]string
	)
	for i := range n {
		opt := base
		var set []string
		k := i
		idx := make([]int, len(axes))
		for j := len(axes) - 1; j >= 0; j-- {
			idx[j] = k % len(axes[j].Values)
			k /= len(axes[j].Values)
		}
		for j, a := range axes {
			v := a.Values[idx[j]]
			if err := opt.Policy.Set(a.Flag, v); err != nil {
				return nil, nil, err
			}
			set = append(set, a.Flag+"="+v)
		}
		opts = append(opts, opt)
		settings = append(settings, set)
	}
	return opts, settings, nil
}

// NewSweepRow returns the row of one run of a sweep.
func NewSweepRow(h *History, settings []string, run *Run) SweepRow {
	c := Compare(h, run)
	row := SweepRow{Settings: settings, Replayed: len(run.Replayed), Matched: len(c.Matched), Missing: len(c.Missing),
		Extra: len(c.Extra), Saved: len(c.Saved), Lost: len(c.NewlyLost)}
	if d := c.First; d != nil {
		obj := d.Decision.Node
		if d.Decision.Pod != "" {
			obj = d.Decision.Pod
		}
		row.First = fmt.Sprintf("%s %s %s %s", Offset(h.First, d.Time), d.What, d.Decision.Kind, obj)
	}
	return row
}

// WriteSweepText writes the sweep as one table.
func WriteSweepText(w io.Writer, rows []SweepRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tREPLAYED\tMATCHED\tMISSING\tEXTRA\tSAVED\tNEWLY LOST\tFIRST DIVERGENCE")
	for _, r := range rows {
		first := r.First
		if first == "" {
			first = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", strings.Join(r.Settings, " "), r.Replayed, r.Matched, r.Missing, r.Extra, r.Saved, r.Lost, first)
	}
	return tw.Flush()
}

// WriteSweepJSON writes the sweep as a JSON array.
func WriteSweepJSON(w io.Writer, rows []SweepRow) error {
	type rowJSON struct {
		Policy          []string `json:"policy"`
		Replayed        int      `json:"replayed"`
		Matched         int      `json:"matched"`
		Missing         int      `json:"missing"`
		Extra           int      `json:"extra"`
		Saved           int      `json:"saved"`
		NewlyLost       int      `json:"newlyLost"`
		FirstDivergence string   `json:"firstDivergence,omitempty"`
	}
	out := []rowJSON{}
	for _, r := range rows {
		out = append(out, rowJSON{r.Settings, r.Replayed, r.Matched, r.Missing, r.Extra, r.Saved, r.Lost, r.First})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
