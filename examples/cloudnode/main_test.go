package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestCompare runs the -compare scenario: during the 30m outage our
// decision asks about each node 11 times (5s doubling to 5m), upstream's
// every 5s (360 times), at least 30x more; after it, ours deletes set a's
// nodes and upstream's leaves them and keeps asking every period.
func TestCompare(t *testing.T) {
	fs, o := newFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"-compare"}); err != nil {
		t.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	rs, err := compare(ctx, o.sc, o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours, up := rs[0], rs[1]
	if ours.Outage.Calls != 5*11 || up.Outage.Calls != 5*360 {
		t.Errorf("outage calls: ours %d, upstream-style %d; want 55, 1800", ours.Outage.Calls, up.Outage.Calls)
	}
	if ours.Outage.Deleted != 0 || up.Outage.Deleted != 0 {
		t.Errorf("deleted during the outage: ours %d, upstream-style %d; want 0, 0", ours.Outage.Deleted, up.Outage.Deleted)
	}
	if ours.After.Deleted != 3 || len(ours.After.LeftBehind) != 0 {
		t.Errorf("ours after the outage: %+v, want set a's 3 nodes deleted", ours.After)
	}
	if up.After.Deleted != 0 || len(up.After.LeftBehind) != 3 {
		t.Errorf("upstream-style after the outage: %+v, want set a's 3 nodes left", up.After)
	}
	// Upstream-style keeps asking about a's gone nodes every period: 720/h each.
	if got := up.After.Calls - ours.After.Calls; got < 3*719 {
		t.Errorf("upstream-style made %d more calls after the outage, want about 3*720", got)
	}
	var out bytes.Buffer
	if err := printCompare(&out, o.sc, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"API outage (30m0s)", "upstream-style  1800", "32.7x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunRejects: run without a mode, and -compare with bounds exceeded.
func TestRunRejects(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-compare", "-compare-nodes-a", "100000"},
		{"-compare", "-compare-outage", "1000h"},
		{"-compare", "-node-monitor-period", "0"},
	} {
		fs, o := newFlagSet(&bytes.Buffer{})
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), o, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}
