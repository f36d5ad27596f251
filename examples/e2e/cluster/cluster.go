package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configures [Start]. The zero value is ready to use.
type Options struct {
	// Binaries to run. Zero: [FindBinaries].
	Binaries Binaries
	// WorkDir holds etcd data, certificates, keys, the kubeconfig and both
	// logs. Zero: a new temporary directory that Stop removes (unless
	// KeepWorkDir or $LIFECYCLE_E2E_KEEP is set). A given WorkDir is never removed.
	WorkDir string
	// KeepWorkDir keeps a temporary WorkDir after Stop.
	KeepWorkDir bool
	// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range,
	// which becomes the default ServiceCIDR "kubernetes". Zero: 10.0.0.0/24.
	ServiceClusterIPRange string
	// ExtraEtcdFlags and ExtraAPIServerFlags are appended to the recipe's flags.
	ExtraEtcdFlags, ExtraAPIServerFlags []string
	// ReadyTimeout bounds each wait for etcd /health and apiserver /readyz.
	// Zero: 90 s.
	ReadyTimeout time.Duration
	// StopTimeout is how long a server gets after SIGTERM before SIGKILL.
	// Zero: 15 s.
	StopTimeout time.Duration
	// Users are users of the static token file besides admin, each with a
	// token of its own ([Cluster.UserToken]): for example a node's kubelet
	// (system:node:NAME in system:nodes) or kube-controller-manager's own
	// identity. Names must be unique and contain no comma or quote.
	Users []TokenUser
	// Logf receives progress lines (ports, PIDs, timings). Nil: silent.
	Logf func(format string, args ...any)
}

// TokenUser is a user of the apiserver's static token file.
type TokenUser struct {
	Name   string
	Groups []string
}

// ErrAPIServerRunning is returned by [Cluster.StartAPIServer] when the
// apiserver is already running.
var ErrAPIServerRunning = errors.New("cluster: kube-apiserver is already running")

// ErrStopped is returned by methods called after [Cluster.Stop].
var ErrStopped = errors.New("cluster: stopped")

// Cluster is a running etcd plus kube-apiserver on 127.0.0.1. It is safe for
// concurrent use; the methods that start or stop a server block each other.
type Cluster struct {
	opts       Options
	bins       Binaries
	workDir    string
	ownWorkDir bool

	etcdClientPort, etcdPeerPort, apiPort int
	token                                 string
	userTokens                            map[string]string
	caData                                []byte
	cfg                                   *rest.Config

	mu      sync.Mutex
	etcd    *process
	api     *process
	stopped bool
}

const (
	defaultServiceRange = "10.0.0.0/24"
	defaultReadyTimeout = 90 * time.Second
	defaultStopTimeout  = 15 * time.Second
	portAttempts        = 3
)

// Start runs etcd and kube-apiserver and returns when /readyz answers OK and
// the system namespaces exist. On error nothing is left running; the error
// carries the tail of the failing server's log, and the work directory is
// kept for inspection.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.ServiceClusterIPRange == "" {
		opts.ServiceClusterIPRange = defaultServiceRange
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = defaultReadyTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = defaultStopTimeout
	}
	c := &Cluster{opts: opts, bins: opts.Binaries}
	if c.bins.KubeAPIServer == "" || c.bins.Etcd == "" {
		b, err := FindBinaries()
		if err != nil {
			return nil, err
		}
		c.bins = b
	}
	if err := c.prepareWorkDir(); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.mu.Lock()
		c.stopLocked()
		c.mu.Unlock()
		return nil, fmt.Errorf("%w (work dir kept: %s)", err, c.workDir)
	}
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

