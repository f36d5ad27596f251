//go:build tools

// Package tools pins the versions of kube-apiserver and etcd that the e2e
// tests run against (and kube-controller-manager, for the side-by-side parity
// tests). It is never compiled into anything; hack/build.sh builds
// the two binaries from this module (see ../README.md).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
