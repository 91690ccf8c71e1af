#!/usr/bin/env bash
# drill_conflict.sh KPLANE KUBECTL -- the seed's failure 02 (a lost update)
# across two API servers: two clients, one on each server, read Deployment web
# at the same resourceVersion, then, at the same moment, write it back scaled
# to 5 and to 2. Exactly one write succeeds, the other gets 409 Conflict, and
# both servers then report the winner's value. Five rounds, with the
# controllers, scheduler and nodes running (each round starts once the
# Deployment has settled at 3 replicas, so that only the two clients write it).
# Then one history through both servers: writes through one are seen, in
# order, by a watch and by consistent LISTs through the other.
. "$(dirname "$0")/harness.sh"
ha_start_all

hk 0 create deployment web --image=nginx --replicas=3 >/dev/null

# Wait until web's status matches its spec and its resourceVersion holds still
# for a second (no controller is about to write it).
settle() {
  local last='' cur
  for _ in $(seq 300); do
    cur=$(hk 0 get deploy web -o jsonpath='{.metadata.resourceVersion}/{.metadata.generation}/{.status.observedGeneration}/{.spec.replicas}/{.status.readyReplicas}/{.status.updatedReplicas}')
    IFS=/ read -r rv gen obs spec ready upd <<<"$cur"
    if [ "$gen" = "$obs" ] && [ "$spec" = "$ready" ] && [ "$spec" = "$upd" ] && [ "$cur" = "$last" ]; then
      return 0
    fi
    last=$cur
    sleep 0.5
  done
  fail "web did not settle: $cur"
}

for round in 1 2 3 4 5; do
  # From 3, so that both writes change the object (an update that changes
  # nothing writes nothing, and a later one at that version rightly succeeds).
  hk 0 scale deploy web --replicas=3 >/dev/null
  settle
  out=$(python3 - "$HA_CA" "$HA_TOKEN" "${API_URL[0]}" "${API_URL[1]}" <<'PY'
import json, ssl, sys, threading, urllib.request, urllib.error
ca, token, s0, s1 = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
path = "/apis/apps/v1/namespaces/default/deployments/web"
def call(server, method, body=None):
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
# Both clients read, each through its own server, until they hold the same version.
for _ in range(100):
    a = call(s0, "GET")[1]
    b = call(s1, "GET")[1]
    if a["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]:
        break
else:
    sys.exit("the servers never agreed on web's resourceVersion")
rv = a["metadata"]["resourceVersion"]
a["spec"]["replicas"], b["spec"]["replicas"] = 5, 2
res = {}
go = threading.Barrier(2)
def write(key, server, obj):
    go.wait()
    res[key] = call(server, "PUT", obj)
ts = [threading.Thread(target=write, args=("5", s0, a)), threading.Thread(target=write, args=("2", s1, b))]
for t in ts: t.start()
for t in ts: t.join()
codes = {k: v[0] for k, v in res.items()}
won = [k for k, c in codes.items() if c == 200]
# Both servers must now report the winner's value (a consistent GET of each).
after = [call(s, "GET")[1]["spec"]["replicas"] for s in (s0, s1)]
print(rv, codes["5"], codes["2"], won[0] if len(won) == 1 else "-", after[0], after[1])
PY
  )
  read -r rv c5 c2 won r0 r1 <<<"$out"
  ha_log "round $round: read at rv $rv; scale to 5 via server 0 -> $c5, to 2 via server 1 -> $c2; servers report $r0 and $r1"
  codes=$(printf '%s\n%s\n' "$c5" "$c2" | sort | tr '\n' ' ')
  expect_eq "round $round: the two answers" "$codes" "200 409 "
  expect_eq "round $round: server 0 reports the winner" "$r0" "$won"
  expect_eq "round $round: server 1 reports the winner" "$r1" "$won"
done
# After the last round the controllers carry the winner's value out.
settle

# One history seen through both servers: 50 writes of one ConfigMap through
# server 0; after each is acknowledged, a consistent LIST (resourceVersion "",
# from server 1's watch cache) must show it or a later one, never older; and a
# watch through server 1 must deliver every version, in order, exactly once.
out=$(python3 - "$HA_CA" "$HA_TOKEN" "${API_URL[0]}" "${API_URL[1]}" <<'PY'
import json, ssl, sys, threading, urllib.request
ca, token, s0, s1 = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
base = "/api/v1/namespaces/default/configmaps"
def call(server, method, path, body=None):
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
        return json.load(r)
start_rv = call(s1, "GET", base)["metadata"]["resourceVersion"]
seen = []
def watch():
    req = urllib.request.Request(s1 + base + "?watch=1&timeoutSeconds=30&resourceVersion=" + start_rv,
                                 headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, context=ctx, timeout=40) as r:
        for line in r:
            ev = json.loads(line)
            o = ev["object"]
            if o["metadata"]["name"] == "seq":
                seen.append((ev["type"], int(o["data"]["n"]), int(o["metadata"]["resourceVersion"])))
                if o["data"]["n"] == "50":
                    return
t = threading.Thread(target=watch)
t.start()
obj = call(s0, "POST", base, {"metadata": {"name": "seq"}, "data": {"n": "1"}})
stale = 0
for n in range(1, 51):
    if n > 1:
        obj["data"]["n"] = str(n)
        obj = call(s0, "PUT", base + "/seq", obj)
    items = call(s1, "GET", base)["items"]
    got = [int(i["data"]["n"]) for i in items if i["metadata"]["name"] == "seq"]
    if not got or got[0] < n:
        stale += 1
t.join(40)
order = [n for _, n, _ in seen] == list(range(1, 51))
rvs = [rv for _, _, rv in seen]
print(stale, len(seen), int(order), int(rvs == sorted(set(rvs))), seen[0][0] if seen else "-")
PY
)
read -r stale nseen inorder rvs_up first <<<"$out"
ha_log "one history: 50 writes via server 0; stale consistent LISTs via server 1: $stale; watch via server 1 saw $nseen events (in order: $inorder, revisions increasing: $rvs_up, first $first)"
expect_eq "consistent LISTs through server 1 older than an acknowledged write" "$stale" "0"
expect_eq "events a watch through server 1 saw" "$nseen" "50"
expect_eq "those events in write order" "$inorder" "1"
expect_eq "their resourceVersions increasing" "$rvs_up" "1"
expect_eq "the first event" "$first" "ADDED"
ha_log "drill_conflict: all checks passed"
