#!/usr/bin/env bash
# Fails when a file that `make generate` writes is stale, naming each one and the command that
# fixes it: generates into a copy of crds/ and deploy/ (`make generate GENERATE_ROOT=<copy>`, so
# the steps and their order are the Makefile's and nothing in the checkout changes) and compares
# the copy with the checkout, file by file. A file the generators would write and the checkout
# lacks, or one they would remove (a CRD, switch or template that went), is stale too.
#
#   hack/check-generated.sh      (`make check-generated`; `make test` runs it early)
#
# The chart archive inside deploy/gardener/controller-registration.yaml is compared by the files
# it holds, so that another build of tar or gzip cannot fail the check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -R "$root/crds" "$root/deploy" "$copy/"
if ! make -C "$root" --no-print-directory generate GENERATE_ROOT="$copy" >"$copy/generate.log" 2>&1; then
  cat "$copy/generate.log" >&2
  die "make generate failed, so whether the generated files are current is unknown"
fi

raw_chart='^  rawChart: '
# unpack_raw_chart FILE DIR: the rawChart archive of the ControllerDeployment in FILE, unpacked.
unpack_raw_chart() {
  mkdir -p "$2"
  sed -n "s/$raw_chart//p" "$1" | base64 -d | tar -xzf - -C "$2"
}

# same FILE: the checkout's FILE is what the generators wrote into the copy.
same() {
  local ours=$root/$1 fresh=$copy/$1
  case "$1" in
    deploy/gardener/controller-registration.yaml)
      cmp -s <(sed "s/$raw_chart.*/  rawChart: <archive>/" "$ours") \
        <(sed "s/$raw_chart.*/  rawChart: <archive>/" "$fresh") || return 1
      local unpacked=$copy/unpacked
      rm -rf "$unpacked"
      unpack_raw_chart "$ours" "$unpacked/ours" 2>/dev/null || return 1
      unpack_raw_chart "$fresh" "$unpacked/fresh" || return 1
      diff -rq "$unpacked/ours" "$unpacked/fresh" >/dev/null
      ;;
    *) cmp -s "$ours" "$fresh" ;;
  esac
}

stale=0
while IFS= read -r file; do
  if [ ! -e "$root/$file" ]; then
    log "stale: $file is missing (make generate writes it)"
  elif [ ! -e "$copy/$file" ]; then
    log "stale: $file is left over (make generate removes it)"
  elif ! same "$file"; then
    log "stale: $file differs from what make generate writes:"
    case "$file" in
      deploy/gardener/controller-registration.yaml) log "  (the chart it carries, or its values)" ;;
      *) diff -u "$root/$file" "$copy/$file" | sed -n '3,22p' >&2 || true ;;
    esac
  else
    continue
  fi
  stale=$((stale + 1))
done < <({
  (cd "$root" && find crds deploy -type f)
  (cd "$copy" && find crds deploy -type f)
} | LC_ALL=C sort -u)

[ "$stale" = 0 ] || die "$stale generated file(s) stale: run \`make generate\` and commit what it changes"
log "every generated file is current"
