package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// stallRun runs six live nodes renewing their Leases every 2s and one dead
// node ("a-dead", silent from 0s) for 150s, with the controller's Lease
// cache stalled from 10s to 70s, and returns the Monitor's Events by kind
// and node.
func stallRun(t *testing.T, conf nodehealth.Confirmation) map[monitor.Kind]map[string]int {
	t.Helper()
	ctx := context.Background()
	epoch := testutil.Epoch
	c := monitortest.New(epoch)
	live := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	for _, name := range append([]string{"a-dead"}, live...) {
		c.AddNode(ctx, monitortest.NewNode(name, "zone-1", epoch), monitortest.NewLease(name, epoch))
		c.AddPod(ctx, monitortest.NewPod("default", "web-"+name, name, epoch))
	}
	s := monitortest.NewLeaseStall(c)
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	cfg.Health.Confirmation = conf
	var mu sync.Mutex
	got := map[monitor.Kind]map[string]int{}
	m, err := monitor.New(cfg, s, func(e monitor.Event) {
		mu.Lock()
		defer mu.Unlock()
		if got[e.Kind] == nil {
			got[e.Kind] = map[string]int{}
		}
		got[e.Kind][e.Node]++
		if e.Kind == monitor.KindHealthHeld {
			assert.Equal(t, "read version: 1 is not as new as written version: 2 for group resource leases.coordination.k8s.io", e.Detail)
		}
	})
	require.NoError(t, err)
	c.Attach(m)
	c.Sync(ctx)
	for now := epoch; !now.After(epoch.Add(150 * time.Second)); now = now.Add(cfg.TaintPeriod) {
		c.SetNow(now)
		el := now.Sub(epoch)
		switch el {
		case 10 * time.Second:
			s.Stall()
		case 70 * time.Second:
			s.Resume()
		}
		if el%(2*time.Second) == 0 {
			for _, name := range live {
				c.RenewLease(name, now)
			}
		}
		if el%cfg.MonitorPeriod == 0 {
			m.MonitorPass(ctx, now)
		}
		m.TaintPass(ctx, now)
		m.EvictionPass(ctx, now)
	}
	return got
}

// The Lease-watch stall measured against a real API server, on the
// in-memory cluster: v1.36 (ConfirmNone) writes every live node Unknown and
// taints it; v1.37 (the default) holds the passes the stall makes look
// stale and writes only the node that really stopped.
func TestLeaseStall(t *testing.T) {
	for _, tc := range []struct {
		conf        nodehealth.Confirmation
		liveUnknown int // Unknown writes per live node
		held        bool
	}{
		{nodehealth.ConfirmNone, 1, false},
		{nodehealth.ConfirmLease, 0, true},
		{nodehealth.ConfirmLeaseAndStatus, 0, true},
	} {
		t.Run(tc.conf.String(), func(t *testing.T) {
			got := stallRun(t, tc.conf)
			assert.Equal(t, 1, got[monitor.KindNodeUnknown]["a-dead"], "Unknown writes of the dead node")
			assert.Positive(t, got[monitor.KindTaintAdded]["a-dead"], "taints of the dead node")
			for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6"} {
				assert.Equal(t, tc.liveUnknown, got[monitor.KindNodeUnknown][n], "Unknown writes of %s", n)
				assert.Equal(t, tc.liveUnknown > 0, got[monitor.KindTaintAdded][n] > 0, "taints of %s", n)
			}
			held := 0
			for _, c := range got[monitor.KindHealthHeld] {
				held += c
			}
			if tc.held {
				// The pass at 65s sees the frozen Leases past grace; the
				// stall ends before the pass at 70s.
				assert.Equal(t, 1, held, "held passes: %v", got[monitor.KindHealthHeld])
			} else {
				assert.Zero(t, held, "held passes")
			}
			assert.Empty(t, got[monitor.KindWriteFailed], "failed writes")
		})
	}
}

// readFailCluster is a LeaseStall whose live reads fail.
type readFailCluster struct {
	*monitortest.LeaseStall
	fail bool
}

