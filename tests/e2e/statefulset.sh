#!/usr/bin/env bash
# statefulset.sh KPLANE KUBECTL -- the StatefulSet controller as a kubectl
# user sees it, against `kplane server` with its 3 simulated nodes: a
# headless Service and a StatefulSet of 3 (with a volumeClaimTemplate)
# create web-0, web-1, web-2 strictly in order, each after the previous one
# is Ready; scaling to 1 removes web-2, then web-1; a RollingUpdate with
# partition=1 replaces web-2, then web-1, and leaves web-0 alone; two
# ControllerRevisions; rollout undo; Parallel creates without waiting;
# OnDelete only gives recreated pods the new revision.
#
# A watch on the pods records every event; the ordering is judged on that
# stream (the store's order), and on the pods' own timestamps.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }

# wait_for WHAT CMD...: poll CMD until it succeeds (60 s).
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  fail "timed out waiting for $what"
}
jp() { k get "$1" "$2" -o jsonpath="$3"; }
pods_are() { [ "$(k get pods -l app=nginx -o jsonpath='{.items[*].metadata.name}')" = "$1" ]; }
sts_status_is() { [ "$(jp sts "$1" "$2")" = "$3" ]; }

echo "--- simulated nodes are Ready"
wait_for "3 ready nodes" bash -c "[ \"\$('$KUBECTL' get nodes --no-headers | grep -c ' Ready ')\" = 3 ]"

kp_curl GET "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dnginx&timeoutSeconds=280" \
  -N >"$KP_DIR/events.ndjson" &
WATCH_PID=$!
sleep 0.5

echo "--- a headless Service and a StatefulSet of 3"
cat >"$KP_DIR/web.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels: {app: nginx}
spec:
  ports:
  - port: 80
    name: web
  clusterIP: None
  selector:
    app: nginx
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: nginx}
  serviceName: nginx
  replicas: 3
  template:
    metadata:
      labels: {app: nginx}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: ["ReadWriteOnce"]
      resources:
        requests:
          storage: 1Gi
YAML
k apply -f "$KP_DIR/web.yaml" >/dev/null
expect_eq "defaulted podManagementPolicy" "$(jp sts web '{.spec.podManagementPolicy}')" "OrderedReady"
expect_eq "defaulted updateStrategy" "$(jp sts web '{.spec.updateStrategy.type}/{.spec.updateStrategy.rollingUpdate.partition}')" "RollingUpdate/0"
expect_eq "defaulted revisionHistoryLimit" "$(jp sts web '{.spec.revisionHistoryLimit}')" "10"
k rollout status sts/web --timeout=120s >/dev/null
expect_eq "3 pods" "$(k get pods -l app=nginx -o jsonpath='{.items[*].metadata.name}')" "web-0 web-1 web-2"
expect_match "get sts" "$(k get sts web --no-headers)" "^web +3/3 "

echo "--- identity: names, labels, hostname, subdomain, claim volumes"
rev1=$(jp sts web '{.status.updateRevision}')
expect_match "revision name" "$rev1" "^web-[bcdfghjklmnpqrstvwxz2456789]+$"
expect_eq "currentRevision" "$(jp sts web '{.status.currentRevision}')" "$rev1"
for i in 0 1 2; do
  expect_eq "web-$i labels" \
    "$(jp pod web-$i '{.metadata.labels.statefulset\.kubernetes\.io/pod-name} {.metadata.labels.apps\.kubernetes\.io/pod-index} {.metadata.labels.controller-revision-hash}')" \
    "web-$i $i $rev1"
  expect_eq "web-$i hostname.subdomain" "$(jp pod web-$i '{.spec.hostname}.{.spec.subdomain}')" "web-$i.nginx"
  expect_eq "web-$i claim" "$(jp pod web-$i '{.spec.volumes[?(@.name=="www")].persistentVolumeClaim.claimName}')" "www-web-$i"
  expect_eq "web-$i owner" "$(jp pod web-$i '{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}')" "StatefulSet/web/true"
