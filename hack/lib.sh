# shellcheck shell=bash
# Shared by the hack/ scripts that run background processes. Source it; it defines functions only.

log() { echo "${0##*/}: $*" >&2; }
die() { log "$*"; exit 1; }

# The cargo flags of `make test`'s debug build: hack/build-linted.sh builds with them and
# hack/test.sh lists the test binaries with them (any difference would rebuild). The operator
# leaves out its default jemalloc feature there (Cargo.toml says why).
test_build_flags() { echo --workspace --no-default-features; }

port_in_use() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

# A free loopback port. Racy by nature: callers retry when the process fails to bind. Taken from
# 10000-29999: below the kernel's ephemeral range (no outgoing connection's local port, and no
# port a process got by binding port 0, sits there, so only another caller of this function can
# collide) and below the node's NodePort range (30000-32767), which kube-proxy answers on loopback.
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((10000 + RANDOM % 20000))
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  die "no free loopback port found"
}

# alive PID: the process exists and is not a zombie. Killed children of a process that already
# exited wait for PID 1 to reap them, and some container inits take their time; `kill -0`
# alone counts such a zombie as running. The state is read from /proc with bash's own `read`:
# every watchdog asks once a second, and a `ps` for each question was 22,000 processes and
# 131 CPU-seconds of a test run (process accounting, docs/operating.md). `ps` remains for a
# system without /proc.
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local stat
  if { read -r stat <"/proc/$1/stat"; } 2>/dev/null; then
    # "PID (COMM) STATE ...": COMM may hold spaces and parentheses, the state follows the last ") ".
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
  else
    case "$(ps -o stat= -p "$1" 2>/dev/null)" in Z*) return 1 ;; esac
  fi
}

# any_alive FILE: FILE exists and at least one of the PIDs it lists is alive, what
# `kill -0 $(cat FILE)` says but for zombies.
any_alive() {
  [ -f "$1" ] || return 1
  local pids p
  pids=$(cat "$1")
  for p in $pids; do alive "$p" && return 0; done
  return 1
}

# stop_pids FILE: stops the processes listed in FILE (TERM, then KILL after 10 s) and removes it.
stop_pids() {
  [ -f "$1" ] || return 0
  local pids; pids=$(cat "$1")
  # shellcheck disable=SC2086
  kill $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    local alive=0
    for p in $pids; do alive "$p" && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  # shellcheck disable=SC2086
  kill -9 $pids 2>/dev/null || true
  rm -f "$1"
}

# stop_tree PID: stops PID and every process it started, a parent before its children (listed
# before it goes, as they are then adopted by init) so that it starts no new one meanwhile.
stop_tree() {
  local children child
  children=$(pgrep -P "$1" || true)
  kill "$1" 2>/dev/null || true
  for child in $children; do stop_tree "$child"; done
}

# watch_owner PID COMMAND...: runs COMMAND once process PID is gone, from its own session so the
# owner's signals do not take the watchdog along before it has cleaned up.
watch_owner() {
  local owner=$1; shift
  # A zombie owner is gone: the watchdog's shell gets `alive` to tell. Its script is expanded there.
  # shellcheck disable=SC2016
  setsid bash -c "$(declare -f alive)"'
    owner=$1; shift; while alive "$owner"; do sleep 1; done; "$@"' \
    _ "$owner" "$@" </dev/null >/dev/null 2>&1 &
}

# service_args ARG...: the `--dir DIR [--owner-pid PID]` of a background service's up and down
# into the caller's $dir and $owner (which it declares); --dir is required.
service_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir=$2; shift 2 ;;
      --owner-pid) owner=$2; shift 2 ;;
      *) die "unknown argument $1" ;;
    esac
  done
  [ -n "$dir" ] || die "--dir is required"
}

# down_when_owner_gone OWNER SCRIPT DIR: once process OWNER is gone, runs `SCRIPT down --dir DIR`
# and removes DIR (owned instances live in throwaway folders). No-op when OWNER is empty.
down_when_owner_gone() {
  [ -n "$1" ] || return 0
  watch_owner "$1" bash -c '"$1" down --dir "$2"; rm -rf "$2"' _ "$2" "$3"
}

# await_ready PID CHECK...: polls CHECK every 0.2 s for up to 60 s while PID runs; fails when PID
# exits or time is up.
await_ready() {
  local pid=$1; shift
  for _ in $(seq 1 300); do
    alive "$pid" || return 1
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

# attempt_failed N LOG PIDFILE: reports a failed start with the log's last lines and stops it.
attempt_failed() {
  log "attempt $1 failed; last log lines:"; tail -n 5 "$2" >&2 || true
  stop_pids "$3"
}

# conformance_venv: prints the path of the virtualenv with the Python client of tests/conformance
# (netapp-ontap and pytest at hack/versions.env's pins), creating or updating it once in
# ~/.cache/ontap-operator/venv; later calls only compare the pins. Needs hack/versions.env sourced.
conformance_venv() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/ontap-operator"
  local venv="$cache/venv"
  local pins="netapp-ontap==${NETAPP_ONTAP_VERSION:?} pytest==${PYTEST_VERSION:?}"
  mkdir -p "$cache"
  (
    flock 9
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.pins" 2>/dev/null)" = "$pins" ]; then
      exit 0
    fi
    log "installing $pins into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" >&2 || exit 1
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins >&2 || exit 1
    echo "$pins" >"$venv/.pins"
  ) 9>"$cache/venv.lock" || die "could not install $pins into $venv"
  echo "$venv"
}
