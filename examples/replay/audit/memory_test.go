package audit

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longLine produces head, then n bytes of 'x' without a newline, then
// tail: a line of any length in constant memory.
type longLine struct {
	head, tail string
	n          int64
	chunk      []byte
	off        int64 // bytes of the long part produced
}

func (l *longLine) Read(p []byte) (int, error) {
	if l.head != "" {
		n := copy(p, l.head)
		l.head = l.head[n:]
		return n, nil
	}
	if l.off < l.n {
		k := min(int64(len(p)), l.n-l.off, int64(len(l.chunk)))
		copy(p, l.chunk[:k])
		l.off += k
		return int(k), nil
	}
	if l.tail != "" {
		n := copy(p, l.tail)
		l.tail = l.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

func newLongLine(head string, n int64, tail string) *longLine {
	return &longLine{head: head, tail: tail, n: n, chunk: []byte(strings.Repeat("x", 256<<10))}
}

// TestLongLineBoundedMemory reads a 200 MB line and checks that the bytes
// allocated stay bounded by Limits.MaxLineBytes, not by the line.
func TestLongLineBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 200 MB")
	}
	const size = 200 << 20
	for _, tc := range []struct {
		name     string
		lim      Limits
		maxAlloc uint64
	}{
		{"MaxLineBytes=1MiB", Limits{MaxLineBytes: 1 << 20}, 8 << 20},
		{"default 16MiB", Limits{}, 40 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newLongLine(lines(rc("a", 0))+`{"auditID":"huge","x":"`, size, "\"}\n"+lines(rc("b", time.Second)))
			r, err := NewReader([]string{"big"}, []io.Reader{src}, tc.lim)
			require.NoError(t, err)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := drain(t, r)
			runtime.ReadMemStats(&after)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"a", "b"}, res.ids)
			require.Equal(t, int64(1), res.stats.Skips(SkipLongLine))
			k := res.stats.Skipped[0].First[0]
			assert.Equal(t, "big:2", k.Pos.String())
			assert.Contains(t, k.Detail, "line of 209715225 bytes is longer than Limits.MaxLineBytes=")
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("TotalAlloc delta %d KiB for a %d MiB line", alloc>>10, size>>20)
			assert.Less(t, alloc, tc.maxAlloc, "allocation grows with the line")
		})
	}
}

// TestSteadyStateAllocs pins the allocations per event of a plain Lease
// renewal at level Metadata.
func TestSteadyStateAllocs(t *testing.T) {
	const n = 2000
	data := leaseLog(n)
	r, err := NewReader([]string{"f"}, []io.Reader{strings.NewReader(data)}, Limits{})
	require.NoError(t, err)
	for range 100 { // warm up: intern table, buffers
		_, err := r.Next()
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocs/event", allocs)
	// The event block (Event, ObjectRef, Status), auditID, requestURI, uid,
	// groups, the annotations map (2) and amortized buffer growth.
	assert.LessOrEqual(t, allocs, 8.0)
}

// leaseLog is n Lease renewals of 500 nodes, 10s apart per node, each
// line about 600 bytes, roughly in completion order.
func leaseLog(n int) string {
	var b strings.Builder
	for i := range n {
		ts := at(time.Duration(i) * 20 * time.Millisecond)
		if i%10 == 3 { // completion order is only rough
			ts = ts.Add(-150 * time.Millisecond)
		}
		b.WriteString(leaseLine(idFor(i), "ResponseComplete", ts, i%500))
		b.WriteByte('\n')
	}
	return b.String()
}

func idFor(i int) string {
	const hex = "0123456789abcdef"
	var b [36]byte
	for k := range b {
		b[k] = hex[(i>>(4*(k%8)))&15^k&15]
	}
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}

// leaseGen produces Lease renewal lines on the fly, n of them.
type leaseGen struct {
	i, n int
	pend []byte
}

func (g *leaseGen) Read(p []byte) (int, error) {
	for len(g.pend) == 0 {
		if g.i == g.n {
			return 0, io.EOF
		}
		g.pend = append(g.pend[:0], leaseLine(idFor(g.i), "ResponseComplete", at(time.Duration(g.i)*time.Millisecond), g.i%5000)...)
		g.pend = append(g.pend, '\n')
		g.i++
	}
	n := copy(p, g.pend)
	g.pend = g.pend[n:]
	return n, nil
}

// raceEnabled is set when the race detector, which slows the reader ten
// times, is on.
var raceEnabled bool

// TestMemoryDoesNotGrowWithLength reads 100000 events (40000 with the race
// detector) and checks that the live heap after a quarter and after three
// quarters of them is the same: the intern table, dedup set and buffers
// (the reorder buffer holds ReorderWindow's 5000 events) are bounded and
// saturated after the first 5000 nodes' renewals.
func TestMemoryDoesNotGrowWithLength(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100000 events")
	}
	n := 100000
	if raceEnabled {
		n = 40000
	}
	r, err := NewReader([]string{"gen"}, []io.Reader{&leaseGen{n: n}}, Limits{})
	require.NoError(t, err)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var early, late uint64
	for i := 0; ; i++ {
		switch i {
		case n / 4:
			early = heap()
		case 3 * n / 4:
			late = heap()
		}
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	t.Logf("live heap after %d events: %d KiB, after %d: %d KiB", n/4, early>>10, 3*n/4, late>>10)
	assert.Less(t, float64(late), float64(early)*1.1+(1<<20), "live heap grows with the log")
	runtime.KeepAlive(r)
}

// TestLongLineInGzip reads a long line from a gzip stream (a small file
// that inflates to one huge line) in bounded memory.
func TestLongLineInGzip(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 64 MB")
	}
	size := int64(64 << 20)
	if raceEnabled {
		size = 16 << 20
	}
	var zipped bytes.Buffer
	w, err := gzip.NewWriterLevel(&zipped, gzip.BestSpeed)
	require.NoError(t, err)
	_, err = io.Copy(w, newLongLine(lines(rc("a", 0))+`{"auditID":"huge","x":"`, size, "\"}\n"+lines(rc("b", time.Second))))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	t.Logf("%d MiB line in %d KiB of gzip", size>>20, zipped.Len()>>10)

	r, err := NewReader([]string{"bomb.gz"}, []io.Reader{&zipped}, Limits{MaxLineBytes: 1 << 20})
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := drain(t, r)
	runtime.ReadMemStats(&after)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"a", "b"}, res.ids)
	assert.Equal(t, int64(1), res.stats.Skips(SkipLongLine))
	assert.Equal(t, FormatPlain, res.stats.Files[0].Format)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("TotalAlloc delta %d KiB", alloc>>10)
	assert.Less(t, alloc, uint64(8<<20))
}
