#!/usr/bin/env bash
# A real Jaeger v2 (in-memory storage) on free loopback ports, for traces in tests and `make up`.
#
#   hack/jaeger.sh up   --dir DIR [--owner-pid PID]   writes DIR/env (OTEL_EXPORTER_OTLP_ENDPOINT,
#                                                     JAEGER_QUERY_URL) and DIR/pid
#   hack/jaeger.sh down --dir DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cmd=${1:-}; shift || true
dir="" owner=""
service_args "$@"

jaeger_ready() { # QUERY_PORT OTLP_HTTP_PORT
  curl -sf "http://127.0.0.1:$1/api/services" >/dev/null 2>&1 && port_in_use "$2"
}

up() {
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pid" ] || die "$dir already runs a Jaeger (hack/jaeger.sh down --dir $dir)"
  local jaeger; jaeger=$("$here/tools.sh" jaeger)
  local attempt query otlp_http pid
  for attempt in 1 2 3; do
    query=$(free_port); otlp_http=$(free_port)
    JAEGER_QUERY_PORT=$query JAEGER_QUERY_GRPC_PORT=$(free_port) \
      JAEGER_OTLP_GRPC_PORT=$(free_port) JAEGER_OTLP_HTTP_PORT=$otlp_http \
      "$jaeger" --config "file:$here/jaeger.yaml" </dev/null >"$dir/jaeger.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    if await_ready "$pid" jaeger_ready "$query" "$otlp_http"; then
      cat >"$dir/env" <<ENV
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$otlp_http
export JAEGER_QUERY_URL=http://127.0.0.1:$query
ENV
      down_when_owner_gone "$owner" "$here/jaeger.sh" "$dir"
      log "ready: query http://127.0.0.1:$query, OTLP/HTTP http://127.0.0.1:$otlp_http"
      return 0
    fi
    attempt_failed "$attempt" "$dir/jaeger.log" "$dir/pid"
  done
  die "Jaeger did not start; log in $dir/jaeger.log"
}

case "$cmd" in
  up) up ;;
  down) stop_pids "$dir/pid"; rm -f "$dir/env" ;;
  *) die "usage: $0 up|down --dir DIR [--owner-pid PID]" ;;
esac