func (r *readFailCluster) LiveLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	if r.fail {
		return nil, fmt.Errorf("connection refused")
	}
	return r.LeaseStall.LiveLease(ctx, name)
}

// attachLines attaches to c a Monitor (default config, one worker) that
// reads the cluster through via, and returns it with its events as
// format writes them, one line each.
func attachLines(t *testing.T, ctx context.Context, c *monitortest.Cluster, via monitor.Cluster, format func(monitor.Event) string) (*monitor.Monitor, *[]string) {
	t.Helper()
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	var lines []string
	m, err := monitor.New(cfg, via, func(e monitor.Event) { lines = append(lines, format(e)) })
	require.NoError(t, err)
	c.Attach(m)
	c.Sync(ctx)
	return m, &lines
}

// A live read that fails skips the node for the pass, with upstream's
// words, and holds nothing; the node is written once a read succeeds.
func TestLeaseConfirmReadFails(t *testing.T) {
	ctx := context.Background()
	epoch := testutil.Epoch
	c := monitortest.New(epoch)
	c.AddNode(ctx, monitortest.NewNode("a", "zone-1", epoch), monitortest.NewLease("a", epoch))
	rc := &readFailCluster{LeaseStall: monitortest.NewLeaseStall(c), fail: true}
	m, events := attachLines(t, ctx, c, rc, func(e monitor.Event) string {
		return fmt.Sprintf("%v %s %s", e.At.Sub(epoch), e.Kind, e.Detail)
	})
	m.MonitorPass(ctx, epoch)
	m.MonitorPass(ctx, epoch.Add(55*time.Second))
	rc.fail = false
	m.MonitorPass(ctx, epoch.Add(60*time.Second))
	joined := strings.Join(*events, "\n")
	assert.Contains(t, joined, "55s write-failed error looking up lease to verify node a: connection refused")
	assert.Contains(t, joined, "1m0s node-unknown")
	assert.NotContains(t, joined, "55s node-unknown")
	assert.NotContains(t, joined, string(monitor.KindHealthHeld))
}

// A node already Unknown is confirmed too, as upstream confirms every node
// past its grace: when its kubelet is back and renews the Lease while the
// Lease cache is stalled, the pass holds instead of counting the node as
// not ready and going on with its taint and pod work. Only nodes about to be
// written used to be confirmed.
func TestLeaseStallUnknownNodeBack(t *testing.T) {
	ctx := context.Background()
	epoch := testutil.Epoch
	c := monitortest.New(epoch)
	for _, name := range []string{"a", "n1"} {
		c.AddNode(ctx, monitortest.NewNode(name, "zone-1", epoch), monitortest.NewLease(name, epoch))
	}
	s := monitortest.NewLeaseStall(c)
	m, events := attachLines(t, ctx, c, s, func(e monitor.Event) string {
		return fmt.Sprintf("%v %s %s", e.At.Sub(epoch), e.Kind, e.Node)
	})
	for el := time.Duration(0); el <= 75*time.Second; el += monitor.DefaultConfig().MonitorPeriod {
		now := epoch.Add(el)
		c.SetNow(now)
		c.RenewLease("n1", now) // "a" is silent until 62s
		switch el {
		case 60 * time.Second:
			s.Stall()
		case 65 * time.Second:
			c.RenewLease("a", epoch.Add(62*time.Second)) // its kubelet is back
		}
		m.MonitorPass(ctx, now)
	}
	joined := strings.Join(*events, "\n")
	assert.Contains(t, joined, "55s node-unknown a")
	assert.Contains(t, joined, "1m5s health-held a", "the stale Unknown node's live Lease is newer")
	assert.Contains(t, joined, "1m10s health-held a", "held until the cache catches up")
	assert.NotContains(t, joined, "1m0s health-held", "the Lease was not renewed yet")
	assert.NotContains(t, joined, string(monitor.KindWriteFailed))
}

// restoreCluster is a LeaseStall in front of an etcd whose revision is
// far ahead (every resourceVersion the cache and the live reads show is
// offset by base) until restore: etcd is restored from a snapshot taken
// before those writes, so from then on the versions are the LeaseStall's
// own, lower than every one handed out before, and the stalled cache
// relists (Resume).
type restoreCluster struct {
	*monitortest.LeaseStall
	restored atomic.Bool
}

