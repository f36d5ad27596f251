// Package zonestate decides, once per monitor pass, how fast each zone's
// unhealthy nodes may be tainted, and whether the whole cluster is in "full
// disruption" mode, where nothing is tainted at all.
//
// # What is modelled
//
// The zone handling of the Kubernetes node lifecycle controller
// (kube-controller-manager v1.37.2, pkg/controller/nodelifecycle; its zone
// handling is unchanged since v1.36):
// GetZoneKey from k8s.io/component-helpers (Key), ComputeZoneState
// (Compute), and handleDisruption with setLimiterInZone, HealthyQPSFunc and
// ReducedQPSFunc (Tracker.Update). Defaults reproduce upstream decisions; the
// differences are listed below. The package computes decisions only: the
// caller owns the per-zone tainting queues (package evictionqueue), the node
// health records (package nodehealth) and every API call.
//
// # Zone states
//
// Compute classifies a zone from scratch on every pass (there is no
// hysteresis); StateInitial only marks a zone the Tracker had not seen:
//
//	State              when (ready = Ready=True nodes, notReady = the rest)    QPS outside full disruption mode
//	-----------------  -----------------------------------------------------  ----------------------------------------------
//	Initial            zone not known before this pass (Previous only)       -
//	Normal             otherwise (also: no nodes)                             EvictionQPS (0.1)
//	PartialDisruption  notReady > 2 && notReady/size >= threshold (float32)   SecondaryEvictionQPS (0.01) if size > 50, else 0
//	FullDisruption     ready == 0 && notReady > 0                             0 with HoldFullyDisruptedZones, else
//	                                                                          FullDisruptionQPS if set, else EvictionQPS
//
// # Full disruption mode
//
// When no zone has a Ready node, upstream assumes the control plane, not the
// nodes, lost connectivity ("master disruption mode") and stops tainting
// everywhere. Per Update, with "was in mode" meaning the last Update that had
// zones:
//
//	was in mode  all Full now  new zone  Decision flags          caller does
//	-----------  ------------  --------  ----------------------  ------------------------------------------------
//	no           no            -         none                    apply QPS where RateChanged
//	no           yes           -         Entered, In             remove NoExecute health taints from every node;
//	                                                             empty and stop every queue (every QPS is 0)
//	yes          yes           no        In (stay)               nothing: every QPS stays 0
//	yes          yes           yes       Entered (again), In     as on entering (idempotent; the new zone's nodes
//	                                                             may carry old taints)
//	yes          no            -         Exited                  fresh grace period for every node
//	                                                             (nodehealth.Tracker.ResetProbes); apply each
//	                                                             zone's QPS
//	any          no zones at all         none; In unchanged      nothing (see Removed zones below)
//
// (Entered, Exited, In: Decision.EnteredFullDisruption, ExitedFullDisruption,
// InFullDisruption.)
//
// In full disruption mode every zone's QPS is 0. The breaker is cluster-wide,
// not per zone: it trips only when every zone is dark. Consequences: a
// single-zone cluster (zone key "") never taints while its only zone is
// fully disrupted; in a multi-zone cluster a dead zone next to a zone with a
// Ready node is tainted at EvictionQPS, so its workload moves to the healthy
// zones, unless Policy.HoldFullyDisruptedZones holds it (rate 0) or
// Policy.FullDisruptionQPS gives it a rate of its own. A fresh
// cluster whose nodes have not posted a Ready condition yet is fully
// disrupted on its first pass (nil conditions count as not ready), exactly
// like upstream's bootstrap.
//
// # Caller loop
//
// Once per monitor pass (upstream: every 5s), after evaluating node health:
//
//	tracker, err := zonestate.NewTracker(zonestate.DefaultPolicy())
//	...
//	queues, err := zonestate.NewQueues(func(now time.Time, _ string, qps float64) (*evictionqueue.Queue[string], error) {
//		return evictionqueue.New[string](now, evictionqueue.Config{QPS: qps, Burst: 1})
//	})
//	...
//	zones := map[string][]*v1.NodeCondition{}
//	for _, node := range nodes {
//		res, err := health.Observe(now, node, leases[node.Name])
//		if err != nil {
//			continue // upstream does not count a node whose update failed
//		}
//		if _, ok := node.Labels["node.kubernetes.io/exclude-disruption"]; ok {
//			continue // excluded from zone health (e.g. control-plane nodes)
//		}
//		k := zonestate.Key(node)
//		zones[k] = append(zones[k], res.CurrentReady) // nil counts as not ready
//	}
//	d := tracker.Update(zones)
//	if d.EnteredFullDisruption {
//		// remove the not-ready/unreachable NoExecute taints from every node
//	}
//	if d.ExitedFullDisruption {
//		health.ResetProbes(now)
//	}
//	// Create new zones' queues at their rate, apply changed rates, and on
//	// entering full disruption empty and stop every queue:
//	if err := queues.Apply(now, d); err != nil {
//		log(err) // each error names its zone; the other zones were applied
//	}
//	// Size and NotReady feed the zone metrics (zone_size,
//	// zone_health = 100*(Size-NotReady)/Size, unhealthy_nodes_in_zone).
//
// The tainting loop then queues each unhealthy node in its zone's queue
// (queues.Ensure(now, zone, policy.EvictionQPS) for a zone without a
// decision, such as one of excluded nodes only), sleeps until
// queues.NextDeadline() and calls Try on each queue (queues.Each visits
// them in zone order). Queues works with
// any queue that has SetRate, Clear, NextDeadline and Len, such as
// *evictionqueue.Queue; see ExampleQueues.
//
// A caller whose health signal is not the Ready condition (a custom
// condition, an external probe) counts its nodes per zone and calls
// UpdateCounts instead of Update: same states, rates and mode.
//
// # Removed zones
//
// A zone absent from an Update (all its nodes excluded, deleted, or failed
// to update this pass) is forgotten and listed in Decision.Removed. A zone
// that comes back starts from StateInitial with RateChanged set. Keep the
// zone's tainting queue meanwhile (Queues does, for good) and run it at
// Decision.UndecidedQPS, the rate upstream's queue for such a zone runs
// at: its nodes waiting there keep their place, and a node it tainted
// stays known to it, so the node is not queued again and spends no token.
// Upstream deletes the zone's state in handleDisruption, and on the next
// pass addPodEvictorForNewZone replaces the zone's queue with a new one
// (found reading pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// v1.37.2; no upstream issue): the waiting nodes and the limiter state are
// lost, and with permanently excluded nodes this happens on every pass
// (when handleDisruption's loop reaches the zone), each tainted Unknown or
// NotReady node is queued again and spends the new queue's token to write
// its taint again with a new TimeAdded, and node_collector_evictions_total
// counts it again.
//
// # Time and concurrency
//
// The Tracker does not depend on time: decisions depend only on the health
// of the pass, and the caller's loop supplies the cadence. Queues.Apply and
// Queues.Ensure take now and hand it, unchanged, to the queues' SetRate and
// to the constructor: keep the caller's now as given (clock.Now(), with its
// monotonic reading) so that the queues measure intervals on the monotonic
// clock and a wall-clock step (NTP, a resumed VM) fires nothing early; fake
// clocks, whose instants have no monotonic reading, compare by wall time.
// Queues.NextDeadline returns the queues' own instants unchanged.
//
// A Tracker is safe for concurrent use (one mutex); it runs no callbacks and
// starts no goroutines. A Queues is safe for concurrent use too (see
// Queues for which of its methods may run user code). Compute, Classify and
// Key are pure functions.
//
// # Differences from upstream
//
//   - Stale zones: unlike upstream, every zone absent from the pass is
//     removed and reported, in sorted order. Upstream deletes them inside the
//     loop that computes allWasFullyDisrupted and breaks at the first non-Full
//     zone, so which stale zones survive depends on map iteration order
//     (found reading handleDisruption; no upstream issue).
//   - Rates: unlike upstream, each zone's QPS is recomputed on every Update
//     and RateChanged reports a difference from the last decided rate (and a
//     zone's first decision). Upstream only sets a limiter when the zone's
//     state changes, so a PartialDisruption zone that grows past
//     LargeClusterThreshold stays at rate 0.
//   - Mode edges: unlike upstream, full disruption mode is remembered. When
//     the last zone with a Ready node disappears and the remaining zones are
//     all Full, we enter the mode (upstream skips removed zones, stays out of
//     it, and keeps tainting the dead zones at the normal rate). When a new
//     zone with a Ready node appears during the mode we report the exit
//     (upstream takes its normal path: no fresh grace periods, and the old
//     Full zones keep rate 0 because their state did not change).
//   - Zones without a decision (see Removed zones above): unlike
//     upstream, their queues are kept, with their pending and done
//     nodes and their limiter, and stopped in full disruption mode like
//     every other (Decision.UndecidedQPS is 0 then). Upstream creates the
//     queue anew, running at evictionLimiterQPS, on the pass after
//     handleDisruption deleted the zone, so the zone's nodes are tainted
//     during the mode.
//   - A zone listed with an empty condition slice counts as absent (upstream
//     never builds one), so a zone of excluded nodes cannot keep the cluster
//     out of full disruption mode. An Update with no zones at all only
//     removes zones: upstream finds "all zones fully disrupted" vacuously
//     true both now and before, and does nothing either.
//   - HoldFullyDisruptedZones and FullDisruptionQPS (opt-in; false and nil
//     = upstream): the per-zone hold (rate 0), or a separate rate, for a
//     fully disrupted zone next to healthy ones, as asked in
//     kubernetes/kubernetes#70501, #110114 and #131182
//     (kubernetes/enhancements#5226, #5263).
//
// Compute keeps upstream's float32 ratio on purpose, for bit-for-bit parity;
// for whole-percent thresholds and zones of up to 10,000 nodes it decides as
// exact arithmetic would (see Compute).
//
// # Cost
//
// Compute is O(N) for N conditions and allocates nothing. Update is
// O(N + Z log Z) for Z zones; its one allocation in the steady state is the
// returned Zones slice (pinned by TestUpdateSteadyStateAllocs).
// UpdateCounts is O(Z log Z). Queues.NextDeadline and Queues.Len are O(Z)
// and allocate nothing.
package zonestate
