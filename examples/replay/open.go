package main

import (
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
