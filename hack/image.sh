#!/usr/bin/env bash
# The operator's image, built without a container daemon and without pulling a base image: umoci
# lays out an OCI image from the operator, helm and the few files of distroless's
# cc-debian12:nonroot that the operator needs, taken from this machine. The Dockerfile builds the
# same image with docker; tests/operations/image.rs holds the two to each other.
#
#   hack/image.sh build [--profile release|debug] [--tag TAG] [--out FILE]
#       builds the operator (release: `cargo build --release --locked`; debug: target/debug's
#       binary without its debug info, for quick local rounds) and helm (hack/tools.sh helm),
#       writes an OCI archive (default target/image/ontap-operator-TAG.tar, for
#       `skopeo copy oci-archive:FILE …` and `ctr images import FILE`) and prints the image's
#       sizes and files on stdout.
#   hack/image.sh push --registry HOST:PORT [--tag TAG] [--archive FILE]
#       copies the archive to HOST:PORT/ontap-operator:TAG over plain HTTP.
#   hack/image.sh describe
#       prints what the image is as JSON: base, user, entrypoint, cmd, workdir, env, helm_version
#       and files ({path, mode, owner, origin}).
# TAG defaults to deploy/chart/Chart.yaml's appVersion.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/hack
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=versions.env
. "$here/versions.env"

# What the image is: `build` lays it out from these and `describe` prints them, so the test that
# compares the Dockerfile with this script compares it with what is built.
name=ontap-operator
base=gcr.io/distroless/cc-debian12:nonroot
user=65532:65532
entrypoint=(/ontap-operator)
cmd=(run)
# The base's own configuration, which the Dockerfile inherits without saying it.
workdir=/home/nonroot
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
# PATH MODE OWNER ORIGIN, directories ending in /. ORIGIN `copy`: a file the Dockerfile COPYs onto
# its base; `base`: what the base gives and this script lays itself (plus the shared libraries the
# operator links, which ldd names at build time).
layout() {
  cat <<'LAYOUT'
/ontap-operator 0755 0:0 copy
/usr/local/bin/helm 0755 0:0 copy
/etc/passwd 0644 0:0 base
/etc/group 0644 0:0 base
/etc/nsswitch.conf 0644 0:0 base
/etc/ssl/certs/ca-certificates.crt 0644 0:0 base
/tmp/ 1777 0:0 base
/root/ 0700 0:0 base
/home/ 0755 0:0 base
/home/nonroot/ 0700 65532:65532 base
LAYOUT
}

cmd_name=${1:-}; shift || true
profile=${IMAGE_PROFILE:-release} tag="" out="" registry="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
target=${CARGO_TARGET_DIR:-$root/target}
[ -n "$tag" ] || tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$root/deploy/chart/Chart.yaml")
[ -n "$tag" ] || die "no --tag and no appVersion in deploy/chart/Chart.yaml"

need_tools() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || die "$t is missing (make deps installs it)"; done
}

# json_array WORD...: the words as a JSON array (jq's --args would read a word like --x as its option).
json_array() { printf '%s\n' "$@" | jq -R . | jq -sc .; }

describe() {
  need_tools jq
  layout | jq -R 'split(" ") | {path: .[0], mode: .[1], owner: .[2], origin: .[3]}' | jq -s \
    --arg base "$base" --arg user "$user" --arg workdir "$workdir" --arg helm_version "$HELM_VERSION" \
    --argjson entrypoint "$(json_array "${entrypoint[@]}")" --argjson cmd "$(json_array "${cmd[@]}")" \
    --argjson env "$(json_array "${env[@]}")" '$ARGS.named + {files: .}'
}

