package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// Runtime is the container runtime the agent drives, reduced to what the pod
// worker's steps need (upstream: the CRI calls behind SyncPod,
// SyncTerminatingPod, SyncTerminatedPod and the runtime pod cache). Every
// method may be called from several goroutines at once, but never twice at
// once for one pod UID.
type Runtime interface {
	// StartPod makes sure the pod's containers run; it is called on every
	// sync and must be idempotent.
	StartPod(ctx context.Context, node string, pod *v1.Pod) (RuntimePod, error)
	// KillPod stops every container of the pod within grace and returns
	// when they stopped. Killing a pod that does not run succeeds.
	KillPod(ctx context.Context, pod podworker.RunningPod, grace time.Duration) (RuntimePod, error)
	// RemovePod releases what the pod still holds (sandbox, volumes) once
	// its containers stopped; removing an unknown pod succeeds.
	RemovePod(ctx context.Context, uid types.UID) error
	// ListPods returns every pod the runtime holds, running or stopped but
	// not removed.
	ListPods(ctx context.Context) ([]RuntimePod, error)
}

// RuntimePod is the runtime's view of one pod.
type RuntimePod struct {
	podworker.RunningPod
	// Node is the node the pod was started for.
	Node string
	// Running is true while its containers run.
	Running bool
	// StartedAt is when the containers started; FinishedAt when they
	// stopped (zero while running).
	StartedAt, FinishedAt time.Time
	// ExitCode is the containers' exit code once stopped: 0 when they
	// stopped within the grace period, 137 (SIGKILL) otherwise.
	ExitCode int32
}

// ErrRuntimeDown is wrapped by every FakeRuntime call that fails on purpose.
var ErrRuntimeDown = errors.New("agent: container runtime is down")

// FaultMode says which FakeRuntime calls fail.
type FaultMode uint8

const (
	// FailNone: every call succeeds.
	FailNone FaultMode = iota
	// FailAll: every call fails.
	FailAll
	// FailKills: only KillPod fails (a runtime that cannot stop containers,
	// kubernetes/kubernetes#113091).
	FailKills
)

// FakeRuntime is an in-memory Runtime whose faults are scriptable: it can
// fail every call or only kills for a period (Fail), and take time to stop
// a pod (StopDelay). It is safe for concurrent use. The zero value is not
// usable; call NewFakeRuntime.
type FakeRuntime struct {
	clock clock.Clock

	mu        sync.Mutex
	pods      map[types.UID]*RuntimePod
	mode      FaultMode
	failUntil time.Time // zero: until Recover
	stopDelay time.Duration
	calls     map[string]int // by method, failed calls included
	failed    map[string]int
	history   []RuntimeEvent
}

// RuntimeEvent is one change in a FakeRuntime: containers started,
// stopped, or the pod removed.
type RuntimeEvent struct {
	At   time.Time
	UID  types.UID
	Kind string // "start", "stop" or "remove"
	// ExitCode is set for "stop".
	ExitCode int32
}

// MaxHistory bounds FakeRuntime.History (the oldest events are dropped).
const MaxHistory = 100000

func (r *FakeRuntime) record(uid types.UID, kind string, code int32) {
	if len(r.history) == MaxHistory {
		r.history = append(r.history[:0], r.history[MaxHistory/2:]...)
	}
	r.history = append(r.history, RuntimeEvent{At: r.clock.Now(), UID: uid, Kind: kind, ExitCode: code})
}

// History returns the events of uid ("" for every pod), oldest first.
func (r *FakeRuntime) History(uid types.UID) []RuntimeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []RuntimeEvent
	for _, e := range r.history {
		if uid == "" || e.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// NewFakeRuntime returns an empty runtime on clk.
func NewFakeRuntime(clk clock.Clock) *FakeRuntime {
	return &FakeRuntime{clock: clk, pods: map[types.UID]*RuntimePod{}, calls: map[string]int{}, failed: map[string]int{}}
}

// Fail makes the calls of mode fail for d (d <= 0: until Recover).
func (r *FakeRuntime) Fail(mode FaultMode, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode, r.failUntil = mode, time.Time{}
	if d > 0 {
		r.failUntil = r.clock.Now().Add(d)
	}
}

// Recover ends any fault at once.
func (r *FakeRuntime) Recover() { r.Fail(FailNone, 0) }

// SetStopDelay makes every successful KillPod take d (capped at the grace
// period, after which the containers are killed with exit code 137).
func (r *FakeRuntime) SetStopDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopDelay = d
}

