package draparity

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/kubelifecycle/lifecycle/taints"
)

// Every equivalence class of the inputs: keys, values and effects that are
// empty, equal or different (and an unknown effect), every operator (and
// an unknown one), with and without TolerationSeconds.
var (
	keys      = []string{"", "example.com/a", "example.com/b"}
	values    = []string{"", "x", "y"}
	operators = []resourcev1.DeviceTolerationOperator{"", resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists, "Lt", "bogus"}
	effects   = []resourcev1.DeviceTaintEffect{"", resourcev1.DeviceTaintEffectNone, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, "unknown-effect"}
)

func TestExhaustive(t *testing.T) {
	secs := int64(30)
	n := 0
	for _, tk := range keys {
		for _, tv := range values {
			for _, te := range effects {
				taint := resourcev1.DeviceTaint{Key: tk, Value: tv, Effect: te}
				for _, k := range keys {
					for _, v := range values {
						for _, op := range operators {
							for _, e := range effects {
								for _, s := range []*int64{nil, &secs} {
									tol := resourcev1.DeviceToleration{Key: k, Operator: op, Value: v, Effect: e, TolerationSeconds: s}
									got, want := taints.DeviceToleratesTaint(tol, taint), resourceclaim.ToleratesTaint(tol, taint)
									if got != want {
										t.Errorf("DeviceToleratesTaint(%+v, %+v) = %v, upstream %v", tol, taint, got, want)
									}
									n++
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func FuzzToleratesTaint(f *testing.F) {
	f.Add("example.com/a", "x", "NoExecute", "example.com/a", "Equal", "x", "NoExecute")
	f.Add("", "", "", "", "Exists", "", "")
	f.Add("k", "v", "None", "", "", "v", "None")
	f.Add("k", "v", "weird", "k", "Exists", "", "weird")
	f.Fuzz(func(t *testing.T, tk, tv, te, k, op, v, e string) {
		taint := resourcev1.DeviceTaint{Key: tk, Value: tv, Effect: resourcev1.DeviceTaintEffect(te)}
		tol := resourcev1.DeviceToleration{Key: k, Operator: resourcev1.DeviceTolerationOperator(op), Value: v, Effect: resourcev1.DeviceTaintEffect(e)}
		if got, want := taints.DeviceToleratesTaint(tol, taint), resourceclaim.ToleratesTaint(tol, taint); got != want {
			t.Errorf("DeviceToleratesTaint(%+v, %+v) = %v, upstream %v", tol, taint, got, want)
		}
	})
}
