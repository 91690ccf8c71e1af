#!/usr/bin/env bash
# daemonset.sh KPLANE KUBECTL -- the DaemonSet controller with kubectl
# against a `kplane server` with 3 simulated nodes: one pod per node, pinned
# by node affinity and bound by the scheduler; a node joining (a second
# `kplane node` process) gets a pod, a node leaving loses it; a nodeSelector
# picks the matching nodes only, and follows a label change; an image change
# rolls every pod to the new template (controller-revision-hash changes)
# with never more than maxUnavailable=1 of the 3 nodes unavailable (a watch
# samples every pod event); rollout history and undo; a Failed pod is
# replaced on its node; OnDelete replaces only deleted pods; old revisions
# are pruned; the controller's events.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

NODE_PID=
stop_node() {
  if [ -n "$NODE_PID" ] && kill -0 "$NODE_PID" 2>/dev/null; then
    kill -TERM "$NODE_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NODE_PID" 2>/dev/null || true
  fi
  [ -n "$NODE_PID" ] && { wait "$NODE_PID" 2>/dev/null || true; }
  NODE_PID=
}
WATCH_PID=
ds_cleanup() {
  local rc=$?
  set +e # no failing step may end the trap before kp_cleanup runs
  [ -n "$WATCH_PID" ] && { kill "$WATCH_PID" 2>/dev/null || true; wait "$WATCH_PID" 2>/dev/null || true; }
  stop_node
  if [ $rc -ne 0 ] && [ -f "$KP_DIR/node.log" ]; then
    echo "--- extra node log (last 20 lines)"; tail -n 20 "$KP_DIR/node.log"
  fi
  kp_cleanup $rc
}
trap ds_cleanup EXIT

kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

# wait_for WHAT CMD WANT: poll CMD (a shell string) until it prints WANT.
wait_for() {
  local what=$1 cmd=$2 want=$3 got=
  for _ in $(seq 600); do
    got=$(eval "$cmd" 2>/dev/null || true)
    [ "$got" = "$want" ] && return 0
    sleep 0.1
  done
  fail "$what: got '$got', want '$want'"
}

# Live (not terminating) pods of a DaemonSet as "node phase ready hash" lines.
pods_of() {
  kp_curl GET "/api/v1/namespaces/default/pods?labelSelector=app%3D$1" | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if "deletionTimestamp" in p["metadata"]:
        continue
    ready = any(c["type"] == "Ready" and c["status"] == "True"
                for c in p.get("status", {}).get("conditions", []))
    print(p["spec"].get("nodeName", "-"), p.get("status", {}).get("phase", "-"),
          "ready" if ready else "unready", p["metadata"]["labels"].get("controller-revision-hash", "-"))
' | sort
}
# "<count> <distinct nodes> <ready running>" of a DaemonSet's live pods.
summary() {
  pods_of "$1" | awk '{n++; nodes[$1]=1; if ($2=="Running" && $3=="ready") r++}
    END {d=0; for (x in nodes) d++; printf "%d %d %d\n", n, d, r}'
}
ds_status() { k get ds "$1" -o jsonpath="{.status.desiredNumberScheduled} {.status.numberReady}"; }

echo "--- simulated nodes are Ready"
wait_for "ready nodes" "k get nodes --no-headers | grep -c ' Ready '" "3"

echo "--- a DaemonSet runs one pod on each of the 3 nodes"
cat >"$KP_DIR/agent.yaml" <<'YAML'
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: busybox:1.36
YAML
k apply -f "$KP_DIR/agent.yaml" >/dev/null
wait_for "agent pods" "summary agent" "3 3 3"
wait_for "agent status" "ds_status agent" "3 3"
k rollout status ds/agent --timeout=120s >/dev/null
expect_eq "pods on the 3 nodes" "$(pods_of agent | awk '{print $1}' | tr '\n' ' ')" \
  "kplane-node-0 kplane-node-1 kplane-node-2 "
pod=$(k get pods -l app=agent -o jsonpath='{.items[0].metadata.name}')
node=$(k get pod "$pod" -o jsonpath='{.spec.nodeName}')
expect_eq "pinned by node affinity" \
  "$(k get pod "$pod" -o jsonpath='{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}')" \
  "$node"
expect_match "daemon tolerations" "$(k get pod "$pod" -o jsonpath='{.spec.tolerations[*].key}')" \
  "node.kubernetes.io/not-ready.*node.kubernetes.io/unreachable.*node.kubernetes.io/unschedulable"
expect_eq "owner" "$(k get pod "$pod" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" \
  "DaemonSet/agent"
