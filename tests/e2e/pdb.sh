#!/usr/bin/env bash
# pdb.sh KPLANE KUBECTL -- PodDisruptionBudgets, with a `kplane server`
# running its controllers, scheduler and 3 simulated nodes:
#   - the disruption controller fills in the status (expectedPods,
#     currentHealthy, desiredHealthy, disruptionsAllowed, observedGeneration,
#     the DisruptionAllowed condition) for minAvailable and for a percentage
#     maxUnavailable (against the Deployment's replicas);
#   - an eviction the budget forbids is Kubernetes' 429 with its
#     DisruptionBudget cause, and `kubectl drain` waits instead of evicting;
#   - an allowed eviction is recorded in status.disruptedPods and spends the
#     disruption; `kubectl drain` then drains; dryRun spends nothing;
#   - two budgets over one pod: 500, as Kubernetes answers;
#   - validation: minAvailable with maxUnavailable, a percentage over 100%.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }

status() { k get pdb "$1" -o jsonpath="{.status.$2}"; }
evict() {
  kp_curl POST "/api/v1/namespaces/default/pods/$1/eviction${2:-}" \
    -H 'Content-Type: application/json' \
    -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"'$1'"}}' \
    -w '\n%{http_code}'
}
pdb() { # NAME SPEC-JSON
  k apply -f - >/dev/null <<JSON
{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"$1"},
 "spec":$2}
JSON
}

ready_nodes() { [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ]; }
kp_wait_for "3 Ready nodes" 20 ready_nodes
k create deployment web --image=nginx --replicas=3 >/dev/null
three_ready() { [ "$(k get deploy web -o jsonpath='{.status.readyReplicas}')" = 3 ]; }
kp_wait_for "3 ready pods" 30 three_ready

echo "--- minAvailable 3 of 3: nothing may go"
pdb web '{"minAvailable":3,"selector":{"matchLabels":{"app":"web"}}}'
blocked() { [ "$(status web disruptionsAllowed)" = 0 ] && [ "$(status web currentHealthy)" = 3 ] &&
  [ "$(status web observedGeneration)" = 1 ]; }
kp_wait_for "status of web" 10 blocked
expect_eq "expectedPods" "$(status web expectedPods)" 3
expect_eq "desiredHealthy" "$(status web desiredHealthy)" 3
expect_eq "condition" "$(k get pdb web -o jsonpath='{.status.conditions[0].type}={.status.conditions[0].status}/{.status.conditions[0].reason}')" \
  "DisruptionAllowed=False/InsufficientPods"
pod=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
out=$(evict "$pod")
expect_eq "blocked eviction code" "$(tail -1 <<<"$out")" 429
expect_match "blocked eviction" "$out" '"message":"Cannot evict pod as it would violate the pod'"'"'s disruption budget.","reason":"TooManyRequests","details":\{"causes":\[\{"reason":"DisruptionBudget","message":"The disruption budget web needs 3 healthy pods and has 3 currently"\}\]\}'
node=$(k get pod "$pod" -o jsonpath='{.spec.nodeName}')
if k drain "$node" --ignore-daemonsets --timeout=4s >"$KP_DIR/drain.out" 2>&1; then
  fail "drain succeeded against the budget: $(cat "$KP_DIR/drain.out")"
fi
expect_match "drain retried" "$(cat "$KP_DIR/drain.out")" "disruption budget|Cannot evict"
k get pod "$pod" >/dev/null || fail "the budget's pod went"
k uncordon "$node" >/dev/null
echo "ok: a budget that allows nothing stops evictions (429) and drain"

echo "--- minAvailable 2: one eviction, recorded; dryRun spends nothing"
pdb web '{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}'
one() { [ "$(status web disruptionsAllowed)" = 1 ] && [ "$(status web observedGeneration)" = 2 ]; }
kp_wait_for "one disruption allowed" 10 one
out=$(evict "$pod" '?dryRun=All')
expect_eq "dry-run eviction code" "$(tail -1 <<<"$out")" 201
expect_eq "dry run spends nothing" "$(status web disruptionsAllowed)" 1
k get pod "$pod" >/dev/null || fail "a dry-run eviction deleted the pod"
rv=$(k get pdb web -o jsonpath='{.metadata.resourceVersion}')
out=$(evict "$pod")
expect_eq "eviction code" "$(tail -1 <<<"$out")" 201
# The budget's history since before the eviction holds the eviction's write
# (the controller may already have moved on: the pod is being deleted).
hist=$(kp_curl GET "/apis/policy/v1/namespaces/default/poddisruptionbudgets?watch=1&resourceVersion=$rv&timeoutSeconds=2&fieldSelector=metadata.name%3Dweb")
expect_match "eviction recorded" "$hist" "\"disruptedPods\":\\{\"$pod\":\"[0-9T:Z-]+\"\\},\"disruptionsAllowed\":0|\"disruptionsAllowed\":0,.*\"disruptedPods\":\\{\"$pod\""
kp_wait_for "3 ready pods again" 30 three_ready
back() { [ "$(status web disruptionsAllowed)" = 1 ] && [ "$(status web currentHealthy)" = 3 ]; }
kp_wait_for "the budget to recover" 15 back
echo "ok: an allowed eviction spends the budget; the controller restores it"

echo "--- kubectl drain with room in the budget"
node=$(k get pods -l app=web -o jsonpath='{.items[0].spec.nodeName}')
k drain "$node" --ignore-daemonsets --timeout=60s >/dev/null
[ -z "$(k get pods -l app=web -o jsonpath="{.items[?(@.spec.nodeName==\"$node\")].metadata.name}")" ] ||
  fail "pods left on drained node $node"
k uncordon "$node" >/dev/null
kp_wait_for "3 ready pods after drain" 30 three_ready
echo "ok: drain drains within the budget"

echo "--- maxUnavailable 34% of the Deployment's 3 replicas: desired 1 (rounded up)"
k delete pdb web >/dev/null
pdb pct '{"maxUnavailable":"34%","selector":{"matchLabels":{"app":"web"}}}'
pct() { [ "$(status pct expectedPods)/$(status pct desiredHealthy)/$(status pct disruptionsAllowed)" = 3/1/2 ]; }
kp_wait_for "percentage budget" 15 pct
echo "--- two budgets over one pod: 500"
pdb other '{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}'
pod=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
out=$(evict "$pod")
expect_eq "two budgets code" "$(tail -1 <<<"$out")" 500
expect_match "two budgets" "$out" "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
echo "ok: percentages and the two-budget refusal"

echo "--- validation"
out=$(k apply -f - 2>&1 <<'JSON' || true
{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"bad"},
 "spec":{"minAvailable":1,"maxUnavailable":"120%","selector":{"matchLabels":{"app":"web"}}}}
JSON
)
expect_match "both set" "$out" "spec: Invalid value: .*minAvailable and maxUnavailable cannot be both set"
expect_match "over 100%" "$out" 'spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%'
echo "ok: invalid budgets are refused naming the fields"
