package audit

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestRepeatedKeys checks that the last value of a repeated key wins,
// whether the values are escaped, plain or null.
func TestRepeatedKeys(t *testing.T) {
	const ts = `"stageTimestamp":"2026-01-01T00:00:00Z"`
	for _, tc := range []struct{ line, id, uri string }{
		{`{"auditID":"a","auditID":"b",` + ts + `}`, "b", ""},
		{`{"auditID":"a","auditID":"\u0062",` + ts + `}`, "b", ""},
		{`{"auditID":"\u0061","auditID":"c",` + ts + `}`, "c", ""},
		{`{"kind":"Event","auditID":"a","auditID":null,` + ts + `}`, "", ""},
		{`{"auditID":"a","requestURI":"/x","auditID":"bb","requestURI":"/yy",` + ts + `}`, "bb", "/yy"},
		{`{"auditID":"a","objectRef":{"uid":"u"},"objectRef":{"name":"n"},` + ts + `}`, "a", ""},
	} {
		d := newDecoder()
		_, err := d.line([]byte(tc.line))
		if !assert.NoError(t, err) || !assert.Len(t, d.out, 1) || !assert.NotNil(t, d.out[0].ev, "%s: %v", tc.line, d.out[0].err) {
			continue
		}
		assert.Equal(t, tc.id, d.out[0].ev.AuditID, tc.line)
		assert.Equal(t, tc.uri, d.out[0].ev.RequestURI, tc.line)
		if ref := d.out[0].ev.ObjectRef; ref != nil {
			assert.Equal(t, ObjectRef{Name: "n"}, *ref, tc.line)
		}
		assert.LessOrEqual(t, len(d.pend), 4)
	}
}

// TestRepeatedKeysAreLinear checks that a line repeating a key a million
// times decodes in linear time.
func TestRepeatedKeysAreLinear(t *testing.T) {
	var b []byte
	b = append(b, `{"stageTimestamp":"2026-01-01T00:00:00Z"`...)
	for range 1 << 20 {
		b = append(b, `,"auditID":"a"`...)
	}
	b = append(b, '}')
	d := newDecoder()
	_, err := d.line(b)
	require.NoError(t, err)
	require.NotNil(t, d.out[0].ev)
	assert.Equal(t, "a", d.out[0].ev.AuditID)
}
