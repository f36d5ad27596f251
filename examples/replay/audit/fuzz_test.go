package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
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
		clean := false
		for range 100000 {
			e, err := r.Next()
			if err == io.EOF {
				clean = true
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
		st := r.Stats()
		if st.Events != n {
			t.Fatalf("Stats().Events = %d, want %d", st.Events, n)
		}
		// Every line read is accounted for: returned or skipped.
		for _, f := range st.Files {
			if clean && f.Read+f.Skipped < f.Lines {
				t.Fatalf("%s: %d lines read, %d events and %d skips", f.Name, f.Lines, f.Read, f.Skipped)
			}
		}
	})
}

// FuzzDecode checks the decoder against encoding/json: whenever a line
// decodes to a plain event, encoding/json decodes the same line to the same
// Event. Lines whose keys differ from the field names only in case, or
// repeat a key, are left out: there encoding/json matches case
// insensitively and merges repeated objects, which this decoder does not.
func FuzzDecode(f *testing.F) {
	for i := range 12 {
		b, _ := json.Marshal(randomEvent(i * 7))
		f.Add(b)
	}
	f.Add([]byte(`{"auditID":"a","stageTimestamp":"2026-01-01T00:00:00Z","requestObject":null,"user":null,"annotations":{}}`))
	f.Add([]byte(`{"auditID":"\ud800x\u00e9","stageTimestamp":"2026-01-01T00:00:00.1+02:00","objectRef":{},"responseStatus":{"code":-0}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		d := newDecoder()
		format, err := d.line(line)
		if err != nil || format != FormatPlain || len(d.out) != 1 || d.out[0].ev == nil {
			return
		}
		got := *d.out[0].ev
		if oddKeys(line) {
			return
		}
		var want Event
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("decoded %q, but encoding/json: %v", line, err)
		}
		for _, raw := range []*json.RawMessage{&want.RequestObject, &want.ResponseObject} {
			if string(*raw) == "null" {
				*raw = nil
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(%q)\n got %#v\nwant %#v", line, got, want)
		}
	})
}

// fieldNames are the JSON names of the decoded fields, lower-cased.
var fieldNames = func() map[string]string {
	m := map[string]string{"kind": "kind", "apiversion": "apiVersion"}
	for _, v := range []any{Event{}, User{}, ObjectRef{}, Status{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				m[strings.ToLower(name)] = name
			}
		}
	}
	return m
}()

// oddKeys reports whether a JSON text has an object key that matches a
// field name only case-insensitively, or a repeated key in one object.
func oddKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].obj && stack[top].wantKey {
			if k, ok := tok.(string); ok {
				if name, known := fieldNames[strings.ToLower(k)]; known && name != k {
					return true
				}
				if stack[top].keys[k] {
					return true
				}
				stack[top].keys[k] = true
				stack[top].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			if top > 0 && stack[top-1].obj {
				stack[top-1].wantKey = true
			}
		default:
			if top >= 0 && stack[top].obj {
				stack[top].wantKey = true
			}
		}
	}
}
