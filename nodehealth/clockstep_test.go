package nodehealth

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
// makes no node stale: the Tracker keeps the caller's monotonic reading. A
// real 60s of silence still does.
func TestWallClockStepMakesNothingStale(t *testing.T) {
	tr := newTracker(t)
	start := time.Now() // only a source of a monotonic reading; nothing asserts on the wall clock
	n := readyNode("n1", T, 0, 0)
	if _, err := tr.Observe(start, n, nil); err != nil {
		t.Fatal(err)
	}
	stepped := wallStepped(t, start.Add(10*time.Second), 10*time.Minute)
	res, err := tr.Observe(stepped, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stale || res.StatusUpdate != nil {
		t.Fatalf("Observe after a +10m wall step (10s elapsed): Stale=%v update=%v, want fresh", res.Stale, res.StatusUpdate != nil)
	}
	res, _ = tr.Observe(stepped.Add(51*time.Second), n, nil)
	if !res.Stale {
		t.Fatal("Observe 61s after the last signal: not stale, want stale")
	}
}
