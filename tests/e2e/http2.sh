#!/usr/bin/env bash
# http2.sh KPLANE H2_WATCHES KUBECTL KUBECTL_120 -- the protocols clients
# speak to the API server, counted on the server's side
# (kplane_http_connections_accepted_total, kplane_http2_connections_total):
#   - kubectl 1.32 negotiates HTTP/2 (ALPN) and uses one connection;
#   - 200 watches over HTTP/2 share one connection (h2_watches: libcurl
#     multiplexing, as client-go does), and all 200 are open at once;
#   - HTTP/1.1 keeps its connection alive for the clients that speak only it:
#     curl --http1.1 (three requests), the python client (five), and kubectl
#     1.20 works whichever it speaks.
set -euo pipefail
KP_BIN=$1
H2W=$2
K132=$3
K120=$4
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

# The metrics over a connection of their own (HTTP/1.1), counted out below.
metric() {
  curl -sS --http1.1 --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer $KP_TOKEN" \
    "https://127.0.0.1:$KP_PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
# accepted_since A H: "<connections> <of them HTTP/2>" since the counts A, H,
# without the metric calls' own two connections.
counts() { echo "$(metric kplane_http_connections_accepted_total) $(metric kplane_http2_connections_total)"; }

echo "--- kubectl 1.32 speaks HTTP/2, on one connection"
read -r a0 h0 < <(counts)
"$K132" get namespaces >/dev/null
read -r a1 h1 < <(counts)
conns=$((a1 - a0 - 2)) h2=$((h1 - h0))
echo "kubectl 1.32: $conns connection(s), $h2 of them HTTP/2"
[ "$conns" -eq 1 ] && [ "$h2" -eq 1 ] || fail "kubectl 1.32: $conns connections, $h2 HTTP/2 (want 1 and 1)"

echo "--- 200 watches over HTTP/2 share one connection"
# From the list's revision: only what is written from now on is an event.
rv=$(kp_curl GET /api/v1/namespaces/default/configmaps |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
w0=$(metric apiserver_registered_watchers)
read -r a0 h0 < <(counts)
"$H2W" "https://127.0.0.1:$KP_PORT/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60&resourceVersion=$rv" \
  "$KP_TOKEN" "$KP_DIR/data/ca.crt" 200 30 >"$KP_DIR/h2w.out" 2>"$KP_DIR/h2w.err" &
H2W_PID=$!
for _ in $(seq 600); do
  grep -q '^open' "$KP_DIR/h2w.out" && break
  kill -0 $H2W_PID 2>/dev/null || fail "h2_watches ended: $(cat "$KP_DIR/h2w.err")"
  sleep 0.1
done
grep -q '^open' "$KP_DIR/h2w.out" || fail "200 watches did not open: $(cat "$KP_DIR/h2w.err")"
read -r a1 h1 < <(counts)
w1=$(metric apiserver_registered_watchers)
echo "h2_watches: $(cat "$KP_DIR/h2w.out"); the server: $((w1 - w0)) more watches, $((a1 - a0 - 2)) connection(s), $((h1 - h0)) HTTP/2"
read -r _ n _ c _ v < <(head -n 1 "$KP_DIR/h2w.out")
[ "$n" -eq 200 ] && [ "$c" -eq 1 ] && [ "$v" -eq 200 ] || fail "h2_watches: $(cat "$KP_DIR/h2w.out")"
[ $((w1 - w0)) -eq 200 ] || fail "the server counts $((w1 - w0)) new watches, not 200"
[ $((a1 - a0 - 2)) -eq 1 ] && [ $((h1 - h0)) -eq 1 ] || fail "the server saw $((a1 - a0 - 2)) connections, $((h1 - h0)) HTTP/2 (want 1 and 1)"
# A write reaches all 200 (the watches are live, not just open).
kp_curl POST /api/v1/namespaces/default/configmaps -H "Content-Type: application/json" \
  -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"h2"}}' -o /dev/null -f
wait $H2W_PID || fail "h2_watches: $(cat "$KP_DIR/h2w.err")"
echo "h2_watches: $(tail -n 1 "$KP_DIR/h2w.out") of 200 watches got the event"
grep -q '^received 200$' "$KP_DIR/h2w.out" || fail "the event did not reach every watch"


echo "--- HTTP/1.1 keep-alive: curl --http1.1, three requests"
read -r a0 h0 < <(counts)
url="https://127.0.0.1:$KP_PORT/api/v1/namespaces"
codes=$(curl -sS --http1.1 --cacert "$KP_DIR/data/ca.crt" -H "Authorization: Bearer $KP_TOKEN" \
  -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} %{http_version}\n' "$url" "$url" "$url")
read -r a1 h1 < <(counts)
echo "curl --http1.1: $(echo $codes); $((a1 - a0 - 2)) connection(s)"
[ "$(echo $codes)" = "200 1.1 200 1.1 200 1.1" ] || fail "curl --http1.1: $codes"
[ $((a1 - a0 - 2)) -eq 1 ] && [ $((h1 - h0)) -eq 0 ] || fail "curl --http1.1 used $((a1 - a0 - 2)) connections"

echo "--- HTTP/1.1 keep-alive: the python client, five requests"
read -r a0 h0 < <(counts)
/usr/bin/python3 - "$KUBECONFIG" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
for _ in range(5):
    v1.list_namespace()
print("python: five lists answered")
PY
read -r a1 h1 < <(counts)
echo "python: $((a1 - a0 - 2)) connection(s), $((h1 - h0)) HTTP/2"
[ $((a1 - a0 - 2)) -eq 1 ] && [ $((h1 - h0)) -eq 0 ] || fail "the python client used $((a1 - a0 - 2)) connections ($((h1 - h0)) HTTP/2)"

echo "--- kubectl 1.20"
read -r a0 h0 < <(counts)
"$K120" get namespaces >/dev/null
read -r a1 h1 < <(counts)
echo "kubectl 1.20: $((a1 - a0 - 2)) connection(s), $((h1 - h0)) HTTP/2"
[ $((a1 - a0 - 2)) -eq 1 ] || fail "kubectl 1.20 used $((a1 - a0 - 2)) connections"
echo "ok"
