#!/usr/bin/env bash
# services.sh KPLANE KUBECTL -- Services get addresses (issue 15, item 4),
# with real kubectl against a real server:
#   - the kubernetes Service (first address, 443 -> the server's port) with
#     its Endpoints and EndpointSlice naming the server;
#   - `kubectl create service nodeport` gets a ClusterIP and a NodePort from
#     the ranges given by the flags; headless and ExternalName get none;
#   - conflicts, out-of-range requests and exhaustion give Kubernetes'
#     errors; validation names the field; a dry run records nothing;
#   - type changes give back and take addresses;
#   - 1,000 Services (a tenth NodePort) created and deleted leave the record
#     as it was (IPAddress keys and the NodePort bitmap, counted in the
#     store);
#   - a crash between allocation and the Service write leaves no leak after
#     a restart: forced (the server killed, then the state such a crash
#     leaves written into the store: an IPAddress and a NodePort with no
#     Service, and a Service whose IPAddress is missing), and raced (kill -9
#     during concurrent creates; after the restart the record must match the
#     Services exactly).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
k() { "$KUBECTL" "$@"; }
store() { "$KP_BIN" store --data-dir "$KP_DIR/data" "$@"; }
IPS=/registry/networking.k8s.io/ipaddresses/
PORTS=/registry/ranges/servicenodeports
nrecords() { store list "$IPS" --keys-only | grep -c . || true; }
# The NodePorts the bitmap holds.
nports() {
  store get "$PORTS" | python3 -c '
import base64, json, sys
d = base64.b64decode(json.load(sys.stdin).get("data") or "")
print(sum(bin(b).count("1") for b in d))'
}

# ---- a small range: errors and exhaustion --------------------------------
kp_start "${KP_API_ONLY[@]}" --service-cluster-ip-range 10.0.0.0/29 \
  --service-node-port-range 30000-30004

expect_eq "kubernetes ClusterIP" "$(k get svc kubernetes -o jsonpath='{.spec.clusterIP}')" 10.0.0.1
expect_eq "kubernetes port" "$(k get svc kubernetes -o jsonpath='{.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort}')" "https 443 $KP_PORT"
expect_eq "kubernetes endpoints" "$(k get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[0].ip} {.subsets[0].ports[0].port}')" "127.0.0.1 $KP_PORT"
expect_eq "kubernetes endpoints label" "$(k get endpoints kubernetes -o jsonpath='{.metadata.labels.endpointslice\.kubernetes\.io/skip-mirror}')" true
slice=$(store get /registry/discovery.k8s.io/endpointslices/default/kubernetes)
expect_match "kubernetes EndpointSlice" "$slice" "\"kubernetes.io/service-name\":\"kubernetes\".*\"addresses\":\[\"127.0.0.1\"\].*\"port\":$KP_PORT"

k create service nodeport web --tcp=80:8080 >/dev/null
ip=$(k get svc web -o jsonpath='{.spec.clusterIP}')
np=$(k get svc web -o jsonpath='{.spec.ports[0].nodePort}')
expect_match "web ClusterIP" "$ip" '^10\.0\.0\.[2-6]$'
expect_match "web NodePort" "$np" '^3000[0-4]$'
spec=$(k get svc web -o jsonpath='{.spec.clusterIPs} {.spec.ipFamilies} {.spec.ipFamilyPolicy} {.spec.externalTrafficPolicy} {.spec.internalTrafficPolicy} {.spec.sessionAffinity} {.status}')
expect_eq "web defaults" "$spec" "[\"$ip\"] [\"IPv4\"] SingleStack Cluster Cluster None {\"loadBalancer\":{}}"
expect_eq "records" "$(nrecords)" 2
expect_eq "ports" "$(nports)" 1

