package podworker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestCompleteResults covers upstream completeWork's result table and the
// machine-owned retries.
func TestCompleteResults(t *testing.T) {
	a := pod("a")
	tests := []struct {
		name  string
		steps []step
	}{
		{"context.Canceled with the cancelling update pending: at once", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, kill(a, nil, false), "accepted cancel"},
			{3 * s, done("a", Result{Err: context.Canceled}), "ok"},
			{3 * s, next(), "terminating a kill g=30"},
		})},
		{"error without a pending update: same step after the backoff", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, done("a", failed), "ok"},
			{2 * s, deadline(), "+12s"},
			{11 * s, next(), "none"},
			{12 * s, next(), "sync a sync"},
			{12 * s, query("a"), "could-run"},
		})},
		{"error with a newer update pending: the update at once", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, upd(TypeUpdate, a), "accepted"},
			{3 * s, done("a", failed), "ok"},
			{3 * s, next(), "sync a update"},
		})},
		{"RetryAfter replaces the backoff for one retry", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, done("a", Result{Err: errRuntime, RetryAfter: time.Second}), "ok"},
			{2 * s, deadline(), "+3s"},
			{3 * s, next(), "sync a sync"},
			{4 * s, done("a", Result{RetryAfter: time.Second}), "ok"}, // no error: resync
			{4 * s, deadline(), "+1m4s"},
		})},
		{"terminating error keeps terminating and retries", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, next(), "terminating a kill g=30"},
			{2 * s, done("a", failed), "ok"},
			{2 * s, query("a"), "could-run,requested,containers-terminating"},
			{12 * s, next(), "terminating a sync g=30"},
		})},
		{"Terminal is ignored on a terminating step and with an error", rows(started(a), []step{
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, done("a", Result{Terminal: true, Err: errRuntime}), "ok"},
			{2 * s, query("a"), "could-run"},
			{12 * s, next(), "sync a sync"},
		})},
		{"terminated success: finished, nothing scheduled", rows(started(a), []step{
			{1 * s, kill(a, nil, false), "accepted"},
			{1 * s, next(), "terminating a kill g=30"},
			{2 * s, done("a", terminal), "ok"},
			{2 * s, next(), "terminated a sync"},
			{3 * s, done("a", ok), "ok"},
			{3 * s, deadline(), "none"},
		})},
		{"duplicate and stale completions are ignored", rows(started(a), []step{
			{1 * s, done("a", ok), "stale"},
			{1 * s, upd(TypeUpdate, a), "accepted"},
			{1 * s, next(), "sync a update"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, done("a", failed), "stale"},
			{2 * s, deadline(), "+1m2s"},
			{2 * s, done("nobody", ok), "stale"},
		})},
		{"runtime-only success forgets the record", []step{
			{0, rtKill("r", nil), "accepted"},
			{0, next(), "terminating rt:r kill g=1"},
			{1 * s, done("r", ok), "ok"},
			{1 * s, deadline(), "none"},
			{1 * s, query("r"), "could-run"},
		}},
		{"runtime-only failure retries until it succeeds", []step{
			{0, rtKill("r", nil), "accepted"},
			{0, next(), "terminating rt:r kill g=1"},
			{1 * s, done("r", failed), "ok"},
			{11 * s, next(), "terminating rt:r sync g=1"},
			{12 * s, done("r", failed), "ok"},
			{22 * s, next(), "terminating rt:r sync g=1"},
			{23 * s, done("r", ok), "ok"},
			{23 * s, known(), "none"},
		}},
		{"runtime-only success with a config pod arriving meanwhile: cleaned up as that pod", []step{
			{0, rtKill("a", nil), "accepted"},
			{0, next(), "terminating rt:a kill g=1"},
			{1 * s, upd(TypeUpdate, deleting(a, 0)), "accepted"},
			{2 * s, done("a", ok), "ok"},
			{2 * s, query("a"), "known-terminated,requested,containers-terminating,runtime-remove,content-remove"},
			{2 * s, next(), "terminated a update"},
			{3 * s, done("a", ok), "ok"},
			{3 * s, query("a"), "known-terminated,finished,requested,containers-terminating,runtime-remove,content-remove"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, newWorkers(t), tt.steps) })
	}
}

