#!/usr/bin/env bash
# yaml_bombs.sh KPLANE KUBECTL -- YAML bodies built to exhaust the server,
# sent as server-side apply (application/apply-patch+yaml) to a real kplane:
# flow and block nesting a million levels deep (libyaml alone is quadratic in
# flow depth), the billion laughs, and one large scalar aliased a hundred
# times. Each must get Kubernetes' answer to YAML it cannot decode (400
# BadRequest, "error decoding YAML: ..."), fast: the server's CPU per bomb is
# printed and must stay under 1 s (about 100 ms is expected under ASan; the
# bound is loose so that a loaded machine never fails the test).
#
# Then the bombs again, from two senders at once and repeatedly, while
# `kubectl get ns --request-timeout=1s` and a plain GET must keep answering
# within 1 s; the server's RSS must not grow by more than 100 MB over the
# whole run (it grew by about 275 MB for a single large-scalar bomb before the
# alias budget counted bytes). A small document with an alias still applies.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
# A small ASan quarantine: freed memory is otherwise held back (256 MB by
# default), which would hide what the RSS check looks for.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=16"
kp_start "${KP_API_ONLY[@]}"

B=$KP_DIR/bodies
mkdir -p "$B"
CM=/api/v1/namespaces/default/configmaps
AP=application/apply-patch+yaml

python3 - "$B" <<'PY'
import os, sys
d = sys.argv[1]
head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n"
def put(name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
n = 1000000
put("deep-flow", head + "data: " + "[" * n + "]" * n + "\n")              # 2 MB
put("deep-map", head + "data: " + "{a: " * 500000 + "}" * 500000 + "\n")  # 2.5 MB
put("deep-block", head + "data:\n" + "- " * n + "x\n")                    # 2 MB
laughs = head + 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
for i in range(1, 10):
    laughs += "l%d: &l%d [%s]\n" % (i, i, ", ".join(["*l%d" % (i - 1)] * 10))
put("laughs", laughs + "data: {k: *l9}\n")                                 # 10^9 strings
big = head + "data:\n  k0: &a " + "x" * 2800000 + "\n"
big += "".join("  k%d: *a\n" % i for i in range(1, 101))
put("big-scalar", big)                                                   # 2.8 MB x 101
assert all(os.path.getsize(os.path.join(d, f)) < 3 * 1024 * 1024 for f in os.listdir(d))
PY

# The server's CPU time (user + system) in milliseconds, and its RSS in KiB.
clk_tck=$(getconf CLK_TCK)
cpu_ms() {
  local f
  read -r -a f <<<"$(sed 's/^.*) //' "/proc/$KP_PID/stat")"
  echo $(((f[11] + f[12]) * 1000 / clk_tck)) # utime and stime: fields 14 and 15
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$KP_PID/status"; }

# apply FILE -> "CODE" on stdout; the body in $KP_DIR/resp.
apply() {
  kp_curl PATCH "$CM/bomb?fieldManager=bombs" -o "$KP_DIR/resp" -w '%{http_code}' \
    --max-time 20 -H "Content-Type: $AP" --data-binary "@$B/$1" || true
}

# A GET answered within 1 s: plain curl, then kubectl's own request timeout
# (which leaves kubectl's start-up out of the measure).
answers() {
  local t
  t=$(kp_curl GET /api/v1/namespaces -o /dev/null -w '%{http_code} %{time_total}' --max-time 1) ||
    fail "GET /api/v1/namespaces did not answer within 1 s ($1)"
  expect_match "GET /api/v1/namespaces ($1)" "$t" '^200 '
  "$KUBECTL" get ns --request-timeout=1s >/dev/null ||
    fail "kubectl get ns did not answer within 1 s ($1)"
}

rss0=$(rss_kb)
echo "server RSS at start: $((rss0 / 1024)) MB"

# ---- one at a time: the answer, and the server's CPU for it
check_bomb() {
  local name=$1 msgre=$2 c0 c1 code
  c0=$(cpu_ms)
  code=$(apply "$name")
  c1=$(cpu_ms)
  echo "$name ($(stat -c %s "$B/$name") bytes): HTTP $code, server CPU $((c1 - c0)) ms"
  expect_eq "$name: HTTP code" "$code" 400
  python3 - "$KP_DIR/resp" "$msgre" <<'PY' || fail "$name: $(head -c 300 "$KP_DIR/resp")"
import json, re, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == "Status" and s["code"] == 400 and s["reason"] == "BadRequest", s
assert re.search(sys.argv[2], s["message"]), s["message"]
PY
  [ $((c1 - c0)) -lt 1000 ] || fail "$name: $((c1 - c0)) ms of server CPU"
  answers "after $name"
}
nested='^error decoding YAML: yaml: line [0-9]+, column [0-9]+: the document is nested deeper than 100 levels$'
aliased='^error decoding YAML: yaml: line [0-9]+, column [0-9]+: aliases expand to more than 1048576 bytes$'
check_bomb deep-flow "$nested"
check_bomb deep-map "$nested"
check_bomb deep-block "$nested"
check_bomb laughs "$aliased"
check_bomb big-scalar "$aliased"
[ "$(kp_curl GET "$CM/bomb" -o /dev/null -w '%{http_code}')" = 404 ] || fail "a bomb was stored"

# ---- two senders at once, three rounds each, while GETs must keep answering
sender() {
  local code
  for _ in 1 2 3; do
    for f in deep-flow deep-map deep-block laughs big-scalar; do
      code=$(apply "$f")
      [ "$code" = 400 ] || { echo "sender: $f answered $code" >&2; return 1; }
    done
  done
}
c0=$(cpu_ms)
sender &
s1=$!
sender &
s2=$!
n=0
while kill -0 "$s1" 2>/dev/null || kill -0 "$s2" 2>/dev/null; do
  answers "during the attack"
  n=$((n + 1))
done
wait "$s1" || fail "sender 1 got an answer other than 400"
wait "$s2" || fail "sender 2 got an answer other than 400"
c1=$(cpu_ms)
echo "30 bombs from 2 senders: server CPU $((c1 - c0)) ms; $n GET rounds answered within 1 s"
[ "$n" -gt 0 ] || fail "no GET was tried during the attack"

rss1=$(rss_kb)
echo "server RSS after the attack: $((rss1 / 1024)) MB (+$(((rss1 - rss0) / 1024)) MB)"
[ $((rss1 - rss0)) -lt $((100 * 1024)) ] || fail "RSS grew by $(((rss1 - rss0) / 1024)) MB"

# ---- an alias within the budget still applies, expanded
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\ndata:\n  a: &v hello\n  b: *v\n' \
  >"$B/small"
code=$(kp_curl PATCH "$CM/small?fieldManager=bombs" -o "$KP_DIR/resp" -w '%{http_code}' \
  -H "Content-Type: $AP" --data-binary "@$B/small")
expect_eq "small apply" "$code" 201
got=$(kp_curl GET "$CM/small" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"])')
expect_eq "small apply data" "$got" "{'a': 'hello', 'b': 'hello'}"

if grep -En "ERROR: (Address|Leak)Sanitizer|runtime error:" "$KP_DIR/server.log"; then
  fail "sanitizer errors in the server log"
fi
echo PASS
