#!/usr/bin/env bash
# kinds.sh KPLANE KUBECTL -- every resource a fresh server lists in `kubectl
# api-resources`, end to end with kubectl 1.32: create the sample manifest
# tests/e2e/kinds/<resource>.yaml (a realistic object, as a chart has it),
# get, list (-A when namespaced), watch (a raw watch from the list's
# resourceVersion sees the ADDED event), label, patch (merge, and kubectl's
# default strategic merge), server-side apply of the sample with a change and
# a re-apply that leaves the resourceVersion alone, the `kubectl get` header
# Kubernetes 1.32 prints for the kind, `kubectl explain`, delete.
#
# A served resource without a sample manifest or an expected header fails
# the test, so a new kind cannot slip in untested; resources clients cannot
# create are listed in NOT_CREATABLE with the reason (none today).
set -euo pipefail
KP_BIN=$1
K=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

declare -A NOT_CREATABLE=()

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
kp_start "${KP_API_ONLY[@]}"
k() { "$K" "$@"; }
NS=kinds
k create namespace "$NS" >/dev/null

all=$(k api-resources -o name | sort)
namespaced=" $(k api-resources --namespaced=true -o name | tr '\n' ' ') "
count=$(wc -l <<<"$all")
[ "$count" -gt 40 ] || fail "api-resources lists $count resources"
echo "--- $count resources"

# The sample of a resource: kinds/<resource>.<group>.yaml if two groups ever
# serve the same resource name, else kinds/<resource>.yaml.
sample() {
  local name=$1
  if [ -f "$HERE/kinds/$name.yaml" ]; then echo "$HERE/kinds/$name.yaml"; else echo "$HERE/kinds/${name%%.*}.yaml"; fi
}

# Every sample as JSON with one change for the server-side apply (a label
# e2eapplied=yes), and its apiVersion, kind and name.
mkdir -p "$KP_DIR/apply"
python3 - "$HERE/kinds" "$KP_DIR/apply" >"$KP_DIR/samples.tsv" <<'PY'
import json, os, sys, yaml
src, dst = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(src)):
    doc = yaml.safe_load(open(os.path.join(src, f)))
    doc["metadata"].setdefault("labels", {})["e2eapplied"] = "yes"
    json.dump(doc, open(os.path.join(dst, f[:-5] + ".json"), "w"))
    print(f, doc["apiVersion"], doc["kind"], doc["metadata"]["name"], sep="\t")
PY

# Every sample passes strict field validation (unknown or duplicate fields
# are errors), checked once for all: each --validate=strict call makes kubectl
# fetch the group's OpenAPI document again (kplane does not let it cache
# the ?hash= URLs), which costs the ASan server 0.3 s a time.
out=$(k create --dry-run=server --validate=strict -f "$HERE/kinds" -n "$NS" 2>&1) ||
  fail "the samples do not pass strict validation: $out"
expect_eq "samples validated" "$(grep -c 'created (server dry run)' <<<"$out")" "$(ls "$HERE/kinds" | wc -l)"

# A watch from this resourceVersion (the store's revision is global, as
# etcd's is) replays every later event of any resource, the create included.
RV0=$(kp_curl GET "/api/v1/namespaces?limit=1" | jq -r .metadata.resourceVersion)

