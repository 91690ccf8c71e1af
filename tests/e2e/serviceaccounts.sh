#!/usr/bin/env bash
# serviceaccounts.sh KPLANE KUBECTL -- what every namespace gets, with a
# `kplane server` running its controllers:
#   - the serviceaccount controller makes a `default` ServiceAccount, and the
#     root-ca-cert-publisher a `kube-root-ca.crt` ConfigMap holding exactly
#     the cluster CA (data ca.crt, the server's DATA_DIR/ca.crt), in the
#     namespaces there at start and in a new one within 1 s (issue 17's
#     figure; polled every 50 ms, the time printed);
#   - both come back after a delete, and the ConfigMap's data after an edit;
#   - a terminating namespace gets neither back.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 0 --no-scheduler
k() { "$KUBECTL" "$@"; }
CA=$(cat "$KP_DIR/data/ca.crt")

has_both() { # NS
  k get serviceaccount default -n "$1" >/dev/null 2>&1 &&
    k get configmap kube-root-ca.crt -n "$1" >/dev/null 2>&1
}
ca_of() { k get configmap kube-root-ca.crt -n "$1" -o jsonpath='{.data.ca\.crt}'; }
keys_of() { k get configmap kube-root-ca.crt -n "$1" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}'; }

echo "--- the namespaces there at start"
for ns in default kube-system kube-public kube-node-lease; do
  kp_wait_for "default and kube-root-ca.crt in $ns" 10 has_both "$ns"
  [ "$(ca_of "$ns")" = "$CA" ] || { echo "FAIL: $ns: kube-root-ca.crt is not the cluster CA"; exit 1; }
done

echo "--- a new namespace has both within 1 s"
k create namespace team-a >/dev/null
t0=$(date +%s%N)
for _ in $(seq 1 100); do
  has_both team-a && break
  sleep 0.05
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
has_both team-a || { echo "FAIL: team-a lacks default or kube-root-ca.crt after ${ms} ms"; exit 1; }
echo "both after ${ms} ms"
[ "$ms" -le 1000 ] || { echo "FAIL: ${ms} ms, over 1 s"; exit 1; }
[ "$(ca_of team-a)" = "$CA" ] || { echo "FAIL: team-a's kube-root-ca.crt is not the cluster CA"; exit 1; }
[ "$(keys_of team-a)" = "ca.crt " ] || { echo "FAIL: kube-root-ca.crt keys: $(keys_of team-a)"; exit 1; }

echo "--- deleted, they come back; an edit is undone"
uid=$(k get sa default -n team-a -o jsonpath='{.metadata.uid}')
k delete sa default -n team-a >/dev/null
new_sa() { u=$(k get sa default -n team-a -o jsonpath='{.metadata.uid}' 2>/dev/null) && [ -n "$u" ] && [ "$u" != "$uid" ]; }
kp_wait_for "default made again" 10 new_sa
k delete configmap kube-root-ca.crt -n team-a >/dev/null
kp_wait_for "kube-root-ca.crt made again" 10 has_both team-a
k patch configmap kube-root-ca.crt -n team-a --type merge -p '{"data":{"ca.crt":"forged","extra":"x"}}' >/dev/null
restored() { [ "$(ca_of team-a)" = "$CA" ] && [ "$(keys_of team-a)" = "ca.crt " ]; }
kp_wait_for "kube-root-ca.crt's data put back" 10 restored

echo "--- a terminating namespace gets nothing back"
k create namespace going >/dev/null
kp_wait_for "both in going" 10 has_both going
# A finalizer of our own keeps it Terminating while its content goes.
k create configmap hold -n going >/dev/null
k patch configmap hold -n going --type merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
k delete namespace going --wait=false >/dev/null
sa_gone() { ! k get sa default -n going >/dev/null 2>&1; }
cm_gone() { ! k get configmap kube-root-ca.crt -n going >/dev/null 2>&1; }
kp_wait_for "default gone from going" 30 sa_gone
kp_wait_for "kube-root-ca.crt gone from going" 30 cm_gone
sleep 1
phase=$(k get namespace going -o jsonpath='{.status.phase}')
[ "$phase" = Terminating ] || { echo "FAIL: going is $phase, not Terminating"; exit 1; }
sa_gone && cm_gone || { echo "FAIL: made again in a terminating namespace"; exit 1; }
k patch configmap hold -n going --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null
ns_gone() { ! k get namespace going >/dev/null 2>&1; }
kp_wait_for "going gone" 30 ns_gone
echo PASS