# operator_binary: builds the operator for $profile and prints the file to put in the image.
operator_binary() {
  case "$profile" in
    release)
      (cd "$root" && cargo build --release --locked --bin ontap-operator >&2)
      echo "$target/release/ontap-operator"
      ;;
    debug)
      (cd "$root" && cargo build --locked --bin ontap-operator >&2)
      # Line tables alone make the debug binary several times larger than what runs.
      objcopy --strip-debug "$target/debug/ontap-operator" "$work/ontap-operator"
      echo "$work/ontap-operator"
      ;;
    *) die "--profile is release or debug, not $profile" ;;
  esac
}

# libraries BINARY: the shared objects BINARY loads, the dynamic loader included, as ldd resolves
# them on this machine: the image carries this machine's glibc, the one the binary was linked with.
libraries() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }'
}

# place SOURCE PATH MODE OWNER: SOURCE's content at PATH in the root filesystem (a directory when
# PATH ends in /, SOURCE unused).
place() {
  local src=$1 path=$2 mode=$3 owner=$4
  case "$path" in
    */) install -d -m "$mode" -o "${owner%:*}" -g "${owner#*:}" "$rootfs$path" ;;
    *) install -D -m "$mode" -o "${owner%:*}" -g "${owner#*:}" "$src" "$rootfs$path" ;;
  esac
}

# Like distroless: root, nobody and nonroot, none with a shell.
write_base_files() {
  cat >"$work/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
  cat >"$work/group" <<'GROUP'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
GROUP
  cat >"$work/nsswitch.conf" <<'NSS'
passwd:         files
group:          files
shadow:         files
gshadow:        files
hosts:          files dns
networks:       files
protocols:      files
services:       files
ethers:         files
rpc:            files
NSS
}

# source_of PATH: where the content of a layout entry comes from.
source_of() {
  case "$1" in
    /ontap-operator) echo "$operator" ;;
    /usr/local/bin/helm) echo "$helm" ;;
    /etc/ssl/certs/ca-certificates.crt) echo /etc/ssl/certs/ca-certificates.crt ;;
    /etc/*) echo "$work/${1##*/}" ;;
    */) echo "" ;;
    *) die "no source for $1" ;;
  esac
}

