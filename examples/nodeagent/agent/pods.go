package agent

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// isMirror reports whether p is a mirror pod (the API copy of a static
// pod): the agent never runs those.
func isMirror(p *v1.Pod) bool {
	_, ok := p.Annotations[MirrorAnnotation]
	return ok
}

// ours reports whether p is bound to one of the agent's nodes.
func (a *Agent) ours(p *v1.Pod) bool {
	_, ok := a.nodes[p.Spec.NodeName]
	return ok
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// podEvent feeds an informer add or update to the workers (upstream
// HandlePodAdditions and HandlePodUpdates): Create the first time, Update
// after; a step in flight that must stop is cancelled. An update that
// changes only the pod's status is not one: the kubelet calls it a
// reconcile (checkAndUpdatePod in pkg/kubelet/config/config.go at v1.37.2)
// and leaves it to its status manager's next sync (SyncStatuses), so a
// status another writer set is not written back at once.
func (a *Agent) podEvent(old, obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok || !a.ours(p) || isMirror(p) {
		return
	}
	if o, ok := old.(*v1.Pod); ok && !podsDifferSemantically(o, p) {
		return
	}
	a.configMu.Lock()
	defer a.configMu.Unlock()
	typ := podworker.TypeUpdate
	if old == nil {
		typ = podworker.TypeCreate
	}
	// RuntimeTerminated matters only on the first update of a terminal pod.
	rtTerminated := typ == podworker.TypeCreate && terminal(p) && !a.runtimeHas(p.UID)
	a.update(podworker.UpdateOptions{Type: typ, Pod: p, RuntimeTerminated: rtTerminated})
}

// podsDifferSemantically reports whether an update changes more than the
// pod's status: its UID, spec, labels, annotations or deletion (upstream
// podsDifferSemantically, which ignores the kubelet's local annotations,
// of which the API's pods have none).
func podsDifferSemantically(old, p *v1.Pod) bool {
	return old.UID != p.UID || !reflect.DeepEqual(old.Spec, p.Spec) || !maps.Equal(old.Labels, p.Labels) ||
		!maps.Equal(old.Annotations, p.Annotations) || !old.DeletionTimestamp.Equal(p.DeletionTimestamp) ||
		!ptr.Equal(old.DeletionGracePeriodSeconds, p.DeletionGracePeriodSeconds)
}

// SyncStatuses is one pass of the kubelet status manager's sync (syncBatch
// and needsReconcile in pkg/kubelet/status/status_manager.go at v1.37.2),
// which the agent runs every Config.StatusSyncPeriod: every pod of its
// nodes whose running status the agent wrote but whose status in the API
// differs from it (another writer changed it, such as the node lifecycle
// controller's MarkPodsNotReady, which sets Ready=False) is synced again,
// and its SyncWork step writes the agent's status back. A pod being
// deleted or terminated is left to its termination. For a static pod its
// mirror pod is compared. It returns how many pods it handed to the
// workers.
//
// The agent's other syncs (a pod's resync every PodWorker.ResyncInterval,
// an update of its spec) write its status only when it changed in the
// agent's view, as the kubelet's status manager writes only what differs
// from its cache (SetPodStatus): what another writer set waits for this
// sync.
func (a *Agent) SyncStatuses(ctx context.Context) int {
	start := a.clock.Now()
	a.configMu.Lock()
	defer a.configMu.Unlock()
	n := 0
	defer func() {
		a.mu.Lock()
		a.counters.StatusSyncs++
		a.counters.StatusResyncs += n
		a.counters.LastStatusSync = start
		a.mu.Unlock()
	}()
	running, err := a.cfg.Runtime.ListPods(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Runtime pods unknown: status sync skipped", "err", err)
		return 0
	}
	runs := make(map[types.UID]RuntimePod, len(running))
	for _, rp := range running {
		if rp.Running {
			runs[rp.UID] = rp
		}
	}
	for _, p := range a.desired() {
		api := p
		if podworker.IsStaticPod(p) {
			if api = a.mirrorOf(p); api == nil {
				continue
			}
		}
		rp, ok := runs[p.UID]
		a.mu.Lock()
		at, wrote := a.written[p.UID]
		a.mu.Unlock()
		if !ok || !wrote || !at.Equal(rp.StartedAt) || api.DeletionTimestamp != nil || terminal(api) ||
			a.workers.IsPodTerminationRequested(p.UID) || !a.workers.CouldHaveRunningContainers(p.UID) {
			continue
		}
		want := api.Status.DeepCopy()
		runningStatus(want, p, rp)
		if equalStatus(&api.Status, want) {
			continue
		}
		klog.FromContext(ctx).V(3).Info("Pod status differs from the agent's: syncing it", "pod", klog.KObj(api))
		a.mu.Lock()
		a.resync[p.UID] = true
		a.mu.Unlock()
		a.update(podworker.UpdateOptions{Type: podworker.TypeSync, Pod: p})
		n++
	}
	return n
}

// podDeleted handles a pod gone from the API (upstream HandlePodRemoves):
// the pod is killed, with the grace period it was deleted with (0 for a
// force delete, which the workers raise to 1).
func (a *Agent) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok || !a.ours(p) || isMirror(p) {
		return
	}
	a.configMu.Lock()
	defer a.configMu.Unlock()
	a.update(podworker.UpdateOptions{Type: podworker.TypeKill, Pod: p})
}

