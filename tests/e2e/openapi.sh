#!/usr/bin/env bash
# openapi.sh KPLANE KUBECTL KUBECTL_1.20 -- the OpenAPI documents as kubectl
# reads them: /openapi/v2 (JSON and gnostic protobuf) and /openapi/v3 checked
# with python3 against discovery (every served kind, no dangling $ref), then
# `kubectl explain` with both versions (1.32 over v3, 1.20 over the protobuf
# v2), and validation: valid manifests pass kubectl 1.20's client-side
# validation (--validate=true) and 1.32's --validate=strict; an unknown field
# is reported by 1.20 before anything is sent, and 1.32 leaves it to the
# server (fieldValidation=Strict, no fallback to the v2 document).
set -euo pipefail
KP_BIN=$1
K132=$2
K120=$3
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

echo "--- discovery: the kinds the documents must describe"
kinds=$(for gv in /api/v1 $(kp_curl GET /apis | python3 -c '
import json, sys
for g in json.load(sys.stdin)["groups"]:
    for v in g["versions"]:
        print("/apis/" + v["groupVersion"])'); do
  kp_curl GET "$gv" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["resources"]:
    if "/" not in r["name"]:
        print(d["groupVersion"], r["name"], r["kind"], r["namespaced"], ",".join(r["verbs"]))'
done)
printf '%s\n' "$kinds" >"$KP_DIR/kinds.txt"
expect_match "kinds" "$kinds" "apps/v1 deployments Deployment True"

echo "--- /openapi/v2 (JSON)"
kp_curl GET /openapi/v2 -o "$KP_DIR/v2.json" -w '%{content_type}\n' >"$KP_DIR/v2.ctype"
expect_match "v2 content type" "$(cat "$KP_DIR/v2.ctype")" "^application/json"
python3 - "$KP_DIR/v2.json" "$KP_DIR/kinds.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["swagger"] == "2.0", doc.get("swagger")
assert doc["info"] == {"title": "Kubernetes", "version": "v1.32.0-kplane"}, doc["info"]
defs, paths = doc["definitions"], doc["paths"]
assert list(defs) == sorted(defs), "definitions not sorted"

def walk(x, path="", names=False):
    """(path, keyword, value) for every keyword; the keys of a properties
    map are field names (JSONSchemaProps has a field named $ref), not keywords."""
    if isinstance(x, dict):
        for k, v in x.items():
            if not names:
                yield path, k, v
            yield from walk(v, path + "/" + k, k == "properties" and not names)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, "%s[%d]" % (path, i))

for where, k, v in walk(doc):
    if k == "$ref":
        assert v.startswith("#/definitions/") and v[14:] in defs, "dangling %s at %s" % (v, where)
for name, d in defs.items():
    for where, k, v in walk(d):
        assert k != "description" or not name.startswith("io.k8s."), "a description in " + name

by_gvk = {}
for name, d in defs.items():
    for gvk in d.get("x-kubernetes-group-version-kind", []):
        by_gvk.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
for line in open(sys.argv[2]):
    gv, res, kind, ns, verbs = line.split()
    verbs = verbs.split(",")
    group, _, version = gv.rpartition("/")
    name = by_gvk.get((group, version, kind))
    assert name, "no definition for %s %s" % (gv, kind)
    assert "properties" in defs[name] and defs[name]["type"] == "object", name
    prefix = "/apis/" + gv if group else "/api/" + gv
    coll = prefix + ("/namespaces/{namespace}/" if ns == "True" else "/") + res
    want = {"group": group, "kind": kind, "version": version}
    # Exactly the operations of the verbs discovery lists (bindings: create
    # only; componentstatuses: get and list).
    for path, method, action, verb in ((coll, "get", "list", "list"),
                                       (coll, "post", "post", "create"),
                                       (coll + "/{name}", "get", "get", "get"),
                                       (coll + "/{name}", "put", "put", "update"),
                                       (coll + "/{name}", "patch", "patch", "patch"),
                                       (coll + "/{name}", "delete", "delete", "delete")):
        op = paths.get(path, {}).get(method)
        assert (op is not None) == (verb in verbs), (path, method, verbs)
        if op:
            assert op["x-kubernetes-group-version-kind"] == want, (path, method)
            assert op["x-kubernetes-action"] == action, (path, method)
    if "patch" not in verbs:
        continue
    item = paths[coll + "/{name}"]
    for method in ("put", "patch"):
        names = {p.get("name") for p in item[method]["parameters"]}
        assert {"body", "dryRun", "fieldManager", "fieldValidation"} <= names, (coll, names)
    assert "application/apply-patch+yaml" in item["patch"]["consumes"]
    assert item["patch"]["parameters"][0]["schema"]["$ref"].endswith("meta.v1.Patch")

