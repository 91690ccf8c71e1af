#!/usr/bin/env bash
# client_cert.sh KPLANE KUBECTL [KUBECTL_1.20] -- x509 client certificates:
# the kubeconfig written at first start authenticates with the admin's client
# certificate (kubernetes-admin in system:masters, signed by the cluster CA,
# as kubeadm's admin.conf), for kubectl (1.32 and 1.20) and curl; the admin
# token keeps working beside it; a certificate from another CA (even one
# named as ours), or the server's own (for servers only), gets 401; a restart
# keeps the certificate, and a missing one is made again.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
KUBECTL_120=${3:-}
. "$(dirname "$0")/lib.sh"

kp_start "${KP_API_ONLY[@]}"
D=$KP_DIR/data
URL=https://127.0.0.1:$KP_PORT/api/v1/namespaces
code() { curl -sS -o /dev/null -w '%{http_code}' --cacert "$D/ca.crt" "$@" "$URL"; }

echo "--- the kubeconfig's user is the admin's client certificate"
cfg=$(cat "$D/kubeconfig")
expect_match "client-certificate-data" "$cfg" 'client-certificate-data: [A-Za-z0-9+/=]{100,}'
expect_match "client-key-data" "$cfg" 'client-key-data: [A-Za-z0-9+/=]{100,}'
expect_match "current-context" "$cfg" 'current-context: kubernetes-admin@kplane'
! grep -q 'token:' <<<"$cfg" || fail "the kubeconfig still carries a token"
subject=$(openssl x509 -in "$D/admin.crt" -noout -subject)
expect_match "admin.crt's subject" "$subject" 'O ?= ?system:masters, CN ?= ?kubernetes-admin'
eku=$(openssl x509 -in "$D/admin.crt" -noout -ext extendedKeyUsage)
expect_match "admin.crt's key usage" "$eku" 'TLS Web Client Authentication'
openssl verify -CAfile "$D/ca.crt" "$D/admin.crt" >/dev/null || fail "admin.crt: not the CA's"
expect_eq "admin.key's mode" "$(stat -c %a "$D/admin.key")" 600
expect_eq "admin.crt's mode" "$(stat -c %a "$D/admin.crt")" 600

echo "--- kubectl with the kubeconfig"
names=$("$KUBECTL" --kubeconfig "$D/kubeconfig" get namespaces -o name) ||
  fail "kubectl cannot list namespaces with the certificate"
grep -qx namespace/default <<<"$names" || fail "the list lacks default: $names"
"$KUBECTL" --kubeconfig "$D/kubeconfig" create configmap by-cert --from-literal=k=v >/dev/null
if [ -n "$KUBECTL_120" ] && [ -x "$KUBECTL_120" ]; then
  "$KUBECTL_120" --kubeconfig "$D/kubeconfig" get configmap by-cert -o name >/dev/null ||
    fail "kubectl 1.20 cannot read with the certificate"
fi

echo "--- curl with the certificate, and the admin token beside it"
expect_eq "curl --cert admin.crt" "$(code --cert "$D/admin.crt" --key "$D/admin.key")" 200
expect_eq "the admin token" "$(code -H "Authorization: Bearer $KP_TOKEN")" 200
expect_eq "neither: the anonymous user, refused" "$(code)" 403

echo "--- another CA's certificate gets 401"
O=$KP_DIR/other
mkdir -p "$O"
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@" 2>/dev/null; }
printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n' >"$O/ext"
# A CA named as ours ("kplane-ca": kubectl sends a certificate only to a
# server that names its issuer) and one named otherwise.
for ca in kplane-ca other-ca; do
  ec -x509 -keyout "$O/$ca.key" -out "$O/$ca.crt" -subj "/CN=$ca" -days 1
  ec -keyout "$O/$ca-admin.key" -out "$O/$ca-admin.csr" \
    -subj '/O=system:masters/CN=kubernetes-admin'
  openssl x509 -req -in "$O/$ca-admin.csr" -CA "$O/$ca.crt" -CAkey "$O/$ca.key" \
    -CAcreateserial -out "$O/$ca-admin.crt" -days 1 -extfile "$O/ext" 2>/dev/null
  expect_eq "curl with $ca's certificate" \
    "$(code --cert "$O/$ca-admin.crt" --key "$O/$ca-admin.key")" 401
done
k2() { "$KUBECTL" --kubeconfig "$O/kubeconfig" "$@"; }
k2 config set-cluster kp --server "https://127.0.0.1:$KP_PORT" \
  --certificate-authority "$D/ca.crt" --embed-certs=true >/dev/null
k2 config set-credentials u --client-certificate "$O/kplane-ca-admin.crt" \
  --client-key "$O/kplane-ca-admin.key" --embed-certs=true >/dev/null
k2 config set-context kp --cluster kp --user u >/dev/null
k2 config use-context kp >/dev/null
if out=$(k2 get namespaces 2>&1); then fail "another CA's certificate was accepted: $out"; fi
expect_match "kubectl with another CA's certificate" "$out" "Unauthorized|must be logged in"
# The server's own certificate is the CA's too, but for servers only.
expect_eq "curl with server.crt" "$(code --cert "$D/server.crt" --key "$D/server.key")" 401
# ... and a wrong certificate does not spoil a good token.
expect_eq "another CA's certificate and the token" \
  "$(code --cert "$O/other-ca-admin.crt" --key "$O/other-ca-admin.key" \
    -H "Authorization: Bearer $KP_TOKEN")" 200

echo "--- a restart keeps the certificate; a missing one is made again"
before=$(sha256sum "$D/admin.crt" "$D/admin.key")
kp_restart "${KP_API_ONLY[@]}"
expect_eq "admin.crt after a restart" "$(sha256sum "$D/admin.crt" "$D/admin.key")" "$before"
"$KUBECTL" --kubeconfig "$D/kubeconfig" get configmap by-cert -o name >/dev/null ||
  fail "kubectl after a restart"
rm "$D/admin.crt"
kp_restart "${KP_API_ONLY[@]}"
[ "$(sha256sum "$D/admin.crt" "$D/admin.key")" != "$before" ] || fail "admin.crt was not made again"
"$KUBECTL" --kubeconfig "$D/kubeconfig" get configmap by-cert -o name >/dev/null ||
  fail "kubectl with the new certificate"
echo "PASS"
