package controller_test

import (
	"maps"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

// TestReconcileBetaLabels: as upstream's reconcileNodeLabels, the beta OS
// and architecture labels follow the stable ones: added when missing,
// corrected when different, left alone without a stable label. Each write
// is a patch of those labels only that carries the resourceVersion read, and
// a node already consistent gets no write.
func TestReconcileBetaLabels(t *testing.T) {
	t.Parallel()
	stable := map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "arm64"}
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string // the beta labels afterwards; nil: none
		writes int
	}{
		{"missing", stable, map[string]string{monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "arm64"}, 1},
		{"stale", with(stable, monitor.BetaLabelOS, "windows", monitor.BetaLabelArch, "arm64"),
			map[string]string{monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "arm64"}, 1},
		{"consistent", with(stable, monitor.BetaLabelOS, "linux", monitor.BetaLabelArch, "arm64"),
			map[string]string{monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "arm64"}, 0},
		{"no-stable", map[string]string{"example.com/x": "y"}, nil, 0},
		{"beta-only", map[string]string{monitor.BetaLabelOS: "plan9"}, map[string]string{monitor.BetaLabelOS: "plan9"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := readyNode("a", "z1")
			maps.Copy(n.Labels, tc.labels)
			f := newFixture(t, testConfig(), n, lease("a"))
			f.pass(true)
			got := f.node("a").Labels
			for _, k := range []string{monitor.BetaLabelOS, monitor.BetaLabelArch} {
				if got[k] != tc.want[k] {
					t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], tc.want[k], got)
				}
			}
			if got["example.com/x"] != tc.labels["example.com/x"] || got[v1.LabelTopologyZone] != "z1" {
				t.Errorf("other labels changed: %v", got)
			}
			var writes int
			for _, act := range f.actions("patch", "nodes", "") {
				p := string(act.(k8stesting.PatchAction).GetPatch())
				if !labelPatch(p) {
					continue
				}
				writes++
				if !containsRV(p) {
					t.Errorf("label patch %s carries no resourceVersion: a blind write", p)
				}
			}
			if writes != tc.writes {
				t.Errorf("%d label patches, want %d", writes, tc.writes)
			}
		})
	}
}

// TestReconcileBetaLabelsConflict: another writer changes the node between
// the controller's cached read and its label patch; the patch fails with a
// conflict, the retry reads the API server, and both writes survive.
func TestReconcileBetaLabelsConflict(t *testing.T) {
	t.Parallel()
	n := readyNode("a", "z1")
	n.Labels[v1.LabelOSStable] = "linux"
	var raced atomic.Bool
	f := newFixture(t, testConfig())
	f.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !labelPatch(string(a.(k8stesting.PatchAction).GetPatch())) || raced.Swap(true) {
			return false, nil, nil
		}
		obj, err := f.client.Tracker().Get(nodesGVR, "", "a")
		if err != nil {
			return true, nil, err
		}
		n := obj.(*v1.Node)
		n.Labels["example.com/concurrent"] = "yes"
		if _, _, err := f.server.store(nodesGVR, "", n); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	f.create(n)
	f.create(lease("a"))
	f.settle()
	f.pass(true)
	if !raced.Load() {
		t.Fatal("the concurrent writer never ran")
	}
	got := f.node("a").Labels
	if got[monitor.BetaLabelOS] != "linux" || got["example.com/concurrent"] != "yes" {
		t.Errorf("labels = %v, want beta os linux and the concurrent writer's label", got)
	}
	if len(f.actions("get", "nodes", "")) == 0 {
		t.Errorf("no API read of the node after the conflict")
	}
}

// labelPatch reports whether patch sets labels (the controller's other node
// patches set spec.taints).
func labelPatch(patch string) bool {
	var p struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	return jsonUnmarshal(patch, &p) == nil && len(p.Metadata.Labels) > 0
}

// with returns a copy of m with the key, value pairs kv set.
func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
