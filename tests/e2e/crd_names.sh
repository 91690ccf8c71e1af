#!/usr/bin/env bash
# crd_names.sh KPLANE KUBECTL -- CustomResourceDefinitions may not claim what
# is not theirs (issue 14, item 5), against a real kplane server.
#
# Before the fix a CRD named leases.coordination.k8s.io was accepted and its
# deletion deleted every real Lease; one named
# customresourcedefinitions.apiextensions.k8s.io deleted every CRD without
# running their finalizers. Checked here:
#   - both are refused (422, spec.names.plural), whatever their annotations;
#     real Leases, CRDs, custom objects and finalizers stay as they were;
#   - a *.k8s.io group needs the api-approved.kubernetes.io annotation, with
#     Kubernetes' field path and messages; with it the CRD is served and
#     carries the KubernetesAPIApprovalPolicyConformant condition;
#   - names a built-in or another CRD of the group holds: NamesAccepted False
#     with Kubernetes' reason and message, and the CRD is not served;
#   - deleting CRDs deletes their own objects (the finalizer runs) and nothing
#     of any other resource.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

k() { "$KUBECTL" "$@"; }
CRDS=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
LEASES=/apis/coordination.k8s.io/v1/namespaces/default/leases
J='Content-Type: application/json'
APPROVED='"api-approved.kubernetes.io":"https://github.com/kubernetes/enhancements/pull/1111"'

# py EXPR < JSON: print a Python expression over s, the parsed document.
py() { python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"; }

# crd NAME GROUP PLURAL KIND [ANNOTATIONS [NAMES_EXTRA]]: a CRD body.
crd() {
  cat <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"$1","annotations":{${5:-}}},
 "spec":{"group":"$2","scope":"Namespaced",
  "names":{"plural":"$3","kind":"$4"${6:-}},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}
JSON
}

# post PATH BODY: POST, leaving the body in $OUT and the HTTP code in $CODE.
OUT=$KP_DIR/out.json
post() {
  CODE=$(kp_curl POST "$1" -H "$J" -d "$2" -o "$OUT" -w '%{http_code}')
}
# cause FIELD: the message of the cause naming FIELD in $OUT ("" if none).
cause() { py "next((c['message'] for c in s['details']['causes'] if c.get('field') == '$1'), '')" <"$OUT"; }

# condition CRD TYPE: "status reason message" of a CRD's condition.
condition() {
  kp_curl GET "$CRDS/$1" | py "next((c['status']+' '+c['reason']+' '+c['message'] for c in s.get('status',{}).get('conditions',[]) if c['type'] == '$2'), '')"
}
lease_names() { kp_curl GET "$LEASES" | py "' '.join(sorted(i['metadata']['name'] for i in s['items']))"; }
crd_names() { kp_curl GET "$CRDS" | py "' '.join(sorted(i['metadata']['name'] for i in s['items']))"; }
# cond_is CRD TYPE PREFIX: the condition's text starts with PREFIX.
cond_is() { [[ "$(condition "$1" "$2")" == "$3"* ]]; }
crds_are() { [ "$(crd_names)" = "$1" ]; }
served() { [ "$(kp_curl GET "$1" -o /dev/null -w '%{http_code}')" = 200 ]; }
is_gone() { [ "$(kp_curl GET "$1" -o /dev/null -w '%{http_code}')" = 404 ]; }

echo "--- real Leases, and a CRD with objects of its own"
for n in holder-a holder-b; do
  post "$LEASES" "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"$n\"},\"spec\":{\"holderIdentity\":\"$n\"}}"
  expect_eq "lease $n created" "$CODE" 201
done
post "$CRDS" "$(crd widgets.example.com example.com widgets Widget)"
expect_eq "widgets CRD created" "$CODE" 201
kp_wait_for "widgets served" 10 served /apis/example.com/v1/namespaces/default/widgets
for n in w1 w2; do
  post /apis/example.com/v1/namespaces/default/widgets \
    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"$n\"}}"
  expect_eq "widget $n created" "$CODE" 201
