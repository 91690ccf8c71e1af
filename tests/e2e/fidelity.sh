#!/usr/bin/env bash
# fidelity.sh KPLANE KUBECTL -- behaviours the Kubernetes conformance suite
# checks, each against what Kubernetes does for the same requests (issue 15
# item 8), on an API-only server:
#   - a status write keeps the metadata changes it carries (labels,
#     annotations) and resets the spec: namespaces/status, services/status;
#     pods/status keeps the old ownerReferences, deployments/status the old
#     labels, a custom resource's /status all of the old metadata;
#   - a pod's status.qosClass is set at create (Guaranteed, Burstable);
#   - ConfigMap and Secret validation (keys, immutable, Secret types) and
#     pod sysctl names: 422 naming the field;
#   - CRDs: root x-kubernetes-preserve-unknown-fields, schema defaults on
#     create, update and read, and the published OpenAPI of a CRD;
#   - metadata-only reads (client-go's metadata client: Accept ...;as=
#     PartialObjectMetadata[List]): get, list and watch, a Secret's data
#     left out;
#   - a list from resourceVersion "0" is the watch cache whole, limit or not
#     (client-go's reflectors list so); other lists are paged.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }
J='Content-Type: application/json'
M='Content-Type: application/merge-patch+json'
# jq-less field extraction: jget JSON PYTHON-EXPRESSION-ON-o
jget() { python3 -c 'import json,sys; o=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" <<<"$1"; }

echo "--- status writes keep metadata, reset spec"
k create namespace st-ns >/dev/null
out=$(kp_curl PATCH /api/v1/namespaces/st-ns/status -H "$M" \
  -d '{"metadata":{"labels":{"a":"1"},"annotations":{"n":"x"}},"spec":{"finalizers":[]},"status":{"conditions":[{"type":"NamespaceDeletionDiscoveryFailure","status":"False"}]}}')
expect_eq "namespaces/status label" "$(jget "$out" 'o["metadata"]["labels"].get("a")')" "1"
expect_eq "namespaces/status annotation" "$(jget "$out" 'o["metadata"]["annotations"]["n"]')" "x"
expect_eq "namespaces/status spec kept" "$(jget "$out" 'o["spec"]["finalizers"]')" "['kubernetes']"
expect_eq "namespaces/status status" "$(jget "$out" 'o["status"]["conditions"][0]["type"]')" \
  "NamespaceDeletionDiscoveryFailure"
expect_eq "stored label" "$(k get ns st-ns -o jsonpath='{.metadata.labels.a}')" "1"

kp_curl POST /api/v1/namespaces/st-ns/services -H "$J" \
  -d '{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}' >/dev/null
out=$(kp_curl PATCH /api/v1/namespaces/st-ns/services/svc/status -H "$M" \
  -d '{"metadata":{"annotations":{"s":"y"},"labels":{"l":"2"}},"spec":{"ports":[{"port":81}]},"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.9"}]}}}')
expect_eq "services/status annotation" "$(jget "$out" 'o["metadata"]["annotations"]["s"]')" "y"
expect_eq "services/status label" "$(jget "$out" 'o["metadata"]["labels"]["l"]')" "2"
expect_eq "services/status spec kept" "$(jget "$out" 'o["spec"]["ports"][0]["port"]')" "80"
expect_eq "services/status ingress" "$(jget "$out" 'o["status"]["loadBalancer"]["ingress"][0]["ip"]')" \
  "10.0.0.9"

kp_curl POST /api/v1/namespaces/st-ns/pods -H "$J" \
  -d '{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}' >/dev/null
out=$(kp_curl PATCH /api/v1/namespaces/st-ns/pods/p/status -H "$M" \
  -d '{"metadata":{"labels":{"x":"y"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n","uid":"u1"}]},"status":{"phase":"Running"}}')
expect_eq "pods/status label" "$(jget "$out" 'o["metadata"]["labels"]["x"]')" "y"
expect_eq "pods/status ownerReferences reset" "$(jget "$out" '"ownerReferences" in o["metadata"]')" \
  "False"
expect_eq "pods/status phase" "$(jget "$out" 'o["status"]["phase"]')" "Running"
expect_eq "pods/status qosClass kept" "$(jget "$out" 'o["status"]["qosClass"]')" "BestEffort"

kp_curl POST /apis/apps/v1/namespaces/st-ns/deployments -H "$J" -d '{"metadata":{"name":"d",
  "labels":{"app":"d"}},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":
  {"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}' >/dev/null
out=$(kp_curl PATCH /apis/apps/v1/namespaces/st-ns/deployments/d/status -H "$M" \
  -d '{"metadata":{"labels":{"app":"other"},"annotations":{"a":"b"}},"status":{"replicas":3}}')
expect_eq "deployments/status labels reset" "$(jget "$out" 'o["metadata"]["labels"]["app"]')" "d"
expect_eq "deployments/status annotation" "$(jget "$out" 'o["metadata"]["annotations"]["a"]')" "b"
expect_eq "deployments/status replicas" "$(jget "$out" 'o["status"]["replicas"]')" "3"

echo "--- qosClass at create"
out=$(kp_curl POST /api/v1/namespaces/st-ns/pods -H "$J" -d '{"metadata":{"name":"g"},"spec":
  {"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}]}}')
expect_eq "Guaranteed at create" "$(jget "$out" 'o["status"]["qosClass"]')" "Guaranteed"
out=$(kp_curl POST /api/v1/namespaces/st-ns/pods -H "$J" -d '{"metadata":{"name":"b"},"spec":
  {"containers":[{"name":"c","image":"busybox","resources":{"requests":{"memory":"64Mi"}}}]}}')
expect_eq "Burstable at create" "$(jget "$out" 'o["status"]["qosClass"]')" "Burstable"

echo "--- ConfigMap and Secret validation"
code() { kp_curl "$@" -o "$KP_DIR/body" -w '%{http_code}'; }
expect_eq "configmap empty key" "$(code POST /api/v1/namespaces/st-ns/configmaps -H "$J" \
  -d '{"metadata":{"name":"bad"},"data":{"":"x"}}')" "422"
expect_match "configmap empty key names the field" "$(cat "$KP_DIR/body")" '"field":"data\[\]"'
expect_eq "configmap duplicate key" "$(code POST /api/v1/namespaces/st-ns/configmaps -H "$J" \
  -d '{"metadata":{"name":"bad"},"data":{"k":"x"},"binaryData":{"k":"eA=="}}')" "422"
k create configmap frozen -n st-ns --from-literal=k=v >/dev/null
k patch configmap frozen -n st-ns --type merge -p '{"immutable":true}' >/dev/null
if out=$(k patch configmap frozen -n st-ns --type merge -p '{"data":{"k":"w"}}' 2>&1); then
  fail "an immutable ConfigMap changed"
fi
expect_match "immutable configmap" "$out" 'data: Forbidden: field is immutable when `immutable` is set'
k label configmap frozen -n st-ns changed=yes >/dev/null # metadata stays mutable
out=$(kp_curl POST /api/v1/namespaces/st-ns/secrets -H "$J" \
  -d '{"metadata":{"name":"s1"},"stringData":{"user":"admin"}}')
expect_eq "secret type default" "$(jget "$out" 'o["type"]')" "Opaque"
expect_eq "secret stringData into data" "$(jget "$out" 'o["data"]["user"]')" "YWRtaW4="
expect_eq "secret stringData not stored" "$(jget "$out" '"stringData" in o')" "False"
expect_eq "secret empty key" "$(code POST /api/v1/namespaces/st-ns/secrets -H "$J" \
  -d '{"metadata":{"name":"bad"},"data":{"":"eA=="}}')" "422"
expect_eq "tls secret without key" "$(code POST /api/v1/namespaces/st-ns/secrets -H "$J" \
  -d '{"metadata":{"name":"bad"},"type":"kubernetes.io/tls","data":{"tls.crt":""}}')" "422"
expect_match "tls secret names tls.key" "$(cat "$KP_DIR/body")" '"field":"data\[tls.key\]"'
if out=$(k patch secret s1 -n st-ns --type merge -p '{"type":"kubernetes.io/basic-auth"}' 2>&1); then
  fail "a Secret's type changed"
fi
expect_match "secret type immutable" "$out" 'type: Invalid value: "kubernetes.io/basic-auth": field is immutable'
expect_eq "invalid sysctl" "$(code POST /api/v1/namespaces/st-ns/pods -H "$J" -d '{"metadata":
  {"name":"sc"},"spec":{"securityContext":{"sysctls":[{"name":"kernel..x","value":"1"}]},
  "containers":[{"name":"c","image":"busybox"}]}}')" "422"
expect_match "invalid sysctl field" "$(cat "$KP_DIR/body")" '"field":"spec.securityContext.sysctls\[0\].name"'

echo "--- CRDs: root x-kubernetes-preserve-unknown-fields, defaults, OpenAPI"
CRDS=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
kp_curl POST $CRDS -H "$J" -d '{"metadata":{"name":"widgets.fid.example.com"},"spec":{"group":
  "fid.example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":
  "Widget","listKind":"WidgetList"},"versions":[{"name":"v1","served":true,"storage":true,
  "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
  "properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":3},
  "inner":{"type":"object","x-kubernetes-embedded-resource":true,
  "x-kubernetes-preserve-unknown-fields":true}}}}}}}]}}' >/dev/null
