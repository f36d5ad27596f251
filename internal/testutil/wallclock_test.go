package testutil

import (
	"testing"
	"time"
)

func TestStepWallClock(t *testing.T) {
	base := time.Now()
	for _, d := range []time.Duration{10 * time.Minute, -10 * time.Minute, 1, 36 * time.Hour, 0, 999_999_999} {
		t2 := StepWallClock(base, d)
		if got := t2.Sub(base); got != 0 {
			t.Errorf("StepWallClock(now, %v).Sub(now) = %v, want 0 (monotonic reading unchanged)", d, got)
		}
		if got := t2.Round(0).Sub(base.Round(0)); got != d {
			t.Errorf("StepWallClock(now, %v): wall clock moved by %v, want %v", d, got, d)
		}
		if t2.Location() != base.Location() {
			t.Errorf("StepWallClock(now, %v): location %v, want %v", d, t2.Location(), base.Location())
		}
		// Derived instants keep both readings.
		later := t2.Add(5 * time.Second)
		if got := later.Sub(base); got != 5*time.Second {
			t.Errorf("StepWallClock(now, %v).Add(5s).Sub(now) = %v, want 5s", d, got)
		}
		if got := later.Round(0).Sub(base.Round(0)); got != d+5*time.Second {
			t.Errorf("wall of StepWallClock(now, %v).Add(5s) moved by %v, want %v", d, got, d+5*time.Second)
		}
	}
	// A later instant whose wall clock jumped ahead compares by its
	// monotonic reading.
	t2 := StepWallClock(base.Add(10*time.Second), 10*time.Minute)
	if !t2.Before(base.Add(11 * time.Second)) {
		t.Errorf("stepped instant compared by wall clock, want monotonic")
	}
}

func TestStepWallClockNeedsMonotonic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("StepWallClock(time without monotonic reading) did not panic")
		}
	}()
	StepWallClock(Epoch, time.Minute)
}
