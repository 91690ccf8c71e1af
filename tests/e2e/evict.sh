#!/usr/bin/env bash
# evict.sh KPLANE KUBECTL -- pods/eviction and Kubernetes' Status details, with
# a `kplane server` running its controllers, scheduler and 3 simulated nodes:
# `kubectl drain NODE --ignore-daemonsets` cordons the node and evicts every
# pod on it, their ReplicaSet recreates them on the other nodes; an eviction
# (or a DELETE) under dryRun leaves the pod; an eviction of a missing pod is
# Kubernetes' 404 with details, byte for byte; the Eviction must name the
# URL's pod; `kubectl debug` (1.32) gets a clear error, not a panic (it reads
# details.name of the 404 for pods/ephemeralcontainers).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

ready_nodes() { [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ]; }
# Pods of the Deployment (names), on node $1 or on every node.
pods_on() {
  k get pods -l app=web --no-headers -o custom-columns=N:.metadata.name,NODE:.spec.nodeName |
    awk -v n="${1:-}" 'n == "" || $2 == n { print $1 }' | sort
}
six_available() {
  [ "$(k get deploy web -o jsonpath='{.status.availableReplicas}')" = 6 ] &&
    [ "$(k get pods -l app=web --no-headers | grep -c ' Running ')" = 6 ]
}
# evict POD [QUERY] [DELETEOPTIONS]: POST an Eviction; prints the body, then
# the HTTP code on the last line.
evict() {
  local body='{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"'$1'"}'
  [ -n "${3:-}" ] && body+=',"deleteOptions":'$3
  kp_curl POST "/api/v1/namespaces/default/pods/$1/eviction${2:-}" \
    -H 'Content-Type: application/json' -d "$body}" -w '\n%{http_code}'
}

kp_wait_for "3 Ready nodes" 20 ready_nodes

echo "--- discovery names pods/eviction as policy/v1 Eviction (what kubectl drain checks)"
expect_match "discovery" "$(kp_curl GET /api/v1)" \
  '"name":"pods/eviction","singularName":"[a-z]*","namespaced":true,"group":"policy","version":"v1","kind":"Eviction"'

echo "--- a Deployment of 6 over the 3 nodes"
k create deployment web --image=nginx:1.25 --replicas=6 >/dev/null
k rollout status deploy/web --timeout=60s >/dev/null
kp_wait_for "6 running" 30 six_available
NODE=$(k get pods -l app=web -o jsonpath='{.items[0].spec.nodeName}')
ON_NODE=$(pods_on "$NODE")
[ -n "$ON_NODE" ] || fail "no pod on $NODE"
POD=$(head -1 <<<"$ON_NODE")
UID0=$(k get pod "$POD" -o jsonpath='{.metadata.uid}')
echo "$NODE runs $(wc -l <<<"$ON_NODE") pods"

echo "--- an eviction under dryRun (query, then deleteOptions) leaves the pod"
out=$(evict "$POD" '?dryRun=All')
expect_eq "dry-run eviction" "$out" \
  $'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n201'
out=$(evict "$POD" '' '{"dryRun":["All"],"gracePeriodSeconds":0}')
expect_match "dry-run eviction (body)" "$out" $'201$'
out=$(kp_curl POST "/api/v1/namespaces/default/pods/$POD/eviction?dryRun=All" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"'"$POD"'"}}' -w '\n%{http_code}')
expect_match "dry-run eviction (policy/v1beta1, as kubectl 1.20 types it)" "$out" $'201$'
expect_eq "pod kept" "$(k get pod "$POD" -o jsonpath='{.metadata.uid}/{.metadata.deletionTimestamp}')" "$UID0/"
k delete pod "$POD" --dry-run=server >/dev/null
expect_eq "pod kept by a dry-run DELETE" \
  "$(k get pod "$POD" -o jsonpath='{.metadata.uid}/{.metadata.deletionTimestamp}')" "$UID0/"