W=/apis/fid.example.com/v1/namespaces/st-ns/widgets
kp_wait_for "widgets served" 10 kp_curl GET "$W" -f
out=$(kp_curl POST "$W?fieldValidation=Strict" -H "$J" -d '{"apiVersion":"fid.example.com/v1",
  "kind":"Widget","metadata":{"name":"w1"},"spec":{},"extra":{"x":1}}')
expect_eq "root preserve keeps unknown fields" "$(jget "$out" 'o.get("extra")')" "{'x': 1}"
expect_eq "default on create" "$(jget "$out" 'o["spec"]["size"]')" "3"
expect_eq "unknown field under a declared object" "$(code POST "$W?fieldValidation=Strict" -H "$J" \
  -d '{"apiVersion":"fid.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"bogus":1}}')" "400"
expect_match "strict names spec.bogus only" "$(cat "$KP_DIR/body")" 'strict decoding error: unknown field \\"spec.bogus\\"","reason"'
out=$(kp_curl PUT "$W/w1" -H "$J" -d "$(kp_curl GET "$W/w1" | python3 -c '
import json,sys; o=json.load(sys.stdin); del o["spec"]["size"]; print(json.dumps(o))')")
expect_eq "default on update" "$(jget "$out" 'o["spec"]["size"]')" "3"
# A default added to the CRD later shows when the stored object is read.
kp_curl PATCH $CRDS/widgets.fid.example.com -H 'Content-Type: application/json-patch+json' -d '[{"op":
  "add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color","value":
  {"type":"string","default":"red"}}]' >/dev/null
