#!/usr/bin/env bash
# `make up` / `make down`: the local environment in .local/, in the background — a control plane,
# mock ONTAP and Jaeger — described by .local/env (source it). `make image` adds a registry
# (`hack/local-env.sh registry`), which `make down` stops too. NODE=1 adds that registry and a real
# node (hack/node.sh), the control plane and mock ONTAP then listening on the node's address so
# that Pods reach them; `deploy` installs the operator there from its image and chart.
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
  local dir=$local_dir/mock-ontap listen=$1
  mkdir -p "$dir"
  if any_alive "$dir/pid"; then return 0; fi
  rm -f "$dir/address" "$dir/pid"
  # A fresh admin password per environment: nothing well known ends up in a Secret.
  [ -f "$dir/admin-password" ] || { openssl rand -hex 12 | tr -d '\n' >"$dir/admin-password"; chmod 600 "$dir/admin-password"; }
  MOCK_ONTAP_ADMIN_PASSWORD=$(cat "$dir/admin-password") "$bin/mock-ontap" \
    --listen "$listen:0" --ready-file "$dir/address" --tls-cert-out "$dir/ca.crt" \
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

# with_node: NODE=1, or DEPLOY=1, which needs the node.
with_node() { [ "${NODE:-}" = 1 ] || [ "${DEPLOY:-}" = 1 ]; }

up() {
  mkdir -p "$local_dir"
  [ -x "$bin/mock-ontap" ] || die "build first: cargo build --workspace --bins"
  local address=127.0.0.1 cp=$local_dir/control-plane
  if with_node; then
    address=$("$here/node.sh" address --dir "$local_dir/node")
    if any_alive "$cp/pids" && [ "$(cat "$cp/address" 2>/dev/null)" != "$address" ]; then
      die "the control plane runs on loopback, where Pods cannot reach it: make down, then NODE=1 make up"
    fi
    if any_alive "$local_dir/mock-ontap/pid" && ! grep -q "^$address:" "$local_dir/mock-ontap/address"; then
      die "mock ONTAP runs on loopback, where Pods cannot reach it: make down, then NODE=1 make up"
    fi
    ensure_up "control plane" control-plane.sh "$cp" pids --address "$address"
  else
    ensure_up "control plane" control-plane.sh "$cp" pids
  fi
  ensure_up jaeger jaeger.sh "$local_dir/jaeger" pid
  start_mock_ontap "$address"
  if with_node; then
    local reg; reg=$(registry)
    ensure_up node node.sh "$local_dir/node" pids --control-plane "$cp" --registry "$reg"
  fi
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
    if with_node; then
      # The same address: mock ONTAP listens on the node's, which the host reaches too.
      echo "export ONTAP_ENDPOINT_IN_CLUSTER=https://$(cat "$local_dir/mock-ontap/address")"
      cat "$local_dir/node/env"
    fi
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
  # In-cluster, the operator reaches mock ONTAP at the node's address.
  if [ "${DEPLOY:-}" = 1 ]; then ONTAP_ENDPOINT=$ONTAP_ENDPOINT_IN_CLUSTER; fi
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

# DEPLOY=1 make run: the operator in the node's Pods, from the image `make image` pushed and the
# chart pushed as an OCI artifact, installed with helm as the README tells users to.
deploy() {
  # shellcheck disable=SC1091
  . "$local_dir/env"
  [ -n "${REGISTRY:-}" ] && [ -n "${NODE_NAME:-}" ] || die "no node: DEPLOY=1 make up"
  local tag chart version
  tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/deploy/chart/Chart.yaml")
  chart=$("$here/chart.sh" package --out "$local_dir/chart")
  "$here/chart.sh" push --registry "$REGISTRY" --archive "$chart" >&2
  version=$(basename "$chart" .tgz); version=${version#ontap-operator-}
  "$("$here/tools.sh" helm)" upgrade --install ontap-operator "oci://$REGISTRY/charts/ontap-operator" --version "$version" \
    --plain-http --namespace ontap-operator-system --create-namespace --set createNamespace=false \
    --set image.repository="$REGISTRY/ontap-operator" --set image.tag="$tag" --set image.pullPolicy=Always \
    --set kyma.enabled=true --set-json "extraArgs=[\"--kyma-time-scale=${KYMA_TIME_SCALE:-4}\"]" \
    --wait --timeout 3m
}

# The registry on loopback `make image` pushes to and a node pulls from: started unless it runs, its address printed and put in
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
  "$here/node.sh" down --dir "$local_dir/node" 2>/dev/null || true
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
  registry) registry ;;
  samples) samples ;;
  deploy) deploy ;;
  down) down ;;
  *) die "usage: $0 up|registry|samples|deploy|down" ;;
esac