spec = defs["io.k8s.api.apps.v1.DeploymentSpec"]
assert spec["properties"]["strategy"] == {
    "$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy",
    "x-kubernetes-patch-strategy": "retainKeys"}, spec["properties"]["strategy"]
assert spec["properties"]["replicas"] == {"format": "int32", "type": "integer"}
containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
assert containers["x-kubernetes-patch-merge-key"] == "name", containers
assert containers["x-kubernetes-list-type"] == "map", containers
assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
    "format": "int-or-string", "type": "string"}
print("v2: %d definitions, %d paths" % (len(defs), len(paths)))
PY

echo "--- /openapi/v2 (protobuf)"
kp_curl GET /openapi/v2 -H 'Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf' \
  -o "$KP_DIR/v2.pb" -w '%{content_type}\n' >"$KP_DIR/v2pb.ctype"
expect_eq "protobuf content type" "$(cat "$KP_DIR/v2pb.ctype")" \
  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
head5=$(head -c 5 "$KP_DIR/v2.pb" | od -An -tx1 | tr -d ' \n')
expect_eq "protobuf starts with swagger 2.0" "$head5" "0a03322e30"

echo "--- /openapi/v3"
kp_curl GET /openapi/v3 -o "$KP_DIR/v3.json"
python3 - "$KP_DIR/v3.json" "$KP_DIR/kinds.txt" <<'PY' >"$KP_DIR/v3.urls"
import json, sys
root = json.load(open(sys.argv[1]))["paths"]
for line in open(sys.argv[2]):
    gv = line.split()[0]
    key = ("apis/" if "/" in gv else "api/") + gv
    assert key in root, "no %s in the v3 root" % key
for key, v in root.items():
    url = v["serverRelativeURL"]
    assert url.startswith("/openapi/v3/" + key + "?hash="), url
    print(key, url)
PY
while read -r key url; do
  kp_curl GET "$url" -o "$KP_DIR/gv.json"
  python3 - "$KP_DIR/gv.json" "$KP_DIR/kinds.txt" "$key" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
key = sys.argv[3]
assert doc["openapi"] == "3.0.0" and doc["info"]["title"] == "Kubernetes", doc.get("info")
schemas, paths = doc["components"]["schemas"], doc["paths"]

def walk(x, names=False):
    if isinstance(x, dict):
        for k, v in x.items():
            if not names:
                yield x, k, v
            yield from walk(v, k == "properties" and not names)
    elif isinstance(x, list):
        for v in x:
            yield from walk(v)

for node, k, v in walk(doc):
    if k == "$ref":
        assert v.startswith("#/components/schemas/") and v[21:] in schemas, v
        assert len(node) == 1, "a $ref with siblings: %s" % node
