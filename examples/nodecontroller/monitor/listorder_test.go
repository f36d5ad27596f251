package monitor_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// shuffledCluster lists its nodes in the order order gives, as an
// informer's lister does (any order).
type shuffledCluster struct {
	*monitortest.Cluster
	order func([]*v1.Node) []*v1.Node
}

func (c *shuffledCluster) ListNodes() []*v1.Node {
	return c.order(slices.Clone(c.Cluster.ListNodes()))
}

// TestPassInNameOrder: whatever order the cluster lists the nodes in, and
// however it changes from pass to pass (the pass compares only the
// neighbours of nodes that moved), a pass takes them in name order: the
// Unknown events of five silent nodes come out sorted each time.
func TestPassInNameOrder(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	swap := func(i, j int) func([]*v1.Node) []*v1.Node {
		return func(ns []*v1.Node) []*v1.Node { ns[i], ns[j] = ns[j], ns[i]; return ns }
	}
	orders := []func([]*v1.Node) []*v1.Node{
		func(ns []*v1.Node) []*v1.Node { return ns }, // sorted: the pass's reference
		func(ns []*v1.Node) []*v1.Node { slices.Reverse(ns); return ns },
		swap(2, 3), swap(0, 4), swap(1, 2),
		func(ns []*v1.Node) []*v1.Node { return ns },
	}
	for k, order := range orders {
		epoch := benchEpoch
		c := &shuffledCluster{Cluster: monitortest.New(epoch), order: func(ns []*v1.Node) []*v1.Node { return ns }}
		var unknown []string
		m, err := monitor.New(testConfig(), c, func(e monitor.Event) {
			if e.Kind == monitor.KindNodeUnknown {
				unknown = append(unknown, e.Node)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			c.AddNode(context.Background(), monitortest.NewNode(n, "z", epoch), monitortest.NewLease(n, epoch))
		}
		c.Attach(m)
		c.Sync(context.Background())
		m.MonitorPass(context.Background(), epoch) // the sorted list, remembered
		c.order = order
		now := epoch.Add(time.Minute) // past the grace period: every node goes Unknown
		c.SetNow(now)
		m.MonitorPass(context.Background(), now)
		if !slices.Equal(unknown, names) {
			t.Errorf("order %d: nodes went Unknown in the order %v, want %v", k, unknown, names)
		}
	}
}

// TestPositionsShiftWithWorkers: with several workers, nodes deleted and
// added between passes (every later node's position shifts) while others
// post new status objects; run under -race, no worker reads a node's state
// while another updates it.
func TestPositionsShiftWithWorkers(t *testing.T) {
	ctx := context.Background()
	now := testutil.Epoch
	c := monitortest.New(now)
	cfg := testConfig()
	cfg.Workers = 4
	m, err := monitor.New(cfg, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Attach(m)
	name := func(i int) string { return fmt.Sprintf("n%03d", i) }
	for i := range 60 {
		c.AddNode(ctx, monitortest.NewNode(name(i), "zone-a", now), monitortest.NewLease(name(i), now))
	}
	for pass := range 40 {
		now = now.Add(cfg.MonitorPeriod)
		c.SetNow(now)
		gone := name(pass % 60)
		c.DeleteNode(gone)
		for i := range 60 {
			if n := name(i); n != gone && i%3 == pass%3 {
				c.PostNodeStatus(ctx, n, v1.ConditionTrue, now)
				c.RenewLease(n, now)
			}
		}
		m.MonitorPass(ctx, now)
		c.AddNode(ctx, monitortest.NewNode(gone, "zone-a", now), monitortest.NewLease(gone, now))
		m.MonitorPass(ctx, now)
	}
	if got := m.Stats().Nodes; got != 60 {
		t.Errorf("Stats().Nodes = %d, want 60", got)
	}
}
