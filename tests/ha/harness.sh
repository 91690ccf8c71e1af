# harness.sh -- sourced by the HA fault drills (tests/ha/drill_*.sh): a
# 3-member etcd cluster on loopback, two `kplane apiserver` processes on it,
# leader-elected controller managers and schedulers, and simulated nodes, all
# in one temp dir and all stopped by pid on exit, also when a drill fails.
#
#   . harness.sh KPLANE [KUBECTL [HA_WRITER]]   (the drill's own arguments;
#                                  exits 77 -- ctest SKIP -- without etcd)
#   ha_etcd_start                  3 members; $HA_ETCD_URL, ETCD_PID[i], ETCD_EP[i]
#   ha_api_start I                 API server I (0 or 1) on $HA_ETCD_URL;
#                                  API_PID[I], API_PORT[I], API_URL[I]
#   ha_cm_start I | ha_sched_start I   a controller manager / scheduler with
#                                  --leader-elect (lease $HA_LEASE) and
#                                  --server "$HA_SERVERS" (or $HA_COMP_SERVERS);
#                                  CM_PID[I], CM_MPORT[I] / SCHED_PID, SCHED_MPORT
#   ha_proxy I DELAY_MS            a TCP proxy adding DELAY_MS each way in front of
#                                  API server I (proxy.py); sets HA_PROXY_URL
#   ha_nodes_start N               `kplane node --simulate N`; $NODE_PID
#   ha_start_all                   all of the above (1 etcd cluster, 2 API
#                                  servers, 2+2 components, 3 nodes); array
#                                  HA_CM_FLAGS, HA_NODE_FLAGS: more flags
#   ha_etcd_leader                 prints the index of the etcd leader
#   ha_kill9 PID / ha_stop PID / ha_cont PID
#   hk I ARGS...                   kubectl against API server I only
#   ha_curl I METHOD PATH [ARGS]   curl with the admin token against server I
#   ha_cm_leader / ha_leading PORT NAME   which controller manager leads / does one
#   ha_write PREFIX OUT [FLAGS]    ha_writer (8 threads, both servers) -> OUT
#   ha_verify_writes OUT...        the lost-write and revision-order checks
#   ha_watch_pods I FILE, ha_pod_max FILE   pods of app=web as a watch saw them
#
# HA_KEEP=1 keeps the temp dir (every log in full) when a drill fails;
# HA_KEEP=all keeps it always.
#
# Timing knobs are short so that every drill ends in well under a minute:
# etcd --heartbeat-interval 50 --election-timeout 500, leases of 4 s renewed
# every 0.5 s within a deadline of 3 s. (With 2 s, a leader lost its term on
# CI: one renewal died with the API server killed under it, and the next had
# to get through the restarted server in the middle of every informer's
# relist, under ASan, with another drill on the same two cores.)

set -euo pipefail

KP_BIN=${1:?usage: drill KPLANE [KUBECTL] ...}
KUBECTL=${2:-kubectl}
HA_WRITER=${3:-}
HA_ETCD_BIN=${KP_ETCD_BIN:-$(command -v etcd || true)}
if [ -z "$HA_ETCD_BIN" ]; then
  echo "SKIP: etcd is not installed (Debian: etcd-server; scripts/install-deps --test)"
  exit 77
fi

HA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kp-ha-XXXXXX")
export HOME="$HA_DIR/home" # kubectl's discovery cache stays inside the drill
mkdir -p "$HOME"
HA_PIDS=() # every process this harness started
HA_LEASE=${HA_LEASE:-4s}
HA_RENEW=${HA_RENEW:-3s}
HA_RETRY=${HA_RETRY:-500ms}
ETCD_PID=() ETCD_EP=() ETCD_PEER=()
API_PID=() API_PORT=() API_URL=()
CM_PID=() CM_MPORT=() SCHED_PID=() SCHED_MPORT=()
NODE_PID=
T0=$(date +%s.%N)

