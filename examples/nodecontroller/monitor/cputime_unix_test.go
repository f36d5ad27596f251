//go:build unix

package monitor_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far.
// Benchmarks report it beside wall time: on a loaded machine the wall time
// of a pass says more about the other processes than about the pass.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
