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
		"-legacy-node-eviction", "-use-taint-time-added", "-snapshot-configmap"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h output lacks %s", want)
		}
	}
}

func TestDefaultsAreUpstream(t *testing.T) {
	fs, o := newFlagSet(&bytes.Buffer{})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	want := controller.DefaultConfig()
	if cfg.Monitor != want.Monitor || cfg.Workers != want.Workers || cfg.LeaseNamespace != want.LeaseNamespace {
		t.Errorf("config() = %+v, want the defaults %+v", cfg.Monitor, want.Monitor)
	}
	if _, ok := cfg.Snapshots.(*controller.ConfigMapStore); ok || cfg.OnEvent == nil {
		t.Errorf("config(): snapshots %T, OnEvent set %v; want none and set", cfg.Snapshots, cfg.OnEvent != nil)
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

func TestRunNeedsKubeconfig(t *testing.T) {
	_, o := newFlagSet(&bytes.Buffer{})
	if err := run(context.Background(), o); err == nil {
		t.Errorf("run(no kubeconfig) = nil, want an error")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("this is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.kubeconfig = path
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
