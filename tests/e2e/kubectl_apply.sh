#!/usr/bin/env bash
# kubectl_apply.sh KPLANE KUBECTL -- what users reach for every day, with a
# real kubectl: apply (client-side and server-side, with field removal and
# conflicts), diff, patch in all three types, edit, wait, get's columns, and a
# CustomResourceDefinition served without a restart.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

echo "--- apply -f a multi-document manifest"
cat >"$KP_DIR/app.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
  labels: {app: web, tier: front}
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, team: blue}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        env:
        - {name: MODE, value: prod}
        - {name: DEBUG, value: "0"}
      - name: sidecar
        image: busybox:1.36
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
YAML
out=$(k apply -f "$KP_DIR/app.yaml")
expect_match "apply ns" "$out" "namespace/shop created"
expect_match "apply cm" "$out" "configmap/web-config created"
expect_match "apply deploy" "$out" "deployment.apps/web created"
expect_match "apply svc" "$out" "service/web created"
expect_match "last-applied" \
  "$(k -n shop get deploy web -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}')" \
  '"replicas":2'
out=$(k apply -f "$KP_DIR/app.yaml")
expect_match "re-apply unchanged" "$out" "deployment.apps/web unchanged"

echo "--- re-apply without an env var and a label: both go"
sed -e '/name: DEBUG/d' -e 's/labels: {app: web, team: blue}/labels: {app: web}/' \
  -e 's/replicas: 2/replicas: 3/' "$KP_DIR/app.yaml" >"$KP_DIR/app2.yaml"
out=$(k apply -f "$KP_DIR/app2.yaml")
expect_match "apply configured" "$out" "deployment.apps/web configured"
expect_eq "replicas" "$(k -n shop get deploy web -o jsonpath='{.spec.replicas}')" "3"
expect_eq "env" "$(k -n shop get deploy web -o jsonpath='{.spec.template.spec.containers[0].env[*].name}')" "MODE"
expect_eq "label gone" "$(k -n shop get deploy web -o jsonpath='{.metadata.labels.team}')" ""
expect_eq "containers kept" "$(k -n shop get deploy web -o jsonpath='{.spec.template.spec.containers[*].name}')" "nginx sidecar"

echo "--- diff shows a change"
sed 's/color: blue/color: red/' "$KP_DIR/app2.yaml" >"$KP_DIR/app3.yaml"
set +e
out=$(k diff -f "$KP_DIR/app3.yaml" 2>&1)
rc=$?
set -e
expect_eq "diff exit code" "$rc" "1"
expect_match "diff" "$out" "^\+  color: red"
expect_eq "diff wrote nothing" "$(k -n shop get cm web-config -o jsonpath='{.data.color}')" "blue"

echo "--- server-side apply: conflicts between managers"
cat >"$KP_DIR/ssa.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  namespace: shop
data:
  owner: first
  size: small
YAML
expect_match "ssa create" "$(k apply --server-side --field-manager=first -f "$KP_DIR/ssa.yaml")" \
  "configmap/ssa serverside-applied"
sed -e 's/owner: first/owner: second/' -e '/size:/d' "$KP_DIR/ssa.yaml" >"$KP_DIR/ssa2.yaml"
err=$(k apply --server-side --field-manager=second -f "$KP_DIR/ssa2.yaml" 2>&1 || true)
expect_match "ssa conflict" "$err" 'conflict with "first"'
expect_match "ssa conflict field" "$err" '\.data\.owner'
expect_match "ssa force" \
  "$(k apply --server-side --field-manager=second --force-conflicts -f "$KP_DIR/ssa2.yaml")" \
  "configmap/ssa serverside-applied"
