#!/usr/bin/env bash
# The real gardener-resource-manager (GRM) as a local process: it applies the ManagedResources of
# one control plane (the "seed") to another (the "shoot"), as a shoot's GRM does in Gardener.
#
#   hack/gardener-resource-manager.sh up --dir DIR --seed-kubeconfig FILE --shoot-kubeconfig FILE
#                                        [--namespace NS]... [--class CLASS] [--owner-pid PID]
#   hack/gardener-resource-manager.sh down --dir DIR
#
# The ManagedResource CRD must be installed in the seed first (hack/tools.sh gardener-crds): `up`
# waits until the managedresource controller runs, which it does only once that kind is served.
# --namespace limits GRM to ManagedResources of these namespaces, so several GRMs can share one
# seed. Two control planes for seed and shoot: hack/control-plane.sh up with two --dir values.
# --class picks the ManagedResources whose spec.class it is (default: those without one, as a
# shoot's GRM); `--class seed` with one kubeconfig as both seed and shoot plays the seed's own GRM,
# which applies what gardenlet puts into the `garden` namespace to the seed itself.
# With --owner-pid a watchdog stops GRM once that process is gone. `down` stops it; stop it only
# after the ManagedResources it serves are gone, as it holds a finalizer on each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cmd=${1:-}; shift || true
dir="" owner="" seed="" shoot="" class="" namespaces=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --seed-kubeconfig) seed=$2; shift 2 ;;
    --shoot-kubeconfig) shoot=$2; shift 2 ;;
    --namespace) namespaces+=("$2"); shift 2 ;;
    --class) class=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$dir" ] || die "--dir is required"

# GRM serves webhooks whether or not any is enabled, so it needs a serving certificate; nothing
# calls it, so a self-signed one does.
webhook_cert() {
  mkdir -p "$dir/webhook-certs"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=gardener-resource-manager-webhook -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$dir/webhook-certs/tls.key" -out "$dir/webhook-certs/tls.crt" 2>/dev/null
}

# Port 0 does not mean "any port" to GRM (its defaulting turns it into a fixed one), so every
# attempt picks three free ones.
write_config() {
  local ns_yaml=""
  if [ ${#namespaces[@]} -gt 0 ]; then
    ns_yaml="  namespaces: [$(IFS=,; echo "${namespaces[*]}")]"
  fi
  cat >"$dir/config.yaml" <<CONFIG
apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
sourceClientConnection:
  kubeconfig: $seed
$ns_yaml
targetClientConnection:
  kubeconfig: $shoot
leaderElection:
  leaderElect: false
logLevel: info
logFormat: json
server:
  webhooks:
    bindAddress: 127.0.0.1
    port: $(free_port)
    tls:
      serverCertDir: $dir/webhook-certs
  healthProbes:
    bindAddress: 127.0.0.1
    port: $(free_port)
  metrics:
    bindAddress: 127.0.0.1
    port: $(free_port)
controllers:
${class:+  resourceClass: $class
}  managedResource:
    syncPeriod: 1m
  health:
    syncPeriod: 1m
  garbageCollector: {enabled: false}
  csrApprover: {enabled: false}
  networkPolicy: {enabled: false}
  tokenRequestor: {enabled: false}
  nodeCriticalComponents: {enabled: false}
  nodeAgentReconciliationDelay: {enabled: false}
CONFIG
}

up() {
  [ -n "$seed" ] && [ -n "$shoot" ] || die "up needs --seed-kubeconfig and --shoot-kubeconfig"
  [ -f "$seed" ] || die "no seed kubeconfig at $seed"
  [ -f "$shoot" ] || die "no shoot kubeconfig at $shoot"
  seed=$(cd "$(dirname "$seed")" && pwd)/$(basename "$seed")
  shoot=$(cd "$(dirname "$shoot")" && pwd)/$(basename "$shoot")
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pid" ] || die "$dir already runs a gardener-resource-manager (hack/gardener-resource-manager.sh down --dir $dir)"
  local grm; grm=$("$here/tools.sh" gardener)
  webhook_cert
  local attempt pid
  for attempt in 1 2 3; do
    write_config
    # KUBECONFIG and TARGET_KUBECONFIG in the environment would override the config file's
    # source and target.
    env -u KUBECONFIG -u TARGET_KUBECONFIG "$grm" --config "$dir/config.yaml" \
      </dev/null >"$dir/gardener-resource-manager.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    # /readyz turns ok before the controllers run: the worker start of the managedresource
    # controller is what says ManagedResources are served.
    if await_ready "$pid" grep -q '"msg":"Starting workers".*"controller":"managedresource"' "$dir/gardener-resource-manager.log"; then
      down_when_owner_gone "$owner" "$here/gardener-resource-manager.sh" "$dir"
      log "ready (pid $pid): ManagedResources of $seed are applied to $shoot"
      return 0
    fi
    attempt_failed "$attempt" "$dir/gardener-resource-manager.log" "$dir/pid"
  done
  die "gardener-resource-manager did not start its managedresource controller; log in $dir/gardener-resource-manager.log"
}

case "$cmd" in
  up) up ;;
  down) stop_pids "$dir/pid" ;;
  *) die "usage: $0 up|down --dir DIR ..." ;;
esac
