#!/usr/bin/env bash
# Installs what `make run` / `make test` need on a fresh machine and is a no-op once it is there:
# Debian packages for the scripts, then the Go-built binaries and the Python client of
# tests/conformance (cached outside the repository).
#
#   hack/deps.sh [all|packages|tools]    (default all: packages, then tools)
#
# `make test` installs the packages first and builds the tools in the background while cargo
# compiles: on a fresh machine each takes about a quarter of an hour, and a good part of the
# tools' time is downloading Go modules, which leaves the CPU to cargo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
part=${1:-all}
case "$part" in all|packages|tools) ;; *) echo "usage: $0 [all|packages|tools]" >&2; exit 2 ;; esac

if [ "$part" != tools ]; then

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need openssl openssl
need curl curl
need jq jq
need ss iproute2
need flock util-linux
need setsid util-linux
need ps procps
need go golang-go
need git git
need prometheus prometheus
need promtool prometheus
need python3 python3
# The node the deployed suite installs the chart on (hack/node.sh), and the images it runs.
need containerd containerd
need runc runc
need iptables iptables
need conntrack conntrack
need gcc gcc
# The pause image is linked static: gcc alone (without recommends) lacks libc.a.
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(libc6-dev)
need umoci umoci
need skopeo skopeo
need docker-registry docker-registry
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
[ -x /bin/busybox ] || missing+=(busybox-static)
need objcopy binutils
need update-ca-certificates ca-certificates
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "hack/deps.sh: installing ${missing[*]} from Debian's packages" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u)
fi
command -v cargo >/dev/null 2>&1 || { echo "hack/deps.sh: Rust (cargo) is required: https://rustup.rs" >&2; exit 1; }
fi
[ "$part" != packages ] || exit 0

# Two chains side by side, so that one downloads modules while the other compiles. helm comes
# first: the image needs it. kube-node reuses kube-apiserver's Go build cache (the same module),
# so it follows it. Every tool build holds its own lock: a second caller waits, never builds twice.
tool() { "$here/tools.sh" "$1" >/dev/null; }
conformance() {
  # shellcheck source=hack/lib.sh
  source "$here/lib.sh"
  # shellcheck source=hack/versions.env
  source "$here/versions.env"
  conformance_venv >/dev/null
}
( tool helm && tool kube && tool kube-node && tool pause && tool toolbox ) & first=$!
( tool jaeger && tool gardener && tool gardener-crds && conformance ) & second=$!
rc=0
wait "$first" || rc=$?
wait "$second" || rc=$?
exit "$rc"
