package controller

import (
	"math"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The compact encodings of a cached pod's fields (podcache.go). Each one
// round-trips exactly what it accepts and reports false for anything else,
// which the pod then keeps as decoded (podExtra): the API server's values
// (lowercase UUIDs, internal/uid; decimal resourceVersions; whole-second
// times in the local zone) are compact, an odd value costs only its own
// bytes.

// parseRV encodes a resourceVersion that is a decimal number without
// leading zeros, as etcd's revisions are, plus one (0 is the empty one).
func parseRV(s string) (uint64, bool) {
	if s == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(s, 10, 64) // no sign, no underscores in base 10
	if err != nil || v == math.MaxUint64 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	return v + 1, true
}

func formatRV(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v-1, 10)
}

// compactTime is a metav1.Time in 8 bytes: nanoseconds since the Unix
// epoch, or zeroTime. Its zone (UTC or time.Local, as decoded) is a flag
// kept by the caller.
type compactTime int64

const zeroTime compactTime = math.MinInt64

// encodeTime encodes t when it has no monotonic reading, is in UTC or the
// local zone and in the range of int64 nanoseconds; utc says which zone.
func encodeTime(t metav1.Time) (c compactTime, utc bool, ok bool) {
	if t.IsZero() {
		return zeroTime, false, t.Time == time.Time{}
	}
	loc := t.Location()
	if (loc != time.UTC && loc != time.Local) || t.Time != t.Round(0) {
		return 0, false, false
	}
	n := t.UnixNano()
	if n == int64(zeroTime) || !time.Unix(0, n).Equal(t.Time) {
		return 0, false, false
	}
	return compactTime(n), loc == time.UTC, true
}

func (c compactTime) time(utc bool) metav1.Time {
	if c == zeroTime {
		return metav1.Time{}
	}
	t := time.Unix(0, int64(c))
	if utc {
		return metav1.NewTime(t.UTC())
	}
	return metav1.NewTime(t.Local())
}
