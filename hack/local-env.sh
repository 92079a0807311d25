#!/usr/bin/env bash
# `make up` / `make down`: the local environment in .local/, in the background — a control plane,
# mock ONTAP and Jaeger — described by .local/env (source it). `make image` adds a registry
# (`hack/local-env.sh registry`), which `make down` stops too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/hack
# shellcheck source=lib.sh
. "$here/lib.sh"
local_dir=$root/.local
# The binaries `cargo build` made (it honours CARGO_TARGET_DIR).
bin=${CARGO_TARGET_DIR:-$root/target}/debug

# ensure_up WHAT SCRIPT DIR PIDFILE [ARG...]: leaves WHAT alone while a process listed in DIR/PIDFILE
# is alive; otherwise clears what an earlier run left in DIR and starts it: SCRIPT up --dir DIR ARG...
ensure_up() {
  local what=$1 script=$here/$2 dir=$3 pidfile=$4; shift 4
  if any_alive "$dir/$pidfile"; then
    log "$what already up"
  else
    "$script" down --dir "$dir" 2>/dev/null || true
    "$script" up --dir "$dir" "$@"
  fi
}

start_mock_ontap() {
  local dir=$local_dir/mock-ontap
  mkdir -p "$dir"
  if any_alive "$dir/pid"; then return 0; fi
  rm -f "$dir/address" "$dir/pid"
  # A fresh admin password per environment: nothing well known ends up in a Secret.
  [ -f "$dir/admin-password" ] || { openssl rand -hex 12 | tr -d '\n' >"$dir/admin-password"; chmod 600 "$dir/admin-password"; }
  MOCK_ONTAP_ADMIN_PASSWORD=$(cat "$dir/admin-password") "$bin/mock-ontap" \
    --listen 127.0.0.1:0 --ready-file "$dir/address" --tls-cert-out "$dir/ca.crt" \
    </dev/null >"$dir/mock-ontap.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    [ -s "$dir/address" ] && return 0
    alive "$(cat "$dir/pid")" || break
    sleep 0.1
  done
  die "mock-ontap did not start; see $dir/mock-ontap.log"
}

# GARDENER=1: the seed gets Gardener's CRDs, a second control plane plays the shoot, and the
# real gardener-resource-manager delivers the sample shoot's ManagedResources into it.
gardener_up() {
  local shoot=$local_dir/shoot grm=$local_dir/grm
  kubectl --kubeconfig "$local_dir/kubeconfig" apply -f "$("$here/tools.sh" gardener-crds)" >/dev/null
  ensure_up "shoot control plane" control-plane.sh "$shoot" pids
  kubectl --kubeconfig "$shoot/kubeconfig" apply -f "$root/tests/fixtures/trident" >/dev/null
  ensure_up gardener-resource-manager gardener-resource-manager.sh "$grm" pid \
    --seed-kubeconfig "$local_dir/kubeconfig" --shoot-kubeconfig "$shoot/kubeconfig" --namespace shoot--demo--web
  echo "export GARDENER_SHOOT_KUBECONFIG=$shoot/kubeconfig" >>"$local_dir/env"
}

up() {
  mkdir -p "$local_dir"
  [ -x "$bin/mock-ontap" ] || die "build first: cargo build --workspace --bins"
  ensure_up "control plane" control-plane.sh "$local_dir/control-plane" pids
  ensure_up jaeger jaeger.sh "$local_dir/jaeger" pid
  start_mock_ontap
  cp "$local_dir/control-plane/kubeconfig" "$local_dir/kubeconfig"
  {
    echo "# Written by make up; source it: . .local/env"
    echo "export KUBECONFIG=$local_dir/kubeconfig"
    grep -v '^export KUBECONFIG=' "$local_dir/control-plane/env"
    cat "$local_dir/jaeger/env"
    echo "export ONTAP_ENDPOINT=https://$(cat "$local_dir/mock-ontap/address")"
    echo "export ONTAP_USERNAME=admin"
    echo "export ONTAP_PASSWORD=$(cat "$local_dir/mock-ontap/admin-password")"
    echo "export ONTAP_CA_FILE=$local_dir/mock-ontap/ca.crt"
    if any_alive "$local_dir/registry/pid"; then echo "export REGISTRY=$(cat "$local_dir/registry/address")"; fi
  } >"$local_dir/env"
  chmod 600 "$local_dir/env"
  "$bin/ontap-operator" crds --out-dir "$local_dir/crds"
  if command -v kubectl >/dev/null 2>&1; then
    kubectl --kubeconfig "$local_dir/kubeconfig" apply -f "$local_dir/crds" >/dev/null
  else
    log "kubectl not found: apply $local_dir/crds yourself"
  fi
  if [ "${GARDENER:-}" = 1 ]; then gardener_up; fi
  log "up: . .local/env && kubectl get --raw /readyz"
}

# The samples of deploy/samples against the local mock ONTAP: its admin Secret and CA, then the
# sample objects with ${ONTAP_ENDPOINT} filled in.
samples() {
  command -v kubectl >/dev/null 2>&1 || die "kubectl is needed to apply the samples"
  # shellcheck disable=SC1091
  . "$local_dir/env"
  local k=(kubectl --kubeconfig "$local_dir/kubeconfig")
  "${k[@]}" create namespace ontap-operator-system --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  "${k[@]}" -n ontap-operator-system create secret generic lab-admin \
    --from-literal=username="$ONTAP_USERNAME" --from-literal=password="$ONTAP_PASSWORD" \
    --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  "${k[@]}" -n ontap-operator-system create secret generic lab-ca --from-file=ca.crt="$ONTAP_CA_FILE" \
    --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  for f in "$root"/deploy/samples/*.yaml; do
    sed "s|\${ONTAP_ENDPOINT}|$ONTAP_ENDPOINT|g" "$f"
    echo "---"
  done | "${k[@]}" apply -f -
  if [ "${GARDENER:-}" = 1 ]; then "${k[@]}" apply -f "$root/deploy/samples/gardener"; fi
}

# The registry `make image` pushes to: started unless it runs, its address printed and put in
# .local/env as REGISTRY when `make up` wrote one.
registry() {
  local dir=$local_dir/registry address
  ensure_up registry registry.sh "$dir" pid >&2
  address=$(cat "$dir/address")
  if [ -f "$local_dir/env" ]; then
    { grep -v '^export REGISTRY=' "$local_dir/env"; echo "export REGISTRY=$address"; } >"$local_dir/env.new"
    chmod 600 "$local_dir/env.new"; mv "$local_dir/env.new" "$local_dir/env"
  fi
  echo "$address"
}

down() {
  "$here/registry.sh" down --dir "$local_dir/registry" 2>/dev/null || true
  "$here/gardener-resource-manager.sh" down --dir "$local_dir/grm" 2>/dev/null || true
  "$here/control-plane.sh" down --dir "$local_dir/shoot" 2>/dev/null || true
  "$here/control-plane.sh" down --dir "$local_dir/control-plane" || true
  "$here/jaeger.sh" down --dir "$local_dir/jaeger" || true
  stop_pids "$local_dir/mock-ontap/pid"
  rm -f "$local_dir/env" "$local_dir/kubeconfig" "$local_dir/mock-ontap/address"
}

case "${1:-}" in
  up) up ;;
  samples) samples ;;
  registry) registry ;;
  down) down ;;
  *) die "usage: $0 up|samples|registry|down" ;;
esac
