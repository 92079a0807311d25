#!/usr/bin/env bash
# `make test`'s lint: formatting, then the test build with clippy's lints (warnings are errors) run
# by the compiler that builds it, as the Makefile's LINT_WHILE_BUILDING sets the environment
# (clippy-driver as the workspace's compiler wrapper). Every target `cargo clippy --all-targets`
# lints is built, with the features it resolves (the dev-dependencies' included): the tests
# (libraries, binaries and examples in test mode, the integration tests), then the binaries of the
# crates whose tests did not need them. `cargo build --bins` alone would resolve the features
# without the dev-dependencies and build tokio and everything above it a second time (2 CPU-minutes
# on a fresh machine); the binaries as they ship are the image's release build.
#
#   hack/build-linted.sh     (run by `make test`; `make lint` is the same check without building)
#
# Fails on any warning the build prints, so that a clippy that stopped reading CLIPPY_ARGS could not
# let a lint through unnoticed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
cd "$root"
[ -n "${CLIPPY_ARGS:-}" ] ||
  die "CLIPPY_ARGS is unset: run \`make test\`, or \`make lint\` to lint without building"
[ -x "${RUSTC_WORKSPACE_WRAPPER:-}" ] ||
  die "no clippy-driver beside rustc (RUSTC_WORKSPACE_WRAPPER='${RUSTC_WORKSPACE_WRAPPER:-}'): rustup component add clippy"
cargo fmt --all -- --check
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
{ cargo test $(test_build_flags) --no-run --locked && cargo build $(test_build_flags) --all-targets --locked; } 2>&1 | tee "$out" || rc=$?
[ "$rc" = 0 ] || exit "$rc"
if grep -q '^warning' "$out"; then
  die "the build printed warnings (above); make test treats them as errors"
fi
