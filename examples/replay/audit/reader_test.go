package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skipAt is an expected skip: reason at "file:line" with a detail substring.
type skipAt struct {
	reason SkipReason
	pos    string
	detail string
}

func TestReader(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name   string
		lim    Limits
		inputs []string
		want   []string // auditIDs in order
		skips  []skipAt
		err    string // substring of the first error
	}{
		{
			name:   "sorted",
			inputs: []string{lines(rc("a", 0), rc("b", s), rc("c", 2*s))},
			want:   []string{"a", "b", "c"},
		},
		{
			name:   "reordered within the window",
			inputs: []string{lines(rc("c", 3*s), rc("a", 0), rc("d", 4*s), rc("b", 2*s), rc("e", 9*s))},
			want:   []string{"a", "b", "c", "d", "e"},
		},
		{
			name:   "out of order beyond the window",
			lim:    Limits{MaxBuffered: 3}, // the anchor is chosen from 3 events
			inputs: []string{lines(rc("a", 0), rc("b", 2*s), rc("c", 10*s), rc("d", 11*s), rc("late", 1*s), rc("e", 12*s))},
			want:   []string{"a", "b", "c", "d", "e"},
			skips:  []skipAt{{SkipOutOfOrder, "f0:5", "stageTimestamp 2026-01-01T00:00:01Z is out of order by 10s, beyond Limits.ReorderWindow=5s (the newest event read is line 4 at 2026-01-01T00:00:11Z)"}},
		},
		{
			name:   "late beyond the window but after what was released is kept",
			inputs: []string{lines(rc("a", 0), rc("b", 10*s), rc("c", 11*s), rc("late", 1*s), rc("d", 12*s))},
			want:   []string{"a", "late", "b", "c", "d"},
		},
		{
			name:   "a line far ahead collapses the window; the skip names it",
			lim:    Limits{MaxBuffered: 2}, // the anchor is chosen from 2 events
			inputs: []string{lines(rc("a", 0), rc("future", time.Hour), rc("b", 2*s), rc("c", s), rc("d", 3*s))},
			want:   []string{"a", "b", "d", "future"},
			skips:  []skipAt{{SkipOutOfOrder, "f0:4", "out of order by 59m59s, beyond Limits.ReorderWindow=5s (the newest event read is line 2 at 2026-01-01T01:00:00Z)"}},
		},
		{
			name:   "late but within the window of the newest is kept",
			inputs: []string{lines(rc("a", 0), rc("b", 10*s), rc("c", 6*s))},
			want:   []string{"a", "c", "b"},
		},
		{
			name:   "ties are stable by line",
			inputs: []string{lines(rc("a", s), rc("b", s), rc("c", 0), rc("d", s))},
			want:   []string{"c", "a", "b", "d"},
		},
		{
			name:   "ties across files are stable by file order",
			inputs: []string{lines(rc("a1", s), rc("a2", 2*s)), lines(rc("b1", s), rc("b2", 2*s)), lines(rc("c0", 0), rc("c1", s))},
			want:   []string{"c0", "a1", "b1", "c1", "a2", "b2"},
		},
		{
			name: "merge of two apiservers",
			inputs: []string{
				lines(rc("a1", 0), rc("a3", 2*s), rc("a5", 4*s), rc("a7", 30*s)),
				lines(rc("b2", s), rc("b4", 3*s), rc("b6", 20*s)),
			},
			want: []string{"a1", "b2", "a3", "b4", "a5", "b6", "a7"},
		},
		{
			name: "stages",
			inputs: []string{lines(
				ev("rr", "RequestReceived", at(0)),
				ev("rs", "ResponseStarted", at(s)),
				ev("ok", "ResponseComplete", at(2*s)),
				ev("panic", "Panic", at(3*s)),
				ev("nostage", "", at(4*s)),
			)},
			want:  []string{"ok", "panic", "nostage"},
			skips: []skipAt{{SkipStage, "f0:1", "stage RequestReceived"}, {SkipStage, "f0:2", "stage ResponseStarted"}},
		},
		{
			name:   "zero and missing stageTimestamp",
			inputs: []string{lines(rc("a", 0), `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"z","stage":"ResponseComplete"}`, ev("z2", "ResponseComplete", time.Time{}))},
			want:   []string{"a"},
			skips:  []skipAt{{SkipZeroTime, "f0:2", "no stageTimestamp"}, {SkipZeroTime, "f0:3", ""}},
		},
		{
			name:   "future event beyond MaxSpan",
			inputs: []string{lines(rc("a", 0), rc("b", s), rc("future", 32*24*time.Hour), rc("c", 2*s))},
			want:   []string{"a", "b", "c"},
			skips:  []skipAt{{SkipOutOfSpan, "f0:3", "after the first event (f0:1 at 2026-01-01T00:00:00Z), beyond Limits.MaxSpan=744h0m0s"}},
		},
		{
			name:   "MaxSpan is a limit",
			lim:    Limits{MaxSpan: time.Hour},
			inputs: []string{lines(rc("a", 0), rc("b", 59*time.Minute), rc("c", 61*time.Minute))},
			want:   []string{"a", "b"},
			skips:  []skipAt{{SkipOutOfSpan, "f0:3", "beyond Limits.MaxSpan=1h0m0s"}},
		},
		{
			name:   "past event before the anchor",
			inputs: []string{lines(rc("a", 40*24*time.Hour), rc("past", 0), rc("b", 40*24*time.Hour+s))},
			want:   []string{"a", "b"},
			skips:  []skipAt{{SkipOutOfSpan, "f0:2", "960h0m0s before the first event (f0:1"}},
		},
		{
			name:   "a past event read early is the anchor",
			inputs: []string{lines(rc("a", time.Hour), rc("past", 0), rc("b", time.Hour+s))},
			want:   []string{"past", "a", "b"},
		},
		{
			name: "a wild first line does not anchor the stream",
			inputs: []string{
				lines(ev("wild", "ResponseComplete", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)), rc("a1", s), rc("a2", 3*s)),
				lines(rc("b1", 0), rc("b2", 2*s)),
			},
			want:  []string{"b1", "a1", "b2", "a2"},
			skips: []skipAt{{SkipOutOfSpan, "f0:1", "stageTimestamp 2001-01-01T00:00:00Z is 219144h0m0s before the first event (f1:1 at 2026-01-01T00:00:00Z)"}},
		},
		{
			name:   "anchor is the earliest first event of all inputs",
			inputs: []string{lines(rc("a", time.Hour)), lines(rc("b", 0))},
			want:   []string{"b", "a"},
		},
		{
			name:   "same file twice",
			inputs: []string{lines(rc("a", 0), rc("b", s)), lines(rc("a", 0), rc("b", s))},
			want:   []string{"a", "b"},
			skips:  []skipAt{{SkipDuplicate, "f1:1", "auditID a stage ResponseComplete already returned from f0:1"}, {SkipDuplicate, "f1:2", ""}},
		},
		{
			name:   "same auditID at another stage is not a duplicate",
			inputs: []string{lines(ev("a", "ResponseComplete", at(0)), ev("a", "Panic", at(s)), ev("", "", at(2*s)), ev("", "", at(2*s)))},
			want:   []string{"a", "a", "", ""},
		},
		{
			name:   "a repeated auditID at another stageTimestamp is not a copy",
			inputs: []string{lines(rc("a", 0), rc("b", s), rc("a", s), rc("b", s), rc("a", s))},
			want:   []string{"a", "b", "a"},
			skips:  []skipAt{{SkipDuplicate, "f0:4", "auditID b stage ResponseComplete already returned from f0:2"}, {SkipDuplicate, "f0:5", "already returned from f0:3"}},
		},
		{
			name:   "MaxDedup bounds the remembered keys",
			lim:    Limits{MaxDedup: 2},
			inputs: []string{lines(rc("a", 0), rc("b", 0), rc("a", 0), rc("c", 0), rc("b", 0), rc("c", 0))},
			want:   []string{"a", "b", "c", "b"}, // the run starts over at c
			skips:  []skipAt{{SkipDuplicate, "f0:3", "already returned from f0:1"}, {SkipDuplicate, "f0:6", "already returned from f0:4"}},
		},
		{
			name: "malformed lines",
			inputs: []string{lines(
				rc("a", 0),
				`{"kind":"Event",`,
				`[1,2]`,
				`not json`,
				`{"auditID":"x","stageTimestamp":"2026-01-01T00:00:01Z"} trailing`,
				`{"auditID":"x","verb":5,"stageTimestamp":"2026-01-01T00:00:01Z"}`,
				`{"auditID":"x","stageTimestamp":"yesterday"}`,
				`  `,
				rc("b", s),
			) + `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"trunc`},
			want: []string{"a", "b"},
			skips: []skipAt{
				{SkipMalformed, "f0:2", "unexpected end of JSON input"},
				{SkipMalformed, "f0:3", "not a JSON object"},
				{SkipMalformed, "f0:4", "not a JSON object"},
				{SkipMalformed, "f0:5", "after top-level value"},
				{SkipMalformed, "f0:6", `field "verb": offset 22: expected string`},
				{SkipMalformed, "f0:7", `invalid timestamp "yesterday"`},
				{SkipBlank, "f0:8", ""},
				{SkipMalformed, "f0:10", "unexpected end of JSON input"},
			},
		},
		{
			name: "not audit events",
			inputs: []string{lines(
				rc("a", 0),
				`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}`,
				`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","auditID":"old","stageTimestamp":"2026-01-01T00:00:01Z"}`,
				`{"kind":"Event","apiVersion":"v1","involvedObject":{}}`,
				`{"hello":"world"}`,
			)},
			want: []string{"a"},
			skips: []skipAt{
				{SkipNotEvent, "f0:2", `kind "EventList"`},
				{SkipNotEvent, "f0:3", `apiVersion "audit.k8s.io/v1beta1" is not audit.k8s.io/v1`},
				{SkipNotEvent, "f0:4", `apiVersion "v1"`},
				{SkipNotEvent, "f0:5", "no kind and no auditID"},
			},
		},
		{
			name:   "MaxSkips",
			lim:    Limits{MaxSkips: 2},
			inputs: []string{lines(rc("a", 0), "x", "y", rc("b", s), "z", rc("c", 2*s))},
			want:   nil,
			err:    "audit: limit exceeded: Limits.MaxSkips=2: too many bad lines; the last: f0:5: malformed: not a JSON object",
		},
		{
			name:   "filtered lines do not count toward MaxSkips",
			lim:    Limits{MaxSkips: 1},
			inputs: []string{lines(ev("x", "RequestReceived", at(0)), "", rc("a", 0), rc("a", 0), `{"messageType":"CONTROL_MESSAGE","logEvents":[]}`, rc("b", s))},
			want:   []string{"a", "b"},
		},
		{
			name:   "MaxEvents",
			lim:    Limits{MaxEvents: 2},
			inputs: []string{lines(rc("a", 0), rc("b", s), rc("c", 2*s))},
			want:   []string{"a", "b"},
			err:    "Limits.MaxEvents=2: at f0:3",
		},
		{
			name:   "MaxBuffered",
			lim:    Limits{MaxBuffered: 3},
			inputs: []string{lines(rc("a", 0), rc("b", s), rc("c", 2*s), rc("d", 3*s), rc("e", 10*s))},
			err:    "Limits.MaxBuffered=3: f0:4: too many events within Limits.ReorderWindow=5s of each other",
		},
		{
			name:   "MaxBufferedBytes",
			lim:    Limits{MaxBufferedBytes: 1000},
			inputs: []string{lines(leaseLine("a", "ResponseComplete", at(0), 1), leaseLine("b", "ResponseComplete", at(s), 2), rc("c", 10*s))},
			err:    "Limits.MaxBufferedBytes=1000: f0:2: too many bytes of events within Limits.ReorderWindow=5s of each other",
		},
		{
			name:   "MaxLineBytes",
			lim:    Limits{MaxLineBytes: 400},
			inputs: []string{lines(rc("a", 0), `{"auditID":"big","x":"`+strings.Repeat("y", 1000)+`"}`, rc("b", s))},
			want:   []string{"a", "b"},
			skips:  []skipAt{{SkipLongLine, "f0:2", "line of 1024 bytes is longer than Limits.MaxLineBytes=400"}},
		},
		{
			name:   "not an audit log",
			lim:    Limits{SniffLines: 3},
			inputs: []string{lines(rc("a", 0)), lines("# a shell script", "echo hi", "", "exit 0", rc("b", 0))},
			err:    "audit: not an audit log: audit: limit exceeded: Limits.SniffLines=3: no audit event in the first 4 lines of f1; first skipped: f1:1: malformed: not a JSON object",
		},
		{
			name:   "a short file without events is not an audit log",
			inputs: []string{lines(rc("a", 0)), lines(`{"a":1}`)},
			err:    "no audit event in the first 1 lines of f1; first skipped: f1:1: not an audit event",
		},
		{
			name:   "empty inputs",
			inputs: []string{"", "\n\n", lines(rc("a", 0))},
			want:   []string{"a"},
		},
		{
			name:   "CRLF, BOM and blank padding",
			inputs: []string{"\xef\xbb\xbf" + rc("a", 0) + "\r\n  " + rc("b", s) + "  \r\n"},
			want:   []string{"a", "b"},
		},
		{
			name:   "GKE export",
			inputs: []string{lines(`{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","methodName":"io.k8s.core.v1.nodes.patch"},"logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity"}`)},
			err:    "audit: f0:1: audit: unsupported log export: GKE Cloud Logging export",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, tc.lim, tc.inputs...)
			if tc.err != "" {
				require.Error(t, res.err)
				assert.Contains(t, res.err.Error(), tc.err)
			} else {
				require.NoError(t, res.err)
			}
			assert.Equal(t, tc.want, res.ids, "auditIDs")
			for _, sk := range tc.skips {
				found := false
				for _, st := range res.stats.Skipped {
					for _, k := range st.First {
						if k.Reason == sk.reason && k.Pos.String() == sk.pos {
							found = true
							assert.Contains(t, k.Detail, sk.detail, "skip at %s", sk.pos)
						}
					}
				}
				assert.True(t, found, "no %v skip at %s in %+v", sk.reason, sk.pos, res.stats.Skipped)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	res := readAll(t, Limits{MaxEvents: 1}, lines(rc("a", 0), rc("b", 1)))
	assert.ErrorIs(t, res.err, ErrLimit)
	res = readAll(t, Limits{SniffLines: 1}, lines("x"))
	assert.ErrorIs(t, res.err, ErrLimit)
	assert.ErrorIs(t, res.err, ErrNotAuditLog)
	res = readAll(t, Limits{}, lines(`{"protoPayload":{}}`))
	assert.ErrorIs(t, res.err, ErrUnsupportedFormat)

	// The fatal errors are sticky.
	r, err := NewReader([]string{"f"}, []io.Reader{strings.NewReader(lines(`{"protoPayload":{}}`))}, Limits{})
	require.NoError(t, err)
	_, err1 := r.Next()
	_, err2 := r.Next()
	assert.ErrorIs(t, err1, ErrUnsupportedFormat)
	assert.Equal(t, err1, err2)
}

