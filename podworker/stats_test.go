package podworker

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// TestStats covers the metrics of upstream HandlePodCleanups.
func TestStats(t *testing.T) {
	w := newWorkers(t)
	now := testutil.Epoch
	a, b, c, f, o := pod("a"), phase(pod("b"), v1.PodSucceeded), pod("c"), pod("f"), pod("o")
	st := staticPod("st", "st1")
	for _, p := range []*v1.Pod{a, st, o, f} {
		w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: p})
	}
	drive(t, w, now)
	w.UpdatePod(now, UpdateOptions{Type: TypeKill, Pod: f})
	drive(t, w, now)
	w.UpdatePod(now, UpdateOptions{Type: TypeKill, RunningPod: runtimePod("r")})
	w.SyncKnownPods(now, []*v1.Pod{a, b, st, c, f})
	w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: c}) // restart of a desired pod the workers did not know
	w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: c}) // counted once

	got := w.Stats()
	for _, tt := range []struct {
		name      string
		got, want uint64
	}{
		{"DesiredPods", uint64(got.DesiredPods), 4},
		{"DesiredStaticPods", uint64(got.DesiredStaticPods), 1},
		{"ActivePods", uint64(got.ActivePods), 2},
		{"ActiveStaticPods", uint64(got.ActiveStaticPods), 1},
		{"MirrorPods", uint64(got.MirrorPods), 1},
		{"RestartedPods", got.RestartedPods, 1},
		{"RestartedStaticPods", got.RestartedStaticPods, 0},
		{"OrphanedRuntimePods", got.OrphanedRuntimePods, 1},
		{"Known", uint64(got.Known), 6},
		{"Finished", uint64(got.Finished), 1},
		{"InFlight", uint64(got.InFlight), 0},
		{"WaitingStatic", uint64(got.WaitingStatic), 0},
	} {
		if tt.got != tt.want {
			t.Errorf("Stats().%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if len(got.Working) != 15 {
		t.Fatalf("len(Stats().Working) = %d, want 15 (every valid combination)", len(got.Working))
	}
	want := map[[3]string]int{
		{"sync", "desired", ""}:                    2, // a, c
		{"sync", "desired", "true"}:                1, // st
		{"terminating", "orphan", ""}:              1, // o
		{"terminating", "runtime_only", "unknown"}: 1, // r
		{"terminated", "desired", ""}:              1, // f
	}
	total := 0
	for _, wc := range got.Working {
		key := [3]string{wc.Lifecycle.String(), wc.Config.String(), wc.StaticLabel()}
		if wc.Count != want[key] {
			t.Errorf("working_pods%v = %d, want %d", key, wc.Count, want[key])
		}
		if n := got.WorkingPods(wc.Lifecycle, wc.Config, wc.Static); n != wc.Count {
			t.Errorf("WorkingPods(%v) = %d, want %d", key, n, wc.Count)
		}
		total += wc.Count
	}
	if total != got.Known {
		t.Errorf("working pods sum to %d, want Known = %d", total, got.Known)
	}
	if n := (Stats{}).WorkingPods(SyncWork, ConfigDesired, false); n != 0 {
		t.Errorf("Stats{}.WorkingPods(…) = %d, want 0", n)
	}
}

// drive runs every step due at now to success.
func drive(t testing.TB, w *Workers, now time.Time) {
	t.Helper()
	for {
		work, ok := w.Next(now)
		if !ok {
			return
		}
		w.Complete(now, work, Result{})
	}
}

// TestStatsDesiredSet: the desired, active and mirror gauges count each
// desired pod once, and only a Create for an active desired pod the workers
// did not know counts as a restart (upstream HandlePodCleanups).
func TestStatsDesiredSet(t *testing.T) {
	w := newWorkers(t)
	now := testutil.Epoch
	a, st := pod("a"), staticPod("st", "st1")
	done := phase(pod("done"), v1.PodSucceeded)
	w.SyncKnownPods(now, []*v1.Pod{a, a, st, st, done, done, nil})
	st1 := w.Stats()
	if st1.DesiredPods != 2 || st1.DesiredStaticPods != 1 || st1.ActivePods != 1 || st1.ActiveStaticPods != 1 || st1.MirrorPods != 1 {
		t.Errorf("Stats() desired %d+%d static, active %d+%d static, mirror %d; want 2+1, 1+1, 1 (duplicates once)",
			st1.DesiredPods, st1.DesiredStaticPods, st1.ActivePods, st1.ActiveStaticPods, st1.MirrorPods)
	}
	for _, p := range []*v1.Pod{a, st, done} {
		w.UpdatePod(now, UpdateOptions{Type: TypeCreate, Pod: p})
	}
	w.UpdatePod(now, UpdateOptions{Type: TypeUpdate, Pod: pod("late")}) // not desired at the last SyncKnownPods
	if got := w.Stats(); got.RestartedPods != 1 || got.RestartedStaticPods != 1 {
		t.Errorf("Stats() restarted %d, static %d; want 1, 1 (the terminal pod is not active)", got.RestartedPods, got.RestartedStaticPods)
	}
	// Known pods listed twice count once too.
	w.SyncKnownPods(now, []*v1.Pod{a, st, a, st})
	if got := w.Stats(); got.DesiredPods != 1 || got.DesiredStaticPods != 1 || got.ActivePods != 1 {
		t.Errorf("Stats() desired %d+%d static, active %d; want 1+1, 1", got.DesiredPods, got.DesiredStaticPods, got.ActivePods)
	}
}