done
expect_eq "status" "$(jp sts web '{.status.replicas} {.status.readyReplicas} {.status.currentReplicas} {.status.updatedReplicas} {.status.availableReplicas} {.status.collisionCount}')" "3 3 3 3 3 0"
expect_eq "observedGeneration" "$(jp sts web '{.status.observedGeneration}')" "$(jp sts web '{.metadata.generation}')"

echo "--- each pod was created after the previous one was Ready (timestamps)"
for i in 1 2; do
  prev_ready=$(jp pod "web-$((i - 1))" '{.status.conditions[?(@.type=="Ready")].lastTransitionTime}')
  created=$(jp pod "web-$i" '{.metadata.creationTimestamp}')
  [ -n "$prev_ready" ] || fail "web-$((i - 1)) has no Ready condition"
  # RFC 3339 in UTC with whole seconds: they sort as strings.
  [[ ! "$created" < "$prev_ready" ]] || fail "web-$i created at $created, before web-$((i - 1)) was Ready at $prev_ready"
  echo "web-$((i - 1)) Ready $prev_ready, web-$i created $created"
done
expect_match "events" "$(k get events --field-selector involvedObject.kind=StatefulSet,reason=SuccessfulCreate)" \
  "create Pod web-0 in StatefulSet web successful"

echo "--- scale to 1: web-2 goes, then web-1"
uid1=$(jp pod web-1 '{.metadata.uid}')
uid2=$(jp pod web-2 '{.metadata.uid}')
k scale sts web --replicas=1 >/dev/null
wait_for "only web-0" pods_are "web-0"
wait_for "status replicas 1" sts_status_is web '{.status.replicas}/{.status.readyReplicas}' "1/1"
expect_match "delete events" "$(k get events --field-selector involvedObject.kind=StatefulSet,reason=SuccessfulDelete)" \
  "delete Pod web-2 in StatefulSet web successful"

echo "--- scale back to 3"
k scale sts web --replicas=3 >/dev/null
k rollout status sts/web --timeout=120s >/dev/null
wait_for "3 ready" sts_status_is web '{.status.readyReplicas}' "3"

echo "--- partition=1 and a new image: web-2, then web-1 updated; web-0 kept"
u0=$(jp pod web-0 '{.metadata.uid}')
u1=$(jp pod web-1 '{.metadata.uid}')
u2=$(jp pod web-2 '{.metadata.uid}')
k patch sts web -p '{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}}' >/dev/null
k set image sts/web nginx=nginx:1.26 >/dev/null
wait_for "2 updated and 3 ready" sts_status_is web '{.status.updatedReplicas}/{.status.readyReplicas}' "2/3"
k rollout status sts/web --timeout=120s >/dev/null
rev2=$(jp sts web '{.status.updateRevision}')
[ "$rev2" != "$rev1" ] || fail "no new update revision"
expect_eq "currentRevision kept" "$(jp sts web '{.status.currentRevision}')" "$rev1"
expect_eq "current/updated counts" "$(jp sts web '{.status.currentReplicas}/{.status.updatedReplicas}')" "1/2"
for i in 1 2; do
  expect_eq "web-$i revision" "$(jp pod web-$i '{.metadata.labels.controller-revision-hash}')" "$rev2"
  expect_eq "web-$i image" "$(jp pod web-$i '{.spec.containers[0].image}')" "nginx:1.26"
done
expect_eq "web-0 revision" "$(jp pod web-0 '{.metadata.labels.controller-revision-hash}')" "$rev1"
expect_eq "web-0 image" "$(jp pod web-0 '{.spec.containers[0].image}')" "nginx:1.25"
expect_eq "web-0 untouched" "$(jp pod web-0 '{.metadata.uid}')" "$u0"
revs=$(k get controllerrevisions --no-headers)
echo "$revs"
expect_eq "two revisions" "$(echo "$revs" | wc -l)" "2"
expect_match "revision 1" "$revs" "^$rev1 +statefulset.apps/web +1 "
expect_match "revision 2" "$revs" "^$rev2 +statefulset.apps/web +2 "
expect_eq "revision data" "$(k get controllerrevision "$rev2" -o json | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["spec"]["template"]
print(t["$patch"], t["spec"]["containers"][0]["image"])')" "replace nginx:1.26"
expect_eq "revision hash label" "web-$(k get controllerrevision "$rev2" -o jsonpath='{.metadata.labels.controller\.kubernetes\.io/hash}')" "$rev2"

kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true

echo "--- the order, as the watch saw it"
python3 - "$KP_DIR/events.ndjson" "$uid1" "$uid2" "$u0" "$u1" "$u2" "$rev2" <<'PY'
import json, sys
path, uid1, uid2, u0, u1, u2, rev2 = sys.argv[1:]
pods = {}        # uid -> last state
first_del = {}   # uid -> event index of its first deletionTimestamp
gone = {}        # uid -> event index of DELETED
created = []     # names in ADDED order
def ready(p):
    return p.get("status", {}).get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))
def fail(msg):
    sys.exit("FAIL: " + msg)
n = 0
for i, line in enumerate(open(path)):
    line = line.strip()
    if not line:
        continue
    ev = json.loads(line)
    o = ev["object"]
    uid, name = o["metadata"]["uid"], o["metadata"]["name"]
    n += 1
    by_name = {p["metadata"]["name"]: p for p in pods.values()}
    if ev["type"] == "ADDED":
        created.append(name)
        ordinal = int(name.rsplit("-", 1)[1])
        # OrderedReady: every lower ordinal exists, Running and Ready.
        for lower in range(ordinal):
            p = by_name.get("web-%d" % lower)
            if p is None or not ready(p) or "deletionTimestamp" in p["metadata"]:
                fail("%s created (event %d) while web-%d was not Ready" % (name, i, lower))
    if ev["type"] == "DELETED":
        pods.pop(uid, None)
        gone[uid] = i
        continue
    if "deletionTimestamp" in o["metadata"] and uid not in first_del:
        first_del[uid] = i
        ordinal = int(name.rsplit("-", 1)[1])
        # Highest first: every higher pod present is healthy at this point.
        for p in pods.values():
            pn = p["metadata"]["name"]
            if p["metadata"]["uid"] != uid and int(pn.rsplit("-", 1)[1]) > ordinal and \
                    (not ready(p) or "deletionTimestamp" in p["metadata"]):
                fail("%s deleted (event %d) while %s was not Ready" % (name, i, pn))
    pods[uid] = o
print("events", n, "created", " ".join(created))
if created[:3] != ["web-0", "web-1", "web-2"]:
    fail("first creations %s" % created[:3])
# Scale-down: web-1 only after web-2 was gone.
if uid2 not in gone or uid1 not in first_del or first_del[uid1] < gone[uid2]:
    fail("scale down: web-2 gone at %s, web-1 deleted at %s" % (gone.get(uid2), first_del.get(uid1)))
print("scale down: web-2 gone at event", gone[uid2], "web-1 deleted at", first_del[uid1])
# Update: web-2 first; web-1 after the new web-2 was Ready at rev2; never web-0.
if u0 in first_del:
    fail("web-0 was deleted during the partitioned update")
if u2 not in first_del or u1 not in first_del or first_del[u1] < first_del[u2]:
    fail("update order: web-2 at %s, web-1 at %s" % (first_del.get(u2), first_del.get(u1)))
print("update: web-2 deleted at event", first_del[u2], "web-1 at", first_del[u1])
PY

echo "--- rollout undo: back to the first template, as revision 3"
k rollout undo sts/web >/dev/null
k patch sts web -p '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}' >/dev/null
k rollout status sts/web --timeout=120s >/dev/null
wait_for "rolled back" sts_status_is web '{.status.currentRevision}/{.status.updatedReplicas}' "$rev1/3"
for i in 0 1 2; do
  expect_eq "web-$i image after undo" "$(jp pod web-$i '{.spec.containers[0].image}')" "nginx:1.25"
