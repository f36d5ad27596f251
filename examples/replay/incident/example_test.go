package incident_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// Example replays a tiny log: nodes n0 and n1 renew their Leases every
// 10s, n0 stops after t=0, and the recorded controller deleted its pod web
// at +6m; the
// replay, under --node-monitor-grace-period=40s, writes it Unknown, taints
// it and evicts the pod itself.
func Example() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(at time.Duration, user, verb string, ref audit.ObjectRef, body string) audit.Event {
		e := audit.Event{Level: "Request", Stage: "ResponseComplete", Verb: verb, User: audit.User{Username: user}, ObjectRef: &ref,
			ResponseStatus: &audit.Status{Code: 200}, RequestReceivedTimestamp: t0.Add(at), StageTimestamp: t0.Add(at)}
		if body != "" {
			e.RequestObject = []byte(body)
		}
		return e
	}
	lease := func(node string) audit.ObjectRef {
		return audit.ObjectRef{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: "kube-node-lease", Name: node}
	}
	log := []audit.Event{
		ev(0, "system:node:n0", "update", lease("n0"), ""),
		ev(time.Second, "system:serviceaccount:kube-system:replicaset-controller", "create",
			audit.ObjectRef{Resource: "pods", Namespace: "default", Name: "web"}, `{"kind":"Pod","spec":{"nodeName":"n0"}}`),
	}
	for t := time.Duration(0); t <= 7*time.Minute; t += 10 * time.Second {
		log = append(log, ev(t+2*time.Second, "system:node:n1", "update", lease("n1"), ""))
	}
	// The recorded controller's deletion, in time order.
	log = append(log, ev(6*time.Minute+500*time.Millisecond, "system:serviceaccount:kube-system:taint-eviction-controller", "delete",
		audit.ObjectRef{Resource: "pods", Namespace: "default", Name: "web"}, ""))
	slices.SortStableFunc(log, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	h, err := incident.Inventory(incident.SliceSource(log), incident.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pol := incident.DefaultPolicy()
	if err := pol.Set(incident.FlagNodeMonitorGracePeriod, "40s"); err != nil {
		fmt.Println(err)
		return
	}
	opt := incident.ReplayOptions{Policy: pol}
	run, err := incident.Replay(context.Background(), h, incident.SliceSource(log), opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range run.Replayed {
		fmt.Println(strings.Join(slices.DeleteFunc([]string{incident.Offset(h.First, d.Time), string(d.Kind), d.Node, d.Pod, d.Detail},
			func(s string) bool { return s == "" }), " "))
	}
	c := incident.Compare(h, run)
	for _, m := range c.Matched {
		fmt.Printf("matched %s %s: recorded %s, replayed %s\n", m.Kind, m.Pod, incident.Offset(h.First, m.Recorded), incident.Offset(h.First, m.Replayed))
	}
	// Output:
	// +45s node-unknown n0
	// +45s pod-not-ready n0 default/web
	// +45s taint-added n0 node.kubernetes.io/unreachable:NoExecute
	// +45s taint-added n0 node.kubernetes.io/unreachable:NoSchedule
	// +5m45s pod-evicted n0 default/web
	// matched pod-evicted default/web: recorded +6m0.5s, replayed +5m45s
}

// ExampleHistory_Doctor shows what a log at level Metadata cannot tell:
// the kubelet's Ready condition, and the controller's Unknown write is
// only inferred.
func ExampleHistory_Doctor() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(at time.Duration, user, verb string, ref audit.ObjectRef) audit.Event {
		return audit.Event{Level: "Metadata", Stage: "ResponseComplete", Verb: verb, User: audit.User{Username: user}, ObjectRef: &ref,
			ResponseStatus: &audit.Status{Code: 200}, RequestReceivedTimestamp: t0.Add(at), StageTimestamp: t0.Add(at)}
	}
	log := []audit.Event{
		ev(0, "system:node:n0", "patch", audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"}),
		ev(time.Minute, "system:serviceaccount:kube-system:node-controller", "update", audit.ObjectRef{Resource: "nodes", Name: "n0", Subresource: "status"}),
	}
	h, err := incident.Inventory(incident.SliceSource(log), incident.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range h.Doctor().Warnings() {
		fmt.Println(w)
	}
	// Output:
	// node-unknown: 1 status writes without a body (level Metadata) are read as Ready=Unknown writes (inferred)
	// Lease renewals: none: the audit policy does not log them, so every node looks silent
	// kubelet Ready conditions: 1 status posts without a body (level Metadata): the kubelet's Ready status is assumed unchanged (True unless a body said otherwise); NotReady kubelets cannot be told
	// zones: 1 nodes without a known zone: put in the zone ""
}

// ExampleReport_WriteSVG draws a report built by hand: n1 written Unknown
// at +1m40s by the recorded controller and at +2m0s by the replay. Each
// marker's tooltip is its decision.
func ExampleReport_WriteSVG() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &incident.History{First: t0, Last: t0.Add(4 * time.Minute),
		Recorded: []incident.Decision{{Time: t0.Add(100 * time.Second), Kind: incident.KindNodeUnknown, Node: "n1"}}}
	run := &incident.Run{Policy: incident.DefaultPolicy(), Origin: t0, End: t0.Add(4 * time.Minute),
		Replayed: []incident.Decision{{Time: t0.Add(2 * time.Minute), Kind: incident.KindNodeUnknown, Node: "n1"}}}
	var b strings.Builder
	if err := incident.NewReport(h, incident.ReplayOptions{Policy: run.Policy}, run).WriteSVG(&b); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range regexp.MustCompile(`<g><title>([^<]*)</title>`).FindAllStringSubmatch(b.String(), -1) {
		fmt.Println(strings.ReplaceAll(m[1], "&#xA;", "; "))
	}
	// Output:
	// recorded node-unknown at 2026-01-01T00:01:40Z (+1m40s); node: n1
	// replayed node-unknown at 2026-01-01T00:02:00Z (+2m0s); node: n1
}
