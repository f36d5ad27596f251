package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	fs, _ := newFlagSet(&out)
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-kubeconfig", "-node-monitor-grace-period", "-node-eviction-rate", "-workers",
		"-legacy-node-eviction", "-use-taint-time-added", "-snapshot-configmap", "-leader-elect", "-leader-elect-lease-duration",
		"-leader-elect-renew-deadline", "-leader-elect-retry-period", "-leader-elect-resource-namespace",
		"-leader-elect-resource-name", "-bind-address", "-port", "plain HTTP"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h output lacks %s", want)
		}
	}
}

// TestDefaults: without leader election the defaults are upstream's; with
// it (the default) the snapshot ConfigMap and UseTaintTimeAdded are on
// unless given, and the leader election flags have kube-controller-
// manager's defaults.
func TestDefaults(t *testing.T) {
	fs, o := newFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"-leader-elect=false"}); err != nil {
		t.Fatal(err)
	}
	o.complete(fs)
	cfg, err := o.config(fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	want := controller.DefaultConfig()
	if cfg.Monitor != want.Monitor || cfg.Workers != want.Workers || cfg.LeaseNamespace != want.LeaseNamespace {
		t.Errorf("config() = %+v, want the defaults %+v", cfg.Monitor, want.Monitor)
	}
	if _, ok := cfg.Snapshots.(*controller.ConfigMapStore); ok || cfg.OnEvent == nil || cfg.SkipFinalSnapshot {
		t.Errorf("config(): snapshots %T, OnEvent set %v, SkipFinalSnapshot %v; want none, set, false", cfg.Snapshots, cfg.OnEvent != nil, cfg.SkipFinalSnapshot)
	}

	fs, o = newFlagSet(&bytes.Buffer{})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	o.complete(fs)
	if !o.leaderElect || o.leaseDuration != 15*time.Second || o.renewDeadline != 10*time.Second ||
		o.retryPeriod != 2*time.Second || o.leNamespace != "kube-system" || o.leName != controller.Name {
		t.Errorf("leader election defaults = %+v", o)
	}
	if o.bindAddress != "0.0.0.0" || o.port != 10258 {
		t.Errorf("endpoints = %s:%d, want 0.0.0.0:10258", o.bindAddress, o.port)
	}
	if err := o.validate(); err != nil {
		t.Errorf("validate() = %v", err)
	}
	cfg, err = o.config(fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	store, ok := cfg.Snapshots.(*controller.ConfigMapStore)
	if !ok || !cfg.Monitor.Evictor.UseTaintTimeAdded || !cfg.SkipFinalSnapshot {
		t.Errorf("HA config(): snapshots %T, UseTaintTimeAdded %v, SkipFinalSnapshot %v; want a ConfigMapStore, true, true",
			cfg.Snapshots, cfg.Monitor.Evictor.UseTaintTimeAdded, cfg.SkipFinalSnapshot)
	} else if ref := store.ObjectReference(); ref.Namespace != "kube-system" || ref.Name != controller.Name+"-snapshot" {
		t.Errorf("HA snapshot ConfigMap = %s/%s", ref.Namespace, ref.Name)
	}

	// Given flags win over the HA defaults.
	fs, o = newFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"-snapshot-configmap=", "-use-taint-time-added=false"}); err != nil {
		t.Fatal(err)
	}
	o.complete(fs)
	if cfg, err = o.config(fake.NewClientset()); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Snapshots.(*controller.ConfigMapStore); ok || cfg.Monitor.Evictor.UseTaintTimeAdded {
		t.Errorf("HA config() with both off: snapshots %T, UseTaintTimeAdded %v", cfg.Snapshots, cfg.Monitor.Evictor.UseTaintTimeAdded)
	}

	for _, bad := range [][]string{
		{"-leader-elect-lease-duration=10s"},
		{"-leader-elect-retry-period=10s"},
		{"-leader-elect-resource-name="},
		{"-port=70000"},
	} {
		fs, o = newFlagSet(&bytes.Buffer{})
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		o.complete(fs)
		if err := o.validate(); err == nil {
			t.Errorf("validate(%v) = nil, want an error", bad)
		}
	}
}

