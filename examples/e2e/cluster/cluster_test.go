package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// The Go constants key the cache directory and must name what testbin builds.
func TestVersionsMatchTestbinGoMod(t *testing.T) {
	b, err := os.ReadFile("../testbin/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for mod, want := range map[string]string{
		"k8s.io/kubernetes":         KubernetesVersion,
		"go.etcd.io/etcd/server/v3": EtcdVersion,
	} {
		re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(mod) + `\s+(v\S+)`)
		m := re.FindSubmatch(b)
		if m == nil {
			t.Errorf("testbin/go.mod does not require %s", mod)
			continue
		}
		if got := string(m[1]); got != want {
			t.Errorf("testbin/go.mod: %s %s, want %s (update the constants and hack/build.sh's cache key together)", mod, got, want)
		}
	}
}

func TestDefaultBinDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	got, err := DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := "/cache/lifecycle-e2e/k8s-v1.37.2-etcd-v3.7.0"; got != want {
		t.Errorf("DefaultBinDir() = %q, want %q", got, want)
	}
}

func TestFindBinaries(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvBinDir, dir)

	_, err := FindBinaries()
	if !errors.Is(err, ErrBinariesNotFound) {
		t.Fatalf("FindBinaries() on empty dir = %v, want ErrBinariesNotFound", err)
	}
	if !strings.Contains(err.Error(), "examples/e2e/hack/build.sh") {
		t.Errorf("FindBinaries() error %q does not say how to build", err)
	}

	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("kube-apiserver", 0o755)
	write("etcd", 0o644) // not executable
	if _, err := FindBinaries(); !errors.Is(err, ErrBinariesNotFound) {
		t.Fatalf("FindBinaries() with non-executable etcd = %v, want ErrBinariesNotFound", err)
	}
	write("etcd", 0o755)
	if err := os.Chmod(filepath.Join(dir, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := FindBinaries()
	if err != nil {
		t.Fatalf("FindBinaries() = %v, want both found", err)
	}
	if b.Dir != dir || b.Etcd != filepath.Join(dir, "etcd") || b.KubeAPIServer != filepath.Join(dir, "kube-apiserver") {
		t.Errorf("FindBinaries() = %+v", b)
	}
}

func TestRequired(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "true": true, "no": false} {
		t.Setenv(EnvRequired, v)
		if got := Required(); got != want {
			t.Errorf("Required() with %s=%q = %v, want %v", EnvRequired, v, got, want)
		}
	}
}

func TestChildEnvDropsEtcdVariables(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "ETCD_DATA_DIR=/x", "MY_ETCD_X=1", "ETCD_EXTRA=1", "HOME=/root"})
	want := []string{"PATH=/bin", "MY_ETCD_X=1", "HOME=/root"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("childEnv() = %q, want %q", got, want)
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ps, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p <= 0 || p > 65535 || seen[p] {
			t.Fatalf("freePorts(3) = %v, want 3 distinct ports", ps)
		}
		seen[p] = true
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 5, "a\nb\nc\n"},
		{"a\nb\nc\n\n", 1, "c\n"},
		{"one", 1, "one\n"},
		{"a\nb", 0, ""},
	} {
		if got := lastLines([]byte(c.in), c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestTailFileAndAddrInUse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.log")
	var b strings.Builder
	for range 20000 { // > 256 KiB, so only the end is read
		b.WriteString("some harmless log line\n")
	}
	b.WriteString("listen tcp 127.0.0.1:4001: bind: address already in use\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tailFile(p, 1); !strings.Contains(got, "address already in use") {
		t.Errorf("tailFile(p, 1) = %q", got)
	}
	if !logHasAddrInUse(p) {
		t.Error("logHasAddrInUse() = false, want true")
	}
	if got := tailFile(filepath.Join(t.TempDir(), "missing"), 3); !strings.Contains(got, "cannot read") {
		t.Errorf("tailFile(missing) = %q", got)
	}
}

func TestServiceAccountKeyAndKubeconfig(t *testing.T) {
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeServiceAccountKey(key, pub); err != nil {
		t.Fatal(err)
	}
	kb, _ := os.ReadFile(key)
	blk, _ := pem.Decode(kb)
	if blk == nil || blk.Type != "RSA PRIVATE KEY" {
		t.Fatalf("sa.key is not an RSA PEM key")
	}
	priv, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := os.ReadFile(pub)
	blk, _ = pem.Decode(pb)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		t.Fatalf("sa.pub is not a PEM public key")
	}
	pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.PublicKey.Equal(pk) {
		t.Error("sa.pub does not match sa.key")
	}

	tok, err := newToken()
	if err != nil || len(tok) != 48 {
		t.Fatalf("newToken() = %q, %v", tok, err)
	}
	tf := filepath.Join(dir, "tokens.csv")
	if err := writeTokenFile(tf, tok, nil, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tf); string(b) != tok+",admin,admin-uid,system:masters\n" {
		t.Errorf("token file = %q", b)
	}

	kc := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kc, "https://127.0.0.1:1234", "/w/certs/apiserver.crt", tok); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster].Server != "https://127.0.0.1:1234" ||
		cfg.Clusters[ctx.Cluster].CertificateAuthority != "/w/certs/apiserver.crt" || cfg.AuthInfos[ctx.AuthInfo].Token != tok {
		t.Errorf("kubeconfig round trip lost data: %+v", cfg)
	}
}