// update sends one update to the workers and acts on the result.
func (a *Agent) update(o podworker.UpdateOptions) podworker.UpdateResult {
	r := a.workers.UpdatePod(a.clock.Now(), o)
	if r.CancelInFlight {
		a.mu.Lock()
		if cancel, ok := a.cancels[uidOf(o)]; ok {
			cancel()
		}
		a.mu.Unlock()
	}
	a.kick()
	return r
}

func uidOf(o podworker.UpdateOptions) types.UID {
	if o.Pod != nil {
		return o.Pod.UID
	}
	if o.RunningPod != nil {
		return o.RunningPod.UID
	}
	return ""
}

// runtimeHas reports whether the runtime holds uid (false when it cannot
// be listed).
func (a *Agent) runtimeHas(uid types.UID) bool {
	pods, err := a.cfg.Runtime.ListPods(context.Background())
	if err != nil {
		return false
	}
	for _, p := range pods {
		if p.UID == uid {
			return true
		}
	}
	return false
}

// desired returns the config pods: the API pods bound to the agent's nodes
// (mirror pods excluded) and the static pods.
func (a *Agent) desired() []*v1.Pod {
	var out []*v1.Pod
	for name := range a.nodes {
		objs, _ := a.informer.GetIndexer().ByIndex(nodeIndex, name)
		for _, o := range objs {
			if p := o.(*v1.Pod); !isMirror(p) {
				out = append(out, p)
			}
		}
	}
	if a.static != nil {
		out = append(out, a.static.pods()...)
	}
	return out
}

// Housekeeping is one pass of upstream HandlePodCleanups
// (pkg/kubelet/kubelet_pods.go at v1.37.2): SyncKnownPods with the config
// pods; a Create for every active desired pod the workers forgot (UID
// reuse); a kill for terminal, deleted pods the workers do not know
// (kubernetes/kubernetes#118497); a runtime-only kill (grace 1) for every
// runtime pod whose UID the workers do not know or, unlike upstream (which
// counts a finished pod as known), finished (kubernetes/kubernetes#139833);
// mirror pods without a static pod are deleted; then the metrics are
// published.
func (a *Agent) Housekeeping(ctx context.Context) {
	a.housekeepConfig(ctx)
	if a.static != nil {
		a.cleanupMirrors(ctx)
	}
	s := a.workers.Stats()
	a.mu.Lock()
	a.lastPub = s
	a.counters.Housekeepings++
	a.mu.Unlock()
	a.kick()
}