func (c *Cluster) prepareWorkDir() error {
	c.workDir = c.opts.WorkDir
	if c.workDir == "" {
		d, err := os.MkdirTemp("", "lifecycle-e2e-")
		if err != nil {
			return fmt.Errorf("cluster: work dir: %w", err)
		}
		c.workDir, c.ownWorkDir = d, true
	}
	for _, d := range []string{c.workDir, c.path("certs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cluster: work dir: %w", err)
		}
	}
	tok, err := newToken()
	if err != nil {
		return err
	}
	c.token = tok
	c.userTokens = map[string]string{}
	tokens := make([]string, len(c.opts.Users))
	for i, u := range c.opts.Users {
		if u.Name == "" || u.Name == "admin" || strings.ContainsAny(u.Name+strings.Join(u.Groups, ""), `,"`) || c.userTokens[u.Name] != "" {
			return fmt.Errorf("cluster: Options.Users: bad or repeated user %q", u.Name)
		}
		if tokens[i], err = newToken(); err != nil {
			return err
		}
		c.userTokens[u.Name] = tokens[i]
	}
	if err := writeTokenFile(c.path("tokens.csv"), tok, c.opts.Users, tokens); err != nil {
		return err
	}
	return writeServiceAccountKey(c.path("sa.key"), c.path("sa.pub"))
}

func (c *Cluster) path(name string) string { return filepath.Join(c.workDir, name) }

func (c *Cluster) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startEtcdLocked(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		c.apiPort = ports[0]
		err = c.startAPIServerLocked(ctx)
		if err == nil {
			break
		}
		if attempt < portAttempts && logHasAddrInUse(c.APIServerLog()) {
			c.logf("kube-apiserver port %d taken, retrying with another", c.apiPort)
			continue
		}
		return err
	}
	ca, err := os.ReadFile(c.path("certs/apiserver.crt"))
	if err != nil {
		return fmt.Errorf("cluster: apiserver certificate: %w", err)
	}
	c.caData = ca
	c.cfg = &rest.Config{
		Host:            c.Server(),
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             200,
		Burst:           400,
		UserAgent:       "lifecycle-e2e",
	}
	if err := writeKubeconfig(c.Kubeconfig(), c.Server(), c.path("certs/apiserver.crt"), c.token); err != nil {
		return err
	}
	return c.waitSystemNamespaces(ctx)
}

func (c *Cluster) startEtcdLocked(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		c.etcdClientPort, c.etcdPeerPort = ports[0], ports[1]
		if err := os.MkdirAll(c.path("etcd-data"), 0o700); err != nil {
			return fmt.Errorf("cluster: etcd data dir: %w", err)
		}
		t0 := time.Now()
		p, err := startProcess("etcd", c.bins.Etcd, c.etcdArgs(), c.EtcdLog())
		if err != nil {
			return err
		}
		c.etcd = p
		err = c.waitReady(ctx, p, c.etcdHealthy)
		if err == nil {
			c.logf("etcd ready in %.2fs (pid %d, %s)", time.Since(t0).Seconds(), p.pid(), c.EtcdEndpoint())
			return nil
		}
		p.kill()
		c.etcd = nil
		if attempt < portAttempts && logHasAddrInUse(c.EtcdLog()) {
			c.logf("etcd ports %d/%d taken, retrying with others", c.etcdClientPort, c.etcdPeerPort)
			if err := os.RemoveAll(c.path("etcd-data")); err != nil {
				return fmt.Errorf("cluster: etcd data dir: %w", err)
			}
			continue
		}
		return err
	}
}

