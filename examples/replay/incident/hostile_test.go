package incident

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// hostile returns a valid outage log with ev added near its start.
func hostile(evs ...audit.Event) []audit.Event {
	base := outage().build()
	for i := range evs {
		if evs[i].StageTimestamp.IsZero() {
			evs[i].StageTimestamp = epoch.Add(time.Second)
			evs[i].RequestReceivedTimestamp = epoch.Add(time.Second)
		}
	}
	return append(evs, base...)
}

func ev(user, verb string, ref audit.ObjectRef, req, resp string) audit.Event {
	e := audit.Event{Level: "RequestResponse", Stage: "ResponseComplete", Verb: verb, User: audit.User{Username: user},
		ObjectRef: &ref, ResponseStatus: &audit.Status{Code: 200}, Source: audit.Position{File: "hostile.log", Line: 1}}
	if req != "" {
		e.RequestObject = []byte(req)
	}
	if resp != "" {
		e.ResponseObject = []byte(resp)
	}
	return e
}

func TestHostileEvents(t *testing.T) {
	nodeRef := audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"}
	podRef := audit.ObjectRef{Resource: "pods", Namespace: "default", Name: "n1-web-0", Subresource: "status"}
	huge := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"kind":"Node","metadata":{"name":"n0","labels":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"l%d":"v"`, i)
		}
		b.WriteString(`}}}`)
		return b.String()
	}
	tests := []struct {
		name    string
		evs     []audit.Event
		lim     Limits
		wantErr string // "" : the log replays as without the event
		wantBad int64
	}{
		{name: "garbage body", evs: []audit.Event{ev("system:node:n0", "patch", nodeRef, `{"status":{"conditions":[{"type":`, "")}, wantBad: 1},
		{name: "not an object", evs: []audit.Event{ev(nodeController, "update", podRef, `[1,2,3]`, "")}, wantBad: 1},
		{name: "wrong types", evs: []audit.Event{ev(nodeController, "update", podRef, `{"spec":{"tolerations":"x"},"status":{"conditions":7}}`, "")}, wantBad: 1},
		{name: "bad taints", evs: []audit.Event{ev(nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0"}, `{"spec":{"taints":{"a":1}}}`, "")}, wantBad: 1},
		{name: "unknown resource", evs: []audit.Event{ev(nodeController, "delete", audit.ObjectRef{Resource: "widgets", Name: "w"}, `{}`, "")}},
		{name: "no objectRef", evs: []audit.Event{{Verb: "get", StageTimestamp: epoch.Add(time.Second)}}},
		{name: "failed write", evs: []audit.Event{func() audit.Event {
			e := ev(nodeController, "delete", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: "n0-web-0"}, "", "")
			e.ResponseStatus.Code = 409
			return e
		}()}},
		{name: "huge label map", evs: []audit.Event{ev("system:node:n0", "patch", nodeRef, "", huge(5000))},
			wantErr: "over MaxLabels=1024 (-max-labels)"},
		{name: "huge body", evs: []audit.Event{ev("system:node:n0", "patch", nodeRef, "", huge(50))}, lim: Limits{MaxObjectBytes: 100},
			wantErr: "over MaxObjectBytes=100 (-max-object-bytes)"},
		{name: "too many nodes", lim: Limits{MaxNodes: 2}, wantErr: "more than MaxNodes=2 nodes (-max-nodes)"},
		{name: "too many pods", lim: Limits{MaxPods: 5}, wantErr: "more than MaxPods=5 pods (-max-pods)"},
		{name: "zero time", evs: []audit.Event{func() audit.Event {
			e := ev("system:node:n0", "update", audit.ObjectRef{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: "kube-node-lease", Name: "n0"}, "", "")
			e.StageTimestamp = time.Time{}
			e.RequestReceivedTimestamp = time.Time{}
			return e
		}()}},
		{name: "span", evs: []audit.Event{func() audit.Event {
			e := ev("system:node:n0", "update", audit.ObjectRef{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: "kube-node-lease", Name: "n0"}, "", "")
			e.StageTimestamp = epoch.Add(-400 * 24 * time.Hour)
			return e
		}()}, wantErr: "over MaxSpan=744h0m0s (-max-span)"},
		{name: "too many decisions", lim: Limits{MaxDecisions: 3}, wantErr: "more than MaxDecisions=3 recorded decisions (-max-decisions)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := hostile(tt.evs...)
			h, err := Inventory(SliceSource(evs), Options{Limits: tt.lim})
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Inventory() error = %v, want ErrLimit naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Inventory() error = %v", err)
			}
			if h.Facts.BadBodies != tt.wantBad {
				t.Errorf("BadBodies = %d, want %d (first: %s)", h.Facts.BadBodies, tt.wantBad, h.Facts.FirstBad)
			}
			run, err := Replay(context.Background(), h, SliceSource(evs), ReplayOptions{Policy: DefaultPolicy()})
			if err != nil {
				t.Fatalf("Replay() error = %v", err)
			}
			if c := Compare(h, run); len(c.Missing) != 0 || len(c.Extra) != 0 {
				t.Errorf("missing %v, extra %v, want none", c.Missing, c.Extra)
			}
		})
	}
}

func TestMonitorPassLimit(t *testing.T) {
	evs := outage().build()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(context.Background(), h, SliceSource(evs), ReplayOptions{Policy: policy(t, "--node-monitor-period=1ns")})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "over MaxMonitorPasses=10000000 (-max-monitor-passes)") {
		t.Errorf("Replay() error = %v, want ErrLimit naming MaxMonitorPasses", err)
	}
}

func TestReplayedDecisionLimit(t *testing.T) {
	evs := outage().build()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(context.Background(), h, SliceSource(evs), ReplayOptions{Policy: DefaultPolicy(), Limits: Limits{MaxDecisions: 2}})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxDecisions=2 replayed") {
		t.Errorf("Replay() error = %v, want ErrLimit naming MaxDecisions", err)
	}
}

// FuzzClassify feeds arbitrary bodies to every kind of write: never a
// panic, and an error only for a limit.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"spec":{"taints":null}}`, `{"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`,
		`{"kind":"Binding","target":{"name":"n1"}}`, `{"metadata":{"labels":{"a":"b"}}}`, `[`, "\x00"} {
		f.Add(s, uint8(0))
	}
	refs := []audit.ObjectRef{
		{Resource: "nodes", Name: "n0", Subresource: "status"}, {Resource: "nodes", Name: "n0"},
		{Resource: "pods", Namespace: "d", Name: "p", Subresource: "status"}, {Resource: "pods", Namespace: "d", Name: "p"},
		{Resource: "pods", Namespace: "d", Name: "p", Subresource: "binding"},
		{Resource: "leases", Namespace: "kube-node-lease", Name: "n0", APIGroup: "coordination.k8s.io"},
	}
	users := []string{nodeController, taintController, "system:node:n0", "alice"}
	verbs := []string{"create", "update", "patch", "delete"}
	f.Fuzz(func(t *testing.T, body string, sel uint8) {
		e := ev(users[int(sel)%len(users)], verbs[int(sel/4)%len(verbs)], refs[int(sel/16)%len(refs)], body, "")
		e.StageTimestamp = epoch
		h, err := Inventory(SliceSource([]audit.Event{e}), Options{})
		if err != nil {
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("Inventory() error = %v, want nil or ErrLimit", err)
			}
			return
		}
		if h.Used > 0 {
			if _, err := Replay(context.Background(), h, SliceSource([]audit.Event{e}), ReplayOptions{Policy: DefaultPolicy()}); err != nil {
				t.Fatalf("Replay() error = %v", err)
			}
		}
	})
}

func TestRequestAndResponseBodies(t *testing.T) {
	// Level RequestResponse: the request patch says what the write set,
	// the response is the object after it (here trimmed to its metadata).
	at := func(d time.Duration) audit.Event {
		return audit.Event{StageTimestamp: epoch.Add(d), RequestReceivedTimestamp: epoch.Add(d)}
	}
	mk := func(d time.Duration, verb string, ref audit.ObjectRef, req, resp string) audit.Event {
		e := ev(nodeController, verb, ref, req, resp)
		e.StageTimestamp, e.RequestReceivedTimestamp = at(d).StageTimestamp, at(d).RequestReceivedTimestamp
		return e
	}
	trimmed := `{"kind":"Node","apiVersion":"v1","metadata":{"name":"n0","resourceVersion":"7"}}`
	evs := []audit.Event{
		mk(time.Second, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"},
			`{"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`, trimmed),
		mk(2*time.Second, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0"},
			`{"spec":{"taints":[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute","timeAdded":"2026-01-01T00:00:02Z"}]}}`, trimmed),
		mk(3*time.Second, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0"}, `{"spec":{"taints":null}}`, trimmed),
		// A kubelet's heartbeat-only patch (no status) with the whole node
		// in the response: Ready=True, then the controller's Unknown again.
		func() audit.Event {
			e := mk(4*time.Second, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"},
				`{"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"2026-01-01T00:00:04Z"}]}}`,
				`{"kind":"Node","metadata":{"name":"n0"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
			e.User.Username = "system:node:n0"
			return e
		}(),
		mk(5*time.Second, "patch", audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"},
			`{"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`, trimmed),
	}
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range h.Recorded {
		got = append(got, fmt.Sprintf("%v %s %s %s", d.Time.Sub(epoch), d.Kind, d.Node, d.Detail))
	}
	want := []string{"1s node-unknown n0 ", "2s taint-added n0 node.kubernetes.io/unreachable:NoExecute", "3s taint-removed n0 node.kubernetes.io/unreachable:NoExecute", "5s node-unknown n0 "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
