package taints

import (
	"testing"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// decoder turns fuzz bytes into small taints and tolerations drawn from
// alphabets that exercise every matching branch, Lt/Gt included.
type decoder struct{ b []byte }

func (d *decoder) next() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) pick(n int) int { return int(d.next()) % n }

var (
	fuzzKeys      = []string{"", "a", "b", v1.TaintNodeUnreachable}
	fuzzValues    = []string{"", "1", "10", "-3", "05", "+2", "x", "9223372036854775808"}
	fuzzEffects   = []v1.TaintEffect{"", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}
	fuzzOperators = []v1.TolerationOperator{"", v1.TolerationOpEqual, v1.TolerationOpExists, v1.TolerationOpLt, v1.TolerationOpGt, "Bogus"}
	fuzzSeconds   = []*int64{nil, testutil.Seconds(-1), testutil.Seconds(0), testutil.Seconds(5), testutil.Seconds(300)}
)

func (d *decoder) taints() []v1.Taint {
	out := make([]v1.Taint, d.pick(5))
	for i := range out {
		out[i] = v1.Taint{Key: fuzzKeys[d.pick(len(fuzzKeys))], Value: fuzzValues[d.pick(len(fuzzValues))],
			Effect: fuzzEffects[d.pick(len(fuzzEffects))]}
	}
	return out
}

func (d *decoder) tolerations() []v1.Toleration {
	out := make([]v1.Toleration, d.pick(7))
	for i := range out {
		out[i] = v1.Toleration{Key: fuzzKeys[d.pick(len(fuzzKeys))], Operator: fuzzOperators[d.pick(len(fuzzOperators))],
			Value: fuzzValues[d.pick(len(fuzzValues))], Effect: fuzzEffects[d.pick(len(fuzzEffects))],
			TolerationSeconds: fuzzSeconds[d.pick(len(fuzzSeconds))]}
	}
	return out
}

// referenceMatching is upstream GetMatchingTolerations written as the plain
// loop over ToleratesTaint.
func referenceMatching(taints []v1.Taint, tolerations []v1.Toleration, cmpOps bool) (bool, []v1.Toleration) {
	var used []v1.Toleration
	for i := range taints {
		found := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(klog.Logger{}, &taints[i], cmpOps) {
				used = append(used, tolerations[j])
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, used
}

func FuzzMatchingTolerations(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0, 3, 1, 1, 2, 0, 3, 4})                         // one taint, one Exists toleration
	f.Add([]byte{1, 2, 0, 3, 0, 1, 1, 0, 2, 3, 1, 4})                   // flag on
	f.Add([]byte{1, 1, 1, 2, 3, 1, 1, 0, 1, 3, 3, 1})                   // Lt on numbers
	f.Add([]byte{0, 3, 1, 1, 3, 2, 2, 4, 3, 3, 2, 1, 3, 3, 4, 2, 1, 2}) // several of each
	f.Add([]byte{1, 2, 3, 5, 3, 2, 3, 4, 4, 3, 1, 2, 5, 1, 3, 0})       // bad numbers with Gt
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decoder{b: data}
		cmpOps := d.next()%2 == 1
		taints, tols := d.taints(), d.tolerations()
		opts := MatchOptions{ComparisonOperators: cmpOps}

		wantAll, wantUsed := referenceMatching(taints, tols, cmpOps)
		all, used := opts.MatchingTolerations(taints, tols)
		if all != wantAll || renderTols(used) != renderTols(wantUsed) || len(used) != len(wantUsed) {
			t.Fatalf("MatchingTolerations(%s, %s, cmp=%v) = %v, %q, want %v, %q",
				renderTaints(taints), renderTols(tols), cmpOps, all, renderTols(used), wantAll, renderTols(wantUsed))
		}
		prefix := []v1.Toleration{{Key: "prefix"}}
		all2, used2 := opts.AppendMatchingTolerations(prefix, taints, tols)
		if all2 != wantAll || len(used2) != 1+len(wantUsed) || used2[0].Key != "prefix" || renderTols(used2[1:]) != renderTols(wantUsed) {
			t.Fatalf("AppendMatchingTolerations = %v, %q, want %v, prefix + %q", all2, renderTols(used2), wantAll, renderTols(wantUsed))
		}
		if !cmpOps {
			if a, u := MatchingTolerations(taints, tols); a != wantAll || renderTols(u) != renderTols(wantUsed) {
				t.Fatalf("MatchingTolerations (package) disagrees")
			}
		}

		// judge with equal starts is upstream's processPodOnNode: not all tolerated →
		// now; else now + MinTolerationTime, or forever.
		entries := make([]taintEntry, len(taints))
		for i := range taints {
			entries[i] = taintEntry{taint: taints[i], start: testutil.Epoch}
		}
		v := judge(entries, tols, testutil.Epoch, cmpOps)
		switch {
		case len(taints) == 0:
			if v.kind != vNone {
				t.Fatalf("judge(no taints) = %+v", v)
			}
		case !wantAll:
			if v.kind != vNow || v.tol != -1 || v.taint < 0 {
				t.Fatalf("judge(untolerated) = %+v", v)
			}
		default:
			dur, forever := MinTolerationTime(wantUsed)
			if forever {
				if v.kind != vForever {
					t.Fatalf("judge(forever) = %+v", v)
				}
			} else if v.kind != vAt || !v.at.Equal(testutil.Epoch.Add(dur)) || v.tol < 0 || v.taint < 0 {
				t.Fatalf("judge = %+v, want at +%v", v, dur)
			}
		}
	})
}

// FuzzEvictorOperations drives an Evictor and the reference model with the
// same operation sequence decoded from the input.
func FuzzEvictorOperations(f *testing.F) {
	f.Add(uint8(0), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add(uint8(1), []byte{2, 0, 1, 0, 3, 0, 2, 2, 5, 3, 1, 6, 4, 0, 8, 2, 7, 1})
	f.Add(uint8(2), []byte{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7})
	f.Add(uint8(4), []byte{9, 9, 2, 2, 0, 0, 4, 1, 5, 5, 5, 6, 0, 3, 3, 7, 1})
	f.Fuzz(func(t *testing.T, cfgByte uint8, data []byte) {
		cfg := EvictorConfig{Reschedule: ReschedulePolicy(cfgByte % 3), UseTaintTimeAdded: cfgByte&4 != 0, ComparisonOperators: cfgByte&8 != 0}
		d := &decoder{b: data}
		runModel(t, cfg, func() (int, bool) { return int(d.next()), len(d.b) > 0 })
	})
}
