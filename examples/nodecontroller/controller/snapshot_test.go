package controller_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

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

// TestUnreadableSnapshotStartsWithout: a snapshot that cannot be read (a
// store error, a corrupt ConfigMap) does not stop the controller: it starts
// without it, as upstream always does, and records a Warning Event on the
// ConfigMap.
func TestUnreadableSnapshotStartsWithout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	if _, err := f.client.CoreV1().ConfigMaps("kube-system").Create(f.ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "snap"},
		BinaryData: map[string][]byte{controller.SnapshotKey: []byte("this is not gzip data")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store, err := controller.NewConfigMapStore(f.client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		store controller.SnapshotStore
		want  []string
	}{
		{"store error", failingStore{}, nil},
		{"corrupt ConfigMap", store, []string{"Warning SnapshotUnreadable Cannot read the node health snapshot, starting without it: " +
			"nodecontroller: load snapshot kube-system/snap key nodehealth.json.gz: corrupt snapshot: gzip: invalid header"}},
	} {
		cfg := testConfig()
		cfg.Snapshots = tt.store
		rec := record.NewFakeRecorder(10)
		cfg.Recorder = rec
		c, err := controller.New(f.client, f.clock, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(f.ctx)
		if err := c.Start(ctx); err != nil {
			t.Errorf("%s: Start() = %v, want nil (start without the snapshot)", tt.name, err)
		}
		if got := len(c.Monitor().Health().Snapshot()); got != 0 {
			t.Errorf("%s: %d records restored, want 0", tt.name, got)
		}
		if got := drain(rec); !slices.Equal(got, tt.want) {
			t.Errorf("%s: events = %q, want %q", tt.name, got, tt.want)
		}
		cancel()
		c.Shutdown()
	}
}

// TestSnapshotLoadCancelledRecordsNothing: a load that fails because the
// controller's context ended meanwhile (leadership lost while starting)
// records no Warning Event: a replica that no longer leads writes nothing.
func TestSnapshotLoadCancelledRecordsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	cfg := testConfig()
	cfg.Snapshots = cancellingStore{cancel}
	rec := record.NewFakeRecorder(10)
	cfg.Recorder = rec
	c, err := controller.New(f.client, f.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	_ = c.Start(ctx)
	if got := drain(rec); len(got) != 0 {
		t.Errorf("events = %q after a load cancelled with the context, want none", got)
	}
}

// cancellingStore's Load ends the context it was given, as losing the
// lease does, and fails with its error. It has a ConfigMap to record
// Events on, as ConfigMapStore.
type cancellingStore struct{ cancel context.CancelFunc }

func (s cancellingStore) Load(ctx context.Context) ([]nodehealth.Record, error) {
	s.cancel()
	return nil, ctx.Err()
}

func (cancellingStore) Save(context.Context, []nodehealth.Record) error { return nil }

func (cancellingStore) ObjectReference() *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "snap"}
}

