#!/usr/bin/env bash
# token_auth.sh KPLANE KUBECTL -- --token-auth-file, Kubernetes' static token
# file: kubectl with a kubeconfig holding a token from the file authenticates
# as the line's user and groups (kubectl auth whoami), may do what RBAC
# grants them and no more; the generated admin token keeps working; a wrong
# token gets 401, none the anonymous user's 403; a malformed file makes
# `kplane server` and `kplane apiserver` exit non-zero naming the line.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

TOKENS="$KP_DIR/tokens.csv"
# Blank lines are skipped; groups are one quoted field; a quoted field may
# hold commas and doubled quotes.
cat >"$TOKENS" <<'CSV'
alice-token-0123456789abcdef,alice,1001,"dev,ops"

bob-token-fedcba9876543210,bob,1002
"carol-token-""quoted""",carol,1003,"a,b,c"
CSV
kp_start "${KP_API_ONLY[@]}" --token-auth-file "$TOKENS"
grep -q "3 tokens from" "$KP_DIR/server.log" || fail "the server did not report 3 tokens"

# A kubeconfig for a user of the file: same cluster, another user.
kubeconfig_for() { # FILE TOKEN
  local cfg=$1 tok=$2
  "$KUBECTL" --kubeconfig "$cfg" config set-cluster kp --server "https://127.0.0.1:$KP_PORT" \
    --certificate-authority "$KP_DIR/data/ca.crt" --embed-certs=true >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config set-credentials u --token "$tok" >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config set-context kp --cluster kp --user u >/dev/null
  "$KUBECTL" --kubeconfig "$cfg" config use-context kp >/dev/null
}

echo "--- alice's token from the file: her name, uid and groups; nothing granted yet"
kubeconfig_for "$KP_DIR/alice.kubeconfig" alice-token-0123456789abcdef
ka() { "$KUBECTL" --kubeconfig "$KP_DIR/alice.kubeconfig" "$@"; }
who=$(ka auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.uid} {.status.userInfo.groups}')
expect_eq "alice's whoami" "$who" 'alice 1001 ["dev","ops","system:authenticated"]'
out=$(ka get namespaces 2>&1) && fail "alice listed namespaces before any binding: $out"
expect_match "alice refused" "$out" \
  'namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope'
echo "--- group ops bound to cluster-admin: alice may do everything"
"$KUBECTL" create clusterrolebinding ops-admin --clusterrole cluster-admin --group ops >/dev/null
for _ in $(seq 50); do ka auth can-i list namespaces >/dev/null 2>&1 && break; sleep 0.1; done
# (Output first: under pipefail, grep -q ending early would fail kubectl with SIGPIPE.)
names=$(ka get namespaces -o name) || fail "alice cannot list namespaces"
grep -qx namespace/default <<<"$names" || fail "alice's list lacks default: $names"
ka create configmap from-alice --from-literal=k=v >/dev/null
expect_eq "alice's configmap" "$(ka get configmap from-alice -o jsonpath='{.data.k}')" "v"
ka create namespace alices >/dev/null
ka delete configmap from-alice >/dev/null

echo "--- bob (3 columns, no groups) and carol (a quoted token) work too"
kubeconfig_for "$KP_DIR/bob.kubeconfig" bob-token-fedcba9876543210
# (No controllers run here: the aggregated view stays empty, so a role of
# its own.)
"$KUBECTL" create clusterrole ns-reader --verb get,list,watch --resource namespaces >/dev/null
"$KUBECTL" create clusterrolebinding bob-view --clusterrole ns-reader --user bob >/dev/null
for _ in $(seq 50); do
  "$KUBECTL" --kubeconfig "$KP_DIR/bob.kubeconfig" auth can-i get namespaces >/dev/null 2>&1 && break
  sleep 0.1
done
"$KUBECTL" --kubeconfig "$KP_DIR/bob.kubeconfig" get namespace alices -o name >/dev/null ||
  fail "bob's token was refused"
out=$("$KUBECTL" --kubeconfig "$KP_DIR/bob.kubeconfig" delete namespace alices 2>&1) &&
  fail "bob (view) deleted a namespace"
