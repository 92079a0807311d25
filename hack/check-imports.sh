#!/usr/bin/env bash
# Fails on an import circle between the modules of any workspace crate (every library and binary
# target of every member): cargo-modules (hack/tools.sh cargo-modules, pinned in versions.env)
# reads each target's module graph as rust-analyzer resolves it, with what every function, type
# and trait uses folded into the module that holds it, and hack/import-circles.py looks for
# modules below one parent that use each other, at any depth, naming the uses on each side.
#
#   hack/check-imports.sh [--upward]   (`make check-imports`)
#
# --upward also lists every upward import (a module using what one of its ancestors defines),
# which the check does not fail on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
upward=()
[ "${1:-}" != "--upward" ] || upward=(--upward)

cargo_modules=$("$here/tools.sh" cargo-modules)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# package <TAB> lib|bin <TAB> target name <TAB> root source file, for every workspace member.
(cd "$root" && cargo metadata --no-deps --format-version 1) |
  jq -r '.packages[] | .name as $p | .targets[]
         | select(.kind[0] == "lib" or .kind[0] == "bin")
         | [$p, .kind[0], .name, .src_path] | @tsv' >"$work/targets.tsv"

failed=0
while IFS=$'\t' read -r package kind target source; do
  # A binary of one file has no modules to go round in circles (each read takes ~12 s).
  if [ "$kind" = bin ] && ! grep -Eq '^[[:space:]]*(pub(\([a-z]+\))? )?mod ' "$source"; then
    continue
  fi
  selector=(--lib)
  [ "$kind" = lib ] || selector=(--bin "$target")
  # Functions, types and traits folded into their modules, other crates and std left out: every
  # edge left joins two modules of this crate.
  if ! (cd "$root" && "$cargo_modules" modules dependencies --package "$package" "${selector[@]}" \
    --no-externs --no-sysroot --no-fns --no-types --no-traits --layout dot) \
    >"$work/graph.dot" 2>"$work/error.log"; then
    cat "$work/error.log" >&2
    die "cargo-modules could not read $package ($kind $target)"
  fi
  if python3 "$here/import-circles.py" "${upward[@]}" <"$work/graph.dot" >"$work/report.txt"; then
    log "$package ($kind $target): no import circle"
  else
    failed=1
    log "$package ($kind $target):"
  fi
  cat "$work/report.txt"
done <"$work/targets.tsv"

[ "$failed" = 0 ] || die "import circles found (above): break each by moving what both sides need below them"
