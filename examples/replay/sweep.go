package main

import (
	"context"
	"io"

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
func runSweep(ctx context.Context, h *incident.History, open incident.Opener, opt incident.ReplayOptions, axes []incident.SweepAxis, format string, failMore bool, w io.Writer) error {
	rows, err := incident.Sweep(ctx, h, open, opt, axes)
	if err != nil {
		return err
	}
	if format == "json" {
		err = incident.WriteSweepJSON(w, rows)
	} else {
		err = incident.WriteSweepText(w, rows)
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
