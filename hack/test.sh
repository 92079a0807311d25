#!/usr/bin/env bash
# Every Rust test of the workspace, the test binaries in lanes that run side by side.
#
#   hack/test.sh [-- ARGS...]     ARGS go to every test binary (e.g. a name filter)
#
# `cargo test` runs one test binary after another, and most of a binary's time is waiting: on a
# node's Pods, on simulated ONTAP jobs, on API servers. So the binaries are built once
# (`cargo test --no-run`) and run here directly, as cargo runs them (from their package's folder),
# in LANES lanes (default 3); a lane takes the longest binary not yet started that may start. The
# order comes from LANE_ORDER: the slowest first, as measured (docs/operating.md, where the time
# goes). A binary may wait for something built beside the tests (AWAIT: BINARY=FILE ..., FILE
# holding the exit code of that build once it ends; `make test` builds the image while the lanes
# run): until FILE exists the lanes take other binaries, and if its code is not 0 the binary fails
# unrun. Tests that are bound by a CPU rather than by waiting (SOLO: BINARY=FILTER ..., libtest name
# filters) run last, alone, once the lanes have ended, and their binary runs in the lanes without
# them: 1,000 Kymas load the node's API server's CPU, and beside the lanes they miss the test's
# deadline. Each binary's output is kept in target/test-logs/<binary>.log and printed when it ends;
# a summary of every binary's time and result closes. Fails when any binary fails; runs them all
# regardless.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
[ "${1:-}" != "--" ] || shift
lanes=${LANES:-3}
# The slowest binaries first, so that no lane starts a long one last.
LANE_ORDER=${LANE_ORDER:-"deployed svm gardener svm_features svm_crash operations attacks kyma"}
SOLO=${SOLO:-"deployed=kymas::"}
AWAIT=${AWAIT:-}
declare -A awaits=()
for entry in $AWAIT; do awaits[${entry%%=*}]=${entry#*=}; done

logs=${CARGO_TARGET_DIR:-$root/target}/test-logs
rm -rf "$logs"; mkdir -p "$logs"

# name <TAB> executable <TAB> package folder, for every test target cargo built.
list=$logs/binaries.tsv
cargo test $(test_build_flags) --no-run --message-format=json-render-diagnostics \
  | jq -r --arg root "$root" 'select(.reason == "compiler-artifact" and .profile.test == true and .executable != null)
           | (.manifest_path | sub("/Cargo.toml$"; "")) as $dir
           | [((if $dir == $root then "" else ($dir | sub("^.*/"; "")) + "/" end)
               + (if .target.kind[0] == "lib" then "lib" else .target.name end)),
              .executable, $dir] | @tsv' \
  | sort -u >"$list"
[ -s "$list" ] || die "cargo built no test binaries"

# The measured order first, then the rest by name.
ordered=$logs/order.tsv
: >"$ordered"
for name in $LANE_ORDER; do awk -F'\t' -v n="$name" '$1 == n' "$list" >>"$ordered"; done
awk -F'\t' 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' "$ordered" "$list" >>"$ordered"

# The solo tests: NAME=FILTER becomes a line of their own, and their binary's line in the lanes
# gets the filter as a fourth field, to be skipped there.
solo=$logs/solo.tsv
: >"$solo"
for entry in $SOLO; do
  name=${entry%%=*} filter=${entry#*=}
  awk -F'\t' -v n="$name" -v f="$filter" 'BEGIN { OFS = "\t" } $1 == n { print $1 ":" f, $2, $3, f }' "$list" >>"$solo"
  awk -F'\t' -v n="$name" -v f="$filter" 'BEGIN { OFS = "\t" } { if ($1 == n) $4 = f; print }' "$ordered" >"$ordered.new"
  mv "$ordered.new" "$ordered"
done

run_one() { # NAME EXECUTABLE FOLDER [ARGS...]
  local name=$1 exe=$2 dir=$3 start rc=0 log awaited
  shift 3
  log=$logs/${name//[\/:]/-}.log
  start=$(date +%s)
  awaited=${awaits[${name%%:*}]:-}
  if [ -n "$awaited" ] && [ "$(cat "$awaited")" != 0 ]; then
    echo "not run: the build it waits for failed (exit code $(cat "$awaited") in $awaited)" >"$log"
    rc=1
  else
    (cd "$dir" && "$exe" "$@") >"$log" 2>&1 || rc=$?
  fi
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - start))" >>"$logs/results.tsv"
  {
    echo "=== $name ($(($(date +%s) - start)) s, exit $rc)"
    cat "$log"
  } | flock "$logs/print.lock" cat
}

# may_start NAME: nothing NAME awaits is still being built.
may_start() {
  local awaited=${awaits[${1%%:*}]:-}
  [ -z "$awaited" ] || [ -s "$awaited" ]
}

# Each lane takes the first binary of the shared queue that may start (one line per binary, taken
# under a lock); while only binaries that wait remain, it looks again every 2 s.
queue=$logs/queue.tsv
cp "$ordered" "$queue"
take() {
  (
    flock 9
    local line name n=0
    while IFS= read -r line; do
      n=$((n + 1))
      name=${line%%$'\t'*}
      if may_start "$name"; then
        printf '%s\n' "$line"
        sed -i "${n}d" "$queue"
        exit 0
      fi
    done <"$queue"
    [ ! -s "$queue" ] || echo wait
  ) 9>"$logs/queue.lock"
}
lane() {
  local line name exe dir skip
  while line=$(take) && [ -n "$line" ]; do
    if [ "$line" = wait ]; then
      sleep 2
      continue
    fi
    IFS=$'\t' read -r name exe dir skip <<<"$line"
    if [ -n "$skip" ]; then
      run_one "$name" "$exe" "$dir" "$@" --skip "$skip"
    else
      run_one "$name" "$exe" "$dir" "$@"
    fi
  done
}

: >"$logs/results.tsv"
start=$(date +%s)
pids=()
for _ in $(seq 1 "$lanes"); do
  lane "$@" &
  pids+=($!)
done
wait "${pids[@]}"
while IFS=$'\t' read -r -u 3 name exe dir filter; do
  until may_start "$name"; do sleep 2; done
  run_one "$name" "$exe" "$dir" "$@" "$filter"
done 3<"$solo"

echo "=== test binaries ($(($(date +%s) - start)) s in $lanes lanes)"
sort -t$'\t' -k3,3nr "$logs/results.tsv" | awk -F'\t' '{ printf "%-28s %5d s  %s\n", $1, $3, ($2 == 0 ? "ok" : "FAILED (exit " $2 ")") }'
! awk -F'\t' '$2 != 0 { bad = 1 } END { exit !bad }' "$logs/results.tsv"