// TestSnapshotDropsVanishedNodes: the records of nodes that no longer exist
// are not restored, and so never saved again.
func TestSnapshotDropsVanishedNodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testConfig(), cluster3()...)
	store, err := controller.NewConfigMapStore(f.client, "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	var saved []nodehealth.Record
	for _, n := range []string{"a", "gone", "b", "c"} {
		saved = append(saved, nodehealth.Record{Name: n, Probe: testutil.Epoch, ReadyTransition: testutil.Epoch})
	}
	if err := store.Save(f.ctx, saved); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Snapshots = store
	f.stop()
	f.start(cfg)
	names := func(rs []nodehealth.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	want := []string{"a", "b", "c"}
	if got := names(f.c.Monitor().Health().Snapshot()); !slices.Equal(got, want) {
		t.Errorf("restored %q, want %q", got, want)
	}
	f.pass(true)
	if err := f.c.SaveSnapshot(f.ctx); err != nil {
		t.Fatal(err)
	}
	rs, err := store.Load(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(rs); !slices.Equal(got, want) {
		t.Errorf("saved %q, want %q", got, want)
	}
}

// gzipMembers returns the concatenation of one gzip member per part (a
// reader decompresses them as one stream): a cheap way to build a large
// decompressed stream, since a repeated part is compressed once.
func gzipMembers(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var out []byte
	cache := map[string][]byte{}
	for _, p := range parts {
		z, ok := cache[string(p)]
		if !ok {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			if _, err := zw.Write(p); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			z = buf.Bytes()
			cache[string(p)] = z
		}
		out = append(out, z...)
	}
	return out
}

// TestSnapshotBombBounded: a small snapshot ConfigMap that decompresses to
// more than a million records, or to one huge record, fails to load with an
// error that names the limit, having allocated a few MiB at most (reading
// it whole took gigabytes and killed the controller at every start). Not
// parallel: it measures the process's allocations.
func TestSnapshotBombBounded(t *testing.T) {
	chunk := bytes.Repeat([]byte(`{"name":"n"},`), 80_000) // about 1 MiB, 80k records
	parts := [][]byte{[]byte("[")}
	for range 16 {
		parts = append(parts, chunk)
	}
	records := gzipMembers(t, append(parts, []byte(`{"name":"n"}]`))...)
	huge := gzipMembers(t, []byte(`[{"name":"`), bytes.Repeat([]byte("x"), 4<<20), []byte(`"}]`))
	t.Logf("bombs: %d KiB for 1.3M records, %d KiB for one 4 MiB record", len(records)/1024, len(huge)/1024)

	tests := []struct {
		name       string
		data       []byte
		maxBytes   int64
		want       string
		allocBound uint64
	}{
		{"records", records, 0, "more than MaxRecords = 50000 records", 64 << 20},
		{"bytes", huge, 1 << 20, "more than MaxBytes = 1048576 decompressed bytes", 8 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(&v1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "snap"},
				BinaryData: map[string][]byte{controller.SnapshotKey: tt.data},
			})
			store, err := controller.NewConfigMapStore(client, "kube-system", "snap")
			if err != nil {
				t.Fatal(err)
			}
			store.MaxBytes = tt.maxBytes
			ctx := context.Background()
			if _, err := store.Load(ctx); err != nil { // warm up: the client's first Get allocates too
				t.Logf("warm-up Load() = %v", err)
			}
			var rs []nodehealth.Record
			alloc := controller.AllocatedBy(func() { rs, err = store.Load(ctx) })
			if !errors.Is(err, controller.ErrSnapshotLimit) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load() = %d records, %v; want an ErrSnapshotLimit error with %q", len(rs), err, tt.want)
			}
			t.Logf("Load() allocated %d KiB", alloc>>10)
			if alloc > tt.allocBound {
				t.Errorf("Load() allocated %d MiB, want at most %d MiB", alloc>>20, tt.allocBound>>20)
			}
		})
	}
}

// TestSnapshotLimits: MaxRecords bounds Save as well as Load, and a snapshot
// at the limit loads.
func TestSnapshotLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := controller.NewConfigMapStore(fake.NewClientset(), "kube-system", "snap")
	if err != nil {
		t.Fatal(err)
	}
	rs := []nodehealth.Record{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	if err := store.Save(ctx, rs); err != nil {
		t.Fatal(err)
	}
	store.MaxRecords = 3
	if got, err := store.Load(ctx); err != nil || len(got) != 3 {
		t.Errorf("Load() at the limit = %d records, %v; want 3, nil", len(got), err)
	}
	store.MaxRecords = 2
	if _, err := store.Load(ctx); !errors.Is(err, controller.ErrSnapshotLimit) || !strings.Contains(err.Error(), "MaxRecords = 2") {
		t.Errorf("Load() over the limit = %v, want ErrSnapshotLimit naming MaxRecords = 2", err)
	}
	if err := store.Save(ctx, rs); !errors.Is(err, controller.ErrSnapshotLimit) || !strings.Contains(err.Error(), "MaxRecords = 2") {
		t.Errorf("Save() over the limit = %v, want ErrSnapshotLimit naming MaxRecords = 2", err)
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
