package controller

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// trimmedPod is what the cache must read back for p: the fields trim.go
// keeps, exactly as p has them.
func trimmedPod(p *v1.Pod) *v1.Pod {
	out := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Generation: p.Generation, CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec:   v1.PodSpec{NodeName: p.Spec.NodeName},
		Status: v1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason},
	}
	if len(p.Spec.Tolerations) > 0 {
		out.Spec.Tolerations = p.Spec.Tolerations
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, c := range p.Status.Conditions {
		if ownedPodCondition(c.Type) {
			out.Status.Conditions = append(out.Status.Conditions, c)
		}
	}
	out.Spec.ResourceClaims, out.Status.ResourceClaimStatuses = p.Spec.ResourceClaims, p.Status.ResourceClaimStatuses
	if e := p.Status.ExtendedResourceClaimStatus; e != nil && e.ResourceClaimName != "" {
		out.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: e.ResourceClaimName}
	}
	return out
}

// TestCachedPodExact: whatever a pod holds, compact or not, the cache
// reads back exactly the trimmed pod (zones, nanoseconds and odd values
// included), and the API server's values take the compact form.
func TestCachedPodExact(t *testing.T) {
	utc := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	odd := time.FixedZone("odd", 3600)
	ready := func(status v1.ConditionStatus, at time.Time) v1.PodCondition {
		return v1.PodCondition{Type: v1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(at), ObservedGeneration: 2}
	}
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager",
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(utc)}
	for _, tc := range []struct {
		name    string
		edit    func(p *v1.Pod)
		compact bool // no podExtra
	}{
		{"as the API server serves it (local zone)", func(p *v1.Pod) {
			p.CreationTimestamp = metav1.NewTime(utc.Local())
			p.Status.Conditions = []v1.PodCondition{ready(v1.ConditionTrue, utc.Local())}
		}, true},
		{"UTC times", func(p *v1.Pod) {}, true},
		{"no UID, resourceVersion, phase or conditions", func(p *v1.Pod) {
			p.UID, p.ResourceVersion, p.Status.Phase, p.Status.Conditions = "", "", "", nil
			p.CreationTimestamp = metav1.Time{}
		}, true},
		{"nanoseconds", func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(utc.Add(7)) }, true},
		{"uppercase UID", func(p *v1.Pod) { p.UID = "6F1C2A34-8B9D-4E5F-A6B7-000000000001" }, false},
		{"UID not a UUID", func(p *v1.Pod) { p.UID = "uid-web-0" }, false},
		{"resourceVersion with a leading zero", func(p *v1.Pod) { p.ResourceVersion = "042" }, false},
		{"resourceVersion not a number", func(p *v1.Pod) { p.ResourceVersion = "rv-7" }, false},
		{"resourceVersion 2^64-1", func(p *v1.Pod) { p.ResourceVersion = "18446744073709551615" }, false},
		{"another zone", func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(utc.In(odd)) }, false},
		{"monotonic reading", func(p *v1.Pod) { p.CreationTimestamp = metav1.Now() }, false},
		{"before 1678", func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)) }, false},
		{"zero time in the local zone", func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Time{}.Local()) }, false},
		{"unknown phase", func(p *v1.Pod) { p.Status.Phase = "Hibernating" }, false},
		{"status reason", func(p *v1.Pod) { p.Status.Reason = "NodeLost" }, false},
		{"Ready and DisruptionTarget", func(p *v1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, disruption)
		}, false},
		{"DisruptionTarget only", func(p *v1.Pod) { p.Status.Conditions = []v1.PodCondition{disruption} }, true},
		{"odd condition status", func(p *v1.Pod) { p.Status.Conditions = []v1.PodCondition{ready("Maybe", utc)} }, false},
		{"condition time in another zone", func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{ready(v1.ConditionFalse, utc.In(odd))}
		}, false},
		{"deleting, owned, tolerations", func(p *v1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(utc))
		}, true},
		{"resource claims", func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("shared")},
				{Name: "scratch", ResourceClaimTemplateName: ptr.To("tmpl")}}
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "scratch", ResourceClaimName: ptr.To("web-0-scratch")}}
			p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "web-0-extended",
				RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "c", ResourceName: "example.com/gpu", RequestName: "r"}}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fullPod()
			p.UID, p.CreationTimestamp = "6f1c2a34-8b9d-4e5f-a6b7-000000000001", metav1.NewTime(utc)
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, ready(v1.ConditionTrue, utc)}
			tc.edit(p)
			cp := newTrimmer().pod(p)
			if got, want := cp.pod(), trimmedPod(p); !reflect.DeepEqual(got, want) {
				t.Errorf("cached pod reads back\n%#v\nwant\n%#v", got, want)
			}
			if (cp.extra == nil) != tc.compact {
				t.Errorf("extra = %+v, want compact %v", cp.extra, tc.compact)
			}
			if cp.GetUID() != p.UID || cp.GetResourceVersion() != p.ResourceVersion || cp.GetCreationTimestamp() != p.CreationTimestamp {
				t.Errorf("getters: %q %q %v", cp.GetUID(), cp.GetResourceVersion(), cp.GetCreationTimestamp())
			}
		})
	}
	if s := unsafe.Sizeof(cachedPod{}); s > 192 {
		t.Errorf("cachedPod is %d bytes, want at most 192", s)
	}
}

