package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
)

// defaultGOGC is the garbage collector's target (GOGC) the process runs
// with unless the GOGC environment variable sets one. Go's default, 100,
// lets the heap grow to twice what is live before a collection; at
// steady state the controller's garbage is the watch events it decodes
// and trims (Leases, node status), so its resident memory sits near that
// bound: at 1,000 nodes and 30,000 pods on a real API server, 1.18 KB of
// RSS per pod at GOGC=100, 1.05 KB at 50, for a live heap of 0.70 KB
// (examples/e2e's TestScaleBesideKCM). 25 trades a few percent more CPU,
// mostly in an outage, for a quarter less memory.
const defaultGOGC = 25

// applyGOGC sets the garbage collector's target: defaultGOGC when GOGC is
// unset or empty (as the runtime, which then uses 100); when it is set, the runtime has applied it already, and this only
// checks it, because the runtime takes a value it cannot parse as 100
// without a word.
func applyGOGC(lookup func(string) (string, bool)) error {
	v, set := lookup("GOGC")
	if !set || v == "" {
		debug.SetGCPercent(defaultGOGC)
		return nil
	}
	if v == "off" {
		return nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 0 {
		return fmt.Errorf("GOGC=%q: want a percentage (an integer >= 0) or off", v)
	}
	return nil
}
