#!/usr/bin/env bash
# cascade.sh KPLANE KUBECTL -- cascading deletion and namespace deletion as
# a kubectl user sees them, against a `kplane server` with its controllers
# (garbage collector, namespace controller), scheduler and 3 simulated nodes:
#   - delete deployment (background, kubectl's default): the deployment, its
#     ReplicaSet and its pods go;
#   - --cascade=orphan: only the deployment goes; the ReplicaSet and pods
#     stay, without their ownerReferences to it;
#   - --cascade=foreground: the deployment stays (deletionTimestamp,
#     finalizer foregroundDeletion) until its ReplicaSet and pods are gone;
#   - an object whose owner does not exist (made-up uid, or another uid under
#     the owner's name) is collected; a cluster-scoped object with a
#     namespaced owner too, with an OwnerRefInvalidNamespace event;
#   - custom resources are owners and dependents like built-in kinds;
#   - delete namespace: creates into it are refused (403) while it
#     terminates, its content goes (conditions say what remains), then the
#     namespace (NotFound); PUT .../finalize; default, kube-system and
#     kube-public cannot be deleted;
#   - bad DeleteOptions are 422; batch/v1 Jobs default to Orphan.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

count() { k get "$@" --no-headers 2>/dev/null | wc -l; }
none() { [ "$(count "$@")" = 0 ]; }
gone() { ! k get "$@" >/dev/null 2>&1; }

deploy() { # deploy NAME [NAMESPACE]
  k create deployment "$1" --image=nginx --replicas=3 -n "${2:-default}" >/dev/null
  k rollout status "deploy/$1" -n "${2:-default}" --timeout=90s >/dev/null
}

echo "--- simulated nodes are Ready"
kp_wait_for "3 ready nodes" 30 sh -c "[ \$($KUBECTL get nodes --no-headers | grep -c ' Ready ') = 3 ]"

echo "--- delete deployment (background): deployment, ReplicaSet and pods go"
deploy bg
expect_eq "bg: one replicaset" "$(count rs -l app=bg)" "1"
expect_eq "bg: 3 pods" "$(count pods -l app=bg)" "3"
k delete deployment bg >/dev/null
expect_match "bg: deployment gone at once" "$(k get deploy bg 2>&1 || true)" 'NotFound'
kp_wait_for "bg: replicaset collected" 60 none rs -l app=bg
kp_wait_for "bg: pods collected" 90 none pods -l app=bg

echo "--- --cascade=orphan: only the deployment goes"
deploy orph
rs=$(k get rs -l app=orph -o jsonpath='{.items[0].metadata.name}')
k delete deployment orph --cascade=orphan >/dev/null
expect_match "orphan: deployment gone" "$(k get deploy orph 2>&1 || true)" 'NotFound'
kp_wait_for "orphan: replicaset loses its ownerReference" 60 \
  sh -c "[ -z \"\$($KUBECTL get rs $rs -o jsonpath='{.metadata.ownerReferences}')\" ]"
sleep 2 # the collector had its chance to (wrongly) delete them
expect_eq "orphan: replicaset stays" "$(count rs -l app=orph)" "1"
expect_eq "orphan: pods stay" "$(count pods -l app=orph)" "3"
expect_eq "orphan: pods still owned by the replicaset" \
  "$(k get pods -l app=orph -o jsonpath='{.items[*].metadata.ownerReferences[0].name}')" "$rs $rs $rs"
k delete rs "$rs" >/dev/null
kp_wait_for "orphan: pods collected with their replicaset" 90 none pods -l app=orph

echo "--- --cascade=foreground: the deployment waits for its dependents"
deploy fg
# One more dependent that blocks its owner's deletion and holds on (a
# finalizer of its own): the deployment must wait for it too.
fg_uid=$(k get deploy fg -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: fg-hold
  finalizers: [example.com/hold]
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: fg, uid: $fg_uid, blockOwnerDeletion: true}
YAML
k delete deployment fg --cascade=foreground --wait=false >/dev/null
expect_match "foreground: deletionTimestamp" "$(k get deploy fg -o jsonpath='{.metadata.deletionTimestamp}')" '^20'
expect_match "foreground: finalizer" "$(k get deploy fg -o jsonpath='{.metadata.finalizers}')" 'foregroundDeletion'
kp_wait_for "foreground: replicaset deleted" 60 none rs -l app=fg
kp_wait_for "foreground: pods deleted" 90 none pods -l app=fg
kp_wait_for "foreground: the blocking configmap is being deleted" 60 sh -c \
  "[ -n \"\$($KUBECTL get cm fg-hold -o jsonpath='{.metadata.deletionTimestamp}')\" ]"