func TestFlags(t *testing.T) {
	fs, o := newFlagSet(&bytes.Buffer{})
	err := fs.Parse([]string{"-node-monitor-grace-period=40s", "-node-eviction-rate=2", "-full-disruption-rate=0",
		"-legacy-node-eviction", "-pod-eviction-timeout=1m", "-use-taint-time-added", "-snapshot-configmap=kube-system/snap"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Monitor
	if m.Health.GracePeriod != 40*time.Second || m.Zones.EvictionQPS != 2 || m.Zones.FullDisruptionQPS == nil ||
		*m.Zones.FullDisruptionQPS != 0 || m.PodEvictionTimeout != time.Minute || !m.Evictor.UseTaintTimeAdded {
		t.Errorf("config() monitor = %+v", m)
	}
	if _, ok := cfg.Snapshots.(*controller.ConfigMapStore); !ok {
		t.Errorf("config() snapshots = %T, want *ConfigMapStore", cfg.Snapshots)
	}
	o.fullQPS = math.NaN()
	if _, err := o.config(fake.NewClientset()); err == nil {
		t.Errorf("config(-full-disruption-rate=NaN) = nil error, want one")
	}
	o.fullQPS = -1
	o.snapshotCM = "no-slash"
	if _, err := o.config(fake.NewClientset()); err == nil {
		t.Errorf("config(-snapshot-configmap=no-slash) = nil error, want one")
	}
}

// TestRestConfig: -kubeconfig when given; else the in-cluster
// configuration; else the default loading rules ($KUBECONFIG).
func TestRestConfig(t *testing.T) {
	defer func(f func() (*rest.Config, error)) { inClusterConfig = f }(inClusterConfig)
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://from-kubeconfig:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("this is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	inCluster := func() (*rest.Config, error) { return &rest.Config{Host: "https://in-cluster:443"}, nil }
	outside := func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }

	tests := []struct {
		name       string
		kubeconfig string
		inCluster  func() (*rest.Config, error)
		env        string
		wantHost   string // "": an error
	}{
		{"flag", good, inCluster, "", "https://from-kubeconfig:6443"},
		{"bad flag", bad, inCluster, "", ""},
		{"in cluster", "", inCluster, bad, "https://in-cluster:443"},
		{"outside: $KUBECONFIG", "", outside, good, "https://from-kubeconfig:6443"},
		{"outside: bad $KUBECONFIG", "", outside, bad, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			inClusterConfig = tt.inCluster
			rc, err := restConfig(tt.kubeconfig)
			switch {
			case tt.wantHost == "" && err == nil:
				t.Errorf("restConfig() = %s, want an error", rc.Host)
			case tt.wantHost != "" && err != nil:
				t.Errorf("restConfig() = %v, want host %s", err, tt.wantHost)
			case tt.wantHost != "" && rc.Host != tt.wantHost:
				t.Errorf("restConfig() host = %s, want %s", rc.Host, tt.wantHost)
			}
		})
	}

	// run fails on a bad configuration before doing anything.
	_, o := newFlagSet(&bytes.Buffer{})
	o.kubeconfig = bad
	if err := run(context.Background(), o); err == nil {
		t.Errorf("run(bad kubeconfig) = nil, want an error")
	}
}

func TestLogEvent(t *testing.T) {
	// Only checks it does not panic on every kind, zone keys with NUL bytes
	// included; klog output goes to stderr.
	for _, k := range []monitor.Kind{monitor.KindNodeUnknown, monitor.KindWriteFailed, monitor.KindZoneState} {
		logEvent(monitor.Event{Kind: k, Node: "a", Zone: "r:\x00:z", Detail: "d"})
	}
}
