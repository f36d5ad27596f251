package audit

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is the fixed epoch of the tests.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// leaseLine is a realistic kubelet Lease renewal at level Metadata
// (about 600 bytes).
func leaseLine(id string, stage string, ts time.Time, node int) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"%s","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-%04d?timeout=10s","verb":"update","user":{"username":"system:node:node-%04d","groups":["system:nodes","system:authenticated"]},"sourceIPs":["10.0.3.17"],"userAgent":"kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0","objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"node-%04d","uid":"0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6","apiGroup":"coordination.k8s.io","apiVersion":"v1","resourceVersion":"123456"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`,
		id, stage, node, node, node, ts.Add(-2*time.Millisecond).Format(time.RFC3339Nano), ts.Format(time.RFC3339Nano))
}

// ev is a short event line: id, stage, stageTimestamp.
func ev(id, stage string, ts time.Time) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":%q,"verb":"get","user":{"username":"u"},"stageTimestamp":%q}`,
		id, stage, ts.Format(time.RFC3339Nano))
}

// rc is a ResponseComplete event line.
func rc(id string, d time.Duration) string { return ev(id, "ResponseComplete", at(d)) }

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type result struct {
	ids   []string // auditIDs returned, "file:line" prefixed when withPos
	err   error    // the first non-EOF error
	stats Stats
}

// readAll reads every input to the end, continuing after InputErrors.
func readAll(t testing.TB, lim Limits, inputs ...string) result {
	t.Helper()
	names := make([]string, len(inputs))
	rs := make([]io.Reader, len(inputs))
	for i, in := range inputs {
		names[i] = fmt.Sprintf("f%d", i)
		rs[i] = strings.NewReader(in)
	}
	r, err := NewReader(names, rs, lim)
	require.NoError(t, err)
	return drain(t, r)
}

func drain(t testing.TB, r *Reader) result {
	t.Helper()
	var res result
	var last time.Time
	for i := 0; ; i++ {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if res.err == nil {
				res.err = err
			}
			if _, ok := err.(*InputError); ok {
				continue
			}
			break
		}
		if e.StageTimestamp.Before(last) {
			t.Fatalf("event %d %s at %v before %v", i, e.AuditID, e.StageTimestamp, last)
		}
		last = e.StageTimestamp
		res.ids = append(res.ids, e.AuditID)
	}
	res.stats = r.Stats()
	return res
}

var (
	jsonMarshal   = json.Marshal
	jsonUnmarshal = json.Unmarshal
)

// randomEvent is a deterministic event exercising escapes, unicode, nulls
// and nested objects.
func randomEvent(i int) Event {
	strs := []string{"", "plain", `quote " and \ backslash`, "tab\tnewline\n", "unicode é 日本 \u2028", "emoji 😀", "<html>&amp;", "\x01control"}
	s := func(k int) string { return strs[(i*7+k*3)%len(strs)] }
	e := Event{
		Level:                    []string{"Metadata", "Request", "RequestResponse"}[i%3],
		AuditID:                  fmt.Sprintf("id-%d-%s", i, s(1)),
		Stage:                    []string{"ResponseComplete", "Panic", ""}[i%3],
		RequestURI:               "/api/v1/nodes/n" + s(2),
		Verb:                     s(3),
		User:                     User{Username: s(4)},
		UserAgent:                s(5),
		RequestReceivedTimestamp: at(time.Duration(i) * time.Millisecond),
		StageTimestamp:           at(time.Duration(i)*time.Millisecond + time.Duration(i%7)*time.Nanosecond),
	}
	if i%2 == 0 {
		e.User.Groups = []string{"system:nodes", s(6)}
	}
	if i%4 != 3 {
		e.ObjectRef = &ObjectRef{Resource: "nodes", Namespace: s(7), Name: s(8), UID: s(9), APIGroup: s(10), APIVersion: "v1", Subresource: s(11)}
	}
	if i%5 != 4 {
		e.ResponseStatus = &Status{Code: 200 + i%300, Reason: s(12), Message: s(13)}
	}
	if i%3 != 0 {
		e.RequestObject = json.RawMessage(fmt.Sprintf(`{"kind":"Node","a":[1,2.5,-3e2,true,false,null,{"x":%s}],"b":{}}`, quote(s(14))))
	}
	if i%3 == 2 {
		e.ResponseObject = json.RawMessage(`[{"nested":[[[]]]},"s",0]`)
	}
	if i%2 == 1 {
		e.Annotations = map[string]string{"authorization.k8s.io/decision": "allow", s(15): s(16)}
	}
	return e
}
