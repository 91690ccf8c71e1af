#!/usr/bin/env bash
# nodefail.sh KPLANE KUBECTL -- a machine fails and comes back, as a user
# sees it with kubectl: `kplane server` with 2 simulated nodes plus a third
# in a `kplane node` process of its own; a Deployment of 6 spreads over the
# three; the node process is killed (-9): its Node goes Ready Unknown
# (NodeStatusUnknown) and is tainted node.kubernetes.io/unreachable
# (NoExecute and NoSchedule); its pods, which got the default 2 s
# tolerations at creation (DefaultTolerationSeconds admission), are marked
# for deletion (TaintManagerEviction) and replaced on the healthy nodes until
# the Deployment has 6 ready pods again; a pod that tolerates unreachable
# forever stays. The node process restarts under the same name: the Node is
# Ready again, untainted, and finishes the deletion of its old pods.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
k() { "$KUBECTL" "$@"; }

NODE_PID=
node_stop() {
  if [ -n "$NODE_PID" ]; then
    kill -KILL "$NODE_PID" 2>/dev/null || true
    wait "$NODE_PID" 2>/dev/null || true
  fi
  NODE_PID=
}
nf_cleanup() {
  local rc=$?
  set +e
  node_stop
  if [ $rc -ne 0 ] && [ -f "$KP_DIR/node.log" ]; then
    echo "--- node log (last 20 lines)"; tail -n 20 "$KP_DIR/node.log"
  fi
  kp_cleanup $rc
}
trap nf_cleanup EXIT

# Short periods so that the test takes seconds: leases renewed every 0.5 s,
# a node silent for 4 s is unreachable, pods tolerate that for 2 s.
kp_start --nodes 2 --node-lease-duration-seconds 2 \
  --node-monitor-grace-period 4s --node-monitor-period 1s \
  --default-unreachable-toleration-seconds 2 --default-not-ready-toleration-seconds 2

node_start() {
  "$KP_BIN" node --kubeconfig "$KUBECONFIG" --simulate 1 --name-prefix extra- \
    --node-lease-duration-seconds 2 >>"$KP_DIR/node.out" 2>>"$KP_DIR/node.log" &
  NODE_PID=$!
}
node_start

ready_of() { k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true; }
taints_of() { k get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect} {end}' 2>/dev/null || true; }
# wait_for WHAT CMD...: poll CMD until it succeeds (60 s).
wait_for() {
  local what=$1
  shift
  for _ in $(seq 300); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  fail "timed out waiting for: $what"
}

echo "--- three nodes Ready"
three_ready() { [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ]; }
wait_for "3 Ready nodes" three_ready
expect_eq "extra node ready" "$(ready_of extra-0)" "True"
expect_eq "extra node untainted" "$(taints_of extra-0)" ""

echo "--- DefaultTolerationSeconds admission"
k run probe --image=nginx:1.25 >/dev/null
tols=$(k get pod probe -o jsonpath='{range .spec.tolerations[*]}{.key}/{.operator}/{.effect}/{.tolerationSeconds} {end}')
expect_eq "default tolerations" "$tols" \
  "node.kubernetes.io/not-ready/Exists/NoExecute/2 node.kubernetes.io/unreachable/Exists/NoExecute/2 "
# An update without them gets them back (the admission runs on updates too).
# The pod is being scheduled and started meanwhile: a replace that meets a
# newer version gets 409 Conflict, and is read and sent again, as users do.
replaced=
for _ in $(seq 10); do
  if k get pod probe -o json |
    python3 -c 'import json,sys; p=json.load(sys.stdin); del p["spec"]["tolerations"]; print(json.dumps(p))' |
    k replace -f - >/dev/null 2>"$KP_DIR/replace.err"; then
    replaced=1
    break
  fi
  grep -q Conflict "$KP_DIR/replace.err" || fail "replace: $(cat "$KP_DIR/replace.err")"
done
[ -n "$replaced" ] || fail "replace kept meeting conflicts: $(cat "$KP_DIR/replace.err")"
expect_eq "default tolerations after replace" \
  "$(k get pod probe -o jsonpath='{range .spec.tolerations[*]}{.key}/{.tolerationSeconds} {end}')" \
  "node.kubernetes.io/not-ready/2 node.kubernetes.io/unreachable/2 "
k delete pod probe --wait=false >/dev/null

# A pod bound to the extra node that tolerates unreachable forever: it only
# gets the not-ready default, and it stays when the node fails.
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: stayer
spec:
  nodeName: extra-0
  tolerations:
  - key: node.kubernetes.io/unreachable
    operator: Exists
    effect: NoExecute
  containers:
  - name: c
    image: nginx:1.25
YAML
tols=$(k get pod stayer -o jsonpath='{range .spec.tolerations[*]}{.key}/{.tolerationSeconds} {end}')
expect_eq "own toleration kept, not-ready added" "$tols" \
  "node.kubernetes.io/unreachable/ node.kubernetes.io/not-ready/2 "

