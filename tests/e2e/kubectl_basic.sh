#!/usr/bin/env bash
# kubectl_basic.sh KPLANE KUBECTL -- everyday kubectl against a real kplane server:
# discovery, create/get/replace/label/annotate/delete, selectors, -A, watch,
# and the errors kubectl prints for 404/409/422.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

echo "--- discovery"
out=$(k api-resources)
expect_match "api-resources" "$out" "configmaps +cm +v1 +true +ConfigMap"
expect_match "api-resources" "$out" "deployments +deploy +apps/v1 +true +Deployment"
expect_match "api-resources" "$out" "namespaces +ns +v1 +false +Namespace"
expect_eq "get ns default" "$(k get ns default -o jsonpath='{.status.phase}')" "Active"

echo "--- create -f, get in every output"
cat >"$KP_DIR/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  labels: {app: web, tier: front}
data:
  color: blue
YAML
expect_eq "create" "$(k create -f "$KP_DIR/cm.yaml")" "configmap/web-config created"
expect_eq "-o name" "$(k get cm web-config -o name)" "configmap/web-config"
expect_eq "jsonpath" "$(k get cm web-config -o jsonpath='{.data.color}')" "blue"
expect_match "-o yaml" "$(k get cm web-config -o yaml)" "resourceVersion: \"[0-9]+\""
expect_match "-o json" "$(k get cm web-config -o json)" "\"uid\": \"[0-9a-f-]{36}\""
expect_match "default" "$(k get cm)" "^NAME +DATA +AGE"
expect_match "-o wide" "$(k get cm -o wide)" "web-config"

echo "--- errors as kubectl prints them"
err=$(k create -f "$KP_DIR/cm.yaml" 2>&1 || true)
expect_match "AlreadyExists" "$err" 'Error from server \(AlreadyExists\).*configmaps "web-config" already exists'
err=$(k get cm nosuch 2>&1 || true)
expect_match "NotFound" "$err" 'Error from server \(NotFound\): configmaps "nosuch" not found'
sed 's/name: web-config/name: Bad_Name/' "$KP_DIR/cm.yaml" >"$KP_DIR/bad.yaml"
err=$(k create -f "$KP_DIR/bad.yaml" 2>&1 || true)
expect_match "Invalid" "$err" 'is invalid: metadata.name: Invalid value: "Bad_Name"'

echo "--- replace, label, annotate"
sed 's/color: blue/color: green/' "$KP_DIR/cm.yaml" >"$KP_DIR/cm2.yaml"
expect_eq "replace" "$(k replace -f "$KP_DIR/cm2.yaml")" "configmap/web-config replaced"
expect_eq "replaced" "$(k get cm web-config -o jsonpath='{.data.color}')" "green"
expect_eq "label" "$(k label cm web-config env=prod)" "configmap/web-config labeled"
expect_eq "annotate" "$(k annotate cm web-config note=hello)" "configmap/web-config annotated"
expect_eq "annotation" "$(k get cm web-config -o jsonpath='{.metadata.annotations.note}')" "hello"

echo "--- selectors and namespaces"
expect_eq "create namespace" "$(k create -f - <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
YAML
)" "namespace/team-a created"
for n in one two three; do
  k create -n team-a -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: $n, labels: {app: $n, tier: back}}
YAML
done
expect_eq "-l =" "$(k get cm -n team-a -l app=two -o name)" "configmap/two"
expect_eq "-l notin" "$(k get cm -n team-a -l 'app notin (one,two)' -o name)" "configmap/three"
expect_eq "-l !=" "$(k get cm -n team-a -l 'app!=one' -o name | wc -l)" "2"
expect_eq "--field-selector" "$(k get cm -n team-a --field-selector metadata.name=one -o name)" "configmap/one"
all=$(k get cm -A -l tier -o name | sort | tr '\n' ' ')
expect_eq "-A" "$all" "configmap/one configmap/three configmap/two configmap/web-config "
err=$(k get cm --field-selector spec.nothing=x 2>&1 || true)
expect_match "bad field selector" "$err" "field label not supported: spec.nothing"
err=$(k create -n nosuch -f "$KP_DIR/cm.yaml" 2>&1 || true)
expect_match "missing namespace" "$err" 'namespaces "nosuch" not found'

