#!/usr/bin/env bash
# `make up` / `make down`: the local environment in .local/ — a control plane (and, as the
# project grows, mock ONTAP and Jaeger) in the background, described by .local/env.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
local_dir=$root/.local

case "${1:-}" in
  up)
    mkdir -p "$local_dir"
    if [ -f "$local_dir/control-plane/pids" ] && kill -0 $(cat "$local_dir/control-plane/pids") 2>/dev/null; then
      echo "local environment already up (make down to stop it)" >&2
    else
      "$root/hack/control-plane.sh" down --dir "$local_dir/control-plane" 2>/dev/null || true
      "$root/hack/control-plane.sh" up --dir "$local_dir/control-plane"
    fi
    cp "$local_dir/control-plane/kubeconfig" "$local_dir/kubeconfig"
    {
      echo "# Written by make up; source it: . .local/env"
      echo "export KUBECONFIG=$local_dir/kubeconfig"
      grep -v '^export KUBECONFIG=' "$local_dir/control-plane/env"
    } >"$local_dir/env"
    # kubectl is optional for the operator; apply the CRDs with it when it is there.
    if command -v kubectl >/dev/null 2>&1; then
      "$root/target/debug/ontap-operator" crds | kubectl --kubeconfig "$local_dir/kubeconfig" apply -f - >/dev/null
    fi
    echo "up: . .local/env && kubectl get --raw /readyz" >&2
    ;;
  down)
    "$root/hack/control-plane.sh" down --dir "$local_dir/control-plane"
    rm -f "$local_dir/env" "$local_dir/kubeconfig"
    ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
