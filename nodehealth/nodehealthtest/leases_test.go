package nodehealthtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/nodehealth/nodehealthtest"
)

// view is what the cache and the store say about name: the cached and
// live resourceVersions ("-" for none) and the synced version.
func view(t *testing.T, l *nodehealthtest.Leases, name string) string {
	t.Helper()
	cached, live := "-", "-"
	if c := l.Cached(name); c != nil {
		cached = c.ResourceVersion
	}
	got, err := l.Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatalf("Get(%s) = %v", name, err)
	default:
		live = got.ResourceVersion
	}
	return fmt.Sprintf("cached=%s live=%s synced=%s rev=%s", cached, live, l.SyncedVersion(), l.Revision())
}

func TestLeases(t *testing.T) {
	t0 := testutil.Epoch
	l := nodehealthtest.New()
	assert.Equal(t, "cached=- live=- synced=1 rev=1", view(t, l, "a"))
	a := l.Renew("a", t0)
	assert.Equal(t, "a", a.Name)
	assert.Equal(t, "kube-node-lease", a.Namespace)
	assert.Equal(t, "a", *a.Spec.HolderIdentity)
	assert.True(t, a.Spec.RenewTime.Time.Equal(t0))
	assert.Equal(t, "cached=2 live=2 synced=2 rev=2", view(t, l, "a"))
	snap := l.Snapshot()
	assert.Equal(t, "2", snap.Revision())

	l.Stall()
	l.Stall() // no-op
	assert.True(t, l.Stalled())
	l.Renew("a", t0.Add(10*time.Second))
	l.Renew("b", t0.Add(10*time.Second))
	l.Bump(10)
	assert.Equal(t, "cached=2 live=3 synced=2 rev=14", view(t, l, "a"))
	assert.Equal(t, "cached=- live=4 synced=2 rev=14", view(t, l, "b"), "a Lease created while stalled is not seen")
	assert.True(t, l.Cached("a").Spec.RenewTime.Time.Equal(t0), "the cache keeps the old renewal")
	assert.True(t, a.Spec.RenewTime.Time.Equal(t0), "a Lease handed out is never modified")

	l.Resume()
	assert.False(t, l.Stalled())
	assert.Equal(t, "cached=3 live=3 synced=14 rev=14", view(t, l, "a"))
	l.Delete("b")
	l.Delete("b") // no Lease: no write
	assert.Equal(t, "cached=- live=- synced=15 rev=15", view(t, l, "b"))
	l.Bump(-3)
	assert.Equal(t, "15", l.Revision())

	// etcd restored to the snapshot: revision and Leases go back; the
	// cache relists, also when it was stalled.
	l.Stall()
	l.Restore(snap)
	assert.False(t, l.Stalled())
	assert.Equal(t, "cached=2 live=2 synced=2 rev=2", view(t, l, "a"))
	assert.Equal(t, "cached=- live=- synced=2 rev=2", view(t, l, "b"))
	l.Renew("a", t0.Add(20*time.Second))
	assert.Equal(t, "cached=3 live=3 synced=3 rev=3", view(t, l, "a"), "a resourceVersion handed out before comes back")
	assert.True(t, snap.Revision() == "2", "a snapshot is not changed by later writes")
	l.Restore(nodehealthtest.Snapshot{})
	assert.Equal(t, "cached=- live=- synced=1 rev=1", view(t, l, "a"))
}

func TestLeasesGet(t *testing.T) {
	l := nodehealthtest.New()
	l.Renew("a", testutil.Epoch)
	_, err := l.Get(context.Background(), "b", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "Get of a missing Lease = %v, want NotFound", err)
	got, err := l.Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	got.Spec.HolderIdentity = nil
	assert.NotNil(t, l.Cached("a").Spec.HolderIdentity, "Get returns a copy")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Get(ctx, "a", metav1.GetOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	// It is a LeaseGetter.
	var _ nodehealth.LeaseGetter = l.Get
}

// Safe for concurrent use (run with -race).
func TestLeasesConcurrent(t *testing.T) {
	l := nodehealthtest.New()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			name := fmt.Sprint("n", i)
			for j := range 200 {
				l.Renew(name, testutil.Epoch.Add(time.Duration(j)*time.Second))
				_ = l.Cached(name)
				_, _ = l.Get(context.Background(), name, metav1.GetOptions{})
				_ = l.SyncedVersion()
				switch j % 50 {
				case 10:
					l.Stall()
				case 20:
					l.Resume()
				case 30:
					l.Restore(l.Snapshot())
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, "801", l.Revision())
}