done
WIDGETS_FIN=$(kp_curl GET "$CRDS/widgets.example.com" | py "s['metadata']['finalizers']")
expect_eq "widgets CRD finalizer" "$WIDGETS_FIN" "['customresourcecleanup.apiextensions.k8s.io']"

echo "--- CRDs naming built-in resources are refused, annotated or not"
SHADOW_MSG='Invalid value: "leases": the built-in resource leases.coordination.k8s.io is served at this name; a CustomResourceDefinition may not take its place'
post "$CRDS" "$(crd leases.coordination.k8s.io coordination.k8s.io leases Lease)"
expect_eq "leases CRD without annotation" "$CODE" 422
expect_eq "its shadowing cause" "$(cause spec.names.plural)" "$SHADOW_MSG"
expect_eq "its approval cause" "$(cause 'metadata.annotations[api-approved.kubernetes.io]')" \
  'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111'
post "$CRDS" "$(crd leases.coordination.k8s.io coordination.k8s.io leases Lease "$APPROVED")"
expect_eq "leases CRD with annotation" "$CODE" 422
expect_eq "its only cause" "$(py "[c['field'] for c in s['details']['causes']]" <"$OUT")" "['spec.names.plural']"
expect_eq "its message" "$(py "s['message']" <"$OUT")" \
  "CustomResourceDefinition.apiextensions.k8s.io \"leases.coordination.k8s.io\" is invalid: spec.names.plural: $SHADOW_MSG"
post "$CRDS" "$(crd customresourcedefinitions.apiextensions.k8s.io apiextensions.k8s.io \
  customresourcedefinitions CustomResourceDefinition "$APPROVED")"
expect_eq "customresourcedefinitions CRD" "$CODE" 422
expect_match "its cause" "$(cause spec.names.plural)" \
  'the built-in resource customresourcedefinitions.apiextensions.k8s.io is served at this name'
# kubectl sees the same refusal.
set +e
KOUT=$(crd leases.coordination.k8s.io coordination.k8s.io leases Lease "$APPROVED" | k create -f - 2>&1)
set -e
expect_match "kubectl create refused" "$KOUT" 'is invalid: spec.names.plural: Invalid value: "leases"'
expect_eq "leases untouched" "$(lease_names)" "holder-a holder-b"
expect_eq "no CRD added" "$(crd_names)" "widgets.example.com"
expect_eq "kubectl still lists the leases" "$(k get leases --no-headers | wc -l)" 2

echo "--- a *.k8s.io group needs the api-approved.kubernetes.io annotation"
post "$CRDS" "$(crd gizmos.tools.k8s.io tools.k8s.io gizmos Gizmo)"
expect_eq "no annotation" "$CODE" 422
expect_eq "its reason" "$(py "s['reason']" <"$OUT")" Invalid
expect_eq "its message" "$(py "s['message']" <"$OUT")" \
  'CustomResourceDefinition.apiextensions.k8s.io "gizmos.tools.k8s.io" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111'
post "$CRDS" "$(crd gizmos.x.kubernetes.io x.kubernetes.io gizmos Gizmo '"api-approved.kubernetes.io":"soon"')"
expect_eq "a bad annotation" "$CODE" 422
expect_eq "its cause" "$(cause 'metadata.annotations[api-approved.kubernetes.io]')" \
  'Invalid value: "soon": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
post "$CRDS" "$(crd gizmos.tools.k8s.io tools.k8s.io gizmos Gizmo "$APPROVED")"
expect_eq "approved" "$CODE" 201
kp_wait_for "gizmos served" 10 served /apis/tools.k8s.io/v1/namespaces/default/gizmos
kp_wait_for "gizmos approval condition" 10 cond_is gizmos.tools.k8s.io KubernetesAPIApprovalPolicyConformant True
expect_eq "approval condition" "$(condition gizmos.tools.k8s.io KubernetesAPIApprovalPolicyConformant)" \
  "True ApprovedAnnotation approved in https://github.com/kubernetes/enhancements/pull/1111"
