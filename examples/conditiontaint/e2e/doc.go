// Package e2e runs the conditiontaint controller against a real
// kube-apiserver + etcd (the harness of examples/e2e/cluster): nodes get
// conditions as node-problem-detector would set them, and the tests watch
// taints, evictions and Events appear. Tests skip when the server binaries
// are missing, unless LIFECYCLE_E2E_REQUIRED=1.
package e2e
