package podworker

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// started returns the rows that create pod p and run its first sync.
func started(p *v1.Pod) []step {
	return []step{
		{0, upd(TypeCreate, p), "accepted"},
		{0, next(), "sync " + short(p.UID) + " create"},
		{0, done(short(p.UID), ok), "ok"},
	}
}

func rows(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestUpdatePodSteps follows UpdatePod step by step (upstream UpdatePod).
func TestUpdatePodSteps(t *testing.T) {
	a := pod("a")
	tests := []struct {
		name  string
		steps []step
	}{
		{"1: runtime-only pod with a non-kill update is rejected before any record exists", []step{
			{0, send(UpdateOptions{Type: TypeSync, RunningPod: runtimePod("a")}), "rejected"},
			{0, query("a"), "could-run"},
			{0, deadline(), "none"},
		}},
		{"1: Pod and RunningPod both set: RunningPod is ignored", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: a, RunningPod: runtimePod("a")}), "accepted"},
			{0, next(), "sync a create"},
			{0, query("a"), "could-run"},
		}},
		{"2: first-sight shortcut needs a terminal phase", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: a, RuntimeTerminated: true}), "accepted"},
			{0, next(), "sync a create"},
		}},
		{"2: first-sight shortcut needs RuntimeTerminated", []step{
			{0, send(UpdateOptions{Type: TypeCreate, Pod: phase(a, v1.PodFailed)}), "accepted"},
			{0, query("a"), "could-run,requested"},
			{0, next(), "terminating a create g=30"},
		}},
		{"2: RuntimeTerminated matters only on first sight", rows(started(a), []step{
			{1 * s, send(UpdateOptions{Type: TypeUpdate, Pod: phase(a, v1.PodFailed), RuntimeTerminated: true}), "accepted"},
			{1 * s, query("a"), "could-run,requested"},
			{1 * s, next(), "terminating a update g=30"},
		})},
		{"3: runtime-only kill of a known pod terminates it with its config", rows(started(a), []step{
			{1 * s, rtKill("a", testutil.Seconds(1)), "accepted"},
			{1 * s, next(), "terminating a kill g=1"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
			{2 * s, next(), "terminated a sync"},
		})},
		{"3: runtime-only kill with a pending (unstarted) config pod uses it", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, rtKill("a", nil), "accepted"},
			{0, next(), "terminating a kill g=30"},
		}},
		{"4: create while terminating requests a restart and is dropped", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, upd(TypeCreate, a), "restart-requested"},
			{1 * s, next(), "terminating a kill g=30"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, next(), "terminated a sync"},
			{3 * s, done("a", ok), "ok"},
			{3 * s, upd(TypeCreate, a), "restart-requested"},
			{3 * s, upd(TypeUpdate, a), "ignored-finished"},
			{3 * s, upd(TypeSync, a), "ignored-finished"},
			{3 * s, kill(a, nil, true), "ignored-finished"},
			{3 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove"},
		})},
		{"4: create of a pod first seen terminating is not a restart", []step{
			{0, upd(TypeCreate, deleting(a, 5)), "accepted"},
			{0, next(), "terminating a create g=5"},
		}},
		{"6: first match wins, flags are sticky: terminal then deleted", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, phase(a, v1.PodSucceeded)), "accepted"},
			{1 * s, upd(TypeUpdate, deleting(phase(a, v1.PodSucceeded), 30)), "accepted"},
			{1 * s, next(), "terminating a update g=30"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
		})},
		{"6: deleting then evicted: evicted too", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, deleting(a, 30)), "accepted"},
			{1 * s, query("a"), "could-run,requested"},
			{1 * s, kill(a, nil, true), "accepted"},
			{1 * s, query("a"), "could-run,requested,content-remove"},
		})},
		{"6: deleting, then an eviction carried by a non-kill update: evicted too", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, deleting(a, 30)), "accepted"},
			{1 * s, send(UpdateOptions{Type: TypeUpdate, Pod: deleting(a, 30), Kill: &KillOptions{Evict: true}}), "accepted"},
			{1 * s, query("a"), "could-run,requested,content-remove"},
		})},
		{"9: a replaced pending update keeps its place in line", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, upd(TypeCreate, pod("b")), "accepted"},
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, drain(), "sync a update; sync b create"},
		}},
		{"9: steps due at the same instant come out in the order they became runnable", []step{
			{0, upd(TypeCreate, pod("c")), "accepted"},
			{0, upd(TypeCreate, pod("b")), "accepted"},
			{0, upd(TypeCreate, pod("e")), "accepted"},
			{0, upd(TypeCreate, a), "accepted"},
			{0, upd(TypeCreate, pod("d")), "accepted"},
			{0, drain(), "sync c create; sync b create; sync e create; sync a create; sync d create"},
		}},
		{"6: kill options on a non-kill update before termination are ignored", rows(started(a), []step{
			{1 * s, send(UpdateOptions{Type: TypeUpdate, Pod: a, Kill: &KillOptions{Evict: true, GracePeriodOverride: testutil.Seconds(2)}}), "accepted"},
			{1 * s, query("a"), "could-run"},
			{1 * s, next(), "sync a update"},
			{2 * s, done("a", ok), "ok"},
			{3 * s, kill(a, nil, false), "accepted"},
			{3 * s, next(), "terminating a kill g=30"},
		})},
		{"7: terminated: runtime-only kill dropped, other updates replace the pending one", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, next(), "terminating a kill g=30"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, rtKill("a", nil), "ignored-terminated"},
			{2 * s, kill(deleting(a, 0), testutil.Seconds(1), true), "accepted"},
			{2 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
			{2 * s, next(), "terminated a kill"},
		})},
		{"7: terminating: a later update keeps the grace period", rows(started(a), []step{
			{1 * s, kill(a, testutil.Seconds(10), false), "accepted"},
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "terminating a update g=10"},
		})},
		{"9: only the latest update is kept", []step{
			{0, upd(TypeCreate, a), "accepted"},
			{0, upd(TypeUpdate, a), "accepted"},
			{0, upd(TypeSync, a), "accepted"},
			{0, next(), "sync a sync"},
			{0, next(), "none"},
		}},
		{"9: a new update does not wait for a scheduled retry", rows(started(a), []step{
			{1 * s, deadline(), "+1m0s"},
			{5 * s, upd(TypeUpdate, a), "accepted"},
			{5 * s, deadline(), "+5s"},
			{5 * s, next(), "sync a update"},
		})},
		{"10: no cancel when nothing is in flight", rows(started(a), []step{
			{1 * s, kill(a, testutil.Seconds(20), false), "accepted"},
			{1 * s, kill(a, testutil.Seconds(10), false), "accepted"},
			{1 * s, next(), "terminating a kill g=10"},
		})},
		{"10: cancel on a shorter grace while terminating, not on an equal or longer one", rows(started(a), []step{
			{1 * s, kill(a, testutil.Seconds(20), false), "accepted"},
			{1 * s, next(), "terminating a kill g=20"},
			{2 * s, kill(a, testutil.Seconds(20), false), "accepted"},
			{2 * s, kill(a, testutil.Seconds(25), false), "accepted"},
			{2 * s, upd(TypeUpdate, deleting(a, 5)), "accepted cancel"},
			{3 * s, done("a", failed), "ok"},
			{3 * s, next(), "terminating a update g=5"},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, newWorkers(t), tt.steps) })
	}
}

