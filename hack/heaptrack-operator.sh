#!/usr/bin/env bash
# The operator under heaptrack, for the benches: they start the binary ONTAP_OPERATOR_BIN names.
#
#   cargo build --release --no-default-features --bin ontap-operator
#   cp target/release/ontap-operator /tmp/ontap-operator-glibc   # the benches rebuild target/
#   HEAPTRACK_BIN=/tmp/ontap-operator-glibc HEAPTRACK_DIR=/tmp/ht \
#     ONTAP_OPERATOR_BIN=$PWD/hack/heaptrack-operator.sh cargo test --release --test bench_svm ...
#   heaptrack_print -f /tmp/ht/operator.<pid>.zst
#
# heaptrack's own launcher runs the program as its child, so a bench's kill would reach only
# the launcher and leave the operator running: this script sets heaptrack's preload up itself
# and execs the operator in its place. jemalloc (the default build) bypasses malloc, which is
# why the profiled build must be the one without default features (glibc's malloc).
set -euo pipefail
binary=${HEAPTRACK_BIN:?the --no-default-features build of ontap-operator (glibc malloc)}
dir=${HEAPTRACK_DIR:-/tmp}
lib=${HEAPTRACK_LIB:-/usr/lib/heaptrack}
pipe="$dir/heaptrack-fifo.$$"
mkfifo "$pipe"
# The interpreter ends when the operator closes the pipe, by exiting or being killed.
("$lib/libexec/heaptrack_interpret" <"$pipe" | zstd -q -o "$dir/operator.$$.zst"; rm -f "$pipe") &
LD_PRELOAD="$lib/libheaptrack_preload.so" DUMP_HEAPTRACK_OUTPUT="$pipe" exec "$binary" "$@"
