// Package controller is the conditiontaint controller: custom node
// conditions (node-problem-detector's KernelDeadlock, ReadonlyFilesystem,
// …) to taints, on controller-runtime.
//
// The pieces and the library packages they drive:
//
//	Controller.ReconcileNode      Node reconciler: taints.ConditionTaints.For decides add/remove;
//	                              removal is immediate, additions go to the zone's evictionqueue.Queue
//	Controller.Start / Step       zone Runnable (leader only): zonestate.Tracker.UpdateCounts on every
//	                              node, zonestate.Queues.Apply, then Queue.Try taints at the zone's rate
//	Controller.ReconcilePod       taints.Evictor.SetPod / DeletePod
//	Controller.ReconcileEvictions taints.Evictor.Due, nodehealth.DisruptionTargetStatus, delete;
//	                              RequeueAfter from Evictor.NextDeadline; with pauseEvictions, due
//	                              evictions on a tripped group's nodes held until it recovers
//
// Nodes are grouped by zone (zonestate.Key) or by the value of a node label
// (ZoneConfig.GroupBy, a node pool); a group's breaker trips at a fraction
// (UnhealthyThreshold, upstream's rule) or above a count or percentage
// (MaxUnhealthy, as medik8s NodeHealthCheck's maxUnhealthy).
//
// Time comes from a clock.PassiveClock given in Options (a fake one in
// tests); every library call gets its now. Decisions and non-decisions
// (held by the breaker, waiting for the zone rate) are Events and
// lifecycle_conditiontaint_ metrics. See the README for the configuration.
//
// # Stability
//
// This module lives under examples/ and is not covered by the library's
// compatibility promise (the top-level README's Compatibility section). Within
// a minor release users may rely on the configuration file format (fields are
// only added, and a missing field keeps its meaning), the Event reasons and
// the metric names; the Go API of this package may change in any minor
// release, each change listed in the top-level CHANGELOG.md.
package controller
