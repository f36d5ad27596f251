// Command policysim replays node outages in virtual time through the node
// lifecycle controller's decision loop, examples/nodecontroller/monitor: the
// same Monitor the real controller (examples/nodecontroller) runs against an
// API server, here run against a virtual cluster on a virtual clock. Its
// timeline is therefore the controller's behaviour: nodes going Unknown, zone
// states and rates, NoExecute taints, pods marked not ready and evicted.
//
//	go run ./examples/policysim                       # the default scenario, offline-node
//	go run ./examples/policysim -list                 # the embedded scenarios
//	go run ./examples/policysim -run zone-partial     # another one
//	go run ./examples/policysim -scenario my.yaml -svg out.svg -format json
//	go run ./examples/policysim -legacy-node-eviction # the pre-1.27 eviction mode
//	go run ./examples/policysim -compare              # both modes side by side
//
// # What is modelled
//
// Kubernetes v1.36 node lifecycle: nodehealth (grace periods, Lease and
// status heartbeats, Ready=Unknown), zonestate (zone states, per-zone
// tainting rates, full disruption mode), evictionqueue (the per-zone
// rate-limited tainting queues), taints (NoSchedule condition taints,
// NoExecute health taints, the taint eviction controller's Evictor with the
// admission plugin's default tolerations), all through monitor.Monitor.
// With -legacy-node-eviction, the pre-1.27 mode (--pod-eviction-timeout).
//
// # Files
//
//	scenario.go   the YAML scenario: types, defaults, parsing with line numbers, validation
//	embedded.go   the embedded scenarios (scenarios/*.yaml)
//	cluster.go    the virtual cluster (monitor.Cluster): nodes, Leases, pods indexed by node
//	sim.go        the virtual clock, the kubelets, the scenario's events
//	summary.go    the per-zone summary and the slowest pod's binding constraint
//	report.go     text and JSON output
//	svg.go        the SVG timeline chart
//	main.go       flags
//
// # Time model
//
// Time is an offset from Epoch (t=0) and only moves when the driver moves
// it. At every instant, in this order: the kubelets due to beat renew their
// Lease and post their status; the scenario's events of that instant apply,
// in file order; the monitor pass runs (every policy.nodeMonitorPeriod from
// t=0); the taint pass and the eviction pass run (every 100ms from t=0).
// Every node's kubelet beats on the same schedule (first beat at t=0, the
// moment the run starts), and a resumed kubelet beats from its resume time.
// Ticks at which Monitor.NextDeadline says the taint and eviction passes have
// nothing to do are skipped; -tick runs them all, with identical results
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
//     (10s) after it resumes; pods of a kubelet reporting Ready=False are left
//     as they are.
//
// See README.md for the scenario format, the output formats and figures.
package main
