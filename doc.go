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
//     breaker (it trips only when every zone is dark; a dark zone next to
//     healthy ones is tainted at the normal rate unless
//     Policy.HoldFullyDisruptedZones holds it).
//   - [github.com/kubelifecycle/lifecycle/evictionqueue]: the rate-limited
//     timed queue that lets nodes through to tainting at the zone's rate, with
//     FIFO ties, O(log n) operations and an exact next deadline.
//   - [github.com/kubelifecycle/lifecycle/taints]: NoSchedule taints by
//     condition, the NoExecute health taint decision, toleration matching and
//     timing, the admission defaults, the Evictor (the taint eviction
//     controller without goroutines), and the DeviceEvictor (the device
//     taint eviction controller of DRA, with an opt-in per-driver limit).
//   - [github.com/kubelifecycle/lifecycle/podworker]: the kubelet pod worker
//     termination state machine with SyncKnownPods replay, driven by Next and
//     Complete instead of a goroutine per pod.
//   - [github.com/kubelifecycle/lifecycle/cidrfinalizer]: the ServiceCIDR
//     deletion finalizer with its grace period, as a pure decision and as an
//     incremental index.
//
// # The caller loop
//
// A node lifecycle controller built from these packages runs a monitor pass
// every few seconds (upstream: 5s), a short tainting pass (upstream: 100ms)
// and an eviction pass. The package's Example runs that loop on a virtual
// clock and is compiled and checked with every test run; in outline:
//
//   - Monitor pass: for each node, in a stable order (an informer's List
//     returns map order), nodehealth's Tracker.Observe says whether to write
//     the conditions Unknown and whether to mark the node's pods not ready
//     (nodehealth.PodNotReadyStatus); taints.DecideNoExecute says what to do
//     with the NoExecute health taint: NoExecuteQueue adds the node to its
//     zone's evictionqueue (rate limited), NoExecuteSwap replaces one health
//     taint by the other at once (taints.SwapHealthTaint, never both on the
//     node), NoExecuteRemove removes them (taints.RemoveHealthTaints) and
//     removes the node from its queue, since a key marked done must be
//     removed before it can be added again.
//   - Then zonestate's Tracker.Update over every node's Ready condition gives
//     each zone's state and rate, and zonestate.Queues.Apply brings the
//     per-zone queues in line with it. Entering full disruption is the
//     circuit breaker: Apply empties and stops every queue, and the caller
//     removes every health taint. Exiting it restores the rates and resets
//     every node's grace period (nodehealth.Tracker.ResetProbes).
//   - Tainting pass: each zone queue's Try hands out nodes at the zone's rate;
//     the caller re-reads the node and applies the taint, or asks for a retry.
//   - Eviction pass: the taints.Evictor, fed with node taints and pods from
//     the informers, hands out each due eviction once (Due); the caller sets
//     the DisruptionTarget condition, deletes the pod with a UID precondition
//     and acknowledges (DoneEviction, or RetryEviction on failure).
//
// examples/nodecontroller wires this loop to client-go informers and a
// workqueue; examples/policysim runs it on a virtual clock to answer "what
// happens to my workloads if this zone goes dark?".
//
// # Rules that hold in every package
//
//   - Time is an argument: every time-dependent method takes now first.
//     Time going backwards is treated as no time elapsed.
//   - The caller's now is kept as given, with its monotonic clock reading,
//     and intervals are measured with Sub and Add on it. Pass clock.Now()
//     (k8s.io/utils/clock) and a wall-clock step (NTP, a resumed VM) fires
//     nothing early: Go compares the monotonic readings. Instants without
//     one (fake clocks, times restored from storage or read from the API)
//     are compared by wall time, which is right for them.
//   - Decisions are values; work that can fail is handed out and then
//     acknowledged, so a failed API call never loses an item.
//   - Inputs are never mutated; copies are returned.
//   - Every stateful type is safe for concurrent use and says so.
//   - Default behaviour reproduces upstream Kubernetes v1.37.2 (a behaviour
//     v1.37 changed stays reachable by configuration); where upstream has a
//     known bug we fix it and the doc comment says "Unlike upstream".
package lifecycle