smp = "application/strategic-merge-patch+json"
for line in open(sys.argv[2]):
    gv, res, kind, ns, verbs = line.split()
    if ("apis/" if "/" in gv else "api/") + gv != key:
        continue
    group, _, version = gv.rpartition("/")
    want = {"group": group, "kind": kind, "version": version}
    assert any(want in s.get("x-kubernetes-group-version-kind", []) for s in schemas.values())
    if "patch" not in verbs.split(","):
        continue
    coll = "/" + key + ("/namespaces/{namespace}/" if ns == "True" else "/") + res
    patch = paths[coll + "/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == want, coll
    assert any(p["name"] == "fieldValidation" for p in patch["parameters"]), coll
    assert {"application/json-patch+json", "application/merge-patch+json", smp,
            "application/apply-patch+yaml"} <= set(patch["requestBody"]["content"]), coll
    assert any(want in s.get("x-kubernetes-group-version-kind", []) for s in schemas.values())
if key == "apis/apps/v1":
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    ref = "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"
    assert strategy == {"allOf": [{"$ref": ref}], "x-kubernetes-patch-strategy": "retainKeys"}, \
        strategy
    assert schemas["io.k8s.api.apps.v1.Deployment"]["type"] == "object"
print("v3 %s: %d schemas, %d paths" % (key, len(schemas), len(paths)))
PY
done <"$KP_DIR/v3.urls"
code=$(kp_curl GET /openapi/v3/apis/nosuch.example.com/v1 -o /dev/null -w '%{http_code}')
expect_eq "unknown group-version" "$code" "404"
# As kube-openapi's handler3: a group-version fetched by the root's hash is
# immutable (kubectl keeps it in its HTTP cache); by another hash, a 301 to
# the current one; with no hash, an ETag and no caching.
url=$(awk '$1 == "apis/apps/v1" {print $2}' "$KP_DIR/v3.urls")
hdrs=$(kp_curl GET "$url" -o /dev/null -D - | tr -d '\r')
expect_header "v3 by its hash: cached for good" "$hdrs" Cache-Control "public, immutable"
expect_header "v3 by its hash: an ETag of the hash" "$hdrs" ETag "\"${url##*hash=}\""
expect_header "v3 by its hash: Expires" "$hdrs" Expires ""
hdrs=$(kp_curl GET "${url%%\?*}?hash=0000" -o /dev/null -D - | tr -d '\r')
expect_match "v3 by a stale hash: moved" "$hdrs" "^HTTP/[0-9.]+ 301"
expect_header "v3 by a stale hash: to the current one" "$hdrs" Location "${url//\?/\\?}"
hdrs=$(kp_curl GET "${url%%\?*}" -o /dev/null -D - | tr -d '\r')
expect_header "v3 without a hash: not cached" "$hdrs" Cache-Control "no-cache, private"

# explain and validation, once per kubectl version
for K in "$K132" "$K120"; do
  k() { "$K" "$@"; }
  ver=$(k version --client 2>/dev/null | grep -o 'v1\.[0-9]*' | head -1)
  echo "--- kubectl $ver: explain"
  out=$(k explain deployment.spec.strategy)
  expect_match "explain strategy ($ver)" "$out" "KIND: +Deployment"
  expect_match "explain strategy ($ver)" "$out" "rollingUpdate[[:space:]]+<"
  expect_match "explain strategy ($ver)" "$out" "(^|[[:space:]])type[[:space:]]+<string>"
  grep -q "FIELDS:" <<<"$out" || fail "explain strategy ($ver): no FIELDS: $out"
  out=$(k explain pods)
  expect_match "explain pods ($ver)" "$out" "KIND: +Pod"
  expect_match "explain pods ($ver)" "$out" "VERSION: +v1"
  for f in apiVersion kind metadata spec status; do
    expect_match "explain pods ($ver)" "$out" "(^|[[:space:]])$f[[:space:]]+<"
  done
  out=$(k explain deploy.spec.template.spec.containers)
  expect_match "explain containers ($ver)" "$out" "name[[:space:]]+<string> -required-"
  expect_match "explain containers ($ver)" "$out" "image[[:space:]]+<string>"
  expect_match "explain containers ($ver)" "$out" "ports[[:space:]]+<\[\]"
  out=$(k explain svc.spec.ports.targetPort)
  expect_match "explain targetPort ($ver)" "$out" "targetPort"
  err=$(k explain deployment.spec.nosuch 2>&1 || true)
  expect_match "explain unknown field ($ver)" "$err" "nosuch"
done

# A manifest per kind, named after the kubectl version that creates it.
manifests() { # SUFFIX
  cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-$1, labels: {app: web}}
data: {color: blue, size: "3"}
---
apiVersion: v1
kind: Service
metadata: {name: svc-$1}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: admin, port: 9090, targetPort: admin}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-$1, labels: {app: web}}
spec:
  restartPolicy: Always
  containers:
  - name: web
    image: nginx:1.25
    args: ["--port", "8080"]
    ports: [{containerPort: 8080, name: admin}]
    env: [{name: MODE, value: prod}]
    resources: {limits: {cpu: 500m, memory: 128Mi}, requests: {cpu: "0.1"}}
    readinessProbe: {httpGet: {path: /, port: admin}, periodSeconds: 5}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep-$1}
