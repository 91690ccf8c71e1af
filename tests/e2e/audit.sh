#!/usr/bin/env bash
# audit.sh KPLANE KUBECTL -- the audit log (--audit-policy-file,
# --audit-log-path, -maxsize, -maxbackup): a session of kubectl commands
# (-v=8 shows each response's Audit-Id) under a policy with Metadata for
# secrets, RequestResponse for configmaps, None for a user and for the
# discovery paths, omitStages RequestReceived; audit_check.py (python3's
# json) checks the stages and levels of each request, that the Audit-ID
# headers are the log's auditIDs, and that the Secret's value is nowhere in
# the log. Then: the client's own Audit-ID, 404 and 413 with the header, a
# burst of reads past --max-requests-inflight (429s carry it too),
# rotation with a tiny maxsize (backups bounded by maxbackup, named as
# lumberjack names them), the log on standard output, and bad policies
# stopping `kplane server` and `kplane apiserver` with the field named.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
CHECK="$(dirname "$0")/audit_check.py"

SECRET_VALUE="kp-audit-value-$$-$RANDOM-never-logged"
STEPS="$KP_DIR/steps"
mkdir -p "$STEPS"
LOG="$KP_DIR/audit/audit.log"

cat >"$KP_DIR/tokens.csv" <<'CSV'
eve-token-0123456789,eve,2001
dan-token-0123456789,dan,2002
CSV
cat >"$KP_DIR/policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
# a user nothing is logged for
- level: None
  users: ["dan"]
