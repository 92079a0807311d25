#!/usr/bin/env bash
# Installs what `make run` / `make test` need on a fresh machine and is a no-op once it is there:
# Debian packages for the scripts, then the Go-built binaries and the Python client of
# tests/conformance (cached outside the repository).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

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
"$here/tools.sh" kube >/dev/null
"$here/tools.sh" jaeger >/dev/null
"$here/tools.sh" helm >/dev/null
"$here/tools.sh" gardener >/dev/null
"$here/tools.sh" gardener-crds >/dev/null
"$here/tools.sh" kube-node >/dev/null
"$here/tools.sh" pause >/dev/null
"$here/tools.sh" toolbox >/dev/null
# shellcheck source=hack/lib.sh
source "$here/lib.sh"
# shellcheck source=hack/versions.env
source "$here/versions.env"
conformance_venv >/dev/null
