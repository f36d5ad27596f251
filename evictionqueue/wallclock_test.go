package evictionqueue_test

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestWallClockStepDoesNotRetryEarly: a retry 300s out is measured on the
// caller's monotonic clock. An instant whose wall clock jumped 10 minutes
// ahead while only 10s passed (an NTP step on the controller host) must not
// make it due; with fake-clock instants (no monotonic reading) the wall
// clock is all there is and the same 610s do make it due.
func TestWallClockStepDoesNotRetryEarly(t *testing.T) {
	const retry = 300 * time.Second
	fail := func(evictionqueue.Item[string]) (bool, time.Duration) { return false, retry }
	cases := []struct {
		name    string
		t0      time.Time
		at      func(t0 time.Time, d time.Duration) time.Time // t0 + d of real time, wall clock stepped 10m ahead
		wantDue bool
	}{
		{"monotonic", time.Now(), func(t0 time.Time, d time.Duration) time.Time {
			return testutil.StepWallClock(t0.Add(d), 10*time.Minute)
		}, false},
		{"fake clock", testutil.Epoch, func(t0 time.Time, d time.Duration) time.Time {
			return t0.Add(d + 10*time.Minute)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := evictionqueue.New[string](c.t0, evictionqueue.Config{QPS: 1000, Burst: 1})
			if err != nil {
				t.Fatal(err)
			}
			q.Add(c.t0, "n1", "uid-n1")
			if got := q.Try(c.t0, fail); got != 1 {
				t.Fatalf("Try(t0) = %d, want 1", got)
			}
			stepped := c.at(c.t0, 10*time.Second)
			if got, want := q.Try(stepped, fail), map[bool]int{false: 0, true: 1}[c.wantDue]; got != want {
				t.Fatalf("Try(t0+10s, wall clock +10m) = %d, want %d", got, want)
			}
			if c.wantDue {
				return
			}
			d, ok := q.NextDeadline()
			if !ok || d.Sub(stepped) != retry-10*time.Second {
				t.Errorf("NextDeadline() = %v, %v; want %v after the stepped now", d.Sub(stepped), ok, retry-10*time.Second)
			}
			if got := q.Try(c.at(c.t0, retry-time.Nanosecond), fail); got != 0 {
				t.Errorf("Try(t0+300s-1ns, wall clock +10m) = %d, want 0", got)
			}
			if got := q.Try(c.at(c.t0, retry), fail); got != 1 {
				t.Errorf("Try(t0+300s, wall clock +10m) = %d, want 1", got)
			}
		})
	}
}
