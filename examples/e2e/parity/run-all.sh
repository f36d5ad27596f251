#!/usr/bin/env bash
# run-all.sh — the four parity scenarios against kube-controller-manager
# v1.37.2: one node silent (the one CI runs), a zone dark while another is
# healthy, every node dark, 40 of 60 nodes of a large zone silent. Each runs
# on two fresh kube-apiservers at once (about 20-60 s each).
#
# Each side's trace and the diff go to $LIFECYCLE_E2E_PARITY_OUT (default:
# a new directory under /tmp, printed at the end). Extra arguments go to
# `go test` (through run.sh), e.g. -run 'TestParityScenarios/all-dark'.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LIFECYCLE_E2E_PARITY=all
export LIFECYCLE_E2E_PARITY_OUT=${LIFECYCLE_E2E_PARITY_OUT:-$(mktemp -d /tmp/lifecycle-parity-XXXXXX)}
rc=0
if [ $# -eq 0 ]; then set -- -run '^TestParity'; fi
"$HERE/../run.sh" -v "$@" 2>&1 | grep -v '^I[0-9]\{4\} ' || rc=$?
echo "parity: traces and diffs in $LIFECYCLE_E2E_PARITY_OUT" >&2
for d in "$LIFECYCLE_E2E_PARITY_OUT"/*/; do
  [ -f "$d/diff.txt" ] && head -1 "$d/diff.txt" >&2
done
exit "$rc"