sleep 2 # the collector had its chance to (wrongly) let the deployment go
expect_match "foreground: deployment still waits for its blocking dependent" \
  "$(k get deploy fg -o jsonpath='{.metadata.finalizers}')" 'foregroundDeletion'
k patch cm fg-hold --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
kp_wait_for "foreground: deployment gone after its last dependent" 60 gone deploy fg

echo "--- an object whose owner does not exist is collected"
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: stray
  ownerReferences:
  - apiVersion: apps/v1
    kind: Deployment
    name: ghost
    uid: 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0
data: {a: b}
YAML
# An owner present under its name but with another uid is no owner either.
k create configmap real >/dev/null
real_uid=$(k get cm real -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: owned
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: real
    uid: $real_uid
YAML
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: impostor
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: real
    uid: 11111111-2222-3333-4444-555555555555
YAML
kp_wait_for "stray configmap collected" 60 gone cm stray
kp_wait_for "configmap owned by another uid collected" 60 gone cm impostor
sleep 1
k get cm owned >/dev/null || fail "a configmap with a live owner was collected"
k delete cm real >/dev/null
kp_wait_for "dependent of a deleted configmap collected" 60 gone cm owned

# A cluster-scoped object cannot be owned by a namespaced one: collected,
# with Kubernetes' warning event.
k create configmap nsowner >/dev/null
nsowner_uid=$(k get cm nsowner -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: misowned
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: nsowner, uid: $nsowner_uid}]
YAML
kp_wait_for "cluster-scoped dependent of a namespaced owner collected" 90 gone ns misowned
expect_match "OwnerRefInvalidNamespace event" \
  "$(k get events --field-selector reason=OwnerRefInvalidNamespace -o jsonpath='{.items[*].message}')" \
  "ownerRef \[v1/ConfigMap, namespace: , name: nsowner, uid: $nsowner_uid\] does not exist in namespace \"\""

echo "--- custom resources: owners and dependents alike"
k create -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
YAML
kp_wait_for "widgets served" 30 k get widgets
k create -f - >/dev/null <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
YAML
w1_uid=$(k get widget w1 -o jsonpath='{.metadata.uid}')
k create configmap anchor >/dev/null
anchor_uid=$(k get cm anchor -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: of-widget
  ownerReferences: [{apiVersion: example.com/v1, kind: Widget, name: w1, uid: $w1_uid}]
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w2
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: anchor, uid: $anchor_uid}]
YAML
sleep 1
k get cm of-widget >/dev/null || fail "a configmap owned by a live widget was collected"
k delete widget w1 >/dev/null
kp_wait_for "configmap of a deleted widget collected" 60 gone cm of-widget
k delete cm anchor >/dev/null
kp_wait_for "widget of a deleted configmap collected" 60 gone widget w2

echo "--- delete namespace: content first, then the namespace"
k create namespace doomed >/dev/null
deploy app doomed
k create configmap c1 --from-literal=a=1 -n doomed >/dev/null
k create configmap c2 --from-literal=b=2 -n doomed >/dev/null
k create secret generic s1 --from-literal=p=q -n doomed >/dev/null
k create service clusterip svc1 --tcp=80:80 -n doomed >/dev/null
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, namespace: doomed}\n' | k create -f - >/dev/null
# An object that holds on (a finalizer of its own) keeps the namespace
# Terminating while the rest goes, until the test lets it go.
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: sticky
  namespace: doomed
  finalizers: [example.com/hold]
YAML
k delete namespace doomed --wait=false >/dev/null
expect_eq "namespace Terminating" "$(k get ns doomed -o jsonpath='{.status.phase}')" "Terminating"
expect_eq "spec.finalizers kept meanwhile" "$(k get ns doomed -o jsonpath='{.spec.finalizers[0]}')" "kubernetes"
err=$(k create configmap late -n doomed 2>&1 || true)
expect_match "create refused while terminating" "$err" \
  'is forbidden: unable to create new content in namespace doomed because it is being terminated'
code=$(kp_curl POST /api/v1/namespaces/doomed/configmaps -o /dev/null -w '%{http_code}' \
  -H 'Content-Type: application/json' -d '{"metadata":{"name":"late2"}}')
