package audit

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzReader feeds arbitrary bytes, split into up to three inputs, and
// checks that the reader never panics, returns no more events than lines
// (except CloudWatch subscription records, which hold several), returns
// events in non-decreasing stageTimestamp order with a position inside
// their input, and fails only with the documented errors.
func FuzzReader(f *testing.F) {
	s := time.Second
	for _, seed := range []string{
		lines(rc("a", 0), rc("c", 2*s), rc("b", s)),
		lines(rc("a", 0), "junk", ev("r", "RequestReceived", at(0)), rc("a", 0), "", rc("b", 40*24*time.Hour)),
		lines(leaseLine("x", "ResponseComplete", at(0), 7)) + "\x00" + lines(rc("y", 0)),
		lines(`{"category":"kube-audit","properties":{"log":` + quote(rc("az", s)) + `}}`),
		lines(at(0).Format(time.RFC3339Nano) + " " + rc("s3", 0)),
		lines(`{"@message":`+rc("m", 0)+`}`, `{"message":`+quote(rc("m2", 0))+`}`),
		lines(`{"messageType":"DATA_MESSAGE","logEvents":[{"message":` + quote(rc("l1", s)) + `},{"message":` + quote(rc("l0", 0)) + `}]}`),
		lines(`{"protoPayload":{}}`),
		`{"auditID":"\ud83d\ude00\u00e9\\\"","stageTimestamp":"2026-01-01T00:00:00.123456789+01:00","annotations":{"k":"v"},"requestObject":{"a":[1,-2.5e3]}}`,
		string(gz(f, lines(rc("g", 0), rc("h", s)))),
		string(gz(f, lines(rc("g", 0), rc("h", s))))[:30],
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Split at 0x00 bytes into up to three inputs.
		parts := bytes.SplitN(data, []byte{0}, 3)
		names := []string{"a", "b", "c"}[:len(parts)]
		rs := make([]io.Reader, len(parts))
		maxLines := int64(0)
		for i, p := range parts {
			rs[i] = bytes.NewReader(p)
			maxLines += int64(bytes.Count(p, []byte{'\n'})) + 1
		}
		lim := Limits{MaxLineBytes: 4096, MaxSkips: 50, MaxBuffered: 1000, SniffLines: 20}
		if len(data)%2 == 0 {
			lim.ReorderWindow = time.Nanosecond
			lim.MaxDedup = 1
		}
		r, err := NewReader(names, rs, lim)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		var last time.Time
		for range 100000 {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var ie *InputError
				if errors.As(err, &ie) {
					continue
				}
				if !errors.Is(err, ErrLimit) && !errors.Is(err, ErrUnsupportedFormat) {
					t.Fatalf("unexpected error %v", err)
				}
				if _, err2 := r.Next(); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				break
			}
			n++
			if e.StageTimestamp.IsZero() {
				t.Fatalf("event %d has no stageTimestamp", n)
			}
			if n > 1 && e.StageTimestamp.Before(last) {
				t.Fatalf("event %d at %v before %v", n, e.StageTimestamp, last)
			}
			last = e.StageTimestamp
			if e.Source.Line < 1 {
				t.Fatalf("event %d at %v", n, e.Source)
			}
		}
		if n > maxLines && !bytes.Contains(data, []byte("logEvents")) && !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Fatalf("%d events from %d lines", n, maxLines)
		}
		if st := r.Stats(); st.Events != n {
			t.Fatalf("Stats().Events = %d, want %d", st.Events, n)
		}
	})
}
