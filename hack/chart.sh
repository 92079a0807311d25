#!/usr/bin/env bash
# The chart as users get it: deploy/chart packaged with the CRDs of crds/ in helm's crds/ folder
# (helm installs them before the templates and, as helm does, never deletes them), and pushed as an
# OCI artifact.
#
#   hack/chart.sh package [--out DIR] [--version VERSION]  -> prints the path of the .tgz
#   hack/chart.sh push --registry HOST:PORT --archive FILE -> oci://HOST:PORT/charts/<name>:<version>
#
# VERSION defaults to the chart's own; a different one also becomes the chart's appVersion, so
# the image tag follows it (how a release pipeline stamps a build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/hack/lib.sh"

cmd=${1:-}; shift || true
out=$root/target/chart version="" registry="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
helm=$("$root/hack/tools.sh" helm)

package() {
  local work; work=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  cp -R "$root/deploy/chart" "$work/ontap-operator"
  mkdir -p "$work/ontap-operator/crds"
  cp "$root"/crds/*.yaml "$work/ontap-operator/crds/"
  local args=()
  [ -z "$version" ] || args=(--version "$version" --app-version "$version")
  mkdir -p "$out"
  "$helm" package "$work/ontap-operator" --destination "$out" "${args[@]}" | sed -n 's/^Successfully packaged chart and saved it to: //p'
}

push() {
  [ -n "$registry" ] && [ -f "$archive" ] || die "push needs --registry and an existing --archive"
  # The local registry speaks plain HTTP on loopback.
  "$helm" push "$archive" "oci://$registry/charts" --plain-http
}

case "$cmd" in
  package) package ;;
  push) push ;;
  *) die "usage: $0 package [--out DIR] [--version VERSION] | push --registry HOST:PORT --archive FILE" ;;
esac
