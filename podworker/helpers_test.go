package podworker

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// ---- pod builders -------------------------------------------------------

const ns = "ns"

// pod returns a running pod "name" with UID "uid-ns-name" and a 30 s spec
// grace period.
func pod(name string) *v1.Pod {
	p := testutil.Pod(ns, name, "node-1")
	p.Spec.TerminationGracePeriodSeconds = testutil.Seconds(30)
	return p
}

// staticPod returns a static pod (config source "file") named name with UID
// "uid-ns-"+id, so several may share one full name; tests refer to it by id.
func staticPod(name, id string) *v1.Pod {
	p := pod(name)
	p.UID = uidOf(id)
	p.Annotations = map[string]string{ConfigSourceAnnotation: "file"}
	return p
}

// deleting returns a copy of p with a deletionTimestamp and deletion grace.
func deleting(p *v1.Pod, grace int64) *v1.Pod {
	c := p.DeepCopy()
	c.DeletionTimestamp = testutil.MetaTime(testutil.Epoch)
	c.DeletionGracePeriodSeconds = testutil.Seconds(grace)
	return c
}

// phase returns a copy of p in phase ph.
func phase(p *v1.Pod, ph v1.PodPhase) *v1.Pod {
	c := p.DeepCopy()
	c.Status.Phase = ph
	return c
}

// specGrace returns a copy of p with the given spec grace period (nil: none).
func specGrace(p *v1.Pod, g *int64) *v1.Pod {
	c := p.DeepCopy()
	c.Spec.TerminationGracePeriodSeconds = g
	return c
}

func runtimePod(name string) *RunningPod {
	return &RunningPod{UID: types.UID("uid-ns-" + name), Name: name, Namespace: ns}
}

func uidOf(name string) types.UID { return types.UID("uid-ns-" + name) }

// short renders a UID the way tests name pods.
func short(uid types.UID) string { return strings.TrimPrefix(string(uid), "uid-ns-") }

func newWorkers(t testing.TB) *Workers {
	t.Helper()
	w, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var errRuntime = errors.New("runtime: connection refused")

// ---- step tests ---------------------------------------------------------

// harness drives one Workers through a table of steps and remembers the
// last Work handed out per pod, so rows can complete it by name.
type harness struct {
	t     testing.TB
	w     *Workers
	works map[types.UID]Work
}

// call is one operation in a step table; name renders it in failures.
type call struct {
	name string
	run  func(h *harness, now time.Time) string
}

// step is one row: at (offset from the epoch) run call, expect want.
type step struct {
	at   time.Duration
	call call
	want string
}

// runSteps runs the rows in order, checking the machine's invariants after
// each one.
func runSteps(t *testing.T, w *Workers, steps []step) *harness {
	t.Helper()
	h := &harness{t: t, w: w, works: map[types.UID]Work{}}
	for i, s := range steps {
		got := s.call.run(h, testutil.At(s.at))
		if got != s.want {
			t.Errorf("row %d at +%v: %s = %q, want %q", i, s.at, s.call.name, got, s.want)
		}
		if err := w.check(); err != nil {
			t.Fatalf("row %d at +%v: %s: invariant: %v", i, s.at, s.call.name, err)
		}
	}
	return h
}

func renderUpdate(r UpdateResult) string {
	s := r.Outcome.String()
	if r.CancelInFlight {
		s += " cancel"
	}
	return s
}

// send sends o; it renders the outcome ("accepted", "accepted cancel", …).
func send(o UpdateOptions) call {
	id := "?"
	switch {
	case o.Pod != nil:
		id = o.Pod.Name
	case o.RunningPod != nil:
		id = "rt:" + o.RunningPod.Name
	}
	return call{fmt.Sprintf("UpdatePod(%v, %s)", o.Type, id), func(h *harness, now time.Time) string {
		return renderUpdate(h.w.UpdatePod(now, o))
	}}
}

func upd(t UpdateType, p *v1.Pod) call { return send(UpdateOptions{Type: t, Pod: p}) }

func kill(p *v1.Pod, override *int64, evict bool) call {
	return send(UpdateOptions{Type: TypeKill, Pod: p, Kill: &KillOptions{Evict: evict, GracePeriodOverride: override}})
}

func rtKill(name string, override *int64) call {
	return send(UpdateOptions{Type: TypeKill, RunningPod: runtimePod(name), Kill: &KillOptions{GracePeriodOverride: override}})
}

// renderWork renders a step as "terminating a kill g=30" (pod, update type,
// grace); runtime-only pods are "rt:name".
func renderWork(w Work) string {
	id := short(w.UID)
	if w.Pod == nil && w.RunningPod != nil {
		id = "rt:" + w.RunningPod.Name
	}
	s := fmt.Sprintf("%v %s %v", w.Type, id, w.UpdateType)
	if w.GracePeriod != nil {
		s += fmt.Sprintf(" g=%d", *w.GracePeriod)
	}
	return s
}

// next calls Next once; "none" when nothing is due.
func next() call {
	return call{"Next()", func(h *harness, now time.Time) string {
		w, ok := h.w.Next(now)
		if !ok {
			return "none"
		}
		h.works[w.UID] = w
		return renderWork(w)
	}}
}

// drain calls Next until nothing is due and joins the steps with "; ".
func drain() call {
	return call{"Next()*", func(h *harness, now time.Time) string {
		var out []string
		for {
			w, ok := h.w.Next(now)
			if !ok {
				break
			}
			h.works[w.UID] = w
			out = append(out, renderWork(w))
		}
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, "; ")
	}}
}

