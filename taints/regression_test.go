package taints

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	v1 "k8s.io/api/core/v1"
)

// Regression tests for upstream bugs, named after the upstream issue
// (kubernetes/kubernetes) and run as step tables.

// #102993: lengthening tolerationSeconds of a pending eviction has no effect
// upstream ("lengthening toleration shouldn't work"). We keep that by
// default and fix it with RescheduleRecompute.
func TestIssue102993LengtheningToleration(t *testing.T) {
	steps := func(want string) []step {
		return []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{100 * s, setPod{pod("a", "n1", tolFor(unreachable, 3600))}, ""},
			{100 * s, next{}, want},
		}
	}
	t.Run("default keeps the fire time", func(t *testing.T) { runSteps(t, EvictorConfig{}, steps("+300s")) })
	t.Run("earlier keeps it too", func(t *testing.T) { runSteps(t, EvictorConfig{Reschedule: RescheduleEarlier}, steps("+300s")) })
	t.Run("recompute postpones", func(t *testing.T) { runSteps(t, EvictorConfig{Reschedule: RescheduleRecompute}, steps("+3600s")) })
}

// #108982 (and #85980): shortening tolerationSeconds, or a new taint with a
// shorter toleration, does not bring a pending eviction forward upstream.
// Default: unchanged; RescheduleEarlier and RescheduleRecompute: forward.
func TestIssue108982ShorteningToleration(t *testing.T) {
	shorten := func(want string) []step {
		return []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 3600))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{100 * s, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{100 * s, next{}, want},
		}
	}
	newTaint := func(want string) []step { // #85980
		return []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 3600), tolFor(notReady, 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne(unreachable), ne(notReady)}}, ""},
			{100 * s, next{}, want},
		}
	}
	t.Run("default ignores a shorter toleration", func(t *testing.T) { runSteps(t, EvictorConfig{}, shorten("+3600s")) })
	t.Run("earlier applies it from the taint", func(t *testing.T) { runSteps(t, EvictorConfig{Reschedule: RescheduleEarlier}, shorten("+300s")) })
	t.Run("recompute applies it from the taint", func(t *testing.T) { runSteps(t, EvictorConfig{Reschedule: RescheduleRecompute}, shorten("+300s")) })
	t.Run("default ignores a new taint (#85980)", func(t *testing.T) { runSteps(t, EvictorConfig{}, newTaint("+3600s")) })
	t.Run("earlier applies a new taint (#85980)", func(t *testing.T) { runSteps(t, EvictorConfig{Reschedule: RescheduleEarlier}, newTaint("+160s")) })
}

// #90794, fixed upstream by #93722: when the remaining taints are tolerated
// forever, a pending eviction must be cancelled.
func TestIssue90794ForeverToleratedCancelsPendingEviction(t *testing.T) {
	for _, cfg := range []EvictorConfig{{}, {Reschedule: RescheduleEarlier}, {Reschedule: RescheduleRecompute}} {
		runSteps(t, cfg, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300), tolForever(unreachable))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ne(unreachable)}}, ""},
			{0, next{}, "+300s"},
			{100 * s, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{100 * s, next{}, "none"},
			{100 * s, explain{"a"}, "ToleratedForever unreachable/forever"},
			{400 * s, due{}, ""},
		})
	}
}

