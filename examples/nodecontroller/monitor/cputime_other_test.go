//go:build !unix

package monitor_test

import "time"

// cpuTime is not measured on this platform: the cpu-ns/node metric reads 0.
func cpuTime() time.Duration { return 0 }
