#!/usr/bin/env bash
# chart.sh KPLANE KUBECTL -- a typical chart's manifest (chart/app.yaml:
# ServiceAccount, Role, RoleBinding, ConfigMap, Secret, PVC, Service,
# Deployment, HorizontalPodAutoscaler, PodDisruptionBudget, Ingress,
# NetworkPolicy, CronJob), against a `kplane server` with its controllers,
# scheduler and nodes (issue 15):
#   - applies cleanly into a new namespace, client-side and server-side;
#   - re-applies with no change (every object "unchanged", no new
#     resourceVersion anywhere);
#   - `kubectl delete -f` deletes every object; applied again, `kubectl delete
#     namespace` empties the namespace and the namespace goes.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 2
k() { "$KUBECTL" "$@"; }
APP="$(dirname "$0")/chart/app.yaml"
kinds=serviceaccounts,roles,rolebindings,configmaps,secrets,persistentvolumeclaims,services,deployments,horizontalpodautoscalers,poddisruptionbudgets,ingresses,networkpolicies,cronjobs
# name=resourceVersion of every object of the chart in namespace $1.
versions() { k -n "$1" get "$kinds" -l app.kubernetes.io/name=web -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}' | sort; }

k create namespace demo >/dev/null
out=$(k -n demo apply -f "$APP")
expect_eq "objects created" "$(grep -c ' created$' <<<"$out")" 13
# Let the controllers settle (they write the Deployment's and the budget's
# status), so that any later change of resourceVersion is the re-apply's.
settled() {
  [ "$(k -n demo get deploy web -o jsonpath='{.status.readyReplicas}/{.status.updatedReplicas}')" = 2/2 ] &&
    [ "$(k -n demo get pdb web -o jsonpath='{.status.currentHealthy}')" = 2 ]
}
kp_wait_for "the Deployment's 2 pods and the budget's status" 30 settled
sleep 1
before=$(versions demo)
expect_eq "objects listed" "$(wc -l <<<"$before")" 13
out=$(k -n demo apply -f "$APP")
# A PodDisruptionBudget's selector has patch strategy "replace", so kubectl's
# three-way patch is never empty for it and it prints "configured" on a real
# cluster too; the patch changes nothing, so nothing is written.
expect_eq "re-apply: unchanged" "$(grep -c ' unchanged$' <<<"$out")" 12
expect_match "re-apply: the budget" "$out" "poddisruptionbudget.policy/web (unchanged|configured)"
expect_eq "re-apply writes nothing" "$(versions demo)" "$before"
echo "ok: applied, re-applied with no change (client-side)"

out=$(k -n demo apply --server-side --force-conflicts -f "$APP")
expect_eq "server-side apply" "$(grep -c 'serverside-applied' <<<"$out")" 13
mid=$(versions demo)
k -n demo apply --server-side -f "$APP" >/dev/null
expect_eq "server-side re-apply writes nothing" "$(versions demo)" "$mid"
echo "ok: server-side apply, then again with no change"

out=$(k -n demo delete -f "$APP")
expect_eq "deleted" "$(grep -c ' deleted' <<<"$out")" 13
gone() { [ -z "$(k -n demo get "$kinds" -l app.kubernetes.io/name=web -o name)" ]; }
kp_wait_for "every object of the chart to go" 30 gone
echo "ok: kubectl delete -f deletes every object"

k create namespace demo2 >/dev/null
k -n demo2 apply -f "$APP" >/dev/null
k delete namespace demo2 --wait=false >/dev/null
ns_gone() { ! k get namespace demo2 >/dev/null 2>&1; }
kp_wait_for "namespace demo2 to be emptied and deleted" 60 ns_gone
echo "ok: kubectl delete namespace empties it and it goes"