func TestArgsFollowRecipe(t *testing.T) {
	c := &Cluster{workDir: "/w", etcdClientPort: 1, etcdPeerPort: 2, apiPort: 3,
		opts: Options{ServiceClusterIPRange: "10.0.0.0/24", ExtraAPIServerFlags: []string{"--v=2"}}}
	kas := strings.Join(c.apiServerArgs(), " ")
	for _, want := range []string{
		"--etcd-servers=http://127.0.0.1:1", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=3", "--cert-dir=/w/certs", "--service-account-issuer=https://127.0.0.1:3",
		"--service-account-key-file=/w/sa.pub", "--service-account-signing-key-file=/w/sa.key",
		"--token-auth-file=/w/tokens.csv", "--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount", "--allow-privileged=true", "--endpoint-reconciler-type=none",
		"--shutdown-send-retry-after=true", "--v=2",
	} {
		if !strings.Contains(kas, want) {
			t.Errorf("apiserver args lack %s: %s", want, kas)
		}
	}
	etcd := strings.Join(c.etcdArgs(), " ")
	for _, want := range []string{
		"--data-dir=/w/etcd-data", "--listen-client-urls=http://127.0.0.1:1", "--listen-peer-urls=http://127.0.0.1:2",
		"--initial-cluster=lifecycle-e2e=http://127.0.0.1:2", "--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
	} {
		if !strings.Contains(etcd, want) {
			t.Errorf("etcd args lack %s: %s", want, etcd)
		}
	}
}

func TestUniqueNameIsDNSLabel(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	seen := map[string]bool{}
	for _, prefix := range []string{"", "Node_A", "--x--", strings.Repeat("long", 30), "ünïcode"} {
		n := UniqueName(t, prefix)
		if len(n) > 63 || !re.MatchString(n) {
			t.Errorf("UniqueName(%q) = %q, not a DNS-1123 label", prefix, n)
		}
		if seen[n] {
			t.Errorf("UniqueName(%q) = %q repeated", prefix, n)
		}
		seen[n] = true
	}
}

// TestTokenFile: the groups are one quoted CSV field; a user without
// groups has none (an empty field would be a group named "").
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	users := []TokenUser{{Name: "system:node:n1", Groups: []string{"system:nodes", "extra"}}, {Name: "bare"}}
	if err := writeTokenFile(path, "t0", users, []string{"t1", "t2"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "t0,admin,admin-uid,system:masters\nt1,system:node:n1,system:node:n1-uid,\"system:nodes,extra\"\nt2,bare,bare-uid\n"
	if string(b) != want {
		t.Errorf("token file:\n%s\nwant:\n%s", b, want)
	}
}
