#!/usr/bin/env bash
# run.sh — the one command for the e2e tests, locally and in CI.
#
# 1. hack/build.sh: build kube-apiserver + etcd once (8-16 min cold on 2
#    cores), cached by version under ${XDG_CACHE_HOME:-$HOME/.cache}/lifecycle-e2e/.
# 2. go vet + go test -race -count=1 ./... in this nested module, with
#    LIFECYCLE_E2E_REQUIRED=1 so a missing server fails instead of skipping.
# 3. Without arguments only: the node agent's scale test, without -race.
#
# Runs from any directory. Extra arguments go to `go test`, e.g.
#   examples/e2e/run.sh -v -run TestSmoke
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fs", b - a }'; }

t0=$(now)
BIN=$("$HERE/hack/build.sh")
t1=$(now)
echo "e2e: servers in $BIN ($(secs "$t0" "$t1"))" >&2

export LIFECYCLE_E2E_BIN="$BIN" LIFECYCLE_E2E_REQUIRED=1 GOWORK=off
cd "$HERE"
go vet ./...
t2=$(now)
rc=0
# The fault matrix, the etcd restart and the clock skew tests wait out real
# fault windows (about 6 min together): past go test's default 10m limit.
go test -race -count=1 -timeout 30m "$@" ./... || rc=$?
t3=$(now)
summary="test $(secs "$t2" "$t3")"
if [ $# -eq 0 ]; then
  # The full run adds the node agent's scale test (500 nodes, 15,000 pods,
  # a silent zone; about 3 min), without -race: at 15,000 pods the race
  # detector would slow the node controller in the test process far more
  # than the agent it measures. Its compiled packages are vet's.
  # Its figures are printed; the whole log only when it fails.
  log=$(mktemp)
  if LIFECYCLE_E2E_SCALE=1 go test -v -count=1 -timeout 20m -run '^TestNodeAgentScale$' . >"$log" 2>&1; then
    grep -E 'nodeagent_scale_test.go:[0-9]+: |^(--- |ok )' "$log" || true
  else
    rc=1
    tail -n 300 "$log"
  fi
  rm -f "$log"
  t4=$(now)
  summary="$summary, scale test $(secs "$t3" "$t4")"
  t3=$t4
fi
echo "e2e: build $(secs "$t0" "$t1"), vet $(secs "$t1" "$t2"), $summary, total $(secs "$t0" "$t3")" >&2
exit "$rc"