echo "--- a Deployment of 6 over the three nodes"
k create deployment web --image=nginx:1.25 --replicas=6 >/dev/null
k rollout status deploy/web --timeout=90s >/dev/null
on_extra=$(k get pods -l app=web -o wide --no-headers | awk '$7 == "extra-0" {print $1}')
n_extra=$(printf '%s\n' "$on_extra" | grep -c . || true)
echo "pods on extra-0: $n_extra"
[ "$n_extra" -ge 1 ] || fail "no web pod on extra-0: $(k get pods -o wide)"
pod_tols=$(k get pod $(printf '%s\n' "$on_extra" | head -1) -o jsonpath='{.spec.tolerations[?(@.key=="node.kubernetes.io/unreachable")].tolerationSeconds}')
expect_eq "replica's unreachable toleration" "$pod_tols" "2"

echo "--- kill -9 the node process"
node_stop
unknown() { [ "$(ready_of extra-0)" = Unknown ]; }
wait_for "extra-0 Ready Unknown" unknown
cond=$(k get node extra-0 -o jsonpath='{range .status.conditions[*]}{.type}={.status}/{.reason}/{.message}{"\n"}{end}')
for t in Ready MemoryPressure DiskPressure PIDPressure; do
  expect_match "$t condition" "$(printf '%s\n' "$cond" | grep "^$t=")" \
    "^$t=Unknown/NodeStatusUnknown/Kubelet stopped posting node status\.$"
done
tainted() {
  local t
  t=$(taints_of extra-0)
  [[ "$t" == *"node.kubernetes.io/unreachable:NoExecute"* ]] &&
    [[ "$t" == *"node.kubernetes.io/unreachable:NoSchedule"* ]]
}
wait_for "extra-0 tainted unreachable" tainted
expect_match "NoExecute taint has timeAdded" \
  "$(k get node extra-0 -o jsonpath='{.spec.taints[?(@.effect=="NoExecute")].timeAdded}')" \
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
expect_match "kubectl describe node" "$(k describe node extra-0)" \
  'Taints: +node.kubernetes.io/unreachable:NoExecute'
expect_eq "other nodes healthy" "$(k get nodes --no-headers | grep -c ' Ready ')" "2"

echo "--- its pods are marked for deletion and replaced"
all_marked() {
  local p
  for p in $on_extra; do
    [ -n "$(k get pod "$p" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null || echo gone)" ] || return 1
  done
}
wait_for "pods on extra-0 marked for deletion" all_marked
events=$(k get events --field-selector reason=TaintManagerEviction -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
for p in $on_extra; do
  expect_match "eviction event of $p" "$events" "^Marking for deletion Pod default/$p$"
done
# Each from the component Kubernetes names (kubectl describe's From column).
expect_match "eviction events' source" \
  "$(k get events --field-selector reason=TaintManagerEviction -o jsonpath='{.items[0].source.component}')" \
  '^taint-eviction-controller$'
expect_match "NodeNotReady event's source" \
  "$(k get events -A --field-selector reason=NodeNotReady -o jsonpath='{.items[0].source.component}')" \
  '^node-controller$'
recovered() {
  local ready avail healthy
  ready=$(k get deploy web -o jsonpath='{.status.readyReplicas}')
  avail=$(k get deploy web -o jsonpath='{.status.availableReplicas}')
  # Ready pods not being deleted, on the healthy nodes.
  healthy=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{.spec.nodeName}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    awk -F'|' '$1 == "" && $2 != "extra-0" && $3 == "True"' | wc -l)
  [ "$ready" = 6 ] && [ "$avail" = 6 ] && [ "$healthy" = 6 ]
}
wait_for "Deployment back to 6 ready pods on healthy nodes" recovered
expect_match "deployment" "$(k get deploy web --no-headers)" '^web +6/6 +6 +6 '
expect_eq "no replacement on extra-0" \
  "$(k get pods -l app=web -o jsonpath='{range .items[?(@.spec.nodeName=="extra-0")]}{.metadata.deletionTimestamp}{"\n"}{end}' | grep -c '^$' || true)" "0"
expect_eq "forever-tolerating pod stays" \
  "$(k get pod stayer -o jsonpath='{.metadata.deletionTimestamp}')" ""

echo "--- the node process comes back under the same name"
node_start
back() {
  [ "$(ready_of extra-0)" = True ] && [ -z "$(taints_of extra-0)" ]
}
wait_for "extra-0 Ready and untainted" back
expect_eq "three nodes Ready" "$(k get nodes --no-headers | grep -c ' Ready ')" "3"
finished() {
  local p
  for p in $on_extra; do
    k get pod "$p" >/dev/null 2>&1 && return 1
  done
  return 0
}
wait_for "the returning node finishes its evicted pods' deletion" finished
expect_eq "stayer still there" "$(k get pod stayer -o jsonpath='{.spec.nodeName}')" "extra-0"
expect_match "deployment still 6" "$(k get deploy web --no-headers)" '^web +6/6 +6 +6 '
echo "PASS"