// TestSubscriptionRecordBound: a record of more than maxLogEvents events,
// objects or not, is one malformed line.
func TestSubscriptionRecordBound(t *testing.T) {
	for _, elem := range []string{`{"message":"x"}`, `1`} {
		var b strings.Builder
		b.WriteString(`{"messageType":"DATA_MESSAGE","logEvents":[`)
		for i := range maxLogEvents + 1 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString("]}")
		res := readAll(t, Limits{}, lines(rc("a", 0), b.String()))
		require.NoError(t, res.err)
		assert.Equal(t, []string{"a"}, res.ids)
		require.Equal(t, int64(1), res.stats.Skips(SkipMalformed), elem)
		assert.Contains(t, res.stats.Skipped[0].First[0].Detail, `field "logEvents": more than 10000 logEvents`)
	}
}

func TestEnvelopes(t *testing.T) {
	plain := rc("p", 0)
	azure := func(id string, d time.Duration) string {
		return `{"operationName":"Microsoft.ContainerService/managedClusters/diagnosticLogs/Read","category":"kube-audit","ccpNamespace":"abc","resourceId":"/SUBSCRIPTIONS/X","properties":{"log":` + quote(rc(id, d)) + `,"stream":"stdout","pod":"kube-apiserver-5c8f"},"time":"2026-01-01T00:00:00.0000000Z","Cloud":"AzureCloud","Environment":"prod"}`
	}
	s3 := func(id string, d time.Duration) string {
		return at(d).Format("2006-01-02T15:04:05.000Z") + " " + rc(id, d)
	}
	msg := func(id string, d time.Duration) string {
		return `{"timestamp":1767225600000,"message":` + quote(rc(id, d)) + `,"ingestionTime":1767225600100,"logStreamName":"kube-apiserver-audit-0a1b","eventId":"3845"}`
	}
	atmsg := func(id string, d time.Duration) string {
		return `{"@timestamp":"2026-01-01 00:00:00.000","@message":` + rc(id, d) + `,"@logStream":"kube-apiserver-audit-0a1b"}`
	}
	sub := `{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/aws/eks/prod/cluster","logStream":"kube-apiserver-audit-0a1b","subscriptionFilters":["all"],"logEvents":[` +
		`{"id":"1","timestamp":1767225601000,"message":` + quote(rc("s2", 2*time.Second)) + `},` +
		`{"id":"2","timestamp":1767225601000,"message":` + quote(rc("s1", time.Second)) + `},` +
		`{"id":"3","timestamp":1767225601000,"message":"I0101 00:00:01.000000 1 apiserver log line"},` +
		`{"id":"4","timestamp":1767225601000,"message":` + quote(ev("s0", "RequestReceived", at(0))) + `}]}`
	control := `{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logGroup":"","logStream":"","subscriptionFilters":[],"logEvents":[{"id":"","timestamp":1767225600000,"message":"CWL CONTROL MESSAGE: Checking health of destination Firehose."}]}`
	otherCategory := `{"category":"kube-apiserver","properties":{"log":"I0101 00:00:00 apiserver started"},"time":"2026-01-01T00:00:00Z"}`
	records := `{"records":[{"category":"kube-audit-admin","properties":{"log":` + quote(rc("r1", 7*time.Second)) + `,"pod":"kube-apiserver-1"}},{"category":"cluster-autoscaler","properties":{"log":"scale up"}},{"category":"kube-audit","properties":{"log":` + quote(rc("r0", 6500*time.Millisecond)) + `}}]}`

	res := readAll(t, Limits{},
		lines(plain),
		lines(azure("a", time.Second), otherCategory),
		lines(s3("e", 3*time.Second), "2026-01-01T00:00:03.000Z I0101 00:00:03.000000 1 apiserver text log"),
		lines(msg("m", 4*time.Second)),
		lines(atmsg("@", 5*time.Second)),
		lines(sub, control),
		lines(plain, s3("x", 6*time.Second)),
		lines(records, `{"records":[]}`),
	)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"p", "a", "s1", "s2", "e", "m", "@", "x", "r0", "r1"}, res.ids)
	var formats []Format
	for _, f := range res.stats.Files {
		formats = append(formats, f.Format)
	}
	assert.Equal(t, []Format{FormatPlain, FormatAzure, FormatCloudWatchExport, FormatCloudWatchMessage, FormatCloudWatchMessage, FormatCloudWatchSubscription, FormatPlain, FormatAzure}, formats)
	assert.True(t, res.stats.Files[6].Mixed)
	assert.Contains(t, strings.Join(res.stats.Warnings, "\n"), "f6: mixes formats: plain, then cloudwatch-s3-export at line 2")
	assert.Equal(t, int64(1), res.stats.Skips(SkipControl))
	assert.Equal(t, int64(5), res.stats.Skips(SkipOtherLog))
	assert.Equal(t, int64(1), res.stats.Skips(SkipStage))
	assert.Equal(t, int64(1), res.stats.Skips(SkipDuplicate)) // "p" twice
	var details []string
	for _, st := range res.stats.Skipped {
		for _, k := range st.First {
			details = append(details, k.String())
		}
	}
	assert.Contains(t, details, "f5:1: other log: logEvents[2]: payload is not a JSON object")
	assert.Contains(t, details, "f5:1: stage: logEvents[3]: stage RequestReceived")
	assert.Contains(t, details, `f1:2: other log: diagnostic category "kube-apiserver" (Azure)`)
	assert.Contains(t, details, `f7:1: other log: records[1]: diagnostic category "cluster-autoscaler" (Azure)`)
	assert.Contains(t, details, `f7:2: other log: records without any record (Azure)`)
	for _, name := range []string{"unknown", "plain", "azure-diagnostics", "cloudwatch-s3-export", "cloudwatch-message", "cloudwatch-subscription", "gke-cloud-logging", "Format(7)"} {
		assert.Contains(t, formatNames[:], strings.TrimSuffix(name, "Format(7)")+map[bool]string{true: "gke-cloud-logging", false: ""}[name == "Format(7)"])
	}
	assert.Equal(t, "Format(7)", Format(7).String())
}