expect_match "bob may only read" "$out" 'User "bob" cannot delete resource "namespaces"'
body=$(curl -sS --cacert "$KP_DIR/data/ca.crt" -H 'Authorization: Bearer carol-token-"quoted"' \
  -H 'Content-Type: application/json' -d '{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1"}' \
  "https://127.0.0.1:$KP_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews")
expect_match "carol's quoted token" "$body" '"username":"carol","uid":"1003","groups":\["a","b","c","system:authenticated"\]'


echo "--- the generated admin token keeps working"
"$KUBECTL" get namespace alices -o name >/dev/null || fail "the admin token was refused"

echo "--- a wrong token gets 401; no token is the anonymous user"
kubeconfig_for "$KP_DIR/wrong.kubeconfig" alice-token-0123456789abcdeX
if out=$("$KUBECTL" --kubeconfig "$KP_DIR/wrong.kubeconfig" get namespaces 2>&1); then
  fail "a wrong token was accepted: $out"
fi
expect_match "kubectl with a wrong token" "$out" "Unauthorized|must be logged in"
body=$(curl -sS -w ' %{http_code}' --cacert "$KP_DIR/data/ca.crt" "https://127.0.0.1:$KP_PORT/api/v1/namespaces")
expect_match "no token" "$body" 'User \\"system:anonymous\\" cannot list resource \\"namespaces\\".* 403$'
for hdr in 'Authorization: Bearer alice-token-0123456789abcdeX' \
  'Authorization: Bearer alice' 'Authorization: Bearer '; do
  body=$(curl -sS -w ' %{http_code}' --cacert "$KP_DIR/data/ca.crt" -H "$hdr" \
    "https://127.0.0.1:$KP_PORT/api/v1/namespaces")
  expect_match "[$hdr]" "$body" '"reason":"Unauthorized".* 401$'
done
# A user name or uid is no token.
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" \
  -H 'Authorization: Bearer 1001' "https://127.0.0.1:$KP_PORT/api/v1/namespaces")
expect_eq "a uid as token" "$code" "401"
kp_stop

echo "--- a malformed file: the server refuses to start, naming the line"
bad_start() { # NAME LINE CONTENT... : expect exit != 0 and "line LINE" on stderr
  local name=$1 line=$2
  shift 2
  printf '%s\n' "$@" >"$KP_DIR/$name.csv"
  for cmd in server apiserver; do
    local rc=0 args=(--data-dir "$KP_DIR/bad-$cmd" --listen 127.0.0.1:0)
    [ "$cmd" = apiserver ] && args+=(--store "lmdb:$KP_DIR/bad-$cmd/store")
    [ "$cmd" = server ] && args+=("${KP_API_ONLY[@]}")
    timeout 60 "$KP_BIN" "$cmd" "${args[@]}" --token-auth-file "$KP_DIR/$name.csv" \
      >"$KP_DIR/$name.out" 2>"$KP_DIR/$name.err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$cmd started with $name"
    [ "$rc" -ne 124 ] || fail "$cmd kept running with $name"
    grep -q "line $line" "$KP_DIR/$name.err" ||
      fail "$cmd with $name: no 'line $line' in: $(cat "$KP_DIR/$name.err")"
    grep -q -- "--token-auth-file" "$KP_DIR/$name.err" ||
      fail "$cmd with $name: the message does not name the flag"
    ! grep -q "serving on" "$KP_DIR/$name.out" || fail "$cmd served with $name"
  done
  echo "    $name: $(tail -n 1 "$KP_DIR/$name.err")"
}
bad_start two-columns 3 'tok1,u1,1' '' 'tok2,u2'
bad_start bare-quote 2 'tok1,u1,1' 'tok"2,u2,2'
bad_start unclosed-quote 2 'tok1,u1,1' 'tok2,u2,"g1,g2' 'tok3,u3,3'
bad_start junk-after-quote 1 '"tok1"x,u1,1'
timeout 60 "$KP_BIN" server --data-dir "$KP_DIR/bad-server" --listen 127.0.0.1:0 \
  "${KP_API_ONLY[@]}" --token-auth-file "$KP_DIR/no-such-file.csv" >/dev/null 2>&1 &&
  fail "the server started with a missing token file"
echo "PASS"
