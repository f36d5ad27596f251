package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/podworker"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestStuckTerminatingScenario plays upstream #113145 / #113091 end to end: a
// pod force-deleted while the runtime is down reaches finished after the
// runtime recovers, with no further update from the config.
func TestStuckTerminatingScenario(t *testing.T) {
	var out bytes.Buffer
	s, err := Run(DefaultScenario(), &FakeClock{T: start}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !s.WebFinished || s.WebFinishedAt < DefaultScenario().RuntimeUpAt {
		t.Errorf("web finished = %v at %v, want finished after the runtime came back (%v)",
			s.WebFinished, s.WebFinishedAt, DefaultScenario().RuntimeUpAt)
	}
	// Force-deleted at 10 s, runtime back at 35 s, backoff 10 s: attempts at
	// 10, 20, 30 and 40 s, the last one succeeding.
	if s.WebFinishedAt != 40*time.Second || s.WebAttempts != 4 {
		t.Errorf("web finished at %v after %d attempts, want 40s after 4", s.WebFinishedAt, s.WebAttempts)
	}
	if s.WebRunning || s.WebKnown {
		t.Errorf("web: containers running %v, record kept %v; want neither", s.WebRunning, s.WebKnown)
	}
	if !s.DBRunning || s.OldJobRunning || s.KnownAtEnd != 1 || s.OrphanedRuntimePods != 1 {
		t.Errorf("summary = %+v, want db running, old-job killed, one record left", s)
	}
	if s.StaleCompletions != 0 {
		t.Errorf("StaleCompletions = %d, want 0", s.StaleCompletions)
	}
	if got := out.String(); got != goldenTimeline {
		t.Errorf("timeline:\n%s\nwant:\n%s", got, goldenTimeline)
	}
}

const goldenTimeline = `   0s  config     add default/web: accepted
   0s  config     add default/db: accepted
   0s  housekeep  kill runtime-only default/old-job: accepted
   0s  housekeep  known: db=sync web=sync
   0s  step       sync default/web -> ok
   0s  step       sync default/db -> ok
   0s  step       terminating default/old-job (runtime-only) grace=1s -> ok
   5s  runtime    DOWN: every call fails
   6s  housekeep  runtime pods unknown (list pods: container runtime is down): orphans wait
  10s  config     force delete default/web: accepted
  10s  housekeep  known: db=sync web=terminating(orphan)
  10s  step       terminating default/web grace=1s -> error: stop web-1 (grace 1s): container runtime is down
  20s  step       terminating default/web grace=1s -> error: stop web-1 (grace 1s): container runtime is down
  30s  step       terminating default/web grace=1s -> error: stop web-1 (grace 1s): container runtime is down
  35s  runtime    UP again
  40s  step       terminating default/web grace=1s -> ok
  40s  step       terminated default/web -> ok, finished
  42s  housekeep  known: db=sync

web: finished=true at 40s after 4 terminating attempts; containers running=false; record kept=false
db: running=true; old-job (runtime-only) running=false; records left=1
`

// TestRuntimeNeverRecovers: the pod stays terminating and keeps being
// retried every backoff period; nothing is dropped.
func TestRuntimeNeverRecovers(t *testing.T) {
	sc := DefaultScenario()
	sc.RuntimeUpAt, sc.Until = -1, 2*time.Minute
	var out bytes.Buffer
	s, err := Run(sc, &FakeClock{T: start}, &out)
	if err != nil {
		t.Fatal(err)
	}
	// 10 s, 20 s, …, 120 s.
	if s.WebFinished || !s.WebKnown || !s.WebRunning || s.WebAttempts != 12 {
		t.Errorf("summary = %+v, want web still known and running after 12 attempts", s)
	}
}

// TestRuntimeDownBeforeAnything: the runtime is down from the start, so
// every first sync fails. The force-deleted pod was handed a step, so it
// must still go through termination; that succeeds once the runtime is back,
// and the other pod starts then too.
func TestRuntimeDownBeforeAnything(t *testing.T) {
	sc := Scenario{RuntimeDownAt: 0, ForceDeleteAt: 3 * time.Second, RuntimeUpAt: 20 * time.Second, Until: 40 * time.Second}
	var out bytes.Buffer
	s, err := Run(sc, &FakeClock{T: start}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !s.WebFinished || s.WebKnown || !s.DBRunning {
		t.Errorf("summary = %+v, want web finished and forgotten, db running once the runtime is back\n%s", s, out.String())
	}
}

func TestDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := Run(DefaultScenario(), &FakeClock{T: start}, &a); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(DefaultScenario(), &FakeClock{T: start.Add(time.Hour)}, &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("two runs of the same scenario printed different timelines")
	}
}

// TestHousekeepingKillsLeftoversOfFinishedPods: a pod evicted and finished
// stays in the config (terminal pods do); containers with its UID show up in
// the runtime again. The workers report it Finished, so housekeeping kills
// the leftovers (upstream #139833).
func TestHousekeepingKillsLeftoversOfFinishedPods(t *testing.T) {
	rt := NewFakeRuntime()
	var out bytes.Buffer
	k, err := NewKubelet(podworker.DefaultConfig(), rt, &out, start)
	if err != nil {
		t.Fatal(err)
	}
	job := newPod("job", "job-1")
	k.Add(start, job)
	k.RunDue(start)
	k.Workers.UpdatePod(start, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: job,
		Kill: &podworker.KillOptions{Evict: true}})
	k.RunDue(start)
	if _, ok := k.FinishedAt[job.UID]; !ok || rt.Running(job.UID) {
		t.Fatalf("evicted job: finished %v, running %v; want finished, stopped\n%s", ok, rt.Running(job.UID), out.String())
	}
	rt.Adopt(podworker.RunningPod{UID: job.UID, Name: job.Name, Namespace: job.Namespace})
	k.Housekeeping(start.Add(time.Second))
	k.RunDue(start.Add(time.Second))
	if rt.Running(job.UID) {
		t.Errorf("leftover containers of the finished job still run\n%s", out.String())
	}
	if !strings.Contains(out.String(), "kill runtime-only default/job: accepted") {
		t.Errorf("timeline does not show the leftover kill:\n%s", out.String())
	}
}