const restoreBase = "1000000"

func (r *restoreCluster) offset(l *coordinationv1.Lease) *coordinationv1.Lease {
	if l == nil || r.restored.Load() {
		return l
	}
	l = l.DeepCopy()
	l.ResourceVersion = restoreBase + l.ResourceVersion
	return l
}

func (r *restoreCluster) GetLease(name string) *coordinationv1.Lease {
	return r.offset(r.LeaseStall.GetLease(name))
}

func (r *restoreCluster) LiveLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	l, err := r.LeaseStall.LiveLease(ctx, name)
	return r.offset(l), err
}

func (r *restoreCluster) SyncedResourceVersion(c nodehealth.Cache) string {
	v := r.LeaseStall.SyncedResourceVersion(c)
	if v == "" || r.restored.Load() {
		return v
	}
	return restoreBase + v
}

func (r *restoreCluster) restore() {
	r.restored.Store(true)
	r.LeaseStall.Resume()
}

// An etcd restore from a snapshot while a pass is held: node a renews its
// Lease every 5s, d stops at 30s, and the Lease cache stalls at 10s. At
// 65s a's frozen Lease is past grace and its live Lease is newer: the
// passes hold. At 80s etcd is restored to a snapshot far below the live
// version the hold waits for, and the cache relists there. The hold used
// to go on until that version came back (forever here: no node written
// Unknown, no zone decided); it now ends at the rewind, with one
// KindHealthHoldEnded Event, and d is written Unknown once its Lease,
// as relisted, is past grace. Without the restore nothing changes.
func TestLeaseStallEtcdRestore(t *testing.T) {
	for _, restore := range []bool{true, false} {
		t.Run(fmt.Sprint("restore=", restore), func(t *testing.T) {
			ctx := context.Background()
			epoch := testutil.Epoch
			c := monitortest.New(epoch)
			for _, name := range []string{"a", "d"} {
				c.AddNode(ctx, monitortest.NewNode(name, "zone-1", epoch), monitortest.NewLease(name, epoch))
			}
			rc := &restoreCluster{LeaseStall: monitortest.NewLeaseStall(c)}
			m, events := attachLines(t, ctx, c, rc, func(e monitor.Event) string {
				return fmt.Sprintf("%v %s %s: %s", e.At.Sub(epoch), e.Kind, e.Node, e.Detail)
			})
			for el := time.Duration(0); el <= 150*time.Second; el += monitor.DefaultConfig().MonitorPeriod {
				now := epoch.Add(el)
				c.SetNow(now)
				c.RenewLease("a", now)
				if el < 30*time.Second {
					c.RenewLease("d", now)
				}
				switch {
				case el == 10*time.Second:
					rc.Stall()
				case el == 80*time.Second && restore:
					rc.restore()
				}
				m.MonitorPass(ctx, now)
			}
			joined := strings.Join(*events, "\n")
			assert.Contains(t, joined, "1m5s health-held a: read version: 10000001 is not as new as written version: 10000002")
			assert.NotContains(t, joined, "node-unknown a")
			if !restore {
				assert.Contains(t, joined, "2m30s health-held a", "held while the cache stays behind")
				assert.NotContains(t, joined, "node-unknown d")
				assert.NotContains(t, joined, string(monitor.KindHealthHoldEnded))
				return
			}
			assert.Contains(t, joined, "1m15s health-held a")
			assert.Contains(t, joined, "1m20s health-hold-ended a: hold on leases.coordination.k8s.io (waiting for version 10000002) ended: the cache's synced resourceVersion went back from 10000001 to 2")
			assert.NotContains(t, joined, "1m20s health-held")
			assert.Contains(t, joined, "2m15s node-unknown d: no heartbeat for more than 50s: Ready=Unknown written",
				"d: last renewal seen at 80s (the relisted cache), stale after 130s")
			assert.Equal(t, 1, strings.Count(joined, string(monitor.KindHealthHoldEnded)))
			assert.NotContains(t, joined, string(monitor.KindWriteFailed))
		})
	}
}
