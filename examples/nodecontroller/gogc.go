package main

import (
	"fmt"
	"math"
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
// unset or empty (the runtime then runs at 100). When GOGC is set, the
// runtime has applied it already and this only checks it, because the
// runtime takes a value it cannot parse as 100 without a word. It parses
// as the runtime does (readGOGC in runtime/mgcpacer.go, Go 1.26): "off",
// or a base-10 integer that fits in 32 bits, with an optional sign and
// nothing else (no spaces, underscores or 0x); so GOGC=2147483648 is an
// error, not a silent 100. A negative value, which the runtime takes as
// off, is an error too: GOGC=off says that.
func applyGOGC(lookup func(string) (string, bool)) error {
	v, set := lookup("GOGC")
	if !set || v == "" {
		debug.SetGCPercent(defaultGOGC)
		return nil
	}
	if v == "off" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return fmt.Errorf("GOGC=%q: not a decimal integer that fits in 32 bits, so the Go runtime runs at GOGC=100 instead: want a percentage from 0 to %d, or off", v, math.MaxInt32)
	}
	if n < 0 {
		return fmt.Errorf("GOGC=%q: a negative percentage turns the garbage collector off: set GOGC=off to mean that, or a percentage from 0 to %d", v, math.MaxInt32)
	}
	return nil
}