red_on_get() { kp_curl GET "$W/w1" | grep -q '"color":"red"'; }
kp_wait_for "default on read (get)" 10 red_on_get
expect_match "default on read (list)" "$(kp_curl GET "$W")" '"color":"red"'
expect_match "default on read (watch)" "$(kp_curl GET "$W?watch=1&timeoutSeconds=1")" '"color":"red"'
v2=$(kp_curl GET /openapi/v2)
expect_eq "v2 of a kind keeping unknown fields: a bare object" \
  "$(jget "$v2" 'json.dumps(o["definitions"]["com.example.fid.v1.Widget"], sort_keys=True)')" \
  '{"type": "object", "x-kubernetes-group-version-kind": [{"group": "fid.example.com", "kind": "Widget", "version": "v1"}]}'
v3=$(kp_curl GET /openapi/v3/apis/fid.example.com/v1)
expect_eq "v3 meta properties" \
  "$(jget "$v3" 'sorted(o["components"]["schemas"]["com.example.fid.v1.Widget"]["properties"])')" \
  "['apiVersion', 'kind', 'metadata', 'spec']"
expect_eq "v3 embedded resource" \
  "$(jget "$v3" 'o["components"]["schemas"]["com.example.fid.v1.Widget"]["properties"]["spec"]["properties"]["inner"]["required"]')" \
  "['kind', 'apiVersion']"

echo "--- metadata-only get, list and watch (PartialObjectMetadata)"
kp_curl POST /api/v1/namespaces/st-ns/secrets -H "$J" \
  -d '{"metadata":{"name":"m1","labels":{"l":"v"},"ownerReferences":[{"apiVersion":"v1",
  "kind":"ConfigMap","name":"o","uid":"u-1"}]},"stringData":{"k":"secret-text"}}' >/dev/null
PB='application/vnd.kubernetes.protobuf'
MP='as=PartialObjectMetadata;g=meta.k8s.io;v=v1'
ML='as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'
S=/api/v1/namespaces/st-ns/secrets
out=$(kp_curl GET "$S/m1" -H "Accept: $PB;$MP,application/json;$MP,application/json")
expect_eq "get: kind" "$(jget "$out" 'o["kind"]+" "+o["apiVersion"]')" "PartialObjectMetadata meta.k8s.io/v1"
expect_eq "get: metadata" "$(jget "$out" 'o["metadata"]["name"]+" "+o["metadata"]["labels"]["l"]+" "+o["metadata"]["ownerReferences"][0]["uid"]')" "m1 v u-1"
expect_eq "get: nothing but metadata" "$(jget "$out" 'sorted(o)')" "['apiVersion', 'kind', 'metadata']"
out=$(kp_curl GET "$S" -H "Accept: $PB;$ML,application/json;$ML,application/json")
expect_eq "list: kinds" "$(jget "$out" 'o["kind"]+" "+o["items"][0]["kind"]')" \
  "PartialObjectMetadataList PartialObjectMetadata"
