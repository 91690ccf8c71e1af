#!/usr/bin/env bash
# rollout.sh KPLANE KUBECTL -- the seed's exercise with kubectl against a
# `kplane server` running its controllers, scheduler and simulated nodes:
# a Deployment of 3 rolls out, rolls to a new image, scales, rolls back; a
# watcher checks the rolling-update bounds on every pod event; a ReplicaSet
# replaces a deleted pod and one relabelled out of its selector; the
# controllers' events show in describe.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

echo "--- simulated nodes are Ready"
for _ in $(seq 100); do
  [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ] && break
  sleep 0.1
done
expect_eq "ready nodes" "$(k get nodes --no-headers | grep -c ' Ready ')" "3"

echo "--- a Deployment of 3"
cat >"$KP_DIR/web.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
YAML
k apply -f "$KP_DIR/web.yaml" >/dev/null
k rollout status deploy/web --timeout=60s >/dev/null
expect_eq "one replicaset" "$(k get rs -l app=web --no-headers | wc -l)" "1"
expect_eq "3 running" "$(k get pods -l app=web --field-selector=status.phase=Running --no-headers | wc -l)" "3"
expect_match "ready" "$(k get deploy web)" "web +3/3 +3 +3"

# A watcher samples every pod event during the rollout: never more than
# replicas+maxSurge active pods (4), never fewer than replicas-maxUnavailable
# (3) available (Ready and not terminating).
kp_curl GET "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dweb&timeoutSeconds=120" \
  -N >"$KP_DIR/events.ndjson" &
WATCH_PID=$!
sleep 0.5

echo "--- set image: a second ReplicaSet, rolled out"
k set image deploy/web nginx=nginx:1.26 >/dev/null
k rollout status deploy/web --timeout=60s >/dev/null
expect_eq "two replicasets" "$(k get rs -l app=web --no-headers | wc -l)" "2"
expect_match "old at 0" "$(k get rs -l app=web --no-headers)" " 0 +0 +0 "
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
python3 - "$KP_DIR/events.ndjson" <<'PY'
import json, sys
pods, max_pods, min_avail, n = {}, 0, 99, 0
started = False
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    ev = json.loads(line)
    o = ev["object"]
    name = o["metadata"]["name"]
    if ev["type"] == "DELETED":
        pods.pop(name, None)
    else:
        pods[name] = o
    n += 1
    # Active pods, as the controllers count them: a terminating pod is on
    # its way out (its node finishes it) and no longer counts.
    live = [x for x in pods.values() if x.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            and "deletionTimestamp" not in x["metadata"]]
    avail = [x for x in live if any(
        c["type"] == "Ready" and c["status"] == "True" for c in x.get("status", {}).get("conditions", []))]
    if len(avail) >= 3:
        started = True  # the watch began with the first rollout done
    max_pods = max(max_pods, len(live))
    if started:
        min_avail = min(min_avail, len(avail))
print("events", n, "max pods", max_pods, "min available", min_avail)
if n < 6 or max_pods > 4 or min_avail < 3:
    sys.exit("FAIL: rollout bounds: %d events, max %d pods (want <= 4), min %d available (want >= 3)"
             % (n, max_pods, min_avail))
PY

echo "--- scale to 5: no new ReplicaSet"
k scale deploy/web --replicas=5 >/dev/null
k rollout status deploy/web --timeout=60s >/dev/null
expect_eq "still two replicasets" "$(k get rs -l app=web --no-headers | wc -l)" "2"
expect_eq "5 pods" "$(k get pods -l app=web --field-selector=status.phase=Running --no-headers | wc -l)" "5"

echo "--- rollout history and undo"
hist=$(k rollout history deploy/web)
expect_match "history 1" "$hist" "^1 "
expect_match "history 2" "$hist" "^2 "
k rollout undo deploy/web >/dev/null
k rollout status deploy/web --timeout=60s >/dev/null
expect_eq "image back" "$(k get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" "nginx:1.25"
expect_eq "revision 3" "$(k get deploy web -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')" "3"

echo "--- a ReplicaSet replaces a deleted pod, and one relabelled away"
victim=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
t0=$(date +%s.%N)
k delete pod "$victim" --wait=false >/dev/null
for _ in $(seq 200); do
  n=$(kp_curl GET "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb" |
    python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["items"] if "deletionTimestamp" not in p["metadata"]))')
  [ "$n" = 5 ] && break
  sleep 0.02
done
t1=$(date +%s.%N)
expect_eq "replaced" "$n" "5"
took=$(python3 -c "print(round($t1 - $t0, 2))")
echo "replacement pod created ${took}s after the delete (kubectl's own start included)"
# Within a second on an idle machine; slack for ASan on a loaded CI runner.
python3 -c "import sys; sys.exit(0 if $took <= 3.0 else 1)" || fail "replacement took ${took}s"
stray=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
k label pod "$stray" app=stray --overwrite >/dev/null
for _ in $(seq 100); do
  [ "$(k get pods -l app=web --no-headers 2>/dev/null | grep -vc Terminating)" = 5 ] && break
  sleep 0.1
done
expect_eq "orphan replaced" "$(k get pods -l app=web --no-headers | grep -vc Terminating)" "5"
expect_eq "orphan released" "$(k get pod "$stray" -o jsonpath='{.metadata.ownerReferences}')" ""

echo "--- describe shows the controllers' events"
expect_match "describe deploy" "$(k describe deploy web)" "ScalingReplicaSet"
expect_match "describe rs" "$(k describe rs -l app=web)" "SuccessfulCreate"
echo "rollout.sh: all checks passed"
