package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// flapping returns a scenario of one zone of nodes nodes with pods pods
// each and events events that alternately darken and restore the zone,
// each at its own instant (sameInstant false) or all at 1m.
func flapping(nodes, pods, events int, sameInstant bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "duration: 2h\nzones:\n  - {name: a, nodes: %d, podsPerNode: %d}\nevents:\n", nodes, pods)
	for i := range events {
		act, at := "zone-dark", 60+i*10
		if i%2 == 1 {
			act = "zone-restore"
		}
		if sameInstant {
			at = 60
		}
		fmt.Fprintf(&b, "  - {at: %ds, action: %s, zone: a}\n", at, act)
	}
	return b.String()
}

// totalAlloc returns the bytes allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestWorkCountsEvents: every event form costs its targeted nodes × (1 +
// pods per node).
func TestWorkCountsEvents(t *testing.T) {
	base := "duration: 10m\nzones:\n  - {name: a, nodes: 100, podsPerNode: 9}\n  - {name: b, nodes: 10}\nevents:\n"
	tests := []struct {
		event string
		want  int64
	}{
		{"{at: 1m, action: stop, node: a-07}", 10},
		{"{at: 1m, action: stop, nodes: [a-01, b-1]}", 10 + 1},
		{"{at: 1m, action: stop, zone: a, count: 30}", 30 * 10},
		{"{at: 1m, action: zone-dark, zone: a}", 100 * 10},
		{"{at: 1m, action: zone-restore, zone: b}", 10},
	}
	for _, tt := range tests {
		sc := load(t, base+"  - "+tt.event+"\n")
		if got := sc.Work().EventSteps; got != tt.want {
			t.Errorf("Work().EventSteps of %s = %d, want %d", tt.event, got, tt.want)
		}
	}
	if got := load(t, base).Work(); got.Pods != 900 || got.EventSteps != 0 {
		t.Errorf("Work() without events = %+v, want 900 pods and no event steps", got)
	}
}

// TestBudgetCountsEvents: 1,000 nodes and 600 events, each field within its
// limits (a 25 KB file), used to run and allocate about a gigabyte; the
// budget now counts the events' work and refuses the scenario before
// anything is built, naming the flag that raises it.
func TestBudgetCountsEvents(t *testing.T) {
	sc := load(t, flapping(1000, 0, 600, false))
	before := totalAlloc()
	_, err := RunOptions(context.Background(), sc, Options{})
	if got := totalAlloc() - before; got > 1<<20 {
		t.Errorf("Run over the event budget allocated %d bytes, want it refused before building the cluster", got)
	}
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "-max-event-steps") || !strings.Contains(err.Error(), "600000 event steps") {
		t.Fatalf("Run(1000 nodes, 600 events) = %v, want ErrBudget naming 600000 event steps and -max-event-steps", err)
	}
	if err := (Budget{EventSteps: 600_000}).check(sc); err != nil {
		t.Errorf("check with -max-event-steps 600000 = %v, want nil", err)
	}
}

// TestSweepBudgetIsTotal: the budget bounds a sweep's runs together; it used
// to apply to each run, so a sweep of n values could do n times the work.
func TestSweepBudgetIsTotal(t *testing.T) {
	sc := load(t, minimal)
	per := sc.Work().NodePasses
	values := []string{"0.05", "0.1", "0.2"}
	opt := Options{Budget: Budget{NodePasses: 2 * per}} // enough for each run, not for three
	before := totalAlloc()
	_, err := Sweep(context.Background(), sc, "nodeEvictionRate", values, opt, 1)
	if got := totalAlloc() - before; got > 1<<20 {
		t.Errorf("Sweep over budget allocated %d bytes, want it refused before any run", got)
	}
	want := fmt.Sprintf("the sweep's 3 runs in all needs %d node passes", 3*per)
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-max-node-passes") {
		t.Fatalf("Sweep(3 values, budget of 2 runs) = %v, want ErrBudget with %q naming -max-node-passes", err, want)
	}
	opt.Budget.NodePasses = 3 * per
	if _, err := Sweep(context.Background(), sc, "nodeEvictionRate", values, opt, 1); err != nil {
		t.Errorf("Sweep(3 values, budget of 3 runs) = %v, want nil", err)
	}
}

// TestSweepRejectsNonFinite: NaN and infinities used to fail as "json:
// unsupported value: NaN"; the error now names the field and the value.
func TestSweepRejectsNonFinite(t *testing.T) {
	sc := load(t, minimal)
	for _, v := range []string{".nan", ".NaN", ".inf", "-.inf", "+.Inf"} {
		_, err := Sweep(context.Background(), sc, "nodeEvictionRate", []string{"0.1", v}, Options{}, 1)
		if err == nil || strings.Contains(err.Error(), "json") || !strings.Contains(err.Error(), "nodeEvictionRate") || !strings.Contains(err.Error(), v) {
			t.Errorf("Sweep(nodeEvictionRate=%s) = %v, want an error naming the field and the value", v, err)
		}
	}
}

