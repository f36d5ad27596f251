#!/usr/bin/env bash
# build.sh — build kube-apiserver, kube-controller-manager and etcd for the
# e2e tests, cached by version.
#
# The versions come from examples/e2e/testbin/go.mod (k8s.io/kubernetes and
# go.etcd.io/etcd/server/v3). The binaries go to
#   $LIFECYCLE_E2E_BIN                                   when set, else
#   ${XDG_CACHE_HOME:-$HOME/.cache}/lifecycle-e2e/k8s-<v>-etcd-<v>/
# A cold build takes 8-16 minutes on 2 busy cores (peak ~2 GB RSS); when both
# binaries already exist nothing is built. The directory is printed as the
# last line of stdout; progress and timings go to stderr.
#
# Usage: examples/e2e/hack/build.sh [-f]     (-f: rebuild even if cached)
set -euo pipefail

force=0
case "${1:-}" in
  -f|--force) force=1 ;;
  "") ;;
  *) echo "usage: $0 [-f]" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS=$(cd "$HERE/../testbin" && pwd)

modver() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$TOOLS/go.mod"; }
KV=$(modver k8s.io/kubernetes)
EV=$(modver go.etcd.io/etcd/server/v3)
[ -n "$KV" ] && [ -n "$EV" ] || { echo "build.sh: cannot read versions from $TOOLS/go.mod" >&2; exit 1; }

BIN=${LIFECYCLE_E2E_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/lifecycle-e2e/k8s-$KV-etcd-$EV}
mkdir -p "$BIN"

have() { [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ] && [ -x "$BIN/kube-controller-manager" ]; }
if [ "$force" = 0 ] && have; then
  echo "build.sh: cached kube-apiserver $KV and etcd $EV in $BIN" >&2
  echo "$BIN"
  exit 0
fi

# One build at a time per cache dir: a second caller waits, then finds the cache.
exec 9>"$BIN/.build.lock"
flock 9
if [ "$force" = 0 ] && have; then
  echo "build.sh: cached kube-apiserver $KV and etcd $EV in $BIN (built by another run)" >&2
  echo "$BIN"
  exit 0
fi

t() {
  local s; s=$(date +%s)
  "$@"
  echo "[build] $(( $(date +%s) - s ))s: $*" >&2
}

# The tools module is self-contained: ignore any go.work, keep the toolchain
# that is installed. Never export ETCD_* variables: etcd reads them as flags.
export GOWORK=off
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

minor=${KV#v1.}; minor=${minor%%.*}
V=k8s.io/component-base/version
KAS_LDFLAGS="-s -w -X $V.gitVersion=$KV -X $V.gitMajor=1 -X $V.gitMinor=$minor -X $V.gitTreeState=clean"

start=$(date +%s)
echo "build.sh: building kube-apiserver and kube-controller-manager $KV and etcd $EV into $BIN (cold: 8-20 min; only missing binaries are built)" >&2
cd "$TOOLS"
t go mod download
# Build to temporary names and rename, so an interrupted build never leaves a
# binary that looks cached. A binary already in the cache (a cache made before
# kube-controller-manager was added) is kept.
rm -f "$BIN"/.tmp-*
for cmd in kube-apiserver kube-controller-manager; do
  [ "$force" = 0 ] && [ -x "$BIN/$cmd" ] && continue
  t go build -trimpath -ldflags "$KAS_LDFLAGS" -o "$BIN/.tmp-$cmd" "k8s.io/kubernetes/cmd/$cmd"
  got=$("$BIN/.tmp-$cmd" --version | sed -n 1p)
  echo "build.sh: $cmd: $got" >&2
  [ "$got" = "Kubernetes $KV" ] || { echo "build.sh: unexpected $cmd version: $got" >&2; exit 1; }
  mv -f "$BIN/.tmp-$cmd" "$BIN/$cmd"
done
if [ "$force" = 1 ] || [ ! -x "$BIN/etcd" ]; then
  t go build -trimpath -ldflags "-s -w" -o "$BIN/.tmp-etcd" go.etcd.io/etcd/server/v3
  got_ev=$("$BIN/.tmp-etcd" --version | sed -n 1p)
  echo "build.sh: etcd: $got_ev" >&2
  case "$got_ev" in *"${EV#v}"*) ;; *) echo "build.sh: unexpected etcd version: $got_ev" >&2; exit 1 ;; esac
  mv -f "$BIN/.tmp-etcd" "$BIN/etcd"
fi
echo "[build] $(( $(date +%s) - start ))s: total cold build" >&2
echo "$BIN"
