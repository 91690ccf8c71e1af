#!/usr/bin/env bash
# api_resources.sh KPLANE KUBECTL -- discovery lists exactly the resources
# the OpenAPI facts say a Kubernetes API server serves (issue 15).
#
# api_resources.expected (generated from the facts by
# scripts/gen-openapi-facts) names every resource of the v1/v2
# group-versions in scope, "served" or "pending" (not yet served, each with
# its reason in the generator). Checked against a fresh server:
#   - /api/v1 and every /apis/<group>/<version> list exactly the served
#     resources, each with its kind, scope, short names and verbs; /apis
#     lists exactly their groups and versions, the newest version preferred;
#   - `kubectl api-resources -o wide` prints exactly what those imply (one
#     row per resource of each group's preferred version, plus the resources
#     only older versions have);
#   - GET / lists every served path, sorted;
#   - the system PriorityClasses exist from the start.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"

raw="$KP_DIR/raw"
mkdir -p "$raw"
"$KUBECTL" get --raw /api/v1 >"$raw/core_v1.json"
"$KUBECTL" get --raw /apis >"$raw/apis.json"
"$KUBECTL" get --raw / >"$raw/root.json"
python3 - "$raw/apis.json" <<'PY' >"$raw/gvs"
import json, sys
for g in json.load(open(sys.argv[1]))["groups"]:
    for v in g["versions"]:
        print(g["name"], v["version"])
PY
while read -r g v; do
  "$KUBECTL" get --raw "/apis/$g/$v" >"$raw/${g}_$v.json"
done <"$raw/gvs"
"$KUBECTL" api-resources -o wide >"$raw/kubectl.txt"

python3 - "$(dirname "$0")/api_resources.expected" "$raw" <<'PY'
import json, os, sys
expected_path, raw = sys.argv[1], sys.argv[2]
served, pending = [], []
for line in open(expected_path):
    if line.startswith("#") or not line.strip():
        continue
    state, g, v, res, kind, ns, short, verbs, cats = line.split()
    row = dict(group="" if g == "-" else g, version=v, resource=res, kind=kind,
               namespaced=ns == "true", short=[] if short == "-" else short.split(","),
               verbs=verbs.split(","), categories=[] if cats == "-" else cats.split(","))
    (served if state == "served" else pending).append(row)
problems = []

# Each group-version's resource list (main resources, not subresources).
def listed(group, version):
    name = "core_v1.json" if not group else "%s_%s.json" % (group, version)
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return None
    return {r["name"]: r for r in json.load(open(path))["resources"] if "/" not in r["name"]}

gvs = sorted({(r["group"], r["version"]) for r in served})
for g, v in gvs:
    got = listed(g, v)
    if got is None:
        problems.append("%s/%s: not in discovery" % (g or "core", v))
        continue
    want = {r["resource"]: r for r in served if (r["group"], r["version"]) == (g, v)}
    for name in sorted(set(got) - set(want)):
        problems.append("%s/%s: %s listed but not expected" % (g or "core", v, name))
    for name, w in sorted(want.items()):
        r = got.get(name)
        if r is None:
            problems.append("%s/%s: %s missing" % (g or "core", v, name))
            continue
        for key, have, exp in (("kind", r.get("kind"), w["kind"]),
                               ("namespaced", r.get("namespaced"), w["namespaced"]),
                               ("shortNames", sorted(r.get("shortNames", [])), sorted(w["short"])),
                               ("verbs", sorted(r.get("verbs", [])), sorted(w["verbs"])),
                               ("categories", r.get("categories", []), w["categories"])):
            if have != exp:
                problems.append("%s/%s %s: %s is %s, expected %s" % (g or "core", v, name, key,
                                                                    have, exp))

# /apis: exactly the groups and versions served (CRDs: none on a fresh server).
apis = json.load(open(os.path.join(raw, "apis.json")))
got_gv = {(gr["name"], ver["version"]) for gr in apis["groups"] for ver in gr["versions"]}
want_gv = {(g, v) for g, v in gvs if g}
if got_gv != want_gv:
    problems.append("/apis: extra %s, missing %s" % (sorted(got_gv - want_gv),
                                                     sorted(want_gv - got_gv)))
# GET /: every group and group-version path, sorted, among the fixed ones.
root = json.load(open(os.path.join(raw, "root.json")))["paths"]
want_root = {"/api", "/api/v1", "/apis", "/apis/", "/healthz", "/livez", "/metrics",
             "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/readyz", "/version"}
for g, v in want_gv:
    want_root |= {"/apis/" + g, "/apis/%s/%s" % (g, v)}
if root != sorted(want_root):
    problems.append("GET /: extra %s, missing %s" % (sorted(set(root) - want_root),
                                                     sorted(want_root - set(root))))
preferred = {}
for gr in apis["groups"]:
    newest = max((ver["version"] for ver in gr["versions"]), key=lambda x: int(x[1:]))
    if gr["preferredVersion"]["version"] != newest:
        problems.append("/apis: %s prefers %s, not %s" % (gr["name"],
                                                         gr["preferredVersion"]["version"], newest))
    preferred[gr["name"]] = gr["preferredVersion"]["version"]

# kubectl api-resources -o wide: one row per (group, resource), the
# preferred version's, columns by the header's positions.
lines = open(os.path.join(raw, "kubectl.txt")).read().splitlines()
head = lines[0]
cols = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
starts = [head.index(c) for c in cols]
rows = set()
for line in lines[1:]:
    cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
    rows.add(tuple(cells))
want_rows = set()
by_group = {}
for r in sorted(served, key=lambda r: -int(r["version"][1:])):
    key = (r["group"], r["resource"])
    if r["group"] and r["version"] != preferred.get(r["group"]) and key in by_group:
        continue
    if key in by_group:
        continue
    by_group[key] = r
for (g, res), r in by_group.items():
    want_rows.add((res, ",".join(r["short"]), "%s/%s" % (g, r["version"]) if g else r["version"],
                   "true" if r["namespaced"] else "false", r["kind"],
                   ",".join(sorted(r["verbs"])), ",".join(r["categories"])))
for row in sorted(rows - want_rows):
    problems.append("kubectl api-resources: unexpected row %s" % (row,))
for row in sorted(want_rows - rows):
    problems.append("kubectl api-resources: missing row %s" % (row,))

for p in problems:
    print("FAIL:", p)
print("served %d resources in %d group-versions; pending %d: %s" % (
    len(served), len(gvs), len(pending),
    ", ".join("%s/%s/%s" % (r["group"] or "core", r["version"], r["resource"]) for r in pending)))
sys.exit(1 if problems else 0)
PY
echo "ok: discovery and kubectl api-resources match the facts"

# What every cluster starts with besides namespaces: the system
# PriorityClasses, with Kubernetes' values.
pcs=$("$KUBECTL" get priorityclasses -o jsonpath='{range .items[*]}{.metadata.name}={.value} {end}')
[ "$pcs" = "system-cluster-critical=2000000000 system-node-critical=2000001000 " ] ||
  fail "system PriorityClasses: '$pcs'"
echo "ok: system PriorityClasses"
