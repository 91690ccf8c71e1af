#!/usr/bin/env bash
# restart.sh KPLANE -- crash survival: 8 clients create ConfigMaps as fast as
# they can, the server is killed with SIGKILL in the middle of it, restarted
# on the same data dir, and then
#   - every create that was acknowledged (201) exists, with the data sent;
#   - no ConfigMap exists that no client ever sent;
#   - no create answered 4xx exists;
#   - the restarted server takes new writes and lists what it loaded.
# A create without an answer (curl: 000; lost in the crash, or not sent at all
# because the server was gone) may or may not exist.
set -euo pipefail
# set -e exits quietly: say which command failed.
set -E
trap 'echo "FAIL: restart.sh line $LINENO: $BASH_COMMAND (status $?)" >&2' ERR
KP_BIN=$1
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

CLIENTS=8
RUN_SECONDS=${KP_RUN_SECONDS:-2} # override to stress other crash points
L=$KP_DIR/clients
mkdir -p "$L"

# client C: create cm-C-1, cm-C-2, ... appending "<name> <http code>" to
# $L/C.log for each request; stop after a batch in which a request got no HTTP
# answer at all (000: the server is gone). A batch of BATCH creates is one curl
# on one keep-alive connection (--next), so that the server, not curl's start
# and TLS handshakes, is what the time goes to.
BATCH=10
client() {
  trap - EXIT # not the test's cleanup
  local c=$1 n=0 i names args
  while :; do
    names=()
    args=()
    for i in $(seq "$BATCH"); do
      n=$((n + 1))
      names+=("cm-$c-$n")
      [ "$i" = 1 ] || args+=(--next)
      args+=(-s -o /dev/null -w '%{http_code}\n' --max-time 10 --cacert "$KP_DIR/data/ca.crt"
        -X POST -H "Authorization: Bearer $KP_TOKEN" -H "Content-Type: application/json"
        --data-binary "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-$c-$n\"},\"data\":{\"client\":\"$c\",\"n\":\"$n\"}}"
        "https://127.0.0.1:$KP_PORT/api/v1/namespaces/default/configmaps")
    done
    local codes
    codes=$(curl "${args[@]}") || true
    # One code per request, in order; a curl that could not run at all
    # printed nothing: those requests count as unanswered.
    local got k
    read -r -d '' -a got <<<"$codes" || true
    for k in "${!names[@]}"; do echo "${names[$k]} ${got[$k]:-000}"; done >>"$L/$c.log"
    case " ${got[*]} " in *" 000 "*) break ;; esac
    [ "${#got[@]}" = "$BATCH" ] || break
  done
}

echo "--- $CLIENTS clients creating for ${RUN_SECONDS}s, then SIGKILL"
pids=()
for c in $(seq "$CLIENTS"); do
  client "$c" &
  pids+=($!)
done
sleep "$RUN_SECONDS"
kill -0 "$KP_PID" 2>/dev/null || fail "the server died under the clients' load, before the SIGKILL"
kill -KILL "$KP_PID"
wait "$KP_PID" 2>/dev/null || true # reap it: a zombie would still pass kill -0
first_pid=$KP_PID

# Each client notices within one request (connection refused, or reset).
for _ in $(seq 300); do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.1
done
if [ "$alive" = 1 ]; then
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  fail "client loops still running 30 s after the server was killed"
fi
for p in "${pids[@]}"; do wait "$p" || fail "client $p exited with status $?"; done
cat "$L"/*.log >"$KP_DIR/sent"
echo "codes: $(awk '{print $2}' "$KP_DIR/sent" | sort | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"

echo "--- restart on the same data dir"
kp_restart "${KP_API_ONLY[@]}"
[ "$KP_PID" != "$first_pid" ] || fail "kp_restart kept the old pid"

echo "--- verify"
export KP_PORT KP_TOKEN KP_DIR
python3 - "$KP_DIR/sent" <<'PY'
import http.client, json, os, ssl, sys
sent, acked, refused = {}, [], []
for line in open(sys.argv[1]):
    name, code = line.split()
    sent[name] = code
    if code == "201":
        acked.append(name)
    elif code.startswith("4"):
        refused.append(name)
unknown = [n for n, c in sent.items() if c == "000"]
ctx = ssl.create_default_context(cafile=os.path.join(os.environ["KP_DIR"], "data", "ca.crt"))
conn = http.client.HTTPSConnection("127.0.0.1", int(os.environ["KP_PORT"]), context=ctx, timeout=30)
hdr = {"Authorization": "Bearer " + os.environ["KP_TOKEN"]}
base = "/api/v1/namespaces/default/configmaps"
errors = []
def get(path):
    global conn
    try:
        conn.request("GET", path, headers=hdr)
        r = conn.getresponse()
        body = r.read()
        return r.status, json.loads(body)
    except Exception as e:  # a failure of the server, reported with the request
        errors.append("GET %s: %r" % (path, e))
        conn.close()
        conn = http.client.HTTPSConnection("127.0.0.1", int(os.environ["KP_PORT"]),
                                           context=ctx, timeout=30)
        return 0, None
for name in acked:
    code, obj = get(base + "/" + name)
    if code == 0:
        continue
    if code != 200:
        errors.append("acknowledged %s: GET %d" % (name, code))
        continue
    c, n = name.split("-")[1:]
    if obj.get("data") != {"client": c, "n": n}:
        errors.append("acknowledged %s: data %r" % (name, obj.get("data")))
code, lst = get(base)
if code != 200:
    sys.exit("FAIL: list after restart: %d %r\n  %s" % (code, lst, "\n  ".join(errors[:20])))
listed = {i["metadata"]["name"] for i in lst["items"] if i["metadata"]["name"].startswith("cm-")}
for name in sorted(listed - set(sent)):
    errors.append("%s exists but was never sent" % name)
for name in sorted(set(acked) - listed):
    errors.append("acknowledged %s is missing from the list" % name)
for name in sorted(set(refused) & listed):
    errors.append("%s was refused (%s) but exists" % (name, sent[name]))
print("acknowledged creates: %d of %d sent; %d unanswered (000), %d of them stored"
      % (len(acked), len(sent), len(unknown), len(set(unknown) & listed)))
if len(acked) < 8:
    errors.append("only %d creates acknowledged before the kill: nothing was tested" % len(acked))
if errors:
    print("FAIL:\n  " + "\n  ".join(errors[:50]))
    sys.exit(1)
PY

echo "--- the restarted server takes writes"
code=$(kp_curl POST /api/v1/namespaces/default/configmaps -o /dev/null -w '%{http_code}' \
  -H "Content-Type: application/json" --data-binary '{"metadata":{"name":"after-restart"}}')
expect_eq "create after restart" "$code" "201"
code=$(kp_curl GET /api/v1/namespaces/default/configmaps/after-restart -o /dev/null -w '%{http_code}')
expect_eq "get after restart" "$code" "200"

echo "--- a second server cannot take the port (it would take half the connections)"
if "$KP_BIN" server --data-dir "$KP_DIR/data2" --listen "127.0.0.1:$KP_PORT" "${KP_API_ONLY[@]}" \
  >"$KP_DIR/second.out" 2>&1; then
  fail "a second server started on port $KP_PORT"
fi
expect_match "second server's error" "$(cat "$KP_DIR/second.out")" "127.0.0.1:$KP_PORT"

kill -0 "$KP_PID" 2>/dev/null || fail "the restarted server died"
if grep -En "ERROR: (Address|Leak)Sanitizer|runtime error:" "$KP_DIR/server.log"; then
  fail "sanitizer errors in the server log"
fi
echo "PASS"
