#!/usr/bin/env bash
# rbac.sh KPLANE KUBECTL -- who may do what, as on a Kubernetes cluster:
# users from --token-auth-file under the RBAC authorizer and the bootstrap
# policy; Kubernetes' Forbidden text; kubectl auth can-i (with --list and
# --as) and whoami; resourceNames; the escalation and bind checks;
# aggregation into view; impersonation checked; access reviews; anonymous
# requests; --authorization-mode=AlwaysAllow and --anonymous-auth=false.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

TOKENS="$KP_DIR/tokens.csv"
cat >"$TOKENS" <<'CSV'
jane-token-0123456789,jane,2001,"devs"
vic-token-0123456789,vic,2002
node1-token-0123456789,system:node:n1,3001,"system:nodes"
CSV
kp_start --nodes 0 --no-scheduler --token-auth-file "$TOKENS"
k() { "$KUBECTL" "$@"; }
kj() { "$KUBECTL" --kubeconfig "$KP_NOUSER" --token jane-token-0123456789 "$@"; }
kv() { "$KUBECTL" --kubeconfig "$KP_NOUSER" --token vic-token-0123456789 "$@"; }
# Until the authorizer's snapshot shows a change (it follows the watch
# caches): wait_can USER-FN ARGS...
wait_can() {
  local fn=$1
  shift
  for _ in $(seq 100); do "$fn" auth can-i "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
  fail "never allowed: $*"
}

echo "--- the bootstrap policy is there"
for r in cluster-admin admin edit view system:discovery system:basic-user system:public-info-viewer; do
  k get clusterrole "$r" -o name >/dev/null || fail "no ClusterRole $r"
done
expect_eq "masters bound to cluster-admin" \
  "$(k get clusterrolebinding cluster-admin -o jsonpath='{.subjects[0].kind}/{.subjects[0].name}')" \
  "Group/system:masters"

echo "--- whoami: the admin, a token user, an impersonated user"
expect_match "admin" "$(k auth whoami)" 'Groups +\[system:masters system:authenticated\]'
who=$(kj auth whoami -o jsonpath='{.status.userInfo.username}/{.status.userInfo.uid}/{.status.userInfo.groups}')
expect_eq "jane" "$who" 'jane/2001/["devs","system:authenticated"]'
# A certificate the cluster CA signed: its CN and O's.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$KP_DIR/carl.key" \
  -out "$KP_DIR/carl.csr" -subj '/O=qa/O=ops/CN=carl' 2>/dev/null
printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n' >"$KP_DIR/carl.ext"
openssl x509 -req -in "$KP_DIR/carl.csr" -CA "$KP_DIR/data/ca.crt" -CAkey "$KP_DIR/data/ca.key" \
  -CAcreateserial -out "$KP_DIR/carl.crt" -days 1 -extfile "$KP_DIR/carl.ext" 2>/dev/null
who=$("$KUBECTL" --kubeconfig "$KP_NOUSER" --client-certificate "$KP_DIR/carl.crt" \
  --client-key "$KP_DIR/carl.key" auth whoami -o jsonpath='{.status.userInfo.username}/{.status.userInfo.groups}')
expect_eq "a certificate user" "$who" 'carl/["qa","ops","system:authenticated"]'
who=$(k auth whoami --as bob --as-group g1 -o jsonpath='{.status.userInfo.username}/{.status.userInfo.groups}')
expect_eq "as bob" "$who" 'bob/["g1","system:authenticated"]'

echo "--- a user bound to view: Kubernetes' Forbidden text on create"
k create namespace team >/dev/null
k create rolebinding jane-view -n team --clusterrole view --user jane >/dev/null
wait_can kj get pods -n team
kj get pods -n team >/dev/null
out=$(kj create configmap x -n team --from-literal=a=b 2>&1) && fail "view created a configmap"
expect_eq "forbidden text" "$out" \
  'error: failed to create configmap: configmaps is forbidden: User "jane" cannot create resource "configmaps" in API group "" in the namespace "team"'
out=$(kj get pods -n default 2>&1) && fail "a RoleBinding in team reached default"
expect_eq "other namespace" "$out" \
  'Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"'
# What kubectl prints for view: the rows of Kubernetes' aggregated view
# role, system:basic-user, system:discovery and system:public-info-viewer
# (rbac_view_list.expected; the duplicate health rows are Kubernetes' own:
# two roles grant them).
"$KUBECTL" auth can-i --list -n team --as jane >"$KP_DIR/view.txt"
diff -u "$(dirname "$0")/rbac_view_list.expected" "$KP_DIR/view.txt" ||
  fail "can-i --list for view differs"
out=$(kj get secrets -n team 2>&1) && fail "view read secrets"
expect_match "view has no secrets" "$out" 'cannot list resource "secrets"'

