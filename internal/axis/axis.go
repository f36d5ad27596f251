// Package axis picks the ticks and labels of a time axis: the SVG
// timelines of examples/policysim and examples/replay share it.
package axis

import (
	"strings"
	"time"
)

// steps are the round tick steps, shortest first.
var steps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Step picks a round step giving at most 12 ticks over span (at least a
// second).
func Step(span time.Duration) time.Duration {
	for _, s := range steps {
		if span/s <= 12 {
			return s
		}
	}
	return max(span/12, time.Second)
}

// Label is a compact offset: "0", "45s", "5m", "5m30s", "1h", "1h30m".
func Label(t time.Duration) string {
	if t == 0 {
		return "0"
	}
	s := t.String() // "30s", "5m0s", "1m30s", "1h0m0s", "1h30m0s"
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
