#!/usr/bin/python3
"""protobuf.py KUBECONFIG -- Kubernetes protobuf on the wire, as
client-go speaks it (python3-kubernetes speaks only JSON, so the bytes are
built and read here from the field numbers in scripts/protobuf-facts.txt,
found beside this file's tests/ folder):

- DELETE with a protobuf DeleteOptions body (apiVersion v1 and
  meta.k8s.io/v1), propagationPolicy honoured (Foreground and Orphan leave
  their finalizer on an owner with dependents; Background removes it); a bad
  policy is a 422;
- POST of a Role built in protobuf;
- GET with Accept protobuf for a Namespace, ConfigMap, Role, PVC and CronJob;
  a List; a watch (length-prefixed WatchEvent frames); a 404 Status.
"""
import json
import os
import struct
import sys

from kubernetes import client, config

config.load_kube_config(config_file=sys.argv[1])
api = client.ApiClient()
cfg = api.configuration
POOL = api.rest_client.pool_manager
PB = "application/vnd.kubernetes.protobuf"
NS = "pb-e2e"


def check(what, got, want):
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")


# ---- facts ----

FACTS = {}
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                              "scripts", "protobuf-facts.txt")):
    w = line.split()
    if w and w[0] == "msg":
        FACTS[w[1]] = {}
        for x in w[2:]:
            name, rest = x.split("=", 1)
            num, t = rest.split(":", 1)
            FACTS[w[1]][name] = (int(num), t)

# ---- a small protobuf writer and reader ----


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def ld(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def enc(msg, obj):
    """obj (a dict of JSON values) as message msg, by the facts."""
    out = b""
    for name, (num, t) in sorted(FACTS[msg].items(), key=lambda x: x[1][0]):
        if name not in obj:
            continue
        rep = t.endswith("*")
        base = t.rstrip("*")
        for v in obj[name] if rep else [obj[name]]:
            if base == "s":
                out += ld(num, v.encode())
            elif base in ("o", "i", "l"):
                out += varint(num << 3) + varint(int(v))
            elif base == "{s,s}":
                for k in sorted(v):
                    out += ld(num, ld(1, k.encode()) + ld(2, v[k].encode()))
            else:
                out += ld(num, enc(base, v))
    return out


def envelope(api_version, kind, raw):
    tm = ld(1, api_version.encode()) + ld(2, kind.encode())
    return b"k8s\x00" + ld(1, tm) + ld(2, raw)


def read_varint(b, i):
    v, n = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << n
        n += 7
        if not c & 0x80:
            return v, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 2:
            ln, i = read_varint(b, i)
            v = b[i:i + ln]
            i += ln
        else:
            sys.exit(f"FAIL: unexpected wire type {wt}")
        out.append((num, v))
    return out


def unwrap(body):
    """(apiVersion, kind, raw) of a "k8s\\0" envelope."""
    if body[:4] != b"k8s\x00":
        sys.exit(f"FAIL: no k8s envelope: {body[:40]!r}")
    f = dict(fields(body[4:]))
    tm = dict(fields(f[1]))
    return tm.get(1, b"").decode(), tm.get(2, b"").decode(), f.get(2, b"")


def get(msg, raw, path):
    """The value at a dotted path of message msg."""
    name, _, rest = path.partition(".")
    num, t = FACTS[msg][name]
    vals = [v for n, v in fields(raw) if n == num]
    if not vals:
        return None
    if not rest:
        return vals[-1].decode() if t == "s" else vals[-1]
    return get(t.rstrip("*"), vals[0], rest)


# ---- HTTP ----


def call(method, path, body=None, ctype=None, accept="application/json", preload=True):
    # The kubeconfig's credentials: a token goes in a header; a client
    # certificate is already in the pool's TLS settings.
    headers = {"Accept": accept}
    if "authorization" in cfg.api_key:
        headers["Authorization"] = cfg.api_key["authorization"]
    if ctype:
        headers["Content-Type"] = ctype
    return POOL.request(method, cfg.host + path, body=body, headers=headers,
                        preload_content=preload)


def create_json(path, obj):
    r = call("POST", path, json.dumps(obj).encode(), "application/json")
    if r.status != 201:
        sys.exit(f"FAIL: create {path}: {r.status} {r.data[:300]!r}")
    return json.loads(r.data)


def delete_pb(path, api_version, opts):
    body = envelope(api_version, "DeleteOptions", enc("meta.v1.DeleteOptions", opts))
    return call("DELETE", path, body, PB)


create_json("/api/v1/namespaces", {"metadata": {"name": NS}})
CM = f"/api/v1/namespaces/{NS}/configmaps"


def owner_with_dependent(name):
    o = create_json(CM, {"metadata": {"name": name}})
    create_json(CM, {"metadata": {"name": name + "-dep", "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": name,
        "uid": o["metadata"]["uid"]}]}})


print("--- DELETE with a protobuf DeleteOptions: propagationPolicy honoured")
for name, av, policy, fin in [("fg", "v1", "Foreground", "foregroundDeletion"),
                              ("orph", "meta.k8s.io/v1", "Orphan", "orphan")]:
    owner_with_dependent(name)
    r = delete_pb(f"{CM}/{name}", av, {"propagationPolicy": policy})
    check(f"{policy} status", r.status, 200)
    meta = json.loads(r.data)["metadata"]
    check(f"{policy} finalizers", meta.get("finalizers"), [fin])
    check(f"{policy} deletionTimestamp set", "deletionTimestamp" in meta, True)