// housekeepConfig is the part of Housekeeping that must not interleave
// with config events. The runtime is listed before SyncKnownPods: every
// pod in the listing was started by a step, so it has a record by then,
// and a UID missing from the result is a true orphan (a pod that starts
// after the listing is simply not in it).
func (a *Agent) housekeepConfig(ctx context.Context) {
	logger := klog.FromContext(ctx)
	a.configMu.Lock()
	defer a.configMu.Unlock()
	running, listErr := a.cfg.Runtime.ListPods(ctx)
	now := a.clock.Now()
	desired := a.desired()
	known := a.workers.SyncKnownPods(now, desired)
	for _, p := range desired {
		_, ok := known[p.UID]
		switch {
		case ok:
		case p.DeletionTimestamp == nil && !terminal(p):
			r := a.update(podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
			logger.V(2).Info("Restarting pod worker", "pod", klog.KObj(p), "outcome", r.Outcome)
			known[p.UID] = podworker.PodWorkerSync{} // not a runtime orphan
		case p.DeletionTimestamp != nil && terminal(p) && !podworker.IsStaticPod(p):
			a.update(podworker.UpdateOptions{Type: podworker.TypeKill, Pod: p, RuntimeTerminated: true})
			known[p.UID] = podworker.PodWorkerSync{}
		}
	}
	if listErr != nil {
		logger.V(2).Info("Runtime pods unknown: orphans wait", "err", listErr)
		return
	}
	one := int64(1)
	for _, rp := range running {
		if s, ok := known[rp.UID]; ok && !s.Finished {
			continue
		}
		rpod := rp.RunningPod
		r := a.update(podworker.UpdateOptions{Type: podworker.TypeKill, RunningPod: &rpod,
			Kill: &podworker.KillOptions{GracePeriodOverride: &one}})
		logger.V(2).Info("Killing runtime pod unknown to the workers", "pod", klog.KRef(rp.Namespace, rp.Name), "uid", rp.UID, "outcome", r.Outcome)
	}
}

// RunStep performs one pod worker step (upstream SyncPod,
// SyncTerminatingPod or SyncTerminatingRuntimePod, SyncTerminatedPod). The
// step's context is cancelled when an update asks for it
// (UpdateResult.CancelInFlight).
func (a *Agent) RunStep(ctx context.Context, w podworker.Work) podworker.Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.cancels[w.UID] = cancel
	a.mu.Unlock()
	var res podworker.Result
	switch w.Type {
	case podworker.SyncWork:
		res = a.syncPod(ctx, w)
	case podworker.TerminatingWork:
		res = a.syncTerminating(ctx, w)
	case podworker.TerminatedWork:
		res = a.syncTerminated(ctx, w)
	}
	a.mu.Lock()
	delete(a.cancels, w.UID)
	a.counters.Steps[w.Type]++
	if res.Err != nil {
		a.counters.StepErrors[w.Type]++
	}
	a.mu.Unlock()
	if res.Err != nil {
		klog.FromContext(ctx).V(3).Info("Step failed", "step", w.String(), "err", res.Err)
	}
	return res
}

func (a *Agent) syncPod(ctx context.Context, w podworker.Work) podworker.Result {
	p := w.Pod
	if terminal(p) {
		return podworker.Result{Terminal: true}
	}
	if podworker.IsStaticPod(p) {
		if err := a.ensureMirror(ctx, p); err != nil {
			return podworker.Result{Err: err}
		}
	}
	rp, err := a.cfg.Runtime.StartPod(ctx, p.Spec.NodeName, p)
	if err != nil {
		return podworker.Result{Err: err}
	}
	// The status of this run was written, and no status sync asks for it
	// again: nothing changed in the agent's view.
	a.mu.Lock()
	at, wrote := a.written[p.UID]
	resync := a.resync[p.UID]
	delete(a.resync, p.UID)
	a.mu.Unlock()
	if wrote && at.Equal(rp.StartedAt) && !resync {
		return podworker.Result{}
	}
	done, err := a.writeStatus(ctx, p, func(s *v1.PodStatus) { runningStatus(s, p, rp) })
	if done {
		a.mu.Lock()
		a.written[p.UID] = rp.StartedAt
		a.mu.Unlock()
	}
	return podworker.Result{Err: err}
}

