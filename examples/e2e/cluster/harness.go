package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Shared is one Cluster for a whole test binary (start ≈3 s, stop ≈1–2 s, so
// never one per test). Declare it as a package variable, call [Shared.Main]
// from TestMain and [Shared.Cluster] in each test:
//
//	var env cluster.Shared
//	func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
//
// The cluster starts at the first [Shared.Cluster] call (so `go test -run
// NoMatch` and `-list` start nothing) and stops after the last test. When
// the binaries are missing every test skips with a hint on how to build
// them, or fails when $LIFECYCLE_E2E_REQUIRED=1. When a test failed, the log
// tails are printed and the work directory is kept.
//
// Tests share the cluster: give cluster-scoped objects distinct names
// ([UniqueName]) and put namespaced ones in a namespace of their own
// ([Cluster.Namespace]). A test that stops the apiserver must not run in
// parallel with others; if it fails before restarting it, the next
// [Shared.Cluster] call starts the apiserver again.
//
// Shared is safe for concurrent use.
type Shared struct {
	// Options for Start; Logf defaults to writing "e2e: ..." lines to stderr.
	Options Options

	once    sync.Once
	main    bool
	c       *Cluster
	err     error // binaries missing or start failed
	missing bool
	mu      sync.Mutex // serialises the apiserver liveness check
}

// Main runs the tests and then stops the cluster if one was started. It
// returns the exit code for os.Exit.
func (s *Shared) Main(m *testing.M) int {
	s.main = true
	code := m.Run()
	if s.c != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "e2e: tests failed; server logs:\n%s", s.c.LogTails(40))
			s.c.opts.KeepWorkDir = true
		}
		t0 := time.Now()
		if err := s.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		s.c.logf("cluster stopped in %.2fs", time.Since(t0).Seconds())
	}
	return code
}

// Cluster returns the shared cluster, starting it on first use. It skips the
// test when the binaries are missing (fails with $LIFECYCLE_E2E_REQUIRED=1)
// and fails it when the cluster could not start. If an earlier test left
// the apiserver stopped, it is started again.
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	if !s.main {
		t.Fatal("cluster.Shared: call Main from TestMain first")
	}
	s.once.Do(s.start)
	if s.err != nil {
		if s.missing && !Required() {
			t.Skipf("e2e: %v", s.err)
		}
		t.Fatalf("e2e: %v", s.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.c.APIServerRunning() {
		t.Logf("e2e: kube-apiserver was left stopped by an earlier test; starting it")
		if err := s.c.StartAPIServer(context.Background()); err != nil && !errors.Is(err, ErrAPIServerRunning) {
			t.Fatalf("e2e: restart kube-apiserver: %v", err)
		}
	}
	return s.c
}

func (s *Shared) start() {
	opts := s.Options
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		}
	}
	if opts.Binaries.KubeAPIServer == "" || opts.Binaries.Etcd == "" {
		b, err := FindBinaries()
		if err != nil {
			s.err, s.missing = err, true
			return
		}
		opts.Binaries = b
	}
	t0 := time.Now()
	c, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		s.err = fmt.Errorf("shared cluster did not start (details and log tails on stderr): %.300s", err.Error())
		return
	}
	c.logf("cluster up in %.2fs; KUBECONFIG=%s", time.Since(t0).Seconds(), c.Kubeconfig())
	s.c = c
}

// Clientset returns a new clientset for the admin config, failing t on error.
func (c *Cluster) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatalf("e2e: clientset: %v", err)
	}
	return cs
}

// Namespace creates a namespace named after the test (plus a random
// suffix) and returns its name. It is not deleted afterwards: without a
// controller-manager a deleted namespace stays Terminating forever, and the
// whole cluster is thrown away at the end of the run.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	name := UniqueName(t, "")
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"lifecycle-e2e/test": label(t.Name())}}}
	if _, err := c.Clientset(t).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("e2e: create namespace %s: %v", name, err)
	}
	return name
}

// UniqueName returns a DNS-1123 label made of prefix (or, when prefix is
// empty, the test's name), lowercased and shortened, and 5 random
// characters: unique across tests sharing a cluster.
func UniqueName(t testing.TB, prefix string) string {
	if prefix == "" {
		prefix = t.Name()
	}
	base := label(prefix)
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	if base == "" {
		base = "e2e"
	}
	return base + "-" + randSuffix(5)
}

// label lowercases s and replaces every character outside [a-z0-9-] by '-',
// trimming dashes at both ends and cutting to 63 characters.
func label(s string) string {
	b := []byte(strings.ToLower(s))
	for i, ch := range b {
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}

func randSuffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// Eventually polls cond every 100 ms until it returns true with no error,
// failing t with what and the last error (or "condition not met") after
// timeout. cond's context ends at the timeout. cond runs on the calling
// goroutine, so a helper inside it may call t.Fatal: testify's
// EventuallyWithT runs its condition on another goroutine, where a t.Fatal
// ends only that goroutine and the wait then reports success.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if ok && err == nil {
			return
		}
		if err == nil {
			err = errors.New("condition not met")
		}
		select {
		case <-ctx.Done():
			t.Fatalf("e2e: %s: not within %v: %v", what, timeout, err)
		case <-tick.C:
		}
	}
}
