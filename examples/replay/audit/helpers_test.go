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
