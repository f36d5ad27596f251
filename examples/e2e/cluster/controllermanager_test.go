package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinariesControllerManagerOptional(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvBinDir, dir)
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := FindBinaries()
	if err != nil {
		t.Fatalf("FindBinaries() without kube-controller-manager = %v, want found", err)
	}
	if b.ControllerManager != "" {
		t.Errorf("ControllerManager = %q, want empty", b.ControllerManager)
	}
	if _, err := b.RequireControllerManager(); !errors.Is(err, ErrControllerManagerNotFound) || !strings.Contains(err.Error(), "hack/build.sh") {
		t.Errorf("RequireControllerManager() = %v, want ErrControllerManagerNotFound saying how to build", err)
	}
	kcm := filepath.Join(dir, "kube-controller-manager")
	if err := os.WriteFile(kcm, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err = FindBinaries(); err != nil || b.ControllerManager != kcm {
		t.Fatalf("FindBinaries() = %+v, %v; want ControllerManager %s", b, err, kcm)
	}
	if got, err := b.RequireControllerManager(); err != nil || got != kcm {
		t.Errorf("RequireControllerManager() = %q, %v", got, err)
	}
}

func TestStartProcessAfterStop(t *testing.T) {
	c := &Cluster{stopped: true}
	if _, err := c.StartProcess("x", "/bin/true"); !errors.Is(err, ErrStopped) {
		t.Errorf("StartProcess() on a stopped cluster = %v, want ErrStopped", err)
	}
}
