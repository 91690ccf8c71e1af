#!/usr/bin/env bash
# priority.sh KPLANE KUBECTL -- Kubernetes' Priority admission with kubectl:
# `kubectl create priorityclass --global-default` once, a second default
# refused (403 Forbidden in Kubernetes' words), a pod resolved to its class's
# value, a pod without a class to the default's, an unknown class refused.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }
prio() { k get pod "$1" -o jsonpath='{.spec.priorityClassName}/{.spec.priority}/{.spec.preemptionPolicy}'; }

echo "--- a pod before any default: priority 0"
k run before --image=busybox --restart=Never >/dev/null
expect_eq "before" "$(prio before)" "/0/PreemptLowerPriority"

echo "--- one global default"
k create priorityclass normal --value=100 --global-default=true --preemption-policy=Never >/dev/null
out=$(k create priorityclass other --value=200 --global-default=true 2>&1) && fail "second default accepted"
expect_eq "second default" "$out" \
  'error: failed to create priorityclass: priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass normal is already marked as default. Only one default can exist'
k create priorityclass batch --value=10 >/dev/null
expect_eq "classes" "$(k get pc -o jsonpath='{range .items[*]}{.metadata.name}={.globalDefault} {end}')" \
  "batch= normal=true system-cluster-critical= system-node-critical= "

echo "--- pods resolved to their class, or the default"
k run dflt --image=busybox --restart=Never >/dev/null
expect_eq "default class" "$(prio dflt)" "normal/100/Never"
k run named --image=busybox --restart=Never --overrides='{"spec":{"priorityClassName":"batch"}}' >/dev/null
expect_eq "named class" "$(prio named)" "batch/10/PreemptLowerPriority"
out=$(k run lost --image=busybox --restart=Never --overrides='{"spec":{"priorityClassName":"nope"}}' 2>&1) &&
  fail "unknown class accepted"
expect_eq "unknown class" "$out" \
  'Error from server (Forbidden): pods "lost" is forbidden: no PriorityClass with name nope was found'
echo "PASS"
