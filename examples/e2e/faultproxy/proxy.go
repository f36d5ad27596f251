package faultproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// UserAgentSuffix, when not empty, is appended (after a space) to the
	// User-Agent of every forwarded request.
	UserAgentSuffix string
	// MaxLog bounds the request log (default 100,000 entries); further
	// requests are counted by [Proxy.Dropped].
	MaxLog int
	// MaxHold bounds every Stall and Delay (default 5 minutes).
	MaxHold time.Duration
}

// Entry is one request in the log, recorded when it ends.
type Entry struct {
	Start, End time.Time
	Method     string
	// Path and Query are the request's URL path and raw query.
	Path, Query string
	Target
	UserAgent string
	// Rule and Action: the rule applied (empty and 0 when forwarded as is).
	Rule   string
	Action Action
	// Status is the status sent to the client (0: none, the request ended
	// before an answer), and RetryAfter the seconds of its Retry-After
	// header (0: none).
	Status, RetryAfter int
	// Err is why the request ended early ("" when it completed).
	Err string
	// Held is how long a Stall held the request or its stream.
	Held time.Duration
}

// Proxy is a running fault proxy. It is safe for concurrent use.
type Proxy struct {
	opts     Options
	upstream *url.URL
	tr       *http.Transport
	srv      *http.Server
	addr     string
	caPEM    []byte
	closed   chan struct{}
	stopOnce sync.Once
	handlers sync.WaitGroup

	mu       sync.Mutex
	rules    []*activeRule
	nextID   int
	cut      bool
	refused  int
	conns    map[net.Conn]struct{}
	changed  chan struct{} // closed and replaced when the rules or the cut change
	inflight map[*inflight]struct{}
	log      []Entry
	dropped  int

	// heldHook, when set (by the package's tests), is called when a
	// request or stream starts waiting in a Stall.
	heldHook func(*request)
}

type activeRule struct {
	id   int
	rule Rule
	used int
}

type inflight struct {
	req    *request
	cancel context.CancelFunc
}

// New starts a proxy on a free port of 127.0.0.1 in front of upstream (an
// https URL on loopback) whose certificate upstreamCA (PEM) verifies.
func New(upstream string, upstreamCA []byte, opts Options) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", upstream, err)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("faultproxy: upstream %q: scheme %q, want https", upstream, u.Scheme)
	}
	if !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("faultproxy: upstream %q: host %q is not loopback", upstream, u.Hostname())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(upstreamCA) {
		return nil, errors.New("faultproxy: upstreamCA: no PEM certificate")
	}
	if opts.MaxLog == 0 {
		opts.MaxLog = 100_000
	}
	if opts.MaxHold == 0 {
		opts.MaxHold = 5 * time.Minute
	}
	if opts.MaxLog < 0 || opts.MaxHold < 0 {
		return nil, fmt.Errorf("faultproxy: Options.MaxLog %d and MaxHold %v: want >= 0", opts.MaxLog, opts.MaxHold)
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		opts:     opts,
		upstream: &url.URL{Scheme: u.Scheme, Host: u.Host},
		tr: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout: 5 * time.Second,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		},
		addr:     ln.Addr().String(),
		caPEM:    caPEM,
		closed:   make(chan struct{}),
		conns:    map[net.Conn]struct{}{},
		changed:  make(chan struct{}),
		inflight: map[*inflight]struct{}{},
	}
	p.srv = &http.Server{
		Handler:           p,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         p.connState,
		ErrorLog:          nil,
	}
	go func() { _ = p.srv.ServeTLS(&cutListener{Listener: ln, p: p}, "", "") }()
	return p, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// selfSigned makes the proxy's serving certificate for 127.0.0.1, valid for
// a day, and returns it with its PEM (which clients trust as their CA).
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("faultproxy: key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "faultproxy"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("faultproxy: certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// URL returns the proxy's address, https://127.0.0.1:PORT.
func (p *Proxy) URL() string { return "https://" + p.addr }

// CAData returns the PEM certificate that verifies the proxy.
func (p *Proxy) CAData() []byte { return append([]byte(nil), p.caPEM...) }

// RestConfig returns a copy of base that goes through the proxy: its host
// and CA are the proxy's, its credentials and everything else base's.
func (p *Proxy) RestConfig(base *rest.Config) *rest.Config {
	c := rest.CopyConfig(base)
	c.Host = p.URL()
	c.TLSClientConfig = rest.TLSClientConfig{CAData: p.CAData()}
	return c
}

// WriteKubeconfig writes a kubeconfig for a process to reach the apiserver
// through the proxy with the bearer token.
func (p *Proxy) WriteKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["faultproxy"] = &clientcmdapi.Cluster{Server: p.URL(), CertificateAuthorityData: p.CAData()}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["faultproxy"] = &clientcmdapi.Context{Cluster: "faultproxy", AuthInfo: "user"}
	cfg.CurrentContext = "faultproxy"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("faultproxy: kubeconfig: %w", err)
	}
	return nil
}

