#!/usr/bin/env bash
# Builds (once) and prints the folder holding kube-apiserver and etcd, envtest style.
# Usage: hack/tools.sh kube          -> prints a folder with kube-apiserver and etcd
#        hack/tools.sh jaeger        -> prints the path of the jaeger binary
#        hack/tools.sh helm          -> prints the path of the helm binary
#        hack/tools.sh cargo-modules -> prints the path of the cargo-modules binary (make check-imports)
#        hack/tools.sh gardener      -> prints the path of the gardener-resource-manager binary
#        hack/tools.sh gardener-apiserver -> prints the path of the gardener-apiserver binary (a local
#                                       garden: hack/garden.sh), built with gardener-resource-manager
#        hack/tools.sh kube-node     -> prints a folder with kubelet, kube-proxy, kube-controller-manager
#                                       and kube-scheduler (the node of NODE=1 make up)
#        hack/tools.sh pause         -> prints the path of an OCI archive of the Pod sandbox (pause)
#                                       image, built from the Kubernetes module's own pause.c
#        hack/tools.sh toolbox       -> prints the path of an OCI archive of a test-only image with
#                                       Debian's static busybox (a shell, httpd, wget, nc), for
#                                       checking a node's Pod network from inside Pods
#        hack/tools.sh gardener-crds -> prints a folder with Gardener's CRDs for Extension, Cluster
#                                       and ManagedResource, copied from the gardener module
#        hack/tools.sh gardener-operator-crds -> prints a folder with gardener-operator's CRD for
#                                       operator.gardener.cloud Extension, copied from the gardener module
# Honors KUBEBUILDER_ASSETS: when set, that folder is used and nothing is built.
# Everything is built from the Go module proxy with the machine's Go toolchain (cargo-modules from
# crates.io with cargo) and cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/ontap-operator, outside the repository, so fresh clones reuse it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ontap-operator
log() { echo "hack/tools.sh: $*" >&2; }

ensure_go() {
  command -v go >/dev/null 2>&1 && return 0
  log "installing Go from Debian's packages"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >&2
}

# Module download must not depend on the caller's GOFLAGS (e.g. -mod=vendor). Every Go build and
# download goes through here, so Go is installed only where a Go tool is built. The tools' modules
# are built with `go build -mod=mod`, not after `go mod tidy`: the build completes go.mod and go.sum
# with the modules its packages need on this platform alone, where tidy downloads those of every
# platform and every test too (Jaeger: 317 modules against 459, half the download time).
# The compiler makes no DWARF: `-ldflags "-s -w"` drops it from every binary anyway, and not making it
# saves a tenth of each tool's compile time (helm: 174 CPU-seconds instead of 194) and leaves the
# binary as large as before.
gobuild_env() { ensure_go; env -u GOFLAGS GOFLAGS="-buildvcs=false -gcflags=all=-dwarf=false" CGO_ENABLED=0 GOTOOLCHAIN=local "$@"; }

# The servers only the tests and `make run` start, and that have little to do there (Jaeger: the
# spans of two tests; gardener-apiserver and gardener-resource-manager: 22 CPU-seconds over all
# the lanes), are compiled without optimisation or inlining: a quarter less compile CPU (helm: 24 %),
# about 4 CPU-minutes on a fresh machine. kube-apiserver, etcd, the node's components and helm carry
# the tests' load and stay optimised. (On the command line it overrides GOFLAGS' -gcflags, whose
# values cannot hold spaces.)
unoptimized_gcflags="all=-N -l -dwarf=false"

