package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
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

// TestBadFlagsFailUpFront: complete rejects every bad value, with an error
// naming it, before run creates a client; values the API server or the pod
// worker would reject only later (a node name, a label, a negative
// backoff) included. The old code accepted all of these in complete.
func TestBadFlagsFailUpFront(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-node-name", "Bad_Name"}, `node name "Bad_Name"`},
		{[]string{"-node-name", "a", "-node-labels", "bad key=v"}, "label bad key=v"},
		{[]string{"-node-name", "a", "-node-labels", "k=bad value"}, "label k=bad value"},
		{[]string{"-node-name", "a", "-node-lease-duration-seconds", "3000000000"}, "-node-lease-duration-seconds 3000000000"},
		{[]string{"-node-name", "a", "-backoff-period", "-1s"}, "PodWorker"},
		{[]string{"-node-name", "a", "-parallelism", "0"}, "Parallelism 0"},
		{[]string{"-node-name", "a", "-parallelism", "1000000"}, "Parallelism 1000000"},
		{[]string{"-node-name", "a", "-kube-api-qps", "NaN"}, "-kube-api-qps NaN"},
		{[]string{"-node-name", "a", "-kube-api-burst", "-1"}, "-kube-api-burst -1"},
		{[]string{"-node-name", "a", "-port", "70000"}, "-port 70000"},
		{[]string{"-node-name", "a", "-pod-manifest-path", "/nonexistent/manifests"}, "-pod-manifest-path"},
		{[]string{"-node-name", "a", "-pod-manifest-path", "/dev/null"}, "-pod-manifest-path"},
	}
	for _, tt := range tests {
		fs, o := newFlagSet(io.Discard)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if err := o.complete(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("complete(%s) = %v, want an error with %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// TestPortInUseFailsFirst: a port that cannot be bound stops run before it
// reads a kubeconfig or registers anything (the old code logged the
// failure on a goroutine and ran on without its endpoints).
func TestPortInUseFailsFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fs, o := newFlagSet(io.Discard)
	port := ln.Addr().(*net.TCPAddr).Port
	if err := fs.Parse([]string{"-node-name", "a", "-address", "127.0.0.1", "-port", strconv.Itoa(port),
		"-kubeconfig", filepath.Join(t.TempDir(), "missing")}); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("run(port in use) = %v, want the bind error", err)
	}
}