expect_match "pod-template-generation" "$(k get pod "$pod" -o jsonpath='{.metadata.labels.pod-template-generation}')" "^[0-9]+$"
hash1=$(k get pod "$pod" -o jsonpath='{.metadata.labels.controller-revision-hash}')
[ -n "$hash1" ] || fail "no controller-revision-hash label"
expect_eq "one ControllerRevision" "$(k get controllerrevisions -o name | grep -c '/agent-')" "1"
expect_eq "revision named by hash" "$(k get controllerrevision "agent-$hash1" -o jsonpath='{.revision}')" "1"
# The revision's data bytes are Kubernetes' getPatch of the DaemonSet (the
# conformance suite's daemon.Match compares them byte for byte).
kp_curl GET /apis/apps/v1/namespaces/default/daemonsets/agent >"$KP_DIR/ds.json"
kp_curl GET "/apis/apps/v1/namespaces/default/controllerrevisions/agent-$hash1" >"$KP_DIR/rev.json"
python3 "$(dirname "$0")/revision_match.py" "$KP_DIR/ds.json" "$KP_DIR/rev.json" ||
  fail "ControllerRevision data differs from getPatch's bytes"
expect_match "get ds" "$(k get ds agent --no-headers)" "^agent +3 +3 +3 +3 +3 "
st=$(k get ds agent -o jsonpath='{.status.currentNumberScheduled} {.status.updatedNumberScheduled} {.status.numberAvailable} {.status.numberMisscheduled}/{.status.observedGeneration}')
expect_eq "status" "$st" "3 3 3 0/1"

echo "--- a node joins (a second kplane node process): it gets a pod"
"$KP_BIN" node --kubeconfig "$KUBECONFIG" --simulate 1 --name-prefix extra- \
  >"$KP_DIR/node.out" 2>"$KP_DIR/node.log" &
NODE_PID=$!
wait_for "extra node ready" "k get node extra-0 --no-headers | grep -c ' Ready '" "1"
wait_for "agent pods with the new node" "summary agent" "4 4 4"
wait_for "agent status with 4" "ds_status agent" "4 4"
expect_eq "a pod on extra-0" "$(pods_of agent | grep -c '^extra-0 Running ready')" "1"

echo "--- the node leaves (deleted): its pod goes"
stop_node
k delete node extra-0 --ignore-not-found >/dev/null
wait_for "agent pods after the node left" "summary agent" "3 3 3"
wait_for "agent status back to 3" "ds_status agent" "3 3"

echo "--- a nodeSelector matching one node's label: one pod"
k label node kplane-node-1 role=special >/dev/null
sed -e 's/name: agent$/name: special/' -e 's/app: agent/app: special/g' \
  -e 's/      containers:/      nodeSelector: {role: special}\n      containers:/' \
  "$KP_DIR/agent.yaml" >"$KP_DIR/special.yaml"
k apply -f "$KP_DIR/special.yaml" >/dev/null
wait_for "special pods" "summary special" "1 1 1"
wait_for "special status" "ds_status special" "1 1"
expect_eq "on the labelled node" "$(pods_of special | awk '{print $1}')" "kplane-node-1"
echo "--- a second node gets the label, then the first loses it"
k label node kplane-node-2 role=special >/dev/null
wait_for "special on two nodes" "summary special" "2 2 2"
k label node kplane-node-1 role- >/dev/null
wait_for "special back to one" "summary special" "1 1 1"
expect_eq "on the still-labelled node" "$(pods_of special | awk '{print $1}')" "kplane-node-2"
wait_for "special status after relabel" "ds_status special" "1 1"

echo "--- an image change rolls every pod, at most 1 of 3 unavailable"
# curl itself is the background job (exec), so that its pid stops it.
(exec curl -sS -N --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer $KP_TOKEN" \
  "https://127.0.0.1:$KP_PORT/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dagent&timeoutSeconds=180" \
  >"$KP_DIR/events.ndjson") &
WATCH_PID=$!
sleep 0.5
k set image ds/agent agent=busybox:1.37 >/dev/null
k rollout status ds/agent --timeout=180s >/dev/null
wait_for "agent pods after the rollout" "summary agent" "3 3 3"
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
WATCH_PID=
hash2=$(k get ds agent -o jsonpath='{.status.updatedNumberScheduled}')
expect_eq "updated" "$hash2" "3"
hashes=$(pods_of agent | awk '{print $4}' | sort -u)
[ "$hashes" != "$hash1" ] || fail "controller-revision-hash did not change"
expect_eq "one new hash on every pod" "$(printf '%s\n' "$hashes" | wc -l | tr -d ' ')" "1"
expect_eq "new image" "$(k get pods -l app=agent -o jsonpath='{.items[*].spec.containers[0].image}')" \
  "busybox:1.37 busybox:1.37 busybox:1.37"
