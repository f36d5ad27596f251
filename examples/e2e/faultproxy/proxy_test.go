package faultproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	leaseWatch = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=true"
	nodeWatch  = "/api/v1/nodes?watch=true"
	podGet     = "/api/v1/namespaces/ns/pods/p"
)

// upstream is a fake apiserver: GETs echo the method, user agent and body;
// a watch streams the lines the test sends on its resource's channel.
type upstream struct {
	srv    *httptest.Server
	events map[string]chan string // by resource
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{events: map[string]chan string{"leases": make(chan string, 16), "nodes": make(chan string, 16)}}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := newRequest(r)
		if !req.target.Watch {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "ua": r.UserAgent(), "body": string(b)})
			return
		}
		ch := u.events[req.target.Resource]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case line, ok := <-ch:
				if !ok {
					return
				}
				_, _ = fmt.Fprintln(w, line)
				_ = rc.Flush()
			}
		}
	}))
	u.srv.EnableHTTP2 = true
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
}

func start(t *testing.T, opts Options) (*Proxy, *upstream, *http.Client) {
	t.Helper()
	u := newUpstream(t)
	p, err := New(u.srv.URL, u.caPEM(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(p.CAData()))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return p, u, &http.Client{Transport: tr}
}

// held returns a channel that receives the resource of each request or
// stream that starts waiting in a stall.
func held(p *Proxy) <-chan string {
	ch := make(chan string, 16)
	p.mu.Lock()
	p.heldHook = func(r *request) { ch <- r.target.Resource }
	p.mu.Unlock()
	return ch
}

func get(t *testing.T, c *http.Client, p *Proxy, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.URL()+path, nil)
	require.NoError(t, err)
	req.Header.Set("User-Agent", "test-client/1")
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// lines reads a watch body line by line into a channel, closed at the end.
func lines(body io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(body)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s, ok := <-ch:
		require.True(t, ok, "%s: stream ended", what)
		return s
	case <-time.After(10 * time.Second):
		require.FailNow(t, what+": nothing within 10 s")
	}
	return ""
}

// waitLog waits until the log has n entries (a request is logged when its
// handler returns, which may be after the client has the answer).
func waitLog(t *testing.T, p *Proxy, n int) []Entry {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.Log()) >= n }, 10*time.Second, time.Millisecond)
	log := p.Log()
	require.Len(t, log, n)
	return log
}

func TestForwardOverHTTP2(t *testing.T) {
	p, _, c := start(t, Options{UserAgentSuffix: "replica-a"})
	resp := get(t, c, p, podGet)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 2, resp.ProtoMajor, "the proxy serves HTTP/2")
	var got map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.Equal(t, "test-client/1 replica-a", got["ua"])

	e := waitLog(t, p, 1)[0]
	assert.Equal(t, Target{Version: "v1", Namespace: "ns", Resource: "pods", Name: "p", API: true}, e.Target)
	assert.Equal(t, "test-client/1", e.UserAgent)
	assert.Equal(t, http.StatusOK, e.Status)
	assert.Empty(t, e.Rule)
	assert.Empty(t, e.Err)
}

func TestRespondRetryAfterOnce(t *testing.T) {
	p, _, c := start(t, Options{})
	_, err := p.Add(Rule{Name: "overload", Resource: "pods", Action: Respond, Status: http.StatusTooManyRequests, RetryAfter: 3, Times: 1})
	require.NoError(t, err)

	resp := get(t, c, p, podGet)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	var s metav1.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason)
	assert.Equal(t, int32(3), s.Details.RetryAfterSeconds)

	resp = get(t, c, p, podGet)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "Times: 1, so the second request is forwarded")
	log := waitLog(t, p, 2)
	assert.Equal(t, Entry{Rule: "overload", Action: Respond, Status: 429, RetryAfter: 3}, Entry{Rule: log[0].Rule, Action: log[0].Action, Status: log[0].Status, RetryAfter: log[0].RetryAfter})
}

