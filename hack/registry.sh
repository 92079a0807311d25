#!/usr/bin/env bash
# A container registry (Debian's docker-registry, distribution 2.8) on a free loopback port, for
# images hack/image.sh pushes: plain HTTP, no authentication, deletes allowed, blobs under DIR.
#
#   hack/registry.sh up   --dir DIR [--owner-pid PID]   writes DIR/address (127.0.0.1:PORT) and DIR/pid
#   hack/registry.sh down --dir DIR                     stops it; the stored images stay in DIR/data
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cmd=${1:-}; shift || true
dir="" owner=""
service_args "$@"

registry_ready() { # PORT
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/v2/")" = 200 ]
}

up() {
  command -v docker-registry >/dev/null 2>&1 || die "docker-registry is missing (make deps installs it)"
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pid" ] || die "$dir already runs a registry (hack/registry.sh down --dir $dir)"
  local attempt port pid
  for attempt in 1 2 3; do
    port=$(free_port)
    # The secret signs upload state between requests; one instance alone never needs it again.
    cat >"$dir/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: $(openssl rand -hex 16)
CONFIG
    docker-registry serve "$dir/config.yml" </dev/null >"$dir/registry.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    if await_ready "$pid" registry_ready "$port"; then
      echo "127.0.0.1:$port" >"$dir/address"
      down_when_owner_gone "$owner" "$here/registry.sh" "$dir"
      log "ready at 127.0.0.1:$port"
      return 0
    fi
    attempt_failed "$attempt" "$dir/registry.log" "$dir/pid"
  done
  die "the registry did not start; log in $dir/registry.log"
}

case "$cmd" in
  up) up ;;
  down) stop_pids "$dir/pid"; rm -f "$dir/address" ;;
  *) die "usage: $0 up|down --dir DIR [--owner-pid PID]" ;;
esac
