#!/usr/bin/env bash
# A real, local Kubernetes control plane (etcd + kube-apiserver) on loopback, envtest style.
#
#   hack/control-plane.sh up   --dir DIR [--owner-pid PID] [--address IP] [--aggregator]
#   hack/control-plane.sh down --dir DIR
#   hack/control-plane.sh user --dir DIR --name USER [--group GROUP]... --out KUBECONFIG
#   hack/control-plane.sh stop-apiserver|start-apiserver --dir DIR
#
# `up` starts both on free loopback ports with freshly generated certificates and RBAC, waits for
# /readyz, and writes DIR/kubeconfig (an admin in system:masters) and DIR/env. With --owner-pid a
# watchdog stops everything once that process is gone, so a test binary that panics or is killed
# leaves nothing behind. `down` stops exactly the processes `up` recorded in DIR/pids and removes
# their data. With --address (an address of this machine that is not loopback, see hack/node.sh)
# the API server listens there and is set up for a node: Pods reach it through the `kubernetes`
# Service, so it keeps that Service's endpoints, mounts ServiceAccount tokens, authorizes kubelets
# with the Node authorizer and reaches them with a client certificate. With --aggregator it
# serves aggregated APIs (front-proxy certificates, as kube-aggregator needs them), for a garden
# whose gardener-apiserver registers behind it (hack/garden.sh). `user` writes a kubeconfig for a non-admin identity (client certificate signed by the
# cluster's CA), for running the operator under the RBAC it ships with.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cmd=${1:-}; shift || true
dir="" owner="" user="" out="" address=127.0.0.1 groups=() aggregator=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --name) user=$2; shift 2 ;;
    --group) groups+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --address) address=$2; shift 2 ;;
    --aggregator) aggregator=1; shift ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$dir" ] || die "--dir is required"

for tool in openssl curl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (make deps installs it)"
done

# Any ETCD_* variable is read by etcd as a flag: never let the caller's environment leak in.
# GOGC: these control planes live for one test binary and hold little, and Go's default (100) spent
# a quarter of kube-apiserver's CPU collecting: 1,000 Kymas on a node took 448 CPU-s of it at 100,
# 335 at 400 (docs/operating.md, where the time goes). CONTROL_PLANE_GOGC overrides it.
clean_env() {
  local unset=()
  while IFS= read -r name; do unset+=(-u "$name"); done < <(env | sed -n 's/^\(ETCD_[A-Za-z0-9_]*\)=.*/\1/p')
  exec env "${unset[@]}" GOGC="${CONTROL_PLANE_GOGC:-400}" "$@"
}

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }

