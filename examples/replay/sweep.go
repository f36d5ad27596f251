package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

func parseSweeps(vals []string) ([]incident.SweepAxis, error) {
	var axes []incident.SweepAxis
	for _, v := range vals {
		a, err := incident.ParseSweepAxis(v)
		if err != nil {
			return nil, err
		}
		axes = append(axes, a)
	}
	return axes, nil
}

// runSweep runs and prints the sweep; with failMore, a run that evicts
// pods the recording did not makes it return errMoreEvictions.
func runSweep(ctx context.Context, h *incident.History, open incident.Opener, opt incident.ReplayOptions, axes []incident.SweepAxis, parallel int, format string, failMore bool, w io.Writer) error {
	opts, settings, err := incident.SweepOptions(opt, axes)
	if err != nil {
		return err
	}
	runs, err := runAll(ctx, h, open, opts, parallel)
	if err != nil {
		return err
	}
	rows := make([]incident.SweepRow, len(runs))
	for i, run := range runs {
		rows[i] = incident.NewSweepRow(h, settings[i], run)
	}
	if format == "json" {
		err = incident.WriteSweepJSON(w, rows)
	} else {
		err = incident.WriteSweepText(w, rows)
		// The flags not swept are the same in every run: say which are guesses.
		for _, v := range opt.Policy.Values() {
			if v.Source == incident.SourceGuessed && !slices.ContainsFunc(axes, func(a incident.SweepAxis) bool { return a.Flag == v.Flag }) {
				fmt.Fprintf(w, "every run: --%s=%s   guessed: %s\n", v.Flag, v.Value, v.Reason)
			}
		}
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if failMore && r.Lost > 0 {
			return errMoreEvictions
		}
	}
	return nil
}

// runAll replays the log under each of opts, up to parallel at once (each
// reads the log itself), and returns the runs in opts' order, or the
// error of the first that failed, naming its policy and phase; a failure
// stops the other runs.
func runAll(ctx context.Context, h *incident.History, open incident.Opener, opts []incident.ReplayOptions, parallel int) ([]*incident.Run, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := make([]*incident.Run, len(opts))
	errs := make([]error, len(opts))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, o := range opts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if runs[i], errs[i] = incident.ReplayOpen(ctx, h, open, o); errs[i] != nil {
				errs[i] = fmt.Errorf("replay under %s at phase %v: %w", o.Policy, o.Phase, errs[i])
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}