out=$(evict "$POD" '' '{"preconditions":{"uid":"not-the-uid"}}')
expect_match "precondition" "$out" '"reason":"Conflict","details":\{"name":"'"$POD"'","kind":"pods"\},"code":409\}'
expect_eq "precondition code" "$(tail -1 <<<"$out")" "409"
expect_eq "pod kept by a failed precondition" "$(k get pod "$POD" -o jsonpath='{.metadata.uid}')" "$UID0"
out=$(evict "$POD" '' '{"dryRun":["Some"]}')
expect_match "bad dryRun" "$out" $'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Some".*\n422$'

echo "--- an eviction of a missing pod: 404 NotFound with details, in Kubernetes' order"
out=$(evict nosuch)
expect_eq "missing pod" "$out" \
  $'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"nosuch\\" not found","reason":"NotFound","details":{"name":"nosuch","kind":"pods"},"code":404}\n404'

echo "--- the Eviction must name the URL's pod"
out=$(kp_curl POST "/api/v1/namespaces/default/pods/$POD/eviction" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}' -w '\n%{http_code}')
expect_match "name mismatch" "$out" $'"message":"name in URL does not match name in Eviction object","reason":"BadRequest".*\n400$'
out=$(kp_curl POST "/api/v1/namespaces/default/pods/$POD/eviction" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"'"$POD"'","namespace":"kube-system"}}' \
  -w '\n%{http_code}')
expect_match "namespace mismatch" "$out" $'does not match the namespace sent on the request.*\n400$'
out=$(kp_curl GET "/api/v1/namespaces/default/pods/$POD/eviction" -w '\n%{http_code}')
expect_match "GET eviction" "$out" $'"reason":"MethodNotAllowed","details":\\{\\},"code":405\\}\n405$'
expect_eq "pod still there" "$(k get pod "$POD" -o jsonpath='{.metadata.uid}')" "$UID0"

echo "--- kubectl debug: a clear error, not a panic"
if k debug --help >/dev/null 2>&1; then
  rc=0
  k debug "$POD" --image=busybox -- true >"$KP_DIR/debug.out" 2>"$KP_DIR/debug.err" || rc=$?
  if [ "$rc" = 2 ] || grep -q panic "$KP_DIR/debug.err"; then
    fail "kubectl debug crashed (exit $rc): $(head -5 "$KP_DIR/debug.err")"
  fi
  [ "$rc" != 0 ] || fail "kubectl debug succeeded without ephemeral containers"
  expect_match "debug error" "$(cat "$KP_DIR/debug.err")" 'ephemeral containers are disabled'
else
  echo "(this kubectl has no debug command)"
fi

echo "--- kubectl drain $NODE: cordoned, every pod evicted and recreated elsewhere"
drained=$(k drain "$NODE" --ignore-daemonsets --timeout=60s 2>&1) || fail "drain: $drained"
# kubectl 1.21 on reads eviction support from /api/v1 alone; 1.20 also wants
# the policy group in /apis (served with PodDisruptionBudgets) and deletes
# the pods without it. 1.20 names the node with its printer's last verb
# ("evicted" or "deleted"); 1.21 on say "drained".
minor=$(k version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+"))')
if [ "$minor" -ge 21 ] || grep -q '"name":"policy"' <<<"$(kp_curl GET /apis)"; then
  expect_match "drain output" "$drained" "node/$NODE $([ "$minor" -ge 21 ] && echo drained || echo evicted)"
  expect_match "drain evicted" "$drained" "pod/$POD evicted"
else
  expect_match "drain deleted" "$drained" "pod/$POD deleted"
fi
expect_eq "cordoned" "$(k get node "$NODE" -o jsonpath='{.spec.unschedulable}')" "true"
# drain returns once the evicted pods are gone (it waits for their deletion).
for p in $ON_NODE; do
  uid=$(k get pod "$p" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
  [ -z "$uid" ] || fail "pod $p still exists after the drain"
done
kp_wait_for "6 running again" 60 six_available
expect_eq "pods left on $NODE" "$(pods_on "$NODE")" ""
expect_eq "pods elsewhere" "$(pods_on | wc -l)" "6"

echo "--- uncordon"
k uncordon "$NODE" >/dev/null
expect_eq "schedulable" "$(k get node "$NODE" -o jsonpath='{.spec.unschedulable}')" ""
echo "PASS"
