package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// TestIssue108268RestartKeepsCountdown restarts the controller twice: at
// 30s, while node a is silent but not yet Unknown, and at 200s, while its
// pods' 300s tolerations run. With the snapshot in a ConfigMap and
// UseTaintTimeAdded, a restart changes nothing: Unknown at 55s, pods with
// the default tolerations evicted at 355s. Without them (upstream), the
// first restart grants a fresh grace period (Unknown at 85s) and the second
// restarts the countdown (evicted at 200s + 300s).
func TestIssue108268RestartKeepsCountdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		persist                bool
		wantUnknown, wantEvict time.Duration
	}{
		{"snapshot and TimeAdded", true, 55 * time.Second, 355 * time.Second},
		{"upstream: nothing kept", false, 85 * time.Second, 500 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			f := newFixture(t, cfg, cluster3()...)
			if tt.persist {
				store, err := controller.NewConfigMapStore(f.client, "kube-system", "node-lifecycle-snapshot")
				if err != nil {
					t.Fatal(err)
				}
				cfg.Snapshots = store
				cfg.Monitor.Evictor.UseTaintTimeAdded = true
				f.stop()
				f.start(cfg)
			}
			restart := func() {
				t.Helper()
				if err := f.c.SaveSnapshot(f.ctx); err != nil {
					t.Fatalf("SaveSnapshot() = %v", err)
				}
				f.stop()
				f.start(cfg)
			}
			f.pass(true)
			f.advance(30*time.Second, liveExcept(f, "a"))
			restart()
			f.pass(true) // Run's first pass comes at once
			f.advance(200*time.Second, liveExcept(f, "a"))
			if got := f.first(monitor.KindNodeUnknown, "a", "", ""); got != tt.wantUnknown {
				t.Errorf("node a Unknown at %v, want %v", got, tt.wantUnknown)
			}
			restart()
			f.pass(true)
			f.advance(tt.wantEvict-5*time.Second, liveExcept(f, "a"))
			if f.pod("defaults") == nil {
				t.Fatalf("pod defaults evicted before %v", tt.wantEvict)
			}
			f.advance(tt.wantEvict, liveExcept(f, "a"))
			if f.pod("defaults") != nil {
				t.Errorf("pod defaults still there at %v", tt.wantEvict)
			}
			if got := f.first(monitor.KindPodEvicted, "", "default/defaults", ""); got != tt.wantEvict {
				t.Errorf("pod defaults evicted at %v, want %v", got, tt.wantEvict)
			}
		})
	}
}

func TestConfigMapStoreRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	s, err := controller.NewConfigMapStore(client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Load(ctx); rs != nil || err != nil {
		t.Errorf("Load() before any Save = %v, %v; want nil, nil", rs, err)
	}
	ready := testutil.NodeCondition(v1.NodeReady, v1.ConditionTrue, testutil.Epoch, testutil.Epoch)
	want := []nodehealth.Record{
		{Name: "a", Probe: testutil.Epoch.Add(3 * time.Second), ReadyTransition: testutil.Epoch, Ready: &ready, LeaseSeen: true},
		{Name: "b", Probe: testutil.Epoch.Add(time.Second), ReadyTransition: testutil.Epoch},
	}
	for range 2 { // create, then update
		if err := s.Save(ctx, want); err != nil {
			t.Fatalf("Save() = %v", err)
		}
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	if gj, wj := mustJSON(t, got), mustJSON(t, want); gj != wj { // metav1.Time decodes to Local
		t.Errorf("Load() = %+v, want %+v", got, want)
	}

	cm, _ := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "snap", metav1.GetOptions{})
	cm.BinaryData[controller.SnapshotKey] = []byte("not gzip")
	if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx); err == nil {
		t.Errorf("Load(corrupt) = nil error, want one")
	}
	if _, err := controller.NewConfigMapStore(client, "", "x"); !errors.Is(err, controller.ErrInvalidConfig) {
		t.Errorf("NewConfigMapStore(no namespace) = %v, want ErrInvalidConfig", err)
	}
}

// TestStartFailsOnSnapshotError: a store that cannot be read stops Run
// rather than silently resetting every countdown.
func TestStartFailsOnSnapshotError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig())
	cfg := testConfig()
	cfg.Snapshots = failingStore{}
	c, err := controller.New(f.client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(f.ctx); !errors.Is(err, errInjected) { // returns without ctx being cancelled
		t.Errorf("Run() = %v, want the store's error", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type failingStore struct{}

func (failingStore) Load(context.Context) ([]nodehealth.Record, error) { return nil, errInjected }
func (failingStore) Save(context.Context, []nodehealth.Record) error   { return errInjected }
