package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/servicecidr/controller"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out, controller.DefaultConfig()); err != nil {
		t.Fatalf("runDemo() = %v\noutput so far:\n%s", err, out.String())
	}
	want := `+0s    ServiceCIDR demo 10.96.0.0/28 created; IPAddress 10.96.0.5 (Service default/web) allocated from it
+0s    controller added the finalizer; finalizers=[networking.k8s.io/service-cidr-finalizer] Ready=True "Kubernetes Service CIDR is ready"
+0s    ServiceCIDR demo deleted (deletionTimestamp set)
+0s    blocked by [10.96.0.5]; finalizers=[networking.k8s.io/service-cidr-finalizer] Ready=False reason=Terminating "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
+4s    IPAddress 10.96.0.5 deleted (the Service went away)
+4s    nothing blocks; waiting 6s for the grace period; finalizers=[networking.k8s.io/service-cidr-finalizer] Ready=False reason=Terminating "The ServiceCIDR is being deleted"
+10s   grace period over: controller removed the finalizer; finalizers=[] Ready=False reason=Terminating "The ServiceCIDR is being deleted"
+10s   the apiserver can now remove ServiceCIDR demo
`
	if got := out.String(); got != want {
		t.Errorf("runDemo() output:\n%s\nwant:\n%s", got, want)
	}
}

// TestDemoWithoutGracePeriod: with no grace period the finalizer goes as
// soon as the address does.
func TestDemoWithoutGracePeriod(t *testing.T) {
	var out bytes.Buffer
	cfg := controller.DefaultConfig()
	cfg.Finalizer.GracePeriod = 0
	if err := runDemo(context.Background(), &out, cfg); err != nil {
		t.Fatalf("runDemo(grace 0) = %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "+0s    grace period over: controller removed the finalizer") {
		t.Errorf("runDemo(grace 0) output:\n%s\nwant the finalizer removed at +0s", out.String())
	}
}

func TestRunClusterBadKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("this is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runCluster(context.Background(), path, controller.DefaultConfig()); err == nil {
		t.Errorf("runCluster(bad kubeconfig) = nil, want an error")
	}
}

// TestRunClusterBadSettingsFirst: bad settings fail before the kubeconfig
// is even read (the old code read it and built a client first, and took a
// negative -workers for 1).
func TestRunClusterBadSettingsFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		mutate func(*controller.Config)
		want   string
	}{
		{func(c *controller.Config) { c.Workers = -1 }, "Workers = -1"},
		{func(c *controller.Config) { c.Workers = 1 << 40 }, "MaxWorkers"},
		{func(c *controller.Config) { c.Finalizer.GracePeriod = -time.Second }, "-1s"},
	} {
		cfg := controller.DefaultConfig()
		tt.mutate(&cfg)
		if err := runCluster(context.Background(), missing, cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("runCluster(%+v) = %v, want an error with %q", cfg, err, tt.want)
		}
	}
}
