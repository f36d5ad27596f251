package main

import (
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// Scenario is the stuck-terminating story (upstream #113145 / #113091): two
// pods run, the container runtime goes down, one pod is force-deleted, the
// runtime comes back. Times are offsets from the start.
type Scenario struct {
	RuntimeDownAt, ForceDeleteAt, RuntimeUpAt, Until time.Duration
	// RuntimeUpAt < 0: the runtime never comes back.
}

// MaxUntil bounds Scenario.Until: the loop wakes at least every
// housekeeping period (2 s), so a day is 43,200 passes, and a longer story
// tells nothing more.
const MaxUntil = 24 * time.Hour

// Validate reports a scenario that would not play as written: a negative
// or too long run (Until, at most MaxUntil), a negative event time, or an
// event after the end, which would silently never happen. The error names
// the program's flag.
func (sc Scenario) Validate() error {
	if sc.Until < 0 || sc.Until > MaxUntil {
		return fmt.Errorf("kubelet: -until %v: want 0 to %v", sc.Until, MaxUntil)
	}
	for _, e := range []struct {
		flag string
		at   time.Duration
	}{{"-down", sc.RuntimeDownAt}, {"-delete", sc.ForceDeleteAt}, {"-up", sc.RuntimeUpAt}} {
		switch {
		case e.at < 0 && e.flag != "-up":
			return fmt.Errorf("kubelet: %s %v: must not be negative", e.flag, e.at)
		case e.at > sc.Until:
			return fmt.Errorf("kubelet: %s %v is after -until %v: it would never happen", e.flag, e.at, sc.Until)
		}
	}
	return nil
}

// DefaultScenario is the scenario the program runs without flags.
func DefaultScenario() Scenario {
	return Scenario{RuntimeDownAt: 5 * time.Second, ForceDeleteAt: 10 * time.Second,
		RuntimeUpAt: 35 * time.Second, Until: 45 * time.Second}
}

// Clock is what the loop needs from time: read it, and wait for an instant.
type Clock interface {
	Now() time.Time
	SleepUntil(t time.Time)
}

// FakeClock jumps to the instant it is asked to wait for: the scenario runs
// instantly and deterministically.
type FakeClock struct{ T time.Time }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time { return c.T }

// SleepUntil moves the fake time forward to t.
func (c *FakeClock) SleepUntil(t time.Time) {
	if t.After(c.T) {
		c.T = t
	}
}

// RealClock waits in wall-clock time.
type RealClock struct{}

// Now returns the wall-clock time.
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps until t.
func (RealClock) SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// Pods of the scenario.
var (
	Web = newPod("web", "web-1")
	DB  = newPod("db", "db-1")
	// OldJob was left running by a previous kubelet; no config knows it.
	OldJob = podworker.RunningPod{UID: "old-job-7", Name: "old-job", Namespace: "default"}
)

func newPod(name, uid string) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

// Summary is what happened to the pods.
type Summary struct {
	WebFinished         bool
	WebFinishedAt       time.Duration // offset from the start
	WebAttempts         int           // terminating steps for web
	WebRunning          bool          // web's containers still running at the end
	WebKnown            bool          // the workers still have a record for web
	DBRunning           bool
	OldJobRunning       bool
	RuntimeCalls        int
	KnownAtEnd          int
	StaleCompletions    uint64
	OrphanedRuntimePods uint64
}

// Run plays the scenario on clk, writing the timeline to out.
func Run(sc Scenario, clk Clock, out io.Writer) (Summary, error) {
	start := clk.Now()
	rt := NewFakeRuntime()
	rt.Adopt(OldJob)
	k, err := NewKubelet(podworker.DefaultConfig(), rt, out, start)
	if err != nil {
		return Summary{}, err
	}
	type event struct {
		at time.Duration
		do func(now time.Time)
	}
	events := []event{
		{0, func(now time.Time) { k.Add(now, Web); k.Add(now, DB) }},
		{sc.RuntimeDownAt, func(now time.Time) { rt.Down = true; k.logf(now, "runtime", "DOWN: every call fails") }},
		{sc.ForceDeleteAt, func(now time.Time) { k.Delete(now, Web, 0) }},
	}
	if sc.RuntimeUpAt >= 0 {
		events = append(events, event{sc.RuntimeUpAt, func(now time.Time) {
			rt.Down = false
			k.logf(now, "runtime", "UP again")
		}})
	}
	sortEvents := func() {
		for i := 1; i < len(events); i++ {
			for j := i; j > 0 && events[j].at < events[j-1].at; j-- {
				events[j], events[j-1] = events[j-1], events[j]
			}
		}
	}
	sortEvents()

	end := start.Add(sc.Until)
	nextHousekeeping := start
	for now := start; !now.After(end); now = clk.Now() {
		for len(events) > 0 && !start.Add(events[0].at).After(now) {
			events[0].do(now)
			events = events[1:]
		}
		if !now.Before(nextHousekeeping) {
			k.Housekeeping(now)
			nextHousekeeping = nextHousekeeping.Add(HousekeepingPeriod)
		}
		k.RunDue(now)

		// Sleep until the workers, the housekeeping or an event need us.
		wake := nextHousekeeping
		if d, ok := k.Workers.NextDeadline(); ok && d.Before(wake) {
			wake = d
		}
		if len(events) > 0 && start.Add(events[0].at).Before(wake) {
			wake = start.Add(events[0].at)
		}
		if !wake.After(now) {
			wake = now.Add(time.Millisecond) // a step is due: loop again at once
		}
		clk.SleepUntil(wake)
	}

	st := k.Workers.Stats()
	s := Summary{
		WebAttempts:         k.TerminatingAttempts[Web.UID],
		WebRunning:          rt.Running(Web.UID),
		DBRunning:           rt.Running(DB.UID),
		OldJobRunning:       rt.Running(OldJob.UID),
		RuntimeCalls:        rt.Calls,
		KnownAtEnd:          st.Known,
		StaleCompletions:    st.StaleCompletions,
		OrphanedRuntimePods: st.OrphanedRuntimePods,
	}
	if t, ok := k.FinishedAt[Web.UID]; ok {
		s.WebFinished, s.WebFinishedAt = true, t.Sub(start)
	}
	s.WebKnown = k.Workers.IsPodKnownTerminated(Web.UID) || k.Workers.CouldHaveRunningContainers(Web.UID)
	fmt.Fprintf(out, "\nweb: finished=%v at %v after %d terminating attempts; containers running=%v; record kept=%v\n",
		s.WebFinished, s.WebFinishedAt, s.WebAttempts, s.WebRunning, s.WebKnown)
	fmt.Fprintf(out, "db: running=%v; old-job (runtime-only) running=%v; records left=%d\n",
		s.DBRunning, s.OldJobRunning, s.KnownAtEnd)
	return s, nil
}