// Add puts r in place (after the rules already there: the first rule that
// matches a request applies) and returns the function that removes it
// (idempotent). Removing a Stall rule releases what it holds.
func (p *Proxy) Add(r Rule) (remove func(), err error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	r.Methods = append([]string(nil), r.Methods...)
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.rules = append(p.rules, &activeRule{id: id, rule: r})
	p.changedLocked()
	p.mu.Unlock()
	return func() { p.remove(id) }, nil
}

func (p *Proxy) remove(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ar := range p.rules {
		if ar.id == id {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			p.changedLocked()
			return
		}
	}
}

// Clear removes every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	p.rules = nil
	p.changedLocked()
	p.mu.Unlock()
}

func (p *Proxy) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Cut closes every client connection (ending the requests on them) and
// refuses new ones until [Proxy.Restore]: a new connection is closed as
// soon as it is accepted, so the client sees EOF or a reset.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	for f := range p.inflight {
		f.cancel()
	}
	p.changedLocked()
	p.mu.Unlock()
}

// Restore ends a [Proxy.Cut].
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.changedLocked()
	p.mu.Unlock()
}

// Refused returns how many connections a cut refused.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// EndWatches ends the open watches that match r's selection (r's Action
// and Times are ignored): each stream ends cleanly, so the client
// re-watches. It returns how many it ended.
func (p *Proxy) EndWatches(r Rule) int {
	r.Action = Stall
	if r.Watch == NoWatch {
		return 0
	}
	if r.Watch == AnyRequest {
		r.Watch = OnlyWatch
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for f := range p.inflight {
		if f.req.target.Watch && r.matches(f.req) {
			f.cancel()
			n++
		}
	}
	return n
}

// Log returns a copy of the request log, in the order the requests ended.
func (p *Proxy) Log() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Entry(nil), p.log...)
}

// Dropped returns how many requests the full log did not keep.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops the proxy: it closes the listener and every connection, ends
// every wait, and returns once every request is in the log (each ends as
// soon as its connection is closed). It is idempotent.
func (p *Proxy) Close() error {
	var err error
	p.stopOnce.Do(func() {
		close(p.closed)
		err = p.srv.Close()
		p.mu.Lock()
		for f := range p.inflight {
			f.cancel()
		}
		p.mu.Unlock()
		p.handlers.Wait()
		p.tr.CloseIdleConnections()
	})
	return err
}

func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		if p.cut {
			_ = c.Close()
			return
		}
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// cutListener closes the connections it accepts during a cut.
type cutListener struct {
	net.Listener
	p *Proxy
}

func (l *cutListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.p.mu.Lock()
		cut := l.p.cut
		if cut {
			l.p.refused++
		}
		l.p.mu.Unlock()
		if !cut {
			return c, nil
		}
		_ = c.Close()
	}
}

// pick returns the first rule in place that matches req, counting it
// against the rule's Times, or nil.
func (p *Proxy) pick(req *request) *activeRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ar := range p.rules {
		if ar.rule.Times > 0 && ar.used >= ar.rule.Times || !ar.rule.matches(req) {
			continue
		}
		ar.used++
		cp := *ar
		return &cp
	}
	return nil
}

// ServeHTTP applies the first matching rule and forwards the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-p.closed:
		writeStatus(w, http.StatusServiceUnavailable, 0, errClosed.Error())
		return
	default:
	}
	p.handlers.Add(1)
	defer p.handlers.Done()
	req := newRequest(r)
	e := Entry{Start: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Target: req.target, UserAgent: req.userAgent}
	defer func() {
		e.End = time.Now()
		p.record(e)
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	f := &inflight{req: req, cancel: cancel}
	p.mu.Lock()
	p.inflight[f] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, f)
		p.mu.Unlock()
	}()

	if ar := p.pick(req); ar != nil {
		e.Rule, e.Action = ar.rule.Name, ar.rule.Action
		switch ar.rule.Action {
		case Respond:
			e.Status, e.RetryAfter = ar.rule.Status, ar.rule.RetryAfter
			writeStatus(w, ar.rule.Status, ar.rule.RetryAfter, fmt.Sprintf("faultproxy: rule %q", ar.rule.Name))
			return
		case Gone:
			e.Status = http.StatusOK
			writeGone(w)
			return
		case Delay:
			if err := p.sleep(ctx, ar.rule.Delay); err != nil {
				e.Err = err.Error()
				return
			}
		case Stall:
			if err := p.hold(ctx, req, &e, func() bool { return p.present(ar.id) }); err != nil {
				e.Err = err.Error()
				return
			}
		}
	}
	p.forward(ctx, w, r, req, &e)
}