out=$(k create service clusterip dup --clusterip="$ip" --tcp=80 2>&1 || true)
expect_eq "IP conflict" "$out" "error: failed to create ClusterIP service: Service \"dup\" is invalid: spec.clusterIPs: Invalid value: []string{\"$ip\"}: failed to allocate IP $ip: provided IP is already allocated"
out=$(k create service clusterip far --clusterip=10.9.0.1 --tcp=80 2>&1 || true)
expect_match "IP out of range" "$out" 'spec.clusterIPs: Invalid value: \[\]string\{"10.9.0.1"\}: failed to allocate IP 10.9.0.1: provided IP is not in the valid range. The range of valid IPs is 10.0.0.0/29$'
out=$(k create service nodeport np2 --tcp=80 --node-port="$np" 2>&1 || true)
expect_eq "NodePort conflict" "$out" "error: failed to create NodePort service: Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: $np: provided port is already allocated"
out=$(k create service nodeport np3 --tcp=80 --node-port=31000 2>&1 || true)
expect_match "NodePort out of range" "$out" 'spec.ports\[0\].nodePort: Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30004$'
expect_eq "records after refusals" "$(nrecords)" 2
expect_eq "ports after refusals" "$(nports)" 1

# Validation names the field.
bad() { k create -f - 2>&1 <<<"$1" || true; }
out=$(bad '{"apiVersion":"v1","kind":"Service","metadata":{"name":"v1"},"spec":{"ports":[{"port":80},{"port":80}]}}')
expect_match "port names" "$out" 'spec.ports\[1\].name: Required value'
expect_match "duplicate port" "$out" 'spec.ports\[1\]: Duplicate value: core.ServicePort\{Name:"", Protocol:"TCP", AppProtocol:\(\*string\)\(nil\), Port:80,'
out=$(bad '{"apiVersion":"v1","kind":"Service","metadata":{"name":"v2"},"spec":{"ports":[{"port":0}]}}')
expect_match "port range" "$out" 'spec.ports\[0\].port: Invalid value: 0: must be between 1 and 65535, inclusive'
out=$(bad '{"apiVersion":"v1","kind":"Service","metadata":{"name":"v3"},"spec":{"type":"ExternalName"}}')
expect_match "externalName" "$out" 'spec.externalName: Required value'
out=$(bad '{"apiVersion":"v1","kind":"Service","metadata":{"name":"v4"},"spec":{"ports":[{"port":80,"nodePort":30001}]}}')
expect_match "nodePort on ClusterIP" "$out" "spec.ports\[0\].nodePort: Forbidden: may not be used when \`type\` is 'ClusterIP'"
out=$(bad '{"apiVersion":"v1","kind":"Service","metadata":{"name":"v5"},"spec":{"ipFamilies":["IPv6"],"ports":[{"port":80}]}}')
expect_match "IPv6" "$out" 'spec.ipFamilies\[0\]: Invalid value: "IPv6": not configured on this cluster'
expect_eq "records after invalid" "$(nrecords)" 2

# Headless and ExternalName take no address; a dry run records nothing.
k create service clusterip hl --clusterip=None >/dev/null
k create service externalname ext --external-name example.com >/dev/null
expect_eq "headless" "$(k get svc hl -o jsonpath='{.spec.clusterIP}')" None
expect_eq "externalname" "$(k get svc ext -o jsonpath='{.spec.clusterIP}|{.spec.ipFamilies}')" "|"
expect_eq "dry run IP" "$(k create service nodeport dry --tcp=80 --dry-run=server -o jsonpath='{.spec.clusterIP}')" 10.0.0.0
expect_eq "records after dry run" "$(nrecords)" 2
expect_eq "ports after dry run" "$(nports)" 1

