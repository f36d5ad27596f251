// Command kubelet drives the podworker state machine over a fake container
// runtime that fails on command, and prints a timeline. It replays the
// stuck-terminating bug fixed upstream by #113145: a pod is force-deleted
// while the runtime is down, so its termination fails; it is no longer in
// the config, so no one sends it another update. The workers retry it on
// their own, with backoff, and it finishes once the runtime is back.
//
//	go run ./examples/kubelet                  # fake clock: instant, deterministic
//	go run ./examples/kubelet -up -1s          # the runtime never comes back
//	go run ./examples/kubelet -realtime        # the same story in wall-clock time
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// run parses args and plays the scenario, writing to out.
func run(args []string, out io.Writer) error {
	sc := DefaultScenario()
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.DurationVar(&sc.RuntimeDownAt, "down", sc.RuntimeDownAt, "when the container runtime goes down")
	fs.DurationVar(&sc.ForceDeleteAt, "delete", sc.ForceDeleteAt, "when the web pod is force-deleted")
	fs.DurationVar(&sc.RuntimeUpAt, "up", sc.RuntimeUpAt, "when the runtime comes back (negative: never)")
	fs.DurationVar(&sc.Until, "until", sc.Until, "how long to run")
	realtime := fs.Bool("realtime", false, "run in wall-clock time instead of a fake clock")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("kubelet: unexpected arguments: %v", fs.Args())
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	var clk Clock = &FakeClock{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if *realtime {
		clk = RealClock{}
	}
	_, err := Run(sc, clk, out)
	return err
}
