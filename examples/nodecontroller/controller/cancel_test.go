package controller_test

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestCancellingDeletionEvent: node a goes silent, gets the unreachable
// NoExecute taint at 55s and its pods' evictions are scheduled; it comes
// back at 70s, before the 300s default toleration runs out. The taint's
// removal cancels the scheduled eviction of pod "defaults", so the
// EvictionRecorder
// (upstream's taint-eviction-controller source) records upstream's Normal
// TaintManagerEviction "Cancelling deletion of Pod default/defaults", once;
// pods evicted already or tolerating forever get none.
func TestCancellingDeletionEvent(t *testing.T) {
	t.Parallel()
	rec, evRec := record.NewFakeRecorder(100), record.NewFakeRecorder(100)
	cfg := testConfig()
	cfg.Recorder, cfg.EvictionRecorder = rec, evRec
	f := newFixture(t, cfg, cluster3()...)
	f.pass(true)
	f.advance(70*time.Second, liveExcept(f, "a"))
	if !hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Fatalf("node a not tainted by %v", f.at())
	}
	drain(evRec)
	f.setReady("a", v1.ConditionTrue)
	f.renew("a")
	f.advance(120*time.Second, liveExcept(f))
	if hasTaint(f.node("a"), v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Fatalf("node a still tainted at %v", f.at())
	}
	want := []string{
		"Normal TaintManagerEviction Cancelling deletion of Pod default/defaults",
		"Normal TaintManagerEviction Cancelling deletion of Pod default/short",
	}
	got := drain(evRec)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("EvictionRecorder events after recovery: %q, want %q", got, want)
	}
	for _, e := range drain(rec) {
		if slices.Contains(want, e) {
			t.Errorf("cancellation recorded through Recorder (node-controller): %q", e)
		}
	}
	for _, p := range []string{"defaults", "short"} {
		if f.pod(p) == nil {
			t.Errorf("pod %s evicted after recovery", p)
		}
	}
}
