package monitor_test

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
)

func TestReconcileLabels(t *testing.T) {
	const os, arch = v1.LabelOSStable, v1.LabelArchStable
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{"nil labels", nil, nil},
		{"no stable labels", map[string]string{"a": "b"}, nil},
		{"both missing", map[string]string{os: "linux", arch: "amd64"},
			map[string]string{monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "amd64"}},
		{"one stale", map[string]string{os: "linux", arch: "amd64", monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "arm"},
			map[string]string{monitor.BetaLabelArch: "amd64"}},
		{"empty stable value is copied", map[string]string{os: ""}, map[string]string{monitor.BetaLabelOS: ""}},
		{"consistent", map[string]string{os: "linux", monitor.BetaLabelOS: "linux"}, nil},
		{"beta without stable is kept", map[string]string{monitor.BetaLabelOS: "plan9"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := monitor.ReconcileLabels(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}})
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("ReconcileLabels(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
	if got := monitor.ReconcileLabels(nil); got != nil {
		t.Errorf("ReconcileLabels(nil) = %v, want nil", got)
	}
}

// The check runs on every node event: a consistent node costs nothing.
func TestReconcileLabelsConsistentAllocatesNothing(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64", monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "amd64"}}}
	if a := testing.AllocsPerRun(100, func() { _ = monitor.ReconcileLabels(n) }); a != 0 {
		t.Errorf("ReconcileLabels on a consistent node: %v allocs, want 0", a)
	}
}

// BenchmarkReconcileLabels: the check on every node event, for a node
// whose labels are consistent (the steady state) and one missing both.
func BenchmarkReconcileLabels(b *testing.B) {
	for _, bc := range []struct {
		name   string
		labels map[string]string
	}{
		{"consistent", map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64", monitor.BetaLabelOS: "linux", monitor.BetaLabelArch: "amd64"}},
		{"missing", map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"}},
	} {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: bc.labels}}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = monitor.ReconcileLabels(n)
			}
		})
	}
}
