#!/usr/bin/env bash
# A local garden: the project's kube-apiserver and etcd, with the real gardener-apiserver
# registered behind it as Gardener's own envtest registers it (test/envtest in the gardener
# module): an ExternalName Service and one APIService per Gardener group version.
#
#   hack/garden.sh up   --dir DIR [--owner-pid PID]
#   hack/garden.sh down --dir DIR
#
# `up` starts a control plane in DIR/kube (hack/control-plane.sh up --aggregator), then
# gardener-apiserver on a free loopback port with the same etcd, waits until Gardener's APIs are
# discoverable and a Shoot list answers, and writes DIR/kubeconfig (the garden's admin) and
# DIR/env. Every admission plugin gardener-apiserver enables by default stays on. With
# --owner-pid a watchdog stops everything once that process is gone. `down` stops it all.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cmd=${1:-}; shift || true
dir="" owner=""
service_args "$@"

# The group versions gardener-apiserver serves (pkg/apiserver.AllGardenerAPIGroupVersions).
GROUP_VERSIONS="core.gardener.cloud/v1 core.gardener.cloud/v1beta1 seedmanagement.gardener.cloud/v1alpha1
operations.gardener.cloud/v1alpha1 security.gardener.cloud/v1alpha1"


# `kubectl` is not among what hack/tools.sh builds; curl with the admin's certificate is.
api() { # METHOD PATH [BODY]
  local server; server=$(sed -n 's/^export KUBE_APISERVER_URL=//p' "$dir/kube/env")
  curl -sS --fail-with-body --max-time 10 --cacert "$dir/kube/pki/ca.crt" --cert "$dir/kube/pki/admin.crt" \
    --key "$dir/kube/pki/admin.key" -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$server$2"
}

register() {
  local port=$1 ca gv group version
  ca=$(base64 -w0 <"$dir/pki/ca.crt")
  api POST /api/v1/namespaces/kube-system/services \
    '{"apiVersion":"v1","kind":"Service","metadata":{"name":"gardener-apiserver","namespace":"kube-system"},"spec":{"type":"ExternalName","externalName":"localhost"}}' >/dev/null
  for gv in $GROUP_VERSIONS; do
    group=${gv%/*}; version=${gv#*/}
    api POST /apis/apiregistration.k8s.io/v1/apiservices "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",
      \"metadata\":{\"name\":\"$version.$group\"},\"spec\":{\"group\":\"$group\",\"version\":\"$version\",
      \"groupPriorityMinimum\":100,\"versionPriority\":100,\"caBundle\":\"$ca\",
      \"service\":{\"namespace\":\"kube-system\",\"name\":\"gardener-apiserver\",\"port\":$port}}}" >/dev/null
  done
}

# Available APIServices are not yet enough: a list through the aggregator is what a test does.
garden_ready() {
  local gv
  for gv in $GROUP_VERSIONS; do
    api GET "/apis/$gv" >/dev/null 2>&1 || return 1
  done
  api GET "/apis/core.gardener.cloud/v1beta1/shoots?limit=1" >/dev/null 2>&1
}

up() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pids" ] || die "$dir already runs a garden (hack/garden.sh down --dir $dir)"
  local gapi; gapi=$("$here/tools.sh" gardener-apiserver)
  "$here/control-plane.sh" up --dir "$dir/kube" --aggregator
  local etcd; etcd=$(sed -n 's/^export KUBE_ETCD_URL=//p' "$dir/kube/env")
  mkdir -p "$dir/pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=gardener-apiserver-ca -keyout "$dir/pki/ca.key" -out "$dir/pki/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=gardener-apiserver \
    -keyout "$dir/pki/tls.key" -out "$dir/pki/tls.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:gardener-apiserver.kube-system.svc\nextendedKeyUsage=serverAuth\n' >"$dir/pki/tls.ext"
  openssl x509 -req -in "$dir/pki/tls.csr" -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$dir/pki/tls.ext" -out "$dir/pki/tls.crt" 2>/dev/null
  cp "$dir/kube/kubeconfig" "$dir/kubeconfig"
  : >"$dir/pids"

  local attempt port pid ready=0
  for attempt in 1 2 3; do
    port=$(free_port)
    "$gapi" --bind-address 127.0.0.1 --secure-port "$port" --etcd-servers "$etcd" \
      --tls-cert-file "$dir/pki/tls.crt" --tls-private-key-file "$dir/pki/tls.key" \
      --cluster-identity local-garden --authorization-always-allow-paths /healthz \
      --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
      --kubeconfig "$dir/kubeconfig" </dev/null >"$dir/gardener-apiserver.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pids"
    if await_ready "$pid" curl -sf --max-time 2 --cacert "$dir/pki/ca.crt" "https://127.0.0.1:$port/healthz" -o /dev/null; then
      ready=1; break
    fi
    attempt_failed "$attempt" "$dir/gardener-apiserver.log" "$dir/pids"
  done
  [ $ready = 1 ] || { "$here/control-plane.sh" down --dir "$dir/kube"; die "gardener-apiserver did not become healthy; logs in $dir"; }
  register "$port"
  await_ready "$pid" garden_ready || { down; die "Gardener's APIs did not become available; logs in $dir"; }
  cat >"$dir/env" <<ENV
export KUBECONFIG=$dir/kubeconfig
export GARDENER_APISERVER_URL=https://127.0.0.1:$port
ENV
  down_when_owner_gone "$owner" "$here/garden.sh" "$dir"
  log "garden ready: gardener-apiserver at https://127.0.0.1:$port behind $(sed -n 's/^export KUBE_APISERVER_URL=//p' "$dir/kube/env")"
}

down() {
  [ -d "$dir" ] || return 0
  [ ! -f "$dir/pids" ] || stop_pids "$dir/pids"
  rm -f "$dir/pids"
  "$here/control-plane.sh" down --dir "$dir/kube"
  log "stopped"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down --dir DIR [--owner-pid PID]" ;;
esac
