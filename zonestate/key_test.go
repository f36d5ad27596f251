package zonestate

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func labelled(labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
}

const (
	betaZone   = v1.LabelFailureDomainBetaZone
	betaRegion = v1.LabelFailureDomainBetaRegion
	gaZone     = v1.LabelTopologyZone
	gaRegion   = v1.LabelTopologyRegion
)

func TestKeySteps(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
		want string
	}{
		{"nil node", nil, ""},
		{"nil labels", labelled(nil), ""},
		{"empty labels", labelled(map[string]string{}), ""},
		{"unrelated labels", labelled(map[string]string{"kubernetes.io/hostname": "n"}), ""},
		{"GA region and zone", labelled(map[string]string{gaRegion: "r1", gaZone: "z1"}), "r1:\x00:z1"},
		{"beta region and zone", labelled(map[string]string{betaRegion: "r1", betaZone: "z1"}), "r1:\x00:z1"},
		{"beta wins over GA with different values",
			labelled(map[string]string{betaRegion: "old", betaZone: "oldz", gaRegion: "new", gaZone: "newz"}), "old:\x00:oldz"},
		{"empty beta zone still wins over GA zone",
			labelled(map[string]string{betaZone: "", gaZone: "z1", gaRegion: "r1"}), "r1:\x00:"},
		{"empty beta region still wins over GA region",
			labelled(map[string]string{betaRegion: "", gaRegion: "r1", gaZone: "z1"}), ":\x00:z1"},
		{"empty beta labels hide GA ones: key is empty",
			labelled(map[string]string{betaRegion: "", betaZone: "", gaRegion: "r1", gaZone: "z1"}), ""},
		{"each dimension falls back on its own",
			labelled(map[string]string{betaZone: "bz", gaRegion: "gr"}), "gr:\x00:bz"},
		{"zone only", labelled(map[string]string{gaZone: "z1"}), ":\x00:z1"},
		{"region only", labelled(map[string]string{gaRegion: "r1"}), "r1:\x00:"},
		{"both present and empty", labelled(map[string]string{gaRegion: "", gaZone: ""}), ""},
		{"colons cannot collide (a:b + c)", labelled(map[string]string{gaRegion: "a:b", gaZone: "c"}), "a:b:\x00:c"},
		{"colons cannot collide (a + b:c)", labelled(map[string]string{gaRegion: "a", gaZone: "b:c"}), "a:\x00:b:c"},
	}
	for _, tt := range tests {
		var before map[string]string
		if tt.node != nil {
			before = maps.Clone(tt.node.Labels)
		}
		if got := Key(tt.node); got != tt.want {
			t.Errorf("%s: Key(%v) = %q, want %q", tt.name, labelsOf(tt.node), got, tt.want)
		}
		if tt.node != nil && !maps.Equal(before, tt.node.Labels) {
			t.Errorf("%s: Key modified the labels: %v, were %v", tt.name, tt.node.Labels, before)
		}
		// KeyLabels gives the parts of the same key, without allocating.
		region, zone := KeyLabels(tt.node)
		if joined := region + keySeparator + zone; (tt.want == "" && (region != "" || zone != "")) || (tt.want != "" && joined != tt.want) {
			t.Errorf("%s: KeyLabels = %q, %q; want the parts of %q", tt.name, region, zone, tt.want)
		}
		if a := testing.AllocsPerRun(10, func() { KeyLabels(tt.node) }); a != 0 {
			t.Errorf("%s: KeyLabels allocated %v times", tt.name, a)
		}
	}
}

func labelsOf(n *v1.Node) any {
	if n == nil {
		return nil
	}
	return n.Labels
}