// TestEffectiveGrace covers the grace period rules of upstream calculateEffectiveGracePeriod.
func TestEffectiveGrace(t *testing.T) {
	sec := testutil.Seconds
	withDel := func(del, spec *int64) *v1.Pod {
		p := specGrace(pod("a"), spec)
		p.DeletionGracePeriodSeconds = del
		return p
	}
	tests := []struct {
		name      string
		cur       int64
		pod       *v1.Pod
		override  *int64
		want      int64
		shortened bool
	}{
		{"nothing at all gives 1", 0, nil, nil, 1, false},
		{"no spec, no override gives 1", 0, withDel(nil, nil), nil, 1, false},
		{"spec when unset", 0, withDel(nil, sec(30)), nil, 30, false},
		{"deletion grace wins over spec", 0, withDel(sec(10), sec(30)), nil, 10, false},
		{"first override may exceed the spec", 0, withDel(nil, sec(30)), sec(45), 45, false},
		{"spec never raises a set value", 45, withDel(nil, sec(30)), nil, 45, false},
		{"override never raises", 10, withDel(nil, sec(30)), sec(20), 10, false},
		{"override shortens", 10, withDel(nil, sec(30)), sec(5), 5, true},
		{"deletion then override: smaller wins", 0, withDel(sec(10), sec(30)), sec(3), 3, false},
		{"force delete gives 1", 30, withDel(sec(0), sec(30)), nil, 1, true},
		{"override 0 gives 1", 0, nil, sec(0), 1, false},
		{"negative deletion grace counts as 0", 30, withDel(sec(-5), sec(30)), nil, 1, true},
		{"negative override counts as 0", 30, nil, sec(-1), 1, true},
		{"negative spec gives 1", 0, withDel(nil, sec(-3)), nil, 1, false},
		{"spec 0 gives 1", 0, withDel(nil, sec(0)), nil, 1, false},
		{"already 1, force delete: not shortened", 1, withDel(sec(0), nil), nil, 1, false},
		{"same value: not shortened", 10, withDel(sec(10), nil), sec(10), 10, false},
		// Upstream read the 0 of a force delete as "unset" and took the
		// larger override (found by TestRandomized).
		{"force delete then a larger override: stays 1", 0, withDel(sec(0), sec(30)), sec(28), 1, false},
		{"set to 1, force delete and a larger override: stays 1", 1, withDel(sec(0), sec(30)), sec(28), 1, false},
	}
	for _, tt := range tests {
		g, sh := effectiveGrace(tt.cur, tt.pod, tt.override)
		if g != tt.want || sh != tt.shortened {
			t.Errorf("%s: effectiveGrace(%d, …) = %d, %v, want %d, %v", tt.name, tt.cur, g, sh, tt.want, tt.shortened)
		}
	}
}