func (c *Cluster) etcdArgs() []string {
	client := "http://127.0.0.1:" + strconv.Itoa(c.etcdClientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.etcdPeerPort)
	args := []string{
		"--name=lifecycle-e2e",
		"--data-dir=" + c.path("etcd-data"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=lifecycle-e2e=" + peer,
		"--quota-backend-bytes=2147483648",
		"--log-level=warn",
		"--unsafe-no-fsync",
	}
	return append(args, c.opts.ExtraEtcdFlags...)
}

func (c *Cluster) apiServerArgs() []string {
	port := strconv.Itoa(c.apiPort)
	args := []string{
		"--etcd-servers=" + c.EtcdEndpoint(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + c.path("certs"),
		"--service-account-issuer=https://127.0.0.1:" + port,
		"--service-account-key-file=" + c.path("sa.pub"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--token-auth-file=" + c.path("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + c.opts.ServiceClusterIPRange,
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		// Not in the recipe: on SIGTERM, drain ordinary requests and then give
		// open watches 2 s, instead of waiting up to --request-timeout (60 s)
		// for them. Informers are always watching, so without this a graceful
		// stop takes a minute.
		"--shutdown-send-retry-after=true",
	}
	return append(args, c.opts.ExtraAPIServerFlags...)
}

// startAPIServerLocked starts kube-apiserver on c.apiPort and waits for /readyz.
func (c *Cluster) startAPIServerLocked(ctx context.Context) error {
	t0 := time.Now()
	p, err := startProcess("kube-apiserver", c.bins.KubeAPIServer, c.apiServerArgs(), c.APIServerLog())
	if err != nil {
		return err
	}
	c.api = p
	if err := c.waitReady(ctx, p, c.apiServerReady); err != nil {
		p.kill()
		c.api = nil
		return err
	}
	c.logf("kube-apiserver ready in %.2fs (pid %d, %s)", time.Since(t0).Seconds(), p.pid(), c.Server())
	return nil
}

// waitReady polls probe every 100 ms until it succeeds, the process exits,
// ctx ends or ReadyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, p *process, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("cluster: %w; last log lines of %s:\n%s", p.exitError(), p.logPath, tailFile(p.logPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s (pid %d) not ready: %w (last probe: %v); last log lines of %s:\n%s",
				p.name, p.pid(), ctx.Err(), last, p.logPath, tailFile(p.logPath, 30))
		case <-tick.C:
		}
	}
}

var probeClient = &http.Client{
	Timeout: 2 * time.Second,
	Transport: &http.Transport{
		// Only for the readiness probe on loopback: the serving certificate
		// may not exist yet when probing starts. Real clients use CAData.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true,
	},
}

func probe(ctx context.Context, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	return probe(ctx, c.EtcdEndpoint()+"/health", "")
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	return probe(ctx, c.Server()+"/readyz", c.token)
}

// waitSystemNamespaces waits until default, kube-system and kube-node-lease
// exist (the apiserver creates them shortly after it reports ready).
func (c *Cluster) waitSystemNamespaces(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("cluster: clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, "kube-node-lease"} {
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: namespace %s not created: %v", ns, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Config returns a copy of the admin *rest.Config (bearer token, CA data,
// QPS 200, burst 400). It stays valid across apiserver restarts.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// Server returns the apiserver URL, https://127.0.0.1:PORT.
func (c *Cluster) Server() string { return "https://127.0.0.1:" + strconv.Itoa(c.apiPort) }

// Token returns the admin bearer token (user admin, group system:masters).
func (c *Cluster) Token() string { return c.token }

// UserToken returns the bearer token of the user name of Options.Users
// ("" when there is none).
func (c *Cluster) UserToken(name string) string { return c.userTokens[name] }

// WriteKubeconfigFor writes a kubeconfig like [Cluster.Kubeconfig]'s that
// authenticates as the user name of Options.Users, to path.
func (c *Cluster) WriteKubeconfigFor(path, name string) error {
	tok := c.UserToken(name)
	if tok == "" {
		return fmt.Errorf("cluster: no user %q in Options.Users", name)
	}
	return writeKubeconfig(path, c.Server(), c.path("certs/apiserver.crt"), tok)
}

// CAData returns a copy of the PEM the apiserver serves (certificate plus its CA).
func (c *Cluster) CAData() []byte { return append([]byte(nil), c.caData...) }

// Kubeconfig returns the path of the written kubeconfig (for kubectl or
// clientcmd; KUBECONFIG=$(that path) kubectl get nodes).
func (c *Cluster) Kubeconfig() string { return c.path("kubeconfig") }

// EtcdEndpoint returns etcd's client URL, http://127.0.0.1:PORT.
func (c *Cluster) EtcdEndpoint() string { return "http://127.0.0.1:" + strconv.Itoa(c.etcdClientPort) }

// WorkDir returns the directory holding data, keys, kubeconfig and logs.
func (c *Cluster) WorkDir() string { return c.workDir }

// EtcdLog and APIServerLog return the paths of the servers' logs. The
// apiserver log is appended to across restarts, each start after a marker line.
func (c *Cluster) EtcdLog() string { return c.path("etcd.log") }

// APIServerLog: see [Cluster.EtcdLog].
func (c *Cluster) APIServerLog() string { return c.path("kube-apiserver.log") }

// LogTails returns the last n lines of both logs, apiserver first, with headers.
func (c *Cluster) LogTails(n int) string {
	return fmt.Sprintf("---- last %d lines of %s ----\n%s---- last %d lines of %s ----\n%s",
		n, c.APIServerLog(), tailFile(c.APIServerLog(), n), n, c.EtcdLog(), tailFile(c.EtcdLog(), n))
}

// APIServerPID returns the running apiserver's PID, or 0 when it is not running.
func (c *Cluster) APIServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api == nil || c.api.exited() {
		return 0
	}
	return c.api.pid()
}

// EtcdPID returns the running etcd's PID, or 0 when it is not running.
func (c *Cluster) EtcdPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd == nil || c.etcd.exited() {
		return 0
	}
	return c.etcd.pid()
}

