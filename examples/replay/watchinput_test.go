package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// recordingOf writes a synthetic informer recording of file's Lease
// renewals: each delivered 10ms after it was stored, except those stored
// in [from, to) after the log's first event, delivered at to.
func recordingOf(t *testing.T, file string, from, to time.Duration) string {
	t.Helper()
	src, err := audit.Open([]string{file}, audit.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "informer.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	var origin time.Time
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if origin.IsZero() {
			// The recorder starts before the log's first event.
			origin = ev.StageTimestamp
			if err := enc.Encode(incident.Delivery{Received: origin, Kind: incident.DeliveryClock}); err != nil {
				t.Fatal(err)
			}
		}
		r := ev.ObjectRef
		if r == nil || r.Resource != "leases" || ev.Verb != "update" {
			continue
		}
		at := ev.StageTimestamp.Add(10 * time.Millisecond)
		if off := ev.StageTimestamp.Sub(origin); off >= from && off < to {
			at = origin.Add(to)
		}
		if err := enc.Encode(incident.Delivery{Received: at, Kind: incident.DeliveryLease, Event: "update", Name: r.Name, Namespace: r.Namespace}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestInformerRecording(t *testing.T) {
	rec := recordingOf(t, logFile, 10*time.Second, 70*time.Second)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		not      []string
	}{
		{"applied", []string{"-informer-recording", rec, "-feature-gates=NodeControllerLeaseCircuitBreaker=false", "-phases", "1", logFile}, 0,
			[]string{"lease-watch-stall: +10", "watch: applied from the informer recording: lease watch stall +10", "does not measure the recorder's clock", "extra"}, nil},
		{"doctor", []string{"-doctor", "-informer-recording", rec, logFile}, 0,
			[]string{"Watch delivery", "from the informer recording: lease watch stall +10", "no watch stall candidate inferred"},
			[]string{"node watch stall"}}, // the recording has no Node deliveries: Nodes not recorded
		{"doctor json", []string{"-doctor", "-format", "json", "-informer-recording", rec, logFile}, 0, []string{`"watch": [`}, nil},
		{"json", []string{"-format", "json", "-phases", "1", "-informer-recording", rec, logFile}, 0, []string{`"sources": [`}, nil},
		{"inferred none", []string{"-apply-inferred-stalls", "-phases", "1", logFile}, 0, []string{"watch: -apply-inferred-stalls: no candidate inferred"}, nil},
		{"missing", []string{"-informer-recording", "nonexistent.jsonl", logFile}, 2, []string{"-informer-recording"}, nil},
		{"bad threshold", []string{"-informer-recording", rec, "-informer-delay-threshold", "0s", logFile}, 2, []string{"-informer-delay-threshold must be positive"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runArgs(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("run(%v) exit %d, want %d:\n%s", tt.args, code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("run(%v) output lacks %q:\n%s", tt.args, w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("run(%v) output has %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
}
