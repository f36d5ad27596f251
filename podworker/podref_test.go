package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWorkPodRef(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	rp := &RunningPod{UID: "u2", Namespace: "rns", Name: "rp"}
	for _, tt := range []struct {
		name    string
		w       Work
		want    types.NamespacedName
		wantStr string
	}{
		{"config pod", Work{UID: "u1", Type: SyncWork, UpdateType: TypeCreate, Pod: pod}, types.NamespacedName{Namespace: "ns", Name: "p"},
			"sync ns/p uid=u1 update=create gen=0"},
		{"runtime-only pod", Work{UID: "u2", Type: TerminatingWork, UpdateType: TypeKill, RunningPod: rp}, types.NamespacedName{Namespace: "rns", Name: "rp"},
			"terminating rns/rp (runtime-only) uid=u2 update=kill gen=0"},
		{"Pod wins over RunningPod", Work{Pod: pod, RunningPod: rp}, types.NamespacedName{Namespace: "ns", Name: "p"}, ""},
		{"zero Work", Work{}, types.NamespacedName{}, ""},
	} {
		if got := tt.w.PodRef(); got != tt.want {
			t.Errorf("%s: PodRef() = %v, want %v", tt.name, got, tt.want)
		}
		if tt.wantStr != "" {
			if got := tt.w.String(); got != tt.wantStr {
				t.Errorf("%s: String() = %q, want %q", tt.name, got, tt.wantStr)
			}
		}
	}
	w := Work{RunningPod: rp}
	if n := testing.AllocsPerRun(100, func() { _ = w.PodRef() }); n != 0 {
		t.Errorf("PodRef allocates %v times, want 0", n)
	}
}
