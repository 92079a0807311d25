#!/usr/bin/env bash
# A real node beside a control plane of hack/control-plane.sh: containerd with the CNI plugins,
# kubelet, kube-proxy, kube-controller-manager and kube-scheduler, so that the operator can run the
# way it ships — in Pods, under a kubelet's probes, limits and restarts.
#
#   hack/node.sh address [--dir DIR]         -> creates (once) and prints the node's address; with
#                                               DIR, first claims the machine for that node
#   hack/node.sh up   --dir DIR --control-plane CPDIR [--registry HOST:PORT] [--owner-pid PID]
#   hack/node.sh down --dir DIR
#   hack/node.sh import --dir DIR ARCHIVE    -> an image of hack/tools.sh (pause, toolbox) into the node
#
# The control plane must run on the node's address (hack/control-plane.sh up --address "$(hack/node.sh
# address)"): Pods cannot reach a loopback address of the host. Everything the node adds to the
# machine's network stays on it: the node's address and the Pods' are on a bridge of its own,
# nothing is masqueraded, and Pod traffic may not be forwarded anywhere but that bridge. One node
# runs per machine (interfaces, kube-proxy's rules); `up` waits 30 s for another one to stop, then
# refuses.
# `up` writes DIR/env (NODE_NAME, NODE_IP, POD_CIDR, CONTAINERD_ADDRESS) and waits until the node
# is Ready; `down` stops every process and container it started and removes its network.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=versions.env
. "$here/versions.env"

readonly node_name=ontap-node
readonly pod_cidr=10.252.0.0/24
readonly bridge=ontapcni0
# The Pods' gateway on their bridge is also the node's address: this machine's kernel has no dummy
# interfaces, and a bridge's own address answers locally even before a Pod is plugged in.
readonly node_ip=10.252.0.1
readonly service_cidr=10.0.0.0/24
readonly owner_file=/run/ontap-operator-node

cmd=${1:-}; shift || true
dir="" cp="" registry="" owner="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --control-plane) cp=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --*) die "unknown argument $1" ;;
    *) archive=$1; shift ;;
  esac
done

need_root() { [ "$(id -u)" = 0 ] || die "a node needs root (network interfaces, cgroups, mounts)"; }

# claim_machine: records DIR as the machine's node. A node recorded for another folder is waited
# for (up to 30 s): one whose owner just went is still being stopped by its watchdog, and its
# `down` removes the bridge that carries the address. Recorded longer, it is refused while any of
# its processes runs, and forgotten otherwise (left by a crash).
claim_machine() {
  local other
  for _ in $(seq 1 150); do
    other=$(cat "$owner_file" 2>/dev/null || true)
    [ -n "$other" ] && [ "$other" != "$dir" ] || break
    sleep 0.2
  done
  if [ -n "$other" ] && [ "$other" != "$dir" ] && any_alive "$other/pids"; then
    die "a node already runs on this machine ($other); hack/node.sh down --dir $other"
  fi
  echo "$dir" >"$owner_file"
}

address() {
  need_root
  if [ -n "$dir" ]; then
    mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
    claim_machine
  fi
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  ip addr replace "$node_ip/${pod_cidr#*/}" dev "$bridge"
  ip link set "$bridge" up
  echo "$node_ip"
}

# Pods may reach the host and each other, never beyond: with isGateway the bridge plugin turns on
# forwarding, so forwarded Pod traffic is kept to the bridge.
fence_rules() { # -A|-D
  iptables -w "$1" FORWARD -s "$pod_cidr" ! -o "$bridge" -m comment --comment ontap-node -j DROP
  iptables -w "$1" FORWARD -d "$pod_cidr" ! -i "$bridge" -m comment --comment ontap-node -j DROP
}

