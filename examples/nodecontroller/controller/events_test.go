package controller_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// drain returns the events recorded so far by a FakeRecorder, as
// "type reason message".
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestRecordsUpstreamEvents: with Config.Recorder set, the decisions that
// upstream reports as Kubernetes Events are recorded with upstream's reasons
// and messages, in taint mode and in legacy mode, and nothing else is.
func TestRecordsUpstreamEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		legacy time.Duration // Monitor.PodEvictionTimeout; 0: taint mode
		until  time.Duration
		want   []string
	}{{
		name:  "taint mode",
		until: 85 * time.Second,
		want: []string{
			"Normal NodeNotReady Node a status is now: NodeNotReady",
			"Normal TaintManagerEviction Marking for deletion Pod default/bare",
			"Normal TaintManagerEviction Marking for deletion Pod default/short",
		},
	}, {
		name:   "legacy mode",
		legacy: 20 * time.Second,
		until:  80 * time.Second,
		want: []string{
			"Normal NodeNotReady Node a status is now: NodeNotReady",
			"Normal DeletingAllPods Deleting all Pods from Node a.",
			"Normal NodeControllerEviction Marking for deletion Pod bare from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod defaults from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod forever from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod short from Node a",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := record.NewFakeRecorder(100)
			cfg := testConfig()
			cfg.Monitor.PodEvictionTimeout = tt.legacy
			cfg.Recorder = rec
			f := newFixture(t, cfg, cluster3()...)
			f.pass(true)
			f.advance(tt.until, liveExcept(f, "a"))

			got := drain(rec)
			// Pod evictions of one pass may come in any order.
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("recorded events:\n%q\nwant:\n%q", got, tt.want)
			}
			f.mu.Lock()
			n := 0
			for _, e := range f.events {
				if e.Kind == monitor.KindPodEvicted {
					n++
				}
			}
			f.mu.Unlock()
			marked := 0
			for _, w := range tt.want {
				if strings.Contains(w, "Marking for deletion") {
					marked++
				}
			}
			if n != marked {
				t.Errorf("%d pod-evicted monitor events, want one Kubernetes Event each (%d)", n, marked)
			}
		})
	}
}