expect_eq "names accepted" "$(condition gizmos.tools.k8s.io NamesAccepted)" "True NoConflicts no conflicts found"
expect_eq "established" "$(condition gizmos.tools.k8s.io Established)" \
  "True InitialNamesAccepted the initial names have been accepted"
post "$CRDS" "$(crd doodads.tools.k8s.io tools.k8s.io doodads Doodad '"api-approved.kubernetes.io":"unapproved, experimental"')"
expect_eq "bypassed" "$CODE" 201
kp_wait_for "doodads condition" 10 cond_is doodads.tools.k8s.io KubernetesAPIApprovalPolicyConformant False
expect_eq "bypassed condition" "$(condition doodads.tools.k8s.io KubernetesAPIApprovalPolicyConformant)" \
  'False UnapprovedAnnotation not approved: "unapproved, experimental"'
# An update that leaves the approval as it was is never refused for it; one
# that drops it is.
CODE=$(kp_curl PATCH "$CRDS/gizmos.tools.k8s.io" -H 'Content-Type: application/merge-patch+json' \
  -d '{"metadata":{"annotations":{"api-approved.kubernetes.io":null}}}' -o "$OUT" -w '%{http_code}')
expect_eq "dropping the annotation" "$CODE" 422
expect_match "its cause" "$(cause 'metadata.annotations[api-approved.kubernetes.io]')" '^Required value: protected groups'
CODE=$(kp_curl PATCH "$CRDS/gizmos.tools.k8s.io" -H 'Content-Type: application/merge-patch+json' \
  -d '{"metadata":{"labels":{"touched":"yes"}}}' -o "$OUT" -w '%{http_code}')
expect_eq "an unrelated update" "$CODE" 200

echo "--- names held by a built-in or another CRD: not accepted, not served"
post "$CRDS" "$(crd bars.coordination.k8s.io coordination.k8s.io bars Lease "$APPROVED" ',"singular":"bar","listKind":"BarList"')"
expect_eq "bars CRD (kind Lease) stored" "$CODE" 201
kp_wait_for "bars NamesAccepted" 10 cond_is bars.coordination.k8s.io NamesAccepted False
expect_eq "bars NamesAccepted" "$(condition bars.coordination.k8s.io NamesAccepted)" \
  'False KindConflict "Lease" is already in use'
expect_eq "bars Established" "$(condition bars.coordination.k8s.io Established)" \
  "False NotAccepted not all names are accepted"
is_gone /apis/coordination.k8s.io/v1/namespaces/default/bars || fail "bars served"
post "$CRDS" "$(crd gadgets.example.com example.com gadgets Widget '' ',"singular":"gadget","listKind":"GadgetList"')"
expect_eq "gadgets CRD (kind Widget) stored" "$CODE" 201
kp_wait_for "gadgets NamesAccepted" 10 cond_is gadgets.example.com NamesAccepted False
expect_eq "gadgets NamesAccepted" "$(condition gadgets.example.com NamesAccepted)" \
  'False KindConflict "Widget" is already in use'
is_gone /apis/example.com/v1/namespaces/default/gadgets || fail "gadgets served"
expect_eq "widgets still accepted" "$(condition widgets.example.com NamesAccepted)" "True NoConflicts no conflicts found"
served /apis/example.com/v1/namespaces/default/widgets || fail "widgets no longer served"

