#!/usr/bin/env bash
# apiservices.sh KPLANE KUBECTL -- APIServices as kube-apiserver's aggregator
# keeps them (issue 15), against a real kplane server:
#   - one per served group-version ("v1." for core), labelled automanaged
#     "onstart", with Kubernetes' priorities and Available=True reason Local;
#   - a CustomResourceDefinition's versions get theirs (automanaged "true",
#     priorities 1000/100) and lose them when the CRD goes;
#   - one naming a Service is Available=False: ServiceNotFound while the
#     Service is missing, FailedDiscoveryCheck once it exists (kplane does not
#     proxy), and its group never appears in discovery;
#   - ValidateAPIService's rules give 422 naming the field.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" "$@"; }

# wait_for DESCRIPTION COMMAND...: retry for up to 10 s.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 100); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

# One APIService per served group-version, nothing else.
want=$( (k get --raw /apis | python3 -c '
import json, sys
for g in json.load(sys.stdin)["groups"]:
    for v in g["versions"]:
        print(v["version"] + "." + g["name"])'; echo "v1.") | sort)
names_ok() { [ "$(k get apiservices -o name | sed 's|.*/||' | sort)" = "$want" ]; }
wait_for "one APIService per group-version" names_ok
k get apiservice v1.apps -o json | python3 -c '
import json, sys
a = json.load(sys.stdin)
assert a["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"] == "onstart", a
assert a["spec"]["groupPriorityMinimum"] == 17800 and a["spec"]["versionPriority"] == 15, a
c = [c for c in a["status"]["conditions"] if c["type"] == "Available"][0]
assert (c["status"], c["reason"]) == ("True", "Local"), c
' || fail "v1.apps is not a Local, available, automanaged APIService"
[ "$(k get apiservice v1. -o jsonpath='{.spec.groupPriorityMinimum}')" = 18000 ] ||
  fail "v1. has the wrong group priority"
echo "ok: $(echo "$want" | wc -l) built-in APIServices, Available (Local)"

# A CRD's versions come and go with it.
k apply -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
YAML
wait_for "v2.example.com" k get apiservice v2.example.com
[ "$(k get apiservice v1.example.com -o jsonpath='{.metadata.labels.kube-aggregator\.kubernetes\.io/automanaged} {.spec.groupPriorityMinimum} {.spec.versionPriority} {.status.conditions[0].reason}')" = "true 1000 100 Local" ] ||
  fail "v1.example.com: $(k get apiservice v1.example.com -o json)"
k delete crd widgets.example.com >/dev/null
gone() { ! k get apiservice v1.example.com && ! k get apiservice v2.example.com; }
wait_for "the CRD's APIServices to go" gone
echo "ok: a CRD's APIServices follow it"

# A Service-backed APIService: never served, never available.
k apply -f - >/dev/null <<'YAML'
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system}
YAML
reason() { [ "$(k get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}')" = "$1" ]; }
wait_for "ServiceNotFound" reason "False ServiceNotFound"
k -n kube-system create service clusterip metrics-server --tcp=443:4443 >/dev/null
wait_for "FailedDiscoveryCheck" reason "False FailedDiscoveryCheck"
if k get --raw /apis | grep -q metrics.k8s.io; then fail "metrics.k8s.io is in discovery"; fi
echo "ok: a Service-backed APIService is Available=False and not served"

# Validation (ValidateAPIService).
out=$(k create -f - 2>&1 <<'YAML' || true
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.bad}
spec: {group: other, version: v1, groupPriorityMinimum: 0, versionPriority: 1001, insecureSkipTLSVerify: true}
YAML
)
for f in 'metadata.name: Invalid value: "v1.bad": must be `spec.version+"."+spec.group`: "v1.other"' \
         'spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000' \
         'spec.versionPriority: Invalid value: 1001: must be positive and less than 1000' \
         'spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify'; do
  grep -qF "$f" <<<"$out" || fail "no cause '$f' in: $out"
done
echo "ok: invalid APIServices are refused naming the fields"
