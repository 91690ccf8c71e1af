#!/usr/bin/env bash
# componentstatuses.sh KPLANE KUBECTL -- core/v1 componentstatuses (kubectl
# get cs): scheduler, controller-manager and etcd-0 with Kubernetes 1.32's
# columns (NAME STATUS MESSAGE ERROR) and its deprecation Warning; healthy
# when the components run in the server's process; with --no-controllers
# the controller-manager is Unhealthy until a Lease kube-system/
# kube-controller-manager is held and renewed in time (an electing
# controller-manager elsewhere), and Unhealthy again once the Lease expires;
# a GET of another name is Kubernetes' 500 "Component not found"; read-only.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
k() { "$KUBECTL" "$@"; }
cond() { # cond NAME FIELD: the Healthy condition's FIELD of component NAME
  k get cs "$1" -o json 2>/dev/null | python3 -c \
    'import json,sys; c=json.load(sys.stdin)["conditions"][0]; print(c["type"], c.get(sys.argv[1], ""))' "$2"
}

kp_start --nodes 0
echo "--- $(k version --client 2>/dev/null | head -1)"

echo "--- kubectl get cs: every component healthy, with the Warning"
# The server serves before its components start (as kube-apiserver does
# before the scheduler's first health check passes): wait for them.
healthy() { [ "$(k get cs --no-headers 2>/dev/null | grep -c ' Healthy ')" = 3 ]; }
kp_wait_for "every component healthy" 10 healthy
out=$(k get cs 2>&1)
echo "$out"
expect_eq "warning" "$(head -1 <<<"$out")" "Warning: v1 ComponentStatus is deprecated in v1.19+"
expect_match "header" "$(sed -n 2p <<<"$out")" '^NAME +STATUS +MESSAGE +ERROR$'
for c in scheduler controller-manager etcd-0; do
  expect_match "$c" "$out" "^$c +Healthy +ok *$"
done
expect_eq "rows" "$(k get cs --no-headers 2>/dev/null | wc -l)" 3

echo "--- kubectl get cs scheduler -o json"
js=$(k get cs scheduler -o json 2>/dev/null)
expect_eq "object" "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["kind"], o["apiVersion"], o["metadata"]["name"], json.dumps(o["conditions"], sort_keys=True))' <<<"$js")" \
  'ComponentStatus v1 scheduler [{"message": "ok", "status": "True", "type": "Healthy"}]'
expect_eq "short name, field selector" \
  "$(k get componentstatuses --field-selector metadata.name=etcd-0 --no-headers 2>/dev/null | awk '{print $1}')" etcd-0
expect_eq "label selector" "$(k get cs -l a=b -o name 2>/dev/null | wc -l)" 0

echo "--- the list and its errors, over HTTP"
list=$(kp_curl GET /api/v1/componentstatuses -D "$KP_DIR/h")
grep -qi '^Warning: 299 - "v1 ComponentStatus is deprecated in v1.19+"' "$KP_DIR/h" || fail "no Warning header"
expect_match "list" "$list" '^\{"kind":"ComponentStatusList","apiVersion":"v1","metadata":\{\},"items":\[\{"metadata":\{"name":"scheduler"\}'
out=$(kp_curl GET /api/v1/componentstatuses/nope -w '\n%{http_code}')
expect_match "unknown name" "$out" $'"message":"Component not found: nope","code":500\\}\n500$'
for m in POST PUT PATCH DELETE; do
  p=/api/v1/componentstatuses; [ $m = POST ] || p=$p/etcd-0
  expect_eq "$m" "$(kp_curl $m $p -H 'Content-Type: application/json' -d '{}' -o /dev/null -w '%{http_code}')" 405
done
expect_eq "watch" "$(kp_curl GET '/api/v1/componentstatuses?watch=1' -o /dev/null -w '%{http_code}')" 405

echo "--- a watch cache only for resources with objects in the store"
# componentstatuses, bindings and the reviews have none of their own: no
# cache (a thread and a store watch each), so no line in /metrics.
gauge=$(kp_curl GET /metrics | grep '^kplane_watch_cache_objects{')
expect_match "configmaps' cache" "$gauge" 'resource="configmaps"\} [0-9]+'
for r in componentstatuses bindings tokenreviews subjectaccessreviews selfsubjectreviews; do
  if grep -q "resource=\"$r\"" <<<"$gauge"; then fail "a watch cache for $r"; fi
done

echo "--- --no-controllers: the controller-manager is Unhealthy"
kp_restart --nodes 0 --no-controllers
sched_ok() { k get cs scheduler --no-headers 2>/dev/null | grep -q ' Healthy '; }
kp_wait_for "the scheduler healthy" 10 sched_ok
out=$(k get cs 2>/dev/null)
echo "$out"
expect_match "cm unhealthy" "$out" '^controller-manager +Unhealthy +no Lease kube-system/kube-controller-manager'
expect_match "scheduler still healthy" "$out" '^scheduler +Healthy +ok'
expect_eq "cm condition" "$(cond controller-manager status)" "Healthy False"

echo "--- a Lease renewed in time makes it Healthy; an expired one does not"
lease() { # lease RENEW-TIME
  k apply -f - >/dev/null <<YAML
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: kube-controller-manager, namespace: kube-system}
spec: {holderIdentity: elsewhere_1, leaseDurationSeconds: 15, renewTime: "$1"}
YAML
}
lease "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)"
expect_eq "renewed lease" "$(cond controller-manager status)" "Healthy True"
lease "$(date -u -d '-60 seconds' +%Y-%m-%dT%H:%M:%S.000000Z)"
expect_eq "expired lease" "$(cond controller-manager status)" "Healthy False"
expect_match "expired message" "$(cond controller-manager message)" \
  'Lease kube-system/kube-controller-manager held by elsewhere_1 not renewed for (6[0-9]|7[0-9])s \(duration 15s\)'
echo "PASS"
