package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// HousekeepingPeriod is how often the kubelet reconciles the workers with
// its config and the runtime (upstream HandlePodCleanups).
const HousekeepingPeriod = 2 * time.Second

// Kubelet is the caller of podworker: it owns the config (the pod manager),
// feeds updates in, runs the steps against the runtime, and does the
// housekeeping. It is single-threaded: every method runs on the loop.
type Kubelet struct {
	Workers *podworker.Workers
	Runtime *FakeRuntime
	Config  map[types.UID]*v1.Pod // desired pods, by UID

	// FinishedAt records when each pod's cleanup step succeeded;
	// TerminatingAttempts counts each pod's terminating steps.
	FinishedAt          map[types.UID]time.Time
	TerminatingAttempts map[types.UID]int

	out       io.Writer
	start     time.Time
	names     map[types.UID]string // every pod ever in the config
	lastKnown string
	lastList  string
}

// NewKubelet returns a kubelet over rt that writes its timeline to out,
// times relative to start.
func NewKubelet(cfg podworker.Config, rt *FakeRuntime, out io.Writer, start time.Time) (*Kubelet, error) {
	w, err := podworker.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Kubelet{Workers: w, Runtime: rt, Config: map[types.UID]*v1.Pod{}, out: out, start: start,
		FinishedAt: map[types.UID]time.Time{}, TerminatingAttempts: map[types.UID]int{},
		names: map[types.UID]string{}}, nil
}

func (k *Kubelet) logf(now time.Time, what, format string, args ...any) {
	fmt.Fprintf(k.out, "%5s  %-10s %s\n", now.Sub(k.start).Round(time.Millisecond), what, fmt.Sprintf(format, args...))
}

func name(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// Add handles a pod added to the config.
func (k *Kubelet) Add(now time.Time, p *v1.Pod) {
	k.Config[p.UID] = p
	k.names[p.UID] = p.Name
	r := k.Workers.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
	k.logf(now, "config", "add %s: %v", name(p), r.Outcome)
}

// Delete handles a deletion in the API with the given grace period. A force
// delete (grace 0) also removes the pod from the config at once: the API
// object is gone, so nothing will ever send another update for it.
func (k *Kubelet) Delete(now time.Time, p *v1.Pod, grace int64) {
	c := p.DeepCopy()
	c.DeletionTimestamp = &metav1.Time{Time: now}
	c.DeletionGracePeriodSeconds = &grace
	r := k.Workers.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeUpdate, Pod: c})
	what := "delete"
	if grace == 0 {
		what = "force delete"
		delete(k.Config, p.UID)
	} else {
		k.Config[p.UID] = c
	}
	k.logf(now, "config", "%s %s: %v%s", what, name(p), r.Outcome, cancelNote(r))
}

func cancelNote(r podworker.UpdateResult) string {
	if r.CancelInFlight {
		return " (cancel the running step)"
	}
	return ""
}

// Housekeeping reconciles the workers with the config and the runtime, as
// upstream HandlePodCleanups does: SyncKnownPods, re-create desired pods the
// workers forgot (UID reuse), kill runtime pods the workers do not know or
// have finished (#139833). It logs the known set when it changed.
func (k *Kubelet) Housekeeping(now time.Time) {
	desired := k.desired()
	known := k.Workers.SyncKnownPods(now, desired)
	for _, p := range desired {
		if _, ok := known[p.UID]; !ok && p.DeletionTimestamp == nil && !terminal(p) {
			r := k.Workers.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
			k.logf(now, "housekeep", "restart %s: %v", name(p), r.Outcome)
		}
	}
	pods, err := k.Runtime.Pods()
	if msg := fmt.Sprint(err); err != nil && msg != k.lastList {
		k.logf(now, "housekeep", "runtime pods unknown (%v): orphans wait", err)
	}
	k.lastList = fmt.Sprint(err)
	if err == nil {
		one := int64(1)
		for _, rp := range pods {
			if s, ok := known[rp.UID]; !ok || s.Finished {
				r := k.Workers.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeKill, RunningPod: &rp,
					Kill: &podworker.KillOptions{GracePeriodOverride: &one}})
				k.logf(now, "housekeep", "kill runtime-only %s/%s: %v", rp.Namespace, rp.Name, r.Outcome)
			}
		}
	}
	if s := renderKnown(k.names, known); s != k.lastKnown {
		k.lastKnown = s
		k.logf(now, "housekeep", "known: %s", s)
	}
}

func (k *Kubelet) desired() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(k.Config))
	for _, p := range k.Config {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

func renderKnown(names map[types.UID]string, known map[types.UID]podworker.PodWorkerSync) string {
	var parts []string
	for uid, s := range known {
		n := string(uid)
		if name, ok := names[uid]; ok {
			n = name
		}
		e := n + "=" + s.State.String()
		if s.Orphan {
			e += "(orphan)"
		}
		if s.Finished {
			e += "(finished)"
		}
		parts = append(parts, e)
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// RunDue runs every step due at now and returns how many ran.
func (k *Kubelet) RunDue(now time.Time) int {
	n := 0
	for {
		work, ok := k.Workers.Next(now)
		if !ok {
			return n
		}
		n++
		res := k.Execute(work)
		k.Workers.Complete(now, work, res)
		if work.Type == podworker.TerminatingWork {
			k.TerminatingAttempts[work.UID]++
		}
		outcome := "ok"
		switch {
		case res.Err != nil:
			outcome = "error: " + res.Err.Error()
		case work.Type == podworker.TerminatedWork:
			outcome = "ok, finished"
			k.FinishedAt[work.UID] = now
		}
		k.logf(now, "step", "%v %s%s -> %s", work.Type, workName(work), graceNote(work), outcome)
	}
}

func workName(w podworker.Work) string {
	if w.Pod != nil {
		return name(w.Pod)
	}
	return w.RunningPod.Namespace + "/" + w.RunningPod.Name + " (runtime-only)"
}

func graceNote(w podworker.Work) string {
	if w.GracePeriod == nil {
		return ""
	}
	return fmt.Sprintf(" grace=%ds", *w.GracePeriod)
}

// Execute performs one step against the runtime (upstream SyncPod,
// SyncTerminatingPod / SyncTerminatingRuntimePod, SyncTerminatedPod).
func (k *Kubelet) Execute(w podworker.Work) podworker.Result {
	switch w.Type {
	case podworker.SyncWork:
		if terminal(w.Pod) {
			return podworker.Result{Terminal: true}
		}
		return podworker.Result{Err: k.Runtime.Start(w.Pod)}
	case podworker.TerminatingWork:
		return podworker.Result{Err: k.Runtime.Stop(w.UID, *w.GracePeriod)}
	case podworker.TerminatedWork:
		return podworker.Result{Err: k.Runtime.Cleanup(w.UID)}
	}
	return podworker.Result{}
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}
