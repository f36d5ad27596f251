package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	fs, o := newFlagSet(io.Discard)
	if err := fs.Parse([]string{"-node-name", "a, b", "-node-labels", "topology.kubernetes.io/zone=z1,x=y", "-node-lease-duration-seconds", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	if len(o.cfg.Nodes) != 2 || o.cfg.Nodes[1].Name != "b" || o.cfg.Nodes[0].Labels["topology.kubernetes.io/zone"] != "z1" {
		t.Errorf("nodes = %+v", o.cfg.Nodes)
	}
	if o.cfg.LeaseDuration != 4*time.Second || o.cfg.LeaseRenewInterval != time.Second {
		t.Errorf("lease duration %v renew %v, want 4s and 1s", o.cfg.LeaseDuration, o.cfg.LeaseRenewInterval)
	}
	for _, bad := range [][]string{{}, {"-node-name", "a", "-node-labels", "novalue"}, {"-node-name", "a", "-node-lease-duration-seconds", "0"}} {
		fs, o := newFlagSet(io.Discard)
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		if err := o.complete(); err == nil {
			t.Errorf("complete(%s) = nil, want an error", strings.Join(bad, " "))
		}
	}
}
