#!/usr/bin/env bash
# versions.sh KPLANE KUBECTL -- one stored object served in two versions
# (issue 15), as Kubernetes serves them:
#   - autoscaling/v1 and v2 HorizontalPodAutoscalers: targetCPUUtilizationPercentage
#     is v2's CPU Utilization metric; other metrics and the behavior travel in
#     v1 annotations and come back; a v1 object without a target gets v2's
#     default 80%; minReplicas defaults to 1;
#   - events.k8s.io/v1 and core/v1 Events: regarding/involvedObject,
#     note/message, reportingController/reportingComponent, deprecated*;
#     events.k8s.io validation on create;
#   - a watch on one version sees writes made through the other; a delete
#     through one removes the object from both.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }
raw() { k get --raw "$1"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

HPA1=/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers
HPA2=/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers
# A watch on v1 from now on, in the background.
rv=$(raw "$HPA1" | py 'd["metadata"]["resourceVersion"]')
kp_curl GET "$HPA1?watch=1&resourceVersion=$rv&timeoutSeconds=30" -N >"$KP_DIR/watch1" 2>/dev/null &
watch_pid=$!

k apply -f - >/dev/null <<'YAML'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h2}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}
  - {type: Resource, resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}}
  behavior: {scaleDown: {stabilizationWindowSeconds: 60}}
YAML
v1=$(raw "$HPA1/h2")
expect_eq "v1 apiVersion" "$(py 'd["apiVersion"]' <<<"$v1")" autoscaling/v1
expect_eq "v1 target" "$(py 'd["spec"]["targetCPUUtilizationPercentage"]' <<<"$v1")" 70
expect_eq "v1 other metrics annotation" \
  "$(py 'json.loads(d["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"])[0]["resource"]["name"]' <<<"$v1")" memory
expect_eq "v1 behavior annotation" \
  "$(py 'json.loads(d["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/behavior"])["scaleDown"]["stabilizationWindowSeconds"]' <<<"$v1")" 60
# A v1 update that keeps the annotations keeps the v2-only parts.
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["spec"]["maxReplicas"]=7; print(json.dumps(d))' "$v1" |
  k replace -f - >/dev/null
v2=$(raw "$HPA2/h2")
expect_eq "round trip" "$(py '(d["spec"]["maxReplicas"], [m["resource"]["name"] for m in d["spec"]["metrics"]], d["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], "autoscaling.alpha.kubernetes.io/metrics" in d["metadata"].get("annotations", {}))' <<<"$v2")" \
  "(7, ['cpu', 'memory'], 60, False)"
echo "ok: v2 -> v1 -> v2 keeps metrics and behavior"

k apply -f - >/dev/null <<'YAML'
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: h1}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 3}
YAML
v2=$(raw "$HPA2/h1")
expect_eq "v1 defaults seen in v2" "$(py '(d["spec"]["minReplicas"], d["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"])' <<<"$v2")" "(1, 80)"
echo "ok: a v1 object without a target gets the default 80% CPU"

both_seen() { grep -q '"name":"h1"' "$KP_DIR/watch1" && grep -q '"name":"h2"' "$KP_DIR/watch1"; }
for _ in $(seq 50); do both_seen && break; sleep 0.2; done
both_seen || fail "the v1 watch did not see h1 and h2: $(cut -c1-200 "$KP_DIR/watch1")"
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
expect_eq "v1 watch saw both" "$(python3 -c '
import json, sys
seen = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e["object"]["apiVersion"] == "autoscaling/v1", e
    seen.add(e["object"]["metadata"]["name"])
print(sorted(seen))' "$KP_DIR/watch1")" "['h1', 'h2']"
k delete hpa.v1.autoscaling h2 >/dev/null
if raw "$HPA2/h2" >/dev/null 2>&1; then fail "deleted through v1, still in v2"; fi
echo "ok: a v1 watch sees v2 writes; a v1 delete removes the object"

EV1=/apis/events.k8s.io/v1/namespaces/default/events
EVC=/api/v1/namespaces/default/events
k create -f - >/dev/null <<'YAML'
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: e1, namespace: default}
eventTime: "2026-12-04T15:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Sync
reason: Synced
type: Normal
note: hello
regarding: {kind: Pod, name: p, namespace: default}
deprecatedCount: 2
YAML
expect_eq "core view" "$(raw "$EVC/e1" | py '(d["apiVersion"], d["message"], d["involvedObject"]["name"], d["reportingComponent"], d["count"], "note" in d)')" \
  "('v1', 'hello', 'p', 'example.com/ctl', 2, False)"
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Event
metadata: {name: c1, namespace: default}
involvedObject: {kind: Node, name: n1}
reason: Started
message: from core
type: Warning
source: {component: kubelet}
YAML
expect_eq "events.k8s.io view" "$(raw "$EV1/c1" | py '(d["apiVersion"], d["note"], d["regarding"]["name"], d["deprecatedSource"]["component"], "message" in d)')" \
  "('events.k8s.io/v1', 'from core', 'n1', 'kubelet', False)"
out=$(k create -f - 2>&1 <<'YAML' || true
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: bad, namespace: default}
type: Odd
YAML
)
for f in "eventTime: Required value" 'type: Invalid value: "Odd"' "reportingController: Required value" "action: Required value"; do
  grep -qF "$f" <<<"$out" || fail "no '$f' in: $out"
done
# A continued list comes from the store, not the cache: served converted too.
page1=$(raw "$EV1?limit=1")
cont=$(py 'd["metadata"]["continue"]' <<<"$page1")
expect_eq "continued page converted" "$(raw "$EV1?limit=1&continue=$cont" | py '[(i["apiVersion"], "note" in i, "message" in i) for i in d["items"]]')" \
  "[('events.k8s.io/v1', True, False)]"
echo "ok: events.k8s.io and core Events are one object; events.k8s.io validation"