// TestCompleteWithZeroWork: Complete(Work{}) and a Work of a forgotten
// record are ignored.
func TestCompleteWithZeroWork(t *testing.T) {
	w := newWorkers(t)
	w.Complete(testutil.Epoch, Work{}, Result{})
	w.UpdatePod(testutil.Epoch, UpdateOptions{Type: TypeCreate, Pod: pod("a")})
	work, _ := w.Next(testutil.Epoch)
	w.SyncKnownPods(testutil.Epoch, nil) // orphaned while in flight: kept
	w.Complete(testutil.Epoch, Work{UID: work.UID, Generation: work.Generation + 1}, Result{})
	if got := w.Stats().StaleCompletions; got != 2 {
		t.Errorf("Stats().StaleCompletions = %d, want 2", got)
	}
	mustCheck(t, w)
	w.Complete(testutil.Epoch, work, Result{})
	if next, ok := w.Next(testutil.Epoch); !ok || next.Type != TerminatingWork {
		t.Errorf("Next() after completing the orphaned sync = %v, %v, want a terminating step", next, ok)
	}
}

// TestJitter: Config.Jitter shapes every resync and backoff delay; negative
// results count as 0.
func TestJitter(t *testing.T) {
	var calls []time.Duration
	cfg := DefaultConfig()
	cfg.Jitter = func(d time.Duration) time.Duration {
		calls = append(calls, d)
		if d == cfg.BackoffPeriod {
			return -time.Hour
		}
		return 2 * d
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, w, rows(started(pod("a")), []step{
		{0, deadline(), "+2m0s"},
		{120 * s, next(), "sync a sync"},
		{121 * s, done("a", failed), "ok"},
		{121 * s, deadline(), "+2m1s"},
	}))
	if len(calls) != 2 || calls[0] != time.Minute || calls[1] != 10*time.Second {
		t.Errorf("Jitter calls = %v, want [1m0s 10s]", calls)
	}
}

