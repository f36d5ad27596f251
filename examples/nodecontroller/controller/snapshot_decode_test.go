package controller

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// gzipped compresses the concatenation of parts.
func gzipped(tb testing.TB, parts ...[]byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, p := range parts {
		if _, err := zw.Write(p); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// spaceSnapshot is a snapshot of two records with n bytes of whitespace
// before the array, between the records and after the array: what a
// hostile or corrupt ConfigMap can hold in a few KiB of gzip.
func spaceSnapshot(tb testing.TB, n int) []byte {
	ws := []byte(strings.Repeat(" \t\r\n", n/4+1)[:n/3])
	return gzipped(tb, ws, []byte(`[{"name":"a"},`), ws, []byte(`{"name":"b"}]`), ws)
}

// TestSnapshotWhitespaceLinear is the regression test of the quadratic
// decoding of whitespace: encoding/json's Decoder keeps the whitespace it
// skips between tokens in its buffer and scans it again after every read,
// so 16 MiB of spaces (a 16 KiB gzip stream) took seconds and 32 MiB about
// 14 s, on every start and leader change. The symptom pinned here is the
// buffer: decoding 24 MiB of whitespace allocated more than 24 MiB (the
// buffer held it all, and was rescanned after each read); it now allocates
// what two records need. Not parallel: it measures the process's
// allocations.
func TestSnapshotWhitespaceLinear(t *testing.T) {
	data := spaceSnapshot(t, 24<<20)
	var rs []nodehealth.Record
	var err error
	alloc := allocatedBy(func() { rs, err = decodeRecords(data, 10, 64<<20) })
	if err != nil || len(rs) != 2 || rs[0].Name != "a" || rs[1].Name != "b" {
		t.Fatalf("decodeRecords(24 MiB of whitespace around 2 records) = %v, %v; want a and b", rs, err)
	}
	t.Logf("%d KiB of gzip decoded with %d KiB allocated", len(data)>>10, alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("decodeRecords allocated %d MiB for 24 MiB of whitespace, want at most 4 MiB (whitespace kept in the decoder's buffer)", alloc>>20)
	}
	// Over the limit, the error names it.
	if _, err := decodeRecords(data, 10, 1<<20); !errors.Is(err, ErrSnapshotLimit) || !strings.Contains(err.Error(), "MaxBytes = 1048576") {
		t.Errorf("decodeRecords over MaxBytes = %v, want ErrSnapshotLimit naming MaxBytes = 1048576", err)
	}
}

// allocatedBy returns the bytes fn allocates (the whole process's, so the
// test must not run in parallel with others).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// AllocatedBy is allocatedBy for the tests of package controller_test.
var AllocatedBy = allocatedBy

// TestSpaceCollapser: runs of whitespace outside strings become their
// first byte, strings (escaped quotes included) pass unchanged, whatever
// the read sizes.
func TestSpaceCollapser(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"   ", " "},
		{"[ \n\t 1 ,\r\n 2 ]  ", "[ 1 ,\r2 ] "},
		{`{"a  b" :  "c\"  d\\"  }`, `{"a  b" : "c\"  d\\" }`},
		{`"\\"   "x  "`, `"\\" "x  "`},
		{"\"tab\t\tin string\"  ", "\"tab\t\tin string\" "},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 2, 3, 1 << 10} {
			got, err := io.ReadAll(&spaceCollapser{r: &chunkReader{s: tt.in, n: chunk}})
			if err != nil || string(got) != tt.want {
				t.Errorf("collapse(%q) in reads of %d = %q, %v; want %q", tt.in, chunk, got, err, tt.want)
			}
		}
	}
}

// chunkReader reads s n bytes at a time.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}

// FuzzDecodeRecords: decodeRecords agrees with json.Unmarshal on any input
// (it accepts exactly the JSON arrays of records and null, and decodes the
// same records), never panics, and stays within its limits.
func FuzzDecodeRecords(f *testing.F) {
	for _, seed := range []string{
		`null`, `[]`, ` [ ] `, `[{"name":"a"}]`, "\n[{\"name\":\"a\"} ,\t{\"name\":\"b\",\"leaseSeen\":true}]\n",
		`[{"name":"a","probe":"2026-01-01T00:00:00Z","ready":{"type":"Ready","status":"True"}}]`,
		`[{"name":"a  b\" c"}]`, `[1]`, `{}`, `[`, `[{"name":"a"}] x`, `[{"name":"a"}]]`, `[] []`, `"x"`, ``,
		`[{"name":"a"},]`, `[{"name":"a"}   {"name":"b"}]`, `[{"name":"a","probe":"not a time"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const maxRecords, maxBytes = 8, 4 << 10
		got, err := decodeRecords(gzipped(t, in), maxRecords, maxBytes)
		var want []nodehealth.Record
		werr := json.Unmarshal(in, &want)
		switch {
		case len(in) > maxBytes || (werr == nil && len(want) > maxRecords):
			if err == nil {
				t.Fatalf("decodeRecords(%q) beyond its limits = %d records, want an error", in, len(got))
			}
		case (err == nil) != (werr == nil):
			t.Fatalf("decodeRecords(%q) error %v, json.Unmarshal error %v", in, err, werr)
		case err == nil && fmt.Sprint(got) != fmt.Sprint(want):
			t.Fatalf("decodeRecords(%q) = %v, json.Unmarshal = %v", in, got, want)
		}
	})
}

// BenchmarkDecodeRecordsWhitespace decodes snapshots of two records padded
// with whitespace: the time per op grows linearly with the padding
// (ns/MiB stays flat).
func BenchmarkDecodeRecordsWhitespace(b *testing.B) {
	for _, mib := range []int{1, 4, 16} {
		data := spaceSnapshot(b, mib<<20)
		b.Run(fmt.Sprintf("MiB=%d", mib), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(mib) << 20)
			start := time.Now()
			for b.Loop() {
				if _, err := decodeRecords(data, 10, 64<<20); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(mib), "ns/MiB")
		})
	}
}
