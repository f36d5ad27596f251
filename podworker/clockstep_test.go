package podworker

import (
	"testing"
	"time"
	"unsafe"
)

// wallStepped returns t with its wall clock moved by d and its monotonic
// reading unchanged: the instant a clock.Now() returns right after an NTP
// step or a VM resume. t must carry a monotonic reading (time.Now does).
// It relies on the layout of time.Time (wall, ext, loc; the hasMonotonic
// bit and the 33-bit seconds field of wall), which the test checks first.
func wallStepped(t *testing.T, at time.Time, d time.Duration) time.Time {
	t.Helper()
	type rep struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	const hasMonotonic, nsecShift = 1 << 63, 30
	r := *(*rep)(unsafe.Pointer(&at))
	if r.wall&hasMonotonic == 0 {
		t.Fatal("wallStepped: instant without a monotonic reading")
	}
	r.wall += uint64(d/time.Second) << nsecShift
	out := *(*time.Time)(unsafe.Pointer(&r))
	if got := out.Round(0).Sub(at.Round(0)); got != d.Truncate(time.Second) {
		t.Fatalf("wallStepped: wall moved by %v, want %v (time.Time layout changed?)", got, d)
	}
	if got := out.Sub(at); got != 0 {
		t.Fatalf("wallStepped: monotonic reading moved by %v, want 0", got)
	}
	return out
}

// A wall-clock step of +10 minutes while 10s pass on the monotonic clock
// makes neither the 60s resync nor the 10s backoff due early.
func TestWallClockStepFiresNothingEarly(t *testing.T) {
	w := newWorkers(t)
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	w.UpdatePod(start, UpdateOptions{Type: TypeCreate, Pod: pod("a")})
	w.UpdatePod(start, UpdateOptions{Type: TypeCreate, Pod: pod("b")})
	wa, _ := w.Next(start)
	wb, _ := w.Next(start)
	w.Complete(start, wa, Result{})                // resync at +60s
	w.Complete(start, wb, Result{Err: errRuntime}) // retry at +10s
	stepped := wallStepped(t, start.Add(5*time.Second), 10*time.Minute)
	if work, ok := w.Next(stepped); ok {
		t.Fatalf("Next after a +10m wall step (5s elapsed) = %v, want nothing due", work)
	}
	if work, ok := w.Next(stepped.Add(5 * time.Second)); !ok || work.UID != wb.UID {
		t.Fatalf("Next 10s after the failure = %v, %v, want pod b's retry", work, ok)
	}
}
