package testutil

import (
	"time"
	"unsafe"
)

// timeLayout mirrors the fields of time.Time (go1.9 and later): wall holds,
// when hasMonotonic is set, a 33-bit count of seconds since 1885-01-01 and
// 30 bits of nanoseconds; ext holds the monotonic reading.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecShift    = 30
	// wallToUnix is the Unix time of 1885-01-01T00:00:00Z, the origin of the
	// seconds field of a time.Time with a monotonic reading.
	wallToUnix = -2682288000
)

// StepWallClock returns t with its wall clock moved by d and its monotonic
// reading unchanged: the instant a real clock reports after the system
// clock was stepped by d (an NTP correction, a VM resume) at t. So
// StepWallClock(t, d).Sub(t) == 0 (Go compares monotonic readings), while
// StepWallClock(t, d).Round(0).Sub(t.Round(0)) == d (wall clocks).
//
// t must carry a monotonic reading, as time.Now's result and times derived
// from it with Add do; StepWallClock panics otherwise (a time.Date or a fake
// clock's time has none, and for those the wall clock is all there is). It
// also panics when the stepped wall clock falls outside the years 1885-2157,
// which Go cannot store beside a monotonic reading. Tests only: it writes
// time.Time's unexported wall field through unsafe.
func StepWallClock(t time.Time, d time.Duration) time.Time {
	if unsafe.Sizeof(t) != unsafe.Sizeof(timeLayout{}) {
		panic("testutil: StepWallClock: unexpected time.Time layout")
	}
	p := (*timeLayout)(unsafe.Pointer(&t))
	if p.wall&hasMonotonic == 0 {
		panic("testutil: StepWallClock needs a time with a monotonic reading (from time.Now)")
	}
	w := t.Round(0).Add(d)
	sec := w.Unix() - wallToUnix
	if sec < 0 || sec >= 1<<33 {
		panic("testutil: StepWallClock: stepped wall clock outside 1885-2157")
	}
	p.wall = hasMonotonic | uint64(sec)<<nsecShift | uint64(w.Nanosecond())
	return t
}
