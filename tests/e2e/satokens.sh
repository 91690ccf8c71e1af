#!/usr/bin/env bash
# satokens.sh KPLANE KUBECTL -- ServiceAccount tokens as on a cluster:
# `kubectl create token` returns a JWT the API server accepts for exactly
# that ServiceAccount, that TokenReview validates, that python's PyJWT
# verifies with the keys of /openid/v1/jwks, and that stops working when its
# bound Pod is deleted; TokenRequest's checks; the OIDC discovery document;
# ServiceAccount admission (the default account, the projected volume).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

kp_start --nodes 0 --no-scheduler
k() { "$KUBECTL" "$@"; }
for _ in $(seq 100); do k get sa default -o name >/dev/null 2>&1 && break; sleep 0.05; done

echo "--- kubectl create token: a JWT for exactly that ServiceAccount"
T=$(k create token default --duration 10m)
who=$(k --kubeconfig "$KP_NOUSER" --token "$T" auth whoami -o jsonpath='{.status.userInfo.username}/{.status.userInfo.groups}')
expect_eq "whoami" "$who" \
  'system:serviceaccount:default:default/["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]'
uid=$(k get sa default -o jsonpath='{.metadata.uid}')
expect_eq "its uid" "$(k --kubeconfig "$KP_NOUSER" --token "$T" auth whoami -o jsonpath='{.status.userInfo.uid}')" "$uid"
out=$(k --kubeconfig "$KP_NOUSER" --token "$T" get secrets 2>&1) && fail "the default ServiceAccount read secrets"
expect_match "no more" "$out" 'User "system:serviceaccount:default:default" cannot list resource "secrets"'

echo "--- TokenReview"
review() { # TOKEN [AUDIENCE]
  local aud=""
  [ -n "${2:-}" ] && aud=", audiences: [\"$2\"]"
  k create -o jsonpath='{.status.authenticated}/{.status.user.username}/{.status.audiences}' -f - <<EOF
apiVersion: authentication.k8s.io/v1
kind: TokenReview
spec: {token: "$1"$aud}
EOF
}
expect_eq "review" "$(review "$T")" \
  'true/system:serviceaccount:default:default/["https://kubernetes.default.svc.cluster.local"]'
expect_eq "another audience" "$(review "$T" other)" "false//"
expect_eq "garbage" "$(review "a.b.c")" "false//"
A=$(k create token default --duration 10m --audience vault --audience other)
expect_eq "asked audience" "$(review "$A" vault)" 'true/system:serviceaccount:default:default/["vault"]'
both=$(k create -o jsonpath='{.status.audiences}' -f - <<EOF
apiVersion: authentication.k8s.io/v1
kind: TokenReview
spec: {token: "$A", audiences: [nope, other, vault]}
EOF
)
expect_eq "the audiences both have" "$both" '["other","vault"]'
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KP_DIR/data/ca.crt" \
  -H "Authorization: Bearer $A" "https://127.0.0.1:$KP_PORT/apis")
expect_eq "a token for vault is no token for the API" "$code" "401"

