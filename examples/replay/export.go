package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// exportScenario writes the run's timeline as a policysim scenario.
func exportScenario(file string, h *incident.History, run *incident.Run) error {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if err := os.WriteFile(file, run.Scenario(h, name), 0o644); err != nil {
		return fmt.Errorf("replay: -export-scenario: %w", err)
	}
	return nil
}
