// Package podworker is the kubelet's pod worker state machine
// (pkg/kubelet/pod_workers.go) rebuilt to be driven by its caller: no
// goroutine per pod, no channels, no clock. Updates go in with UpdatePod,
// one step per pod at a time comes out of Next, the caller runs it (set the
// pod up, stop its containers, release its resources) and reports with
// Complete; the machine schedules what comes next, retries included, and
// NextDeadline says when to call Next again.
//
// # Upstream behaviour modelled
//
// The pod worker after the March 2023 rework (#113145, Kubernetes v1.27) as
// it stands in v1.33–v1.37 (read at v1.37.2; pod_workers.go and the pod
// metrics it feeds are unchanged since v1.36.3): pending/active updates,
// observedRuntime, static pod serialization, SyncKnownPods with orphan
// replay, the eight queries and the metrics of HandlePodCleanups.
// Kubernetes v1.37.2 decisions are the default; the places where we differ
// are listed below.
//
// # States
//
//	state            | set by                                           | next step (Next)
//	-----------------+--------------------------------------------------+-------------------------------
//	(no record)      | -                                                | -
//	P pending start  | first UpdatePod with a Pod                       | SyncWork once allowed to start
//	S syncing        | a SyncWork step was handed out                   | SyncWork: updates at once,
//	                 |                                                  |   resync after ResyncInterval
//	R term requested | deletionTimestamp, terminal phase, TypeKill,     | TerminatingWork at once (a
//	                 |   runtime-only kill, orphaned by SyncKnownPods,  |   SyncWork in flight is asked
//	                 |   SyncWork completed with Terminal               |   to cancel: CancelInFlight)
//	T terminating    | a TerminatingWork step was handed out            | TerminatingWork again on error
//	D terminated     | TerminatingWork succeeded; or first sight of a   | TerminatedWork
//	                 |   terminal pod with RuntimeTerminated            |
//	F finished       | TerminatedWork succeeded; a static pod killed    | none (only a leftover runtime
//	                 |   before it started (no step at all)             |   kill, see #139833 below)
//	(no record)      | SyncKnownPods: finished orphan, finished with a  | -
//	                 |   restart requested, orphan never started;       |
//	                 |   a runtime-only pod's TerminatingWork succeeded |
//
// Any failed step leaves the state unchanged and is retried after
// BackoffPeriod; a newer pending update is handed out at once instead.
// Static pods with the same full name (name_namespace) run one at a time, in
// arrival order: a later one stays in P until the earlier one is finished.
// Flags beside the state: deleted and evicted (drive
// ShouldPodContentBeRemoved), restart requested, observed in the runtime.
//
// # The caller loop
//
//	w, err := podworker.New(podworker.DefaultConfig())
//	for {
//		now := clock.Now()
//		// Config changes (informers, static pod files), as upstream's
//		// HandlePod* handlers map them (pkg/kubelet/kubelet.go, v1.37.2):
//		// ADD → TypeCreate; UPDATE → TypeUpdate, which is how a graceful
//		// deletion arrives (DeletionTimestamp and DeletionGracePeriodSeconds
//		// set); REMOVE → TypeKill with the last known Pod (deletePod sends
//		// SyncPodKill), which is what a force deletion (grace period 0: the
//		// object leaves the API at once, with no UPDATE first) maps to. Its
//		// Work.GracePeriod is the Pod's DeletionGracePeriodSeconds when set
//		// (0 for a force deletion, raised to the 1s minimum as upstream),
//		// else the spec's terminationGracePeriodSeconds.
//		for _, ev := range configEvents {
//			r := w.UpdatePod(now, podworker.UpdateOptions{Type: ev.Type, Pod: ev.Pod, MirrorPod: ev.Mirror})
//			if r.CancelInFlight {
//				cancel[ev.Pod.UID]() // the running step returns context.Canceled
//			}
//		}
//		// Housekeeping, every 2 s:
//		known := w.SyncKnownPods(now, configPods)
//		for _, p := range activeConfigPods { // admitted, not terminal
//			if _, ok := known[p.UID]; !ok {
//				w.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
//			}
//		}
//		for _, rp := range runtimePods {
//			if k, ok := known[rp.UID]; !ok || k.Finished {
//				w.UpdatePod(now, podworker.UpdateOptions{Type: podworker.TypeKill, RunningPod: rp,
//					Kill: &podworker.KillOptions{GracePeriodOverride: &one}})
//			}
//		}
//		publish(w.Stats())
//		// Steps (in parallel if wanted: one per pod at a time is guaranteed):
//		for {
//			work, ok := w.Next(now)
//			if !ok {
//				break
//			}
//			res := run(work) // SyncPod, SyncTerminatingPod(work.GracePeriod), SyncTerminatedPod, …
//			w.Complete(clock.Now(), work, res)
//		}
//		wait until w.NextDeadline(), the next housekeeping, or the next event
//	}
//
// # Time
//
// Every time-dependent method takes now (the caller's clock.Now(), or a fake
// clock's time). The machine stores now as given, with its monotonic clock
// reading, derives every due time with Add and compares with Before and
// After: when both instants carry a monotonic reading Go compares those, so
// a step of the wall clock (NTP, a resumed VM) makes no step due early;
// instants without one (fake clocks) compare by wall time. Time going
// backwards counts as no time elapsed: the machine keeps the latest instant
// it was given. A step is
// due when its time is not after now. Delays: ResyncInterval after a
// successful SyncWork, BackoffPeriod after an error (or Result.RetryAfter,
// capped at the longer of ResyncInterval and BackoffPeriod; none with
// Result.RetryNow), none after a phase change; Config.Jitter may stretch
// them.
//
// # Concurrency
//
// A Workers is safe for concurrent use; one mutex guards it, and no caller
// code (Config.Jitter) runs while it is held. Next never hands out two steps
// for one pod: a pod is in flight from Next until its Complete. A Complete
// whose generation is not the pod's current one is ignored, so a late or
// duplicated completion cannot move a pod.
//
// # Differences from upstream
//
// Issue and PR numbers are kubernetes/kubernetes's; functions are those of
// pkg/kubelet/pod_workers.go at v1.37.2.
//
//   - The machine owns its retries: upstream (completeWork) only enqueues a
//     delay in the kubelet work queue, which turns it into an UpdatePod only
//     for pods still in config, so a force-deleted pod whose termination hit
//     a runtime error stayed Terminating until the kubelet restarted
//     (#113145, #113091). Here every failed step is retried after
//     BackoffPeriod, orphans included, with no further UpdatePod; and an
//     orphan is not replayed on every SyncKnownPods ahead of its backoff.
//   - Error delays: upstream retries every failed step after its fixed
//     backOffPeriod (1 s for "network is not ready"). Here the caller may
//     pass Result.RetryAfter, capped at the longer of ResyncInterval and
//     BackoffPeriod so a failing pod is retried no later than a healthy one
//     is resynced, or Result.RetryNow. UpstreamJitter saturates where
//     upstream's wait.Jitter overflows (delays above about 195 years).
//   - The zero UpdateType is invalid and rejected (upstream: "sync"), so a
//     forgotten Type is reported; machine-made retries and replays carry
//     TypeSync, as upstream's do.
//   - Outcomes are explicit: a Create during termination is
//     OutcomeRestartRequested (upstream UpdatePod only sets
//     restartRequested; the UID reuse of #104648), a runtime-only kill of a
//     terminated pod OutcomeIgnoredTerminated, malformed input
//     OutcomeRejected with an error.
//   - CancelInFlight is reported only when a step is in flight (upstream
//     UpdatePod calls the cancel function whether or not a sync runs).
//   - The grace period is always handed to the terminating step, also after
//     a natural completion and on replays (upstream completeSync and
//     requeueLastPodUpdate replay the last update without one). A force
//     delete's 0 counts as set: upstream's calculateEffectiveGracePeriod
//     reads it as "unset", so a larger kill override in the same update
//     raised the period (found by the randomized test). Negative values
//     count as 0 and end up as 1.
//   - The deleted and evicted flags are sticky ORs (upstream UpdatePod sets
//     them only on the transition to terminating, and replaces the kill
//     options of the active update), so a pod first seen terminal and
//     deleting (#118497) has its content removed.
//   - The static pod waiting list is exact and waiting pods do not poll:
//     they become runnable when their turn comes (upstream
//     allowStaticPodStart prunes waitingToStartStaticPodsByFullname lazily
//     and re-checks on each backoff). A static pod killed before it started
//     finishes with no step, and its completion is observable at once
//     through IsPodKnownTerminated, where upstream left kill-and-wait
//     callers to time out; it also reads ShouldPodContainersBeTerminating. A
//     never-started static pod that was seen in the runtime gets a
//     TerminatingWork step instead, since containers with its UID run.
//   - SyncKnownPods reports finished pods with PodWorkerSync.Finished, and a
//     runtime-only kill for a finished pod is carried out as a leftover
//     cleanup step while the pod stays finished (#139833: upstream reported
//     them as known, so runtime leftovers with the same UID were never
//     killed).
//   - First-sight terminal pods rely on the caller's explicit
//     UpdateOptions.RuntimeTerminated instead of a pod-status cache lookup
//     (#105523, #117019); they still get their TerminatedWork step, except
//     static pods, which (as upstream) can never start once termination is
//     requested and so finish at once with no step.
//   - A runtime-only pod whose config pod arrives while its termination runs
//     continues as that pod (TerminatedWork) instead of being forgotten with
//     the update.
//   - Stats derives the desired, active and mirror gauges from the desired
//     set passed to SyncKnownPods (see Stats).
//   - Not modelled: the pod-status cache wait before each step, completion
//     channels and status functions of kills (poll IsPodKnownTerminated; the
//     caller keeps its own status overrides), and latency metrics.
//
// # Performance
//
// Next, Complete and UpdatePod are O(log n) on an indexed heap; in steady
// state they allocate nothing (pinned by TestAllocations). SyncKnownPods is
// O(n + m) and allocates its result map; Stats is O(n).
package podworker
