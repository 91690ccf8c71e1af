#!/usr/bin/env bash
# drill_all_stopped.sh KPLANE KUBECTL HA_WRITER -- the seed's exercise for
# investigation 007: with every etcd member stopped (SIGSTOP: frozen, their
# sockets still accept connections), measure what `kubectl get pods`, a write,
# an open watch, /readyz and the controllers do, and after how long; then
# resume the members and check that everything converges without a restart.
# Checked: every write fails within the request timeout (60 s, Kubernetes'
# default) and none is acknowledged; no pod is created or deleted while the
# store is gone and no node is marked NotReady or tainted (the controllers act
# on no stale data); after SIGCONT writes succeed, a scale from 3 to 5 is
# carried out by the same processes, the open watch (or its re-watch) sees
# it, and both API servers agree. The figures are printed (README "HA").
. "$(dirname "$0")/harness.sh"
[ -n "$HA_WRITER" ] || fail "usage: drill_all_stopped.sh KPLANE KUBECTL HA_WRITER"
OUTAGE=${HA_OUTAGE_S:-20}
# Node health on a short fuse, so that the outage (about 30 s) outlasts the
# grace period: a controller acting on the stale Leases afterwards would mark
# the nodes NotReady and taint them.
HA_CM_FLAGS=(--node-monitor-grace-period 10s --node-monitor-period 1s)
HA_NODE_FLAGS=(--node-lease-duration-seconds 8)
ha_start_all
M=$HA_DIR/measure
mkdir -p "$M"

hk 0 create deployment web --image=nginx --replicas=3 >/dev/null
hk 0 rollout status deploy/web --timeout=60s >/dev/null
ha_watch_pods 1 "$HA_DIR/pods.ndjson"
cm_lead=$(ha_cm_leader) || fail "no controller manager leads"
pods_before=$(hk 0 get pods -l app=web -o name | sort)

# An open watch, as a client sees it: each event or end with its time.
python3 - "$HA_CA" "$HA_TOKEN" "${API_URL[0]}" >"$M/watch" 2>&1 <<'PY' &
import json, ssl, sys, time, urllib.request
ca, token, server = sys.argv[1:4]
ctx = ssl.create_default_context(cafile=ca)
req = urllib.request.Request(server + "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dweb&timeoutSeconds=300",
                             headers={"Authorization": "Bearer " + token})
try:
    with urllib.request.urlopen(req, context=ctx, timeout=300) as r:
        for line in r:
            if line.strip():
                ev = json.loads(line)
                o = ev["object"]
                print("%.3f %s %s %s" % (time.time(), ev["type"], o["metadata"].get("name", "-"),
                                         o.get("code", o.get("status", {}).get("phase", "")) if ev["type"] == "ERROR" else o["metadata"]["resourceVersion"]), flush=True)
    print("%.3f END closed" % time.time(), flush=True)
except Exception as e:
    print("%.3f END %s" % (time.time(), type(e).__name__), flush=True)
PY
WATCHER=$!
ha_track $WATCHER
sleep 1

# timed NAME CMD...: run CMD (at most 90 s), record "seconds exit-status" and
# its first output line in $M/NAME.
timed() {
  local name=$1
  shift
  local t0 rc=0
  t0=$(date +%s.%N)
  timeout 90 "$@" >"$M/$name.out" 2>&1 || rc=$?
  echo "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))") $rc $(head -c 160 "$M/$name.out" | head -1)" >"$M/$name"
}

ts=$(date +%s.%N)
for i in 0 1 2; do ha_stop "${ETCD_PID[$i]}"; done
ha_log "SIGSTOP all three etcd members"
K0=("$KUBECTL" --server "${API_URL[0]}")
K1=("$KUBECTL" --server "${API_URL[1]}")
timed get_pods "${K0[@]}" get pods &
P1=$!
timed get_pods_rv0 "${K1[@]}" get --raw '/api/v1/namespaces/default/pods?resourceVersion=0' &
P2=$!
timed get_deploy "${K0[@]}" get deploy web &
P3=$!
timed create_cm "${K1[@]}" create configmap during-outage --from-literal=a=b &
P4=$!
timed scale "${K0[@]}" scale deploy web --replicas=7 &
P5=$!
echo "$HA_TOKEN" >"$HA_DIR/token"
timed writer "$HA_WRITER" --server "$HA_SERVERS" --ca "$HA_CA" --token "$HA_DIR/token" \
  --threads 8 --prefix outage --out "$HA_DIR/outage" --count 100000 --seconds 3 --timeout-ms 90000 &
P6=$!
# /readyz and the controller managers' leadership once a second meanwhile.
for s in $(seq "$OUTAGE"); do
  rz=$(curl -s -o /dev/null -w '%{http_code}' -m 2 --cacert "$HA_CA" "${API_URL[0]}/readyz" || true)
  l0=$(ha_leading "${CM_MPORT[0]}" kube-controller-manager)
  l1=$(ha_leading "${CM_MPORT[1]}" kube-controller-manager)
  echo "$s $rz ${l0:-x}${l1:-x}" >>"$M/samples"
  sleep 1