// TestDecodeMatchesEncodingJSON is a model-based test: every event returned
// equals what encoding/json decodes from the same payload.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	var in []string
	var want []Event
	for i := range 200 {
		e := randomEvent(i)
		b, err := jsonMarshal(e)
		require.NoError(t, err)
		line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1",` + string(b[1:])
		var w Event
		require.NoError(t, jsonUnmarshal([]byte(line), &w))
		want = append(want, w)
		switch i % 3 {
		case 0:
			in = append(in, line)
		case 1:
			in = append(in, `{"category":"kube-audit-admin","properties":{"log":`+quote(line)+`}}`)
		case 2:
			in = append(in, `{"message":`+quote(line)+`}`)
		}
	}
	r, err := NewReader([]string{"f"}, []io.Reader{strings.NewReader(lines(in...))}, Limits{})
	require.NoError(t, err)
	for i := range want {
		got, err := r.Next()
		require.NoError(t, err)
		assert.Equal(t, Position{File: "f", Line: int64(i + 1)}, got.Source)
		got.Source = Position{}
		assert.Equal(t, want[i], *got, "event %d: %s", i, in[i])
	}
	_, err = r.Next()
	assert.Equal(t, io.EOF, err)
}

func TestEventsAreFresh(t *testing.T) {
	r, err := NewReader([]string{"f"}, []io.Reader{strings.NewReader(lines(leaseLine("a", "ResponseComplete", at(0), 1), leaseLine("b", "ResponseComplete", at(time.Second), 2)))}, Limits{})
	require.NoError(t, err)
	a, err := r.Next()
	require.NoError(t, err)
	snapshot := *a
	snapshot.User.Groups = append([]string(nil), a.User.Groups...)
	b, err := r.Next()
	require.NoError(t, err)
	require.NotSame(t, a, b)
	require.NotSame(t, a.ObjectRef, b.ObjectRef)
	assert.Equal(t, snapshot.User, a.User)
	assert.Equal(t, "node-0001", a.ObjectRef.Name)
	assert.Equal(t, "node-0002", b.ObjectRef.Name)
	assert.Equal(t, 200, a.Code())
	assert.Equal(t, "allow", a.Annotations["authorization.k8s.io/decision"])
}