func (a *Agent) syncTerminating(ctx context.Context, w podworker.Work) podworker.Result {
	rp := w.RunningPod
	if w.Pod != nil {
		rp = &podworker.RunningPod{UID: w.Pod.UID, Name: w.Pod.Name, Namespace: w.Pod.Namespace}
	}
	grace := time.Duration(*w.GracePeriod) * time.Second
	stopped, err := a.cfg.Runtime.KillPod(ctx, *rp, grace)
	if err != nil {
		return podworker.Result{Err: err}
	}
	if w.Pod == nil {
		// Runtime-only: no TerminatedWork follows (upstream
		// SyncTerminatingRuntimePod); release the rest now.
		return podworker.Result{Err: a.cfg.Runtime.RemovePod(ctx, rp.UID)}
	}
	a.mu.Lock()
	a.exits[w.UID] = stopped
	a.mu.Unlock()
	return podworker.Result{}
}

// syncTerminated writes the final status, releases the pod's resources and,
// for a pod being deleted, confirms the deletion: a delete with grace 0
// and a UID precondition (upstream status manager, canBeDeleted).
func (a *Agent) syncTerminated(ctx context.Context, w podworker.Work) podworker.Result {
	p := w.Pod
	a.mu.Lock()
	exit, ok := a.exits[w.UID]
	a.mu.Unlock()
	if !ok {
		exit = RuntimePod{FinishedAt: a.clock.Now()}
	}
	if err := a.cfg.Runtime.RemovePod(ctx, p.UID); err != nil {
		return podworker.Result{Err: err}
	}
	a.mu.Lock()
	delete(a.written, p.UID)
	delete(a.resync, p.UID)
	a.mu.Unlock()
	static := podworker.IsStaticPod(p)
	if cur := a.cached(p); static || cur == nil || !terminal(cur) {
		_, err := a.writeStatus(ctx, p, func(s *v1.PodStatus) { terminatedStatus(s, p, exit) })
		if err != nil {
			return podworker.Result{Err: err}
		}
	}
	if !static {
		cur := a.cached(p)
		if cur == nil {
			cur = p
		}
		if cur.DeletionTimestamp != nil {
			uid := p.UID
			err := a.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
			switch {
			case err == nil:
				a.mu.Lock()
				a.counters.PodsDeleted++
				a.mu.Unlock()
			case apierrors.IsNotFound(err), apierrors.IsConflict(err): // gone, or another pod by now
			default:
				return podworker.Result{Err: fmt.Errorf("agent: delete pod %s/%s: %w", p.Namespace, p.Name, err)}
			}
		}
	}
	a.mu.Lock()
	delete(a.exits, w.UID)
	a.mu.Unlock()
	return podworker.Result{}
}

// cached returns the informer's copy of p (same UID), or nil.
func (a *Agent) cached(p *v1.Pod) *v1.Pod {
	obj, ok, _ := a.informer.GetIndexer().GetByKey(p.Namespace + "/" + p.Name)
	if !ok {
		return nil
	}
	if c := obj.(*v1.Pod); c.UID == p.UID {
		return c
	}
	return nil
}

// maxStatusAttempts bounds the conflict retries of one status write.
const maxStatusAttempts = 5

// writeStatus applies set to the API pod's status (the mirror pod's, for a
// static pod) and writes it with the pod's resourceVersion when it
// changed; a conflict reads the pod again. A pod gone from the API is not
// an error. It reports whether the API holds the status: written, or
// already so.
func (a *Agent) writeStatus(ctx context.Context, p *v1.Pod, set func(*v1.PodStatus)) (bool, error) {
	target := a.cached(p)
	if podworker.IsStaticPod(p) {
		target = a.mirrorOf(p)
	}
	if target == nil {
		return false, nil // not in the API (force deleted, or no mirror yet)
	}
	pods := a.client.CoreV1().Pods(target.Namespace)
	for attempt := 0; ; attempt++ {
		next := target.DeepCopy()
		set(&next.Status)
		if equalStatus(&target.Status, &next.Status) {
			return true, nil
		}
		_, err := pods.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		a.mu.Lock()
		a.counters.StatusWrites++
		if apierrors.IsConflict(err) {
			a.counters.StatusConflicts++
		}
		a.mu.Unlock()
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err) || attempt+1 >= maxStatusAttempts:
			return false, fmt.Errorf("agent: status of pod %s/%s: %w", target.Namespace, target.Name, err)
		}
		fresh, err := pods.Get(ctx, target.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if fresh.UID != target.UID {
			return false, nil
		}
		target = fresh
	}
}