done
wait $P1 $P2 $P3 $P4 $P5 $P6 || true
tc=$(date +%s.%N)
for i in 0 1 2; do ha_cont "${ETCD_PID[$i]}"; done
ha_log "SIGCONT all three after $(python3 -c "print(round($tc - $ts, 1))")s"

echo "while every member was stopped (seconds, exit status, first line):"
for f in get_pods get_pods_rv0 get_deploy create_cm scale writer; do
  echo "  $f: $(cat "$M/$f")"
done
echo "  /readyz of server 0, once a second: $(awk '{print $2}' "$M/samples" | sort | uniq -c | tr -s ' \n' ' ')"
echo "  controller managers leading (0/1, x: gone), once a second: $(awk '{print $3}' "$M/samples" | tr '\n' ' ')"
after() { python3 -c "print(round($(date +%s.%N) - $tc, 1))"; }

# Writes fail within the request timeout (60 s) and none is acknowledged;
# a consistent read fails rather than serve what may be stale.
for f in create_cm scale get_pods get_deploy; do
  read -r secs rc _ <"$M/$f"
  [ "$rc" != 0 ] || fail "$f succeeded with every etcd member stopped: $(cat "$M/$f.out")"
  python3 -c "import sys; sys.exit(0 if $secs <= 60 else 1)" || fail "$f took ${secs}s"
done
python3 - "$HA_DIR/outage" <<'PY'
import sys
rec = [l.split() for l in open(sys.argv[1]) if l.strip()]
if not rec:
    sys.exit("FAIL: the writer attempted nothing")
ack = [r for r in rec if r[1] == "ack"]
slow = [r for r in rec if float(r[5]) - float(r[4]) > 60000]
bad = [r for r in rec if r[1] == "error" and not r[2].startswith("5")]
if ack or slow or bad:
    sys.exit("FAIL: without etcd: %d acknowledged, %d over 60 s, %d non-5xx" % (len(ack), len(slow), len(bad)))
PY
# The leader stopped acting once it could not renew its Lease (renew deadline
# 2 s): from the 8th second on, no controller manager leads.
awk '$1 >= 8 && $3 ~ /1/ {exit 1}' "$M/samples" ||
  fail "a controller manager led without a store: $(tr '\n' ' ' <"$M/samples")"
if kill -0 "${CM_PID[$cm_lead]}" 2>/dev/null; then
  fail "controller manager $cm_lead (the leader) did not end when its term ran out"
fi

# Convergence, without restarting any process that is still running.
ha_await_write after-outage 60 || fail "no write succeeded within 60 s of SIGCONT"
ha_log "first write succeeded $(after)s after SIGCONT"
lead=$(ha_cm_leader) || fail "no controller manager leads after SIGCONT"
ha_log "controller manager $lead (the standby) leads $(after)s after SIGCONT"
hk 1 scale deploy web --replicas=5 >/dev/null
hk 1 rollout status deploy/web --timeout=120s >/dev/null
ha_log "scaled to 5, all available $(after)s after SIGCONT"
for i in 0 1; do
  expect_eq "web's ready replicas through server $i" "$(hk "$i" get deploy web -o jsonpath='{.status.readyReplicas}')" 5
done
for p in "${API_PID[@]}" "$NODE_PID" "${CM_PID[$lead]}" "$WATCHER"; do
  kill -0 "$p" 2>/dev/null || fail "process $p ended"
done
# The open watch stayed open through the outage and carried the new pods.
grep -q ' END ' "$M/watch" && fail "the open watch ended: $(grep ' END ' "$M/watch")"
n=$(awk -v tc="$tc" '$1 > tc && $2 == "ADDED"' "$M/watch" | wc -l)
expect_eq "pods ADDED on the open watch after SIGCONT" "$n" 2
first=$(awk -v tc="$tc" '$1 > tc {print $1; exit}' "$M/watch")
ha_log "the open watch's first event after SIGCONT came $(python3 -c "print(round($first - $tc, 1))")s after it"
# No controller acted on stale data: the three pods of before are all still
# there, none was created twice, and after a full node grace period (10 s)
# under the new leader no node is NotReady or tainted.
read -r _ _ created _ <<<"$(ha_pod_max "$HA_DIR/pods.ndjson")"
expect_eq "pods created in all" "$created" 5
for p in $pods_before; do hk 0 get "$p" >/dev/null || fail "$p is gone"; done
sleep 8
nodes=$(hk 0 get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{.spec.taints} {end}')
expect_eq "nodes" "$nodes" "kplane-node-0=True kplane-node-1=True kplane-node-2=True "
# The failed writes had unknown outcomes (504): some may have been committed
# once the members resumed (the requests waited in their sockets).
ha_verify_writes "$HA_DIR/outage"
ha_log "kubectl's configmap during-outage (failed with a timeout) exists afterwards:" \
  "$(hk 0 get configmap during-outage -o name 2>/dev/null || echo no)"
ha_log "drill_all_stopped: all checks passed"
