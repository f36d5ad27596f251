// Package controller is a node lifecycle controller built from the lifecycle
// packages and client-go, as a controller author would write it: it runs the
// decision loop of package monitor (nodehealth, zonestate, evictionqueue and
// taints together) against an API server.
//
// It models the kube-controller-manager v1.37.2 node-lifecycle-controller
// together with the taint-eviction-controller; the decisions, and where they
// differ from upstream, are monitor's (see that package). With
// Config.Devices it also runs the device-taint-eviction-controller (see
// "Device taints" below); with Config.DisableNodeLifecycle only that.
//
// # Wiring
//
//	informers (Nodes [NodeSelector], Leases in kube-node-lease, Pods by spec.nodeName)
//	   │ add/update/delete                          ▲ reads (monitor.Cluster)
//	   ▼                                            │
//	workqueue (typed, rate-limited) ──► workers ──► Monitor.NodeChanged/NodeDeleted/PodChanged/PodDeleted
//	monitor loop, every MonitorPeriod ─────────────► Monitor.MonitorPass
//	tainting loop, every TaintPeriod or sooner ────► Monitor.TaintPass + Monitor.EvictionPass
//	                                                │ writes (monitor.Cluster), with the clientset
//	                                                ▼
//	Patch(node status conditions) · Patch(node taints, with resourceVersion, retry on conflict)
//	Patch(pod status Ready=False) · Patch(pod status DisruptionTarget) + Delete(pod, UID precondition)
//
// The workqueue carries keys only (a node name, a pod's namespace/name); the
// worker reads the object's current state from the cache, so a burst of
// events for one object is handled once, and an object gone from the cache
// is forwarded as a deletion. The pods of the initial list are queued by
// node (one key for the pods bound to it), not one key each: a workqueue's
// sets keep the size they grew to. Pod updates are queued only when the node,
// UID or tolerations changed (status updates, the controller's own
// included, are not). When a write made while handling an event fails
// (a NoSchedule condition taint, a pod's Ready=False), the key is requeued
// with the workqueue's backoff; upstream only logs the failure.
//
// The tainting loop and the eviction loop each run every TaintPeriod
// (upstream's 100ms), at their own next deadline when that is sooner, right
// after a monitor pass or an event (they may have queued work), and back to
// back while work is due and the last pass made progress, so an unthrottled
// eviction rate is not capped at one node per zone per period. A pass that
// makes no progress on due work waits a whole period: a failing API server
// is not hammered. They are separate loops, and the monitor pass hands its
// pod Ready=False writes to marking workers, so that no duty waits behind
// another's writes (loops.go); Config.Clients gives each duty its own
// client and rate limiter.
//
// # What the cache keeps
//
// The informers trim pods and nodes to what the controller reads
// (trim.go): a cached pod is a few hundred bytes instead of the whole
// object. The pods of each node are kept by name by the pod handlers
// (podindex.go), not by an informer index, and the pod informer has no
// namespace index: about 80 bytes per pod less. No write is built from what the trim dropped: every status write
// is a patch of the conditions the controller changed.
//
// # Writes
//
//   - Node status: a strategic-merge patch of the conditions that changed
//     (upstream: UpdateStatus of the whole node). It carries the cached
//     resourceVersion, so it fails with a conflict when the node changed
//     since; the Monitor skips the node and decides again at the next pass
//     (upstream retries 5 times first). Conditions that repeat a type are
//     written whole by a JSON merge patch instead (patch.go), so they end
//     as upstream's UpdateStatus leaves them.
//   - Node taints: read-modify-write with retry.RetryOnConflict and
//     Config.ConflictBackoff (upstream: 5 steps of 100ms). The first read is
//     from the cache, later ones from the API server. The write is a
//     strategic-merge patch of spec.taints (an atomic list) carrying
//     metadata.resourceVersion, so no write is blind and a concurrent
//     writer's taint is never lost.
//   - Pod Ready=False: a strategic-merge patch of the Ready condition
//     carrying the cached resourceVersion and UID (upstream: UpdateStatus
//     of the whole pod); NotFound is ignored by the Monitor. A pod whose
//     conditions repeat a type is read from the API server and its whole
//     condition list written by a JSON merge patch with the same
//     preconditions.
//   - Eviction: the DisruptionTarget condition by a strategic-merge patch of
//     the pod's status (nodehealth.DisruptionTargetStatus; skipped when the
//     pod has that condition already; the patch carries the UID), then Delete with a UID precondition. A pod re-created
//     under the same name is reported as a conflict and left alone. NotFound
//     is returned; the Monitor counts it as done.
//
// # Kubernetes Events
//
// With Config.Recorder set, the decisions upstream reports as Kubernetes
// Events are recorded with upstream's reasons, types and messages:
// RegisteredNode and RemovingNode when a monitor pass first sees a node or
// no longer sees it, NodeNotReady on a node written Unknown and a Warning
// NodeNotReady on each pod marked Ready=False, TaintManagerEviction on a pod
// deleted for a NoExecute taint ("Marking for deletion") and on a pod whose
// scheduled deletion was cancelled ("Cancelling deletion"; through
// Config.EvictionRecorder when set: upstream records them as
// taint-eviction-controller, the rest as node-controller), and in legacy
// mode DeletingAllPods and NodeControllerEviction. The rest (zone states,
// taints, failed writes) goes to Config.OnEvent only, as upstream only logs
// it.
//
// # Restarts
//
// Upstream keeps every countdown in memory: a restart gives every silent node
// a fresh grace period and restarts every toleration countdown (#108268).
// Two opt-in Config settings keep them: Snapshots (a SnapshotStore, e.g.
// NewConfigMapStore) saves nodehealth's records every SnapshotPeriod and on
// shutdown (unless SkipFinalSnapshot) and restores them at start (only
// those of nodes that exist; a snapshot that cannot be read is skipped with
// an error log and a Warning Event, and bounded: ConfigMapStore.MaxRecords
// and MaxBytes); Monitor.Evictor.UseTaintTimeAdded
// counts tolerations from the taints' timeAdded. Nodes keep their NoExecute
// taints across a restart (monitor does not remove them on first sight).
//
// # Device taints
//
// The device taint eviction duty (Config.Devices, device.go) is
// kube-controller-manager v1.37.2's device-taint-eviction-controller
// (pkg/controller/devicetainteviction, KEP-5055) on
// taints.DeviceEvictor: a pod using a ResourceClaim allocated a device with
// a NoExecute taint (in its ResourceSlice, or from a DeviceTaintRule) that
// the claim does not tolerate is deleted, at the taint's timeAdded plus
// the claim's tolerationSeconds. It shares the pod informer (a cached pod
// keeps its claims), adds ResourceSlice and ResourceClaim informers
// (resource.k8s.io/v1, trimmed: devicetrim.go) and a DeviceTaintRule
// informer (resource.k8s.io/v1 through a dynamic client, which client-go
// v0.35 needs), and writes what upstream writes, as upstream writes it:
//
//   - a Normal DeviceTaintManagerEviction Event "Marking for deletion"
//     (source device-taint-eviction-controller; involvedObject the pod's
//     apiVersion, kind, namespace, name and UID), then the DisruptionTarget
//     condition (DeletionByDeviceTaintManager) by a status patch carrying
//     the pod's UID, then Delete with a UID precondition; a pod already
//     terminating is counted, without an Event or a write;
//   - "Cancelling deletion" when a scheduled deletion is cancelled;
//   - the EvictionInProgress condition of each DeviceTaintRule by
//     server-side apply of its status (field manager
//     device-taint-eviction-controller, force, the rule's UID), at once
//     for a new rule or spec and at most every 10 s while pods are
//     evicted;
//   - failed writes retried with upstream's per-item backoff (5 ms
//     doubling to 1,000 s), never abandoned.
//
// Unlike upstream: the pod is read from the shared cache before its
// deletion (upstream GETs it; the UID preconditions keep a stale read from
// touching another pod); the duty waits for its own caches, so a missing
// RBAC grant or API never holds the node duties; an API server that does
// not serve resource.k8s.io/v1 devicetaintrules runs the duty without
// rules (upstream's controller never starts), one that serves no slices or
// claims leaves it off (ErrDevicesNotServed); with a DeviceSnapshotStore
// (ConfigMapStore is one) the pods it evicted and each rule's count of
// evicted pods survive a restart (upstream counts a still terminating pod
// again, in its metrics and its rule's count, which starts at 0: the
// rule says NotStarted until then, and for good when the pod is gone).
//
// # Time
//
// Every decision uses the injected clock (clock.RealClock{} in production).
// With a k8s.io/utils/clock/testing.FakeClock, the loops' timers and the
// workqueue's delays follow it too. The conflict backoff waits in real time:
// it is about the API server, not the policy.
//
// # Tests
//
// Tests can run the controller without Run: Start (informers, cache sync,
// snapshot restore), then ProcessEvents, MonitorPass and TaintPass at the
// fake clock's time (StartDevices and DevicePass for the device duty), and
// Shutdown; Cluster exposes the cache-backed reads to
// wait for the informers. The package's own tests do this on the fake
// clientset, with reactors that add an API server's optimistic concurrency
// and UID preconditions, which the fake lacks.
//
// # Concurrency
//
// A Controller is safe for concurrent use. Config.OnEvent and Recorder are called
// synchronously from the goroutine that made the decision (a worker, a loop,
// or one of the Monitor's Workers) and must be safe for concurrent use.
//
// # Performance
//
// See the README for BenchmarkAllLeasesStale (5,000 nodes, 150,000 pods on
// the fake clientset).
package controller