// Calls returns how many times method ("StartPod", "KillPod", "RemovePod",
// "ListPods") was called, and how many of those failed.
func (r *FakeRuntime) Calls(method string) (calls, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method], r.failed[method]
}

// Pod returns the runtime's view of uid.
func (r *FakeRuntime) Pod(uid types.UID) (RuntimePod, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pods[uid]
	if !ok {
		return RuntimePod{}, false
	}
	return *p, true
}

// Running reports whether uid has running containers.
func (r *FakeRuntime) Running(uid types.UID) bool {
	p, ok := r.Pod(uid)
	return ok && p.Running
}

// call counts a call and reports the injected fault, if any. r.mu is held.
func (r *FakeRuntime) call(method string, kill bool) error {
	r.calls[method]++
	if r.mode == FailNone {
		return nil
	}
	if !r.failUntil.IsZero() && !r.clock.Now().Before(r.failUntil) {
		r.mode = FailNone
		return nil
	}
	if r.mode == FailAll || (r.mode == FailKills && kill) {
		r.failed[method]++
		return fmt.Errorf("%s: %w", method, ErrRuntimeDown)
	}
	return nil
}

// StartPod implements Runtime.
func (r *FakeRuntime) StartPod(_ context.Context, node string, pod *v1.Pod) (RuntimePod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("StartPod", false); err != nil {
		return RuntimePod{}, err
	}
	p, ok := r.pods[pod.UID]
	if !ok || !p.Running {
		p = &RuntimePod{RunningPod: podworker.RunningPod{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace},
			Node: node, Running: true, StartedAt: r.clock.Now()}
		r.pods[pod.UID] = p
		r.record(pod.UID, "start", 0)
	}
	return *p, nil
}

// KillPod implements Runtime. With a stop delay it waits on the runtime's
// clock (or until ctx is done, which fails the kill).
func (r *FakeRuntime) KillPod(ctx context.Context, rp podworker.RunningPod, grace time.Duration) (RuntimePod, error) {
	r.mu.Lock()
	if err := r.call("KillPod", true); err != nil {
		r.mu.Unlock()
		return RuntimePod{}, err
	}
	p, ok := r.pods[rp.UID]
	if !ok || !p.Running {
		var out RuntimePod
		if ok {
			out = *p
		}
		r.mu.Unlock()
		return out, nil
	}
	wait, code := r.stopDelay, int32(0)
	if wait > grace {
		wait, code = grace, 137
	}
	r.mu.Unlock()
	if wait > 0 {
		select {
		case <-r.clock.After(wait):
		case <-ctx.Done():
			return RuntimePod{}, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok = r.pods[rp.UID]
	if !ok {
		return RuntimePod{}, nil
	}
	if p.Running {
		p.Running, p.FinishedAt, p.ExitCode = false, r.clock.Now(), code
		r.record(rp.UID, "stop", code)
	}
	return *p, nil
}

// RemovePod implements Runtime. It refuses to remove running containers.
func (r *FakeRuntime) RemovePod(_ context.Context, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RemovePod", false); err != nil {
		return err
	}
	if p, ok := r.pods[uid]; ok && p.Running {
		return fmt.Errorf("agent: remove pod %s: containers still running", uid)
	}
	if _, ok := r.pods[uid]; ok {
		delete(r.pods, uid)
		r.record(uid, "remove", 0)
	}
	return nil
}

// ListPods implements Runtime, sorted by UID.
func (r *FakeRuntime) ListPods(context.Context) ([]RuntimePod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("ListPods", false); err != nil {
		return nil, err
	}
	out := make([]RuntimePod, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}
