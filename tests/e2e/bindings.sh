#!/usr/bin/env bash
# bindings.sh KPLANE -- the namespace-level bindings resource (POST
# /api/v1/namespaces/{ns}/bindings, Kubernetes' LegacyBindingREST): the same
# bind as pods/NAME/binding, of the pod the Binding's metadata.name names.
# With no scheduler the pods stay unscheduled until bound here: curl binds one
# (spec.nodeName, the Binding's annotations, PodScheduled), a second bind is
# Kubernetes' 409, a missing pod 404, a dry run binds nothing, bad Bindings
# get 400/422, other verbs 405, and discovery lists create only; then
# python3-kubernetes' create_namespaced_binding does the same.
set -euo pipefail
KP_BIN=$1
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

# post_json PATH BODY: prints the body, then the HTTP code on the last line.
post_json() {
  kp_curl POST "$1" -H 'Content-Type: application/json' -d "$2" -w '\n%{http_code}'
}
binding() { # binding POD NODE [EXTRA-METADATA]
  echo '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"'$1'"'${3:-}'},'\
'"target":{"apiVersion":"v1","kind":"Node","name":"'$2'"}}'
}
pod_field() { kp_curl GET "/api/v1/namespaces/default/pods/$1" | python3 -c \
  "import json,sys; p=json.load(sys.stdin); print(eval(sys.argv[1]))" "$2"; }
B=/api/v1/namespaces/default/bindings

for p in p1 p2 p3 py1; do
  out=$(post_json /api/v1/namespaces/default/pods \
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$p'"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}')
  expect_match "create $p" "$out" $'\n201$'
done
expect_eq "p1 unscheduled" "$(pod_field p1 'p["spec"].get("nodeName","")')" ""

echo "--- discovery: bindings, create only"
expect_match "discovery" "$(kp_curl GET /api/v1)" \
  '\{"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":\["create"\]\}'

echo "--- a dry run binds nothing"
out=$(post_json "$B?dryRun=All" "$(binding p1 node-a)")
expect_match "dry run" "$out" $'"status":"Success","code":201\\}\n201$'
expect_eq "p1 after dry run" "$(pod_field p1 'p["spec"].get("nodeName","")')" ""

echo "--- curl binds p1 to node-a"
out=$(post_json "$B" "$(binding p1 node-a ',"annotations":{"bound-by":"e2e"}')")
expect_eq "bind p1" "$out" \
  $'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n201'
expect_eq "p1 nodeName" "$(pod_field p1 'p["spec"]["nodeName"]')" "node-a"
expect_eq "p1 annotation" "$(pod_field p1 'p["metadata"]["annotations"]["bound-by"]')" "e2e"
expect_eq "p1 PodScheduled" \
  "$(pod_field p1 '[c["status"] for c in p["status"]["conditions"] if c["type"]=="PodScheduled"]')" \
  "['True']"

# Kubernetes binds through the pod's storage, below the field manager: the
# create's entry is the only one (no entry for the binding's manager, no
# spec.nodeName owned by anyone).
expect_eq "p1 managedFields" \
  "$(pod_field p1 '[(m["manager"], m["operation"], "f:nodeName" in m["fieldsV1"].get("f:spec", {})) for m in p["metadata"]["managedFields"]]')" \
  "[('curl', 'Update', False)]"

echo "--- a second bind is a 409 on pods/binding"
out=$(post_json "$B" "$(binding p1 node-b)")
expect_match "rebind" "$out" $'"message":"Operation cannot be fulfilled on pods/binding \\\\"p1\\\\": pod p1 is already assigned to node \\\\"node-a\\\\"","reason":"Conflict","details":\\{"name":"p1","kind":"pods/binding"\\},"code":409\\}\n409$'
expect_eq "p1 still on node-a" "$(pod_field p1 'p["spec"]["nodeName"]')" "node-a"