func TestTruncatedGzip(t *testing.T) {
	full := gz(t, lines(rc("a", 0), rc("b", time.Second), rc("c", 2*time.Second), rc("d", 3*time.Second)))
	cut := full[:len(full)-30] // in the deflate stream's last block or trailer
	r, err := NewReader([]string{"cut.gz", "other"}, []io.Reader{bytes.NewReader(cut), strings.NewReader(lines(rc("x", 10*time.Second)))}, Limits{})
	require.NoError(t, err)
	var ids []string
	var inputErr *InputError
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			require.ErrorAs(t, err, &inputErr)
			require.Empty(t, ids[len(ids)-1:][0] == "x")
			ids = append(ids, "ERR")
			continue
		}
		ids = append(ids, e.AuditID)
	}
	require.NotNil(t, inputErr)
	assert.ErrorIs(t, inputErr, ErrTruncated)
	assert.Equal(t, "cut.gz", inputErr.Pos.File)
	assert.Contains(t, inputErr.Error(), "audit: cut.gz: after line ")
	assert.Contains(t, inputErr.Error(), "gzip stream truncated (unexpected EOF)")
	assert.Equal(t, "ERR", ids[len(ids)-2], "the error comes after cut.gz's events and before x: %v", ids)
	assert.Equal(t, "x", ids[len(ids)-1])
	st := r.Stats()
	assert.ErrorIs(t, st.Files[0].Err, ErrTruncated)
	assert.Contains(t, strings.Join(st.Warnings, "\n"), "cut.gz: ended after line")

	// A gzip header cut short.
	res := readAll(t, Limits{}, string(full[:5]))
	assert.ErrorIs(t, res.err, ErrTruncated)

	// A whole gzip stream reads like the plain text, magic bytes decide.
	res = readAll(t, Limits{}, string(full))
	require.NoError(t, res.err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, res.ids)
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "audit.log")
	zipped := filepath.Join(dir, "audit-2026-01-01.log") // gzip, no .gz suffix
	require.NoError(t, os.WriteFile(plain, []byte(lines(rc("a", 0), rc("c", 2*time.Second))), 0o600))
	require.NoError(t, os.WriteFile(zipped, gz(t, lines(rc("b", time.Second))), 0o600))
	notZipped := filepath.Join(dir, "audit-2026-01-02.log.gz") // plain despite the suffix
	require.NoError(t, os.WriteFile(notZipped, []byte(lines(rc("d", 3*time.Second))), 0o600))
	r, err := Open([]string{plain, zipped, notZipped}, Limits{})
	require.NoError(t, err)
	res := drain(t, r)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, res.ids)
	assert.Equal(t, plain, res.stats.Files[0].Name)
	require.NoError(t, r.Close())
	_, err = r.Next()
	assert.EqualError(t, err, "audit: Next called after Close")

	_, err = Open([]string{plain, filepath.Join(dir, "missing")}, Limits{})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = Open([]string{plain, plain, plain}, Limits{MaxFiles: 2})
	assert.ErrorIs(t, err, ErrLimit)
	assert.ErrorContains(t, err, "Limits.MaxFiles=2: 3 files given")
}

