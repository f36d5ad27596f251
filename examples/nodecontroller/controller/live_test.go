package controller_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// stallLease makes the API server's answer to a GET of node's Lease newer
// than anything the controller's Lease cache has seen while stalled is set:
// renewed now, at a fresh resourceVersion (upstream's test does the same
// with a different resourceVersion on the fake client's GET).
func stallLease(f *fixture, node string, stalled *atomic.Bool) {
	f.client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !stalled.Load() || a.(k8stesting.GetAction).GetName() != node {
			return false, nil, nil
		}
		cur, err := f.client.Tracker().Get(leasesGVR, v1.NamespaceNodeLease, node)
		if err != nil {
			return true, nil, err
		}
		l := cur.(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = f.server.nextRV()
		return true, l, nil
	})
}

// The Lease circuit breaker through informers and the fake clientset. Node
// a's Lease in the controller's cache stops at 0s while the API server
// answers a GET with a newer one: with the gate on (the default) the
// controller GETs the Lease at 55s, finds a different resourceVersion and
// holds every pass until its Lease informer has synced past that version;
// nothing is written. Once the API server's Lease is the cached one (70s)
// and the informer has synced past the last version read (80s), the node
// that really stopped is written Unknown. With
// NodeControllerLeaseCircuitBreaker=false (ConfirmNone), a is written
// Unknown at 55s without any GET.
func TestLeaseCircuitBreaker(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conf        nodehealth.Confirmation
		wantUnknown time.Duration
		wantGets    bool
	}{
		{"gate on", nodehealth.ConfirmLeaseAndStatus, 80 * time.Second, true},
		{"gate off", nodehealth.ConfirmNone, 55 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.Monitor.Health.Confirmation = tc.conf
			f := newFixture(t, cfg, cluster3()...)
			var stalled atomic.Bool
			stalled.Store(true)
			stallLease(f, "a", &stalled)
			f.pass(true)
			f.advance(70*time.Second, liveExcept(f, "a"))
			if tc.conf != nodehealth.ConfirmNone {
				// The API server's Lease is the cached one again; b and c
				// renew at 70s, so the informer syncs past the held version.
				stalled.Store(false)
			}
			f.advance(80*time.Second, liveExcept(f, "a"))

			assert.Equal(t, tc.wantUnknown, f.first(monitor.KindNodeUnknown, "a", "", ""), "node a Unknown")
			gets := 0
			for _, a := range f.actions("get", "leases", "") {
				if a.(k8stesting.GetAction).GetName() == "a" { // the test's kubelets GET the others
					gets++
				}
			}
			assert.Equal(t, tc.wantGets, gets > 0, "live Lease GETs: %d", gets)
			if tc.conf == nodehealth.ConfirmNone {
				assert.Equal(t, time.Duration(-1), f.first(monitor.KindHealthHeld, "", "", ""))
				return
			}
			held := f.first(monitor.KindHealthHeld, "a", "", "")
			assert.Equal(t, 55*time.Second, held, "first held pass")
			f.mu.Lock()
			defer f.mu.Unlock()
			n := 0
			for _, e := range f.events {
				switch e.Kind {
				case monitor.KindHealthHeld:
					n++
					assert.True(t, strings.HasPrefix(e.Detail, "read version: "), e.Detail)
					assert.True(t, strings.HasSuffix(e.Detail, " for group resource leases.coordination.k8s.io"), e.Detail)
				case monitor.KindTaintAdded, monitor.KindPodsNotReady:
					assert.GreaterOrEqual(t, e.At.Sub(testutil.Epoch), tc.wantUnknown,
						"%s %s before the confirmed Unknown write", e.Kind, e.Node)
				}
			}
			require.Positive(t, n)
			// Held from 55s until the informer synced past the version
			// of the last GET (at 70s): b and c renew next at 80s.
			assert.Equal(t, 5, n, "held passes")
		})
	}
}

// Beyond upstream: node a has no Lease (its only heartbeat is its Ready
// condition) and the API server answers a GET of it with a newer version
// than the node informer holds. The controller GETs the Lease (NotFound),
// then the Node, and holds until the node informer has synced past that
// version; v1.37.2 (ConfirmLease) writes a Unknown at once.
func TestNodeCacheBehindStatusOnlyNode(t *testing.T) {
	for _, tc := range []struct {
		conf        nodehealth.Confirmation
		wantUnknown time.Duration
	}{
		{nodehealth.ConfirmLeaseAndStatus, 75 * time.Second},
		{nodehealth.ConfirmLease, 55 * time.Second},
	} {
		t.Run(tc.conf.String(), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.Monitor.Health.Confirmation = tc.conf
			f := newFixture(t, cfg, readyNode("a", "z1"), readyNode("b", "z1"), lease("b"), readyNode("c", "z1"), lease("c"))
			var stalled atomic.Bool
			stalled.Store(true)
			f.client.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if !stalled.Load() || a.(k8stesting.GetAction).GetName() != "a" {
					return false, nil, nil
				}
				cur, err := f.client.Tracker().Get(nodesGVR, "", "a")
				if err != nil {
					return true, nil, err
				}
				n := cur.(*v1.Node).DeepCopy()
				n.ResourceVersion = f.server.nextRV()
				return true, n, nil
			})
			f.pass(true)
			f.advance(70*time.Second, liveExcept(f, "a"))
			stalled.Store(false)
			f.setReady("b", v1.ConditionTrue) // a node event: the node informer syncs past the held version
			f.advance(80*time.Second, liveExcept(f, "a"))
			assert.Equal(t, tc.wantUnknown, f.first(monitor.KindNodeUnknown, "a", "", ""), "node a Unknown")
			if tc.conf == nodehealth.ConfirmLease {
				assert.Equal(t, time.Duration(-1), f.first(monitor.KindHealthHeld, "", "", ""))
				return
			}
			assert.Equal(t, 55*time.Second, f.first(monitor.KindHealthHeld, "a", "", ""))
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, e := range f.events {
				if e.Kind == monitor.KindHealthHeld {
					assert.True(t, strings.HasSuffix(e.Detail, " for group resource nodes"), e.Detail)
				}
			}
		})
	}
}