echo "--- a missing pod is a 404"
out=$(post_json "$B" "$(binding nope node-a)")
expect_match "missing pod" "$out" $'"message":"pods \\\\"nope\\\\" not found","reason":"NotFound","details":\\{"name":"nope","kind":"pods"\\},"code":404\\}\n404$'

echo "--- preconditions: a wrong uid or resourceVersion is a 409"
out=$(post_json "$B" "$(binding p2 node-a ',"uid":"0000"')")
expect_match "wrong uid" "$out" $'Precondition failed: UID in precondition: 0000.*\n409$'
out=$(post_json "$B" "$(binding p2 node-a ',"resourceVersion":"1"')")
expect_match "stale resourceVersion" "$out" $'\n409$'
UID2=$(pod_field p2 'p["metadata"]["uid"]')
out=$(post_json "$B" "$(binding p2 node-b ',"uid":"'"$UID2"'"')")
expect_match "right uid" "$out" $'\n201$'
expect_eq "p2 nodeName" "$(pod_field p2 'p["spec"]["nodeName"]')" "node-b"

echo "--- bad Bindings"
out=$(post_json "$B" '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p3"},"target":{}}')
expect_match "no target" "$out" $'"field":"target.name".*\n422$'
out=$(post_json "$B" "$(binding p3 node-a | sed 's/"kind":"Node"/"kind":"Pod"/')")
expect_match "target kind" "$out" $'"field":"target.kind".*\n422$'
out=$(post_json "$B" "$(binding p3 node-a ',"namespace":"other"')")
expect_match "namespace" "$out" $'does not match the namespace sent on the request.*\n400$'
out=$(post_json "$B" '{"apiVersion":"v1","kind":"Binding","target":{"name":"node-a"}}')
expect_match "no name" "$out" $'Name parameter required.*\n400$'
out=$(post_json "$B" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p3"}}')
expect_match "not a Binding" "$out" $'not a Binding object.*\n400$'
expect_eq "p3 unscheduled" "$(pod_field p3 'p["spec"].get("nodeName","")')" ""

echo "--- other verbs are 405"
expect_eq "GET" "$(kp_curl GET "$B" -o /dev/null -w '%{http_code}')" 405
expect_eq "GET one" "$(kp_curl GET "$B/p1" -o /dev/null -w '%{http_code}')" 405
expect_eq "DELETE" "$(kp_curl DELETE "$B" -o /dev/null -w '%{http_code}')" 405

echo "--- pods/binding, the same operation, still binds"
out=$(post_json /api/v1/namespaces/default/pods/p3/binding "$(binding p3 node-c)")
expect_match "pods/binding" "$out" $'\n201$'
expect_eq "p3 nodeName" "$(pod_field p3 'p["spec"]["nodeName"]')" "node-c"

echo "--- python3-kubernetes: create_namespaced_binding"
/usr/bin/python3 - "$KUBECONFIG" <<'PY'
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()


def bind(pod, node):
    b = client.V1Binding(metadata=client.V1ObjectMeta(name=pod),
                         target=client.V1ObjectReference(api_version="v1", kind="Node",
                                                         name=node))
    return core.create_namespaced_binding("default", b, _preload_content=False)


def want_error(what, code, pod, node):
    try:
        bind(pod, node)
    except ApiException as e:
        if e.status != code:
            sys.exit(f"FAIL: {what}: got {e.status}, want {code}: {e.body}")
        return
    sys.exit(f"FAIL: {what}: no error, want {code}")


r = bind("py1", "node-py")
if r.status != 201:
    sys.exit(f"FAIL: python bind: {r.status}")
got = core.read_namespaced_pod("py1", "default").spec.node_name
if got != "node-py":
    sys.exit(f"FAIL: python nodeName: {got!r}")
want_error("python rebind", 409, "py1", "node-x")
want_error("python missing pod", 404, "nope", "node-x")
print("python: bound, 409, 404")
PY
echo "PASS"
