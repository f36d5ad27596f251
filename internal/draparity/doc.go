// Package draparity proves taints.DeviceToleratesTaint equal to upstream's
// k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint (v0.37.2)
// by exhaustive enumeration and a differential fuzz test.
//
// It is a module of its own because resourceclaim needs k8s.io/api v0.37:
// requiring it from the library's go.mod would raise the library's floor
// above k8s.io/api v0.35. Run it with
//
//	cd internal/draparity && go test ./...
//
// upstream-bench.sh runs upstream's own benchmarks beside the
// DeviceEvictor's (see the script).
package draparity