# Seconds since the harness started (for the drills' reports).
ha_now() { python3 -c "import time; print(round(time.time() - $T0, 2))"; }
ha_log() { echo "[$(ha_now)s] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

ha_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

ha_cleanup() {
  local rc=$?
  set +e
  # SIGCONT first: a stopped process does not act on SIGTERM until continued.
  for p in "${HA_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
  for p in "${HA_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 30); do
    local alive=0
    for p in "${HA_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${HA_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$HA_DIR"/*.log; do
      [ -f "$f" ] || continue
      echo "--- $(basename "$f") (last 12 lines)"
      grep -v '^raft\|rafthttp\|watch stream .* ended' "$f" | tail -n 12
      case $f in # the components' leader election, which a loss ends
      */controller-manager*.log | */scheduler*.log)
        echo "--- $(basename "$f") (leader election, last 8)"
        grep -i 'leader' "$f" | tail -n 8 ;;
      esac
    done
  fi
  if [ "${HA_KEEP:-}" = all ] || { [ -n "${HA_KEEP:-}" ] && [ $rc -ne 0 ] && [ $rc -ne 77 ]; }; then
    echo "HA_KEEP: logs kept in $HA_DIR" >&2
  else
    rm -rf "$HA_DIR"
  fi
  exit $rc
}
trap ha_cleanup EXIT
trap 'exit 130' INT TERM

ha_track() { HA_PIDS+=("$1"); }

ha_kill9() { kill -KILL "$1"; { wait "$1"; } 2>/dev/null || true; }
ha_stop() { kill -STOP "$1"; }
ha_cont() { kill -CONT "$1"; }

# ---- etcd ----

# Start member I (again, on its data after ha_kill9: same ports).
ha_etcd_member() {
  local i=$1 state=${2:-new}
  local name=e$i
  "$HA_ETCD_BIN" --name "$name" --data-dir "$HA_DIR/etcd$i" \
    --listen-client-urls "${ETCD_EP[$i]}" --advertise-client-urls "${ETCD_EP[$i]}" \
    --listen-peer-urls "${ETCD_PEER[$i]}" --initial-advertise-peer-urls "${ETCD_PEER[$i]}" \
    --initial-cluster "$HA_ETCD_CLUSTER" --initial-cluster-state "$state" \
    --initial-cluster-token kp-ha \
    --heartbeat-interval 50 --election-timeout 500 \
    --max-request-bytes 8388608 \
    --experimental-watch-progress-notify-interval 100ms \
    >>"$HA_DIR/etcd$i.log" 2>&1 </dev/null &
  ETCD_PID[$i]=$!
  ha_track $!
}

ha_etcd_start() {
  local i
  HA_ETCD_CLUSTER='' HA_ETCD_URL=etcd://
  for i in 0 1 2; do
    ETCD_EP[$i]=http://127.0.0.1:$(ha_free_port)
    ETCD_PEER[$i]=http://127.0.0.1:$(ha_free_port)
    HA_ETCD_CLUSTER+="${HA_ETCD_CLUSTER:+,}e$i=${ETCD_PEER[$i]}"
    HA_ETCD_URL+="$([ $i = 0 ] || echo ,)${ETCD_EP[$i]#http://}"
  done
  for i in 0 1 2; do ha_etcd_member $i; done
  ha_etcd_wait_healthy
  ha_log "etcd: 3 members, leader e$(ha_etcd_leader)"
}

ha_etcd_wait_healthy() {
  local i ok
  for _ in $(seq 300); do
    ok=0
    for i in 0 1 2; do
      if curl -s -m 1 "${ETCD_EP[$i]}/health" 2>/dev/null | grep -q '"health":"true"'; then
        ok=$((ok + 1))
      fi
    done
    [ $ok = 3 ] && return 0
    sleep 0.1
  done
  fail "etcd cluster not healthy"
}

# The status of member I as "member_id leader_id raft_term", empty if it does not answer.
ha_etcd_status() {
  curl -s -m 1 -X POST "${ETCD_EP[$1]}/v3/maintenance/status" -d '{}' 2>/dev/null |
    python3 -c 'import json,sys
try:
    d = json.load(sys.stdin); print(d["header"]["member_id"], d.get("leader", "0"), d.get("raftTerm", "0"))
except Exception:
    pass' || true
}