# Type changes: NodePort -> ClusterIP gives the port back, -> ExternalName
# the IP; ExternalName -> ClusterIP takes one again.
k patch svc web -p '{"spec":{"type":"ClusterIP"}}' >/dev/null
expect_eq "web to ClusterIP" "$(k get svc web -o jsonpath='{.spec.ports[0].nodePort}|{.spec.externalTrafficPolicy}')" "|"
expect_eq "ports after ClusterIP" "$(nports)" 0
k patch svc web -p '{"spec":{"type":"ExternalName","externalName":"web.example"}}' >/dev/null
expect_eq "records after ExternalName" "$(nrecords)" 1
k patch svc web -p '{"spec":{"type":"NodePort","externalName":null}}' >/dev/null
expect_match "web back" "$(k get svc web -o jsonpath='{.spec.clusterIP} {.spec.ports[0].nodePort}')" '^10\.0\.0\.[2-6] 3000[0-4]$'
expect_eq "records after NodePort" "$(nrecords)" 2
ip=$(k get svc web -o jsonpath='{.spec.clusterIP}')
other=10.0.0.2; [ "$ip" != 10.0.0.2 ] || other=10.0.0.3
out=$(k patch svc web -p "{\"spec\":{\"clusterIP\":\"$other\",\"clusterIPs\":[\"$other\"]}}" 2>&1 || true)
expect_match "clusterIP immutable" "$out" "spec.clusterIPs\[0\]: Invalid value: \[\]string\{\"$other\"\}: may not change once set"

# Exhaustion: four more NodePorts in one Service, then one too many; then
# the addresses (6 usable, the kubernetes Service holds one).
k create service nodeport four --tcp=81 --tcp=82 --tcp=83 --tcp=84 >/dev/null
expect_eq "ports full" "$(nports)" 5
out=$(k create service nodeport more --tcp=80 2>&1 || true)
expect_eq "NodePort exhaustion" "$out" "error: failed to create NodePort service: Internal error occurred: failed to allocate a nodePort: range is full"
for i in 1 2 3; do k create service clusterip "c$i" --tcp=80 >/dev/null; done
out=$(k create service clusterip c4 --tcp=80 2>&1 || true)
expect_eq "IP exhaustion" "$out" "error: failed to create ClusterIP service: Internal error occurred: failed to allocate a serviceIP: range is full"
expect_eq "records full" "$(nrecords)" 6
k delete svc web four c1 c2 c3 hl ext >/dev/null
expect_eq "records after delete" "$(nrecords)" 1
expect_eq "ports after delete" "$(nports)" 0

# ---- 1,000 Services: every address given back ------------------------------
echo "phase: 1000 services"
kp_restart "${KP_API_ONLY[@]}" --service-cluster-ip-range 10.96.0.0/12
expect_eq "kubernetes ClusterIP moved with the range" "$(k get svc kubernetes -o jsonpath='{.spec.clusterIP}')" 10.0.0.1
# bulk VERB: 1,000 creates (every tenth a NodePort) or deletes, 8 at a time
# over keep-alive HTTPS (kubectl would send them one by one).
bulk() {
  python3 - "$1" "$KP_PORT" "$KP_TOKEN" "$KP_DIR/data/ca.crt" <<'PY'
import http.client, json, ssl, sys, threading
verb, port, token, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)
errors = []
def work(names):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=120)
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    for i in names:
        if verb != "delete":
            spec = {"selector": {"app": "m"}, "ports": [{"port": 80}]}
            if i % 10 == 0 or verb == "race": spec["type"] = "NodePort"
            body = json.dumps({"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": "%s%d" % (verb[0], i), "labels": {"bulk": "1"}},
                               "spec": spec})
            try:
                c.request("POST", "/api/v1/namespaces/default/services", body, h)
            except OSError:
                return  # race: the server was killed
        else:
            c.request("DELETE", "/api/v1/namespaces/default/services/c%d" % i, None, h)
        try:
            r = c.getresponse()
        except OSError:
            return
        data = r.read()
        if r.status not in (200, 201):
            errors.append((i, r.status, data[:200]))
