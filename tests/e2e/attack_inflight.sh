#!/usr/bin/env bash
# attack_inflight.sh KPLANE -- the in-flight limits (issue 14): with
# --max-mutating-requests-inflight 2, a flood of 32 concurrent writers gets
# some 429s (plain text, Retry-After: 1, as kube-apiserver's maxinflight
# filter), while reads, under their own budget, never do; every write either
# succeeded or got 429 (no other failure), and each 201 is stored.
set -euo pipefail
KP_BIN=$1
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}" --max-mutating-requests-inflight 2 --max-requests-inflight 8
/usr/bin/python3 - "$KP_PORT" "$KP_TOKEN" "$KP_DIR/data/ca.crt" <<'PY'
import http.client, json, ssl, sys, threading, time
port, token, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca); ctx.check_hostname = False
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
res = {"w": {}, "r": {}}; lock = threading.Lock(); created = []; bad429 = []
stop = time.monotonic() + 4
def writer(i):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
    n = 0
    while time.monotonic() < stop:
        name = f"w{i}-{n}"; n += 1
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * 2000}})
        c.request("POST", "/api/v1/namespaces/default/configmaps", body, H)
        r = c.getresponse(); text = r.read()
        with lock:
            res["w"][r.status] = res["w"].get(r.status, 0) + 1
            if r.status == 201: created.append(name)
            if r.status == 429 and (r.getheader("Retry-After") != "1" or text != b"Too many requests, please try again later.\n"):
                bad429.append((r.getheaders(), text))
def reader():
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
    while time.monotonic() < stop:
        c.request("GET", "/api/v1/namespaces/default/configmaps?limit=1", headers=H)
        r = c.getresponse(); r.read()
        with lock: res["r"][r.status] = res["r"].get(r.status, 0) + 1
ts = [threading.Thread(target=writer, args=(i,)) for i in range(32)] + [threading.Thread(target=reader)]
for t in ts: t.start()
for t in ts: t.join()
print("writes by status:", res["w"], " reads by status:", res["r"])
fail = []
if not res["w"].get(429): fail.append("no write got 429 past the mutating limit")
if set(res["w"]) - {201, 429}: fail.append("writes other than 201/429")
if set(res["r"]) != {200}: fail.append("a read was refused: the budgets are not separate")
if bad429: fail.append(f"a 429 without Retry-After: 1 or Kubernetes' text: {bad429[0]}")
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
c.request("GET", "/api/v1/namespaces/default/configmaps", headers=H)
stored = {o["metadata"]["name"] for o in json.loads(c.getresponse().read())["items"]}
if set(created) - stored: fail.append(f"{len(set(created) - stored)} acknowledged creates missing")
print(f"{len(created)} creates acknowledged, all stored" if not fail else "FAIL: " + "; ".join(fail))
sys.exit(1 if fail else 0)
PY
