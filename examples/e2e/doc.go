// Package e2e holds the lifecycle end-to-end tests: the example controllers
// run against a real kube-apiserver v1.37.2 and etcd v3.7.0 on 127.0.0.1,
// with the test playing the kubelet (it writes Node status and renews
// Leases; nothing else runs).
//
// This directory is a nested Go module so the library's go.mod never gains
// k8s.io/kubernetes and its staging replaces; `go test ./...` at the
// repository root does not run these tests. Run them with one command:
//
//	examples/e2e/run.sh
//
// which builds the two servers once (cached by version; see hack/build.sh
// and testbin/) and then runs `go test -race -count=1 ./...` here. See
// README.md and package [github.com/kubelifecycle/lifecycle/examples/e2e/cluster].
package e2e