// TestStallOneWatchOthersFlow: the Lease watch and the Node watch share one
// HTTP/2 connection; stalling the Lease watch holds its events (not lost)
// while the Node watch and GETs keep flowing.
func TestStallOneWatchOthersFlow(t *testing.T) {
	p, u, c := start(t, Options{})
	holds := held(p)
	leases := lines(get(t, c, p, leaseWatch).Body)
	nodes := lines(get(t, c, p, nodeWatch).Body)
	u.events["leases"] <- "lease-1"
	u.events["nodes"] <- "node-1"
	assert.Equal(t, "lease-1", recv(t, leases, "lease watch"))
	assert.Equal(t, "node-1", recv(t, nodes, "node watch"))

	remove, err := p.Add(Rule{Name: "stall-leases", Resource: "leases", Watch: OnlyWatch, Action: Stall})
	require.NoError(t, err)
	u.events["leases"] <- "lease-2"
	u.events["leases"] <- "lease-3"
	assert.Equal(t, "leases", recv(t, holds, "stall"), "the proxy holds the Lease event")
	u.events["nodes"] <- "node-2"
	assert.Equal(t, "node-2", recv(t, nodes, "node watch during the stall"))
	assert.Equal(t, http.StatusOK, get(t, c, p, podGet).StatusCode, "a GET during the stall")
	select {
	case s := <-leases:
		t.Fatalf("lease watch got %q during the stall", s)
	default:
	}
	p.mu.Lock()
	conns := len(p.conns)
	p.mu.Unlock()
	assert.Equal(t, 1, conns, "every stream on one HTTP/2 connection")

	remove()
	assert.Equal(t, "lease-2", recv(t, leases, "lease watch after the stall"))
	assert.Equal(t, "lease-3", recv(t, leases, "lease watch after the stall"))
	remove() // idempotent

	require.NoError(t, p.Close())
	var leaseHeld, nodeHeld time.Duration
	for _, e := range p.Log() {
		switch e.Resource {
		case "leases":
			leaseHeld += e.Held
		case "nodes":
			nodeHeld += e.Held
		}
	}
	assert.Positive(t, leaseHeld, "Entry.Held of the Lease watch")
	assert.Zero(t, nodeHeld, "Entry.Held of the Node watch")
}

