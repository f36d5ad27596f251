package podworker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/podworker"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newPod(name string) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid")},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

func forceDeleted(p *v1.Pod) *v1.Pod {
	c := p.DeepCopy()
	zero := int64(0)
	c.DeletionTimestamp = &metav1.Time{Time: epoch}
	c.DeletionGracePeriodSeconds = &zero
	return c
}

func grace(w podworker.Work) string {
	if w.GracePeriod == nil {
		return ""
	}
	return fmt.Sprintf(" (grace %ds)", *w.GracePeriod)
}

// Example drives the workers the way a kubelet would: config events in,
// housekeeping, steps out, and the clock moved to whatever comes next.
func Example() {
	w, err := podworker.New(podworker.DefaultConfig())
	if err != nil {
		panic(err)
	}
	web := newPod("web")
	config := []*v1.Pod{web}
	events := []struct {
		at time.Duration
		do func(now time.Time)
	}{
		{0, func(now time.Time) {
			w.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: web})
		}},
		{90 * time.Second, func(now time.Time) { // deleted in the API, 30 s grace
			deleting := web.DeepCopy()
			deleting.DeletionTimestamp = &metav1.Time{Time: now}
			deleting.DeletionGracePeriodSeconds = web.Spec.TerminationGracePeriodSeconds
			w.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeUpdate, Pod: deleting})
		}},
		{100 * time.Second, func(time.Time) { config = nil }}, // gone from the API
	}

	now := epoch
	for {
		for len(events) > 0 && !epoch.Add(events[0].at).After(now) {
			events[0].do(now)
			events = events[1:]
		}
		known := w.SyncKnownPods(now, config) // housekeeping
		for {
			work, ok := w.Next(now)
			if !ok {
				break
			}
			fmt.Printf("%v: %v %s%s\n", now.Sub(epoch), work.Type, work.Pod.Name, grace(work))
			now = now.Add(time.Second) // the step takes a second
			w.Complete(now, work, podworker.Result{})
		}
		// Sleep until the next deadline or event.
		wake, ok := w.NextDeadline()
		if len(events) > 0 && (!ok || epoch.Add(events[0].at).Before(wake)) {
			wake, ok = epoch.Add(events[0].at), true
		}
		if !ok {
			fmt.Printf("%v: idle, known pods: %d\n", now.Sub(epoch), len(known))
			return
		}
		now = wake
	}
	// Output:
	// 0s: sync web
	// 1m1s: sync web
	// 1m30s: terminating web (grace 30s)
	// 1m31s: terminated web
	// 1m40s: idle, known pods: 0
}

// A failed step is retried by the machine after the backoff period, with no
// further update from the caller.
func ExampleWorkers_Complete_retry() {
	w, _ := podworker.New(podworker.DefaultConfig())
	web := newPod("web")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: web})

	work, _ := w.Next(epoch)
	fmt.Println(work.Type, "failed")
	w.Complete(epoch, work, podworker.Result{Err: errors.New("runtime unavailable")})

	at, _ := w.NextDeadline()
	fmt.Println("retry at", at.Sub(epoch))
	work, _ = w.Next(at)
	fmt.Println(work.Type, "retried", work.UpdateType)
	// Output:
	// terminating failed
	// retry at 10s
	// terminating retried sync
}

// A kill that arrives while a sync runs asks the caller to cancel it; the
// terminating step follows as soon as the cancelled step is reported.
func ExampleWorkers_UpdatePod_cancelInFlight() {
	w, _ := podworker.New(podworker.DefaultConfig())
	web := newPod("web")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: web})
	syncing, _ := w.Next(epoch)

	r := w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: web,
		Kill: &podworker.KillOptions{Evict: true}})
	fmt.Println(r.Outcome, "cancel:", r.CancelInFlight)

	w.Complete(epoch, syncing, podworker.Result{Err: context.Canceled})
	work, _ := w.Next(epoch)
	fmt.Println(work.Type, work.UpdateType, grace(work))
	fmt.Println("content may go:", w.ShouldPodContentBeRemoved(web.UID))
	// Output:
	// accepted cancel: true
	// terminating kill  (grace 30s)
	// content may go: true
}