# gomod_of MODULE@VERSION: path of that module's go.mod in the module cache.
gomod_of() {
  gobuild_env go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# dir_of MODULE@VERSION: that module's folder in the module cache (downloaded if missing).
dir_of() {
  gobuild_env go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}

# gosum_of MODULE@VERSION: that module's own go.sum. Seeding a tools module with it verifies the
# dependencies against the checksums upstream committed, where the checksum database that the
# module proxy mirrors has no entry for some of them.
gosum_of() {
  local dir
  dir=$(dir_of "$1")
  [ -f "$dir/go.sum" ] && cat "$dir/go.sum"
}

# go_tool BIN MODULE VERSION PKG [--src DIR [--gomod LINES] [--seed-sum]] [--ldflags FLAGS] [--gcflags FLAGS]:
# builds package PKG of MODULE@VERSION into the executable BIN, static and with -trimpath -ldflags
# "-s -w FLAGS" (and -gcflags FLAGS instead of GOFLAGS').
# With --src, from a tools module made afresh in DIR that requires MODULE VERSION, names PKG as its
# tool and ends with LINES (directives of the module's own go.mod that apply only in the main module);
# --seed-sum starts its go.sum from MODULE's own (see gosum_of). Without --src, `go install PKG@VERSION`
# in BIN's folder, the module's own go.mod deciding every dependency (BIN is named after PKG).
go_tool() {
  local bin=$1 module=$2 version=$3 pkg=$4; shift 4
  local src="" gomod="" seed_sum="" ldflags="-s -w" gcflags=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --src) src=$2; shift 2 ;;
      --gomod) gomod=$2; shift 2 ;;
      --seed-sum) seed_sum=1; shift ;;
      --ldflags) ldflags="$ldflags $2"; shift 2 ;;
      --gcflags) gcflags=(-gcflags "$2"); shift 2 ;;
      *) log "go_tool: unknown argument $1"; exit 2 ;;
    esac
  done
  local out=${bin%/*}
  mkdir -p "$out"
  if [ -z "$src" ]; then
    (cd "$out" && gobuild_env GOBIN="$out" go install -trimpath "${gcflags[@]}" -ldflags "$ldflags" "$pkg@$version" >&2)
    return
  fi
  rm -rf "$src"; mkdir -p "$src"
  {
    echo "module ontap-operator.local/tools/${bin##*/}"
    echo "go 1.24"
    echo "require $module $version"
    echo "tool $pkg"
    [ -z "$gomod" ] || printf '%s\n' "$gomod"
  } >"$src/go.mod"
  [ -z "$seed_sum" ] || gosum_of "$module@$version" >"$src/go.sum"
  (cd "$src" && gobuild_env go build -mod=mod -trimpath "${gcflags[@]}" -ldflags "$ldflags" -o "$bin" "$pkg" >&2)
}

# kube_module SRC PKG...: a tools module made afresh in SRC that requires k8s.io/kubernetes
# KUBE_VERSION and names each PKG as its tool, so that every PKG builds on Kubernetes' own
# dependency versions and the packages they share compile once.
kube_module() {
  local src=$1; shift
  local k8smod; k8smod=$(gomod_of "k8s.io/kubernetes@$KUBE_VERSION")
  [ -f "$k8smod" ] || { log "cannot download k8s.io/kubernetes@$KUBE_VERSION go.mod"; exit 1; }
  rm -rf "$src"; mkdir -p "$src"
  {
    echo "module ontap-operator.local/tools/${src##*/}"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    printf 'tool %s\n' "$@"
    kube_replaces "$k8smod"
  } >"$src/go.mod"
  gosum_of "k8s.io/kubernetes@$KUBE_VERSION" >"$src/go.sum"
}

# kube_build SRC OUT PKG...: builds the PKGs of SRC's tools module (see kube_module) into the
# folder OUT, each binary named after its package.
kube_build() {
  local src=$1 out=$2; shift 2
  (cd "$src" && gobuild_env go build -mod=mod -trimpath -ldflags "-s -w $(kube_ldflags)" -o "$out/" "$@" >&2)
}