expect_eq "two ControllerRevisions" "$(k get controllerrevisions -o name | grep -c '/agent-')" "2"
expect_eq "new revision 2" "$(k get controllerrevision "agent-$hashes" -o jsonpath='{.revision}')" "2"
python3 - "$KP_DIR/events.ndjson" <<'PY'
import json, sys
pods, n, started, worst, replaced = {}, 0, False, 0, set()
nodes = ["kplane-node-0", "kplane-node-1", "kplane-node-2"]
first_hash = None
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
    # A node is available when it has a live (not terminating) Ready pod.
    avail = set()
    for p in pods.values():
        if "deletionTimestamp" in p["metadata"]:
            continue
        st = p.get("status", {})
        if st.get("phase") == "Running" and any(
                c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions", [])):
            avail.add(p["spec"].get("nodeName"))
        replaced.add(p["metadata"]["labels"].get("controller-revision-hash"))
    unavailable = sum(1 for x in nodes if x not in avail)
    if unavailable == 0:
        started = True  # the watch began with all 3 available
    if started:
        worst = max(worst, unavailable)
print("events", n, "max unavailable", worst, "hashes seen", len(replaced))
if n < 9 or worst != 1 or len(replaced) != 2:
    sys.exit("FAIL: rolling update: %d events, at most %d of 3 unavailable (want exactly 1), "
             "%d hashes (want 2)" % (n, worst, len(replaced)))
PY

echo "--- rollout history and undo: back to the first revision's hash"
expect_eq "history" "$(k rollout history ds/agent | awk '$1 ~ /^[0-9]+$/ {print $1}' | tr '\n' ' ')" "1 2 "
k rollout undo ds/agent >/dev/null
k rollout status ds/agent --timeout=180s >/dev/null
wait_for "agent pods after undo" "summary agent" "3 3 3"
expect_eq "first hash again" "$(pods_of agent | awk '{print $4}' | sort -u)" "$hash1"
expect_eq "revision renumbered" "$(k get controllerrevision "agent-$hash1" -o jsonpath='{.revision}')" "3"
k set image ds/agent agent=busybox:1.37 >/dev/null
k rollout status ds/agent --timeout=180s >/dev/null
wait_for "agent pods rolled forward" "summary agent" "3 3 3"

echo "--- a Failed pod is deleted and replaced on its node"
victim=$(k get pods -l app=agent --field-selector spec.nodeName=kplane-node-1 -o jsonpath='{.items[0].metadata.name}')
k patch pod "$victim" --subresource=status --type=merge -p '{"status":{"phase":"Failed"}}' >/dev/null
wait_for "victim gone" "k get pod $victim -o name 2>/dev/null | wc -l" "0"
wait_for "replacement on kplane-node-1" \
  "k get pods -l app=agent --field-selector spec.nodeName=kplane-node-1,status.phase=Running -o name | wc -l" "1"
expect_match "FailedDaemonPod event" "$(k get events --field-selector reason=FailedDaemonPod -o jsonpath='{.items[*].message}')" \
  "Found failed daemon pod default/$victim on node kplane-node-1, will try to kill it"
wait_for "agent pods after the failure" "summary agent" "3 3 3"

echo "--- OnDelete: a template change replaces only deleted pods"
k patch ds agent --type=merge -p '{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}' >/dev/null
k set image ds/agent agent=busybox:1.38 >/dev/null
wait_for "observed" "k get ds agent -o jsonpath='{.status.observedGeneration}'" \
  "$(k get ds agent -o jsonpath='{.metadata.generation}')"
sleep 2
expect_eq "nothing replaced yet" "$(k get pods -l app=agent -o jsonpath='{.items[*].spec.containers[0].image}')" \
  "busybox:1.37 busybox:1.37 busybox:1.37"
expect_eq "updatedNumberScheduled 0 (omitted)" "$(k get ds agent -o jsonpath='{.status.updatedNumberScheduled}')" ""
victim=$(k get pods -l app=agent --field-selector spec.nodeName=kplane-node-0 -o jsonpath='{.items[0].metadata.name}')
k delete pod "$victim" --wait=false >/dev/null
wait_for "replaced with the new template" \
  "k get pods -l app=agent --field-selector spec.nodeName=kplane-node-0 -o jsonpath='{.items[*].spec.containers[0].image}'" \
  "busybox:1.38"
wait_for "one updated" "k get ds agent -o jsonpath='{.status.updatedNumberScheduled} {.status.numberReady}'" "1 3"

echo "--- revisionHistoryLimit 0: old revisions no pod uses are pruned"
expect_eq "three revisions" "$(k get controllerrevisions -o name | grep -c '/agent-')" "3"
k patch ds agent --type=merge -p '{"spec":{"revisionHistoryLimit":0}}' >/dev/null
wait_for "pruned to the two in use" "k get controllerrevisions -o name | grep -c '/agent-'" "2"
expect_eq "first revision pruned" "$(k get controllerrevision "agent-$hash1" -o name --ignore-not-found)" ""

echo "--- describe shows the controller's events"
ev=$(k describe ds agent)
expect_match "SuccessfulCreate" "$ev" "SuccessfulCreate"
expect_match "SuccessfulDelete" "$ev" "SuccessfulDelete"

echo "--- a DaemonSet being deleted is left alone"
k delete ds special --wait=false >/dev/null
wait_for "special gone" "k get ds -o name | grep -c special" "0"
echo "daemonset.sh: all checks passed"
