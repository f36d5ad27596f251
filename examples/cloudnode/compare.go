package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/controller"
	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
)

// scenario is what -compare runs, for each decision, on a fake clientset
// and a fake cloud on a virtual clock: nodes in set a and set b, all
// NotReady. Set a is deleted (its instances at once, the set SetDeleteDelay
// later) as the cloud API starts failing every call, for Outage; then the
// API answers again and the run goes on for After. This is the Azure VMSS
// incident (kubernetes/kubernetes#95288): the API was not answering (there:
// throttled) during the short window in which the gone instances answered
// "not found", and ever after the set itself was gone.
type scenario struct {
	NodesA, NodesB int
	Outage         time.Duration
	After          time.Duration
	SetDeleteDelay time.Duration
}

// phaseResult is one decision's cost in one phase.
type phaseResult struct {
	Calls      int      // cloud API calls
	Deleted    int      // nodes deleted in the phase
	LeftBehind []string // nodes of set A still there at the end of the phase
}

// result is one decision's run.
type result struct {
	Decision string
	Outage   phaseResult
	After    phaseResult
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// compare runs sc with both decisions: ours (cfg) and upstream's.
func compare(ctx context.Context, sc scenario, cfg controller.Config) ([]result, error) {
	up := cfg
	up.UpstreamStyle = true
	var out []result
	for _, d := range []struct {
		name string
		cfg  controller.Config
	}{{"lifecycle", cfg}, {"upstream-style", up}} {
		r, err := runScenario(ctx, sc, d.cfg)
		if err != nil {
			return nil, err
		}
		r.Decision = d.name
		out = append(out, r)
	}
	return out, nil
}

func runScenario(ctx context.Context, sc scenario, cfg controller.Config) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clk := clocktesting.NewFakeClock(epoch)
	cloud := fakecloud.New(clk, fakecloud.Config{SetDeleteDelay: sc.SetDeleteDelay})
	client := fake.NewClientset()
	add := func(set string, n int) error {
		for i := range n {
			name := fmt.Sprintf("%s%d", set, i+1)
			in, err := cloud.AddInstance(set, name, name, "zone-1")
			if err != nil {
				return err
			}
			node := &v1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(epoch)},
				Spec:       v1.NodeSpec{ProviderID: in.ProviderID()},
				Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}},
			}
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add("a", sc.NodesA); err != nil {
		return result{}, err
	}
	if err := add("b", sc.NodesB); err != nil {
		return result{}, err
	}
	c, err := controller.New(client, &fakecloud.Provider{API: cloud}, clk, cfg)
	if err != nil {
		return result{}, err
	}
	if err := c.Start(ctx); err != nil {
		return result{}, err
	}
	var r result
	phase := func(d time.Duration) (phaseResult, error) {
		calls0, deleted0 := cloud.Calls().Total(), c.Stats().NodesDeleted
		for end := clk.Now().Add(d); clk.Now().Before(end); clk.Step(cfg.MonitorPeriod) {
			c.Pass(ctx)
		}
		p := phaseResult{Calls: cloud.Calls().Total() - calls0, Deleted: c.Stats().NodesDeleted - deleted0}
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return p, err
		}
		for _, n := range list.Items {
			if n.Name[0] == 'a' {
				p.LeftBehind = append(p.LeftBehind, n.Name)
			}
		}
		slices.Sort(p.LeftBehind)
		return p, nil
	}
	cloud.Fail(sc.Outage)
	cloud.DeleteScaleSet("a")
	if r.Outage, err = phase(sc.Outage); err != nil {
		return r, err
	}
	r.After, err = phase(sc.After)
	return r, err
}

// perNodeHour is calls per node per hour.
func perNodeHour(calls, nodes int, d time.Duration) float64 {
	if nodes == 0 || d <= 0 {
		return 0
	}
	return float64(calls) / float64(nodes) / d.Hours()
}

// printCompare writes the comparison table.
func printCompare(w io.Writer, sc scenario, rs []result) error {
	nodes := sc.NodesA + sc.NodesB
	fmt.Fprintf(w, "%d nodes NotReady (%d in scale set a, %d in b); set a is deleted (its instances at once, the set %v later)\n"+
		"as the cloud API starts failing every call for %v; then %v with the API answering\n\n",
		nodes, sc.NodesA, sc.NodesB, sc.SetDeleteDelay, sc.Outage, sc.After)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tdecision\tcloud calls\tcalls/node/hour\tnodes deleted\tnodes of set a left")
	for _, ph := range []struct {
		name string
		d    time.Duration
		get  func(result) phaseResult
	}{
		{fmt.Sprintf("API outage (%v)", sc.Outage), sc.Outage, func(r result) phaseResult { return r.Outage }},
		{fmt.Sprintf("after the outage (%v)", sc.After), sc.After, func(r result) phaseResult { return r.After }},
	} {
		for _, r := range rs {
			p := ph.get(r)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%d\n", ph.name, r.Decision, p.Calls,
				perNodeHour(p.Calls, nodes, ph.d), p.Deleted, len(p.LeftBehind))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rs) == 2 && rs[0].Outage.Calls > 0 {
		_, err := fmt.Fprintf(w, "\nduring the outage the upstream-style decision made %.1fx the calls\n",
			float64(rs[1].Outage.Calls)/float64(rs[0].Outage.Calls))
		return err
	}
	return nil
}