func TestFakeRuntime(t *testing.T) {
	rt := NewFakeRuntime()
	p := newPod("a", "a-1")
	if err := rt.Start(p); err != nil || !rt.Running(p.UID) || !rt.HasVolumes(p.UID) {
		t.Fatalf("Start = %v, running %v", err, rt.Running(p.UID))
	}
	rt.Down = true
	for name, err := range map[string]error{
		"Start": rt.Start(p), "Stop": rt.Stop(p.UID, 1), "Cleanup": rt.Cleanup(p.UID),
	} {
		if !errors.Is(err, ErrRuntimeDown) {
			t.Errorf("%s while down = %v, want ErrRuntimeDown", name, err)
		}
	}
	if _, err := rt.Pods(); !errors.Is(err, ErrRuntimeDown) {
		t.Errorf("Pods while down = %v, want ErrRuntimeDown", err)
	}
	rt.Down = false
	if err := rt.Stop(p.UID, 1); err != nil || rt.Running(p.UID) {
		t.Errorf("Stop = %v, running %v", err, rt.Running(p.UID))
	}
	if err := rt.Cleanup(p.UID); err != nil || rt.HasVolumes(p.UID) {
		t.Errorf("Cleanup = %v, volumes %v", err, rt.HasVolumes(p.UID))
	}
}

func TestRunFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-up", "-1s", "-until", "15s"}, &out); err != nil {
		t.Fatalf("run = %v", err)
	}
	if !strings.Contains(out.String(), "web: finished=false") {
		t.Errorf("output does not end with web unfinished:\n%s", out.String())
	}
	for _, args := range [][]string{{"-until", "-5s"}, {"-bogus"}, {"extra"}} {
		if err := run(args, &out); err == nil {
			t.Errorf("run(%v) = nil, want an error", args)
		}
	}
}

// TestRunFlagsBounded: a run too long to end (the old code looped for
// -until=100000h, some 180 million passes) and events after the end, which
// silently never happened, are refused with an error naming the flag.
func TestRunFlagsBounded(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-until", "100000h"}, "-until 100000h0m0s"},
		{[]string{"-down", "1m"}, "-down 1m0s is after -until 45s"},
		{[]string{"-delete", "-1s"}, "-delete -1s"},
		{[]string{"-up", "2m", "-until", "1m"}, "-up 2m0s is after -until 1m0s"},
	} {
		var out bytes.Buffer
		if err := run(tt.args, &out); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%v) = %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

func TestFakeClockNeverGoesBack(t *testing.T) {
	f := &FakeClock{T: start}
	f.SleepUntil(start.Add(-time.Second))
	if !f.Now().Equal(start) {
		t.Error("FakeClock went backwards")
	}
	f.SleepUntil(start.Add(time.Second))
	if !f.Now().Equal(start.Add(time.Second)) {
		t.Error("FakeClock did not advance")
	}
}
