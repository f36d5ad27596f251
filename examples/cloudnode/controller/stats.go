package controller

// Stats are the controller's counters, plain values (the module has no
// metrics library). A deployment would export them as Prometheus metrics in
// our own namespace, since upstream's cloud node lifecycle controller has
// none of its own: Passes as lifecycle_cloudnode_passes_total,
// ExistsCalls and ShutdownCalls as
// lifecycle_cloudnode_cloud_calls_total{method,result}, NodesDeleted as
// lifecycle_cloudnode_nodes_deleted_total, BackingOff as the gauge
// lifecycle_cloudnode_nodes_backing_off.
type Stats struct {
	// Passes is the number of monitor passes made.
	Passes int
	// ExistsCalls counts InstanceExists calls by their classified answer,
	// indexed by nodehealth.Existence (Unknown, Exists, NotFound).
	ExistsCalls [3]int
	// ShutdownCalls counts InstanceShutdown calls by answer.
	ShutdownCalls struct{ Running, Shutdown, Errors int }
	// NodesDeleted counts successful node deletions; DeleteFailures the
	// failed ones (each also records a DeletingNodeFailed Event).
	NodesDeleted, DeleteFailures int
	// TaintsAdded and TaintsRemoved count shutdown-taint writes;
	// TaintFailures the failed ones (retried next pass).
	TaintsAdded, TaintsRemoved, TaintFailures int
	// SkippedBackoff counts node visits that made no cloud call because the
	// node's Unknown backoff, its NotFound ageing or the API's Retry-After
	// had not run out; SkippedUninitialized those left alone as
	// uninitialized.
	SkippedBackoff, SkippedUninitialized int
	// BackingOff is the number of nodes whose last answer was Unknown (in
	// backoff now).
	BackingOff int
}

// CloudCalls returns the number of cloud calls made (InstanceExists and
// InstanceShutdown).
func (s Stats) CloudCalls() int {
	return s.ExistsCalls[0] + s.ExistsCalls[1] + s.ExistsCalls[2] +
		s.ShutdownCalls.Running + s.ShutdownCalls.Shutdown + s.ShutdownCalls.Errors
}
