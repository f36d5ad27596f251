// Package taints decides node taints and NoExecute evictions without
// goroutines: which NoSchedule taints a node's conditions call for, what to
// do with the NoExecute health taints, how a pod's tolerations match a
// node's taints, and when the taint eviction controller deletes a pod.
//
// # What is modelled
//
// Kubernetes v1.37.2 (the modelled code, and the toleration matching of
// k8s.io/api v0.37.2, are unchanged since v1.36.3):
//
//   - ForConditions: the node lifecycle controller's "taint nodes by
//     condition" pass (doNoScheduleTaintingPass); ConditionTaints runs the
//     same pass with a caller-given condition → taint table (for
//     node-problem-detector or vendor conditions).
//   - DecideNoExecute, SwapHealthTaint, RemoveHealthTaints: its NoExecute
//     health taints (processTaintBaseEviction, SwapNodeControllerTaint,
//     markNodeAsReachable), with the 1.34 rule that the decision uses the
//     Ready condition written in the same pass.
//   - AddOrUpdate, Remove: pkg/util/taints AddOrUpdateTaint / RemoveTaint,
//     as copies.
//   - MatchingTolerations, MinTolerationTime: GetMatchingTolerations and
//     getMinTolerationTime, built on v1.Toleration.ToleratesTaint and
//     v1.Taint.MatchTaint (never re-implemented).
//   - WithDefaultTolerations: the DefaultTolerationSeconds admission plugin.
//   - DisruptionTargetCondition and Evictor: the taint-eviction-controller
//     (pkg/controller/tainteviction) and its timed worker queue.
//   - DeviceEvictor, DeviceDisruptionTargetCondition, DeviceToleratesTaint:
//     the device-taint-eviction-controller
//     (pkg/controller/devicetainteviction) for DRA device taints; see
//     "Device taints" below.
//
// # Eviction states (one pod, as Explain reports them)
//
//	state             event                                  next state
//	NodeNotTainted    node gets a NoExecute taint the pod     Due (not tolerated)
//	                  does not tolerate
//	NodeNotTainted    ... tolerated for d                    Scheduled (start + d)
//	NodeNotTainted    ... tolerated forever                  ToleratedForever
//	ToleratedForever  toleration or taints change            any of the above
//	Scheduled         toleration/taint change, still finite  Scheduled (moves per ReschedulePolicy)
//	Scheduled         a taint no longer tolerated            Due (now)
//	Scheduled         tolerated forever / taints removed     ToleratedForever / NodeNotTainted
//	Scheduled         now reaches At                         Due
//	Due               Due(now)                               HandedOut (once)
//	HandedOut         Done / DoneEviction                    Done (until the pod goes away)
//	HandedOut         Retry(now, after), still evictable     Retrying (due at now + after)
//	HandedOut         Retry, no longer evictable             NodeNotTainted / ToleratedForever
//	Retrying          now reaches At                         Due -> HandedOut
//	any               DeletePod / pod unbound                NotTracked
//	any               SetPod with a new UID (pod recreated)  evaluated afresh
//
// Countdown start: a finite toleration of taint T by pod P expires at
// max(start of T, start of P) + TolerationSeconds. T starts when the
// Evictor first sees it on the node (same key, value and effect, present
// since); P starts when the Evictor first sees it bound to the node (under
// RescheduleNever, also when its tolerations change, so a new eviction
// fires at "now + seconds" exactly as upstream). With UseTaintTimeAdded, T
// starts at its TimeAdded and P at its creationTimestamp, each when set and
// not in the future. With several taints the earliest expiry binds; any
// taint not tolerated makes the pod due at once.
//
// # The caller loop
//
//	ev, _ := taints.NewEvictor(taints.DefaultEvictorConfig())
//	// informer handlers (any goroutine):
//	//   node add/update:  ev.SetNodeTaints(clock.Now(), node.Name, node.Spec.Taints)
//	//   node delete:      ev.DeleteNode(node.Name)
//	//   pod add/update:   ev.SetPod(clock.Now(), pod)
//	//   pod delete:       ev.DeletePod(types.NamespacedName{Namespace: ns, Name: name})
//	// one or more workers:
//	for {
//		now := clock.Now()
//		for _, x := range ev.Due(now) {
//			// Optional (#119862): re-read the live node and call
//			// SetNodeTaints, then Retry(now, x.Pod, 0) instead of deleting:
//			// the eviction is dropped if the node lost its NoExecute taints
//			// or the pod now tolerates them forever, else it is due again.
//			err := patchCondition(x.Pod, taints.DisruptionTargetCondition(now))
//			if err == nil {
//				err = deletePod(x.Pod, x.UID) // UID precondition
//			}
//			if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
//				ev.DoneEviction(x) // gone, or replaced by a new pod (UID precondition)
//			} else {
//				ev.RetryEviction(now, x, backoff(x.Attempt))
//			}
//		}
//		if at, ok := ev.NextDeadline(); ok {
//			sleepUntil(at) // or until an informer event arrives
//		}
//	}
//
// The node lifecycle side, per node per monitor pass:
//
//	add, remove := taints.ForConditions(node, now)          // NoSchedule, not rate limited
//	action, t := taints.DecideNoExecute(currentReady, node.Spec.Taints)
//	switch action {
//	case taints.NoExecuteSwap:   node, changed = taints.SwapHealthTaint(node, t, now)
//	case taints.NoExecuteQueue:  zoneQueue.Add(now, node.Name, node.UID) // later: SwapHealthTaint
//	case taints.NoExecuteRemove: node, changed = taints.RemoveHealthTaints(node); zoneQueue.Remove(node.Name)
//	}
//
// # Time model
//
// Nothing here reads a clock. Every time-dependent call takes now; the
// Evictor keeps the latest now it has seen and treats an earlier one as that
// (time going backwards is no time elapsed). Times are compared with
// Before, After, Equal and Compare. A scheduled fire time may lie in the
// past (e.g. a countdown that started at TimeAdded): the eviction is simply
// due.
//
// The rule: keep the caller's now, measure with Sub and Add. The Evictor
// stores each now as given, monotonic clock reading included, and derives
// fire times from it with Add; it never strips the reading (Round(0),
// Unix). Go compares two instants by their monotonic readings when both
// have one, so with a real clock (clock.Now, time.Now) a countdown is
// measured on the monotonic clock, as upstream's timers are, and a
// wall-clock step (an NTP correction, a VM resume) fires nothing early: a
// 300s toleration still runs 300s if the wall clock jumps 10 minutes
// ahead, and so does a Retry's delay. Instants without a monotonic reading
// (a fake or virtual clock, a taint's TimeAdded or a pod's
// creationTimestamp under UseTaintTimeAdded, times restored from storage)
// have only their wall clock and are measured on it; a fire time derived
// from one is compared with now's wall clock. Fire times of the two kinds
// are queued apart, each in its own consistent order.
//
// # Concurrency
//
// The functions are pure and safe for concurrent use. An Evictor is safe for
// concurrent use: one sync.Mutex guards all its state, and it runs no
// caller code. Inputs are never modified; results are copies (see each
// function for pointers shared with inputs).
//
// # Differences from upstream
//
//   - Handed-out evictions are acknowledged: a failed deletion is retried
//     (Retry) for as long as the pod must go, never abandoned after five
//     attempts (#140639, PR #141568).
//   - Empty taints cancel and never evict: the processPodOnNode
//     fall-through (pkg/controller/tainteviction/taint_eviction.go) that
//     would delete at once with an empty taint list does not exist.
//   - A recreated pod with the same name (new UID) is evicted again
//     (#107543, #110401, #125332), and DoneEviction and RetryEviction check
//     the UID, so a late acknowledgement for the old pod never touches the
//     new one, even when several workers acknowledge (upstream at v1.37.2
//     still lets a finishing worker remove its replacement:
//     getWrappedWorkerFunc in timed_workers.go). Done and Retry identify an eviction by name
//     only: they are safe when one worker acknowledges each eviction before
//     its next Due.
//   - Optional: ReschedulePolicy moves a scheduled eviction when
//     tolerations or taints change (#102993, #108982, #85980; upstream
//     never moves it), and UseTaintTimeAdded keeps countdowns across
//     controller restarts (#108268). Their zero values are upstream's.
//   - DeleteNode cancels the node's pods' pending evictions (upstream leaves
//     the timers running; the pods of a deleted node are garbage collected).
//   - A pod that moves to another node is evaluated afresh there (upstream
//     keeps its old timer, or ignores it on an untainted node).
//   - AddOrUpdate keeps an existing NoExecute taint's TimeAdded when the
//     caller passes none, so re-asserting a taint does not restart
//     countdowns.
//   - Due hands out ties in a deterministic order (the order their fire
//     time was set; a node's pods in the order they were first seen there);
//     upstream fires independent timers.
//   - The Lt/Gt operators are a config flag (MatchOptions,
//     EvictorConfig.ComparisonOperators) instead of a feature gate.
//
// Kept as upstream (the caller can add the checks): terminal pods are
// evicted too (#96363); no live re-read of node and pod before deleting
// (#119862, #139992).
//
// # Bad input
//
//   - nil node: ForConditions (nil, nil); AddOrUpdate, Remove,
//     SwapHealthTaint, RemoveHealthTaints (nil, false).
//   - nil Ready condition: DecideNoExecute NoExecuteNone; no Ready
//     condition: ForConditions adds no Ready-derived taint.
//   - duplicate conditions: the first of each type counts (unlike
//     upstream's NoSchedule pass, which takes a taint from every copy).
//   - duplicate taints: ForConditions and Remove treat them as one identity
//     (Remove drops all); AddOrUpdate collapses them into one; the Evictor
//     counts identical ones (key, value, effect) once.
//   - TimeAdded or creationTimestamp in the future: ignored by the Evictor
//     (the first sighting counts).
//   - nil pod: ignored; pod without spec.nodeName: forgotten (not bound);
//     TolerationSeconds too large for a Duration: saturates.
//
// # Performance
//
// Matching and the Evictor's decision allocate nothing
// (AppendMatchingTolerations, MinTolerationTime; MatchingTolerations
// allocates its result). Per pod, the Evictor keeps a fixed-size record and
// a slot of its pod index; toleration lists are shared by every
// pod with an equal list. An unchanged SetPod or SetNodeTaints costs a
// lookup and a comparison and allocates nothing; SetNodeTaints is
// O(n log n) in the node's NoExecute taints; Due with nothing due is O(1)
// and allocates nothing, and Due of k evictions allocates its result once.
// Benchmarks are in bench_test.go (go test -bench . -benchmem); the
// project README records their figures.
//
// # Device taints (DeviceEvictor)
//
// DeviceEvictor is Kubernetes v1.37.2's device taint eviction controller
// (pkg/controller/devicetainteviction, KEP-5055, GA in v1.37) as a machine
// of its own beside the Evictor, with the same caller loop. A DRA driver
// (in its ResourceSlices) or an admin (with a DeviceTaintRule) taints a
// device; every pod using an allocated ResourceClaim with that device is
// deleted unless the claim tolerates the taint. What differs from node
// taints:
//
//   - the unit is the ResourceClaim: its tolerations are on its allocation
//     results (status.allocation.devices.results[].tolerations), so every
//     pod using it (spec.resourceClaims, status.resourceClaimStatuses,
//     status.extendedResourceClaimStatus; owner and ReservedFor checked)
//     gets the same fire time, and a pod with several claims goes at the
//     earliest;
//   - the countdown starts at the taint's TimeAdded, a wall-clock instant
//     from the API: restart-safe, a time in the past evicts at once, a
//     time in the future waits for it (upstream's test relies on it);
//   - a matching toleration (its effect must be NoExecute, as upstream
//     claimEvictionTime checks) without TolerationSeconds ignores that
//     taint; otherwise the smallest matching TolerationSeconds, clamped at
//     0, delays it;
//   - only NoExecute taints evict; None (a rule's dry run, reported in its
//     status), NoSchedule and unknown effects do not;
//   - only the highest generation of each pool's ResourceSlices counts; a
//     DeviceTaintRule selects devices by driver, pool and name (every field
//     set must match; a nil selector selects nothing, an empty one every
//     device), whether or not the device is published.
//
// The DeviceTaintRule input is a struct of ours (DeviceTaintRule): the API
// type is in resource/v1 only from k8s.io/api v0.37 (v1beta2 and v1alpha3
// before), and the library builds with k8s.io/api v0.35 and v0.37. Slices,
// claims and pods are the resource/v1 and core/v1 types both have.
//
// Eviction states (one pod, as DeviceEvictor.Explain reports them):
//
//	state       event                                          next state
//	NotBound    pod bound to a node                            evaluated
//	NotTainted  a used claim's device gets an untolerated      Scheduled (TimeAdded + seconds),
//	            NoExecute taint                                or Due (that time has passed)
//	Scheduled   slices, rules, claims or the pod change        Scheduled at the new time (it
//	                                                           moves either way, as upstream)
//	Scheduled   no untolerated taint left                      NotTainted (a Cancellation)
//	Scheduled   now reaches At                                 Due
//	Due         Due(now)                                       HandedOut (once)
//	HandedOut   Done(now, x, DeviceDeleted or DeviceGone)      Done (while the pod keeps its UID)
//	HandedOut   Retry(now, x, after), still tainted            Retrying (at now+after, or later)
//	HandedOut   Retry, no longer tainted                       NotTainted (a Cancellation)
//	Retrying    now reaches At                                 Due -> HandedOut
//	any         DeletePod                                      NotTracked (no Event, as upstream)
//	HandedOut   DeletePod (its delete event can come before    NotTracked; Done still counts the
//	            the caller's Delete call returns)              pod for its rules, Retry drops it
//	any         SetPod with a new UID                          evaluated afresh
//
// With a DeviceBlastRadius (ours, off by default; see "Blast-radius limit"
// below), two more:
//
//	state       event                                          next state
//	NotTainted, all of the pod's untolerated taints are on     Held (no Cancellation: the hold
//	Scheduled   devices of Holding drivers                     is reported once per driver)
//	Held        a driver's hold ends (its share back at        Scheduled or Due at the pod's
//	            ResumeShare for ResumeAfter, or ReleaseHold)   own time (TimeAdded + seconds)
//	Due         Due(now), the driver's bucket is empty         Throttled (waits in fall-due order)
//	Throttled   Due(now) with a token of the driver's rate     HandedOut
//	Throttled   slices, rules, claims or the pod change        as Scheduled
//
// The caller loop (feed the informers' objects; k8s.io/api v0.37 shown):
//
//	d, _ := taints.NewDeviceEvictor(taints.DefaultDeviceEvictorConfig())
//	d.Restore(clock.Now(), load()) // optional: the last d.Snapshot() saved, before the first Due
//	// informer handlers (any goroutine); errors name an object over DeviceLimits:
//	//   ResourceSlice: d.SetSlice(clock.Now(), s) / d.DeleteSlice(clock.Now(), s.Name)
//	//   ResourceClaim: d.SetClaim(clock.Now(), c) / d.DeleteClaim(clock.Now(), key)
//	//   Pod:           d.SetPodInGroup(clock.Now(), p, podGroupName(p)) / d.DeletePod(key)
//	//   DeviceTaintRule r: d.SetRule(clock.Now(), taints.DeviceTaintRule{Name: r.Name,
//	//       UID: r.UID, Generation: r.Generation, Selector: selector(r.Spec.DeviceSelector),
//	//       Taint: r.Spec.Taint, Conditions: r.Status.Conditions}) / d.DeleteRule(clock.Now(), r.Name)
//	// one worker, once the informers have synced (WaitForCacheSync); its
//	// first Due settles the Restore: entries whose pod or rule was not
//	// set by then are dropped (deleted while no controller ran), and
//	// restored breaker holds are judged on the synced counts. A pass
//	// (RuleStatuses, then Due) judges the breakers first:
//	for {
//		now := clock.Now()
//		for _, s := range d.RuleStatuses(now) { // before Due: a rule's first status precedes its evictions
//			if err := applyStatus(s.Rule, s.UID, s.Condition); err != nil { // SSA, force, UID precondition
//				d.RetryRuleStatus(now, s, backoff)
//			}
//		}
//		for _, x := range d.Due(now) {
//			pod, err := getPod(x.Pod)
//			switch {
//			case apierrors.IsNotFound(err) || err == nil && pod.UID != x.UID:
//				d.Done(now, x, taints.DeviceGone)
//			case err != nil:
//				d.Retry(now, x, backoff(x.Attempt))
//			case pod.DeletionTimestamp != nil:
//				d.Done(now, x, taints.DeviceDeleted) // counted, no Event (as upstream)
//			default:
//				event(pod, taints.DeviceEventReason, taints.DeviceEventEvicting)
//				err = patchCondition(pod, taints.DeviceDisruptionTargetCondition(now))
//				if err == nil {
//					err = deletePod(x.Pod, x.UID) // UID precondition
//				}
//				switch {
//				case err == nil: // its delete event (DeletePod) may have come first
//					d.Done(now, x, taints.DeviceDeleted)
//					deletions.Inc(); latency.Observe(now.Sub(x.At).Seconds())
//				case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
//					d.Done(now, x, taints.DeviceGone)
//				default:
//					d.Retry(now, x, backoff(x.Attempt))
//				}
//			}
//		}
//		for _, c := range d.AppendCancelled(nil) {
//			event(c.Pod, taints.DeviceEventReason, taints.DeviceEventCancelling)
//		}
//		// With a DeviceBlastRadius and KeepWarnings (ours):
//		for _, h := range d.AppendHoldChanges(nil) {
//			warnOrNormal(h.State == taints.DeviceHoldHolding, h.Reason(), h.Message())
//		}
//		for _, w := range d.AppendWarnings(nil) {
//			warning(w.Slice, w.Rule, w.Kind.Reason(), w.Message()) // on the slice or rule
//		}
//		save(d.Snapshot()) // optional, now and then: evicted pods, rule counts, holds
//		if at, ok := d.NextDeadline(); ok {
//			sleepUntil(at) // or until an informer event arrives
//		}
//	}
//	// metrics scrape: d.DriverLimits(nil); operator override: d.ReleaseHold(clock.Now(), driver)
//
// Time: the DeviceEvictor reads no clock. Fire times derived from a
// TimeAdded are the API's wall-clock instants, compared with now's wall
// clock as upstream compares them with time.Now; a Retry's delay and a
// rule status period are derived from now with Add and keep its monotonic
// reading. The two kinds are queued apart (see the Evictor's time model).
//
// Differences from upstream (decisions are otherwise upstream's, proven by
// its own test cases ported in device_parity_test.go and
// device_flow_test.go):
//
//   - A pod's eviction is remembered as done while the pod keeps its UID
//     (upstream: an LRU of 500 UIDs), and a done or handed-out eviction is
//     never "cancelled" (upstream can emit Cancelling deletion for a pod it
//     is deleting or has deleted).
//   - A taint without TimeAdded (the API server always sets it) counts
//     from when the DeviceEvictor first saw it; upstream ignores it, or
//     panics when a toleration delays it. TolerationSeconds too large for
//     a Duration saturate (upstream overflows).
//   - Two slices of a pool's highest generation publishing the same device:
//     the first by slice name counts (upstream: Go map order).
//   - A rule's pending pods exclude pods whose eviction is Done, and its
//     evicted count only counts rules still present with that UID.
//   - RuleStatuses runs before Due in the loop, so a new rule's first
//     status always precedes its evictions; upstream's shared work queue
//     orders them by arrival (its test multiple-claims-different-rules-order-1
//     then reports Completed where this reports PodsPendingEviction, ten
//     seconds before both agree).
//   - PodGroup claims (DRAWorkloadResourceClaims, beta and off by default
//     in v1.37.2) are DeviceEvictorConfig.WorkloadResourceClaims with
//     SetPodInGroup: k8s.io/api v0.35 has no spec.schedulingGroup.
//
// Blast-radius limit (DeviceEvictorConfig.BlastRadius, ours; the zero
// value is upstream's behaviour, which TestDeviceLimitsParity checks
// output for output). Unlike upstream, which deletes at once every pod a
// NoExecute taint reaches, so that a DeviceTaintRule with an empty
// selector deletes every pod using any device in the cluster
// (kubernetes/kubernetes#141422), a DeviceEvictor can limit each DRA
// driver's evictions:
//
//   - a rate (QPS, Burst): a token bucket per driver
//     (golang.org/x/time/rate, AllowN with the latest now); an eviction
//     takes a token of the driver of the device whose taint makes it due
//     earliest, and waits in the order it fell due when there is none;
//   - a breaker (MaxShare, MinDevices) with hysteresis (ResumeShare,
//     ResumeAfter): a driver trips to Holding when more than MaxShare, and
//     more than MinDevices, of its allocated devices are tainted, and holds
//     until its share is back at ResumeShare or below (0: none tainted)
//     and has stayed there for ResumeAfter. Allocated devices are the
//     driver's devices (pool and name) allocated to at least one allocated
//     ResourceClaim, published or not; tainted ones are those with an
//     allocated claim that does not tolerate one of their NoExecute taints
//     (slice or rule) forever, now or after TolerationSeconds, with or
//     without pods. Both are counted when an input changes; the breaker
//     judges them at a pass (RuleStatuses, Due), before the pass hands out
//     an eviction (see the breaker's table below). The taints of a Holding
//     driver's devices evict no pod; a pod's other drivers' taints still
//     do.
//
// Per driver, not per pool: a pool is often one node's devices, so a
// per-pool share would hold every node-wide fault and a per-pool rate
// would bound nothing cluster-wide; a driver's devices are the fleet one
// buggy driver release or one over-broad rule taints together. Up to
// MaxShare of a driver's devices can be evicted before the breaker trips:
// that is what the share means (a rate bounds how fast).
//
// Hysteresis: unlike a breaker that resumes as soon as the share is back
// at MaxShare, a storm rolled back slice by slice keeps its hold to the
// end. Resuming half-way would make the pods still on the last tainted
// devices due at once (their taints' TimeAdded is minutes old), so a
// controller would delete, between two slice updates, exactly the pods the
// breaker was protecting; and a share hovering at MaxShare would flip the
// hold, and re-evaluate every tainted claim, at every pass. MinDevices
// gates the trip only. ResumeShare 0 holds until no device of the driver
// is tainted (a device that stays tainted, say one truly broken, keeps the
// hold: ReleaseHold, or a ResumeShare above the share it alone makes, lets
// its pods go); ResumeShare = MaxShare is the breaker without hysteresis.
// When the share is judged: inputs (SetSlice, SetClaim, SetRule and
// their deletes) only count; a pass judges the counts of every input fed
// so far: RuleStatuses and Due each judge first, and Due hands out no
// eviction before. Informers deliver objects in no particular order, and
// an input can leave a view the cluster never had (a DeviceTaintRule
// delivered before the claims whose devices it taints: 1 of 1 allocated
// device tainted, 100%); a breaker judged there would trip and, with
// ResumeShare 0, never resume. The caller runs its passes once the
// informers have synced, so no breaker is judged on a partial list at
// start, and in steady state only a view at a pass counts, not one
// between two related inputs. A driver's breaker (DeviceDriverLimit.State;
// "calm": the share at ResumeShare or below):
//
//	state     at a pass (RuleStatuses, Due), or event           next state
//	Armed     more than MaxShare of its allocated devices       Holding (hold change: Warning
//	          (and > MinDevices) tainted                        DeviceTaintEvictionHeld)
//	Holding   calm (taints or rules removed or narrowed,        without ResumeAfter: Armed
//	          tolerations added, tainted claims deallocated)    (DeviceTaintEvictionResumed; the
//	                                                            held pods are evaluated again at
//	                                                            their own times: past ones are due);
//	                                                            with it: Holding, ResumeAt = the
//	                                                            input since which every input left
//	                                                            it calm + ResumeAfter
//	Holding   not calm                                          Holding, no ResumeAt
//	Holding   a pass whose now reaches ResumeAt                 Armed (Since = ResumeAt), as above
//	Holding   ReleaseHold(now, driver), an operator action      Released (DeviceTaintEvictionHoldReleased)
//	Released  as Holding: calm (for ResumeAfter)                Armed (the next excess holds again)
//	Holding,  a restart with Snapshot and Restore (a release    Holding until the first Due, which
//	Released  is restored as a hold)                            judges it (a calm share starts
//	                                                            ResumeAfter then)
//	Holding,  a restart without them: the inputs are            Holding if over MaxShare (and
//	Released  counted afresh                                    MinDevices) at the first pass, else Armed
//
// Between two passes DriverLimits' counts are the inputs' so far; the
// states, ResumeAt, every report of the holds (Explain, RuleStatuses,
// AppendHoldChanges, Snapshot, DeviceEviction.Taints) and ReleaseHold are
// the last pass's. A pod that the next pass will hold is Scheduled or Due
// until then, never handed out; a share that is over MaxShare, or calm,
// only between two passes changes nothing; NextDeadline reports the next
// pass due at once when the counts would change a driver's state or
// ResumeAt, and reports ResumeAt.
//
// Only a calm share ends a hold: a time limit would let a bad rule through.
// ResumeAfter only makes the share prove itself calm for a while, so that
// a storm that clears and comes back within it (a flapping health check,
// a rule deleted and applied again) is held from its first device instead
// of evicting up to MaxShare again. A slice or rule replaced under its
// name by another pool or UID counts as deleted then added, in one input:
// no pass sees it in between. The values: AppendHoldChanges (an
// Event per driver whose state changed since the last call; a hold that
// began and ended between two calls reports nothing), DriverLimits (counts
// for metrics: devices allocated and tainted, pods held, evictions
// waiting), ReleaseHold, Explain (DeviceHeld with HeldBy, DeviceThrottled
// with WaitsFor; a held pod is not reported as a Cancellation), and a
// NoExecute rule's EvictionInProgress condition: True, reason EvictionHeld
// (the API leaves the reason open), upstream's message followed by "<k>
// of them held: " and the Holding drivers' messages. DeviceEviction.Taints
// leave out the taints of Holding drivers' devices. Each hold message says
// where the share stands (more than MaxShare, or no longer) and what ends
// the hold ("when none is tainted", "when the share falls to 5% or below",
// "at <time> unless the share rises above 5%").
//
// Warnings (DeviceEvictorConfig.KeepWarnings > 0, ours). Unlike
// upstream, which acts on these hazards silently, AppendWarnings returns
// values for Warning Events on the object,
// bounded by KeepWarnings (WarningsDropped counts the rest), at most one
// of each kind per slice update. They change no decision.
//
//   - DeviceWarningTimeAddedReset: a NoExecute taint keeps its key, value
//     and effect on the same device (or rule) but its TimeAdded moved
//     later, as when a driver republishes a slice without the old
//     TimeAdded and the API server stamps the current time: every
//     countdown of that taint restarts.
//   - DeviceWarningEscalated: a taint became NoExecute (from NoSchedule,
//     None or another effect) under a TimeAdded no later than the old
//     effect's: pods that do not tolerate it go at once, not after their
//     TolerationSeconds. The API server bumps a rule's TimeAdded on an
//     effect change unless the client sets one; a slice's is the driver's.
//   - DeviceWarningSelectsAll: a DeviceTaintRule's selector is empty and
//     selects every device (#141422), whatever its effect.
//
// Kept as upstream: a terminated pod (Succeeded, Failed) is deleted too
// (its Controller doc says such pods need not be, its code does not
// check); a toleration must name the NoExecute effect; pods are deleted
// without a live re-read of the claim.
//
// Bad input: objects over DeviceLimits (the API's validation limits:
// devices per slice, taints per device, results per claim, tolerations
// per result, ReservedFor entries; and claims per pod, ours) return an
// error wrapping ErrDeviceLimit and change nothing; nil objects are
// ignored; unallocated claims, claims naming unknown pools or devices
// (rules still select them), duplicate taints (each counts, as upstream)
// and negative TolerationSeconds (0) are decided as upstream. The
// model-based test device_model_test.go checks all of it against a
// from-scratch recomputation.
//
// Performance, at 10,000 devices, 50,000 claims and 100,000 pods
// (device_bench_test.go; 2-core AMD EPYC shared with other work, load
// about 10): unchanged slices, claims and pods, Due with nothing due,
// NextDeadline and RuleStatuses allocate nothing (TestDeviceSteadyAllocs);
// tainting a pool of 1,000 devices and collecting its 10,000 evictions
// takes 10 ms (9 ms of CPU; upstream's event handlers alone take 1.4 s on
// the same work), a DeviceTaintRule on that pool 21 ms; upstream's
// BenchmarkTaintUntaint sequence takes 12 µs and 25 allocations (upstream
// 80 µs and 78). A pod costs about 130 bytes, a claim about 460
// (TestDeviceMemoryPerPod). With a DeviceBlastRadius and warnings on
// (device_limits_bench_test.go, load about 5): the steady state still
// allocates nothing, untainted, held (over MaxShare, in the
// hysteresis band, or waiting for ResumeAfter) or throttled
// (TestDeviceSteadyAllocsLimits); the same pool taint, counted and under
// the breaker, takes 14 ms of CPU with a token per eviction (16 ms without
// limits in the same run); held by the breaker, 7 ms (nothing scheduled).
package taints
