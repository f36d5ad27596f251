// Package monitor is the decision loop of a node lifecycle controller,
// assembled from the lifecycle packages and independent of client-go. It is
// shared by the two programs that run it: examples/nodecontroller runs it
// against an API server through informers and a clientset, and
// examples/policysim runs it against a virtual cluster on a virtual clock, so
// the simulator's timeline is the controller's own behaviour.
//
// # The loop
//
// The caller implements Cluster (cached reads, writes) and drives a Monitor:
//
//	m, _ := monitor.New(monitor.DefaultConfig(), cluster, onEvent)
//	// informer handlers:
//	m.NodeChanged(ctx, now, node)   // Evictor taints, NoSchedule condition taints
//	m.NodeDeleted(name)
//	m.PodChanged(ctx, now, pod)     // Evictor pods, Ready=False on a not-ready node
//	m.PodDeleted(key)
//	// every Config.MonitorPeriod (5s):
//	m.MonitorPass(ctx, now)         // nodehealth → status writes, pods not ready,
//	                                // NoExecute decision → zone queues; zonestate → rates
//	// every Config.TaintPeriod (100ms), or at m.NextDeadline():
//	m.TaintPass(ctx, now)           // evictionqueue.Try → NoExecute taint writes
//	m.EvictionPass(ctx, now)        // taints.Evictor.Due → DisruptionTarget + delete
//
// Per node, one MonitorPass does what upstream monitorNodeHealth does (spec
// a.3 and b.2): nodehealth.Tracker.Observe; write the Unknown status if
// there is one (on failure the node is skipped this pass and not counted in
// its zone, as upstream); taints.DecideNoExecute on the Ready condition after
// the update (1.34+): queue the node in its zone, swap not-ready and
// unreachable at once, or remove both and dequeue; mark the node's pods
// Ready=False on the tracker's own True→Unknown edge, acknowledging the edge
// only when every pod was handled. Then zonestate.Tracker.Update sets each
// zone queue's rate and handles full disruption mode: on entering, every
// health taint is removed and every queue emptied (rates are 0); on exiting,
// every node gets a fresh grace period.
//
// # Differences from upstream
//
//   - A node already waiting in its zone queue keeps its place; upstream
//     removes and re-adds it on every pass, reshuffling the waiting order.
//   - A zone queue survives the zone disappearing for a pass (upstream drops
//     the queue and its limiter, h.14).
//   - Nodes seen for the first time (after a restart) keep their NoExecute
//     health taints; upstream removes them and re-adds them through the
//     rate-limited queue, restarting every eviction countdown (#108268).
//   - Failed pod deletions are retried every Config.EvictionRetry instead of
//     being abandoned after 5 quick tries (#140639), and deletions carry a UID
//     precondition, so a re-created pod of the same name is not deleted for
//     its predecessor's decision.
//   - The pods-not-ready edge is acknowledged only after every pod was
//     handled, so a failed write or a restart (with nodehealth's
//     Snapshot/Restore) does not lose it (#50067, #135205).
//
// # Legacy mode
//
// With Config.PodEvictionTimeout > 0 the Monitor models the eviction mode
// removed in Kubernetes 1.27 (--enable-taint-manager=false with
// --pod-eviction-timeout, default 5m): no NoExecute taints and no Evictor; a
// node whose Ready has been False for the timeout since its transition, or
// Unknown for the timeout since its last heartbeat, is queued in its zone
// (per-node status unmarked → to be evicted → evicted), and when the zone's
// rate lets it through every pod on it that is not terminating and not a
// DaemonSet pod is deleted. examples/policysim uses it for comparison.
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
// included (one write per pod, which a throttled client makes slow). Events
// are delivered synchronously; the callback must be
// safe for concurrent use when Workers > 1. No lock is held while the Monitor
// calls the Cluster or the callback, so both may call back into it (an
// in-memory Cluster forwards its own writes to NodeChanged and PodChanged as
// an informer would).
package monitor
