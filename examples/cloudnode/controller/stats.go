package controller

// Stats are the controller's counters. Controller.Collector exports them as
// Prometheus metrics (the lifecycle_cloudnode_* names in metrics.go):
// Passes, ExistsCalls and ShutdownCalls (cloud calls by method and result),
// the skipped calls, NodesDeleted, DeleteFailures, the taint writes and the
// BackingOff gauge.
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