spec:
  replicas: 2
  selector: {matchLabels: {app: dep-$1}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
  template:
    metadata: {labels: {app: dep-$1}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
YAML
}
bad_deployment() { # NAME
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicaz: 2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec: {containers: [{name: web, image: nginx}]}
YAML
}

echo "--- kubectl 1.20: client-side validation over the protobuf v2"
manifests v120 >"$KP_DIR/ok120.yaml"
out=$("$K120" create -f "$KP_DIR/ok120.yaml" --validate=true 2>&1) || fail "1.20 create: $out"
for o in configmap/cm-v120 service/svc-v120 pod/pod-v120 deployment.apps/dep-v120; do
  expect_match "1.20 create" "$out" "$o created"
done
bad_deployment bad-v120 >"$KP_DIR/bad120.yaml"
err=$("$K120" create -f "$KP_DIR/bad120.yaml" --validate=true 2>&1) &&
  fail "1.20 accepted replicaz: $err"
expect_match "1.20 unknown field" "$err" 'error validating.*unknown field "replicaz"'
err=$("$K120" get deploy bad-v120 2>&1 || true)
expect_match "1.20 sent nothing" "$err" "NotFound"

echo "--- kubectl 1.32: --validate=strict leaves validation to the server"
manifests v132 >"$KP_DIR/ok132.yaml"
out=$("$K132" create -f "$KP_DIR/ok132.yaml" --validate=strict -v=6 2>&1) ||
  fail "1.32 create: $out"
for o in configmap/cm-v132 service/svc-v132 pod/pod-v132 deployment.apps/dep-v132; do
  expect_match "1.32 create" "$out" "$o created"
done
strict="POST https://[^ ]*/deployments\?[^ ]*fieldValidation=Strict"
expect_match "1.32 fieldValidation" "$out" "$strict"
printf '%s\n' "$out" | grep -q "/openapi/v2" && fail "1.32 fell back to the v2 document: $out"
bad_deployment bad-v132 >"$KP_DIR/bad132.yaml"
out=$("$K132" create -f "$KP_DIR/bad132.yaml" --validate=strict -v=6 2>&1 || true)
expect_match "1.32 unknown field sent" "$out" "$strict"
printf '%s\n' "$out" | grep -q "/openapi/v2" && fail "1.32 fell back to the v2 document: $out"

echo "--- client-side apply: strategic merge patches from the documents"
dep_v1() { # IMAGE STRATEGY
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: applied}
spec:
  replicas: 1
  selector: {matchLabels: {app: applied}}
  strategy: $2
  template:
    metadata: {labels: {app: applied}}
    spec:
      containers:
      - {name: web, image: $1, env: [{name: A, value: "1"}]}
YAML
}
dep_v1 nginx:1.25 "{type: RollingUpdate, rollingUpdate: {maxSurge: 1}}" >"$KP_DIR/applied.yaml"
out=$("$K132" apply -f "$KP_DIR/applied.yaml")
expect_eq "1.32 apply" "$out" "deployment.apps/applied created"
dep_v1 nginx:1.26 "{type: Recreate}" >"$KP_DIR/applied2.yaml"
out=$("$K132" apply -f "$KP_DIR/applied2.yaml" -v=6 2>&1) || fail "1.32 apply: $out"
expect_match "1.32 apply" "$out" "deployment.apps/applied configured"
expect_match "1.32 apply read v3" "$out" "GET https://[^ ]*/openapi/v3/apis/apps/v1\?hash="
printf '%s\n' "$out" | grep -q "/openapi/v2" && fail "1.32 apply fell back to the v2 document: $out"
expect_eq "retainKeys applied" "$("$K132" get deploy applied -o jsonpath='{.spec.strategy}')" \
  '{"type":"Recreate"}'
