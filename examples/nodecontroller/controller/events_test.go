package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
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
// upstream reports as Kubernetes Events are recorded with upstream's reasons,
// types and messages, in taint mode and in legacy mode, and nothing else is:
// RegisteredNode for every node at the first pass, NodeNotReady on the node
// and a Warning NodeNotReady on each pod marked Ready=False; the taint
// evictions through Config.EvictionRecorder (upstream's
// taint-eviction-controller source), the legacy ones through Recorder
// (node-controller).
func TestRecordsUpstreamEvents(t *testing.T) {
	t.Parallel()
	registered := []string{
		"Normal RegisteredNode Node a event: Registered Node a in Controller",
		"Normal RegisteredNode Node b event: Registered Node b in Controller",
		"Normal RegisteredNode Node c event: Registered Node c in Controller",
	}
	podNotReady := slices.Repeat([]string{"Warning NodeNotReady Node is not ready"}, 4) // the 4 pods of a
	tests := []struct {
		name         string
		legacy       time.Duration // Monitor.PodEvictionTimeout; 0: taint mode
		until        time.Duration
		want         []string
		wantEviction []string
	}{{
		name:  "taint mode",
		until: 85 * time.Second,
		want: slices.Concat(registered, podNotReady, []string{
			"Normal NodeNotReady Node a status is now: NodeNotReady",
		}),
		wantEviction: []string{
			"Normal TaintManagerEviction Marking for deletion Pod default/bare",
			"Normal TaintManagerEviction Marking for deletion Pod default/short",
		},
	}, {
		name:   "legacy mode",
		legacy: 20 * time.Second,
		until:  80 * time.Second,
		want: slices.Concat(registered, podNotReady, []string{
			"Normal NodeNotReady Node a status is now: NodeNotReady",
			"Normal DeletingAllPods Deleting all Pods from Node a.",
			"Normal NodeControllerEviction Marking for deletion Pod bare from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod defaults from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod forever from Node a",
			"Normal NodeControllerEviction Marking for deletion Pod short from Node a",
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, evRec := record.NewFakeRecorder(100), record.NewFakeRecorder(100)
			cfg := testConfig()
			cfg.Monitor.PodEvictionTimeout = tt.legacy
			cfg.Recorder, cfg.EvictionRecorder = rec, evRec
			f := newFixture(t, cfg, cluster3()...)
			f.pass(true)
			f.advance(tt.until, liveExcept(f, "a"))

			for _, r := range []struct {
				name      string
				got, want []string
			}{{"Recorder", drain(rec), tt.want}, {"EvictionRecorder", drain(evRec), tt.wantEviction}} {
				// Pod evictions of one pass may come in any order.
				slices.Sort(r.got)
				slices.Sort(r.want)
				if !slices.Equal(r.got, r.want) {
					t.Errorf("%s recorded events:\n%q\nwant:\n%q", r.name, r.got, r.want)
				}
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
			for _, w := range slices.Concat(tt.want, tt.wantEviction) {
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

// TestNoWriteAfterContextEnded: a monitor or tainting pass started after
// the controller's context ended (leadership lost between two loop
// iterations) writes nothing, Kubernetes Events included: here a node
// registered meanwhile and another gone silent.
func TestNoWriteAfterContextEnded(t *testing.T) {
	t.Parallel()
	rec := record.NewFakeRecorder(100)
	cfg := testConfig()
	cfg.Recorder = rec
	f := newFixture(t, cfg, cluster3()...)
	f.pass(true)
	drain(rec)
	f.create(readyNode("d", "z1"))
	f.clock.Step(2 * time.Minute) // every node's grace period has run out
	f.settle()
	f.client.ClearActions()
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	f.c.MonitorPass(ctx)
	f.c.TaintPass(ctx)
	if got := drain(rec); len(got) != 0 {
		t.Errorf("events after the context ended: %q", got)
	}
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			t.Errorf("write after the context ended: %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
}

// TestRemovingNodeEvent: a node that goes away is reported once with
// upstream's RemovingNode event, and a node that comes back is registered
// again.
func TestRemovingNodeEvent(t *testing.T) {
	t.Parallel()
	rec := record.NewFakeRecorder(100)
	cfg := testConfig()
	cfg.Recorder = rec
	f := newFixture(t, cfg, cluster3()...)
	f.pass(true)
	drain(rec)
	if err := f.client.CoreV1().Nodes().Delete(f.ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.pass(true)
	f.pass(true)
	if got, want := drain(rec), []string{"Normal RemovingNode Node b event: Removing Node b from Controller"}; !slices.Equal(got, want) {
		t.Errorf("after deleting b: %q, want %q", got, want)
	}
	f.create(readyNode("b", "z1"))
	f.pass(true)
	if got, want := drain(rec), []string{"Normal RegisteredNode Node b event: Registered Node b in Controller"}; !slices.Equal(got, want) {
		t.Errorf("after re-creating b: %q, want %q", got, want)
	}
}

// TestDisruptionTargetObservedGeneration: the DisruptionTarget condition
// written before an eviction carries the pod's generation as its
// observedGeneration, as upstream's.
func TestDisruptionTargetObservedGeneration(t *testing.T) {
	t.Parallel()
	objs := cluster3()
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok && p.Name == "bare" {
			p.Generation = 3
		}
	}
	f := newFixture(t, testConfig(), objs...)
	f.pass(true)
	f.advance(70*time.Second, liveExcept(f, "a"))
	if f.pod("bare") != nil {
		t.Fatalf("pod bare not evicted by %v", f.at())
	}
	found := false
	for _, a := range f.actions("patch", "pods", "status") {
		pa := a.(k8stesting.PatchAction)
		if pa.GetName() != "bare" {
			continue
		}
		var p v1.Pod
		if err := jsonUnmarshal(string(pa.GetPatch()), &p); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				found = true
				if c.ObservedGeneration != 3 {
					t.Errorf("DisruptionTarget observedGeneration = %d, want the pod's generation 3", c.ObservedGeneration)
				}
			}
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget patch for pod bare")
	}
}