// APIServerRunning reports whether the apiserver process is alive.
func (c *Cluster) APIServerRunning() bool { return c.APIServerPID() != 0 }

// StopAPIServer stops only the apiserver (SIGTERM; SIGKILL after
// StopTimeout) and leaves etcd running. It is a no-op when the apiserver is
// not running. The apiserver drains requests for about 3 s before it exits.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	c.stopAPIServerLocked(false)
	return nil
}

// KillAPIServer kills only the apiserver with SIGKILL (a crash: no drain,
// open watches are cut) and leaves etcd running. It is a no-op when the
// apiserver is not running.
func (c *Cluster) KillAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	c.stopAPIServerLocked(true)
	return nil
}

func (c *Cluster) stopAPIServerLocked(kill bool) {
	if c.api == nil {
		return
	}
	t0 := time.Now()
	pid := c.api.pid()
	switch {
	case c.api.exited():
	case kill:
		c.api.kill()
		c.logf("kube-apiserver (pid %d) killed", pid)
	default:
		if c.api.stop(c.opts.StopTimeout) {
			c.logf("kube-apiserver (pid %d) ignored SIGTERM for %v; killed", pid, c.opts.StopTimeout)
		} else {
			c.logf("kube-apiserver (pid %d) stopped in %.2fs", pid, time.Since(t0).Seconds())
		}
	}
	c.api = nil
}

// StartAPIServer starts the apiserver again on the same port, certificates,
// token and etcd data, and waits for /readyz. Existing clients reconnect by
// themselves. It fails with [ErrAPIServerRunning] when the apiserver runs,
// and with the log tail when it cannot become ready (for example if another
// process took the port meanwhile).
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	if c.api != nil && !c.api.exited() {
		return ErrAPIServerRunning
	}
	c.api = nil
	return c.startAPIServerLocked(ctx)
}

// RestartAPIServer is [Cluster.StopAPIServer] followed by [Cluster.StartAPIServer].
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// Stop stops the apiserver, then etcd (each: SIGTERM, SIGKILL after
// StopTimeout), and removes a temporary work directory unless it is kept.
// It is idempotent.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopLocked()
	if c.ownWorkDir && !c.opts.KeepWorkDir && !envTrue(EnvKeep) {
		if err := os.RemoveAll(c.workDir); err != nil {
			return fmt.Errorf("cluster: remove work dir: %w", err)
		}
	} else {
		c.logf("work dir kept: %s", c.workDir)
	}
	return nil
}

func (c *Cluster) stopLocked() {
	c.stopped = true
	c.stopAPIServerLocked(false)
	if c.etcd != nil {
		t0 := time.Now()
		pid := c.etcd.pid()
		if c.etcd.stop(c.opts.StopTimeout) {
			c.logf("etcd (pid %d) ignored SIGTERM; killed", pid)
		} else {
			c.logf("etcd (pid %d) stopped in %.2fs", pid, time.Since(t0).Seconds())
		}
		c.etcd = nil
	}
}