dep_v1 nginx:1.27 "{type: Recreate}" >"$KP_DIR/applied3.yaml"
out=$("$K120" apply -f "$KP_DIR/applied3.yaml" 2>&1) || fail "1.20 apply: $out"
expect_eq "1.20 apply" "$out" "deployment.apps/applied configured"
expect_eq "1.20 applied" \
  "$("$K132" get deploy applied -o jsonpath='{.spec.template.spec.containers[0].image}')" \
  "nginx:1.27"

echo "--- a CustomResourceDefinition's kind in both documents"
cat >"$KP_DIR/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What to run and when.
            required: [cronSpec]
            properties:
              cronSpec: {type: string, description: The schedule.}
              image: {type: string}
              replicas: {type: integer, minimum: 1}
              port: {x-kubernetes-int-or-string: true}
              note: {type: string, nullable: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
"$K132" create -f "$KP_DIR/crd.yaml" >/dev/null
for _ in $(seq 100); do
  code=$(kp_curl GET /apis/stable.example.com/v1 -o /dev/null -w '%{http_code}')
  [ "$code" = 200 ] && break
  sleep 0.1
done
expect_eq "CRD served" "$code" "200"
rm -rf "$HOME/.kube/cache" # both kubectls cached discovery before the CRD existed
v3root=$(kp_curl GET /openapi/v3)
grep -q '"apis/stable.example.com/v1"' <<<"$v3root" || fail "CRD not in the v3 root"
kp_curl GET /openapi/v2 | python3 -c '
import json, sys
d = json.load(sys.stdin)["definitions"]
spec = d["com.example.stable.v1.CronTab"]["properties"]["spec"]["properties"]
assert spec["port"] == {"x-kubernetes-int-or-string": True}, spec["port"]
assert spec["note"] == {}, spec["note"]
assert d["com.example.stable.v1.CronTabList"]["properties"]["items"]["items"] == \
    {"$ref": "#/definitions/com.example.stable.v1.CronTab"}'
for K in "$K132" "$K120"; do
  out=$("$K" explain crontab.spec)
  expect_match "explain crontab" "$out" "What to run and when"
  expect_match "explain crontab" "$out" "cronSpec[[:space:]]+<string> -required-"
done
crontabs() { # NAME
  cat <<YAML
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: $1}
spec: {cronSpec: "*/5 * * * *", image: cron, replicas: 2, port: http, note: null, extra: {a: [1]}}
YAML
}
crontabs ct-v120 >"$KP_DIR/ct120.yaml"
expect_eq "1.20 create CR" "$("$K120" create -f "$KP_DIR/ct120.yaml" --validate=true)" \
  "crontab.stable.example.com/ct-v120 created"
crontabs ct-bad | sed 's/image: cron/imagez: cron/' >"$KP_DIR/ctbad.yaml"
err=$("$K120" create -f "$KP_DIR/ctbad.yaml" --validate=true 2>&1) && fail "1.20 accepted imagez"
expect_match "1.20 CR unknown field" "$err" 'error validating.*unknown field "imagez"'
crontabs ct-v132 >"$KP_DIR/ct132.yaml"
out=$("$K132" create -f "$KP_DIR/ct132.yaml" --validate=strict -v=6 2>&1) || fail "1.32: $out"
expect_match "1.32 create CR" "$out" "crontabs\?[^ ]*fieldValidation=Strict"
printf '%s\n' "$out" | grep -q "/openapi/v2" && fail "1.32 fell back to the v2 document: $out"

echo "--- timing: the v2 document, JSON and protobuf"
for accept in application/json application/com.github.proto-openapi.spec.v2@v1.0+protobuf; do
  t=$(kp_curl GET /openapi/v2 -H "Accept: $accept" -o /dev/null -w '%{time_total}')
  echo "    $accept: ${t}s (this build)"
done
echo "PASS"