// A force-deleted pod whose termination fails is no longer in the config,
// so the caller sends nothing more for it; the machine keeps retrying it
// until it finishes (upstream #113145).
func ExampleWorkers_SyncKnownPods() {
	w, _ := podworker.New(podworker.DefaultConfig())
	web := newPod("web")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: web})
	work, _ := w.Next(epoch)
	w.Complete(epoch, work, podworker.Result{})

	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeUpdate, Pod: forceDeleted(web)})
	fmt.Printf("%+v\n", w.SyncKnownPods(epoch, nil)[web.UID])

	runtimeUp := false
	now := epoch
	for !w.ShouldPodBeFinished(web.UID) {
		work, ok := w.Next(now)
		if !ok {
			now, _ = w.NextDeadline()
			runtimeUp = now.Sub(epoch) >= 20*time.Second
			continue
		}
		var res podworker.Result
		if !runtimeUp {
			res.Err = errors.New("runtime unavailable")
		}
		fmt.Printf("%v %v%s err=%v\n", now.Sub(epoch), work.Type, grace(work), res.Err)
		w.Complete(now, work, res)
	}
	fmt.Println("known after housekeeping:", len(w.SyncKnownPods(now, nil)))
	// Output:
	// {State:terminating Orphan:true HasConfig:true Static:false Finished:false}
	// 0s terminating (grace 1s) err=runtime unavailable
	// 10s terminating (grace 1s) err=runtime unavailable
	// 20s terminating (grace 1s) err=<nil>
	// 20s terminated err=<nil>
	// known after housekeeping: 0
}

// Static pods with the same full name run one at a time: the second waits,
// without polling, until the first is finished.
func ExampleWorkers_Next_staticPods() {
	w, _ := podworker.New(podworker.DefaultConfig())
	static := func(uid string) *v1.Pod {
		p := newPod("etcd")
		p.UID = types.UID(uid)
		p.Annotations = map[string]string{podworker.ConfigSourceAnnotation: "file"}
		return p
	}
	old, replacement := static("etcd-1"), static("etcd-2")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: old})
	work, _ := w.Next(epoch)
	w.Complete(epoch, work, podworker.Result{})
	fmt.Println(work.Type, work.UID)

	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: replacement})
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: old})

	for {
		work, ok := w.Next(epoch)
		if !ok {
			break
		}
		fmt.Println(work.Type, work.UID, "| old mirror still terminating:",
			w.IsPodForMirrorPodTerminatingByFullName(podworker.FullName("etcd", "default")))
		w.Complete(epoch, work, podworker.Result{})
	}
	// Output:
	// sync etcd-1
	// terminating etcd-1 | old mirror still terminating: true
	// terminated etcd-1 | old mirror still terminating: false
	// sync etcd-2 | old mirror still terminating: false
}

// After a kubelet restart, a pod that already completed is known terminated
// at once when the caller states that the runtime runs nothing for it; only
// its cleanup step runs.
func ExampleUpdateOptions_runtimeTerminated() {
	w, _ := podworker.New(podworker.DefaultConfig())
	job := newPod("job")
	job.Status.Phase = v1.PodSucceeded
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: job, RuntimeTerminated: true})
	fmt.Println("known terminated:", w.IsPodKnownTerminated(job.UID))
	work, _ := w.Next(epoch)
	fmt.Println(work.Type)
	// Output:
	// known terminated: true
	// terminated
}

// A Create for a UID whose termination is under way is a restart request
// (static pods with a fixed UID): once the old pod finished, SyncKnownPods
// forgets it and the caller sends the Create again.
func ExampleOutcome_restartRequested() {
	w, _ := podworker.New(podworker.DefaultConfig())
	p := newPod("kube-proxy")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: p})
	fmt.Println(w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p}).Outcome)
	for {
		work, ok := w.Next(epoch)
		if !ok {
			break
		}
		w.Complete(epoch, work, podworker.Result{})
	}
	known := w.SyncKnownPods(epoch, []*v1.Pod{p})
	_, stillKnown := known[p.UID]
	fmt.Println("known:", stillKnown)
	fmt.Println(w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p}).Outcome)
	fmt.Println("restarted:", w.Stats().RestartedPods)
	// Output:
	// restart-requested
	// known: false
	// accepted
	// restarted: 1
}

// A force deletion (grace period 0) reaches the kubelet as a REMOVE: it is a
// TypeKill with the last known Pod, and the step runs with the 1s minimum
// grace. Work.PodRef names a config pod and a runtime-only pod alike.
func ExampleWork_PodRef() {
	w, _ := podworker.New(podworker.DefaultConfig())
	web := newPod("web")
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: web})
	work, _ := w.Next(epoch)
	w.Complete(epoch, work, podworker.Result{})
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill, Pod: forceDeleted(web)})
	work, _ = w.Next(epoch)
	fmt.Printf("%s %s%s\n", work.Type, work.PodRef(), grace(work))

	one := int64(1)
	w.UpdatePod(epoch, podworker.UpdateOptions{Type: podworker.TypeKill,
		RunningPod: &podworker.RunningPod{UID: "leftover-uid", Namespace: "default", Name: "leftover"},
		Kill:       &podworker.KillOptions{GracePeriodOverride: &one}})
	work, _ = w.Next(epoch)
	fmt.Printf("%s %s%s\n", work.Type, work.PodRef(), grace(work))
	// Output:
	// terminating default/web (grace 1s)
	// terminating default/leftover (grace 1s)
}