echo "--- shadowing CRDs stored before they were refused: never served, deleted alone"
# Planted in the store (the server stopped) as the server before this fix
# wrote them: with the cleanup finalizer and a status saying they were
# established.
plant() { # plant PLURAL GROUP KIND N (N: a digit making uid and singular unique)
  "$KP_BIN" store --data-dir "$KP_DIR/data" put \
    "/registry/apiextensions.k8s.io/customresourcedefinitions/$1.$2" - >/dev/null <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"$1.$2","uid":"00000000-0000-4000-8000-00000000000$4","generation":1,
  "creationTimestamp":"2026-01-01T00:00:00Z","finalizers":["customresourcecleanup.apiextensions.k8s.io"]},
 "spec":{"group":"$2","scope":"Namespaced","conversion":{"strategy":"None"},
  "names":{"plural":"$1","singular":"x$4","kind":"$3","listKind":"$3List"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]},
 "status":{"acceptedNames":{"plural":"$1","singular":"x$4","kind":"$3","listKind":"$3List"},
  "conditions":[{"type":"NamesAccepted","status":"True","reason":"NoConflicts","message":"no conflicts found"},
   {"type":"Established","status":"True","reason":"InitialNamesAccepted","message":"the initial names have been accepted"}],
  "storedVersions":["v1"]}}
JSON
}
# The server starts again on that store, as an upgraded server would.
kp_stop
plant leases coordination.k8s.io OldLease 1
plant customresourcedefinitions apiextensions.k8s.io OldDefinition 2
kp_restart "${KP_API_ONLY[@]}"
kp_wait_for "planted leases CRD refused its names" 10 \
  cond_is leases.coordination.k8s.io NamesAccepted 'False PluralConflict "leases" is already in use'
kp_wait_for "planted CRD of CRDs refused its names" 10 \
  cond_is customresourcedefinitions.apiextensions.k8s.io NamesAccepted 'False PluralConflict "customresourcedefinitions" is already in use'
expect_eq "planted leases CRD not established" "$(condition leases.coordination.k8s.io Established)" \
  "False NotAccepted not all names are accepted"
expect_eq "leases listed once in discovery" \
  "$(kp_curl GET /apis/coordination.k8s.io/v1 | py "[r['name'] for r in s['resources']].count('leases')")" 1
expect_eq "the leases are still the built-in's" "$(lease_names)" "holder-a holder-b"
# One at a time, each checked as soon as it is gone (the old server lost every
# Lease to the first, every CRD to the second).
kp_curl DELETE "$CRDS/leases.coordination.k8s.io" -o /dev/null
kp_wait_for "planted leases CRD deleted" 20 is_gone "$CRDS/leases.coordination.k8s.io"
expect_eq "leases untouched by the planted CRD's deletion" "$(lease_names)" "holder-a holder-b"
kp_curl DELETE "$CRDS/customresourcedefinitions.apiextensions.k8s.io" -o /dev/null
kp_wait_for "planted CRD of CRDs deleted" 20 is_gone "$CRDS/customresourcedefinitions.apiextensions.k8s.io"
expect_eq "every other CRD kept" "$(crd_names)" \
  "bars.coordination.k8s.io doodads.tools.k8s.io gadgets.example.com gizmos.tools.k8s.io widgets.example.com"
expect_eq "widgets CRD kept its finalizer" \
  "$(kp_curl GET "$CRDS/widgets.example.com" | py "s['metadata']['finalizers']")" "$WIDGETS_FIN"
served /apis/example.com/v1/namespaces/default/widgets || fail "widgets no longer served"

echo "--- deleting CRDs deletes their objects and nothing else"
post /apis/tools.k8s.io/v1/namespaces/default/gizmos \
  '{"apiVersion":"tools.k8s.io/v1","kind":"Gizmo","metadata":{"name":"g1"}}'
expect_eq "gizmo created" "$CODE" 201
for c in bars.coordination.k8s.io gadgets.example.com gizmos.tools.k8s.io doodads.tools.k8s.io; do
  kp_curl DELETE "$CRDS/$c" -o /dev/null
