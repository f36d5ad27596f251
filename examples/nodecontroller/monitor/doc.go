// Package monitor is the decision loop of a node lifecycle controller,
// assembled from the lifecycle packages and independent of client-go. It is
// shared by the two programs that run it: examples/nodecontroller runs it
// against an API server through informers and a clientset, and
// examples/policysim runs it against a virtual cluster on a virtual clock
// (monitortest.Cluster), so the simulator's timeline is the controller's own
// behaviour.
//
// It models kube-controller-manager's node lifecycle controller at v1.37.2:
// pkg/controller/nodelifecycle/node_lifecycle_controller.go (monitorNodeHealth,
// processTaintBaseEviction, doNoExecuteTaintingPass, handleDisruption,
// doNodeProcessingPassWorker) and the taint eviction controller in
// pkg/controller/tainteviction.
//
// # The loop
//
// The caller implements Cluster (cached reads, writes) and drives a Monitor:
//
//	m, _ := monitor.New(monitor.DefaultConfig(), cluster, onEvent)
//	// informer handlers:
//	m.NodeChanged(ctx, now, node)   // Evictor taints, NoSchedule condition taints,
//	                                // beta OS/arch labels (if Cluster is a NodeLabelWriter)
//	m.NodeDeleted(name)
//	m.PodChanged(ctx, now, pod)     // Evictor pods, Ready=False on a not-ready node
//	m.PodDeleted(key)
//	// every Config.MonitorPeriod (5s):
//	m.MonitorPass(ctx, now)         // nodehealth → status writes, NoExecute decision;
//	                                // zonestate → rates, zone queues; pods not ready
//	// every Config.TaintPeriod (100ms), or at m.NextDeadline():
//	m.TaintPass(ctx, now)           // evictionqueue.Try → NoExecute taint writes
//	m.EvictionPass(ctx, now)        // taints.Evictor.Due → DisruptionTarget + delete
//
// One MonitorPass does what upstream monitorNodeHealth does, in three steps.
// Per node: nodehealth.Tracker.Observe; write the Unknown status if there is
// one (on failure the node is skipped this pass and not counted in its zone,
// as upstream); then the eviction mode decides. In the taint-based mode
// (tainting.go) taints.DecideNoExecute on the Ready condition after the
// update (1.34+, kubernetes/kubernetes#120816) queues the node in its zone,
// swaps not-ready and unreachable at once, or removes both and dequeues.
// Then, once for the pass, zonestate.Tracker.Update decides every zone's
// state and zonestate.Queues applies it to the zone queues: rates, and on
// entering full disruption every queue emptied and stopped and every health
// taint removed; on exiting, every node gets a fresh grace period. The nodes
// the pass queued enter their queues only now. Last, the pods of every node
// that went from Ready to Unknown in this pass are marked Ready=False
// (MarkPodsNotReady), and the flip is acknowledged only when every pod was
// handled (nodehealth.Tracker.AckPodsNotReadyEdge).
//
// The Lease circuit breaker (v1.37, KEP-5647): when the Cluster is also a
// LiveReader, a pass first reports how far its caches have synced
// (nodehealth.Tracker.SyncCache), and every stale verdict nodehealth asks
// to confirm (a node past its grace, about to be written Unknown or already
// Unknown) is preceded by a live GET of the Lease (and, for a node without
// one, of the Node; nodehealth.Tracker.Confirm). A live object newer than
// the cached one holds the pass: the nodes not yet observed are skipped,
// no zone decision, taint or pod work is done, and one KindHealthHeld
// Event reports it; so does every pass until the cache has caught up, or,
// beyond upstream, until its synced version goes backwards (an etcd
// restore from a snapshot) or the hold has lasted
// Config.Health.MaxHold, which one KindHealthHoldEnded Event reports.
// Config.Health.Confirmation = nodehealth.ConfirmNone, or a Cluster that
// is no LiveReader, keeps v1.36's behaviour.
//
// # Differences from upstream
//
//   - A held pass (Lease circuit breaker) makes no zone decision: the zones
//     keep their state. Upstream skips every node but still runs
//     handleDisruption, which then drops the skipped nodes' zones and
//     creates them again, Initial, once the cache has caught up.
//   - A hold ends when the cache's synced resourceVersion goes backwards
//     (etcd restored from a snapshot) or after nodehealth.Config.MaxHold
//     (KindHealthHoldEnded); upstream's waits for the cache to reach the
//     version it found, which after a restore takes as many new writes.
//   - A node already waiting in its zone queue keeps its place; upstream
//     removes and re-adds it on every pass, reshuffling the waiting order.
//   - A zone's queue survives its zone having no decision (its nodes all
//     excluded, or none counted this pass; zonestate.Queues): it keeps the
//     nodes waiting in it, the nodes it tainted and its limiter, and runs at
//     EvictionQPS (stopped in full disruption). Upstream replaces the queue
//     on the next pass, losing what waited in it, and queues the zone's
//     tainted nodes again, which spend the new queue's tokens first.
//   - A tainting pass never sees a node queued by the monitor pass still
//     running: the pass's nodes enter their queues with its zone decision, so
//     a cluster entering full disruption taints none of them, even for a
//     moment. Upstream's doNoExecuteTaintingPass may taint one before
//     handleDisruption runs.
//   - A not-ready ↔ unreachable swap is decided again on the node as read
//     for the write: a node without a health taint by then is not tainted by
//     the swap (it goes through its zone queue on the next pass). Upstream
//     SwapNodeControllerTaint adds the new taint whatever the node holds, so
//     a cache that lags the full-disruption cleanup can taint a node, and
//     evict its pods, while the cluster is in full disruption.
//   - No pod is deleted while the cluster is in full disruption: EvictionPass
//     pauses from the zone decision that enters it (before the health
//     taints are removed), and every monitor pass removes the health taints
//     a failed cleanup left. Upstream tries markNodeAsReachable once, on
//     entering, and its taint eviction controller, which knows nothing of
//     full disruption, evicts until it sees the taints go (for good, on a
//     node whose write failed).
//   - Nodes seen for the first time (after a restart) keep their NoExecute
//     health taints; upstream removes them and re-adds them through the
//     rate-limited queue, restarting every eviction countdown
//     (kubernetes/kubernetes#108268).
//   - Failed pod deletions are retried every Config.EvictionRetry instead of
//     being abandoned after 5 quick tries (kubernetes/kubernetes#140639),
//     and deletions carry a UID
//     precondition, so a re-created pod of the same name is not deleted for
//     its predecessor's decision.
//   - The pods-not-ready flip is acknowledged only after every pod was
//     handled, so a failed write or a restart (with nodehealth's
//     Snapshot/Restore) does not lose it (kubernetes/kubernetes#50067,
//     kubernetes/kubernetes#135205).
//
// # Legacy mode
//
// With Config.PodEvictionTimeout > 0 the Monitor models the eviction mode
// removed in Kubernetes 1.27 (--enable-taint-manager=false with
// --pod-eviction-timeout, default 5m; legacy.go, after
// node_lifecycle_controller.go at v1.26, processNoTaintBaseEviction): no
// NoExecute taints and no Evictor; a node whose Ready has been False for the
// timeout since its transition, or Unknown for the timeout since its last
// heartbeat, is queued in its zone (per-node status unmarked → to be evicted
// → evicted), and when the zone's rate lets it through every pod on it gets
// the status reason NodeLost and every one that is not terminating and not a
// DaemonSet pod is deleted (pkg/controller/util/node/controller_utils.go,
// DeletePods). examples/policysim uses it for comparison.
//
// # Concurrency
//
// A Monitor is safe for concurrent use. MonitorPass processes nodes, and
// EvictionPass pods, on Config.Workers goroutines (upstream: 8); with 1
// worker a pass is deterministic. A TaintPass waits only while a MonitorPass
// applies its zone decision (and the reverse): the nodes a pass queues reach
// their zone queues with that decision, so the tainting queues never let a
// node through in the middle of the full-disruption cleanup, while TaintPass
// and EvictionPass keep running during the rest of the pass, pod marking
// included (one write per pod, hours for a large outage behind a throttled
// client). Events are delivered synchronously; the callback must be safe for
// concurrent use when Workers > 1. The Monitor's state lock is never held
// while it calls the Cluster or the callback, so both may call back into it
// (an in-memory Cluster forwards its own writes to NodeChanged and
// PodChanged as an informer would); but TaintPass and the zone decision call
// them with the tainting lock held, so neither may run a pass.
//
// # Cost
//
// A steady pass (every node healthy, nothing to write) allocates nothing per
// node or pod: each node's zone key and exclusion label are cached until the
// node object changes, and the pass's buffers are reused. At 100,000 nodes
// its cost is cache misses, not work, so a pass touches as little memory per
// node as it can: it walks the nodes in list order and finds each node's
// state by position, takes no lock for a node whose object did not change,
// finds the node's health record through a nodehealth.Handle kept in that
// state (no lookup by name), reads the node's taints only when it has some,
// and counts the zones from its own results instead of reading every Ready
// condition again (BenchmarkSteadyPass). The Monitor keeps the Evictor's
// record per pod (about 130 bytes) and a small record per node.
//
// # Stability
//
// The package lives under examples/ and is not covered by the module's
// compatibility promise (the README's Compatibility section): it is the
// decision loop of examples/nodecontroller, shared with examples/policysim,
// and its API changes with them in any minor release, each change listed in
// CHANGELOG.md. Its decisions follow the modelled Kubernetes release.
package monitor
