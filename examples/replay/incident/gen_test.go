package incident

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// epoch is the synthetic logs' first instant.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const nodeController = "system:serviceaccount:kube-system:node-controller"
const taintController = "system:serviceaccount:kube-system:taint-eviction-controller"

// gen builds a synthetic audit log: nodes n0..n{N-1} in zone-a renewing
// their Leases every 10s, pods created and bound at the start, a node that
// stops renewing (and may resume), and what a recorded controller wrote.
type gen struct {
	nodes, podsPerNode int
	duration           time.Duration
	// stop: the node that stops renewing after stopAt (its last renewal
	// is the last one at or before stopAt); resumeAt > 0 resumes it.
	stop             string
	stopAt, resumeAt time.Duration
	// level of the bodies: "Request" or "Metadata" (bodies dropped).
	level string
	// recorded writes (offsets; 0: none)
	unknownAt, noExecAt, evictAt time.Duration
	// untaintAt > 0: the recorded controller removes the taints then;
	// the resumed kubelet posts Ready 10ms after resumeAt.
	untaintAt time.Duration
	// tolSeconds > 0: the pods tolerate not-ready and unreachable for
	// that long (else the admission plugin's defaults apply).
	tolSeconds int64

	events []audit.Event
	line   int64
}

func (g *gen) nodeName(i int) string { return "n" + strconv.Itoa(i) }

func (g *gen) podName(node string, j int) string { return node + "-web-" + strconv.Itoa(j) }

func (g *gen) add(at time.Duration, user, verb string, ref audit.ObjectRef, req, resp any) {
	g.line++
	e := audit.Event{Level: "Metadata", AuditID: fmt.Sprintf("id-%d", g.line), Stage: "ResponseComplete", Verb: verb,
		User: audit.User{Username: user}, ObjectRef: &ref, ResponseStatus: &audit.Status{Code: 200},
		RequestReceivedTimestamp: epoch.Add(at), StageTimestamp: epoch.Add(at + time.Millisecond),
		Source: audit.Position{File: "gen.log", Line: g.line}}
	if g.level != "Metadata" {
		e.Level = "Request"
		if req != nil {
			e.RequestObject = mustJSON(req)
		}
		if resp != nil {
			e.Level = "RequestResponse"
			e.ResponseObject = mustJSON(resp)
		}
	}
	g.events = append(g.events, e)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gen) node(name string, ready v1.ConditionStatus, at time.Duration, taints []v1.Taint) *v1.Node {
	return &v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelHostname: name}},
		Spec:   v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(epoch.Add(at))}}}}
}

func (g *gen) pod(node string, j int, ready v1.ConditionStatus) *v1.Pod {
	return &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: g.podName(node, j), UID: types.UID("uid-pod-" + g.podName(node, j))},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: g.tolerations()},
		Status:     v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}}}
}

func (g *gen) tolerations() []v1.Toleration {
	if g.tolSeconds <= 0 {
		return nil
	}
	s := g.tolSeconds
	return []v1.Toleration{
		{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s},
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s},
	}
}

func (g *gen) build() []audit.Event {
	if g.level == "" {
		g.level = "Request"
	}
	var names []string
	for i := range g.nodes {
		names = append(names, g.nodeName(i))
	}
	// The kubelets' first status posts (whole nodes: zones) and the pods.
	for i, n := range names {
		at := time.Duration(i) * 10 * time.Millisecond
		patch := map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}
		g.add(at, "system:node:"+n, "patch", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status", APIVersion: "v1"}, patch, g.node(n, v1.ConditionTrue, at, nil))
		for j := range g.podsPerNode {
			p := g.pod("", j, "")
			p.Name = g.podName(n, j)
			g.add(at+time.Millisecond, "system:serviceaccount:kube-system:replicaset-controller", "create", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: p.Name, APIVersion: "v1"}, p, nil)
			g.add(at+2*time.Millisecond, "system:kube-scheduler", "create", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: p.Name, Subresource: "binding", APIVersion: "v1"},
				map[string]any{"kind": "Binding", "target": map[string]any{"kind": "Node", "name": n}}, nil)
		}
	}
	// Lease renewals every 10s, node i offset by i×10ms.
	for t := 10 * time.Second; t <= g.duration; t += 10 * time.Second {
		for i, n := range names {
			at := t + time.Duration(i)*10*time.Millisecond
			if n == g.stop && at > g.stopAt && (g.resumeAt == 0 || at < g.resumeAt) {
				continue
			}
			g.add(at, "system:node:"+n, "update", audit.ObjectRef{Resource: "leases", Namespace: v1.NamespaceNodeLease, Name: n, APIGroup: "coordination.k8s.io", APIVersion: "v1"}, nil, nil)
		}
	}
	// The recorded controller.
	if g.unknownAt > 0 {
		n := g.stop
		g.add(g.unknownAt, nodeController, "update", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status", APIVersion: "v1"}, g.node(n, v1.ConditionUnknown, 0, nil), nil)
		for j := range g.podsPerNode {
			p := g.pod(n, j, v1.ConditionFalse)
			g.add(g.unknownAt+time.Millisecond, nodeController, "update", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: p.Name, Subresource: "status", APIVersion: "v1"}, p, nil)
		}
		ns := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}
		g.add(g.unknownAt+2*time.Millisecond, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: n, APIVersion: "v1"},
			map[string]any{"spec": map[string]any{"taints": []v1.Taint{ns}}}, nil)
		if g.noExecAt > 0 {
			ne := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch.Add(g.noExecAt)}}
			g.add(g.noExecAt, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: n, APIVersion: "v1"},
				map[string]any{"spec": map[string]any{"taints": []v1.Taint{ns, ne}}}, nil)
		}
		if g.evictAt > 0 {
			for j := range g.podsPerNode {
				name := g.podName(n, j)
				// The DisruptionTarget condition, then the deletion.
				g.add(g.evictAt, taintController, "patch", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, Subresource: "status", APIVersion: "v1"},
					map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "DisruptionTarget", "status": "True"}}}}, nil)
				g.add(g.evictAt+time.Millisecond, taintController, "delete", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, APIVersion: "v1"},
					map[string]any{"kind": "DeleteOptions"}, nil)
			}
		}
	}
	if g.resumeAt > 0 && g.unknownAt > 0 {
		n := g.stop
		at := g.resumeAt + 20*time.Millisecond
		patch := map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}
		g.add(at, "system:node:"+n, "patch", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status", APIVersion: "v1"}, patch, nil)
	}
	if g.untaintAt > 0 {
		g.add(g.untaintAt, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: g.stop, APIVersion: "v1"},
			map[string]any{"spec": map[string]any{"taints": nil}}, nil)
	}
	slices.SortStableFunc(g.events, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	return g.events
}