echo "--- watch sees a create, an update and a delete"
k get cm -n team-a -w --output-watch-events >"$KP_DIR/watch.out" 2>&1 &
wpid=$!
# Go on once the server counts the watch (kubectl takes a while to start).
for _ in $(seq 100); do
  k get --raw /metrics | grep -q '^apiserver_registered_watchers [1-9]' && break
  sleep 0.1
done
k create -n team-a -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: watched}
YAML
k label -n team-a cm watched seen=yes >/dev/null
k delete -n team-a cm watched >/dev/null
for _ in $(seq 50); do grep -Eq "DELETED +watched" "$KP_DIR/watch.out" && break; sleep 0.1; done
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
expect_match "watch added" "$(cat "$KP_DIR/watch.out")" "ADDED +watched"
expect_match "watch modified" "$(cat "$KP_DIR/watch.out")" "MODIFIED +watched"
expect_match "watch deleted" "$(cat "$KP_DIR/watch.out")" "DELETED +watched"

echo "--- create namespace, create configmap --from-literal, run, describe pod"
# kubectl 1.20 sends these generators' bodies as JSON, newer kubectl as protobuf.
expect_eq "create namespace" "$(k create namespace team-b)" "namespace/team-b created"
expect_eq "create configmap" "$(k create configmap lit -n team-b --from-literal=a=1 --from-literal=b=2)" "configmap/lit created"
expect_eq "literal data" "$(k get cm lit -n team-b -o jsonpath='{.data.a}{.data.b}')" "12"
expect_eq "create deployment" "$(k create deployment gen -n team-b --image=nginx:1.25 --replicas=2)" "deployment.apps/gen created"
expect_eq "generated deployment" "$(k get deploy gen -n team-b -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.strategy.type}')" "2 nginx:1.25 RollingUpdate"
expect_eq "run" "$(k run web --image=nginx:1.25 --labels=app=web)" "pod/web created"
desc=$(k describe pod web)
expect_match "describe name" "$desc" "Name: +web"
expect_match "describe image" "$desc" "Image: +nginx:1.25"
expect_match "describe status" "$desc" "Status: +Pending"
expect_eq "pod defaults" "$(k get pod web -o jsonpath='{.spec.restartPolicy} {.spec.containers[0].imagePullPolicy}')" "Always IfNotPresent"
k delete pod web >/dev/null

echo "--- delete by name, with -l, with --all"
expect_eq "delete" "$(k delete cm web-config)" 'configmap "web-config" deleted'
expect_eq "delete -l" "$(k delete cm -n team-a -l app=one)" 'configmap "one" deleted'
k delete cm -n team-a --all >/dev/null
expect_eq "all gone" "$(k get cm -n team-a -o name)" ""

echo "--- no token: the anonymous user, refused (403); a wrong token: 401"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" "https://127.0.0.1:$KP_PORT/api/v1/namespaces")
expect_eq "no token" "$code" "403"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer x" "https://127.0.0.1:$KP_PORT/api")
expect_eq "bad token" "$code" "401"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" "https://127.0.0.1:$KP_PORT/readyz")
expect_eq "readyz open" "$code" "200"
echo "--- readyz?verbose with repeated exclude parameters"
out=$(k get --raw '/readyz?verbose&exclude=store&exclude=nosuch')
expect_match "store excluded" "$out" 'store excluded: ok'
expect_match "ping checked" "$out" '\[\+\]ping ok'
expect_match "unknown exclude warned" "$out" 'no matches for "nosuch"'
echo "PASS"