// TestCachedPodSameUID compares UIDs in either form.
func TestCachedPodSameUID(t *testing.T) {
	tr := newTrimmer()
	mk := func(uid types.UID) *cachedPod { p := fullPod(); p.UID = uid; return tr.pod(p) }
	const u1, u2 = "6f1c2a34-8b9d-4e5f-a6b7-000000000001", "6f1c2a34-8b9d-4e5f-a6b7-000000000002"
	for _, tc := range []struct {
		a, b types.UID
		same bool
	}{{u1, u1, true}, {u1, u2, false}, {"x", "x", true}, {"x", "y", false}, {u1, "x", false}, {"", "", true}, {u1, "", false}} {
		if got := mk(tc.a).sameUID(mk(tc.b)); got != tc.same {
			t.Errorf("sameUID(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// FuzzCachedPodExact: any UID, resourceVersion, phase, times and condition
// status read back exactly.
func FuzzCachedPodExact(f *testing.F) {
	f.Add("6f1c2a34-8b9d-4e5f-a6b7-000000000001", "42", "Running", int64(1764180000), int64(0), "True", true)
	f.Add("", "", "", int64(0), int64(5), "False", false)
	f.Add("6F1C2A34-8B9D-4E5F-A6B7-00000000000g", "007", "x", int64(-1), int64(999999999), "Maybe", true)
	f.Fuzz(func(t *testing.T, uid, rv, phase string, sec, nsec int64, status string, utc bool) {
		p := fullPod()
		p.UID, p.ResourceVersion, p.Status.Phase = types.UID(uid), rv, v1.PodPhase(phase)
		at := time.Unix(sec, nsec)
		if utc {
			at = at.UTC()
		}
		p.CreationTimestamp = metav1.NewTime(at)
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionStatus(status), LastProbeTime: metav1.NewTime(at)}}
		cp := newTrimmer().pod(p)
		if got, want := cp.pod(), trimmedPod(p); !reflect.DeepEqual(got, want) {
			t.Errorf("cached pod reads back\n%#v\nwant\n%#v", got, want)
		}
	})
}

func TestParseRV(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"", true}, {"0", true}, {"7", true}, {"1234567", true}, {"18446744073709551614", true},
		{"18446744073709551615", false}, {"007", false}, {"00", false}, {"+7", false}, {"-7", false}, {"1_000", false}, {"7a", false}, {" 7", false}} {
		v, ok := parseRV(tc.in)
		if ok != tc.ok || ok && formatRV(v) != tc.in {
			t.Errorf("parseRV(%q) = %d, %v; formats back to %q", tc.in, v, ok, formatRV(v))
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseRV("123456789") }); n != 0 {
		t.Errorf("parseRV allocates %v times, want 0", n)
	}
}