func TestStallRequestUntilRemoved(t *testing.T) {
	p, _, c := start(t, Options{})
	holds := held(p)
	remove, err := p.Add(Rule{Name: "hang", Methods: []string{"get"}, Resource: "pods", Watch: NoWatch, Action: Stall})
	require.NoError(t, err)
	done := make(chan int, 1)
	go func() {
		resp, err := c.Get(p.URL() + podGet)
		if err != nil {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	assert.Equal(t, "pods", recv(t, holds, "stall"))
	select {
	case code := <-done:
		t.Fatalf("answered %d during the stall", code)
	default:
	}
	remove()
	select {
	case code := <-done:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("not released")
	}
	e := waitLog(t, p, 1)[0]
	assert.Equal(t, "hang", e.Rule)
	assert.Positive(t, e.Held)
}

func TestMaxHoldEndsAForgottenStall(t *testing.T) {
	p, _, c := start(t, Options{MaxHold: time.Millisecond})
	_, err := p.Add(Rule{Name: "forgotten", Resource: "pods", Action: Stall})
	require.NoError(t, err)
	resp, err := c.Get(p.URL() + podGet)
	if err == nil {
		_ = resp.Body.Close()
	}
	log := waitLog(t, p, 1)
	assert.Equal(t, errMaxHold.Error(), log[0].Err)
}

func TestGoneAnswersOneWatch(t *testing.T) {
	p, u, c := start(t, Options{})
	_, err := p.Add(Rule{Name: "expired", Resource: "leases", Action: Gone, Times: 1})
	require.NoError(t, err)

	ev := lines(get(t, c, p, leaseWatch).Body)
	var we struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	require.NoError(t, json.Unmarshal([]byte(recv(t, ev, "ERROR event")), &we))
	assert.Equal(t, "ERROR", we.Type)
	assert.Equal(t, int32(http.StatusGone), we.Object.Code)
	assert.Equal(t, metav1.StatusReasonExpired, we.Object.Reason)
	_, open := <-ev
	assert.False(t, open, "the stream ends after the ERROR event")

	assert.Equal(t, http.StatusOK, get(t, c, p, podGet).StatusCode, "a Gone rule never matches a GET")
	ev = lines(get(t, c, p, leaseWatch).Body)
	u.events["leases"] <- "lease-1"
	assert.Equal(t, "lease-1", recv(t, ev, "the re-watch is forwarded"))
}

// TestGoneSparesTheRelist: with OnlyResumeWatch, a watch-list
// (sendInitialEvents=true) passes while a resuming watch is answered 410.
func TestGoneSparesTheRelist(t *testing.T) {
	p, u, c := start(t, Options{})
	_, err := p.Add(Rule{Name: "expired", Resource: "leases", Watch: OnlyResumeWatch, Action: Gone})
	require.NoError(t, err)
	ev := lines(get(t, c, p, leaseWatch+"&resourceVersion=5").Body)
	assert.Contains(t, recv(t, ev, "ERROR event"), `"code":410`)
	ev = lines(get(t, c, p, leaseWatch+"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan").Body)
	u.events["leases"] <- "lease-1"
	assert.Equal(t, "lease-1", recv(t, ev, "the watch-list is forwarded"))
	log := waitLog(t, p, 1)
	assert.Equal(t, "expired", log[0].Rule)
	assert.False(t, log[0].InitialEvents)
}

func TestEndWatches(t *testing.T) {
	p, u, c := start(t, Options{})
	leases := lines(get(t, c, p, leaseWatch).Body)
	nodes := lines(get(t, c, p, nodeWatch).Body)
	u.events["leases"] <- "lease-1"
	require.Equal(t, "lease-1", recv(t, leases, "lease watch"))
	assert.Equal(t, 1, p.EndWatches(Rule{Resource: "leases"}))
	_, open := <-leases
	assert.False(t, open, "the Lease watch ended")
	u.events["nodes"] <- "node-1"
	assert.Equal(t, "node-1", recv(t, nodes, "the Node watch is untouched"))
	assert.Equal(t, 0, p.EndWatches(Rule{Resource: "leases", Watch: NoWatch}))
}

func TestCutAndRestore(t *testing.T) {
	p, _, c := start(t, Options{})
	watch := get(t, c, p, nodeWatch)
	nodes := lines(watch.Body)
	p.Cut()
	for range nodes { // ends: its connection is closed
	}
	_, err := c.Get(p.URL() + podGet)
	require.Error(t, err, "a request during the cut")
	assert.GreaterOrEqual(t, p.Refused(), 1)

	p.Restore()
	resp := get(t, c, p, podGet)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestDelay(t *testing.T) {
	p, _, c := start(t, Options{})
	_, err := p.Add(Rule{Name: "slow", UserAgent: "test-client", Action: Delay, Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, get(t, c, p, podGet).StatusCode)
	log := waitLog(t, p, 1)
	assert.Equal(t, Delay, log[0].Action)
	assert.GreaterOrEqual(t, log[0].End.Sub(log[0].Start), 20*time.Millisecond)
}

func TestCloseEndsStalls(t *testing.T) {
	p, _, c := start(t, Options{})
	holds := held(p)
	_, err := p.Add(Rule{Name: "hang", Action: Stall})
	require.NoError(t, err)
	go func() {
		if resp, err := c.Get(p.URL() + podGet); err == nil {
			_ = resp.Body.Close()
		}
	}()
	recv(t, holds, "stall")
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "idempotent")
}

func TestRuleValidate(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		err  string
	}{
		{Rule{Action: Stall}, ""},
		{Rule{Action: Gone, Watch: OnlyWatch}, ""},
		{Rule{Action: Respond, Status: 503, RetryAfter: 1}, ""},
		{Rule{Action: Delay, Delay: time.Second}, ""},
		{Rule{Name: "z"}, `faultproxy: rule "z": Action Action(0), want Stall, Delay, Respond or Gone`},
		{Rule{Name: "d", Action: Delay}, `faultproxy: rule "d": Delay 0s, want > 0`},
		{Rule{Name: "r", Action: Respond, Status: 200}, `faultproxy: rule "r": Status 200, want 400-599`},
		{Rule{Name: "r", Action: Respond, Status: 429, RetryAfter: -1}, `faultproxy: rule "r": RetryAfter -1, want >= 0`},
		{Rule{Name: "g", Action: Gone, Watch: NoWatch}, `faultproxy: rule "g": a Gone rule with Watch NoWatch matches nothing`},
		{Rule{Name: "t", Action: Stall, Times: -1}, `faultproxy: rule "t": Times -1, want >= 0`},
	} {
		err := tc.rule.validate()
		if tc.err == "" {
			assert.NoError(t, err, "%+v", tc.rule)
		} else {
			assert.EqualError(t, err, tc.err)
		}
	}
}

func TestNewRejects(t *testing.T) {
	u := newUpstream(t)
	for _, tc := range []struct {
		url string
		ca  []byte
		err string
	}{
		{"https://10.0.0.1:6443", u.caPEM(), `faultproxy: upstream "https://10.0.0.1:6443": host "10.0.0.1" is not loopback`},
		{"http://127.0.0.1:6443", u.caPEM(), `faultproxy: upstream "http://127.0.0.1:6443": scheme "http", want https`},
		{u.srv.URL, []byte("junk"), "faultproxy: upstreamCA: no PEM certificate"},
	} {
		_, err := New(tc.url, tc.ca, Options{})
		assert.EqualError(t, err, tc.err)
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Target
	}{
		{"/api/v1/nodes", Target{API: true, Version: "v1", Resource: "nodes"}},
		{"/api/v1/nodes/n1/status", Target{API: true, Version: "v1", Resource: "nodes", Name: "n1", Subresource: "status"}},
		{"/api/v1/namespaces/ns/pods/p/status", Target{API: true, Version: "v1", Namespace: "ns", Resource: "pods", Name: "p", Subresource: "status"}},
		{"/api/v1/namespaces/ns", Target{API: true, Version: "v1", Resource: "namespaces", Name: "ns"}},
		{"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", Target{API: true, Group: "coordination.k8s.io", Version: "v1", Namespace: "kube-node-lease", Resource: "leases", Name: "n1"}},
		{"/api/v1/watch/namespaces/ns/pods", Target{API: true, Version: "v1", Namespace: "ns", Resource: "pods", Watch: true}},
		{"/apis/apps/v1", Target{API: true, Group: "apps", Version: "v1"}},
		{"/healthz", Target{}},
		{"/apis", Target{}},
		{"", Target{}},
	} {
		assert.Equal(t, tc.want, ParsePath(tc.path), "ParsePath(%q)", tc.path)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/api/v1/namespaces/a/pods/b/status", "/apis/g/v/watch/x", "//", "/api/v1/namespaces"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		got := ParsePath(path)
		if !got.API && got != (Target{}) {
			t.Fatalf("ParsePath(%q) = %+v: fields set on a non-API path", path, got)
		}
		for _, s := range []string{got.Group, got.Version, got.Namespace, got.Resource, got.Name, got.Subresource} {
			if strings.Contains(s, "/") || !strings.Contains(path, s) {
				t.Fatalf("ParsePath(%q) = %+v: segment %q not from the path", path, got, s)
			}
		}
	})
}

func TestRequestContextEndsWithClient(t *testing.T) {
	p, _, c := start(t, Options{})
	holds := held(p)
	_, err := p.Add(Rule{Name: "hang", Action: Stall, Resource: "pods"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+podGet, nil)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	recv(t, holds, "stall")
	cancel()
	require.Error(t, <-errc)
	assert.Equal(t, errClientGone.Error(), waitLog(t, p, 1)[0].Err)
}
