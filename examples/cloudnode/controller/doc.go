// Package controller is a cloud node lifecycle controller built on
// nodehealth: the part of upstream's cloud-node-lifecycle-controller
// (k8s.io/cloud-provider v0.37.2, controllers/nodelifecycle/
// node_lifecycle_controller.go, MonitorNodes) that deletes the Nodes whose
// cloud instance is gone and taints the Nodes whose instance is shut down.
// It reads Nodes from a client-go shared informer and talks to the cloud
// only through k8s.io/cloud-provider's cloudprovider.InstancesV2
// (InstanceExists, InstanceShutdown), so any provider plugs in.
//
// Every MonitorPeriod, for each node (in name order, or split among
// ConcurrentNodeLifecycleSyncs workers, upstream's
// --concurrent-node-lifecycle-syncs of v1.37):
//
//	node state                               action
//	---------------------------------------  ---------------------------------------------
//	Ready                                    no cloud call; its NotFound count and backoff
//	                                         reset; the shutdown taint removed if present
//	uninitialized (no providerID, the        left alone (no cloud call)
//	  uninitialized taint), younger than 1m
//	in Unknown backoff / NotFound ageing /   no cloud call until OrphanDecision.NextCheck
//	  the API's Retry-After                    (or the Retry-After) has passed
//	otherwise                                InstanceExists → nodehealth.ClassifyExistence
//	                                         → OrphanTracker.Observe:
//	  Delete (confirmed gone)                  DeletingNode Event; Delete with a UID
//	                                           precondition
//	  Exists                                   InstanceShutdown: shut down → add the
//	                                           node.cloudprovider.kubernetes.io/shutdown
//	                                           NoSchedule taint; running → remove it
//	  Unknown                                  back off (5s doubling to 5m by default)
//
// Where it differs from upstream, and why:
//
//   - Unlike upstream, an error from InstanceExists is not "keep and ask
//     again next period" forever: errors wrapping nodehealth.ErrParentNotFound
//     or ErrInstanceNotFound mean gone (the Azure VMSS incident,
//     kubernetes/kubernetes#95288, where nodes of a deleted scale set were
//     never deleted and every retry cost a throttled List call), and any
//     other error backs the node off exponentially. An error that has a
//     RetryAfter() time.Duration method (an API's 429) is honoured too, up
//     to Policy.MaxUnknownBackoff, as the backoff is capped: a provider
//     asking for "100 years" cannot silence a node for good.
//   - Deletion can require several NotFound answers spanning a minimum age
//     (OrphanPolicy; the default is upstream's single answer).
//   - The Delete carries a UID precondition, and a node created again under
//     the same name starts with no NotFound answers: a decision about the
//     old node never deletes the new one.
//   - The shutdown taint is removed as soon as the instance runs again, not
//     only when the node is Ready (upstream); taint writes carry the
//     resourceVersion they were computed from.
//   - An uninitialized node (no providerID, the uninitialized taint) is
//     left alone for Policy.UninitializedNodeDelay after its creation, in
//     both modes; upstream at v1.37.2 asks about it at once (a wait was
//     proposed in kubernetes/kubernetes#124825, closed unmerged).
//
// Upstream's metrics of v1.37 are exported under their names, labels and
// buckets (MetricMonitorNodesDuration, MetricCloudProviderCalls), ours
// under lifecycle_cloudnode_* (Collector).
//
// Config.UpstreamStyle switches the decisions back to upstream's rules, so
// the two can be compared on the same fake cloud (examples/cloudnode
// -compare, and the e2e tests).
//
// Time: the controller reads its clock once per node visit and passes it to
// the OrphanTracker; a fake clock drives it completely in tests (Run's
// ticker follows it, or tests call Pass).
package controller
