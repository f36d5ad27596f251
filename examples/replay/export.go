package main

import (
	"errors"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

func exportScenario(file string, h *incident.History, opt incident.ReplayOptions, run *incident.Run) error {
	return errors.New("replay: -export-scenario is not implemented yet")
}