func TestNewReaderErrors(t *testing.T) {
	_, err := NewReader([]string{"a"}, nil, Limits{})
	assert.EqualError(t, err, "audit: 1 names for 0 readers")
	_, err = NewReader(nil, nil, Limits{})
	assert.EqualError(t, err, "audit: no inputs")
	_, err = NewReader([]string{"a", "b"}, []io.Reader{strings.NewReader(""), strings.NewReader("")}, Limits{MaxFiles: 1})
	assert.ErrorIs(t, err, ErrLimit)
	_, err = NewReader([]string{"a"}, []io.Reader{strings.NewReader("")}, Limits{MaxLineBytes: -1, ReorderWindow: -time.Second})
	assert.EqualError(t, err, "audit: negative limit [MaxLineBytes=-1 ReorderWindow=-1s]")
}

type errReader struct {
	data io.Reader
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if err == io.EOF {
		return n, r.err
	}
	return n, err
}

func TestReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r, err := NewReader([]string{"f"}, []io.Reader{&errReader{strings.NewReader(lines(rc("a", 0)) + `{"partial`), boom}}, Limits{})
	require.NoError(t, err)
	e, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", e.AuditID)
	_, err = r.Next()
	assert.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "audit: f: after line 1: disk on fire")
	_, err = r.Next()
	assert.Equal(t, io.EOF, err)
}