var (
	errClientGone = errors.New("faultproxy: the request ended (client gone, cut, or watch ended)")
	errClosed     = errors.New("faultproxy: closed")
	errMaxHold    = errors.New("faultproxy: MaxHold reached")
)

func (p *Proxy) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(min(d, p.opts.MaxHold))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errClientGone
	case <-p.closed:
		return errClosed
	case <-t.C:
		return nil
	}
}

// hold waits while held() is true: until it is false, the request ends,
// the proxy closes, or MaxHold passes. held is checked again whenever the
// rules change.
func (p *Proxy) hold(ctx context.Context, req *request, e *Entry, held func() bool) error {
	deadline := time.NewTimer(p.opts.MaxHold)
	defer deadline.Stop()
	start := time.Now()
	for first := true; ; first = false {
		p.mu.Lock()
		ch := p.changed
		hook := p.heldHook
		p.mu.Unlock()
		if !held() {
			if !first {
				e.Held += time.Since(start)
			}
			return nil
		}
		if first && hook != nil {
			hook(req)
		}
		var err error
		select {
		case <-ctx.Done():
			err = errClientGone
		case <-p.closed:
			err = errClosed
		case <-deadline.C:
			err = errMaxHold
		case <-ch:
		}
		if err != nil {
			e.Held += time.Since(start)
			return err
		}
	}
}

func (p *Proxy) present(id int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ar := range p.rules {
		if ar.id == id {
			return true
		}
	}
	return false
}

// streamStalled reports whether an unlimited Stall rule matches req.
func (p *Proxy) streamStalled(req *request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ar := range p.rules {
		if ar.rule.Action == Stall && ar.rule.Times == 0 && ar.rule.matches(req) {
			return true
		}
	}
	return false
}

// hopHeaders are not forwarded (RFC 9110 section 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *Proxy) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, req *request, e *Entry) {
	var body io.Reader = http.NoBody
	if r.ContentLength != 0 {
		body = r.Body
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, p.upstream.String()+r.URL.RequestURI(), body)
	if err != nil {
		e.Err = err.Error()
		e.Status = http.StatusBadGateway
		writeStatus(w, e.Status, 0, "faultproxy: "+err.Error())
		return
	}
	out.ContentLength = r.ContentLength
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if s := p.opts.UserAgentSuffix; s != "" {
		out.Header.Set("User-Agent", req.userAgent+" "+s)
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		e.Err = err.Error()
		if ctx.Err() == nil {
			e.Status = http.StatusBadGateway
			writeStatus(w, e.Status, 0, "faultproxy: upstream: "+err.Error())
		}
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	e.Status = resp.StatusCode
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = ra
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the headers now: a watch may send nothing for long
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if req.target.Watch {
				if err := p.hold(ctx, req, e, func() bool { return p.streamStalled(req) }); err != nil {
					e.Err = err.Error()
					return
				}
			}
			if _, err := w.Write(buf[:n]); err != nil {
				e.Err = err.Error()
				return
			}
			_ = rc.Flush()
		}
		if rerr != nil {
			if rerr != io.EOF {
				e.Err = rerr.Error()
			}
			return
		}
	}
}

func (p *Proxy) record(e Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.log) >= p.opts.MaxLog {
		p.dropped++
		return
	}
	p.log = append(p.log, e)
}

func statusBody(code, retryAfter int, msg string) []byte {
	s := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reasonFor(code),
		Code:     int32(code),
	}
	if retryAfter > 0 {
		s.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	b, _ := json.Marshal(&s) // a Status always marshals
	return b
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusInternalServerError, http.StatusBadGateway:
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}

func writeStatus(w http.ResponseWriter, code, retryAfter int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(statusBody(code, retryAfter, msg))
}

// writeGone answers a watch as kube-apiserver does when the requested
// resourceVersion is too old: 200, then one ERROR event with a 410 Expired
// Status.
func writeGone(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	ev := metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: statusBody(http.StatusGone, 0, "faultproxy: too old resource version")}}
	b, _ := json.Marshal(&ev)
	_, _ = w.Write(append(b, '\n'))
}
