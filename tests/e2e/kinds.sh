#!/usr/bin/env bash
# kinds.sh KPLANE KUBECTL -- every resource a fresh server lists in `kubectl
# api-resources`, end to end with kubectl 1.32: create the sample manifest
# tests/e2e/kinds/<resource>.yaml (a realistic object, as a chart has it;
# strict field validation), get it (the `kubectl get` header Kubernetes 1.32
# prints for the kind), `kubectl explain` it, list it (-A when namespaced),
# label, patch (merge, and kubectl's default strategic merge), server-side
# apply the sample with a change and re-apply it (the resourceVersion stays),
# delete it, and watch (curl) its life from before the create: ADDED first,
# DELETED (or a deletionTimestamp) last.
#
# Steps that take many objects run once for all samples (kubectl create,
# label, patch, apply, delete -f kinds/); get and explain run per resource,
# three at a time. kubectl's start-up is most of the cost: one call per
# object and step took 4x as long.
#
# A served resource without a sample manifest or an expected header fails
# the test, so a new kind cannot slip in untested; resources clients cannot
# create are listed in NOT_CREATABLE with the reason.
set -euo pipefail
KP_BIN=$1
K=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

declare -A NOT_CREATABLE=(
  [bindings]="create only, no object of its own (e2e_bindings binds pods through it)"
  [componentstatuses]="read-only health reports (e2e_componentstatuses)"
  [selfsubjectreviews.authentication.k8s.io]="a question, never stored (e2e_rbac)"
  [tokenreviews.authentication.k8s.io]="a question, never stored (e2e_satokens)"
  [selfsubjectaccessreviews.authorization.k8s.io]="a question, never stored (e2e_rbac)"
  [selfsubjectrulesreviews.authorization.k8s.io]="a question, never stored (e2e_rbac)"
  [subjectaccessreviews.authorization.k8s.io]="a question, never stored (e2e_rbac)"
  [localsubjectaccessreviews.authorization.k8s.io]="a question, never stored (e2e_rbac)"
)

# `kubectl get` headers of Kubernetes 1.32 (pkg/printers/internalversion;
# kinds without a printer get the default NAME / CREATED AT), runs of
# spaces squeezed; APIServices as kube-aggregator prints them. Keys are the
# names `kubectl api-resources -o name` prints.
declare -A HEADER=(
  [configmaps]="NAME DATA AGE"
  [endpoints]="NAME ENDPOINTS AGE"
  [events]="LAST SEEN TYPE REASON OBJECT MESSAGE"
  [limitranges]="NAME CREATED AT"
  [namespaces]="NAME STATUS AGE"
  [nodes]="NAME STATUS ROLES AGE VERSION"
  [persistentvolumeclaims]="NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE"
  [persistentvolumes]="NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE"
  [pods]="NAME READY STATUS RESTARTS AGE"
  [podtemplates]="NAME CONTAINERS IMAGES POD LABELS"
  [replicationcontrollers]="NAME DESIRED CURRENT READY AGE"
  [resourcequotas]="NAME AGE REQUEST LIMIT"
  [secrets]="NAME TYPE DATA AGE"
  [serviceaccounts]="NAME SECRETS AGE"
  [services]="NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE"
  [controllerrevisions.apps]="NAME CONTROLLER REVISION AGE"
  [daemonsets.apps]="NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE"
  [deployments.apps]="NAME READY UP-TO-DATE AVAILABLE AGE"
  [replicasets.apps]="NAME DESIRED CURRENT READY AGE"
  [statefulsets.apps]="NAME READY AGE"
  [horizontalpodautoscalers.autoscaling]="NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE"
  [cronjobs.batch]="NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE"
  [jobs.batch]="NAME STATUS COMPLETIONS DURATION AGE"
  [certificatesigningrequests.certificates.k8s.io]="NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION"
  [ingressclasses.networking.k8s.io]="NAME CONTROLLER PARAMETERS AGE"
  [ingresses.networking.k8s.io]="NAME CLASS HOSTS ADDRESS PORTS AGE"
  [ipaddresses.networking.k8s.io]="NAME PARENTREF"
  [networkpolicies.networking.k8s.io]="NAME POD-SELECTOR AGE"
  [servicecidrs.networking.k8s.io]="NAME CIDRS AGE"
  [clusterrolebindings.rbac.authorization.k8s.io]="NAME ROLE AGE"
  [clusterroles.rbac.authorization.k8s.io]="NAME CREATED AT"
  [rolebindings.rbac.authorization.k8s.io]="NAME ROLE AGE"
  [roles.rbac.authorization.k8s.io]="NAME CREATED AT"
  [csidrivers.storage.k8s.io]="NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE"
  [csinodes.storage.k8s.io]="NAME DRIVERS AGE"
  [csistoragecapacities.storage.k8s.io]="NAME CREATED AT"
  [storageclasses.storage.k8s.io]="NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE"
  [volumeattachments.storage.k8s.io]="NAME ATTACHER PV NODE ATTACHED AGE"
  [volumeattributesclasses.storage.k8s.io]="NAME DRIVERNAME AGE"
  [customresourcedefinitions.apiextensions.k8s.io]="NAME CREATED AT"
  [priorityclasses.scheduling.k8s.io]="NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY"
  [leases.coordination.k8s.io]="NAME HOLDER AGE"
  [runtimeclasses.node.k8s.io]="NAME HANDLER AGE"
  [endpointslices.discovery.k8s.io]="NAME ADDRESSTYPE PORTS ENDPOINTS AGE"
  [events.events.k8s.io]="LAST SEEN TYPE REASON OBJECT MESSAGE"
  [poddisruptionbudgets.policy]="NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE"
  [apiservices.apiregistration.k8s.io]="NAME SERVICE AVAILABLE AGE"
)