# etcd comes from kube-apiserver's module graph, not its own: k8s.io/kubernetes requires the etcd
# server (its integration tests embed it), so etcd builds on the dependency versions Kubernetes
# tests it with, and the packages it shares with kube-apiserver compile once (etcd alone: 82
# CPU-seconds from a fresh cache on its own go.mod, 17 after kube-apiserver).
build_kube() {
  local out=$1 src=$cache/src/kube-$KUBE_VERSION
  log "building kube-apiserver $KUBE_VERSION and etcd into $out (takes ~5 min once)"
  local k8smod; k8smod=$(gomod_of "k8s.io/kubernetes@$KUBE_VERSION")
  [ -f "$k8smod" ] || { log "cannot download k8s.io/kubernetes@$KUBE_VERSION go.mod"; exit 1; }
  local etcd_version
  etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$k8smod")
  [ -n "$etcd_version" ] || { log "no etcd server version in $k8smod"; exit 1; }
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  local pkgs=(k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3)
  kube_module "$src" "${pkgs[@]}"
  kube_build "$src" "$out.tmp" "${pkgs[@]}"
  # `go build -o DIR/` names a binary after its package's last element that is not a major version.
  mv "$out.tmp/server" "$out.tmp/etcd"
  local built_etcd
  built_etcd=$(cd "$src" && gobuild_env go list -mod=mod -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  [ "$built_etcd" = "$etcd_version" ] || { log "etcd built at $built_etcd, k8s.io/kubernetes $KUBE_VERSION requires $etcd_version"; exit 1; }
  log "etcd $etcd_version (pinned by k8s.io/kubernetes $KUBE_VERSION)"
  echo "$etcd_version" >"$out.tmp/etcd.version"
  mv "$out.tmp" "$out"
}

# kube_replaces GOMOD: k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with local folders; outside its repository every one must be replaced by its published version.
kube_replaces() {
  local staging=${KUBE_VERSION/#v1./v0.}
  awk -v v="$staging" '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {printf "replace %s => %s %s\n", $1, $1, v}' "$1" | sort -u
}

kube_ldflags() {
  echo "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 \
    -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) \
    -X k8s.io/component-base/version.gitTreeState=clean"
}

# The node's components come from the same module graph as kube-apiserver and etcd, built in one
# `go build` so the packages they share compile once.
build_kube_node() {
  local out=$1 src=$cache/src/kube-node-$KUBE_VERSION
  log "building kubelet, kube-proxy, kube-controller-manager and kube-scheduler $KUBE_VERSION into $out (takes ~6 min once)"
  local pkgs=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  kube_module "$src" "${pkgs[@]}"
  kube_build "$src" "$out.tmp" "${pkgs[@]}"
  mv "$out.tmp" "$out"
}

# one_file_image OUT NAME:TAG ENTRYPOINT USER: a single-layer image of the files staged in
# $work/rootfs, without a daemon, as an OCI archive OUT/image.tar, its name in OUT/name.
one_file_image() {
  local out=$1 ref=$2 entrypoint=$3 user=$4 tag=${2##*:}
  umoci init --layout "$work/layout" >&2
  umoci new --image "$work/layout:$tag" >&2
  umoci unpack --image "$work/layout:$tag" "$work/bundle" >&2
  cp -a "$work/rootfs/." "$work/bundle/rootfs/"
  umoci repack --image "$work/layout:$tag" "$work/bundle" >&2
  umoci config --image "$work/layout:$tag" --config.entrypoint "$entrypoint" --config.user "$user" >&2
  tar -C "$work/layout" -cf "$out/image.tar" .
  echo "$ref" >"$out/name"
}

# The Pod sandbox image, which a node cannot pull here: Kubernetes' own pause.c from the same module,
# built as its Makefile builds it (static, -Os).
build_pause() {
  local out=$1 version=3.10.1
  log "building the pause $version image into $out"
  local kdir; kdir=$(dir_of "k8s.io/kubernetes@$KUBE_VERSION")
  [ -f "$kdir/build/pause/linux/pause.c" ] || { log "no build/pause/linux/pause.c in k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }
  grep -q "^TAG ?= $version\$" "$kdir/build/pause/Makefile" || log "note: k8s.io/kubernetes@$KUBE_VERSION builds another pause version than $version"
  work=$(mktemp -d)
  mkdir -p "$out.tmp" "$work/rootfs"
  gcc -Os -Wall -static -DVERSION="v$version-ontap-operator" -o "$work/rootfs/pause" "$kdir/build/pause/linux/pause.c" >&2
  one_file_image "$out.tmp" "registry.k8s.io/pause:$version" /pause 65535:65535
  rm -rf "$work"
  mv "$out.tmp" "$out"
}

build_toolbox() {
  local out=$1
  [ -x /bin/busybox ] || { log "/bin/busybox is missing (hack/deps.sh installs busybox-static)"; exit 1; }
  work=$(mktemp -d)
  mkdir -p "$out.tmp" "$work/rootfs/bin" "$work/rootfs/tmp"
  chmod 1777 "$work/rootfs/tmp"
  cp /bin/busybox "$work/rootfs/bin/busybox"
  # Relative links: busybox --install points them at the host's own path to busybox.
  local applet
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/rootfs/bin/$applet"
  done
  one_file_image "$out.tmp" "ontap-operator.local/toolbox:busybox" /bin/sh 65534:65534
  rm -rf "$work"
  mv "$out.tmp" "$out"
}

build_jaeger() {
  local out=$1
  log "building jaeger $JAEGER_VERSION into $out (takes a few minutes once)"
  local jmod
  jmod=$(gomod_of "github.com/jaegertracing/jaeger@$JAEGER_VERSION")
  # Replace directives only apply in the main module: carry Jaeger's own over.
  local replaces
  replaces=$(awk '/^replace \($/{b=1; next} b&&/^\)/{b=0; next} b{print "replace " $0; next} /^replace /{print}' "$jmod")
  go_tool "$out.tmp/jaeger" github.com/jaegertracing/jaeger "$JAEGER_VERSION" github.com/jaegertracing/jaeger/cmd/jaeger \
    --src "$cache/src/jaeger-$JAEGER_VERSION" --gomod "$replaces" --seed-sum --gcflags "$unoptimized_gcflags"
  mv "$out.tmp" "$out"
}

build_helm() {
  local out=$1
  log "building helm $HELM_VERSION into $out"
  go_tool "$out.tmp/helm" helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
  mv "$out.tmp" "$out"
}

# The one Rust tool: cargo install from crates.io at the pinned version, its lock file deciding
# every dependency, built in a target folder of its own that cargo removes afterwards.
build_cargo_modules() {
  local out=$1
  log "installing cargo-modules $CARGO_MODULES_VERSION into $out (cargo install: 16 CPU-minutes, once)"
  cargo install --quiet --locked --version "$CARGO_MODULES_VERSION" --root "$out.tmp" cargo-modules >&2
  mv "$out.tmp/bin" "$out"
  rm -rf "$out.tmp"
}

build_gardener() {
  local out=$1
  log "building gardener-resource-manager and gardener-apiserver $GARDENER_VERSION into $out (takes a few minutes once)"
  local gmod
  gmod=$(gomod_of "github.com/gardener/gardener@$GARDENER_VERSION")
  [ -f "$gmod" ] || { log "cannot download github.com/gardener/gardener@$GARDENER_VERSION go.mod"; exit 1; }
  if grep -Eq '^(replace|exclude)[[:space:]]*\($' "$gmod"; then
    log "gardener $GARDENER_VERSION's go.mod has replace/exclude blocks, which this builder does not carry over"
    exit 1
  fi
  # gardener uses the newest language features; Debian's golang-go is far older, and with
  # GOTOOLCHAIN=local an old toolchain fails deep inside the build.
  local need have
  need=$(awk '$1=="go"{print $2; exit}' "$gmod")
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    log "gardener $GARDENER_VERSION needs Go >= $need, this machine has $have"
    exit 1
  fi
  # gardener replaces its own API module (required at v0.0.0) with ./pkg/apis; outside its
  # repository that has to be the published nested module, tagged pkg/apis/<same version>.
  # Its exclude lines, like replace lines, only apply in the main module: carry them over.
  local directives
  directives=$(awk -v v="$GARDENER_VERSION" '
    $1=="replace" && $4 ~ /^\.\// { printf "replace %s => %s %s\n", $2, $2, v; next }
    $1=="replace" || $1=="exclude" { print }' "$gmod")
  # Both binaries in one `go build`, so the Kubernetes and Gardener packages they share compile once.
  local src=$cache/src/gardener-$GARDENER_VERSION
  local pkgs=(github.com/gardener/gardener/cmd/gardener-resource-manager
    github.com/gardener/gardener/cmd/gardener-apiserver)
  rm -rf "$src" "$out.tmp"; mkdir -p "$src" "$out.tmp"
  {
    echo "module ontap-operator.local/tools/gardener"
    echo "go 1.24"
    echo "require github.com/gardener/gardener $GARDENER_VERSION"
    printf 'tool %s\n' "${pkgs[@]}"
    printf '%s\n' "$directives"
  } >"$src/go.mod"
  gosum_of "github.com/gardener/gardener@$GARDENER_VERSION" >"$src/go.sum"
  (cd "$src" && gobuild_env go build -mod=mod -trimpath -gcflags "$unoptimized_gcflags" -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=$GARDENER_VERSION \
      -X k8s.io/component-base/version.gitTreeState=clean" -o "$out.tmp/" "${pkgs[@]}" >&2)
  mv "$out.tmp" "$out"
}

# gardener_files OUT DIR FILE...: copies the FILEs of DIR in the gardener module into OUT. Gardener's
# own CRDs, never hand-written copies.
gardener_files() {
  local out=$1 sub=$2 gdir f; shift 2
  gdir=$(dir_of "github.com/gardener/gardener@$GARDENER_VERSION")
  [ -d "$gdir/$sub" ] || { log "no $sub in github.com/gardener/gardener@$GARDENER_VERSION"; exit 1; }
  mkdir -p "$out.tmp"
  for f; do
    [ -f "$gdir/$sub/$f" ] || { log "$f is missing from gardener $GARDENER_VERSION's $sub"; exit 1; }
    cp "$gdir/$sub/$f" "$out.tmp/$f"
  done
  chmod 644 "$out.tmp"/*
  mv "$out.tmp" "$out"
}

# The files gardener ships for seeds.
build_gardener_crds() {
  gardener_files "$1" example/seed-crds 10-crd-extensions.gardener.cloud_extensions.yaml \
    10-crd-extensions.gardener.cloud_clusters.yaml \
    10-crd-resources.gardener.cloud_managedresources.yaml
}

# A folder apart from the seed's: gardener-operator's CRDs belong to the garden's runtime cluster.
build_gardener_operator_crds() {
  gardener_files "$1" example/operator 10-crd-operator.gardener.cloud_extensions.yaml
}

# One build at a time per tool: parallel test binaries and make targets may all ask at once.
locked() {
  local name=$1; shift
  mkdir -p "$cache"
  exec 9>"$cache/$name.lock"
  flock 9
  "$@"
}

# built TEST DIR FILE...: every FILE in DIR passes `test TEST` (-x for a binary, -f for a file).
built() {
  local t=$1 d=$2 f; shift 2
  for f; do test "$t" "$d/$f" || return 1; done
}

# cached NAME DIR TEST FILE...: makes sure DIR holds the FILEs (see built), else builds them: under
# NAME's lock, once no other caller has meanwhile, DIR is cleared and build_NAME DIR (dashes in NAME
# as underscores) fills it.
cached() {
  local name=$1 dir=$2 t=$3; shift 3
  built "$t" "$dir" "$@" && return 0
  locked "$name" built "$t" "$dir" "$@" && return 0
  rm -rf "$dir" "$dir.tmp"
  "build_${name//-/_}" "$dir"
}

case "${1:-kube}" in
  kube)
    if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
      for b in kube-apiserver etcd; do
        [ -x "$KUBEBUILDER_ASSETS/$b" ] || { log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no executable $b"; exit 1; }
      done
      echo "$KUBEBUILDER_ASSETS"; exit 0
    fi
    dir=$cache/bin/kube-$KUBE_VERSION
    cached kube "$dir" -x kube-apiserver etcd
    echo "$dir" ;;
  jaeger)
    dir=$cache/bin/jaeger-$JAEGER_VERSION
    cached jaeger "$dir" -x jaeger
    echo "$dir/jaeger" ;;
  helm)
    dir=$cache/bin/helm-$HELM_VERSION
    cached helm "$dir" -x helm
    echo "$dir/helm" ;;
  cargo-modules)
    dir=$cache/bin/cargo-modules-$CARGO_MODULES_VERSION
    cached cargo-modules "$dir" -x cargo-modules
    echo "$dir/cargo-modules" ;;
  gardener)
    dir=$cache/bin/gardener-$GARDENER_VERSION
    cached gardener "$dir" -x gardener-resource-manager gardener-apiserver
    echo "$dir/gardener-resource-manager" ;;
  gardener-apiserver)
    dir=$cache/bin/gardener-$GARDENER_VERSION
    cached gardener "$dir" -x gardener-resource-manager gardener-apiserver
    echo "$dir/gardener-apiserver" ;;
  kube-node)
    dir=$cache/bin/kube-node-$KUBE_VERSION
    cached kube-node "$dir" -x kubelet kube-proxy kube-controller-manager kube-scheduler
    echo "$dir" ;;
  pause)
    dir=$cache/bin/pause-$KUBE_VERSION
    cached pause "$dir" -f image.tar name
    echo "$dir/image.tar" ;;
  toolbox)
    dir=$cache/bin/toolbox
    cached toolbox "$dir" -f image.tar name
    echo "$dir/image.tar" ;;
  gardener-crds)
    dir=$cache/crds/gardener-$GARDENER_VERSION
    cached gardener-crds "$dir" -f 10-crd-extensions.gardener.cloud_extensions.yaml
    echo "$dir" ;;
  gardener-operator-crds)
    dir=$cache/crds/gardener-operator-$GARDENER_VERSION
    cached gardener-operator-crds "$dir" -f 10-crd-operator.gardener.cloud_extensions.yaml
    echo "$dir" ;;
  *) log "usage: $0 kube|kube-node|pause|toolbox|jaeger|helm|cargo-modules|gardener|gardener-apiserver|gardener-crds|gardener-operator-crds"; exit 2 ;;
esac