// done completes the last step handed out for pod name.
func done(name string, r Result) call {
	return call{fmt.Sprintf("Complete(%s, %+v)", name, r), func(h *harness, now time.Time) string {
		before := h.w.Stats().StaleCompletions
		h.w.Complete(now, h.works[uidOf(name)], r)
		if h.w.Stats().StaleCompletions != before {
			return "stale"
		}
		return "ok"
	}}
}

var (
	ok       = Result{}
	failed   = Result{Err: errRuntime}
	terminal = Result{Terminal: true}
)

// deadline renders NextDeadline as an offset from the epoch, or "none".
func deadline() call {
	return call{"NextDeadline()", func(h *harness, now time.Time) string {
		d, ok := h.w.NextDeadline()
		if !ok {
			return "none"
		}
		return "+" + d.Sub(testutil.Epoch).String()
	}}
}

// known calls SyncKnownPods and renders the result sorted:
// "a=sync b=terminating/orphan c=terminated/finished r=terminating/orphan/runtime".
func known(desired ...*v1.Pod) call {
	names := make([]string, len(desired))
	for i, p := range desired {
		if p != nil {
			names[i] = p.Name
		}
	}
	return call{fmt.Sprintf("SyncKnownPods(%v)", names), func(h *harness, now time.Time) string {
		return renderKnown(h.w.SyncKnownPods(now, desired))
	}}
}