echo "--- can-i, with and without --as"
expect_eq "can-i as admin" "$(k auth can-i create deployments)" "yes"
expect_eq "can-i --as jane" "$(k auth can-i create deployments -n team --as jane || true)" "no"
expect_eq "can-i list pods as jane" "$(k auth can-i list pods -n team --as jane)" "yes"
expect_eq "jane asks herself" "$(kj auth can-i watch deployments.apps -n team)" "yes"
k create rolebinding jane-edit -n team --clusterrole edit --group devs >/dev/null
wait_can kj create deployments -n team
expect_eq "edit by group" "$(k auth can-i create deployments -n team --as jane --as-group devs)" "yes"
list=$(kj auth can-i --list -n team)
expect_match "--list: basic-user" "$list" 'selfsubjectaccessreviews.authorization.k8s.io +\[\] +\[\] +\[create\]'
expect_match "--list: edit" "$list" 'deployments.apps +\[\] +\[\] +\[get list watch create delete deletecollection patch update\]'
expect_match "--list: discovery" "$list" '\[/api/\*\] +\[\] +\[get\]'

echo "--- resourceNames: one configmap, exactly"
k create configmap one -n team --from-literal=a=1 >/dev/null
k create configmap two -n team --from-literal=a=2 >/dev/null
k create role get-one -n team --verb get --resource configmaps --resource-name one >/dev/null
k create rolebinding vic-one -n team --role get-one --user vic >/dev/null
wait_can kv get configmaps/one -n team
kv get configmap one -n team -o name >/dev/null
out=$(kv get configmap two -n team 2>&1) && fail "vic read configmap two"
expect_match "another name" "$out" 'configmaps "two" is forbidden: User "vic" cannot get resource "configmaps"'
out=$(kv get configmaps -n team 2>&1) && fail "vic listed configmaps"
expect_match "no list" "$out" 'cannot list resource "configmaps"'
# A list narrowed to the one name is allowed, as Kubernetes reads the
# fieldSelector's metadata.name (but the role grants get, not list).
expect_eq "field-selected list needs list" \
  "$(k auth can-i list configmaps/one -n team --as vic || true)" "no"

echo "--- escalation: no role granting more than one holds, unless escalate/bind"
k create role rbac-writer -n team --verb get,list,create,update,delete \
  --resource roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io >/dev/null
k create rolebinding vic-rbac -n team --role rbac-writer --user vic >/dev/null
wait_can kv create roles -n team
kv create role ok -n team --verb get --resource configmaps --resource-name one >/dev/null
out=$(kv create role more -n team --verb get,delete --resource secrets 2>&1) && fail "vic escalated"
expect_eq "escalation refused" "$out" 'Error from server (Forbidden): roles.rbac.authorization.k8s.io "more" is forbidden: user "vic" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}'
out=$(kv create rolebinding vic-admin -n team --clusterrole admin --user vic 2>&1) &&
  fail "vic bound himself to admin"
expect_match "bind refused" "$out" 'rolebindings.rbac.authorization.k8s.io "vic-admin" is forbidden: user "vic"'
k create role binder -n team --verb bind --resource clusterroles.rbac.authorization.k8s.io \
  --resource-name view >/dev/null
k create rolebinding vic-binder -n team --role binder --user vic >/dev/null
wait_can kv bind clusterroles/view -n team
kv create rolebinding vic-view -n team --clusterrole view --user vic >/dev/null
k create role escalator -n team --verb escalate --resource roles.rbac.authorization.k8s.io >/dev/null
k create rolebinding vic-escalator -n team --role escalator --user vic >/dev/null
wait_can kv escalate roles -n team
kv create role more -n team --verb get,delete --resource secrets >/dev/null

echo "--- aggregation: a labelled ClusterRole's rules reach view within a second"
cat <<'EOF' | k apply -f - >/dev/null
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
t0=$(date +%s%N)
cat <<'EOF' | k apply -f - >/dev/null
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-view
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- apiGroups: [example.com]
  resources: [widgets]
  verbs: [get, list, watch]
EOF
for _ in $(seq 200); do
  k get clusterrole view -o jsonpath='{.rules[*].apiGroups}' | grep -q example.com && break
  sleep 0.01
done
ms=$((($(date +%s%N) - t0) / 1000000))
k get clusterrole view -o jsonpath='{.rules[*].apiGroups}' | grep -q example.com ||
  fail "view never gained the widgets rule"
echo "    view aggregated the new rule in ${ms} ms"
[ "$ms" -le 1000 ] || fail "aggregation took ${ms} ms"
wait_can kj list widgets.example.com -n team
k delete clusterrole widgets-view >/dev/null
for _ in $(seq 200); do
  k get clusterrole view -o jsonpath='{.rules[*].apiGroups}' | grep -q example.com || break
  sleep 0.01
done
k get clusterrole view -o jsonpath='{.rules[*].apiGroups}' | grep -q example.com &&
  fail "view kept the rule of a deleted role"

echo "--- impersonation needs the impersonate verb"
out=$(kj get pods -n team --as vic 2>&1) && fail "jane impersonated vic"
expect_eq "impersonate refused" "$out" \
  'Error from server (Forbidden): users "vic" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the cluster scope'