owner_with_dependent("bg")
r = delete_pb(f"{CM}/bg", "v1", {"propagationPolicy": "Background", "gracePeriodSeconds": 0})
check("Background status", r.status, 200)
check("Background: gone", call("GET", f"{CM}/bg").status, 404)
r = delete_pb(f"{CM}/fg-dep", "v1", {"propagationPolicy": "Sideways"})
check("bad policy status", r.status, 422)
check("bad policy names the field", "propagationPolicy" in r.data.decode(), True)
r = delete_pb(f"{CM}/fg-dep", "v1", {"preconditions": {"uid": "not-its-uid"}})
check("precondition from protobuf", r.status, 409)

print("--- POST a Role in protobuf")
RB = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles"
role = {"metadata": {"name": "reader", "labels": {"app": "pb"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}
r = call("POST", RB, envelope("rbac.authorization.k8s.io/v1", "Role",
                              enc("rbac.v1.Role", role)), PB)
check("protobuf create status", r.status, 201)
got = json.loads(r.data)
check("created rules", got["rules"], role["rules"])
check("created labels", got["metadata"]["labels"], {"app": "pb"})

print("--- GET with Accept protobuf")
create_json(f"/api/v1/namespaces/{NS}/persistentvolumeclaims", {
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
create_json(f"/apis/batch/v1/namespaces/{NS}/cronjobs", {
    "metadata": {"name": "cj"},
    "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
for path, av, kind, msg, name in [
        (f"/api/v1/namespaces/{NS}", "v1", "Namespace", "core.v1.Namespace", NS),
        (f"{CM}/fg-dep", "v1", "ConfigMap", "core.v1.ConfigMap", "fg-dep"),
        (f"{RB}/reader", "rbac.authorization.k8s.io/v1", "Role", "rbac.v1.Role", "reader"),
        (f"/api/v1/namespaces/{NS}/persistentvolumeclaims/data", "v1",
         "PersistentVolumeClaim", "core.v1.PersistentVolumeClaim", "data"),
        (f"/apis/batch/v1/namespaces/{NS}/cronjobs/cj", "batch/v1", "CronJob",
         "batch.v1.CronJob", "cj")]:
    r = call("GET", path, accept=f"{PB}, application/json")
    check(f"GET {kind} status", r.status, 200)
    check(f"GET {kind} content type", r.headers.get("Content-Type"), PB)
    gav, gkind, raw = unwrap(r.data)
    check(f"GET {kind} typeMeta", (gav, gkind), (av, kind))
    check(f"GET {kind} name", get(msg, raw, "metadata.name"), name)
_, _, raw = unwrap(call("GET", f"/api/v1/namespaces/{NS}/persistentvolumeclaims/data",
                        accept=PB).data)
check("PVC storage request", get("core.v1.PersistentVolumeClaim", raw,
                                 "spec.resources.requests") is not None, True)
_, _, raw = unwrap(call("GET", f"/apis/batch/v1/namespaces/{NS}/cronjobs/cj", accept=PB).data)
check("CronJob schedule", get("batch.v1.CronJob", raw, "spec.schedule"), "*/5 * * * *")
# JSON first in Accept: JSON
r = call("GET", f"{CM}/fg-dep", accept=f"application/json, {PB}")
check("JSON preferred", r.headers.get("Content-Type"), "application/json")

print("--- a List, a watch and a Status in protobuf")
r = call("GET", CM, accept=PB)
av, kind, raw = unwrap(r.data)
check("list kind", (av, kind), ("v1", "ConfigMapList"))
items = [v for n, v in fields(raw) if n == FACTS["core.v1.ConfigMapList"]["items"][0]]
check("list items", len(items), 5)  # fg, orph, and the 3 dependents (GC is off)
check("list resourceVersion", get("core.v1.ConfigMapList", raw,
                                  "metadata.resourceVersion") is not None, True)

r = call("GET", CM + "?watch=1&timeoutSeconds=1", accept=PB, preload=False)
check("watch content type", r.headers.get("Content-Type"),
      "application/vnd.kubernetes.protobuf;stream=watch")
stream = r.read()
r.release_conn()
events = []
while stream:
    (n,) = struct.unpack(">I", stream[:4])
    _, kind, raw = unwrap(stream[4:4 + n])
    check("watch frame kind", kind, "WatchEvent")
    typ = get("meta.v1.WatchEvent", raw, "type")
    obj = dict(fields(get("meta.v1.WatchEvent", raw, "object")))[1]
    _, okind, oraw = unwrap(obj)
    events.append((typ, okind, get("core.v1.ConfigMap", oraw, "metadata.name")))
    stream = stream[4 + n:]
check("watch events", sorted(events), sorted(
    ("ADDED", "ConfigMap", n) for n in ["fg", "fg-dep", "orph", "orph-dep", "bg-dep"]))

r = call("GET", f"{CM}/nope", accept=f"{PB}, application/json")
check("404 status", r.status, 404)
check("404 content type", r.headers.get("Content-Type"), PB)
av, kind, raw = unwrap(r.data)
check("404 kind", kind, "Status")
check("404 reason", get("meta.v1.Status", raw, "reason"), "NotFound")
print("ok")
