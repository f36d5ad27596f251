// Package agent is a small node agent built on the lifecycle podworker
// package: it plays the kubelet for one or more Nodes against a real API
// server, with a pluggable container Runtime (FakeRuntime is an in-memory
// one whose faults are scriptable). It is the caller loop of podworker's
// package doc, wired to client-go.
//
// # What it does, and the upstream code it follows (v1.37.2)
//
//   - Registers each Node (labels from NodeConfig) or adopts the existing
//     one (pkg/kubelet/kubelet_node_status.go, registerWithAPIServer).
//   - Renews each Node's Lease in kube-node-lease every LeaseRenewInterval,
//     an update with the resourceVersion it read, and a fresh Get after a
//     failure (the lease controller of k8s.io/component-helpers/apimachinery/lease,
//     which pkg/kubelet/kubelet.go starts).
//   - Posts each Node's conditions (Ready, MemoryPressure, DiskPressure,
//     PIDPressure, with the kubelet's reasons and messages) every
//     StatusUpdateFrequency and at once when SetNodeCondition changes one,
//     as a strategic merge patch of status.conditions
//     (pkg/kubelet/kubelet_node_status.go, tryUpdateNodeStatus).
//   - Watches the pods bound to its nodes with one informer (field selector
//     spec.nodeName; for several nodes every bound pod, filtered and indexed
//     by node) and feeds podworker.Workers: Create on add, Update on change,
//     Kill on removal (HandlePodAdditions, HandlePodUpdates,
//     HandlePodRemoves in pkg/kubelet/kubelet.go). An update that changes
//     only the pod's status is not passed on (a reconcile: checkAndUpdatePod
//     in pkg/kubelet/config/config.go at v1.37.2).
//   - Every StatusSyncPeriod (10 s), SyncStatuses: a running pod whose
//     Ready condition another writer set to False (the node lifecycle
//     controller's MarkPodsNotReady on a node it thinks Unknown) is synced
//     again, which writes Ready=True back, as the kubelet's status manager
//     does at its sync (syncBatch, needsReconcile in
//     pkg/kubelet/status/status_manager.go at v1.37.2): not at once, so the
//     agent and a controller that marks the pod again while it still sees
//     the node not ready do not trade writes.
//   - Runs the steps on Parallelism goroutines: SyncWork starts the pod and
//     writes status Running with the Ready condition and running container
//     statuses; TerminatingWork kills with the step's grace period;
//     TerminatedWork writes the final status (Succeeded when every
//     container exited 0, Failed otherwise), releases the pod and, when the
//     pod has a deletionTimestamp, confirms the deletion with a delete of
//     grace 0 and a UID precondition (the status manager's second phase of
//     graceful deletion, pkg/kubelet/status/status_manager.go). Status is
//     written with an Update carrying the pod's resourceVersion; a conflict
//     reads the pod again.
//   - Every HousekeepingPeriod, Housekeeping (HandlePodCleanups in
//     pkg/kubelet/kubelet_pods.go): SyncKnownPods with the desired pods,
//     restarts of forgotten UIDs, runtime pods unknown to the workers
//     killed with grace 1 (so a restarted agent terminates the orphans its
//     predecessor left), orphaned mirror pods deleted, metrics published.
//   - Static pods from Config.StaticPodPath (pkg/kubelet/config/file.go),
//     with mirror pods in the API carrying kubernetes.io/config.mirror, and
//     UID reuse (a manifest removed and written again with the same UID
//     while the old instance terminates starts again only after it
//     finished, kubernetes/kubernetes#104648).
//   - The kubelet's pod worker metrics (Collector): kubelet_desired_pods,
//     kubelet_active_pods, kubelet_mirror_pods, kubelet_working_pods,
//     kubelet_restarted_pods_total, kubelet_orphaned_runtime_pods_total.
//
// # Differences from the kubelet
//
// No admission, no probes, no images, volumes or cgroups: a pod's
// containers run as soon as the runtime starts them and are ready at once.
// By default a node's status is posted at every StatusUpdateFrequency tick,
// changed or not; the kubelet computes it at every tick too
// (nodeStatusUpdateFrequency) but posts it only when it differs from the
// Node in its informer or nodeStatusReportFrequency (5 min) has passed
// (tryUpdateNodeStatus in pkg/kubelet/kubelet_node_status.go at v1.37.2),
// which Config.StatusReportFrequency turns on (the agent reads the Node
// with a GET). Either way a Ready=Unknown the node lifecycle controller
// wrote is overwritten at the next tick, as by the kubelet; a
// StatusUpdateFrequency raised to stand for the report frequency delays
// that too, where StatusReportFrequency does not. Unlike the kubelet's node
// status loop (wait.JitterUntil, jitter 0.04), the ticks have no jitter.
// Status is an Update with the resourceVersion instead of the status
// manager's patch, so a concurrent writer's change is never overwritten.
// Static pods are bound to the first node of Config.Nodes; a generated
// static pod UID is not the kubelet's, and static pods get no NoExecute
// toleration (see ReadManifests). Unlike the
// kubelet, which recreates a mirror pod only when its hash differs, a
// mirror pod left in a terminal phase by an earlier instance with the same
// UID is replaced, since the API refuses to move a pod out of a terminal
// phase.
//
// # Concurrency
//
// Run starts one goroutine per node, the informer, Parallelism step
// goroutines and one goroutine for housekeeping and the status syncs; all
// stop when its context is done. The exported methods are safe for concurrent use.
package agent
