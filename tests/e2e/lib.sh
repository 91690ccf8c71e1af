# lib.sh -- shared by the end-to-end tests: start a real `kplane server` on a
# free loopback port in its own temp data dir, and always stop it (by pid).
#
#   . lib.sh; kp_start [extra server flags]; ...; (kp_stop runs on EXIT)
#   kp_restart [flags]: start it again on the same data dir (after a crash).
#
# After kp_start: $KP_DIR (data dir), $KP_PID, $KP_PORT, $KUBECONFIG, $KP_TOKEN.

set -euo pipefail

KP_BIN=${KP_BIN:?set KP_BIN to the kplane binary}
KP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kp-e2e-XXXXXX")
KP_PID=
export HOME="$KP_DIR/home" # kubectl's discovery cache stays inside the test
mkdir -p "$HOME"

kp_stop() {
  if [ -n "$KP_PID" ] && kill -0 "$KP_PID" 2>/dev/null; then
    kill -TERM "$KP_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$KP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$KP_PID" 2>/dev/null || true
    wait "$KP_PID" 2>/dev/null || true
  fi
  KP_PID=
}

# kp_cleanup [RC]: the EXIT trap; a test with a trap of its own calls it last,
# with the exit status it saw (errexit is off here, so that a failing step
# can never skip stopping the server).
kp_cleanup() {
  local rc=${1:-$?}
  set +e
  kp_stop
  if [ $rc -ne 0 ] && [ -f "$KP_DIR/server.log" ]; then
    echo "--- server log (last 40 lines)"; tail -n 40 "$KP_DIR/server.log"
  fi
  rm -rf "$KP_DIR"
  exit $rc
}
trap kp_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# The API server alone (no controllers, scheduler or nodes acting on what a
# test writes): for suites about the API itself.
KP_API_ONLY=(--nodes 0 --no-controllers --no-scheduler)

# Start the server; wait until /readyz answers.
kp_start() {
  "$KP_BIN" server --data-dir "$KP_DIR/data" --listen 127.0.0.1:0 "$@" \
    >"$KP_DIR/server.out" 2>>"$KP_DIR/server.log" &
  KP_PID=$!
  for _ in $(seq 200); do
    if grep -q "serving on" "$KP_DIR/server.out" 2>/dev/null; then break; fi
    kill -0 "$KP_PID" 2>/dev/null || fail "server exited: $(cat "$KP_DIR/server.log")"
    sleep 0.05
  done
  KP_PORT=$(sed -n 's|.*https://127.0.0.1:\([0-9]*\);.*|\1|p' "$KP_DIR/server.out")
  [ -n "$KP_PORT" ] || fail "server did not report its port"
  export KUBECONFIG="$KP_DIR/data/kubeconfig"
  KP_TOKEN=$(cat "$KP_DIR/data/admin-token")
  # The cluster without a user, for `kubectl --kubeconfig "$KP_NOUSER" --token
  # T`: with the admin kubeconfig kubectl would present the admin's client
  # certificate too, and x509 comes first in the authentication chain.
  KP_NOUSER="$KP_DIR/nouser.kubeconfig"
  cat >"$KP_NOUSER" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kp
  cluster:
    server: https://127.0.0.1:$KP_PORT
    certificate-authority: $KP_DIR/data/ca.crt
contexts:
- name: kp
  context: {cluster: kp}
current-context: kp
EOF
  for _ in $(seq 100); do
    curl -fsS --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer $KP_TOKEN" \
      "https://127.0.0.1:$KP_PORT/readyz" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "server not ready"
}

# Start the server again on the same data dir: stop it if it still runs, reap
# it if it died (a crash test: `kill -KILL $KP_PID; wait $KP_PID` first, as an
# unreaped zombie still passes kill -0). The port changes; the token and CA stay.
kp_restart() {
  if [ -n "$KP_PID" ]; then
    if kill -0 "$KP_PID" 2>/dev/null; then kp_stop; else wait "$KP_PID" 2>/dev/null || true; fi
  fi
  KP_PID=
  kp_start "$@"
}

# curl with the admin token: kp_curl METHOD PATH [curl args...]
kp_curl() {
  local method=$1 path=$2
  shift 2
  curl -sS --cacert "$KP_DIR/data/ca.crt" -X "$method" -H "Authorization: Bearer $KP_TOKEN" \
    "https://127.0.0.1:$KP_PORT$path" "$@"
}

# kp_wait_for WHAT SECONDS CMD...: poll CMD (its output dropped) every 0.2 s
# until it succeeds; fail naming WHAT after SECONDS.
kp_wait_for() {
  local what=$1 secs=$2
  shift 2
  for _ in $(seq $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  fail "$what: not within ${secs}s"
}

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# expect_match WHAT TEXT REGEX
expect_match() { grep -Eq -- "$3" <<<"$2" || fail "$1: '$2' does not match /$3/"; }
# A header line in `curl -D -` output: names match in any case (HTTP/2
# sends them in lower case, as Kubernetes' server does).
expect_header() { grep -Eqi -- "^$3: $4" <<<"$2" || fail "$1: no header /$3: $4/ in '$2'"; }
