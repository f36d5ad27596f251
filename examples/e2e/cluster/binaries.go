package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The versions built by hack/build.sh. They must match examples/e2e/testbin/go.mod
// (a test checks this); the cache directory is keyed by them.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.0"
)

// Environment variables read by this package.
const (
	// EnvBinDir names a directory holding the kube-apiserver and etcd
	// binaries. It overrides [DefaultBinDir]; hack/build.sh builds into it too.
	EnvBinDir = "LIFECYCLE_E2E_BIN"
	// EnvRequired, when "1" or "true", turns a missing binary into a test
	// failure instead of a skip. CI sets it.
	EnvRequired = "LIFECYCLE_E2E_REQUIRED"
	// EnvKeep, when "1" or "true", keeps the work directory (logs, etcd
	// data, kubeconfig) after Stop.
	EnvKeep = "LIFECYCLE_E2E_KEEP"
)

// BuildHint tells a developer how to get the binaries.
const BuildHint = "build them once with examples/e2e/hack/build.sh (8-16 min on 2 cores, cached by version), " +
	"or run everything with examples/e2e/run.sh"

// ErrBinariesNotFound is returned (wrapped) by [FindBinaries] when the
// kube-apiserver or etcd binary is missing.
var ErrBinariesNotFound = errors.New("cluster: kube-apiserver/etcd binaries not found")

// ErrControllerManagerNotFound is returned (wrapped) by
// [Binaries.RequireControllerManager] when kube-controller-manager is
// missing: the tests that need it (parity with upstream) skip or fail, the
// others still run.
var ErrControllerManagerNotFound = errors.New("cluster: kube-controller-manager binary not found")

// Binaries are the paths of the server executables.
type Binaries struct {
	Dir           string
	KubeAPIServer string
	Etcd          string
	// ControllerManager is kube-controller-manager, or "" when it is not in
	// Dir (only the parity tests need it; see [Binaries.RequireControllerManager]).
	ControllerManager string
}

// RequireControllerManager returns the kube-controller-manager path, or an
// error wrapping [ErrControllerManagerNotFound] that says how to build it.
func (b Binaries) RequireControllerManager() (string, error) {
	if b.ControllerManager == "" || !isExecutable(b.ControllerManager) {
		return "", fmt.Errorf("%w: no executable %s; %s", ErrControllerManagerNotFound,
			filepath.Join(b.Dir, "kube-controller-manager"), BuildHint)
	}
	return b.ControllerManager, nil
}

// DefaultBinDir returns the cache directory hack/build.sh writes to:
// ${XDG_CACHE_HOME:-$HOME/.cache}/lifecycle-e2e/k8s-<version>-etcd-<version>.
func DefaultBinDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cluster: no cache directory: %w", err)
	}
	return filepath.Join(base, "lifecycle-e2e", "k8s-"+KubernetesVersion+"-etcd-"+EtcdVersion), nil
}

// FindBinaries locates kube-apiserver and etcd in $LIFECYCLE_E2E_BIN, or
// else in [DefaultBinDir]. A missing binary gives an error wrapping
// [ErrBinariesNotFound] whose text says how to build them.
// kube-controller-manager is optional: ControllerManager is set only when it
// is there.
func FindBinaries() (Binaries, error) {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		d, err := DefaultBinDir()
		if err != nil {
			return Binaries{}, fmt.Errorf("%w: %v; set %s or %s", ErrBinariesNotFound, err, EnvBinDir, BuildHint)
		}
		dir = d
	}
	b := Binaries{
		Dir:           dir,
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		Etcd:          filepath.Join(dir, "etcd"),
	}
	for _, p := range []string{b.KubeAPIServer, b.Etcd} {
		if !isExecutable(p) {
			return Binaries{}, fmt.Errorf("%w: no executable %s; %s", ErrBinariesNotFound, p, BuildHint)
		}
	}
	if kcm := filepath.Join(dir, "kube-controller-manager"); isExecutable(kcm) {
		b.ControllerManager = kcm
	}
	return b, nil
}

// Required reports whether $LIFECYCLE_E2E_REQUIRED asks for missing binaries
// to fail the tests instead of skipping them.
func Required() bool { return envTrue(EnvRequired) }

func envTrue(name string) bool {
	switch os.Getenv(name) {
	case "1", "true", "TRUE", "True", "yes":
		return true
	}
	return false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