// TestGracePeriodThroughUpdates checks the grace period as handed out.
func TestGracePeriodThroughUpdates(t *testing.T) {
	a := pod("a")
	runSteps(t, newWorkers(t), rows(started(a), []step{
		{1 * s, kill(a, testutil.Seconds(45), false), "accepted"},
		{1 * s, next(), "terminating a kill g=45"}, // first value may exceed the spec (30)
		{2 * s, done("a", failed), "ok"},
		{2 * s, upd(TypeUpdate, deleting(a, 60)), "accepted"}, // longer: ignored
		{2 * s, next(), "terminating a update g=45"},
		{3 * s, upd(TypeUpdate, deleting(a, 0)), "accepted cancel"}, // force delete
		{4 * s, done("a", failed), "ok"},
		{4 * s, next(), "terminating a update g=1"},
		{5 * s, kill(a, testutil.Seconds(-7), false), "accepted"}, // negative: clamp, stays 1
		{6 * s, done("a", failed), "ok"},
		{6 * s, next(), "terminating a kill g=1"},
	}))
}

// TestRejected covers malformed input: each is OutcomeRejected with an error
// wrapping ErrInvalidUpdate, and changes nothing.
func TestRejected(t *testing.T) {
	noUID := pod("a")
	noUID.UID = ""
	for _, o := range []UpdateOptions{
		{},
		{Type: TypeCreate},
		{Type: 0, Pod: pod("a")},
		{Type: 9, Pod: pod("a")},
		{Type: TypeCreate, Pod: noUID},
		{Type: TypeUpdate, RunningPod: runtimePod("a")},
		{Type: TypeKill, RunningPod: &RunningPod{Name: "x", Namespace: ns}},
	} {
		w := newWorkers(t)
		r := w.UpdatePod(testutil.Epoch, o)
		if r.Outcome != OutcomeRejected || !errors.Is(r.Err, ErrInvalidUpdate) || r.CancelInFlight {
			t.Errorf("UpdatePod(%+v) = %+v, want rejected wrapping ErrInvalidUpdate", o, r)
		}
		if st := w.Stats(); st.Known != 0 {
			t.Errorf("UpdatePod(%+v) created %d records, want 0", o, st.Known)
		}
		if _, ok := w.NextDeadline(); ok {
			t.Errorf("UpdatePod(%+v) scheduled work", o)
		}
	}
}

// TestTimeBackwards: time going backwards counts as no time elapsed.
func TestTimeBackwards(t *testing.T) {
	a := pod("a")
	runSteps(t, newWorkers(t), []step{
		{100 * s, upd(TypeCreate, a), "accepted"},
		{100 * s, next(), "sync a create"},
		{100 * s, done("a", ok), "ok"},
		{100 * s, deadline(), "+2m40s"},
		{50 * s, next(), "none"},                 // the clock jumped back: still 100 s
		{50 * s, upd(TypeUpdate, a), "accepted"}, // runnable at the effective now, 100 s
		{50 * s, deadline(), "+1m40s"},
		{10 * s, next(), "sync a update"},
		{10 * s, done("a", failed), "ok"},
		{10 * s, deadline(), "+1m50s"}, // 100 s + backoff
	})
}

// TestMirrorPod: a step carries the mirror pod of the update it delivers; a
// replay carries the last one known.
func TestMirrorPod(t *testing.T) {
	st := staticPod("st", "st1")
	m1, m2 := pod("st"), pod("st")
	w := newWorkers(t)
	now := testutil.Epoch
	mirrorOf := func(o UpdateOptions, at time.Time) *v1.Pod {
		t.Helper()
		if o.Type != 0 {
			w.UpdatePod(at, o)
		}
		work, ok := w.Next(at)
		if !ok {
			t.Fatalf("Next(%v) = false", at)
		}
		w.Complete(at, work, Result{})
		return work.MirrorPod
	}
	if got := mirrorOf(UpdateOptions{Type: TypeCreate, Pod: st, MirrorPod: m1}, now); got != m1 {
		t.Errorf("create with m1: MirrorPod = %p, want m1 %p", got, m1)
	}
	if got := mirrorOf(UpdateOptions{Type: TypeUpdate, Pod: st}, now); got != nil {
		t.Errorf("update without a mirror: MirrorPod = %p, want nil (as upstream)", got)
	}
	if got := mirrorOf(UpdateOptions{}, now.Add(time.Minute)); got != m1 {
		t.Errorf("resync: MirrorPod = %p, want the last known m1 %p", got, m1)
	}
	if got := mirrorOf(UpdateOptions{Type: TypeUpdate, Pod: st, MirrorPod: m2}, now.Add(time.Minute)); got != m2 {
		t.Errorf("update with m2: MirrorPod = %p, want m2 %p", got, m2)
	}
	if got := mirrorOf(UpdateOptions{}, now.Add(2*time.Minute)); got != m2 {
		t.Errorf("resync: MirrorPod = %p, want m2 %p", got, m2)
	}
}