expect_eq "forced" "$(k -n shop get cm ssa -o jsonpath='{.data.owner}')" "second"
expect_eq "size still first's" "$(k -n shop get cm ssa -o jsonpath='{.data.size}')" "small"
sed '/size:/d' "$KP_DIR/ssa.yaml" | sed 's/owner: first/owner: second/' >"$KP_DIR/ssa3.yaml"
k apply --server-side --field-manager=first -f "$KP_DIR/ssa3.yaml" >/dev/null
expect_eq "dropped field removed" "$(k -n shop get cm ssa -o jsonpath='{.data.size}')" ""
expect_match "managedFields" "$(k -n shop get cm ssa -o jsonpath='{.metadata.managedFields[*].manager}')" "second"

echo "--- patch: strategic, merge, json"
k -n shop patch deploy web -p '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.26"}]}}}}' >/dev/null
expect_eq "smp keeps containers" \
  "$(k -n shop get deploy web -o jsonpath='{.spec.template.spec.containers[*].image}')" "nginx:1.26 busybox:1.36"
k -n shop patch deploy web --type merge -p '{"metadata":{"labels":{"patched":"merge"}}}' >/dev/null
expect_eq "merge" "$(k -n shop get deploy web -o jsonpath='{.metadata.labels.patched}')" "merge"
k -n shop patch deploy web --type json -p '[{"op":"replace","path":"/spec/replicas","value":4}]' >/dev/null
expect_eq "json" "$(k -n shop get deploy web -o jsonpath='{.spec.replicas}')" "4"
err=$(k -n shop patch deploy web --type json -p '[{"op":"test","path":"/spec/replicas","value":9}]' 2>&1 || true)
expect_match "json test fails" "$err" "request is invalid"
k set image -n shop deploy/web sidecar=busybox:1.37 >/dev/null
expect_eq "set image" \
  "$(k -n shop get deploy web -o jsonpath='{.spec.template.spec.containers[*].image}')" "nginx:1.26 busybox:1.37"

echo "--- edit with EDITOR"
cat >"$KP_DIR/editor.sh" <<'SH'
#!/bin/sh
sed -i 's/color: blue/color: purple/' "$1"
SH
chmod +x "$KP_DIR/editor.sh"
EDITOR="$KP_DIR/editor.sh" KUBE_EDITOR="$KP_DIR/editor.sh" k -n shop edit cm web-config >/dev/null
expect_eq "edited" "$(k -n shop get cm web-config -o jsonpath='{.data.color}')" "purple"

echo "--- get shows the real columns"
expect_match "deploy columns" "$(k -n shop get deploy)" "^NAME +READY +UP-TO-DATE +AVAILABLE +AGE"
expect_match "deploy row" "$(k -n shop get deploy)" "web +0/4 +0 +0 +[0-9]+s"
expect_match "deploy wide" "$(k -n shop get deploy -o wide)" "CONTAINERS +IMAGES +SELECTOR"
expect_match "svc columns" "$(k -n shop get svc)" "^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE"
expect_match "cm columns" "$(k -n shop get cm)" "^NAME +DATA +AGE"
expect_match "ns columns" "$(k get ns)" "^NAME +STATUS +AGE"
expect_match "ns row" "$(k get ns)" "shop +Active"

echo "--- explain"
expect_match "explain" "$(k explain deployment.spec.strategy)" "rollingUpdate"

echo "--- a CustomResourceDefinition"
cat >"$KP_DIR/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
          status:
            type: object
            properties:
              state: {type: string}
              replicas: {type: integer}
YAML
expect_match "crd create" "$(k apply -f "$KP_DIR/crd.yaml")" "created"
k wait --for condition=established --timeout=20s crd/crontabs.stable.example.com >/dev/null
cat >"$KP_DIR/ct.yaml" <<'YAML'
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: shop
spec:
  cronSpec: "* * * * */5"
  image: my-cron-image
  replicas: 3
