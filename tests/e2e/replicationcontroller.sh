#!/usr/bin/env bash
# replicationcontroller.sh KPLANE KUBECTL -- ReplicationControllers as a
# kubectl user sees them, against a `kplane server` with its controllers,
# scheduler and 3 simulated nodes:
#   - an RC of 3 gets 3 pods, each with a controller ownerReference of kind
#     ReplicationController; its status counts them;
#   - a deleted pod is replaced;
#   - `kubectl scale rc --replicas=5` gives 5 (through
#     replicationcontrollers/scale, whose selector is the RC's label map as
#     a string), scaling to 1 deletes 4;
#   - a matching orphan pod is adopted, a pod relabelled out is released;
#   - deleting the RC cascades to its pods (the garbage collector).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

count() { k get pods -l app=web --no-headers 2>/dev/null | grep -vc Terminating || true; }
pods_are() { [ "$(count)" = "$1" ]; }
ready_is() { [ "$(k get rc web -o jsonpath='{.status.readyReplicas}')" = "$1" ]; }

kp_wait_for "3 ready nodes" 30 sh -c "[ \$($KUBECTL get nodes --no-headers | grep -c ' Ready ') = 3 ]"

echo "--- an RC of 3 gets 3 pods"
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 3
  selector: {app: web}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
YAML
kp_wait_for "3 pods" 60 pods_are 3
kp_wait_for "status: 3 ready" 60 ready_is 3
expect_eq "status.replicas" "$(k get rc web -o jsonpath='{.status.replicas}')" "3"
expect_eq "owner kinds" \
  "$(k get pods -l app=web -o jsonpath='{.items[*].metadata.ownerReferences[0].kind}')" \
  "ReplicationController ReplicationController ReplicationController"
expect_eq "owner is the controller" \
  "$(k get pods -l app=web -o jsonpath='{.items[*].metadata.ownerReferences[0].controller}')" \
  "true true true"
expect_eq "owner apiVersion" \
  "$(k get pods -l app=web -o jsonpath='{.items[0].metadata.ownerReferences[0].apiVersion}')" "v1"

echo "--- a deleted pod is replaced"
victim=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
k delete pod "$victim" --wait=false >/dev/null
kp_wait_for "victim gone" 60 sh -c "! $KUBECTL get pod $victim >/dev/null 2>&1"
kp_wait_for "3 pods again" 60 pods_are 3
expect_eq "the victim is not among them" \
  "$(k get pods -l app=web -o name | grep -c "/$victim\$" || true)" "0"

echo "--- the scale subresource"
scale=$(kp_curl GET /api/v1/namespaces/default/replicationcontrollers/web/scale)
expect_match "scale kind" "$scale" '"kind": *"Scale"'
expect_match "scale spec.replicas" "$scale" '"spec": *\{ *"replicas": *3'
expect_match "scale selector" "$scale" '"selector": *"app=web"'

echo "--- kubectl scale rc --replicas=5"
k scale rc web --replicas=5 >/dev/null
expect_eq "spec.replicas" "$(k get rc web -o jsonpath='{.spec.replicas}')" "5"
kp_wait_for "5 pods" 60 pods_are 5
kp_wait_for "status: 5 ready" 60 ready_is 5

echo "--- scale to 1 deletes 4"
k scale rc web --replicas=1 >/dev/null
kp_wait_for "1 pod" 60 pods_are 1
kp_wait_for "status: 1 ready" 60 ready_is 1
kp_wait_for "deleted pods gone" 90 sh -c "[ \$($KUBECTL get pods -l app=web --no-headers | wc -l) = 1 ]"

echo "--- adoption and release"
# A running pod outside the selector, made expensive to delete, then
# labelled into it: the RC adopts it and deletes its own pod instead.
k run orphan --image=nginx --labels=app=stray \
  --annotations=controller.kubernetes.io/pod-deletion-cost=1000 >/dev/null
k wait --for=condition=Ready pod/orphan --timeout=60s >/dev/null
k label pod orphan app=web --overwrite >/dev/null
kp_wait_for "orphan adopted" 30 sh -c \
  "[ \"\$($KUBECTL get pod orphan -o jsonpath='{.metadata.ownerReferences[0].kind}')\" = ReplicationController ]"
kp_wait_for "back to 1 pod: the orphan" 60 \
  sh -c "[ \"\$($KUBECTL get pods -l app=web -o name)\" = pod/orphan ]"
keep=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
k label pod "$keep" app=other --overwrite >/dev/null
kp_wait_for "relabelled pod released" 30 sh -c \
  "[ -z \"\$($KUBECTL get pod $keep -o jsonpath='{.metadata.ownerReferences}')\" ]"
kp_wait_for "a replacement" 60 pods_are 1
k delete pod "$keep" --wait=false >/dev/null

echo "--- deleting the RC cascades"
k delete rc web >/dev/null
expect_match "rc gone" "$(k get rc web 2>&1 || true)" 'NotFound'
kp_wait_for "pods collected" 90 sh -c "[ -z \"\$($KUBECTL get pods -l app=web --no-headers 2>/dev/null)\" ]"

echo "--- controller-manager lists it"
expect_match "--help names replicationcontroller" "$("$KP_BIN" controller-manager --help 2>&1)" \
  'replicationcontroller'
echo "PASS"