echo "--- the OIDC documents, and PyJWT verifying the token with them"
get() { curl -fsS --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer $T" "https://127.0.0.1:$KP_PORT$1"; }
get /.well-known/openid-configuration >"$KP_DIR/oidc.json"
get /openid/v1/jwks >"$KP_DIR/jwks.json"
/usr/bin/python3 - "$KP_DIR/oidc.json" "$KP_DIR/jwks.json" "$T" <<'EOF'
import json, sys
import jwt
oidc = json.load(open(sys.argv[1]))
jwks = json.load(open(sys.argv[2]))
token = sys.argv[3]
iss = "https://kubernetes.default.svc.cluster.local"
assert oidc["issuer"] == iss, oidc
assert oidc["jwks_uri"] == iss + "/openid/v1/jwks", oidc
assert oidc["id_token_signing_alg_values_supported"] == ["ES256"], oidc
kid = jwt.get_unverified_header(token)["kid"]
key = next(k for k in jwks["keys"] if k["kid"] == kid)
pub = jwt.PyJWK(key).key
claims = jwt.decode(token, pub, algorithms=["ES256"], audience=iss, issuer=iss)
assert claims["sub"] == "system:serviceaccount:default:default", claims
assert claims["exp"] - claims["iat"] == 600, claims
assert claims["kubernetes.io"]["serviceaccount"]["name"] == "default", claims
# One byte of the signature changed: refused.
head, body, sig = token.split(".")
bad = head + "." + body + "." + ("A" if sig[0] != "A" else "B") + sig[1:]
try:
    jwt.decode(bad, pub, algorithms=["ES256"], audience=iss)
    raise SystemExit("a forged signature verified")
except jwt.InvalidSignatureError:
    pass
print("    PyJWT verified the token: sub=%s kid=%s" % (claims["sub"], kid))
EOF

echo "--- a token bound to a Pod stops working when the Pod is deleted"
k run bound --image=busybox >/dev/null
P=$(k create token default --duration 10m --bound-object-kind Pod --bound-object-name bound)
expect_eq "bound works" "$(k --kubeconfig "$KP_NOUSER" --token "$P" auth whoami -o jsonpath='{.status.userInfo.username}')" \
  "system:serviceaccount:default:default"
expect_match "pod in the claims" "$(review "$P")" '^true/'
k delete pod bound --wait=false >/dev/null
for _ in $(seq 100); do k get pod bound >/dev/null 2>&1 || break; sleep 0.05; done
out=$(k --kubeconfig "$KP_NOUSER" --token "$P" get --raw /apis 2>&1) && fail "a token of a deleted pod worked"
expect_match "pod gone" "$out" 'Unauthorized'
expect_eq "review after delete" "$(review "$P")" "false//"

echo "--- TokenRequest's checks"
out=$(k create token default --duration 5m 2>&1) && fail "a 5 minute token was made"
expect_match "short" "$out" 'spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes'
out=$(k create token nosuch 2>&1) && fail "a token for a missing ServiceAccount"
expect_match "no account" "$out" 'serviceaccounts "nosuch" not found'
out=$(k create token default --bound-object-kind Pod --bound-object-name nopod 2>&1) &&
  fail "a token bound to a missing pod"
expect_match "no pod" "$out" 'pods "nopod" not found'
k create sa other >/dev/null
k run as-other --image=busybox --overrides='{"spec":{"serviceAccountName":"other"}}' >/dev/null
out=$(k create token default --bound-object-kind Pod --bound-object-name as-other 2>&1) &&
  fail "a token bound to another account's pod"
expect_match "other account" "$out" 'cannot bind token for serviceaccount "default" to pod running with different serviceaccount name'
k create secret generic s1 --from-literal=a=b >/dev/null
S=$(k create token default --bound-object-kind Secret --bound-object-name s1)
expect_match "bound to a secret" "$(review "$S")" '^true/'
k delete secret s1 >/dev/null
for _ in $(seq 100); do [ "$(review "$S")" = "false//" ] && break; sleep 0.05; done
expect_eq "secret gone" "$(review "$S")" "false//"

echo "--- ServiceAccount admission"
k run plain --image=busybox >/dev/null
expect_eq "default account" "$(k get pod plain -o jsonpath='{.spec.serviceAccountName}')" "default"
vol=$(k get pod plain -o jsonpath='{.spec.volumes[0].name}')
expect_match "token volume" "$vol" '^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$'
expect_eq "its sources" "$(k get pod plain -o jsonpath='{.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds} {.spec.volumes[0].projected.sources[1].configMap.name} {.spec.volumes[0].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath}')" \
  "3607 kube-root-ca.crt metadata.namespace"
expect_eq "mounted" "$(k get pod plain -o jsonpath='{.spec.containers[0].volumeMounts[0].mountPath} {.spec.containers[0].volumeMounts[0].readOnly}')" \
  "/var/run/secrets/kubernetes.io/serviceaccount true"
k create sa quiet >/dev/null
k patch sa quiet -p '{"automountServiceAccountToken":false}' >/dev/null
k run quiet --image=busybox --overrides='{"spec":{"serviceAccountName":"quiet"}}' >/dev/null
expect_eq "opted out" "$(k get pod quiet -o jsonpath='{.spec.volumes}')" ""
kp_stop
echo "PASS"