# discovery and health
- level: None
  nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi/*", "/version",
                    "/healthz*", "/readyz*", "/livez*"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
- level: RequestResponse
  omitManagedFields: true
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
YAML

kp_start "${KP_API_ONLY[@]}" --token-auth-file "$KP_DIR/tokens.csv" \
  --audit-policy-file "$KP_DIR/policy.yaml" --audit-log-path "$LOG"

kubeconfig_for() { # FILE TOKEN
  local cfg=$1 tok=$2
  "$KUBECTL" --kubeconfig "$cfg" config set-cluster kp --server "https://127.0.0.1:$KP_PORT" \
    --certificate-authority "$KP_DIR/data/ca.crt" --embed-certs=true >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config set-credentials u --token "$tok" >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config set-context kp --cluster kp --user u >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config use-context kp >/dev/null
}
kubeconfig_for "$KP_DIR/eve.kubeconfig" eve-token-0123456789
kubeconfig_for "$KP_DIR/dan.kubeconfig" dan-token-0123456789
kubeconfig_for "$KP_DIR/wrong.kubeconfig" wrong-token-0123456789

# k STEP [kubectl args...]: kubectl -v=8, its log kept as STEPS/STEP.
k() {
  local step=$1
  shift
  "$KUBECTL" -v=8 "$@" 2>"$STEPS/$step"
}

echo "--- a session of kubectl commands"
# discovery (None) first, so that later commands send only their own request
k discovery api-resources >/dev/null
k create_secret create secret generic audit-s --from-literal=password="$SECRET_VALUE" >/dev/null
k get_secret get secret audit-s -o yaml >"$KP_DIR/secret.yaml"
grep -q "$(printf %s "$SECRET_VALUE" | base64 -w0)" "$KP_DIR/secret.yaml" ||
  fail "kubectl did not get the secret's value back"
k list_secrets get secrets >/dev/null
# a watch, ended by its client after a while
timeout -s INT 3 "$KUBECTL" -v=8 get secrets --watch >/dev/null 2>"$STEPS/watch_secrets" || true
k create_cm create configmap audit-cm --from-literal=k=v >/dev/null
k role_dan create role cm-reader --verb=get,list --resource=configmaps >/dev/null
k bind_dan create rolebinding dan-reads --role cm-reader --user dan >/dev/null
for _ in $(seq 50); do
  k can_dan --kubeconfig "$KP_DIR/dan.kubeconfig" auth can-i get configmaps >/dev/null 2>&1 && break
  sleep 0.1
done
k dan_get_cm --kubeconfig "$KP_DIR/dan.kubeconfig" get configmap audit-cm -o name >/dev/null
# impersonation: the policy sees the authenticated user, the event both
k impersonated get configmap audit-cm --as dan -o name >/dev/null
k get_missing get secret no-such-secret >/dev/null 2>&1 && fail "a missing secret was found"
k delete_secret delete secret audit-s >/dev/null
k forbidden --kubeconfig "$KP_DIR/eve.kubeconfig" get secrets >/dev/null 2>&1 &&
  fail "eve listed secrets"
k unauthorized --kubeconfig "$KP_DIR/wrong.kubeconfig" get secrets >/dev/null 2>&1 &&
  fail "a wrong token was accepted"

echo "--- curl: a 401 and a 413 carry the header; a client's own Audit-ID is the one logged"
ca=(--cacert "$KP_DIR/data/ca.crt")
url="https://127.0.0.1:$KP_PORT"
curl -sS "${ca[@]}" -D "$STEPS/curl_401" -o /dev/null -H "Authorization: Bearer nope" \
  "$url/api/v1/namespaces/default/configmaps"
expect_header "401" "$(cat "$STEPS/curl_401")" audit-id '[0-9a-f-]{36}'
curl -sS "${ca[@]}" -D "$STEPS/curl_own_id" -o /dev/null -H "Authorization: Bearer $KP_TOKEN" \
  -H "Audit-ID: client-chosen-id-42" "$url/api/v1/namespaces/default/configmaps/audit-cm"
expect_header "the client's Audit-ID" "$(cat "$STEPS/curl_own_id")" audit-id 'client-chosen-id-42'
# a long target and user agent: the line stays JSON, the agent cut as Kubernetes cuts it
long=$(head -c 3000 /dev/zero | tr '\0' 'q')
curl -sS "${ca[@]}" -D "$STEPS/curl_long" -o /dev/null -H "Authorization: Bearer $KP_TOKEN" \
  -A "agent-$long" "$url/api/v1/namespaces/default/configmaps?labelSelector=a%3D$long" ||
  fail "a long request"
head -c $((3 * 1024 * 1024 + 10)) /dev/zero | tr '\0' 'x' >"$KP_DIR/big.json"
curl -sS "${ca[@]}" -D "$STEPS/curl_413" -o /dev/null -H "Authorization: Bearer $KP_TOKEN" \
  -H 'Content-Type: application/json' --data-binary @"$KP_DIR/big.json" \
  "$url/api/v1/namespaces/default/configmaps"
expect_header "413" "$(cat "$STEPS/curl_413")" audit-id '[0-9a-f-]{36}'
grep -q "^HTTP/[0-9.]* 413" "$STEPS/curl_413" || fail "no 413: $(head -1 "$STEPS/curl_413")"

# The watch's last event comes when its stream ends; then stop the server
# (which writes what is queued) and read the log.
kp_wait_for "the watch's ResponseComplete" 20 python3 -c '
import json, re, sys
ids = re.findall(r"Audit-Id: (\S+)", open(sys.argv[2]).read())
done = {json.loads(l)["auditID"] for l in open(sys.argv[1]) if "\"ResponseComplete\"" in l}
sys.exit(0 if ids and ids[-1] in done else 1)' "$LOG" "$STEPS/watch_secrets"
metrics=$(kp_curl GET /metrics -D "$STEPS/curl_metrics")
expect_match "apiserver_audit_event_total" "$metrics" '^apiserver_audit_event_total [1-9]'
expect_match "no event dropped" "$metrics" 'apiserver_audit_error_total\{plugin="buffered"\} 0'
kp_stop
python3 "$CHECK" session "$LOG" "$STEPS" "$SECRET_VALUE"

echo "--- rotation: 1 MB files, 2 backups; reads past --max-requests-inflight 1"
cat >"$KP_DIR/policy-rr.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
  nonResourceURLs: ["/healthz"]
YAML
ROT="$KP_DIR/rot"
kp_restart "${KP_API_ONLY[@]}" --audit-policy-file "$KP_DIR/policy-rr.yaml" \
  --audit-log-path "$ROT/audit.log" --audit-log-maxsize 1 --audit-log-maxbackup 2 \
  --max-requests-inflight 1
url="https://127.0.0.1:$KP_PORT"
python3 -c 'import json, sys; print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
  "metadata": {"name": "big-NAME"}, "data": {"blob": "y" * 200000}}))' >"$KP_DIR/cm.json"
# each create logs its body and the reply: about 400 KB an event
for i in $(seq 1 16); do
  sed "s/NAME/$i/" "$KP_DIR/cm.json" |
    kp_curl POST /api/v1/namespaces/default/configmaps -o /dev/null -f \
      -H 'Content-Type: application/json' --data-binary @- || fail "create big-$i"
done
# 60 parallel reads with one allowed in flight: every reply has an Audit-ID
args=()
for _ in $(seq 60); do args+=(-o /dev/null "$url/api/v1/namespaces/default/configmaps/big-1"); done
curl -sS --no-progress-meter -Z --parallel-max 60 "${ca[@]}" -H "Authorization: Bearer $KP_TOKEN" \
  -D "$STEPS/burst" "${args[@]}" || true
codes=$(grep -c '^HTTP' "$STEPS/burst" || true)
expect_eq "burst replies" "$codes" 60
ids=$(grep -ci '^audit-id: ' "$STEPS/burst" || true)
expect_eq "burst replies with an Audit-ID" "$ids" 60
n429=$(grep -c '^HTTP/[0-9.]* 429' "$STEPS/burst" || true)
echo "    $n429 of 60 got 429 (each with its Audit-ID)"
kp_stop
python3 "$CHECK" rotation "$ROT" 2 1048576 16

echo "--- the log on standard output (kplane apiserver --audit-log-path -)"
out="$KP_DIR/stdout.log"
"$KP_BIN" apiserver --data-dir "$KP_DIR/data" --store "lmdb:$KP_DIR/data/store" \
  --listen 127.0.0.1:0 --audit-policy-file "$KP_DIR/policy-rr.yaml" --audit-log-path - \
  >"$out" 2>>"$KP_DIR/server.log" &
KP_PID=$!
for _ in $(seq 200); do grep -q "serving on" "$out" 2>/dev/null && break; sleep 0.05; done
KP_PORT=$(sed -n 's|.*https://127.0.0.1:\([0-9]*\);.*|\1|p' "$out")
[ -n "$KP_PORT" ] || fail "apiserver did not report its port"
kp_wait_for "healthz" 10 kp_curl GET /healthz -f
kp_stop
grep -q '"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata"' "$out" ||
  fail "no event on standard output: $(cat "$out")"

echo "--- bad policies stop the start, naming the field"
bad_policy() { # NAME WANT: the policy in $KP_DIR/NAME.yaml must stop both commands
  local name=$1 want=$2
  for cmd in server apiserver; do
    local rc=0 args=(--data-dir "$KP_DIR/bad-$cmd" --listen 127.0.0.1:0)
    [ "$cmd" = apiserver ] && args+=(--store "lmdb:$KP_DIR/bad-$cmd/store")
    [ "$cmd" = server ] && args+=("${KP_API_ONLY[@]}")
    timeout 60 "$KP_BIN" "$cmd" "${args[@]}" --audit-policy-file "$KP_DIR/$name.yaml" \
      --audit-log-path "$KP_DIR/bad.log" >"$KP_DIR/$name.out" 2>"$KP_DIR/$name.err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$cmd started with $name"
    [ "$rc" -ne 124 ] || fail "$cmd kept running with $name"
    grep -qF -- "$want" "$KP_DIR/$name.err" ||
      fail "$cmd with $name: no '$want' in: $(cat "$KP_DIR/$name.err")"
    grep -q -- "--audit-policy-file" "$KP_DIR/$name.err" || fail "$cmd with $name: flag not named"
    ! grep -q "serving on" "$KP_DIR/$name.out" || fail "$cmd served with $name"
  done
  echo "    $name: $(tail -n 1 "$KP_DIR/$name.err")"
}
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n- level: Loud\n' \
  >"$KP_DIR/bad-level.yaml"
bad_policy bad-level 'rules[1].level: Unsupported value: "Loud"'
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Started]\nrules:\n- level: None\n' \
  >"$KP_DIR/bad-stage.yaml"
bad_policy bad-stage 'omitStages[0]: Invalid value: "Started"'
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [metrics]\n' \
  >"$KP_DIR/bad-url.yaml"
bad_policy bad-url "rules[0].nonResourceURLs[0]: Invalid value: \"metrics\""
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n' >"$KP_DIR/no-rules.yaml"
bad_policy no-rules 'rules: Required value'
timeout 60 "$KP_BIN" server --data-dir "$KP_DIR/bad-server" --listen 127.0.0.1:0 \
  "${KP_API_ONLY[@]}" --audit-policy-file "$KP_DIR/no-such-policy.yaml" >/dev/null 2>&1 &&
  fail "the server started with a missing policy file"
out=$("$KP_BIN" server --audit-log-maxbackup -1 2>&1) && fail "a negative maxbackup was taken"
expect_match "negative maxbackup" "$out" "can't be a negative number"
echo "PASS"