// countingCtx is a context whose Err reports cancellation from its cancelAt-th
// call on (never when cancelAt is 0). It records how many calls were made
// and, with gaps set, the most bytes allocated between two calls: the work
// a run does without looking at its context.
type countingCtx struct {
	context.Context
	mu       sync.Mutex
	cancelAt int
	gaps     bool
	calls    int
	last     uint64
	maxGap   uint64
	done     chan struct{}
}

func newCountingCtx(cancelAt int, gaps bool) *countingCtx {
	c := &countingCtx{Context: context.Background(), cancelAt: cancelAt, gaps: gaps, done: make(chan struct{})}
	if gaps {
		c.last = totalAlloc()
	}
	return c
}

func (c *countingCtx) Done() <-chan struct{} { return c.done }

func (c *countingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.gaps {
		now := totalAlloc()
		c.maxGap = max(c.maxGap, now-c.last)
		c.last = now
	}
	if c.cancelAt > 0 && c.calls >= c.cancelAt {
		if c.calls == c.cancelAt {
			close(c.done)
		}
		return context.Canceled
	}
	return nil
}

// TestRunCancelledBeforeStart: a run with a context that has already ended
// builds nothing; it used to build the whole cluster first.
func TestRunCancelledBeforeStart(t *testing.T) {
	sc := load(t, "duration: 1h\nzones:\n  - {name: a, nodes: 20000, podsPerNode: 30}\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := totalAlloc()
	_, err := RunOptions(ctx, sc, Options{})
	if got := totalAlloc() - before; got > 1<<20 {
		t.Errorf("Run(cancelled) allocated %d bytes, want nothing built", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run(cancelled) = %v, want context.Canceled", err)
	}
}

// TestSweepCancelledBeforeStart: no run of a sweep starts once its context
// has ended; every run used to start and build its cluster.
func TestSweepCancelledBeforeStart(t *testing.T) {
	sc := load(t, "duration: 1h\nzones:\n  - {name: a, nodes: 5000, podsPerNode: 30}\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := totalAlloc()
	_, err := Sweep(ctx, sc, "nodeEvictionRate", []string{"0.05", "0.1", "0.2"}, Options{}, 1)
	if got := totalAlloc() - before; got > 1<<20 {
		t.Errorf("Sweep(cancelled) allocated %d bytes, want no run built", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sweep(cancelled) = %v, want context.Canceled", err)
	}
	// Cancelled while the first run is in progress: it stops, and the
	// others never start.
	cctx := newCountingCtx(3, false)
	runs, err := Sweep(cctx, sc, "nodeEvictionRate", []string{"0.05", "0.1", "0.2"}, Options{}, 1)
	if !errors.Is(err, context.Canceled) || len(runs) != 3 {
		t.Fatalf("Sweep(cancelled during run 1) = %d runs, %v; want 3 runs and context.Canceled", len(runs), err)
	}
	for i, r := range runs {
		if r.Result != nil || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("run %d = %v, %v; want no result and context.Canceled", i, r.Result, r.Err)
		}
	}
}

// TestCancellationBoundsWork: a run looks at its context within a bounded
// amount of work everywhere: while it builds the cluster (once a single
// step of 1 s and 450 MiB at 300,000 pods) and while it applies many
// events at one instant (once all of them in one step, 2 s past a 50 ms
// deadline). A context counting its Err calls measures the most bytes
// allocated between two looks; then cancelling at any of those looks
// stops the run with the context's error.
func TestCancellationBoundsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 2,000 nodes and 60,000 pods")
	}
	sc := load(t, flapping(2000, 30, 20, true))
	sc.Duration = Duration(2 * time.Minute)
	opt := Options{Budget: Budget{EventSteps: 1 << 30}}
	ctx := newCountingCtx(0, true)
	if _, err := RunOptions(ctx, sc, opt); err != nil {
		t.Fatal(err)
	}
	const bound = 32 << 20 // the timeline's growth is one of them
	if ctx.maxGap > bound {
		t.Errorf("Run allocated up to %d bytes between two looks at its context, want at most %d", ctx.maxGap, bound)
	}
	for _, k := range []int{1, ctx.calls / 2, ctx.calls} {
		_, err := RunOptions(newCountingCtx(k, false), sc, opt)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run cancelled at look %d of %d = %v, want context.Canceled", k, ctx.calls, err)
		}
	}
}
