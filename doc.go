// Package lifecycle is a library of Kubernetes lifecycle state machines:
// node health tracking, zone-aware eviction rate limiting, the rate-limited
// timed eviction queue, NoExecute taint and toleration timing, the kubelet pod
// worker and the ServiceCIDR deletion grace period.
//
// Upstream Kubernetes keeps this logic inside k8s.io/kubernetes, which is not
// supported as a library, and runs it on goroutines, timers and the wall
// clock. Here every machine is a plain Go value: the caller feeds it the
// objects it already has from its informers, passes the current time in, and
// gets decisions back as values (a status to write, a taint to add, a pod to
// delete, a finalizer to drop), together with the reason and the time the
// machine next needs attention. The caller performs the I/O. No package
// starts a goroutine, sleeps or reads the clock, so a whole cluster's failure
// policy can be simulated deterministically in a unit test.
//
// # Packages
//
//   - [github.com/kubelifecycle/lifecycle/nodehealth]: per-node heartbeat and
//     Lease tracking, the grace periods, the Unknown conditions the node
//     lifecycle controller writes, the "mark pods not ready" edge, snapshots
//     that survive a controller restart, and cloud instance existence with
//     orphan deletion that never mistakes an error for "gone".
//   - [github.com/kubelifecycle/lifecycle/zonestate]: the zone key, the
//     Normal / PartialDisruption / FullDisruption classification, the
//     eviction rate per zone and the cluster-wide full-disruption circuit
//     breaker.
//   - [github.com/kubelifecycle/lifecycle/evictionqueue]: the rate-limited
//     timed queue that lets nodes through to tainting at the zone's rate, with
//     FIFO ties, O(log n) operations and an exact next deadline.
//   - [github.com/kubelifecycle/lifecycle/taints]: NoSchedule taints by
//     condition, the NoExecute health taint decision, toleration matching and
//     timing, the admission defaults, and the Evictor (the taint eviction
//     controller without goroutines).
//   - [github.com/kubelifecycle/lifecycle/podworker]: the kubelet pod worker
//     termination state machine with SyncKnownPods replay, driven by Next and
//     Complete instead of a goroutine per pod.
//   - [github.com/kubelifecycle/lifecycle/cidrfinalizer]: the ServiceCIDR
//     deletion finalizer with its grace period, as a pure decision and as an
//     incremental index.
//
// # The caller loop
//
// A node lifecycle controller built from these packages runs one monitor pass
// every few seconds (upstream: 5s) and a short tainting pass (upstream:
// 100ms). In outline, with error handling left out:
//
//	// Monitor pass, every MonitorPeriod.
//	now := clock.Now()
//	zones := map[string][]*v1.NodeCondition{}
//	for _, node := range nodeLister.List() {
//		res, _ := health.Observe(now, node, leases[node.Name])   // nodehealth
//		if res.StatusUpdate != nil {
//			client.UpdateStatus(node, res.StatusUpdate)          // Ready -> Unknown
//		}
//		if res.MarkPodsNotReady {
//			for _, pod := range podsOn(node) {
//				if st, ok := nodehealth.PodNotReadyStatus(now, pod); ok {
//					client.UpdatePodStatus(pod, st)
//				}
//			}
//			health.AckPodsNotReady(node.Name)
//		}
//		key := zonestate.Key(node)
//		zones[key] = append(zones[key], res.CurrentReady)
//		switch action, taint := taints.DecideNoExecute(res.CurrentReady, node.Spec.Taints); action {
//		case taints.NoExecuteQueue:
//			queues[key].Add(now, node.Name, node.UID)             // evictionqueue
//		case taints.NoExecuteSwap:
//			client.Patch(taints.AddOrUpdate(node, taint, now))    // immediate, not rate limited
//		case taints.NoExecuteRemove:
//			client.Patch(taints.RemoveHealthTaints(node))
//			queues[key].Remove(node.Name)
//		}
//	}
//	decision := zoneTracker.Update(zones)                          // zonestate
//	for _, z := range decision.Zones {
//		if z.RateChanged {
//			_ = queues[z.Key].SetRate(now, z.QPS)
//		}
//	}
//	if decision.ExitedFullDisruption {
//		health.ResetProbes(now)                                   // fresh grace for every node
//	}
//
//	// Tainting pass, every 100ms (or sleep until queue.NextDeadline()).
//	for _, q := range queues {
//		q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
//			// re-read the node, apply the NoExecute taint; on error retry later
//		})
//	}
//
//	// Eviction: the Evictor is fed from node and pod informer events.
//	evictor.SetNodeTaints(now, node.Name, node.Spec.Taints)
//	evictor.SetPod(now, pod)
//	for _, ev := range evictor.Due(now) {
//		// set the DisruptionTarget condition, delete the pod, then
//		evictor.DoneEviction(ev) // or evictor.RetryEviction(now, ev, backoff) on failure
//	}
//
// examples/nodecontroller wires exactly this loop to client-go informers and a
// workqueue; examples/policysim runs it on a virtual clock to answer "what
// happens to my workloads if this zone goes dark?".
//
// # Rules that hold in every package
//
//   - Time is an argument: every time-dependent method takes now first.
//     Time going backwards is treated as no time elapsed.
//   - Decisions are values; work that can fail is handed out and then
//     acknowledged, so a failed API call never loses an item.
//   - Inputs are never mutated; copies are returned.
//   - Every stateful type is safe for concurrent use and says so.
//   - Default behaviour reproduces upstream Kubernetes v1.36; where upstream
//     has a known bug we fix it and the doc comment says "Unlike upstream".
package lifecycle
