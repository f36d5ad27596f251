// Package sim replays node outages in virtual time through the node
// lifecycle controller's decision loop, examples/nodecontroller/monitor: the
// same Monitor the real controller (examples/nodecontroller) runs against an
// API server, here run against an in-memory cluster
// (examples/nodecontroller/monitor/monitortest) on a virtual clock. It is
// the engine of the policysim command, and importable by tests:
//
//	sc := sim.NewScenario("zone-b-40", 15*time.Minute,
//		sim.NewZone("a", 60, sim.NewPods("web", 10)),
//		sim.NewZone("b", 60, sim.NewPods("web", 10)),
//	).On(sim.Stop(time.Minute, "b", 24))
//	res, err := sim.Run(ctx, sc)
//	// *res.Summary.Zones[1].LastEviction (a time.Duration since t=0),
//	// res.EvictedBy("b", 10*time.Minute), res.Pods(), res.Pending, ...
//
// A scenario is built in Go (NewScenario, NewZone, NewPods, Stop, ...) or
// loaded from YAML (LoadScenario, ReadScenario, LoadEmbedded); both give the
// same Scenario value. The Result holds the timeline (Entries), each zone's
// Summary, each pod's outcome (Pods: evicted at, or still there and why,
// from Monitor.Explain) and the work still pending when the run ended
// (Pending: nodes queued for tainting, evictions scheduled, and when the last
// of each would happen at the rates in force at the end).
//
// # What is modelled
//
// Kubernetes v1.37.2 node lifecycle: nodehealth (grace periods, Lease and
// status heartbeats, Ready=Unknown, the Lease circuit breaker of
// Policy.NodeControllerLeaseCircuitBreaker), zonestate (zone states,
// per-zone tainting rates, full disruption mode), evictionqueue (the
// per-zone rate-limited tainting queues), taints (NoSchedule condition
// taints, NoExecute health taints, the taint eviction controller's Evictor
// with the admission plugin's default tolerations), all through
// monitor.Monitor. With Options.PodEvictionTimeout (the command's
// -legacy-node-eviction), the pre-1.27 mode (--pod-eviction-timeout).
//
// With devices (Zone.Devices, Scenario.Devices), the device taint
// eviction controller of v1.37.2 too (KEP-5055, GA in v1.37: upstream
// pkg/controller/devicetainteviction) as taints.DeviceEvictor, beside the
// Monitor on the same virtual clock: DRA drivers publish a ResourceSlice
// per node, pod groups use ResourceClaims allocated those devices
// (PodGroup.DeviceClaim), and the device actions taint and untaint
// devices (a driver's taints, spread over a window: device-taint; a
// roll-back, node by node over a window: device-untaint), create
// and delete DeviceTaintRules and release a breaker's hold. The device
// pass writes the rules' status, deletes the pods due through the same
// cluster as the node path (a pod either path deletes is gone for the
// other) and reports holds, cancellations and warnings; Summary.Devices
// says what it did, per driver. The policy's blast-radius fields
// (Policy.DeviceEvictionQPS, DeviceMaxShare, DeviceResumeShare, ...;
// taints.DeviceBlastRadius, ours) are off by default: upstream's decisions
// (TestDeviceParity).
//
// The kubelets renew their Leases, post their status and, when running,
// put back what the controller wrote over it as the kubelet does
// (Kubelet.Reconcile): a node's Ready at the kubelet's next node status
// update (every 10s), its pods' Ready at its status manager's next sync
// (every 10s). So a node the controller wrongly wrote Unknown (a stalled
// Lease cache without the circuit breaker) is Ready again within 10s, not
// at the kubelet's next 5-minute report, and its pods too; Summary and
// ZoneSummary say how long nodes and pods were down (NodeSecondsDown,
// LongestNodeDown, PodSecondsNotReady, LongestPodNotReady).
//
// # Files
//
//	scenario.go   the YAML scenario: types, defaults, parsing with line numbers, validation, limits
//	devscenario.go  its devices, claims and device actions: types, validation, limits, work
//	build.go      constructors for scenarios built in Go
//	embedded.go   the embedded scenarios (scenarios/*.yaml)
//	sim.go        the virtual clock, the kubelets, the scenario's events, the work budget, cancellation
//	reconcile.go  the kubelets putting back what the controller wrote over their status
//	downtime.go   how long nodes and pods were down
//	stall.go      the controller's Lease cache stalling (lease-watch-stall)
//	devices.go    the device taint eviction controller beside the Monitor: feeding it, the device actions, the device pass
//	devsummary.go the device summary, its text, the sweep's device table and the SVG's device charts
//	renewals.go   spaced Lease renewals of kubelets no event concerns (a shortcut)
//	sweep.go      Scenario.With and the sweeps over fields
//	pending.go    the work left at the end and its projection; each pod's outcome
//	summary.go    the per-zone summary and the slowest pod's binding constraint
//	kind.go       the kinds of timeline entries
//	seconds.go    the result types' JSON, their times in seconds
//	report.go     text and JSON output
//	svg.go        the SVG timeline chart
//
// The virtual cluster is monitortest.Cluster
// (examples/nodecontroller/monitor/monitortest).
//
// # Time model
//
// Time is an offset from Epoch (t=0) and only moves when the driver moves
// it. At every instant, in this order: the kubelets due to beat renew their
// Lease, post their status and, when a reaction to the controller's writes
// is due, post it again or put their pods' Ready back (reconcile.go); the
// scenario's events of that instant apply, in file order (the kubelets' and
// the Lease cache's first, then the device actions'); the monitor pass
// runs (every policy.nodeMonitorPeriod from t=0); the taint pass and the
// eviction pass run (every 100ms from t=0); then, with devices, the device
// pass, at every instant its DeviceEvictor has work (NextDeadline: an
// eviction's TimeAdded plus tolerationSeconds, a rule status check, a
// driver's next token) or its inputs changed.
// Every node's kubelet beats on the same schedule (first beat at t=0, the
// moment the run starts), and a resumed kubelet beats from its resume time.
// Ticks at which Monitor.NextDeadline says the taint and eviction passes have
// nothing to do are skipped; Options.Tick runs them all, with identical results
// (TestSkippingEqualsTicking).
//
// # Determinism and concurrency
//
// The Monitor runs with one worker and every ordering is fixed (nodes by
// name, heartbeats by node, events by time then file order), so two runs of
// a scenario give the same timeline (TestDeterministic). The virtual cluster
// is safe for concurrent use anyway and never holds its lock while it calls
// the Monitor.
//
// # Simplifications
//
//   - Nodes carry only the Ready condition (pressure conditions play no part
//     in eviction); the kubelet reports Ready=True, or False after not-ready.
//   - API writes never fail and apply at once; the DisruptionTarget condition
//     and the pod deletion are one write (only the delete event is
//     forwarded).
//   - Time stands still within a pass, so a zone queue (burst 1) lets at
//     most one node through per 100ms taint pass: a tainting rate above 10
//     nodes/s acts as 10 nodes/s. Upstream's pass reads the real clock
//     between nodes, so there such rates are not capped.
//   - A resumed kubelet reports its pods Ready again kubelet.podReadyDelay
//     (10s) after it resumes, and they stay Ready even when the controller
//     has not yet seen the node Ready (as upstream, whose podUpdated ignores
//     a pod status update); pods of a kubelet reporting Ready=False are left
//     as they are.
//   - The device actions of one instant reach the DeviceEvictor before its
//     pass: a driver that republishes many slices at once (a device-taint
//     or device-untaint batch) is seen as one change. A real controller's
//     workers run while the informer delivers them, so between two slices
//     it may delete pods the next slice would have spared: for instance,
//     without hysteresis (Policy.DeviceResumeShare = DeviceMaxShare), when
//     an untaint ends a breaker's hold in the middle of a batch and the
//     pods still on tainted devices fall due at once (their taint's
//     TimeAdded is old); here they are cancelled in the same instant.
//     Between batches (over, every) the pass runs, as a real one would.
//   - A kubelet's node status updates and pod status syncs tick every
//     nodeStatusUpdateFrequency and podStatusSyncPeriod from its (re)start,
//     without upstream's 4% jitter of the first; its 5-minute status
//     reports keep their schedule after a reaction (upstream restarts it
//     from the reaction, with a random offset of up to half of it).
//
// # Results
//
// Every time in a Result is a time.Duration since Epoch (t=0): Entry.At,
// PodOutcome.EvictedAt, and the Summary's and Pending's times (pointers,
// nil when it never happened). In the JSON output (WriteJSON, and
// encoding/json on the result types) they are seconds, as they always were.
// Result.Entries has one Entry per thing that happened, not grouped (the
// text timeline groups an instant's like entries into one line); Entry.Kind
// is a Kind, one of this package's Kind constants. Result.EvictedBy counts
// the pods evicted by a given time.
//
// # Stability
//
// The package lives under examples/ and is not covered by the module's
// compatibility promise, but within a minor release of the module users may
// rely on: the scenario YAML format (fields are only added, with defaults
// that keep a file's meaning), the Kind strings, the JSON field names and
// units, and the exported names of this package. What may change in any
// release: the decisions themselves, which follow the modelled Kubernetes
// release (a run's timeline is deterministic for one version of this
// module, not across versions), the text and SVG layouts, the Detail
// strings, and the default Budget. Changes to what users may rely on are
// listed in examples/policysim/README.md.
//
// Runs are independent: several may run in parallel (the command's -sweep
// does). See examples/policysim/README.md for the scenario format and the
// output formats.
package sim