// equalStatus compares the fields the agent writes.
func equalStatus(a, b *v1.PodStatus) bool {
	if a.Phase != b.Phase || a.HostIP != b.HostIP || a.PodIP != b.PodIP || len(a.Conditions) != len(b.Conditions) ||
		len(a.ContainerStatuses) != len(b.ContainerStatuses) || !a.StartTime.Equal(b.StartTime) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		x, y := a.ContainerStatuses[i], b.ContainerStatuses[i]
		if x.Name != y.Name || x.Ready != y.Ready || x.Image != y.Image ||
			(x.State.Running == nil) != (y.State.Running == nil) || (x.State.Terminated == nil) != (y.State.Terminated == nil) {
			return false
		}
		if x.State.Terminated != nil && x.State.Terminated.ExitCode != y.State.Terminated.ExitCode {
			return false
		}
		if x.State.Running != nil && !x.State.Running.StartedAt.Equal(&y.State.Running.StartedAt) {
			return false
		}
	}
	return true
}

// setCondition sets one pod condition, keeping its transition time when
// the status does not change.
func setCondition(s *v1.PodStatus, typ v1.PodConditionType, st v1.ConditionStatus, reason string, now metav1.Time) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			if s.Conditions[i].Status != st {
				s.Conditions[i].LastTransitionTime = now
			}
			s.Conditions[i].Status, s.Conditions[i].Reason = st, reason
			return
		}
	}
	s.Conditions = append(s.Conditions, v1.PodCondition{Type: typ, Status: st, Reason: reason, LastTransitionTime: now})
}

// hostIP is the address every agent node reports (loopback: the agent's
// containers are not reachable).
const hostIP = "127.0.0.1"

// runningStatus is the status of a pod whose containers run: phase
// Running, every container running and ready, the kubelet's conditions
// True.
func runningStatus(s *v1.PodStatus, p *v1.Pod, rp RuntimePod) {
	started := metav1.NewTime(rp.StartedAt.Truncate(time.Second))
	s.Phase = v1.PodRunning
	s.HostIP, s.PodIP = hostIP, hostIP
	if s.StartTime == nil || s.StartTime.After(started.Time) {
		s.StartTime = &started
	}
	for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		setCondition(s, typ, v1.ConditionTrue, "", started)
	}
	s.ContainerStatuses = s.ContainerStatuses[:0]
	for _, c := range p.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
			Ready: true, Started: ptr.To(true), ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}})
	}
}

// terminatedStatus is the final status: every container terminated with
// the runtime's exit code, phase Succeeded when all exited 0 and Failed
// otherwise (upstream getPhase for a pod whose containers will not
// restart), Ready and ContainersReady False.
func terminatedStatus(s *v1.PodStatus, p *v1.Pod, exit RuntimePod) {
	finished := metav1.NewTime(exit.FinishedAt.Truncate(time.Second))
	started := metav1.NewTime(exit.StartedAt.Truncate(time.Second))
	s.Phase = v1.PodSucceeded
	if exit.ExitCode != 0 {
		s.Phase = v1.PodFailed
	}
	for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.ContainersReady, v1.PodReady} {
		setCondition(s, typ, v1.ConditionFalse, "PodCompleted", finished)
	}
	reason := "Completed"
	if exit.ExitCode != 0 {
		reason = "Error"
	}
	s.ContainerStatuses = s.ContainerStatuses[:0]
	for _, c := range p.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
			Started: ptr.To(false), ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exit.ExitCode, Reason: reason,
				StartedAt: started, FinishedAt: finished}}})
	}
}
