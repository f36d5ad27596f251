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

func runSweep(ctx context.Context, h *incident.History, open incident.Opener, opt incident.ReplayOptions, axes []incident.SweepAxis, format string, w io.Writer) error {
	rows, err := incident.Sweep(ctx, h, open, opt, axes)
	if err != nil {
		return err
	}
	if format == "json" {
		return incident.WriteSweepJSON(w, rows)
	}
	return incident.WriteSweepText(w, rows)
}