expect_eq "create refused: 403" "$code" "403"
err=$(k delete namespace doomed --wait=false 2>&1 || true)
expect_match "second delete: Conflict" "$err" 'ensuring all content is removed from this namespace'
kp_wait_for "deployment, replicaset, pods, configmaps, secret, service, widget deleted" 120 sh -c \
  "[ \"\$($KUBECTL get deploy,rs,pods,secrets,svc,widgets -n doomed --no-headers 2>/dev/null | wc -l)\" = 0 ] &&
   [ \"\$($KUBECTL get cm -n doomed --no-headers 2>/dev/null | wc -l)\" = 1 ]"
kp_wait_for "FinalizersRemaining condition" 60 sh -c \
  "$KUBECTL get ns doomed -o jsonpath='{.status.conditions[?(@.type==\"NamespaceFinalizersRemaining\")].message}' | grep -q 'example.com/hold in 1 resource instances'"
expect_match "ContentRemaining condition" \
  "$(k get ns doomed -o jsonpath='{.status.conditions[?(@.type=="NamespaceContentRemaining")].message}')" \
  'Some resources are remaining: configmaps\. has 1 resource instances'
expect_match "ContentFailure condition" \
  "$(k get ns doomed -o jsonpath='{.status.conditions[?(@.type=="NamespaceDeletionContentFailure")].reason}')" \
  '^ContentDeleted$'
expect_eq "still Terminating" "$(k get ns doomed -o jsonpath='{.status.phase}')" "Terminating"
k patch cm sticky -n doomed --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
kp_wait_for "namespace gone once its content is" 120 gone ns doomed
expect_match "get ns: NotFound" "$(k get ns doomed 2>&1 || true)" 'NotFound'
# A namespace of that name starts empty, but for what every namespace gets
# (as in Kubernetes: its kube-root-ca.crt ConfigMap and default ServiceAccount).
k create namespace doomed >/dev/null
expect_eq "recreated namespace is empty" \
  "$(count cm,secret,svc,deploy,rs,pods,widgets -n doomed --field-selector metadata.name!=kube-root-ca.crt)" "0"

echo "--- the finalize subresource"
# PUT /finalize: only spec.finalizers changes; names must be qualified.
k create namespace fin >/dev/null
body=$(k get ns fin -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); d["spec"]["finalizers"]=["bogus"]; print(json.dumps(d))')
out=$(kp_curl PUT /api/v1/namespaces/fin/finalize -H 'Content-Type: application/json' -d "$body")
expect_match "finalize: bad name" "$out" 'neither a standard finalizer name nor is it fully qualified'
body=$(k get ns fin -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); d["spec"]["finalizers"]=[]; print(json.dumps(d))')
kp_curl PUT /api/v1/namespaces/fin/finalize -H 'Content-Type: application/json' -d "$body" >/dev/null
expect_eq "finalize emptied spec.finalizers" "$(k get ns fin -o jsonpath='{.spec.finalizers}')" ""
k delete namespace fin >/dev/null
expect_match "no finalizers: gone at once" "$(k get ns fin 2>&1 || true)" 'NotFound'

echo "--- default, kube-system and kube-public may not be deleted"
for ns in default kube-system kube-public; do
  expect_match "delete ns $ns" "$(k delete namespace $ns 2>&1 || true)" \
    "namespaces \"$ns\" is forbidden: this namespace may not be deleted"
  expect_eq "ns $ns still Active" "$(k get ns $ns -o jsonpath='{.status.phase}')" "Active"
done

echo "--- bad DeleteOptions"
out=$(kp_curl DELETE '/api/v1/namespaces/default/configmaps/x?propagationPolicy=Sideways')
expect_match "unknown policy: 422" "$out" 'Unsupported value: \\"Sideways\\": supported values: \\"Foreground\\", \\"Background\\", \\"Orphan\\", \\"nil\\"'
out=$(kp_curl DELETE '/api/v1/namespaces/default/configmaps/x?propagationPolicy=Orphan&orphanDependents=true')
expect_match "both set: 422" "$out" 'orphanDependents and deletionPropagation cannot be both set'

echo "--- batch/v1 Jobs orphan their pods by default (Kubernetes keeps that for compatibility)"
k create -f - >/dev/null <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML
out=$(kp_curl DELETE /apis/batch/v1/namespaces/default/jobs/j1 -H 'Content-Type: application/json' -d '{}')
expect_match "job: marked with the orphan finalizer" "$out" '"finalizers":\["orphan"\]'
kp_wait_for "job gone once the collector orphaned its pods" 60 gone job j1

echo "PASS"