expect_eq "list: resourceVersion" "$(jget "$out" 'bool(o["metadata"]["resourceVersion"]) and bool(o["items"][0]["metadata"]["resourceVersion"])')" "True"
expect_eq "list: no data" "$(grep -c secret-text <<<"$out" || true)" "0"
out=$(kp_curl GET "$S?watch=1&timeoutSeconds=1" -H "Accept: application/json;$MP,application/json")
expect_eq "watch: an ADDED PartialObjectMetadata" \
  "$(jget "$(head -1 <<<"$out")" 'o["type"]+" "+o["object"]["kind"]+" "+o["object"]["metadata"]["name"]')" \
  "ADDED PartialObjectMetadata m1"
expect_eq "watch: no data" "$(grep -c secret-text <<<"$out" || true)" "0"
out=$(kp_curl GET "$S?labelSelector=l%3Dv" -H "Accept: application/json;$ML")
expect_eq "list: selectors apply" "$(jget "$out" 'len(o["items"])')" "1"
expect_eq "plain Accept: the Secret" "$(jget "$(kp_curl GET "$S/m1")" 'o["kind"]')" "Secret"

echo "--- Table by Accept: the parameters, not their spelling"
T='as=Table;g=meta.k8s.io;v=v1'
expect_eq "Table v1" "$(jget "$(kp_curl GET "$S/m1" -H "Accept: application/json;$T")" 'o["kind"]')" "Table"
expect_eq "Table, spaced and reordered, second range" \
  "$(jget "$(kp_curl GET "$S/m1" -H "Accept: application/json;as=Table;g=meta.k8s.io;v=v1beta2, application/json; v=v1; g=meta.k8s.io; as=Table")" 'o["kind"]')" "Table"
expect_eq "as=Tables is not a Table" \
  "$(jget "$(kp_curl GET "$S/m1" -H "Accept: application/json;as=Tables;g=meta.k8s.io;v=v1,application/json")" 'o["kind"]')" "Secret"
expect_eq "v=v12 is not v1" \
  "$(jget "$(kp_curl GET "$S/m1" -H "Accept: application/json;as=Table;g=meta.k8s.io;v=v12,application/json")" 'o["kind"]')" "Secret"

echo "--- limit: paged from any resourceVersion but \"0\", which lists the cache whole"
k create namespace pg-ns >/dev/null
CM=/api/v1/namespaces/pg-ns/configmaps
for i in 1 2 3; do
  kp_curl POST "$CM" -H "$J" -d '{"metadata":{"name":"pg'$i'"}}' >/dev/null
done
shape='[i["metadata"]["name"] for i in o["items"]], bool(o["metadata"].get("continue"))'
page=$(kp_curl GET "$CM?limit=1")
expect_eq "limit=1: a page, continued" "$(jget "$page" "$shape")" "(['pg1'], True)"
cont=$(jget "$page" '__import__("urllib.parse").parse.quote(o["metadata"]["continue"], safe="")')
kp_curl DELETE "$CM/pg2" >/dev/null
kp_curl POST "$CM" -H "$J" -d '{"metadata":{"name":"pg25"}}' >/dev/null
expect_eq "the rest of the first page's snapshot: pg2 deleted since, pg25 created since" \
  "$(jget "$(kp_curl GET "$CM?limit=5&continue=$cont")" "$shape")" "(['pg2', 'pg3'], False)"
# A consistent list first: it waits for the cache to hold every write so far,
# so that "0", which takes the cache as it is, cannot lag behind them.
kp_curl GET "$CM" >/dev/null
expect_eq "resourceVersion=0&limit=1: every item, no continue" \
  "$(jget "$(kp_curl GET "$CM?resourceVersion=0&limit=1")" "$shape")" "(['pg1', 'pg25', 'pg3'], False)"
expect_eq "NotOlderThan 0: the same" \
  "$(jget "$(kp_curl GET "$CM?resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=1")" "$shape")" \
  "(['pg1', 'pg25', 'pg3'], False)"

echo "PASS"