// #107543, #110401, #125332: after a successful eviction, a pod re-created
// with the same name (a StatefulSet pod) was never evicted again upstream.
// Also the post-1.36 "running worker completion does not remove replacement":
// a late acknowledgement of the old pod must not touch the new one.
func TestIssue107543RecreatedPodIsEvictedAgain(t *testing.T) {
	t.Run("after Done and DeletePod", func(t *testing.T) {
		runSteps(t, EvictorConfig{}, []step{
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, setPod{podUID("web-0", "n1", "uid-1")}, ""},
			{0, due{}, "default/web-0@+0s:NotTolerated#1"},
			{1 * s, done{"web-0"}, ""},
			{2 * s, deletePod{"web-0"}, ""},
			{3 * s, setPod{podUID("web-0", "n1", "uid-2")}, ""},
			{3 * s, due{}, "default/web-0@+3s:NotTolerated#1"},
		})
	})
	t.Run("new UID seen before the old pod's delete event", func(t *testing.T) {
		runSteps(t, EvictorConfig{}, []step{
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, setPod{podUID("web-0", "n1", "uid-1")}, ""},
			{0, due{}, "default/web-0@+0s:NotTolerated#1"},
			{1 * s, done{"web-0"}, ""},
			{3 * s, setPod{podUID("web-0", "n1", "uid-2")}, ""},
			{3 * s, due{}, "default/web-0@+3s:NotTolerated#1"},
		})
	})
	// Two workers: the old pod's worker acknowledges late, while the new
	// pod's eviction is handed out to another worker. Done(key) cannot tell
	// the two apart; DoneEviction and RetryEviction check the UID, so the
	// new pod's eviction is neither marked done nor handed out twice.
	t.Run("late acknowledgement while the new pod is handed out", func(t *testing.T) {
		runSteps(t, EvictorConfig{}, []step{
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, setPod{podUID("web-0", "n1", "uid-1")}, ""},
			{0, due{}, "default/web-0@+0s:NotTolerated#1"}, // worker A
			{1 * s, setPod{podUID("web-0", "n1", "uid-2")}, ""},
			{1 * s, due{}, "default/web-0@+1s:NotTolerated#1"}, // worker B
			{2 * s, doneEv{"web-0", "uid-1"}, ""},              // A, late
			{2 * s, retryEv{"web-0", "uid-1", 0}, ""},          // A, late and wrong
			{2 * s, explain{"web-0"}, "HandedOut@+1s unreachable/untolerated"},
			{2 * s, due{}, ""},
			{3 * s, retryEv{"web-0", "uid-2", 10 * s}, ""}, // B's deletion failed
			{3 * s, explain{"web-0"}, "Retrying@+13s unreachable/untolerated attempts=1"},
			{13 * s, due{}, "default/web-0@+13s:NotTolerated#2"},
			{14 * s, doneEv{"web-0", "uid-2"}, ""},
			{14 * s, explain{"web-0"}, "Done unreachable/untolerated attempts=1"},
		})
	})
	t.Run("late acknowledgement of the replaced pod", func(t *testing.T) {
		runSteps(t, EvictorConfig{}, []step{
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, setPod{podUID("web-0", "n1", "uid-1", tolFor(unreachable, 60))}, ""},
			{60 * s, due{}, "default/web-0@+60s:TolerationExpired#1"},
			{61 * s, setPod{podUID("web-0", "n1", "uid-2", tolFor(unreachable, 60))}, ""},
			{62 * s, done{"web-0"}, ""}, // the old pod's deletion finishing late
			{62 * s, retry{"web-0", 0}, ""},
			{62 * s, explain{"web-0"}, "Scheduled@+121s unreachable/60s from +61s"},
			{121 * s, due{}, "default/web-0@+121s:TolerationExpired#1"},
		})
	})
}

// #140639: upstream tries a failed deletion 5 times, 10ms apart, then
// abandons the eviction. Here it is due again after every Retry, for as long
// as the pod must go.
func TestIssue140639FailedDeletionIsRetriedForever(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	now := testutil.At(0)
	e.SetPod(now, pod("a", "n1"))
	e.SetNodeTaints(now, "n1", []v1.Taint{ne(unreachable)})
	for attempt := 1; attempt <= 20; attempt++ {
		evs := e.Due(now)
		if len(evs) != 1 || evs[0].Attempt != attempt || evs[0].Pod != key("a") {
			t.Fatalf("Due(+%v) = %s, want default/a attempt %d", now.Sub(testutil.Epoch), renderEvictions(evs), attempt)
		}
		e.Retry(now, key("a"), time.Duration(attempt)*time.Second) // e.g. a webhook denies the deletion
		if x := e.Explain(now, key("a")); x.State != EvictionRetrying || x.Attempts != attempt {
			t.Fatalf("Explain after %d failures = %v attempts %d", attempt, x.State, x.Attempts)
		}
		now = now.Add(time.Duration(attempt) * time.Second)
	}
	evs := e.Due(now)
	e.Done(key("a"))
	if len(evs) != 1 || e.Explain(now, key("a")).State != EvictionDone {
		t.Fatalf("the 21st attempt was not handed out: %s", renderEvictions(evs))
	}
}