threads = [threading.Thread(target=work, args=(range(k, 1000, 8),)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
if errors and verb != "race":
    print(errors[:3]); sys.exit(1)
PY
}
before_r=$(nrecords); before_p=$(nports)
t0=$(date +%s.%N)
bulk create
t1=$(date +%s.%N)
expect_eq "1000 records" "$(nrecords)" $((before_r + 1000))
expect_eq "100 ports" "$(nports)" $((before_p + 100))
distinct=$(k get svc -l bulk=1 -o jsonpath='{range .items[*]}{.spec.clusterIP}{"\n"}{end}' | sort -u | grep -c .)
expect_eq "distinct ClusterIPs" "$distinct" 1000
bulk delete
t2=$(date +%s.%N)
expect_eq "records after 1000 deletes" "$(nrecords)" "$before_r"
expect_eq "ports after 1000 deletes" "$(nports)" "$before_p"
echo "1000 services: create $(python3 -c "print(round($t1-$t0,1))") s, delete $(python3 -c "print(round($t2-$t1,1))") s"

# ---- a crash between allocation and the Service write ----------------------
echo "phase: crash"
k create service nodeport keep --tcp=80 >/dev/null
keep_ip=$(k get svc keep -o jsonpath='{.spec.clusterIP}')
kill -KILL "$KP_PID"; wait "$KP_PID" 2>/dev/null || true
# What a crash after the records and before the Service leaves: an
# IPAddress naming a Service that does not exist, and a NodePort no Service
# has. And the other half-state: a Service whose record was lost.
store put "${IPS}10.96.5.5" '{"kind":"IPAddress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"10.96.5.5","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"ipaddress.kubernetes.io/ip-family":"IPv4","ipaddress.kubernetes.io/managed-by":"ipallocator.k8s.io"}},"spec":{"parentRef":{"resource":"services","namespace":"default","name":"ghost"}}}' >/dev/null
bm=$(store get "$PORTS" | python3 -c '
import base64, json, sys
doc = json.load(sys.stdin)
n = int.from_bytes(base64.b64decode(doc.get("data") or ""), "big") | 1  # port 30000
doc["data"] = base64.b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).decode()
print(json.dumps(doc))')
store put "$PORTS" "$bm" >/dev/null
store delete "${IPS}$keep_ip" >/dev/null
expect_eq "leaked state" "$(nrecords) $(nports)" "2 2"
kp_restart "${KP_API_ONLY[@]}" --service-cluster-ip-range 10.96.0.0/12
expect_eq "records after restart" "$(store list "$IPS" --keys-only | sort | tr '\n' ' ')" "${IPS}10.0.0.1 ${IPS}$keep_ip "
expect_eq "ports after restart" "$(nports)" 1
grep -q "IPAddress 10.96.5.5 for Service default/ghost appears to have leaked" "$KP_DIR/server.log" ||
  fail "no repair logged"
k delete svc keep >/dev/null
expect_eq "records after keep" "$(nrecords) $(nports)" "1 0"

echo "phase: raced crash"
# Raced: kill -9 while 200 creates run; after the restart the record is
# exactly the Services' addresses.
bulk race &
cpid=$!
kp_wait_for "some creates" 120 sh -c "[ \$(\"$KP_BIN\" store --data-dir \"$KP_DIR/data\" list $IPS --keys-only | grep -c .) -ge 40 ]"
kill -KILL "$KP_PID"
wait "$cpid" 2>/dev/null || true
kp_restart "${KP_API_ONLY[@]}" --service-cluster-ip-range 10.96.0.0/12
svc_ips=$(k get svc -A -o jsonpath='{range .items[*]}{.spec.clusterIP}{"\n"}{end}' | grep -v None | sort)
rec_ips=$(store list "$IPS" --keys-only | sed "s|$IPS||" | sort)
expect_eq "records == Services' IPs after kill -9" "$rec_ips" "$svc_ips"
svc_ports=$(k get svc -A -o jsonpath='{range .items[*]}{range .spec.ports[*]}{.nodePort}{"\n"}{end}{end}' | grep -c . || true)
expect_eq "ports == Services' NodePorts after kill -9" "$(nports)" "$svc_ports"
echo "raced crash: $(echo "$svc_ips" | grep -c .) Services survived"
echo PASS