done
kp_wait_for "deleted CRDs gone" 20 crds_are widgets.example.com
expect_eq "leases untouched" "$(lease_names)" "holder-a holder-b"
expect_eq "widgets untouched" \
  "$(kp_curl GET /apis/example.com/v1/namespaces/default/widgets | py "' '.join(sorted(i['metadata']['name'] for i in s['items']))")" "w1 w2"
expect_eq "widgets CRD finalizer kept" \
  "$(kp_curl GET "$CRDS/widgets.example.com" | py "s['metadata']['finalizers']")" "$WIDGETS_FIN"
# The gizmos' objects went with their CRD: a new CRD of that name finds none.
post "$CRDS" "$(crd gizmos.tools.k8s.io tools.k8s.io gizmos Gizmo "$APPROVED")"
expect_eq "gizmos CRD again" "$CODE" 201
kp_wait_for "gizmos served again" 10 served /apis/tools.k8s.io/v1/namespaces/default/gizmos
expect_eq "no gizmo left" \
  "$(kp_curl GET /apis/tools.k8s.io/v1/namespaces/default/gizmos | py "len(s['items'])")" 0
k delete crd widgets.example.com gizmos.tools.k8s.io --wait=true --timeout=30s >/dev/null
expect_eq "no CRD left" "$(crd_names)" ""
expect_eq "leases untouched at the end" "$(lease_names)" "holder-a holder-b"
post "$CRDS" "$(crd widgets.example.com example.com widgets Widget)"
kp_wait_for "widgets served again" 10 served /apis/example.com/v1/namespaces/default/widgets
expect_eq "the widgets went with their CRD" \
  "$(kp_curl GET /apis/example.com/v1/namespaces/default/widgets | py "len(s['items'])")" 0

# Deleting a CRD deletes its objects through the normal delete path: one
# held by a finalizer stays (and the CRD with it, still served but for
# creates, refused with Kubernetes' 405) until the finalizer goes.
kp_curl POST /apis/example.com/v1/namespaces/default/widgets -H "$J" -o /dev/null \
  -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"held","finalizers":["example.com/hold"]}}'
kp_curl POST /apis/example.com/v1/namespaces/default/widgets -H "$J" -o /dev/null \
  -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"free"}}'
k delete crd widgets.example.com --wait=false >/dev/null
only_held() {
  [ "$(kp_curl GET /apis/example.com/v1/namespaces/default/widgets | py "' '.join(sorted(i['metadata']['name'] for i in s['items']))")" = held ]
}
kp_wait_for "the free widget to go, the held one to stay" 10 only_held
expect_match "held widget marked" "$(kp_curl GET /apis/example.com/v1/namespaces/default/widgets/held)" '"deletionTimestamp"'
code=$(kp_curl POST /apis/example.com/v1/namespaces/default/widgets -H "$J" -o "$KP_DIR/out" -w '%{http_code}' \
  -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"late"}}')
expect_eq "create while terminating" "$code" 405
expect_match "create while terminating" "$(cat "$KP_DIR/out")" "create not allowed while custom resource definition is terminating"
kp_curl GET "$CRDS/widgets.example.com" -o /dev/null -w '%{http_code}' | grep -q 200 || fail "the CRD went before its objects"
kp_curl PATCH /apis/example.com/v1/namespaces/default/widgets/held -H 'Content-Type: application/merge-patch+json' \
  -d '{"metadata":{"finalizers":null}}' -o /dev/null
crd_gone() { [ "$(kp_curl GET "$CRDS/widgets.example.com" -o /dev/null -w '%{http_code}')" = 404 ]; }
kp_wait_for "the CRD to go after its last object" 10 crd_gone
echo "ok: a CRD's objects go through the delete path, finalizers first"

kill -0 "$KP_PID" || fail "server died"
# Both servers stopped gracefully: LeakSanitizer has reported by now.
kp_stop
if grep -En "ERROR: (Address|Leak)Sanitizer|runtime error:" "$KP_DIR/server.log"; then
  fail "sanitizer errors in the server log"
fi
echo "PASS"