func TestOverlapWarnings(t *testing.T) {
	day := 24 * time.Hour
	res := readAll(t, Limits{},
		lines(rc("a1", 0), rc("a2", time.Hour)),
		lines(rc("b1", 30*time.Minute), rc("b2", 2*time.Hour)),
		lines(rc("rot", 2*time.Hour+30*time.Second)), // a rotated file right after b
		lines(rc("c1", 3*day), rc("c2", 3*day+time.Hour)),
	)
	require.NoError(t, res.err)
	require.Len(t, res.stats.Warnings, 1, "%q", res.stats.Warnings)
	assert.Equal(t, "f3: its events (2026-01-04T00:00:00Z to 2026-01-04T01:00:00Z) do not overlap any other input's within Limits.OverlapSlack=1m0s: another cluster's or another day's log?", res.stats.Warnings[0])
}

func TestStats(t *testing.T) {
	res := readAll(t, Limits{},
		lines(leaseLine("a", "ResponseComplete", at(0), 1), ev("b", "RequestReceived", at(0)), "junk", leaseLine("c", "ResponseComplete", at(time.Second), 2)),
		lines(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"n","stage":"ResponseComplete","objectRef":{"resource":"nodes","subresource":"status","name":"n1"},"stageTimestamp":"2026-01-01T00:00:00.5Z"}`),
	)
	require.NoError(t, res.err)
	st := res.stats
	assert.Equal(t, int64(3), st.Events)
	assert.Equal(t, int64(1), st.BadSkips)
	f := st.Files[0]
	assert.Equal(t, FileStats{Name: "f0", Format: FormatPlain, Lines: 4, Read: 2, Events: 2, Skipped: 2, BadSkips: 1, First: at(0), Last: at(time.Second)}, f)
	assert.Equal(t, map[ResourceKey]int64{
		{APIGroup: "coordination.k8s.io", Resource: "leases"}: 2,
		{Resource: "nodes", Subresource: "status"}:            1,
	}, st.Resources)
	assert.Equal(t, []SkipStats{
		{Reason: SkipMalformed, Count: 1, First: []Skip{{Pos: Position{"f0", 3}, Reason: SkipMalformed, Detail: "not a JSON object"}}},
		{Reason: SkipStage, Count: 1, First: []Skip{{Pos: Position{"f0", 2}, Reason: SkipStage, Detail: "stage RequestReceived"}}},
	}, st.Skipped)
	// Stats is a copy.
	st.Skipped[0].First[0].Detail = "changed"
	st.Files[0].Name = "changed"

	// Samples are bounded.
	var many []string
	for i := range 50 {
		many = append(many, fmt.Sprintf("junk %d", i))
	}
	res = readAll(t, Limits{}, lines(append([]string{rc("a", 0)}, many...)...))
	require.Len(t, res.stats.Skipped, 1)
	assert.Equal(t, int64(50), res.stats.Skipped[0].Count)
	assert.Len(t, res.stats.Skipped[0].First, MaxSkipSamples)

	assert.Equal(t, "SkipReason(0)", SkipReason(0).String())
	assert.Equal(t, "out of order", SkipOutOfOrder.String())
	assert.True(t, SkipOutOfSpan.Bad())
	assert.False(t, SkipDuplicate.Bad())
}

// TestDedupLongRun checks the switch from the linear scan to the map.
func TestDedupLongRun(t *testing.T) {
	var a, b []string
	for i := range 100 {
		a = append(a, rc(fmt.Sprintf("id%d", i), 0))
		b = append(b, rc(fmt.Sprintf("id%d", 99-i), 0))
	}
	res := readAll(t, Limits{}, lines(a...), lines(b...))
	require.NoError(t, res.err)
	assert.Len(t, res.ids, 100)
	assert.Equal(t, int64(100), res.stats.Skips(SkipDuplicate))
}

// TestUnknownResources checks that events of any resource are returned and
// that Stats.Resources stays bounded.
func TestUnknownResources(t *testing.T) {
	var ls []string
	for i := range maxResourceKeys + 10 {
		ls = append(ls, fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"id%d","stage":"ResponseComplete","objectRef":{"resource":"widgets%d","apiGroup":"example.com"},"stageTimestamp":"2026-01-01T00:00:00Z"}`, i, i))
	}
	res := readAll(t, Limits{}, lines(ls...))
	require.NoError(t, res.err)
	assert.Len(t, res.ids, maxResourceKeys+10)
	assert.Len(t, res.stats.Resources, maxResourceKeys)
	assert.Equal(t, int64(1), res.stats.Resources[ResourceKey{APIGroup: "example.com", Resource: "widgets0"}])
	assert.Equal(t, int64(11), res.stats.Resources[ResourceKey{Resource: "(other)"}])
}

// TestFragmentedReads reads through readers that return one byte, or half
// of what is asked, at a time (a pipe, stdin), plain and gzip.
func TestFragmentedReads(t *testing.T) {
	text := lines(rc("a", 0), `{"auditID":"long","x":"`+strings.Repeat("y", 200<<10)+`"}`, rc("c", 2*time.Second), rc("b", time.Second)) + rc("d", 3*time.Second)
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	} {
		for _, zipped := range []bool{false, true} {
			src := []byte(text)
			if zipped {
				src = gz(t, text)
			}
			r, err := NewReader([]string{"f"}, []io.Reader{wrap(bytes.NewReader(src))}, Limits{MaxLineBytes: 100 << 10})
			require.NoError(t, err)
			res := drain(t, r)
			require.NoError(t, res.err, "%s gzip=%v", name, zipped)
			assert.Equal(t, []string{"a", "b", "c", "d"}, res.ids, "%s gzip=%v", name, zipped)
			assert.Equal(t, int64(1), res.stats.Skips(SkipLongLine), "%s gzip=%v", name, zipped)
			assert.Equal(t, int64(5), res.stats.Files[0].Lines, "%s gzip=%v", name, zipped)
		}
	}
}
