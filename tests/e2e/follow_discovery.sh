#!/usr/bin/env bash
# follow_discovery.sh KPLANE KUBECTL -- the garbage collector and the
# namespace controller find resources through discovery, against a
# `kplane server` with its controllers and 2 simulated nodes:
#   - a Role and a PersistentVolumeClaim owned by a ConfigMap are collected
#     when the ConfigMap goes (kinds the collector had no list for before);
#   - a CRD created while the server runs: a custom resource owned by a
#     ConfigMap is collected when the ConfigMap goes, and a ConfigMap owned
#     by the custom resource when that goes;
#   - deleting a namespace removes a PVC, a Role, a RoleBinding, a CronJob and
#     a custom resource (of a CRD created after the server started) before
#     the namespace goes.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 2
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"
gone() { ! k get "$@" >/dev/null 2>&1; }

owned_by() { # owned_by KIND NAME UID: an ownerReferences list
  echo "[{apiVersion: v1, kind: $1, name: $2, uid: $3}]"
}

echo "--- a Role and a PVC owned by a ConfigMap go with it"
k create configmap owner >/dev/null
uid=$(k get cm owner -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: owned-role, ownerReferences: $(owned_by ConfigMap owner "$uid")}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: owned-pvc, ownerReferences: $(owned_by ConfigMap owner "$uid")}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
sleep 1 # the collector had its chance to (wrongly) collect them
k get role owned-role >/dev/null
k get pvc owned-pvc >/dev/null
k delete cm owner >/dev/null
kp_wait_for "role collected" 30 gone role owned-role
kp_wait_for "pvc collected" 30 gone pvc owned-pvc

echo "--- a CRD created now: its objects are owners and dependents"
k create -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
kp_wait_for "gadgets served" 30 k get gadgets
k create configmap holder >/dev/null
huid=$(k get cm holder -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, ownerReferences: $(owned_by ConfigMap holder "$huid")}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g2}
YAML
g2uid=$(k get gadget g2 -o jsonpath='{.metadata.uid}')
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: of-gadget
  ownerReferences: [{apiVersion: example.com/v1, kind: Gadget, name: g2, uid: $g2uid}]
YAML
sleep 1
k get gadget g1 >/dev/null
k get cm of-gadget >/dev/null
k delete cm holder >/dev/null
kp_wait_for "gadget owned by a configmap collected" 30 gone gadget g1
k delete gadget g2 >/dev/null
kp_wait_for "configmap owned by a gadget collected" 30 gone cm of-gadget

echo "--- namespace deletion removes the new kinds first"
k create namespace doomed >/dev/null
k create -n doomed -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim, finalizers: [example.com/hold]}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: default, namespace: doomed}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g3}
YAML
k delete namespace doomed --wait=false >/dev/null
# The PVC's finalizer holds the namespace; everything else goes meanwhile.
kp_wait_for "role removed" 30 gone role reader -n doomed
kp_wait_for "rolebinding removed" 30 gone rolebinding reader -n doomed
kp_wait_for "cronjob removed" 30 gone cronjob nightly -n doomed
kp_wait_for "gadget removed" 30 gone gadget g3 -n doomed
kp_wait_for "conditions name the PVC's finalizer" 30 sh -c \
  "$KUBECTL get ns doomed -o jsonpath='{.status.conditions}' | grep -q 'example.com/hold in 1 resource instances'"
expect_match "the PVC waits (deletionTimestamp)" \
  "$(k get pvc claim -n doomed -o jsonpath='{.metadata.deletionTimestamp}')" '^[0-9]{4}-'
expect_eq "namespace still there" "$(k get ns doomed -o jsonpath='{.status.phase}')" "Terminating"
k patch pvc claim -n doomed --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
kp_wait_for "namespace gone" 60 gone ns doomed
echo "PASS"
