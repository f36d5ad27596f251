package controller_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// A program checks its settings before it creates a client: every bad
// field is named with its value.
func ExampleConfig_Validate() {
	cfg := controller.DefaultConfig()
	cfg.Workers = 1_000_000
	cfg.Monitor.MonitorPeriod = -5 * time.Second
	cfg.Monitor.Zones.UnhealthyZoneThreshold = 7
	err := cfg.Validate()
	fmt.Println(errors.Is(err, controller.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// nodecontroller: invalid config: worker count Workers = 1000000 must be in [0, 1000] (MaxWorkers)
	// nodecontroller: invalid config: Monitor: monitor: invalid config: MonitorPeriod = -5s must be positive
	// monitor: invalid config: zone policy Zones: zonestate: invalid policy: UnhealthyZoneThreshold = 7, want a fraction in [0, 1]
}