# sign NAME SUBJECT EXTENSIONS: a certificate for NAME signed by the cluster CA in $pki.
sign() {
  local name=$1 subject=$2 ext=$3
  new_key "$pki/$name.key"
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

b64() { base64 -w0 <"$1"; }

write_kubeconfig() { # FILE SERVER USER CERT KEY
  cat >"$1" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $2
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(b64 "$4")
    client-key-data: $(b64 "$5")
contexts:
- name: $3@local
  context: {cluster: local, user: $3, namespace: default}
current-context: $3@local
KCFG
  chmod 600 "$1"
}

# Starts kube-apiserver with the arguments `up` chose and prints its PID.
start_apiserver() {
  local args=()
  mapfile -t args <"$dir/apiserver.args"
  clean_env "${args[@]}" </dev/null >>"$dir/kube-apiserver.log" 2>&1 &
  echo $!
}

wait_ready() { # PORT TRIES
  for _ in $(seq 1 "$2"); do
    if [ "$(curl -s --max-time 2 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
      "https://$(cat "$dir/address"):$1/readyz" 2>/dev/null)" = "ok" ]; then return 0; fi
    sleep 0.3
  done
  return 1
}

stop_recorded() { stop_pids "$dir/pids"; }

up() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pids" ] || die "$dir already runs a control plane (hack/control-plane.sh down --dir $dir)"
  local bin; bin=$("$here/tools.sh" kube)
  local node_args=() san="IP:127.0.0.1"
  if [ "$address" != 127.0.0.1 ]; then
    ip -o addr show to "$address/32" | grep -q . || die "$address is not an address of this machine (hack/node.sh address creates it)"
    san="IP:$address"
  fi
  echo "$address" >"$dir/address"
  pki=$dir/pki
  rm -rf "$pki"; mkdir -p "$pki"
  new_key "$pki/ca.key"
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=ontap-operator-local-ca" -days 3650 -out "$pki/ca.crt" 2>/dev/null
  sign apiserver "/CN=kube-apiserver" "subjectAltName=$san,IP:::1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
  sign admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth"
  if [ "$address" != 127.0.0.1 ]; then
    sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
    node_args=(--enable-admission-plugins NodeRestriction --authorization-mode Node,RBAC
      --kubelet-client-certificate "$pki/kubelet-client.crt" --kubelet-client-key "$pki/kubelet-client.key"
      --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP)
  else
    # Without a node nobody needs the `kubernetes` Service's endpoints or mounted tokens.
    node_args=(--authorization-mode RBAC --disable-admission-plugins ServiceAccount --endpoint-reconciler-type none)
  fi
  if [ -n "$aggregator" ]; then
    # A CA of its own for the front proxy, as kube-apiserver's docs ask: a client certificate
    # the cluster CA signed must not pass as the proxy.
    new_key "$pki/front-proxy-ca.key"
    openssl req -x509 -new -key "$pki/front-proxy-ca.key" -subj "/CN=front-proxy-ca" -days 3650 -out "$pki/front-proxy-ca.crt" 2>/dev/null
    new_key "$pki/front-proxy-client.key"
    openssl req -new -key "$pki/front-proxy-client.key" -subj "/CN=front-proxy-client" -out "$pki/front-proxy-client.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$pki/front-proxy-client.ext"
    openssl x509 -req -in "$pki/front-proxy-client.csr" -CA "$pki/front-proxy-ca.crt" -CAkey "$pki/front-proxy-ca.key" \
      -CAcreateserial -days 3650 -extfile "$pki/front-proxy-client.ext" -out "$pki/front-proxy-client.crt" 2>/dev/null
    rm -f "$pki/front-proxy-client.csr" "$pki/front-proxy-client.ext"
    node_args+=(--requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
      --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
      --requestheader-extra-headers-prefix X-Remote-Extra- --proxy-client-cert-file "$pki/front-proxy-client.crt"
      --proxy-client-key-file "$pki/front-proxy-client.key")
  fi
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

  local data; data=$(mktemp -d "${CONTROL_PLANE_DATA_ROOT:-/dev/shm}/ontap-operator-etcd.XXXXXX" 2>/dev/null || mktemp -d "$dir/etcd.XXXXXX")
  echo "$data" >"$dir/data-dir"
  : >"$dir/pids"

  local attempt etcd_port peer_port api_port etcd_pid api_pid ready
  for attempt in 1 2 3; do
    etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
    rm -rf "${data:?}"/*
    clean_env "$bin/etcd" --name default --data-dir "$data/etcd" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "default=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn \
      </dev/null >"$dir/etcd.log" 2>&1 &
    etcd_pid=$!
    printf '%s\n' "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
      --bind-address "$address" --advertise-address "$address" --secure-port "$api_port" \
      --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
      --client-ca-file "$pki/ca.crt" "${node_args[@]}" \
      --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
      --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
      --allow-privileged=true >"$dir/apiserver.args"
    api_pid=$(start_apiserver)
    echo "$etcd_pid $api_pid" >"$dir/pids"
    ready=0
    for _ in $(seq 1 300); do
      if ! alive "$etcd_pid" || ! alive "$api_pid"; then break; fi
      if wait_ready "$api_port" 1; then ready=1; break; fi
    done
    [ $ready = 1 ] && break
    log "attempt $attempt failed (ports $etcd_port/$peer_port/$api_port); last log lines:"
    tail -n 5 "$dir/etcd.log" "$dir/kube-apiserver.log" >&2 || true
    stop_recorded; : >"$dir/pids"
  done
  [ "${ready:-0}" = 1 ] || { rm -f "$dir/pids"; die "the control plane did not become ready; logs in $dir"; }

  write_kubeconfig "$dir/kubeconfig" "https://$address:$api_port" admin "$pki/admin.crt" "$pki/admin.key"
  cat >"$dir/env" <<ENV
export KUBECONFIG=$dir/kubeconfig
export KUBE_APISERVER_URL=https://$address:$api_port
export KUBE_ETCD_URL=http://127.0.0.1:$etcd_port
ENV
  down_when_owner_gone "$owner" "$here/control-plane.sh" "$dir"
  log "ready at https://$address:$api_port (etcd 127.0.0.1:$etcd_port, pids $(cat "$dir/pids"))"
}

down() {
  [ -d "$dir" ] || return 0
  stop_recorded
  if [ -f "$dir/data-dir" ]; then rm -rf "$(cat "$dir/data-dir")"; rm -f "$dir/data-dir"; fi
  log "stopped"
}

new_user() {
  [ -n "$user" ] && [ -n "$out" ] || die "user needs --name and --out"
  pki=$dir/pki
  local server subject="" g
  server=$(sed -n 's/^export KUBE_APISERVER_URL=//p' "$dir/env")
  for g in "${groups[@]}"; do subject+="/O=$g"; done
  local name; name=user-$(echo "$user" | tr -c 'a-zA-Z0-9-' '-')
  sign "$name" "$subject/CN=$user" "extendedKeyUsage=clientAuth"
  write_kubeconfig "$out" "$server" "$user" "$pki/$name.crt" "$pki/$name.key"
}

# For tests of what the operator does while the API server is gone: stop it, and start it again
# on the same port with the same data.
stop_apiserver() {
  local etcd_pid api_pid
  read -r etcd_pid api_pid <"$dir/pids"
  kill "$api_pid" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$api_pid" || break; sleep 0.2; done
  kill -9 "$api_pid" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$api_pid" || break; sleep 0.1; done
}

restart_apiserver() {
  local etcd_pid api_pid port
  read -r etcd_pid api_pid <"$dir/pids"
  alive "$api_pid" && die "kube-apiserver (pid $api_pid) is still running"
  api_pid=$(start_apiserver)
  echo "$etcd_pid $api_pid" >"$dir/pids"
  port=$(sed -n 's|^export KUBE_APISERVER_URL=https://.*:||p' "$dir/env")
  wait_ready "$port" 300 || die "kube-apiserver did not become ready again; see $dir/kube-apiserver.log"
}

case "$cmd" in
  up) up ;;
  stop-apiserver) stop_apiserver ;;
  start-apiserver) restart_apiserver ;;
  down) down ;;
  user) new_user ;;
  *) die "usage: $0 up|down|user|stop-apiserver|start-apiserver --dir DIR ..." ;;
esac
