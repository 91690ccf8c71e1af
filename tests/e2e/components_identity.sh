#!/usr/bin/env bash
# components_identity.sh KPLANE KUBECTL -- the components act as themselves,
# with the bootstrap roles and no more: a scheduler run apart with the
# kubeconfig kplane server writes for it (system:kube-scheduler) schedules
# pods and is refused what its role does not allow; the controllers in
# kplane server are their ServiceAccounts in kube-system; the controller
# manager's kubeconfig is system:kube-controller-manager.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

# The audit log says who made each pod and bound it.
cat >"$KP_DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [pods, pods/binding]}]
- level: None
EOF
kp_start --nodes 2 --no-scheduler --audit-policy-file "$KP_DIR/audit-policy.yaml" \
  --audit-log-path "$KP_DIR/audit.log"
k() { "$KUBECTL" "$@"; }
D=$KP_DIR/data
ks() { "$KUBECTL" --kubeconfig "$D/scheduler.kubeconfig" "$@"; }
kc() { "$KUBECTL" --kubeconfig "$D/controller-manager.kubeconfig" "$@"; }

echo "--- the components' kubeconfigs"
expect_eq "scheduler" "$(ks auth whoami -o jsonpath='{.status.userInfo.username}')" \
  "system:kube-scheduler"
expect_eq "controller manager" "$(kc auth whoami -o jsonpath='{.status.userInfo.username}')" \
  "system:kube-controller-manager"
expect_eq "mode" "$(stat -c %a "$D/scheduler.kubeconfig")" 600

echo "--- the scheduler's role allows binding pods, and nothing like deleting a namespace"
expect_eq "can bind" "$(ks auth can-i create pods --subresource=binding)" "yes"
out=$(ks delete namespace default 2>&1) && fail "the scheduler deleted a namespace"
expect_eq "refused" "$out" \
  'Error from server (Forbidden): namespaces "default" is forbidden: User "system:kube-scheduler" cannot delete resource "namespaces" in API group "" in the namespace "default"'
out=$(ks get secrets -A 2>&1) && fail "the scheduler listed secrets"
expect_match "no secrets" "$out" 'User "system:kube-scheduler" cannot list resource "secrets"'
out=$(ks create deployment x --image=x 2>&1) && fail "the scheduler created a deployment"
expect_match "no deployments" "$out" 'cannot create resource "deployments"'
out=$(kc delete namespace default 2>&1) && fail "the controller manager deleted a namespace"
expect_match "the manager reads, it does not delete" "$out" \
  'User "system:kube-controller-manager" cannot delete resource "namespaces"'

echo "--- a scheduler run apart, as system:kube-scheduler, schedules pods"
"$KP_BIN" scheduler --kubeconfig "$D/scheduler.kubeconfig" >"$KP_DIR/sched.out" 2>"$KP_DIR/sched.log" &
SCHED=$!
trap 'kill $SCHED 2>/dev/null || true; kp_cleanup' EXIT
k create deployment web --image=nginx --replicas=4 >/dev/null
for _ in $(seq 200); do
  [ "$(k get pods -l app=web --field-selector spec.nodeName!= --no-headers 2>/dev/null | wc -l)" = 4 ] && break
  sleep 0.05
done
expect_eq "pods bound by it" \
  "$(k get pods -l app=web --field-selector spec.nodeName!= --no-headers | wc -l)" "4"
! grep -qi "forbidden\|403" "$KP_DIR/sched.log" || fail "the scheduler was refused: $(grep -i forbidden "$KP_DIR/sched.log" | head -3)"
# Who did it, by the audit log: the ReplicaSet controller made the pods as
# its ServiceAccount, the scheduler bound them as itself.
who=$(/usr/bin/python3 - "$KP_DIR/audit.log" <<'PY'
import json, sys
makers, binders = set(), set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    ref = e.get("objectRef", {})
    if e["stage"] != "ResponseComplete" or ref.get("resource") != "pods":
        continue
    if e["responseStatus"]["code"] != 201:
        continue
    (binders if ref.get("subresource") == "binding" else makers).add(e["user"]["username"])
print(",".join(sorted(makers)) + " / " + ",".join(sorted(binders)))
PY
)
expect_eq "who made and bound the pods" "$who" \
  "system:serviceaccount:kube-system:replicaset-controller / system:kube-scheduler"
kill "$SCHED"
wait "$SCHED" 2>/dev/null || true

echo "--- the controllers are their ServiceAccounts"
sas=$(k get sa -n kube-system -o name)
for sa in replicaset-controller deployment-controller namespace-controller node-controller \
  generic-garbage-collector job-controller; do
  grep -qx "serviceaccount/$sa" <<<"$sas" || fail "no ServiceAccount $sa: $sas"
done
# Their tokens work and their roles are what they may do: the
# replicaset-controller may create pods but not delete a deployment.
T=$(k create token replicaset-controller -n kube-system)
kr() { "$KUBECTL" --kubeconfig "$KP_NOUSER" --token "$T" "$@"; }
expect_eq "replicaset-controller creates pods" "$(kr auth can-i create pods -n default)" "yes"
expect_eq "but deletes no deployment" "$(kr auth can-i delete deployments.apps -n default || true)" "no"
# (The refusals this test asked for as the scheduler and the manager are
# logged too; the controllers and nodes must have none.)
! grep -Eq 'a component was refused: User "(system:serviceaccount|kplane:node)' "$KP_DIR/server.log" ||
  fail "a controller or node was refused: $(grep "a component was refused" "$KP_DIR/server.log" | head -3)"
kp_stop
echo "PASS"