func TestUpstreamJitter(t *testing.T) {
	for _, tt := range []struct {
		r    float64
		want time.Duration
	}{{0, 10 * time.Second}, {0.5, 12500 * time.Millisecond}, {0.999, 14995 * time.Millisecond}} {
		if got := UpstreamJitter(func() float64 { return tt.r })(10 * time.Second); got != tt.want {
			t.Errorf("UpstreamJitter(%v)(10s) = %v, want %v", tt.r, got, tt.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{ResyncInterval: -1},
		{BackoffPeriod: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want ErrInvalidConfig", cfg)
		}
	}
	w, err := New(Config{})
	if err != nil {
		t.Fatalf("New(Config{}) = %v", err)
	}
	// Zero delays are literal: resync and retry at once.
	runSteps(t, w, rows(started(pod("a")), []step{
		{0, next(), "sync a sync"},
		{0, done("a", failed), "ok"},
		{0, next(), "sync a sync"},
	}))
	if got := DefaultConfig(); got.ResyncInterval != time.Minute || got.BackoffPeriod != 10*time.Second || got.Jitter != nil {
		t.Errorf("DefaultConfig() = %+v, want 1m, 10s, no jitter", got)
	}
}

func TestEnumStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{TypeSync.String(), "sync"}, {TypeUpdate.String(), "update"}, {TypeCreate.String(), "create"},
		{TypeKill.String(), "kill"}, {UpdateType(0).String(), "UpdateType(0)"},
		{SyncWork.String(), "sync"}, {TerminatingWork.String(), "terminating"},
		{TerminatedWork.String(), "terminated"}, {WorkType(0).String(), "WorkType(0)"},
		{OutcomeAccepted.String(), "accepted"}, {OutcomeIgnoredFinished.String(), "ignored-finished"},
		{OutcomeRestartRequested.String(), "restart-requested"}, {OutcomeRejected.String(), "rejected"},
		{OutcomeIgnoredTerminated.String(), "ignored-terminated"}, {Outcome(0).String(), "Outcome(0)"},
		{ConfigDesired.String(), "desired"}, {ConfigOrphan.String(), "orphan"},
		{ConfigRuntimeOnly.String(), "runtime_only"}, {ConfigState(0).String(), "ConfigState(0)"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
	g := int64(5)
	w := Work{UID: "u", Type: TerminatingWork, UpdateType: TypeKill, Pod: pod("a"), GracePeriod: &g, Generation: 3}
	if got, want := w.String(), "terminating ns/a uid=u update=kill gen=3 grace=5"; got != want {
		t.Errorf("Work.String() = %q, want %q", got, want)
	}
	w = Work{UID: "u", Type: TerminatingWork, UpdateType: TypeKill, RunningPod: runtimePod("r")}
	if got, want := w.String(), "terminating ns/r (runtime-only) uid=u update=kill gen=0"; got != want {
		t.Errorf("Work.String() = %q, want %q", got, want)
	}
}

// An error's RetryAfter is capped at the longer of ResyncInterval and
// BackoffPeriod, as upstream bounds its error delays (completeWork): a
// caller passing a 5-minute CRI back-off is retried within the resync.
func TestRetryAfterCappedAtResync(t *testing.T) {
	a := pod("a")
	runSteps(t, newWorkers(t), rows(started(a), []step{
		{1 * s, upd(TypeUpdate, a), "accepted"},
		{1 * s, next(), "sync a update"},
		{2 * s, done("a", Result{Err: errRuntime, RetryAfter: 5 * time.Minute}), "ok"},
		{2 * s, deadline(), "+1m2s"},
		{62 * s, next(), "sync a sync"},
		{63 * s, done("a", Result{Err: errRuntime, RetryAfter: 30 * time.Second}), "ok"}, // under the cap: kept
		{63 * s, deadline(), "+1m33s"},
	}))
	// With a backoff longer than the resync, the backoff is the cap.
	w, err := New(Config{ResyncInterval: 0, BackoffPeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, w, rows(started(a), []step{
		{1 * s, upd(TypeUpdate, a), "accepted"},
		{1 * s, next(), "sync a update"},
		{2 * s, done("a", Result{Err: errRuntime, RetryAfter: time.Hour}), "ok"},
		{2 * s, deadline(), "+12s"},
	}))
}

// RetryNow retries a failed step at once, with no backoff and no jitter;
// without an error it is ignored.
func TestRetryNow(t *testing.T) {
	a := pod("a")
	cfg := DefaultConfig()
	cfg.Jitter = func(d time.Duration) time.Duration { return 2 * d }
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, w, rows(started(a), []step{
		{1 * s, upd(TypeUpdate, a), "accepted"},
		{1 * s, next(), "sync a update"},
		{2 * s, done("a", Result{Err: errRuntime, RetryNow: true, RetryAfter: time.Minute}), "ok"},
		{2 * s, deadline(), "+2s"},
		{2 * s, next(), "sync a sync"},
		{3 * s, done("a", Result{RetryNow: true}), "ok"}, // no error: resync (jittered)
		{3 * s, deadline(), "+2m3s"},
	}))
}

// UpstreamJitter saturates instead of overflowing: wait.Jitter(d, 0.5) of a
// duration above about 195 years wraps to a negative delay, which the
// machine reads as "at once", and the pod would be resynced in a hot loop.
func TestUpstreamJitterSaturates(t *testing.T) {
	huge := time.Duration(math.MaxInt64 / 4 * 3) // about 219 years
	for _, r := range []float64{0.5, 0.999} {
		if got := UpstreamJitter(func() float64 { return r })(huge); got < huge {
			t.Errorf("UpstreamJitter(%v)(%v) = %v, want >= the input (saturated)", r, huge, got)
		}
	}
	if got := UpstreamJitter(func() float64 { return 0.999 })(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("UpstreamJitter(MaxInt64) = %v, want MaxInt64", got)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if got := UpstreamJitter(func() float64 { return 0.5 })(d); got != d {
			t.Errorf("UpstreamJitter(%v) = %v, want it unchanged", d, got)
		}
	}
	cfg := Config{ResyncInterval: huge, BackoffPeriod: 10 * time.Second, Jitter: UpstreamJitter(func() float64 { return 0.999 })}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.UpdatePod(testutil.Epoch, UpdateOptions{Type: TypeCreate, Pod: pod("a")})
	work, _ := w.Next(testutil.Epoch)
	w.Complete(testutil.Epoch, work, Result{})
	if at, ok := w.NextDeadline(); !ok || !at.After(testutil.Epoch.Add(huge-time.Second)) {
		t.Fatalf("NextDeadline() after a sync with a %v resync = %v, %v; want at least that far ahead", huge, at, ok)
	}
	if _, ok := w.Next(testutil.Epoch.Add(time.Hour)); ok {
		t.Fatal("Next() an hour later handed out the resync: the jittered delay overflowed")
	}
}

// HasConfig is false for a static pod killed before it started: its config
// update never ran and is dropped with the kill, as upstream.
func TestHasConfigStaticKilledBeforeStart(t *testing.T) {
	s1, s2 := staticPod("st", "s1"), staticPod("st", "s2")
	runSteps(t, newWorkers(t), []step{
		{0, upd(TypeCreate, s1), "accepted"},
		{0, drain(), "sync s1 create"},
		{0, upd(TypeCreate, s2), "accepted"}, // waits for s1's slot
		{1 * s, kill(s2, nil, false), "accepted"},
		{1 * s, known(s1, s2), "s1=sync/static s2=terminated/finished/runtime"},
	})
}
