#!/usr/bin/env bash
# Runs upstream's device taint eviction benchmarks (Kubernetes v1.37.2) for
# comparison with taints' BenchmarkDeviceTaintUntaint and
# BenchmarkDeviceTaintPool: BenchmarkTaintUntaint as upstream ships it, and
# BenchmarkScaleTaintPool (testdata/scale_bench_test.go.in: the same
# 10,000 devices, 50,000 claims, 100,000 pods, through upstream's event
# handlers with its NOPQueue).
#
# The module cache's k8s.io/kubernetes has no staging/ tree, so a copy's
# go.mod points the staging modules at their v0.37.2 releases. The first run
# downloads and compiles much of Kubernetes (many minutes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(GOFLAGS=-mod=mod go mod download -json k8s.io/kubernetes@v1.37.2 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/k8s" && chmod -R u+w "$work/k8s"
cd "$work/k8s"
sed -i -E 's#(k8s.io/[a-z0-9-]+) => ./staging/src/k8s.io/[a-z0-9-]+#\1 => \1 v0.37.2#' go.mod
cp "$here/testdata/scale_bench_test.go.in" pkg/controller/devicetainteviction/scale_bench_test.go
GOWORK=off GOFLAGS=-mod=mod go test -run XXX -bench 'BenchmarkTaintUntaint|BenchmarkScaleTaintPool' -benchmem "$@" ./pkg/controller/devicetainteviction/
