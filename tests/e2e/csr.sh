#!/usr/bin/env bash
# csr.sh KPLANE KUBECTL -- certificates.k8s.io/v1 CertificateSigningRequests
# as a user meets them: openssl makes a key and a CSR for CN=jane, O=dev;
# `kubectl create -f` sends it for kubernetes.io/kube-apiserver-client;
# `kubectl certificate approve` approves it through the approval
# subresource, the signing controller issues a certificate that verifies
# against DATA_DIR/ca.crt (openssl verify) and names jane/dev; `kubectl
# certificate deny` on another CSR leaves it Denied, without certificate.
# The main resource and the status subresource cannot approve; the approval
# subresource refuses Approved with Denied (422 naming the field).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
kp_start --nodes 0 --no-scheduler
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"
W="$KP_DIR/work"
mkdir -p "$W"

# csr NAME CN: a key and a CSR object for CN (O=dev), created with kubectl.
csr() {
  openssl req -new -newkey rsa:2048 -nodes -keyout "$W/$1.key" -subj "/CN=$2/O=dev" \
    -out "$W/$1.csr" 2>/dev/null
  cat >"$W/$1.yaml" <<YAML
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: $1
spec:
  request: $(base64 -w0 <"$W/$1.csr")
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages:
  - client auth
YAML
  k create -f "$W/$1.yaml"
}
cond_types() { k get csr "$1" -o jsonpath='{.status.conditions[*].type}'; }
has_cert() { [ -n "$(k get csr "$1" -o jsonpath='{.status.certificate}')" ]; }

echo "--- discovery lists certificatesigningrequests/approval, subresources sorted by name"
expect_match "discovery" "$(kp_curl GET /apis/certificates.k8s.io/v1)" \
  '"name":"certificatesigningrequests/approval"'
expect_eq "discovery order" "$(kp_curl GET /apis/certificates.k8s.io/v1 |
  python3 -c 'import json, sys; print(" ".join(r["name"] for r in json.load(sys.stdin)["resources"]))')" \
  "certificatesigningrequests certificatesigningrequests/approval certificatesigningrequests/status"
expect_eq "pods' subresources in order" "$(kp_curl GET /api/v1 |
  python3 -c 'import json, sys; n = [r["name"] for r in json.load(sys.stdin)["resources"] if r["name"].startswith("pods/")]; print(n == sorted(n), len(n) > 2)')" \
  "True True"

csr jane jane
csr bob bob
expect_match "condition column" "$(k get csr jane --no-headers)" 'Pending'
# The requester is who asked, whatever the body said: the kubeconfig's admin.
expect_eq "requester" "$(k get csr jane -o jsonpath='{.spec.username} {.spec.groups}')" \
  'kubernetes-admin ["system:masters","system:authenticated"]'