t0=$(date +%s)
step() { echo "--- $* (at $(($(date +%s) - t0))s)"; }
kp_start "${KP_API_ONLY[@]}"
k() { "$K" "$@"; }
NS=kinds
k create namespace "$NS" >/dev/null

all=$(k api-resources -o name | sort)
namespaced=" $(k api-resources --namespaced=true -o name | tr '\n' ' ') "
count=$(wc -l <<<"$all")
[ "$count" -gt 40 ] || fail "api-resources lists $count resources"
echo "--- $count resources"

# The sample of a resource: kinds/<resource>.<group>.yaml when another group
# serves the same resource name (events), else kinds/<resource>.yaml.
sample() {
  local name=$1
  if [ -f "$HERE/kinds/$name.yaml" ]; then echo "$HERE/kinds/$name.yaml"; else echo "$HERE/kinds/${name%%.*}.yaml"; fi
}

missing=()
todo=()
for name in $all; do
  if [ -n "${NOT_CREATABLE[$name]:-}" ]; then
    echo "--- $name: skipped (${NOT_CREATABLE[$name]})"
  elif [ ! -f "$(sample "$name")" ] || [ -z "${HEADER[$name]:-}" ]; then
    missing+=("$name")
  else
    todo+=("$name")
  fi
done
[ ${#missing[@]} -eq 0 ] ||
  fail "no sample manifest in tests/e2e/kinds/ or no expected header in kinds.sh for: ${missing[*]}"
[ "$(ls "$HERE/kinds" | wc -l)" -eq ${#todo[@]} ] ||
  fail "tests/e2e/kinds/ has samples of resources not served: $(ls "$HERE/kinds")"

# Per resource: name, sample file, apiVersion, kind, object name, the
# object's `kubectl -o name` form, its API path (collection), -n flag. And
# every sample as JSON with one change for the server-side apply (a label
# e2eapplied=yes).
mkdir -p "$KP_DIR/apply"
for name in "${todo[@]}"; do
  ns=-
  [[ "$namespaced" == *" $name "* ]] && ns=$NS
  echo "$name $(sample "$name") $ns"
done | python3 -c '
import json, os, sys, yaml
dst = sys.argv[1]
for line in sys.stdin:
    name, path, ns = line.split()
    doc = yaml.safe_load(open(path))
    av, kind, obj = doc["apiVersion"], doc["kind"], doc["metadata"]["name"]
    group = av.rpartition("/")[0]
    oname = kind.lower() + ("." + group if group else "") + "/" + obj
    base = ("/apis/" + av if group else "/api/" + av) + \
        ("/namespaces/" + ns if ns != "-" else "") + "/" + name.partition(".")[0]
    doc["metadata"].setdefault("labels", {})["e2eapplied"] = "yes"
    json.dump(doc, open(os.path.join(dst, name + ".json"), "w"))
    print(name, path, av, kind, obj, oname, base, ns)
' "$KP_DIR/apply" >"$KP_DIR/kinds.txt"

# A watch from this resourceVersion (the store's revision is global, as
# etcd's is) replays every later event of any resource.
RV0=$(kp_curl GET "/api/v1/namespaces?limit=1" | jq -r .metadata.resourceVersion)

step "create (strict field validation)"
out=$(k create --validate=strict -f "$HERE/kinds" -n "$NS" -o name 2>&1) || fail "create: $out"
while read -r name _ _ _ _ oname _; do
  grep -qx -- "$oname" <<<"$out" || fail "$name: not created ($oname): $out"
done <"$KP_DIR/kinds.txt"

step "get (the 1.32 header) and explain, per resource"
# check_one NAME: its object's `kubectl get` table and `kubectl explain`.
check_one() {
  local name=$1 path av kind obj ns out want
  read -r _ path av kind obj _ _ ns < <(grep "^$name " "$KP_DIR/kinds.txt")
  local -a nsf=()
  [ "$ns" = - ] || nsf=(-n "$ns")
  out=$(k get "$name" "$obj" "${nsf[@]}") || fail "$name/$obj: get: $out"
  want=${HEADER[$name]}
  expect_eq "$name: kubectl get header" "$(head -n1 <<<"$out" | tr -s ' ' | sed 's/ $//')" "$want"
  expect_eq "$name: kubectl get rows" "$(wc -l <<<"$out")" 2
  out=$(k explain "${name%%.*}" --api-version="$av") || fail "$name: kubectl explain: $out"
  expect_match "$name: kubectl explain" "$(head -n3 <<<"$out")" "^KIND: +$kind\$"
  echo "ok $name"
}
WORKERS=3
pids=()
for ((w = 0; w < WORKERS; w++)); do
  (
    for ((i = w; i < ${#todo[@]}; i += WORKERS)); do check_one "${todo[$i]}"; done
  ) >"$KP_DIR/worker.$w" 2>&1 &
  pids+=($!)
done
bad=0
for ((w = 0; w < WORKERS; w++)); do
  wait "${pids[$w]}" || bad=1
  grep -v '^ok ' "$KP_DIR/worker.$w" || true
done
[ $bad -eq 0 ] || fail "get or explain failed (above)"

step "list"
out=$(k get "$(IFS=,; echo "${todo[*]}")" -A -o name) || fail "list: $out"
while read -r name _ _ _ _ oname _; do
  grep -qx -- "$oname" <<<"$out" || fail "$name: $oname not listed"
done <"$KP_DIR/kinds.txt"

step "label, merge patch, strategic merge patch"
out=$(k label -f "$HERE/kinds" -n "$NS" e2elabel=yes 2>&1) || fail "label: $out"
out=$(k patch -f "$HERE/kinds" -n "$NS" --type=merge \
  -p '{"metadata":{"annotations":{"e2e/merge":"yes"}}}' 2>&1) || fail "merge patch: $out"
out=$(k patch -f "$HERE/kinds" -n "$NS" -p '{"metadata":{"annotations":{"e2e/strategic":"yes"}}}' 2>&1) ||
  fail "strategic merge patch: $out"

step "server-side apply, twice"
# the applied label joins the label and annotations other managers own; the
# second apply changes nothing
out=$(k apply --server-side -f "$KP_DIR/apply" -n "$NS" -o json 2>&1) || fail "server-side apply: $out"
jq -r '.items[] | [.kind, .metadata.name, .metadata.resourceVersion,
    ([.metadata.labels.e2eapplied, .metadata.labels.e2elabel, .metadata.annotations["e2e/merge"],
      .metadata.annotations["e2e/strategic"]] | join(","))] | join(" ")' <<<"$out" | sort >"$KP_DIR/apply1"
expect_eq "applied objects" "$(wc -l <"$KP_DIR/apply1")" ${#todo[@]}
bad=$(grep -v ' yes,yes,yes,yes$' "$KP_DIR/apply1" || true)
[ -z "$bad" ] || fail "label, patches or applied label missing (kind name rv labels): $bad"
out=$(k apply --server-side --validate=false -f "$KP_DIR/apply" -n "$NS" -o json 2>&1) ||
  fail "server-side re-apply: $out"
jq -r '.items[] | [.kind, .metadata.name, .metadata.resourceVersion, "yes,yes,yes,yes"] | join(" ")' \
  <<<"$out" | sort >"$KP_DIR/apply2"
bad=$(diff "$KP_DIR/apply1" "$KP_DIR/apply2" || true)
[ -z "$bad" ] || fail "a re-apply changed the resourceVersion: $bad"

step "delete"
out=$(k delete -f "$HERE/kinds" -n "$NS" --wait=false 2>&1) || fail "delete: $out"

step "watch"
# The watch from RV0 replays the object's life: ADDED first, and DELETED
# (or, for a namespace without its controller, a deletionTimestamp) last.
# All watches run at once for 2 s; one that ended before its watch cache
# caught up (a loaded machine) is asked again, for 5 s.
watch_events() { # NAME OBJ: the object's events in watch.NAME, one line
  jq -r --arg o "$2" 'select(.object.metadata.name == $o) |
      .type + (if .object.metadata.deletionTimestamp then "+deleting" else "" end)' \
    "$KP_DIR/watch.$1" | tr '\n' ' '
}
watch_ok() { grep -Eq '^ADDED .*(DELETED|\+deleting) $' <<<"$(watch_events "$1" "$2")"; }
while read -r name _ _ _ obj _ base _; do
  kp_curl GET "$base?watch=1&resourceVersion=$RV0&timeoutSeconds=2" -o "$KP_DIR/watch.$name" &
  echo "$! $name $obj $base" >>"$KP_DIR/watchers"
done <"$KP_DIR/kinds.txt"
while read -r pid name obj base; do
  wait "$pid" || fail "$name: watch failed: $(head -c 300 "$KP_DIR/watch.$name")"
  watch_ok "$name" "$obj" && continue
  echo "--- $name: watching again"
  kp_curl GET "$base?watch=1&resourceVersion=$RV0&timeoutSeconds=5" -o "$KP_DIR/watch.$name" ||
    fail "$name: watch failed"
  watch_ok "$name" "$obj" ||
    fail "$name: watch events of $obj: '$(watch_events "$name" "$obj")' in $(head -c 600 "$KP_DIR/watch.$name")"
done <"$KP_DIR/watchers"

echo "PASS: ${#todo[@]} kinds in $(($(date +%s) - t0))s"