done
expect_eq "renumbered" "$(k get controllerrevision "$rev1" -o jsonpath='{.revision}')" "3"
expect_eq "still two revisions" "$(k get controllerrevisions --no-headers | wc -l)" "2"
echo "--- revisionHistoryLimit 0: the revision no pod uses is pruned"
k patch sts web -p '{"spec":{"revisionHistoryLimit":0}}' >/dev/null
one_rev() { [ "$(k get controllerrevisions -o jsonpath='{.items[*].metadata.name}')" = "$rev1" ]; }
wait_for "only $rev1 left" one_rev

echo "--- delete --cascade=orphan keeps the pods; a new StatefulSet adopts them"
uids=$(k get pods -l app=nginx -o jsonpath='{.items[*].metadata.uid}')
k delete sts web --cascade=orphan >/dev/null
no_sts() { ! k get sts web >/dev/null 2>&1; }
wait_for "web gone" no_sts
orphaned() { [ -z "$(k get pods,controllerrevisions -l app=nginx -o jsonpath='{.items[*].metadata.ownerReferences}')" ]; }
wait_for "pods and revision orphaned" orphaned
expect_eq "pods kept" "$(k get pods -l app=nginx -o jsonpath='{.items[*].metadata.uid}')" "$uids"
k apply -f "$KP_DIR/web.yaml" >/dev/null
newuid=$(jp sts web '{.metadata.uid}')
adopted() { [ "$(k get pods,controllerrevisions -l app=nginx -o jsonpath='{.items[*].metadata.ownerReferences[0].uid}')" = "$newuid $newuid $newuid $newuid" ]; }
wait_for "pods and revision adopted" adopted
wait_for "adopted status" sts_status_is web '{.status.readyReplicas}/{.status.currentRevision}' "3/$rev1"
expect_eq "same pods" "$(k get pods -l app=nginx -o jsonpath='{.items[*].metadata.uid}')" "$uids"

echo "--- Parallel: all pods at once, though none becomes Ready; OnDelete"
cat >"$KP_DIR/par.yaml" <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: par
spec:
  selector:
    matchLabels: {app: par}
  serviceName: par
  replicas: 3
  podManagementPolicy: Parallel
  updateStrategy: {type: OnDelete}
  ordinals: {start: 5}
  template:
    metadata:
      labels: {app: par}
      annotations: {sim.kplane.io/never-ready: "true"}
    spec:
      containers:
      - name: c
        image: busybox:1
YAML
k apply -f "$KP_DIR/par.yaml" >/dev/null
pars() { [ "$(k get pods -l app=par -o jsonpath='{.items[*].metadata.name}')" = "$1" ]; }
wait_for "par-5..7" pars "par-5 par-6 par-7"
expect_eq "none ready" "$(jp sts par '{.status.readyReplicas}')" "0"
prev=$(jp sts par '{.status.updateRevision}')
k set image sts/par c=busybox:2 >/dev/null
wait_for "par new updateRevision" bash -c "[ \"\$('$KUBECTL' get sts par -o jsonpath='{.status.updateRevision}')\" != '$prev' ]"
sleep 2
expect_eq "OnDelete: nothing replaced" "$(k get pods -l app=par -o jsonpath='{.items[*].spec.containers[0].image}')" "busybox:1 busybox:1 busybox:1"
k delete pod par-6 --wait=false >/dev/null
parnew() { [ "$(jp pod par-6 '{.spec.containers[0].image}')" = "busybox:2" ]; }
wait_for "par-6 recreated at the new revision" parnew
expect_eq "par-6 revision" "$(jp pod par-6 '{.metadata.labels.controller-revision-hash}')" "$(jp sts par '{.status.updateRevision}')"
expect_eq "par-5 kept" "$(jp pod par-5 '{.spec.containers[0].image}')" "busybox:1"

echo "statefulset.sh: all checks passed"