k create clusterrole imp-vic --verb impersonate --resource users --resource-name vic >/dev/null
k create clusterrolebinding jane-imp-vic --clusterrole imp-vic --user jane >/dev/null
wait_can kj impersonate users/vic
expect_eq "jane as vic" "$(kj auth whoami --as vic -o jsonpath='{.status.userInfo.username}')" "vic"
out=$(kj get pods -n team --as vic --as-group devs 2>&1) && fail "jane impersonated a group"
expect_match "group refused" "$out" 'cannot impersonate resource "groups"'

echo "--- access reviews"
cat >"$KP_DIR/sar.yaml" <<'EOF'
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: vic
  resourceAttributes: {namespace: team, verb: get, resource: configmaps, name: one}
EOF
expect_eq "SAR allowed" "$(k create -f "$KP_DIR/sar.yaml" -o jsonpath='{.status.allowed}')" "true"
sed -i 's/user: vic/user: nobody/' "$KP_DIR/sar.yaml"
expect_eq "SAR denied" "$(k create -f "$KP_DIR/sar.yaml" -o jsonpath='{.status.allowed}')" "false"
cat >"$KP_DIR/lsar.yaml" <<'EOF'
apiVersion: authorization.k8s.io/v1
kind: LocalSubjectAccessReview
metadata: {namespace: team}
spec:
  user: jane
  groups: [devs]
  resourceAttributes: {verb: create, group: apps, resource: deployments}
EOF
expect_eq "LSAR" "$(k create -f "$KP_DIR/lsar.yaml" -o jsonpath='{.status.allowed}')" "true"
out=$(k create -f - -o json 2>&1 <<'EOF'
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec: {resourceAttributes: {verb: get, resource: pods}}
EOF
) && fail "a SAR with no user or group was answered"
expect_match "SAR needs a subject" "$out" 'spec.user: Required value'

echo "--- a node (Node authorizer, NodeRestriction): its own objects only"
kn() { "$KUBECTL" --kubeconfig "$KP_NOUSER" --token node1-token-0123456789 "$@"; }
api() { # METHOD PATH BODY: code and body, as node n1
  curl -sS --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer node1-token-0123456789" \
    -X "$1" -H 'Content-Type: application/merge-patch+json' -d "$3" -w ' %{http_code}' \
    "https://127.0.0.1:$KP_PORT$2"
}
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n' | kn create -f - >/dev/null
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n' | k create -f - >/dev/null
expect_match "own status" "$(api PATCH /api/v1/nodes/n1/status '{"status":{"capacity":{"cpu":"2"}}}')" ' 200$'
out=$(api PATCH /api/v1/nodes/n2/status '{"status":{"capacity":{"cpu":"2"}}}')
expect_match "another node's status" "$out" \
  'nodes \\"n2\\" is forbidden: node \\"n1\\" is not allowed to modify node \\"n2\\".* 403$'
out=$(printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n3}\n' | kn create -f - 2>&1) &&
  fail "n1 registered n3"
expect_match "another node" "$out" 'node "n1" is not allowed to modify node "n3"'
k create secret generic n1-secret -n team --from-literal=a=b >/dev/null
out=$(kn get secret n1-secret -n team 2>&1) && fail "n1 read a secret no pod of it uses"
expect_match "unrelated secret" "$out" "no relationship found between node 'n1' and this object"
k run uses-secret -n team --image=x --overrides='{"spec":{"nodeName":"n1","volumes":[{"name":"v","secret":{"secretName":"n1-secret"}}],"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"v","mountPath":"/s"}]}]}}' >/dev/null
kn get secret n1-secret -n team -o name >/dev/null
k run elsewhere -n team --image=x --overrides='{"spec":{"nodeName":"n2"}}' >/dev/null
out=$(kn delete pod elsewhere -n team --wait=false 2>&1) && fail "n1 deleted n2's pod"
expect_match "another node's pod" "$out" 'node "n1" can only delete pods with spec.nodeName set to itself'
kn delete pod uses-secret -n team --wait=false >/dev/null
out=$(api PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2 '{}')
expect_match "another node's lease" "$out" ' 403$'

echo "--- anonymous: health and version, nothing else"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" "https://127.0.0.1:$KP_PORT$1"; }
expect_eq "anonymous /healthz" "$(code /healthz)" "200"
expect_eq "anonymous /version" "$(code /version)" "200"
expect_eq "anonymous /api" "$(code /api)" "403"
expect_eq "anonymous pods" "$(code /api/v1/pods)" "403"
kp_stop

echo "--- --anonymous-auth=false: 401 without credentials; AlwaysAllow: everything"
kp_start "${KP_API_ONLY[@]}" --token-auth-file "$TOKENS" --anonymous-auth=false \
  --authorization-mode AlwaysAllow
expect_eq "no anonymous /healthz" "$(code /healthz)" "401"
kj create namespace by-jane >/dev/null
expect_eq "AlwaysAllow" "$(kj auth can-i '*' '*')" "yes"
kp_stop
out=$("$KP_BIN" server --data-dir "$KP_DIR/bad" --listen 127.0.0.1:0 --authorization-mode RBAC,ABAC 2>&1) &&
  fail "an unknown mode started"
expect_match "unknown mode" "$out" 'unknown authorization mode "ABAC"'
echo "PASS"