# run_kind NAME: the round trip of one resource; fails (exits) on the first
# step that goes wrong.
run_kind() {
  local name=$1 f want av kind obj res base what out list got a rv1 rv2 t
  local -a ns=()
  t=$(date +%s)
  f=$(sample "$name")
  want=${HEADER[$name]}
  IFS=$'\t' read -r _ av kind obj < <(grep "^$(basename "$f")	" "$KP_DIR/samples.tsv")
  res=${name%%.*}
  base=/apis/$av
  [ "$av" = v1 ] && base=/api/v1
  if [[ "$namespaced" == *" $name "* ]]; then
    ns=(-n "$NS")
    base=$base/namespaces/$NS
  fi
  base=$base/$res
  what="$name/$obj"

  k create --validate=false -f "$f" "${ns[@]}" >/dev/null || fail "$what: create"

  out=$(k get "$name" "$obj" "${ns[@]}") || fail "$what: get"
  expect_eq "$what: kubectl get header" "$(head -n1 <<<"$out" | tr -s ' ' | sed 's/ $//')" "$want"
  expect_eq "$what: kubectl get rows" "$(wc -l <<<"$out")" 2
  if [ ${#ns[@]} -gt 0 ]; then
    list=$(k get "$name" -A -o name)
  else
    list=$(k get "$name" -o name)
  fi
  grep -q "/$obj\$" <<<"$list" || fail "$what: not listed: $list"

  k label "$name" "$obj" "${ns[@]}" e2elabel=yes >/dev/null || fail "$what: label"
  k patch "$name" "$obj" "${ns[@]}" --type=merge \
    -p '{"metadata":{"annotations":{"e2e/merge":"yes"}}}' >/dev/null || fail "$what: merge patch"
  k patch "$name" "$obj" "${ns[@]}" \
    -p '{"metadata":{"annotations":{"e2e/strategic":"yes"}}}' >/dev/null || fail "$what: strategic patch"

  # the applied label joins the label and annotations other managers own
  a=$KP_DIR/apply/$(basename "$f" .yaml).json
  out=$(k apply --server-side --validate=false -f "$a" "${ns[@]}" -o json) ||
    fail "$what: server-side apply"
  got=$(jq -r '[.metadata.labels.e2eapplied, .metadata.labels.e2elabel,
      .metadata.annotations["e2e/merge"], .metadata.annotations["e2e/strategic"]] | join(",")' <<<"$out")
  expect_eq "$what: label, patches and apply" "$got" "yes,yes,yes,yes"
  rv1=$(jq -r .metadata.resourceVersion <<<"$out")
  rv2=$(k apply --server-side --validate=false -f "$a" "${ns[@]}" -o jsonpath='{.metadata.resourceVersion}') ||
    fail "$what: server-side re-apply"
  expect_eq "$what: re-apply changes nothing (resourceVersion)" "$rv2" "$rv1"

  out=$(k explain "$res" --api-version="$av") || fail "$what: kubectl explain"
  expect_match "$what: kubectl explain" "$(head -n3 <<<"$out")" "^KIND: +$kind\$"

  k delete "$name" "$obj" "${ns[@]}" --wait=false >/dev/null || fail "$what: delete"

  # The watch from RV0 replays the object's life: ADDED first, and DELETED
  # (or, for a namespace without its controller, a deletionTimestamp) last.
  # It ends after a second; the worker collects it when its list is done.
  kp_curl GET "$base?watch=1&resourceVersion=$RV0&timeoutSeconds=1" -o "$KP_DIR/watch.$name" &
  echo "$! $name $obj" >>"$KP_DIR/watchers.$BASHPID"
  echo "ok $name ($(($(date +%s) - t))s)"
}

# check_watch PID NAME OBJ: the watch of NAME (process PID) saw OBJ added,
# then deleted or marked for deletion.
check_watch() {
  local pid=$1 name=$2 obj=$3 events
  wait "$pid" || fail "$name: watch failed: $(head -c 300 "$KP_DIR/watch.$name")"
  events=$(jq -r --arg o "$obj" 'select(.object.metadata.name == $o) |
      .type + (if .object.metadata.deletionTimestamp then "+deleting" else "" end)' \
    "$KP_DIR/watch.$name" | tr '\n' ' ') || fail "$name: watch stream: $(head -c 300 "$KP_DIR/watch.$name")"
  expect_match "$name: watch events of $obj" "$events" "^ADDED .*(DELETED|\+deleting) \$"
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

# WORKERS kubectl streams at once, each taking every WORKERS-th resource: the
# run is bound by kubectl's start-up and round trips, not by the server.
WORKERS=3
pids=()
for ((w = 0; w < WORKERS; w++)); do
  (
    for ((i = w; i < ${#todo[@]}; i += WORKERS)); do run_kind "${todo[$i]}"; done
    [ -f "$KP_DIR/watchers.$BASHPID" ] || exit 0
    while read -r pid name obj; do
      check_watch "$pid" "$name" "$obj"
    done <"$KP_DIR/watchers.$BASHPID"
  ) >"$KP_DIR/worker.$w" 2>&1 &
  pids+=($!)
done
bad=0
for ((w = 0; w < WORKERS; w++)); do
  wait "${pids[$w]}" || bad=1
  cat "$KP_DIR/worker.$w"
done
[ $bad -eq 0 ] || fail "a resource failed its round trip (above)"
[ ${#missing[@]} -eq 0 ] ||
  fail "no sample manifest in tests/e2e/kinds/ or no expected header in kinds.sh for: ${missing[*]}"
echo "PASS: ${#todo[@]} kinds in $(($(date +%s) - t0))s"
