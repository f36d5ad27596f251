package simulate

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
)

const taintKey = "example.com/kernel-deadlock"

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func config() controller.Config {
	cfg := controller.DefaultConfig()
	cfg.Conditions = []controller.ConditionRule{{Type: "KernelDeadlock", Status: "True",
		Taint: controller.TaintSpec{Key: taintKey, Effect: "NoExecute"}}}
	return cfg
}

func testNode(name, zone string, deadlock bool, ts ...v1.Taint) v1.Node {
	st := v1.ConditionFalse
	if deadlock {
		st = v1.ConditionTrue
	}
	return v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Spec:       v1.NodeSpec{Taints: ts},
		Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: "KernelDeadlock", Status: st}}},
	}
}

func testPod(name, node string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PodSpec{NodeName: node}}
}

func reasons(r *Result, reason string) []Event {
	var out []Event
	for _, e := range r.Events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestRunPausedEvictions: a node tainted before the snapshot, in a zone
// that is tripped (2 unhealthy, maxUnhealthy 1): with pauseEvictions its
// pod is held, not evicted, and the result says so.
func TestRunPausedEvictions(t *testing.T) {
	cfg := config()
	cfg.Zones.MaxUnhealthy = ptr.To(intstr.FromInt32(1))
	cfg.Zones.PauseEvictions = true
	tainted := v1.Taint{Key: taintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: start.Add(-time.Minute)}}
	nodes := []v1.Node{testNode("a-0", "a", true, tainted), testNode("a-1", "a", true), testNode("a-2", "a", false)}
	pods := []v1.Pod{testPod("web", "a-0"), testPod("pending", "")}
	res, err := Run(cfg, nodes, pods, Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	paused := reasons(res, controller.ReasonEvictionPaused)
	if len(paused) != 1 || paused[0].Object() != "pod/ns/web" || paused[0].Offset != 0 ||
		!strings.Contains(paused[0].Message, `zone "a" is PartialDisruption: 2 of 3 nodes unhealthy, more than maxUnhealthy 1`) {
		t.Errorf("paused events = %+v", paused)
	}
	if len(res.Paused) != 1 || res.Paused[0] != (types.NamespacedName{Namespace: "ns", Name: "web"}) || len(res.Evicted) != 0 {
		t.Errorf("Paused %v, Evicted %v; want web paused, nothing evicted", res.Paused, res.Evicted)
	}
	if strings.Join(res.Held, ",") != "a-1" {
		t.Errorf("Held = %v, want a-1", res.Held)
	}
	// Without pauseEvictions the pod goes at once.
	cfg.Zones.PauseEvictions = false
	if res, err = Run(cfg, nodes, pods, Options{Start: start}); err != nil || len(res.Evicted) != 1 {
		t.Errorf("without pauseEvictions: Evicted %v, %v; want web", res.Evicted, err)
	}
}

// TestRunHorizon: Run stops at For, and earlier when nothing is left.
func TestRunHorizon(t *testing.T) {
	var nodes []v1.Node
	for _, n := range []string{"a-0", "a-1", "a-2"} {
		nodes = append(nodes, testNode(n, "a", n != "a-2"))
	}
	cfg := config()
	res, err := Run(cfg, nodes, nil, Options{Start: start, For: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tainted) != 1 || !res.End.Equal(start) {
		t.Errorf("after 5s: Tainted %v, End %v; want a-0 only (the next at 10s), End at the start", res.Tainted, res.End)
	}
	res, err = Run(cfg, nodes, nil, Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Tainted, ",") != "a-0,a-1" || !res.End.Equal(start.Add(10*time.Second)) {
		t.Errorf("Tainted %v, End %v; want a-0,a-1 and End at 10s", res.Tainted, res.End)
	}
}

func TestRunStartFromObjects(t *testing.T) {
	n := testNode("a-0", "a", false)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n.Status.Conditions[0].LastHeartbeatTime = metav1.Time{Time: at}
	res, err := Run(config(), []v1.Node{n}, nil, Options{})
	if err != nil || !res.Start.Equal(at) {
		t.Errorf("Start = %v, %v; want the latest heartbeat %v", res.Start, err, at)
	}
}

func TestRunErrors(t *testing.T) {
	nodes := []v1.Node{testNode("a-0", "a", false)}
	for _, tc := range []struct {
		name  string
		cfg   controller.Config
		nodes []v1.Node
		pods  []v1.Pod
		opts  Options
		want  string
	}{
		{"invalid config", controller.DefaultConfig(), nodes, nil, Options{}, "conditions: at least one row"},
		{"too long", config(), nodes, nil, Options{For: MaxFor + 1}, "(MaxFor)"},
		{"negative", config(), nodes, nil, Options{For: -1}, "(MaxFor)"},
		{"duplicate node", config(), append(nodes, nodes[0]), nil, Options{}, "node a-0 given twice"},
		{"duplicate pod", config(), nodes, []v1.Pod{testPod("p", "a-0"), testPod("p", "a-0")}, Options{}, "pod ns/p given twice"},
		{"unnamed node", config(), []v1.Node{{}}, nil, Options{}, "a node without a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(tc.cfg, tc.nodes, tc.pods, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

const objectsYAML = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a-0, labels: {topology.kubernetes.io/zone: a}}
  status: {conditions: [{type: KernelDeadlock, status: "True"}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: ns}
  spec: {nodeName: a-0, containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Node
metadata: {name: a-1}
`

func TestReadObjects(t *testing.T) {
	nodes, pods, err := ReadObjects(strings.NewReader(objectsYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Name != "a-0" || nodes[1].Name != "a-1" || len(pods) != 1 || pods[0].Spec.NodeName != "a-0" {
		t.Errorf("ReadObjects = %d nodes, %d pods: %+v %+v", len(nodes), len(pods), nodes, pods)
	}
	// JSON, a NodeList whose items carry no kind (as the API serves it).
	nodes, _, err = ReadObjects(strings.NewReader(`{"kind": "NodeList", "items": [{"metadata": {"name": "x"}}]}`))
	if err != nil || len(nodes) != 1 || nodes[0].Name != "x" {
		t.Errorf("ReadObjects(NodeList) = %+v, %v", nodes, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"kind: Service\n", `document 1: kind "Service": want Node, Pod`},
		{"kind: Node\n---\nkind: List\nitems: [{kind: ConfigMap}]\n", `document 2: items[0]: kind "ConfigMap"`},
		{"kind: List\nitems: [{kind: List}]\n", "a List inside a list"},
		{"kind: Node\nmetadata: [\n", "document 1"},
	} {
		if _, _, err := ReadObjects(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadObjects(%q) = %v, want an error naming %q", tc.in, err, tc.want)
		}
	}
	defer func(l int64) { readLimit = l }(readLimit)
	readLimit = 100
	if _, _, err := ReadObjects(strings.NewReader(objectsYAML)); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 100 bytes (MaxReadBytes)") {
		t.Errorf("ReadObjects(over the limit) = %v, want ErrLimit naming MaxReadBytes", err)
	}
}

// FuzzReadObjects: ReadObjects never panics on any input.
func FuzzReadObjects(f *testing.F) {
	f.Add([]byte(objectsYAML))
	f.Add([]byte(`{"kind": "PodList", "items": [{"metadata": {"name": "x"}, "spec": {"nodeName": "n"}}]}`))
	f.Add([]byte("kind: List\nitems: [{kind: List}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = ReadObjects(strings.NewReader(string(data)))
	})
}