# Print the index of the member that leads, as the live members see it
# (retrying through an election); fails after 10 s without one.
ha_etcd_leader() {
  local i j st id lead ids=()
  for _ in $(seq 100); do
    lead='' ids=()
    for i in 0 1 2; do
      st=$(ha_etcd_status $i)
      [ -n "$st" ] || continue
      read -r id l _ <<<"$st"
      ids[$i]=$id
      [ "$l" != 0 ] && lead=$l
    done
    if [ -n "$lead" ]; then
      for j in 0 1 2; do
        if [ "${ids[$j]:-}" = "$lead" ]; then echo "$j"; return 0; fi
      done
    fi
    sleep 0.1
  done
  echo "ha_etcd_leader: no leader" >&2
  return 1
}

# ---- API servers ----

ha_api_start() {
  local i=$1 d=$HA_DIR/api$1
  mkdir -p "$d/data"
  if [ "$i" != 0 ] && [ ! -f "$d/data/ca.crt" ]; then
    # One cluster, one CA and admin token: copied before the first start.
    for f in ca.crt server.crt server.key admin-token; do
      cp "$HA_DIR/api0/data/$f" "$d/data/$f"
      chmod 600 "$d/data/$f"
    done
  fi
  local port=${API_PORT[$i]:-$(ha_free_port)}
  : >"$d/out"
  "$KP_BIN" apiserver --store "$HA_ETCD_URL" --data-dir "$d/data" \
    --listen "127.0.0.1:$port" "${@:2}" >"$d/out" 2>>"$HA_DIR/api$i.log" </dev/null &
  API_PID[$i]=$!
  ha_track $!
  API_PORT[$i]=$port
  API_URL[$i]=https://127.0.0.1:$port
  for _ in $(seq 400); do
    grep -q "serving on" "$d/out" 2>/dev/null && break
    kill -0 "${API_PID[$i]}" 2>/dev/null || fail "apiserver $i exited: $(tail -5 "$HA_DIR/api$i.log")"
    sleep 0.05
  done
  for _ in $(seq 200); do
    curl -fsS --cacert "$d/data/ca.crt" "${API_URL[$i]}/readyz" >/dev/null 2>&1 && break
    sleep 0.05
  done
  curl -fsS --cacert "$d/data/ca.crt" "${API_URL[$i]}/readyz" >/dev/null 2>&1 ||
    fail "apiserver $i not ready"
  if [ "$i" = 0 ]; then
    export KUBECONFIG=$d/data/kubeconfig
    HA_CA=$d/data/ca.crt
    HA_TOKEN=$(cat "$d/data/admin-token")
  fi
  HA_SERVERS=${API_URL[0]}${API_URL[1]:+,${API_URL[1]}}
}

# kubectl against API server I only.
hk() {
  local i=$1
  shift
  "$KUBECTL" --server "${API_URL[$i]}" "$@"
}