# sign NAME SUBJECT EXTENSIONS: a certificate signed by the control plane's CA, into $pki.
sign() {
  local name=$1 subject=$2 ext=$3
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$cp/pki/ca.crt" -CAkey "$cp/pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# kubeconfig NAME USER GROUP: a kubeconfig for one of the node's components.
kubeconfig() {
  local group=()
  [ -z "$3" ] || group=(--group "$3")
  "$here/control-plane.sh" user --dir "$cp" --name "$2" "${group[@]}" --out "$dir/$1.kubeconfig"
}

start() { # NAME COMMAND...: starts COMMAND in the background, logging to DIR/NAME.log, and records it
  local name=$1; shift
  "$@" </dev/null >>"$dir/$name.log" 2>&1 &
  echo $! >>"$dir/pids"
  echo $!
}

write_containerd_config() {
  local hosts=$dir/containerd/certs.d
  mkdir -p "$hosts" "$dir/cni"
  if [ -n "$registry" ]; then
    # The local registry speaks plain HTTP on loopback.
    mkdir -p "$hosts/$registry"
    cat >"$hosts/$registry/hosts.toml" <<TOML
server = "http://$registry"
[host."http://$registry"]
  capabilities = ["pull", "resolve"]
TOML
  fi
  cat >"$dir/cni/10-ontap-node.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "ontap-node",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$pod_cidr", "gateway": "$node_ip"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$dir/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
  cat >"$dir/containerd/config.toml" <<TOML
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd/containerd.sock"
[ttrpc]
  address = "$dir/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$(cat "$pause_dir/name")"
  enable_selinux = false
  # This machine withholds CAP_SYS_RESOURCE even from root, so no process may lower its OOM score
  # below its parent's (the kubelet asks -998 for sandboxes): keep to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$dir/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$dir/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$hosts"
TOML
}

write_kubelet_config() {
  cat >"$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz_port
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $cp/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /
failCgroupV1: false
failSwapOn: false
# The machine is shared with builds and tests: no eviction for a full disk or busy memory, and
# images stay (they cannot be pulled again from anywhere but the local registry).
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
resolvConf: /etc/resolv.conf
rotateCertificates: false
serverTLSBootstrap: false
volumeStatsAggPeriod: 0s
# kube-proxy owns the Service rules and cleans them up; the kubelet's own chains (a firewall for
# 127.0.0.0/8 and canaries) would outlive the node in the machine's tables.
makeIPTablesUtilChains: false
YAML
}

write_proxy_config() {
  cat >"$dir/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $dir/kube-proxy.kubeconfig}
hostnameOverride: $node_name
clusterCIDR: $pod_cidr
bindAddress: $node_ip
healthzBindAddress: 127.0.0.1:$proxy_healthz_port
metricsBindAddress: 127.0.0.1:$proxy_metrics_port
# The machine's conntrack settings belong to the machine.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

node_ready() {
  local server; server=$(sed -n 's/^export KUBE_APISERVER_URL=//p' "$cp/env")
  curl -s --max-time 2 --cacert "$cp/pki/ca.crt" --cert "$cp/pki/admin.crt" --key "$cp/pki/admin.key" \
    "$server/api/v1/nodes/$node_name" 2>/dev/null |
    jq -e '.status.conditions[]? | select(.type == "Ready" and .status == "True")' >/dev/null 2>&1
}

up() {
  need_root
  [ -n "$dir" ] && [ -n "$cp" ] || die "up needs --dir and --control-plane"
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd); cp=$(cd "$cp" && pwd)
  [ -f "$cp/address" ] && [ "$(cat "$cp/address")" = "$node_ip" ] ||
    die "the control plane in $cp must run on the node's address: hack/control-plane.sh up --address $node_ip"
  claim_machine
  [ ! -f "$dir/pids" ] || ! any_alive "$dir/pids" || die "$dir already runs a node"
  down_quietly
  local bin; bin=$("$here/tools.sh" kube-node)
  pause_dir=$(dirname "$("$here/tools.sh" pause)")
  cni_bin=/usr/lib/cni
  local c
  for c in containerd runc ctr iptables conntrack curl jq; do
    command -v "$c" >/dev/null 2>&1 || die "$c is missing (make deps installs it)"
  done
  [ -x "$cni_bin/bridge" ] || die "the CNI plugins are missing in $cni_bin (make deps installs them)"
  address >/dev/null
  : >"$dir/pids"
  pki=$dir/pki; mkdir -p "$pki"
  kubelet_port=$(free_port); kubelet_healthz_port=$(free_port)
  proxy_healthz_port=$(free_port); proxy_metrics_port=$(free_port)

  write_containerd_config
  start containerd containerd --config "$dir/containerd/config.toml" >/dev/null
  local sock=$dir/containerd/containerd.sock
  for _ in $(seq 1 100); do ctr -a "$sock" version >/dev/null 2>&1 && break; sleep 0.1; done
  ctr -a "$sock" version >/dev/null 2>&1 || die "containerd did not start; see $dir/containerd.log"
  import_image "$pause_dir/image.tar"

  sign kubelet "/O=system:nodes/CN=system:node:$node_name" "subjectAltName=IP:$node_ip,DNS:$node_name
extendedKeyUsage=serverAuth"
  kubeconfig kubelet "system:node:$node_name" system:nodes
  kubeconfig kube-proxy system:kube-proxy ""
  kubeconfig kube-controller-manager system:kube-controller-manager ""
  kubeconfig kube-scheduler system:kube-scheduler ""
  write_kubelet_config
  write_proxy_config
  fence_rules -A

  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$dir/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/kube-controller-manager.kubeconfig" \
    --use-service-account-credentials --service-account-private-key-file "$cp/pki/sa.key" \
    --root-ca-file "$cp/pki/ca.crt" --cluster-cidr "$pod_cidr" --service-cluster-ip-range "$service_cidr" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 >/dev/null
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$dir/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/kube-scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 >/dev/null
  start kubelet "$bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --hostname-override "$node_name" --node-ip "$node_ip" --root-dir "$dir/kubelet" \
    --cert-dir "$pki" >/dev/null
  start kube-proxy "$bin/kube-proxy" --config "$dir/kube-proxy.yaml" >/dev/null

  {
    echo "export NODE_NAME=$node_name"
    echo "export NODE_IP=$node_ip"
    echo "export POD_CIDR=$pod_cidr"
    echo "export CONTAINERD_ADDRESS=$sock"
  } >"$dir/env"
  down_when_owner_gone "$owner" "$here/node.sh" "$dir"
  for _ in $(seq 1 600); do
    node_ready && { log "node $node_name Ready at $node_ip (logs in $dir)"; return 0; }
    local p
    for p in $(cat "$dir/pids"); do
      alive "$p" || { log "a node process ($p) exited; see $dir/*.log"; tail -n 5 "$dir"/*.log >&2; down; exit 1; }
    done
    sleep 0.2
  done
  die "the node did not turn Ready in 120 s; see $dir/*.log"
}

# What a kubelet of an earlier version of this script (or one started by hand) left in the
# machine's tables.
forget_kubelet_chains() {
  local cmd table chain
  for cmd in iptables ip6tables; do
    for table in filter nat mangle; do
      for chain in INPUT OUTPUT; do
        while $cmd -w -t "$table" -D "$chain" -j KUBE-FIREWALL 2>/dev/null; do :; done
      done
      for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
        $cmd -w -t "$table" -F "$chain" 2>/dev/null && $cmd -w -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

# import_image ARCHIVE: an image of hack/tools.sh (its name beside it) into the node's containerd,
# for images no registry serves.
import_image() {
  local name; name=$(cat "$(dirname "$1")/name")
  ctr -a "$dir/containerd/containerd.sock" -n k8s.io images import --base-name "${name%:*}" "$1" >/dev/null
}

# Containers outlive containerd (their shims keep running): kill them first, through containerd
# while it still answers, then any shim of this node left over.
stop_containers() {
  local sock=$dir/containerd/containerd.sock id
  if [ -S "$sock" ] && ctr -a "$sock" version >/dev/null 2>&1; then
    for id in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
  fi
  pkill -9 -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
}

down_quietly() {
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  if [ -f "$dir/pids" ]; then
    # kubelet first, so it restarts nothing while the containers go.
    local kubelet_pid
    kubelet_pid=$(pgrep -f "kubelet --config $dir/kubelet.yaml" || true)
    [ -z "$kubelet_pid" ] || { kill "$kubelet_pid" 2>/dev/null || true; }
    stop_containers
    stop_pids "$dir/pids"
  fi
  stop_containers
  # What kube-proxy wrote into the machine's iptables; the binary is not built just for this.
  local proxy=${XDG_CACHE_HOME:-$HOME/.cache}/ontap-operator/bin/kube-node-$KUBE_VERSION/kube-proxy
  [ ! -x "$proxy" ] || "$proxy" --cleanup >/dev/null 2>&1 || true
  fence_rules -D 2>/dev/null || true
  fence_rules -D 2>/dev/null || true
  forget_kubelet_chains
  # Mounts under the node's folders (container root file systems, Pod volumes, network namespaces).
  local m
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  for m in $(awk '$2 ~ /^\/run\/netns\/cni-/ {print $2}' /proc/mounts); do
    umount -l "$m" 2>/dev/null && rm -f "$m" || true
  done
  rm -rf "$dir/containerd" "$dir/kubelet" "$dir/cni/ipam"
}

down() {
  need_root
  [ -n "$dir" ] || die "down needs --dir"
  dir=$(cd "$dir" 2>/dev/null && pwd) || return 0
  down_quietly
  ip link del "$bridge" 2>/dev/null || true
  # Last: a node waiting for this one may take the machine from here.
  if [ "$(cat "$owner_file" 2>/dev/null)" = "$dir" ]; then rm -f "$owner_file"; fi
  log "stopped"
}

case "$cmd" in
  address) address ;;
  up) up ;;
  down) down ;;
  import) [ -n "$dir" ] && [ -f "$archive" ] || die "import needs --dir and an archive"; import_image "$archive" ;;
  *) die "usage: $0 address [--dir DIR] | up --dir DIR --control-plane CPDIR [--registry HOST:PORT] [--owner-pid PID] | down --dir DIR" ;;
esac