# list_layer LAYOUT: the image's files as MODE UID:GID SIZE PATH, read back from the archive's
# one layer rather than from what was put in, so what is printed is what ships.
list_layer() {
  local layout=$1 layer
  layer=$(layer_digest "$layout")
  gzip -dc "$layout/blobs/sha256/$layer" | tar -tv --numeric-owner -f - | awk '
    function octal(p,   m, i, c) {
      m = 0
      for (i = 2; i <= 10; i++) { c = substr(p, i, 1); m = m * 2 + (c != "-" && c != "S" && c != "T") }
      if (substr(p, 4, 1) ~ /[sS]/) m += 2048
      if (substr(p, 7, 1) ~ /[sS]/) m += 1024
      if (substr(p, 10, 1) ~ /[tT]/) m += 512
      return sprintf("%04o", m)
    }
    { path = $6; for (i = 7; i <= NF; i++) path = path " " $i
      sub(/^\.?\/?/, "/", path); owner = $2; sub(/\//, ":", owner)
      printf "%s %-11s %10d %s\n", octal($1), owner, $3, path }'
}

manifest_of() { jq -r '.manifests[0].digest | sub("sha256:"; "")' "$1/index.json"; }
layer_digest() { jq -r '.layers[0].digest | sub("sha256:"; "")' "$1/blobs/sha256/$(manifest_of "$1")"; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

build() {
  need_tools umoci jq ldd install gzip tar objcopy git
  [ -n "$out" ] || out=$target/image/$name-$tag.tar
  mkdir -p "$(dirname "$out")"; out=$(cd "$(dirname "$out")" && pwd)/${out##*/}
  work=$(mktemp -d "$target/image.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT
  umask 022

  operator=$(operator_binary)
  helm=$("$here/tools.sh" helm)
  [ -f /etc/ssl/certs/ca-certificates.crt ] || die "/etc/ssl/certs/ca-certificates.crt is missing (apt-get install ca-certificates)"
  # One time for every file and for the image's history: the commit's, so two builds of one
  # commit give the same layer; SOURCE_DATE_EPOCH overrides it.
  local epoch created revision
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
  created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
  revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)

  local oci=$work/oci
  umoci init --layout "$oci"
  umoci new --image "$oci:$tag"
  umoci unpack --image "$oci:$tag" "$work/bundle" >/dev/null
  rootfs=$work/bundle/rootfs
  write_base_files
  local path mode owner lib
  while read -r path mode owner _; do
    place "$(source_of "$path")" "$path" "$mode" "$owner"
  done < <(layout)
  while read -r lib; do
    place "$lib" "$lib" "$(stat -L -c %a "$lib")" 0:0
  done < <(libraries "$operator")
  find "$rootfs" -exec touch -h -d "@$epoch" {} +

  umoci repack --image "$oci:$tag" --history.created "$created" --history.created_by "hack/image.sh build" "$work/bundle"
  local config=(--config.user "$user" --config.workingdir "$workdir" --created "$created"
    --history.created "$created" --history.created_by "hack/image.sh build (config)"
    --config.label "org.opencontainers.image.title=$name"
    --config.label "org.opencontainers.image.version=$tag"
    --config.label "org.opencontainers.image.revision=$revision"
    --config.label "org.opencontainers.image.source=$(sed -n 's/^repository = "\(.*\)"/\1/p' "$root/Cargo.toml")")
  local a
  for a in "${entrypoint[@]}"; do config+=(--config.entrypoint "$a"); done
  for a in "${cmd[@]}"; do config+=(--config.cmd "$a"); done
  for a in "${env[@]}"; do config+=(--config.env "$a"); done
  umoci config --image "$oci:$tag" "${config[@]}"
  umoci gc --layout "$oci"
  # `ctr images import` names the image by this annotation (the OCI ref name is the tag alone), and
  # in the form a Pod's `image: ontap-operator:TAG` normalizes to, so a kubelet finds it imported.
  jq -c --arg ref "docker.io/library/$name:$tag" '.manifests[0].annotations["io.containerd.image.name"] = $ref' \
    "$oci/index.json" >"$work/index.json" && mv "$work/index.json" "$oci/index.json"
  find "$oci" -exec touch -h -d "@$epoch" {} +
  tar --sort=name --numeric-owner --owner=0 --group=0 -C "$oci" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"

  local manifest layer compressed uncompressed
  manifest=$(manifest_of "$oci")
  layer=$(layer_digest "$oci")
  compressed=$(stat -c %s "$oci/blobs/sha256/$layer")
  uncompressed=$(gzip -dc "$oci/blobs/sha256/$layer" | wc -c)
  echo "$name:$tag ($profile) -> $out"
  echo "  manifest sha256:$manifest, created $created, user $user, entrypoint ${entrypoint[*]}, cmd ${cmd[*]}"
  echo "  layer $(mib "$compressed") compressed, $(mib "$uncompressed") uncompressed; archive $(mib "$(stat -c %s "$out")")"
  echo "  MODE UID:GID             SIZE PATH"
  list_layer "$oci" | sed 's/^/  /'
}

push() {
  need_tools skopeo
  [ -n "$registry" ] || die "push needs --registry HOST:PORT"
  [ -n "$archive" ] || archive=$target/image/$name-$tag.tar
  [ -f "$archive" ] || die "$archive does not exist (hack/image.sh build)"
  # A loopback registry without TLS; the policy would only say "accept anything" for a local file.
  skopeo --insecure-policy copy -q --dest-tls-verify=false "oci-archive:$archive" "docker://$registry/$name:$tag"
  log "pushed $registry/$name:$tag"
}

case "$cmd_name" in
  build) build ;;
  push) push ;;
  describe) describe ;;
  *) die "usage: $0 build [--profile release|debug] [--tag TAG] [--out FILE] | push --registry HOST:PORT [--tag TAG] [--archive FILE] | describe" ;;
esac
