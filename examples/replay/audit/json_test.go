package audit

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSpecialWord checks the eight-byte scan against the byte table.
func TestSpecialWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b [8]byte
	check := func() {
		want := false
		for _, c := range b {
			want = want || !strPlain[c]
		}
		if got := specialWord(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("specialWord(%q) = %v, want %v", b, got, want)
		}
	}
	for c := range 256 { // every byte value in every position
		for pos := range 8 {
			for k := range b {
				b[k] = 'a'
			}
			b[pos] = byte(c)
			check()
		}
	}
	for range 100000 {
		for k := range b {
			b[k] = byte(rng.IntN(256))
			if rng.IntN(3) > 0 {
				b[k] = byte(0x20 + rng.IntN(0x60))
			}
		}
		check()
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"2026-01-01T00:00:00Z", t0, false},
		{"2026-01-01T00:00:00.5Z", t0.Add(500 * time.Millisecond), false},
		{"2026-01-01T00:00:00.123456789Z", t0.Add(123456789), false},
		{"2026-01-01T01:00:00+01:00", t0, false},
		{"2024-02-29T00:00:00Z", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), false},
		{"2026-02-29T00:00:00Z", time.Time{}, true},
		{"2026-13-01T00:00:00Z", time.Time{}, true},
		{"2026-01-01T24:00:00Z", time.Time{}, true},
		{"2026-01-01 00:00:00Z", time.Time{}, true},
		{"2026-01-01T00:00:00.Z", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parseTime([]byte(tc.in))
		if tc.err {
			assert.Error(t, err, "parseTime(%q)", tc.in)
			continue
		}
		if assert.NoError(t, err, "parseTime(%q)", tc.in) {
			assert.True(t, tc.want.Equal(got), "parseTime(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
