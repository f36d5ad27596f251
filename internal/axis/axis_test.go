package axis

import (
	"testing"
	"time"
)

func TestLabel(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0"}, {30 * time.Second, "30s"}, {5 * time.Minute, "5m"}, {90 * time.Second, "1m30s"}, {time.Hour, "1h"}, {90 * time.Minute, "1h30m"}} {
		if got := Label(tt.d); got != tt.want {
			t.Errorf("Label(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestStep(t *testing.T) {
	for _, span := range []time.Duration{0, time.Millisecond, time.Second, 7 * time.Minute, time.Hour, 7 * 24 * time.Hour, 400 * 24 * time.Hour} {
		s := Step(span)
		if s < time.Second {
			t.Errorf("Step(%v) = %v, want at least 1s", span, s)
		}
		if n := span / s; n > 12 {
			t.Errorf("Step(%v) = %v: %d ticks, want at most 12", span, s, n)
		}
	}
}