echo "--- the main resource and the status subresource cannot approve"
body=$(k get csr jane -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
o.setdefault("status", {})["conditions"] = [{"type": "Approved", "status": "True", "reason": "Sneaky"}]
print(json.dumps(o))')
kp_curl PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/jane \
  -H 'Content-Type: application/json' -d "$body" >/dev/null
kp_curl PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/jane/status \
  -H 'Content-Type: application/json' -d "$body" >/dev/null
expect_eq "conditions after PUT and PUT status" "$(cond_types jane)" ""

echo "--- approval refuses Approved with Denied"
both=$(python3 -c '
import json, sys
o = json.loads(sys.argv[1])
o["status"]["conditions"].append({"type": "Denied", "status": "True"})
print(json.dumps(o))' "$body")
out=$(kp_curl PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/jane/approval \
  -H 'Content-Type: application/json' -d "$both" -w '\n%{http_code}')
expect_eq "code" "$(tail -n1 <<<"$out")" 422
expect_match "message" "$out" \
  'status.conditions\[1\].type: Invalid value: \\"Denied\\": Approved and Denied conditions are mutually exclusive'

echo "--- kubectl certificate approve / deny"
k certificate approve jane
expect_eq "jane's conditions" "$(cond_types jane)" "Approved"
expect_eq "jane's reason" "$(k get csr jane -o jsonpath='{.status.conditions[0].reason}')" \
  KubectlApprove
k certificate deny bob
expect_eq "bob's conditions" "$(cond_types bob)" "Denied"
expect_match "condition column" "$(k get csr bob --no-headers)" 'Denied'

echo "--- the signer issues jane's certificate; it verifies against the cluster CA"
kp_wait_for "jane's certificate" 20 has_cert jane
k get csr jane -o jsonpath='{.status.certificate}' | base64 -d >"$W/jane.crt"
expect_match "openssl verify" "$(openssl verify -CAfile "$KP_DIR/data/ca.crt" "$W/jane.crt" 2>&1)" \
  ': OK$'
subject=$(openssl x509 -in "$W/jane.crt" -noout -subject -nameopt RFC2253)
expect_match "subject" "$subject" 'CN=jane'
expect_match "subject" "$subject" 'O=dev'
expect_match "client auth" "$(openssl x509 -in "$W/jane.crt" -noout -ext extendedKeyUsage)" \
  'TLS Web Client Authentication'
# expirationSeconds 86400: one day (notBefore is backdated 5 minutes, the
# end is not for a certificate under 8 hours only).
nb=$(date -d "$(openssl x509 -in "$W/jane.crt" -noout -startdate | cut -d= -f2)" +%s)
na=$(date -d "$(openssl x509 -in "$W/jane.crt" -noout -enddate | cut -d= -f2)" +%s)
expect_eq "lifetime" "$((na - nb))" 86400
expect_match "condition column" "$(k get csr jane --no-headers)" 'Approved,Issued'
# The key matches the certificate.
expect_eq "public key" "$(openssl x509 -in "$W/jane.crt" -noout -pubkey)" \
  "$(openssl pkey -in "$W/jane.key" -pubout)"

echo "--- the certificate, once issued, cannot be replaced"
out=$(kp_curl PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/jane/status \
  -H 'Content-Type: application/json' \
  -d "$(k get csr jane -o json | python3 -c '
import json, sys
o = json.load(sys.stdin); o["status"]["certificate"] = o["status"]["certificate"][4:]; print(json.dumps(o))')" \
  -w '\n%{http_code}')
expect_eq "code" "$(tail -n1 <<<"$out")" 422
expect_match "message" "$out" 'status.certificate: Forbidden: updates may not modify existing certificate content'

echo "--- a denied CSR gets no certificate"
has_cert bob && fail "bob got a certificate"

echo "--- a usage the signer refuses: Failed, SignerValidationFailure"
openssl req -new -newkey rsa:2048 -nodes -keyout "$W/srv.key" -subj "/CN=srv" \
  -out "$W/srv.csr" 2>/dev/null
sed -e "s/name: jane/name: srv/" -e "s/- client auth/- server auth/" \
  -e "s|request: .*|request: $(base64 -w0 <"$W/srv.csr")|" "$W/jane.yaml" | k create -f -
k certificate approve srv
failed() { [ "$(cond_types srv)" = "Approved Failed" ]; }
kp_wait_for "srv's Failed condition" 20 failed
expect_eq "reason" "$(k get csr srv -o jsonpath='{.status.conditions[1].reason}')" \
  SignerValidationFailure
expect_eq "message" "$(k get csr srv -o jsonpath='{.status.conditions[1].message}')" \
  "invalid usage for client certificate: server auth"
has_cert srv && fail "srv got a certificate"

echo "--- a merge patch of the approval subresource approves; of the main resource, not"
csr pat pat
kp_curl PATCH /apis/certificates.k8s.io/v1/certificatesigningrequests/pat \
  -H 'Content-Type: application/merge-patch+json' \
  -d '{"status":{"conditions":[{"type":"Approved","status":"True"}]}}' >/dev/null
expect_eq "pat's conditions after a main PATCH" "$(cond_types pat)" ""
out=$(kp_curl PATCH /apis/certificates.k8s.io/v1/certificatesigningrequests/pat/approval \
  -H 'Content-Type: application/merge-patch+json' \
  -d '{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Patched"}]}}' \
  -w '\n%{http_code}')
expect_eq "code" "$(tail -n1 <<<"$out")" 200
expect_eq "pat's conditions" "$(cond_types pat)" "Approved"
expect_match "GET approval" "$(kp_curl GET /apis/certificates.k8s.io/v1/certificatesigningrequests/pat/approval)" \
  '"reason":"Patched"'
kp_wait_for "pat's certificate" 20 has_cert pat

echo "--- an approval is not taken back"
out=$(kp_curl PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/jane/approval \
  -H 'Content-Type: application/json' \
  -d "$(k get csr jane -o json | python3 -c '
import json, sys
o = json.load(sys.stdin); o["status"]["conditions"] = []; print(json.dumps(o))')" \
  -w '\n%{http_code}')
expect_eq "code" "$(tail -n1 <<<"$out")" 422
expect_match "message" "$out" 'updates may not remove a condition of type \\"Approved\\"'