# Create ConfigMap NAME through API server 0, trying every 0.1 s for up to
# SECONDS; fails if none succeeded (the first write after an outage).
ha_await_write() {
  local name=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    hk 0 create configmap "$name" --from-literal=a=b >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

ha_curl() {
  local i=$1 method=$2 path=$3
  shift 3
  curl -sS --cacert "$HA_CA" -X "$method" -H "Authorization: Bearer $HA_TOKEN" \
    "${API_URL[$i]}$path" "$@"
}

# ---- components ----

ha_component() { # KIND I EXTRA...: prints nothing; sets HA_LAST_PID, HA_LAST_MPORT
  local kind=$1 i=$2
  shift 2
  local mport
  mport=$(ha_free_port)
  "$KP_BIN" "$kind" --kubeconfig "$KUBECONFIG" --server "${HA_COMP_SERVERS:-$HA_SERVERS}" \
    --leader-elect \
    --leader-elect-lease-duration "$HA_LEASE" --leader-elect-renew-deadline "$HA_RENEW" \
    --leader-elect-retry-period "$HA_RETRY" --metrics-listen "127.0.0.1:$mport" "$@" \
    >>"$HA_DIR/$kind$i.log" 2>&1 </dev/null &
  HA_LAST_PID=$!
  HA_LAST_MPORT=$mport
  ha_track $!
}

ha_cm_start() {
  ha_component controller-manager "$@"
  CM_PID[$1]=$HA_LAST_PID
  CM_MPORT[$1]=$HA_LAST_MPORT
}

ha_sched_start() {
  ha_component scheduler "$@"
  SCHED_PID[$1]=$HA_LAST_PID
  SCHED_MPORT[$1]=$HA_LAST_MPORT
}

ha_nodes_start() {
  "$KP_BIN" node --kubeconfig "$KUBECONFIG" --server "$HA_SERVERS" --simulate "$1" \
    ${HA_NODE_FLAGS[@]+"${HA_NODE_FLAGS[@]}"} >>"$HA_DIR/node.log" 2>&1 </dev/null &
  NODE_PID=$!
  ha_track $!
}

# 1 when the component serving metrics on PORT leads NAME (kube-controller-manager
# or kube-scheduler), 0 when not, empty when it does not answer.
ha_leading() {
  { curl -s -m 1 "http://127.0.0.1:$1/metrics" || true; } |
    awk -v n="$2" '$0 ~ "leader_election_master_status\\{name=\"" n "\"\\}" {print $2}'
}

# Index (0/1) of the leading controller manager; waits up to 30 s for one.
ha_cm_leader() {
  local i
  for _ in $(seq 300); do
    for i in 0 1; do
      [ -n "${CM_MPORT[$i]:-}" ] || continue
      kill -0 "${CM_PID[$i]}" 2>/dev/null || continue
      if [ "$(ha_leading "${CM_MPORT[$i]}" kube-controller-manager)" = 1 ]; then
        echo "$i"
        return 0
      fi
    done
    sleep 0.1
  done
  return 1
}

ha_wait_nodes_ready() { # N
  for _ in $(seq 300); do
    n=$(hk 0 get nodes --no-headers 2>/dev/null | grep -c ' Ready' || true)
    [ "$n" -ge "$1" ] && return 0
    sleep 0.2
  done
  fail "$1 nodes not Ready"
}

ha_start_all() {
  ha_etcd_start
  ha_api_start 0
  ha_api_start 1
  ha_log "apiservers: ${API_URL[0]} ${API_URL[1]}"
  ha_cm_start 0 ${HA_CM_FLAGS[@]+"${HA_CM_FLAGS[@]}"}
  ha_cm_start 1 ${HA_CM_FLAGS[@]+"${HA_CM_FLAGS[@]}"}
  ha_sched_start 0
  ha_sched_start 1
  ha_nodes_start "${HA_NODES:-3}"
  ha_wait_nodes_ready "${HA_NODES:-3}"
  ha_log "control plane up: cm leader $(ha_cm_leader)"
}

ha_proxy() { # I DELAY_MS; sets HA_PROXY_URL
  local out=$HA_DIR/proxy$1.out
  python3 "$(dirname "${BASH_SOURCE[0]}")/proxy.py" "${API_PORT[$1]}" "$2" >"$out" 2>>"$HA_DIR/proxy$1.log" &
  ha_track $!
  for _ in $(seq 100); do grep -q listening "$out" 2>/dev/null && break; sleep 0.05; done
  HA_PROXY_URL=https://127.0.0.1:$(sed -n 's/listening on //p' "$out")
  [ "$HA_PROXY_URL" != https://127.0.0.1: ] || fail "proxy did not start"
}

# ha_watch_pods I FILE: watch pods of app=web through server I into FILE
# (ndjson) in the background; sets HA_WATCH_PID.
ha_watch_pods() {
  ha_curl "$1" GET "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dweb&timeoutSeconds=600" \
    -N >"$2" 2>/dev/null &
  HA_WATCH_PID=$!
  ha_track $!
}

# Python helper: count live pods of a label selector from an ndjson watch file,
# tracking the maximum ever live at once. Usage: ha_pod_max FILE; prints
# "PEAK LIVE CREATED PEAK_ACTIVE" (active: not terminating, no deletionTimestamp;
# what maxSurge bounds in Kubernetes).
ha_pod_max() {
  python3 - "$1" <<'PY'
import json, sys
live, peak, created, active, peak_active = set(), 0, set(), set(), 0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
        continue
    m = ev["object"]["metadata"]
    n = m["name"]
    if ev["type"] == "DELETED":
        live.discard(n)
        active.discard(n)
    else:
        created.add(n)
        live.add(n)
        if m.get("deletionTimestamp"):
            active.discard(n)
        else:
            active.add(n)
    peak = max(peak, len(live))
    peak_active = max(peak_active, len(active))
print(peak, len(live), len(created), peak_active)
PY
}

# ha_verify_writes WRITES...: list the ConfigMaps through both API servers and
# check every ha_writer record file against them: both servers list the same
# objects; every acknowledged create is listed with the resourceVersion it was
# acknowledged with (none lost); no refused create (an error status other than
# 504) is stored; no two objects share a resourceVersion; within a file, a
# create acknowledged before another began has the lower resourceVersion.
# Unknown outcomes (504 Timeout, or no answer) may be stored or not.
# Prints one summary line per file.
ha_verify_writes() {
  local i
  for i in 0 1; do
    ha_curl "$i" GET "/api/v1/namespaces/default/configmaps" -f -o "$HA_DIR/list$i.json" ||
      fail "list through server $i"
  done
  python3 - "$HA_DIR/list0.json" "$HA_DIR/list1.json" "$@" <<'PY'
import json, sys
lists = [{o["metadata"]["name"]: o["metadata"]["resourceVersion"]
          for o in json.load(open(f))["items"]} for f in sys.argv[1:3]]
problems = []
if lists[0] != lists[1]:
    problems.append("the two API servers list different ConfigMaps")
listed = lists[0]
rvs = [int(v) for v in listed.values()]
if len(set(rvs)) != len(rvs):
    problems.append("two objects share a resourceVersion")
for path in sys.argv[3:]:
    rec = [l.split() for l in open(path) if l.strip()]
    rec = [(n, o, c, rv, float(s), float(e)) for n, o, c, rv, s, e in rec]
    ack = [r for r in rec if r[1] == "ack"]
    unknown = [r for r in rec if r[1] == "timeout" or (r[1] == "error" and r[2] == "504")]
    refused = [r for r in rec if r[1] == "error" and r[2] != "504"]
    codes = {}
    for r in rec:
        if r[1] != "ack":
            codes[r[2]] = codes.get(r[2], 0) + 1
    lost = [r[0] for r in ack if r[0] not in listed]
    moved = [r[0] for r in ack if r[0] in listed and listed[r[0]] != r[3]]
    stored_refused = [r[0] for r in refused if r[0] in listed]
    by_end = sorted(ack, key=lambda r: r[5])
    mx, j, bad = -1, 0, 0
    for r in sorted(ack, key=lambda r: r[4]):
        while j < len(by_end) and by_end[j][5] < r[4]:
            mx = max(mx, int(by_end[j][3]))
            j += 1
        bad += int(r[3]) <= mx
    name = path.rsplit("/", 1)[-1]
    print("%s: attempted %d, acknowledged %d, failed %d %s (refused %d, unknown outcome %d, "
          "of which stored %d); lost %d" % (name, len(rec), len(ack), len(rec) - len(ack), codes,
          len(refused), len(unknown), sum(1 for r in unknown if r[0] in listed), len(lost)))
    if lost:
        problems.append("%s: %d acknowledged creates lost, e.g. %s" % (name, len(lost), lost[:5]))
    if moved:
        problems.append("%s: %d listed at another resourceVersion than acknowledged" % (name, len(moved)))
    if stored_refused:
        problems.append("%s: %d refused creates are stored: %s" % (name, len(stored_refused), stored_refused[:5]))
    if bad:
        problems.append("%s: %d acknowledged creates have a resourceVersion below one acknowledged before they began" % (name, bad))
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
PY
}

# ha_write PREFIX OUT [ha_writer flags]: run ha_writer (8 threads, both API
# servers) in the foreground; its summary line goes to stdout.
ha_write() {
  local prefix=$1 out=$2
  shift 2
  echo "$HA_TOKEN" >"$HA_DIR/token"
  "$HA_WRITER" --server "$HA_SERVERS" --ca "$HA_CA" --token "$HA_DIR/token" --threads 8 \
    --prefix "$prefix" --out "$out" "$@"
}
