#!/bin/sh
# with-etcd.sh -- local single-node etcd clusters for tests and benchmarks.
#
#   with-etcd.sh run CMD [ARG...]     run CMD with KP_TEST_ETCD set to this
#                                     script: CMD starts and stops clusters
#                                     with the two commands below; every one
#                                     still running when CMD ends is killed
#   with-etcd.sh one CMD [ARG...]     start one cluster, run CMD with
#                                     KP_TEST_STORE_URL=etcd://127.0.0.1:PORT,
#                                     then stop it
#   with-etcd.sh start DIR            start a cluster with its data in DIR,
#                                     wait until it is healthy, print its URL
#   with-etcd.sh stop DIR             stop the cluster started in DIR
#   with-etcd.sh restart DIR          start it again on its data and ports
#
# Each cluster listens on free loopback ports, keeps its data and log in its
# directory and is stopped by its pid (never by name). The etcd binary is
# $KP_ETCD_BIN, else `etcd` on PATH (Debian's etcd-server). Flags: requests up
# to 8 MiB (a 3 MiB value is 4 MiB of base64 JSON), a 100ms watch progress
# interval (see PROGRESS in src/store/etcd_int.h; $KP_ETCD_PROGRESS_INTERVAL
# replaces it, for measuring what it costs), fast elections.
set -eu

etcd_bin=${KP_ETCD_BIN:-etcd}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Under `run` or `one`, stop the cluster also when that script is killed
# outright (SIGKILL from a test timeout leaves no trap to run).
watchdog() {
  [ -n "${KP_ETCD_OWNER:-}" ] || return 0
  (
    while kill -0 "$KP_ETCD_OWNER" 2>/dev/null && kill -0 "$1" 2>/dev/null; do sleep 1; done
    kill "$1" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
}

start() {
  dir=$1
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5; do
    if [ -n "${2:-}" ]; then
      read -r cport pport <"$dir/etcd.ports"
    else
      cport=$(free_port)
      pport=$(free_port)
      [ "$cport" != "$pport" ] || continue
    fi
    curl_url="http://127.0.0.1:$cport"
    "$etcd_bin" --name kp --data-dir "$dir/etcd-data" \
      --listen-client-urls "$curl_url" --advertise-client-urls "$curl_url" \
      --listen-peer-urls "http://127.0.0.1:$pport" \
      --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
      --initial-cluster "kp=http://127.0.0.1:$pport" \
      --heartbeat-interval 50 --election-timeout 500 \
      --max-request-bytes 8388608 \
      --experimental-watch-progress-notify-interval "${KP_ETCD_PROGRESS_INTERVAL:-100ms}" \
      >"$dir/etcd.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/etcd.pid"
    echo "$cport $pport" >"$dir/etcd.ports"
    [ -n "${KP_ETCD_PIDS:-}" ] && echo "$pid" >>"$KP_ETCD_PIDS"
    i=0
    while [ $i -lt 300 ]; do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if curl -s -m 1 "$curl_url/health" 2>/dev/null | grep -q '"health":"true"'; then
        watchdog "$pid"
        echo "etcd://127.0.0.1:$cport"
        return 0
      fi
      sleep 0.1
      i=$((i + 1))
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -n "${2:-}" ] && break
    rm -rf "$dir/etcd-data"
  done
  echo "with-etcd.sh: etcd did not start; log:" >&2
  cat "$dir/etcd.log" >&2 || true
  return 1
}

stop_pid() {
  pid=$1
  kill "$pid" 2>/dev/null || return 0
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  [ -f "$1/etcd.pid" ] && stop_pid "$(cat "$1/etcd.pid")"
  rm -f "$1/etcd.pid"
}

case "${1:-}" in
  start) start "$2" ;;
  restart) start "$2" again ;;
  stop) stop "$2" ;;
  run | one)
    mode=$1
    shift
    root=$(mktemp -d "${TMPDIR:-/tmp}/kp-etcd-XXXXXX")
    KP_ETCD_PIDS=$root/pids
    KP_ETCD_OWNER=$$
    export KP_ETCD_PIDS KP_ETCD_OWNER
    : >"$KP_ETCD_PIDS"
    cleanup() {
      while read -r p; do stop_pid "$p"; done <"$KP_ETCD_PIDS"
      rm -rf "$root"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    if [ "$mode" = run ]; then
      KP_TEST_ETCD=$script
      export KP_TEST_ETCD
    else
      KP_TEST_STORE_URL=$(start "$root/etcd")
      export KP_TEST_STORE_URL
    fi
    set +e
    "$@"
    rc=$?
    set -e
    exit $rc
    ;;
  *)
    echo "usage: $0 run|one CMD [ARG...] | start DIR | stop DIR" >&2
    exit 2
    ;;
esac