YAML
expect_match "ct create" "$(k apply -f "$KP_DIR/ct.yaml")" "crontab.stable.example.com/my-cron created"
expect_match "get crontabs" "$(k -n shop get crontabs)" "^NAME +SPEC +REPLICAS +AGE"
expect_match "printer columns" "$(k -n shop get crontabs)" 'my-cron +\* \* \* \* \*/5 +3 '
expect_match "short name" "$(k -n shop get ct)" "my-cron"
sed 's/replicas: 3/replicas: 20/' "$KP_DIR/ct.yaml" >"$KP_DIR/ct-bad.yaml"
err=$(k apply -f "$KP_DIR/ct-bad.yaml" 2>&1 || true)
expect_match "schema 422" "$err" 'is invalid: spec.replicas: Invalid value: 20'
sed 's/replicas: 3/replicas: "three"/' "$KP_DIR/ct.yaml" >"$KP_DIR/ct-bad2.yaml"
err=$(k apply -f "$KP_DIR/ct-bad2.yaml" 2>&1 || true)
expect_match "schema type" "$err" 'spec.replicas'

echo "--- a custom resource's scale and status subresources"
expect_match "scale ct" "$(k -n shop scale ct my-cron --replicas=5)" "scaled"
expect_eq "scaled" "$(k -n shop get ct my-cron -o jsonpath='{.spec.replicas}')" "5"
kp_curl PATCH /apis/stable.example.com/v1/namespaces/shop/crontabs/my-cron/status \
  -H 'Content-Type: application/merge-patch+json' -d '{"status":{"state":"ok","replicas":5}}' >/dev/null
expect_eq "status written" "$(k -n shop get ct my-cron -o jsonpath='{.status.state}')" "ok"
kp_curl PATCH /apis/stable.example.com/v1/namespaces/shop/crontabs/my-cron \
  -H 'Content-Type: application/merge-patch+json' -d '{"status":{"state":"main"}}' >/dev/null
expect_eq "main resource ignores status" "$(k -n shop get ct my-cron -o jsonpath='{.status.state}')" "ok"
expect_match "scale status" \
  "$(kp_curl GET /apis/stable.example.com/v1/namespaces/shop/crontabs/my-cron/scale)" '"status":\{"replicas":5'

echo "--- wait --for=condition on a status condition"
# (kubectl 1.20 has no --subresource: the status goes in over curl)
kp_curl PATCH /apis/apps/v1/namespaces/shop/deployments/web/status \
  -H 'Content-Type: application/merge-patch+json' \
  -d '{"status":{"observedGeneration":99,"conditions":[{"type":"Available","status":"True","reason":"Test","message":"x"}]}}' >/dev/null
k -n shop wait --for=condition=Available --timeout=10s deploy/web >/dev/null

echo "--- deleting the CRD deletes its objects and ends the watches on them"
kp_curl GET "/apis/stable.example.com/v1/namespaces/shop/crontabs?watch=1&timeoutSeconds=120" \
  >"$KP_DIR/ct-watch.out" 2>&1 &
watch_pid=$!
for _ in $(seq 100); do grep -q my-cron "$KP_DIR/ct-watch.out" && break; sleep 0.1; done
k delete crd crontabs.stable.example.com >/dev/null
for _ in $(seq 100); do
  k get crd crontabs.stable.example.com >/dev/null 2>&1 || break
  sleep 0.1
done
err=$(k get crd crontabs.stable.example.com 2>&1 || true)
expect_match "crd gone" "$err" "NotFound"
left=$(kp_curl GET "/apis/stable.example.com/v1/namespaces/shop/crontabs" | head -c 300)
expect_match "objects gone" "$left" '"code":404|"items":\[\]'
for _ in $(seq 200); do kill -0 $watch_pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $watch_pid 2>/dev/null; then
  kill $watch_pid
  fail "a watch on crontabs still runs 20 s after the CRD was deleted"
fi
wait $watch_pid || fail "the crontabs watch ended with an error: $(cat "$KP_DIR/ct-watch.out")"
expect_match "watch saw the object" "$(cat "$KP_DIR/ct-watch.out")" '"name":"my-cron"'
echo "kubectl_apply.sh: all checks passed"