func renderKnown(m map[types.UID]PodWorkerSync) string {
	var out []string
	for uid, s := range m {
		e := short(uid) + "=" + s.State.String()
		if s.Orphan {
			e += "/orphan"
		}
		if s.Finished {
			e += "/finished"
		}
		if s.Static {
			e += "/static"
		}
		if !s.HasConfig {
			e += "/runtime"
		}
		out = append(out, e)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// query renders the seven per-UID queries as the names of those that are
// true, or "-" when none is.
func query(name string) call {
	return queryUID(uidOf(name))
}

func queryUID(uid types.UID) call {
	return call{fmt.Sprintf("queries(%s)", short(uid)), func(h *harness, now time.Time) string {
		w := h.w
		var out []string
		for _, q := range []struct {
			name string
			fn   func(types.UID) bool
		}{
			{"known-terminated", w.IsPodKnownTerminated},
			{"could-run", w.CouldHaveRunningContainers},
			{"finished", w.ShouldPodBeFinished},
			{"requested", w.IsPodTerminationRequested},
			{"containers-terminating", w.ShouldPodContainersBeTerminating},
			{"runtime-remove", w.ShouldPodRuntimeBeRemoved},
			{"content-remove", w.ShouldPodContentBeRemoved},
		} {
			if q.fn(uid) {
				out = append(out, q.name)
			}
		}
		if len(out) == 0 {
			return "-"
		}
		return strings.Join(out, ",")
	}}
}

// mirrorTerminating calls IsPodForMirrorPodTerminatingByFullName.
func mirrorTerminating(fullname string) call {
	return call{fmt.Sprintf("IsPodForMirrorPodTerminatingByFullName(%s)", fullname), func(h *harness, now time.Time) string {
		return fmt.Sprint(h.w.IsPodForMirrorPodTerminatingByFullName(fullname))
	}}
}

// ---- invariants ---------------------------------------------------------

// check verifies the internal invariants of w. Tests call it after every
// step.
func (w *Workers) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	inHeap := 0
	for uid, r := range w.pods {
		if r.uid != uid {
			return fmt.Errorf("%s: record keyed under %s", r.uid, uid)
		}
		if r.elem.Value != r {
			return fmt.Errorf("%s: heap element does not point back", uid)
		}
		queued := r.elem.InHeap()
		if queued {
			inHeap++
		}
		if r.inFlight && (queued || r.parked) {
			return fmt.Errorf("%s: in flight and queued=%v parked=%v", uid, queued, r.parked)
		}
		if queued && r.parked {
			return fmt.Errorf("%s: both queued and parked", uid)
		}
		if r.terminated && !r.terminating {
			return fmt.Errorf("%s: terminated without termination requested", uid)
		}
		if r.finished && !r.terminated {
			return fmt.Errorf("%s: finished but not terminated", uid)
		}
		if r.terminating && !r.terminated && (r.grace < 1 || r.gracePtr == nil || *r.gracePtr != r.grace) {
			return fmt.Errorf("%s: terminating with grace %d (ptr %v)", uid, r.grace, r.gracePtr)
		}
		if r.finished {
			if r.hasPending || r.retry || r.parked {
				return fmt.Errorf("%s: finished with pending=%v retry=%v parked=%v", uid, r.hasPending, r.retry, r.parked)
			}
			if queued && r.leftover == nil {
				return fmt.Errorf("%s: finished and queued without a leftover kill", uid)
			}
			if r.leftover != nil && !queued && !r.inFlight {
				return fmt.Errorf("%s: leftover kill lost", uid)
			}
			continue
		}
		// Nothing lost: a live record not in flight has work and is queued
		// or parked.
		if !r.inFlight {
			if !r.hasPending && !r.retry {
				return fmt.Errorf("%s: live record with nothing to do (started=%v terminating=%v)", uid, r.started, r.terminating)
			}
			if !queued && !r.parked {
				return fmt.Errorf("%s: live record with work neither queued nor parked", uid)
			}
			if r.retry && !r.hasActive {
				return fmt.Errorf("%s: retry without an active update", uid)
			}
		}
		if r.parked {
			if !r.static || r.started || r.terminating {
				return fmt.Errorf("%s: parked but not a waiting static pod", uid)
			}
			if !w.blocked(r) {
				// A parked pod whose turn came must have been woken.
				return fmt.Errorf("%s: parked but not blocked", uid)
			}
		}
		if r.static && !r.started && !r.terminating && !r.inFlight {
			found := false
			for _, x := range w.waitingStatic[r.fullname] {
				found = found || x == r
			}
			if !found {
				return fmt.Errorf("%s: unstarted static pod not in its waiting list", uid)
			}
		}
	}
	if inHeap != w.queue.Len() {
		return fmt.Errorf("heap holds %d elements, %d records think they are queued", w.queue.Len(), inHeap)
	}
	for name, q := range w.waitingStatic {
		if len(q) == 0 {
			return fmt.Errorf("empty waiting list kept for %s", name)
		}
		for _, r := range q {
			if w.pods[r.uid] != r || r.started || r.terminating || !r.static || r.fullname != name {
				return fmt.Errorf("waiting list %s holds stale %s", name, r.uid)
			}
		}
	}
	for name, r := range w.startedStatic {
		if w.pods[r.uid] != r || !r.started || r.finished || r.fullname != name {
			return fmt.Errorf("started slot %s held by stale %s", name, r.uid)
		}
	}
	return nil
}

// mustCheck fails t when an invariant does not hold.
func mustCheck(t testing.TB, w *Workers) {
	t.Helper()
	if err := w.check(); err != nil {
		t.Fatal(err)
	}
}
