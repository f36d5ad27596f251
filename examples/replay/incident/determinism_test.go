package incident

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// report runs the whole pipeline (both passes, 5 phases) and returns the
// JSON and text reports.
func report(t *testing.T, g *gen, opt ReplayOptions) ([]byte, []byte) {
	t.Helper()
	evs := g.build()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := Replay(context.Background(), h, SliceSource(evs), opt)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(h, opt, run)
	if rep.Phases, _, err = Phases(context.Background(), h, SliceOpener(evs), opt, PhaseOffsets(opt.Policy.NodeMonitorPeriod, 5)); err != nil {
		t.Fatal(err)
	}
	var j, x bytes.Buffer
	if err := rep.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&x); err != nil {
		t.Fatal(err)
	}
	return j.Bytes(), x.Bytes()
}

func TestDeterministic(t *testing.T) {
	opt := ReplayOptions{Policy: policy(t, "--feature-gates=NodeControllerLeaseCircuitBreaker=false"),
		LeaseWatchStalls: []Window{{From: epoch.Add(10 * time.Second), To: epoch.Add(70 * time.Second)}}}
	for _, g := range []func() *gen{outage, func() *gen { return shipped("Request") }, func() *gen {
		return &gen{nodes: 6, podsPerNode: 3, duration: 7 * time.Minute, stop: "n0", stopAt: time.Second}
	}} {
		// Runs differ only in map order: the package starts no goroutine
		// (contract_test), so GOMAXPROCS cannot matter here; the command's
		// TestOutputDeterministic varies it for its parallel replays.
		var firstJ, firstX []byte
		for i := range 4 {
			j, x := report(t, g(), opt)
			if i == 0 {
				firstJ, firstX = j, x
				continue
			}
			if !bytes.Equal(j, firstJ) || !bytes.Equal(x, firstX) {
				t.Fatalf("run %d: report differs from the first run's", i)
			}
		}
	}
}