// #108268: timers live in memory, so a controller restart restarts every
// countdown at "restart + toleration". With UseTaintTimeAdded the countdown
// starts at the taint's TimeAdded (and the pod's creationTimestamp), which
// survive restarts.
func TestIssue108268RestartKeepsCountdown(t *testing.T) {
	taint := added(ne(unreachable), 0)
	p := pod("a", "n1", tolFor(unreachable, 300))
	p.CreationTimestamp = *testutil.MetaTime(testutil.At(-time.Hour))
	before := []step{
		{0, setPod{p}, ""},
		{0, setTaints{"n1", []v1.Taint{taint}}, ""},
		{0, next{}, "+300s"},
	}
	// The first controller dies at +200s; a new one starts from scratch.
	after := func(want string) []step {
		return []step{
			{200 * s, setTaints{"n1", []v1.Taint{taint}}, ""},
			{200 * s, setPod{p}, ""},
			{200 * s, next{}, want},
		}
	}
	t.Run("upstream default restarts the countdown", func(t *testing.T) {
		runSteps(t, EvictorConfig{}, before)
		runSteps(t, EvictorConfig{}, after("+500s"))
	})
	t.Run("UseTaintTimeAdded keeps it", func(t *testing.T) {
		cfg := EvictorConfig{UseTaintTimeAdded: true}
		runSteps(t, cfg, before)
		runSteps(t, cfg, append(after("+300s"), step{300 * s, due{}, "default/a@+300s:TolerationExpired#1"}))
	})
	t.Run("UseTaintTimeAdded: a restart after the deadline evicts at once", func(t *testing.T) {
		runSteps(t, EvictorConfig{UseTaintTimeAdded: true}, []step{
			{400 * s, setTaints{"n1", []v1.Taint{taint}}, ""},
			{400 * s, setPod{p}, ""},
			{400 * s, due{}, "default/a@+300s:TolerationExpired#1"},
		})
	})
}

// No upstream issue: processPodOnNode (taint_eviction.go) with an empty taint
// list cancels but falls through to "all tolerated, no toleration used",
// minimum 0, and deletes the pod at once. Empty taints must only cancel.
func TestEmptyTaintsFallThroughNeverEvicts(t *testing.T) {
	runSteps(t, EvictorConfig{}, []step{
		{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
		{0, setPod{pod("b", "n1")}, ""},
		{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
		{0, setTaints{"n1", []v1.Taint{}}, ""},
		{0, due{}, ""},
		{0, setTaints{"n1", nil}, ""},
		{0, setPod{pod("c", "n1")}, ""},
		{time.Hour, due{}, ""},
		{time.Hour, explain{"b"}, "NodeNotTainted"},
	})
	if all, used := MatchingTolerations(nil, nil); !all || used != nil {
		t.Errorf("MatchingTolerations(nil, nil) = %v, %v, want true, nil", all, used)
	}
}

// #120815, fixed upstream in 1.34 by #120816: the NoExecute decision used the
// Ready condition observed before the health update, so a node the monitor
// pass had just written Unknown was queued for tainting one period later.
// Fed nodehealth's CurrentReady, DecideNoExecute queues it in the same pass.
func TestIssue120815NoExecuteDecidedInTheSamePass(t *testing.T) {
	health, err := nodehealth.NewTracker(nodehealth.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	node := testutil.WithReady(testutil.Node("n1", testutil.Epoch), v1.ConditionTrue, testutil.Epoch, testutil.Epoch)
	for _, tt := range []struct {
		at       time.Duration
		current  NoExecuteAction
		observed NoExecuteAction
	}{
		{0, NoExecuteRemove, NoExecuteRemove},
		{50 * s, NoExecuteRemove, NoExecuteRemove},
		// The pass that writes Unknown: queued now (1.34+), not next pass.
		{55 * s, NoExecuteQueue, NoExecuteRemove},
	} {
		res, err := health.Observe(testutil.At(tt.at), node, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, taint := DecideNoExecute(res.CurrentReady, node.Spec.Taints); got != tt.current ||
			(got == NoExecuteQueue && taint.Key != unreachable) {
			t.Errorf("+%v: DecideNoExecute(CurrentReady %s) = %v %s, want %v", tt.at, res.CurrentReady.Status, got, taint.ToString(), tt.current)
		}
		if got, _ := DecideNoExecute(res.ObservedReady, node.Spec.Taints); got != tt.observed {
			t.Errorf("+%v: DecideNoExecute(ObservedReady %s) = %v, want %v (pre-1.34)", tt.at, res.ObservedReady.Status, got, tt.observed)
		}
	}
}
