package main

import (
	"fmt"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// opener returns an incident.Opener reading files with the audit reader:
// each pass (the inventory, each replay) opens them again, so memory grows
// with the cluster, not with the log. The caller closes what it opened
// (the sources are *audit.Reader, which has Close).
func opener(files []string) incident.Opener {
	return func() (incident.Source, error) {
		return audit.Open(files, audit.DefaultLimits())
	}
}

// closeSource closes src when it can be closed.
func closeSource(src incident.Source) {
	if c, ok := src.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// readerNotes describes what the audit reader read and skipped.
func readerNotes(src incident.Source) []string {
	r, ok := src.(*audit.Reader)
	if !ok {
		return nil
	}
	st := r.Stats()
	var out []string
	for _, f := range st.Files {
		line := fmt.Sprintf("%s: %s, %d lines, %d events", f.Name, f.Format, f.Lines, f.Events)
		if f.Err != nil {
			line += fmt.Sprintf(" (ended early: %v)", f.Err)
		}
		out = append(out, line)
	}
	for _, s := range st.Skipped {
		line := fmt.Sprintf("skipped %d: %s", s.Count, s.Reason)
		if len(s.First) > 0 {
			line += " (first: " + s.First[0].String() + ")"
		}
		out = append(out, line)
	}
	for _, w := range st.Warnings {
		out = append(out, "warning: "+w)
	}
	return out
}
