#!/usr/bin/env python3
"""audit_check.py -- audit.sh's checks of an audit log (python3's json only).

  audit_check.py session LOG STEPS_DIR SECRET_VALUE
      STEPS_DIR holds one kubectl -v=8 log (or curl -D headers) per step of
      the session; every Audit-Id a client saw is matched with the log.
  audit_check.py rotation DIR MAXBACKUP MAXBYTES CREATES
      DIR/audit.log rotated with --audit-log-maxsize and -maxbackup.
"""
import base64
import json
import os
import re
import sys

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
# kubectl -v=8: the request's line, then (1.32) "Response Status: 200 OK in
# ..." or (1.20) the request's line again with the status; then the headers
REQUEST = re.compile(r"\] (GET|POST|PUT|PATCH|DELETE) (https?://\S+)(?: (\d{3}) )?")
STATUS = re.compile(r"\] Response Status: (\d{3}) ")
AUDIT_ID = re.compile(r"Audit-Id: (\S+)", re.I)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_events(path):
    events = []
    with open(path, encoding="utf-8") as f:  # (not UTF-8: fails here)
        for n, line in enumerate(f, 1):
            try:
                ev = json.loads(line)
            except ValueError as e:
                fail("%s:%d is not JSON (%s): %.200s" % (path, n, e, line))
            if ev.get("kind") != "Event" or ev.get("apiVersion") != "audit.k8s.io/v1":
                fail("%s:%d is no audit.k8s.io/v1 Event: %.200s" % (path, n, line))
            for k in ("requestReceivedTimestamp", "stageTimestamp"):
                if not STAMP.match(ev.get(k, "")):
                    fail("%s:%d: %s %r is not a microsecond RFC 3339 time" % (path, n, k, ev.get(k)))
            if ev["stageTimestamp"] < ev["requestReceivedTimestamp"]:
                fail("%s:%d: the stage comes before the request" % (path, n))
            for k in ("level", "auditID", "stage", "requestURI", "verb", "user"):
                if k not in ev:
                    fail("%s:%d: no %s" % (path, n, k))
            events.append(ev)
    return events


def responses(path):
    """(method, url, code, audit id) of each response a kubectl -v=8 log shows."""
    out, last = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = REQUEST.search(line)
            if m:
                last = list(m.groups())
                continue
            m = STATUS.search(line)
            if m and last:
                last[2] = m.group(1)
                continue
            m = AUDIT_ID.search(line)
            if m and last:
                out.append(tuple(last) + (m.group(1),))
                last = None
    return out


def curl_id(path):
    with open(path) as f:
        for line in f:
            if line.lower().startswith("audit-id:"):
                return line.split(":", 1)[1].strip()
    fail("%s: no Audit-ID header" % path)


def session(log, steps, secret):
    events = read_events(log)
    text = open(log, encoding="utf-8").read()
    for form in (secret, base64.b64encode(secret.encode()).decode()):
        if form in text:
            fail("the Secret's value (%s) is in the audit log" % form)
    by_id = {}
    for ev in events:
        by_id.setdefault(ev["auditID"], []).append(ev)
    seen = set()
    step = {}
    for name in sorted(os.listdir(steps)):
        if name.startswith("curl_"):  # curl -D: one response's headers
            seen.add(curl_id(os.path.join(steps, name)))
            continue
        step[name] = responses(os.path.join(steps, name))
        seen.update(r[3] for r in step[name])

    def only(name, method, path_re, code=None):
        """The one response of step `name` to METHOD path_re: its events."""
        hits = [r for r in step[name] if r[0] == method and re.search(path_re, r[1])]
        if len(hits) != 1:
            fail("step %s: %d responses to %s %s: %s" % (name, len(hits), method, path_re,
                                                         step[name]))
        r = hits[0]
        if code and r[2] != str(code):
            fail("step %s: %s %s answered %s, want %s" % (name, method, r[1], r[2], code))
        return r[3], by_id.get(r[3], [])

    def expect(name, method, path_re, code, level, stages, verb, user="kubernetes-admin"):
        aid, evs = only(name, method, path_re, code)
        got = [e["stage"] for e in evs]
        if got != stages:
            fail("step %s (%s): stages %s, want %s" % (name, aid, got, stages))
        for e in evs:
            if e["level"] != level or e["verb"] != verb:
                fail("step %s: level %s verb %s, want %s %s" % (name, e["level"], e["verb"],
                                                               level, verb))
            if e["responseStatus"]["code"] != code:
                fail("step %s: responseStatus %s, want code %d" % (name, e["responseStatus"], code))
            if e["user"].get("username") != user:
                fail("step %s: user %s, want %s" % (name, e["user"], user))
            if level == "Metadata" and ("requestObject" in e or "responseObject" in e):
                fail("step %s: a Metadata event with an object" % name)
            if e["requestURI"] != re.sub(r"^https?://[^/]+", "", r_url(name, aid)):
                fail("step %s: requestURI %s is not %s" % (name, e["requestURI"], r_url(name, aid)))
        print("    %-14s %-6s %-4s %-16s %s" % (name, verb, code, level, ",".join(stages)))
        return evs

    def r_url(name, aid):
        return [r[1] for r in step[name] if r[3] == aid][0]

    sec = r"/api/v1/namespaces/default/secrets"
    evs = expect("create_secret", "POST", sec + r"\?", 201, "Metadata", ["ResponseComplete"],
                 "create")
    ref = evs[0]["objectRef"]
    if ref != {"resource": "secrets", "namespace": "default", "name": "audit-s",
               "apiVersion": "v1"}:
        fail("create_secret: objectRef %s" % ref)
    if evs[0]["annotations"].get("authorization.k8s.io/decision") != "allow":
        fail("create_secret: annotations %s" % evs[0].get("annotations"))
    if evs[0]["sourceIPs"] != ["127.0.0.1"] or not evs[0]["userAgent"].startswith("kubectl/"):
        fail("create_secret: sourceIPs %s userAgent %s" % (evs[0]["sourceIPs"],
                                                           evs[0]["userAgent"]))
    expect("get_secret", "GET", sec + "/audit-s$", 200, "Metadata", ["ResponseComplete"], "get")
    expect("list_secrets", "GET", sec + r"\?limit", 200, "Metadata", ["ResponseComplete"], "list")
    expect("watch_secrets", "GET", sec + r"\?.*watch=true", 200, "Metadata",
           ["ResponseStarted", "ResponseComplete"], "watch")
    expect("get_missing", "GET", sec + "/no-such-secret$", 404, "Metadata",
           ["ResponseComplete"], "get")
    expect("delete_secret", "DELETE", sec + "/audit-s$", 200, "Metadata", ["ResponseComplete"],
           "delete")
    evs = expect("create_cm", "POST", r"/api/v1/namespaces/default/configmaps\?", 201,
                 "RequestResponse", ["ResponseComplete"], "create")
    req, resp = evs[0].get("requestObject"), evs[0].get("responseObject")
    if not req or req.get("data") != {"k": "v"}:
        fail("create_cm: requestObject %s" % req)
    if not resp or resp["metadata"].get("name") != "audit-cm" or resp.get("data") != {"k": "v"}:
        fail("create_cm: responseObject %s" % resp)
    if "managedFields" in resp["metadata"]:
        fail("create_cm: omitManagedFields kept managedFields")
    evs = expect("impersonated", "GET", r"/configmaps/audit-cm$", 200, "RequestResponse",
                 ["ResponseComplete"], "get")
    imp = evs[0].get("impersonatedUser", {})
    if imp.get("username") != "dan" or "system:authenticated" not in imp.get("groups", []):
        fail("impersonated: impersonatedUser %s" % imp)
    if evs[0]["responseObject"].get("metadata", {}).get("name") != "audit-cm":
        fail("impersonated: responseObject %s" % evs[0]["responseObject"])
    evs = expect("forbidden", "GET", sec + r"\?limit", 403, "Metadata", ["ResponseComplete"],
                 "list", user="eve")
    ann = evs[0].get("annotations", {})
    if ann.get("authorization.k8s.io/decision") != "forbid":
        fail("forbidden: annotations %s" % ann)
    if evs[0]["responseStatus"].get("reason") != "Forbidden":
        fail("forbidden: responseStatus %s" % evs[0]["responseStatus"])
    evs = expect("unauthorized", "GET", sec + r"\?limit", 401, "Metadata", ["ResponseStarted"],
                 "list", user=None)
    if evs[0]["user"] != {}:
        fail("unauthorized: user %s, want {}" % evs[0]["user"])
    # dan's requests (None) and discovery (None): answered with an Audit-ID,
    # never logged
    for name in ("dan_get_cm", "discovery"):
        if not step[name]:
            fail("step %s: no response seen" % name)
        for r in step[name]:
            if r[3] in by_id:
                fail("step %s: %s %s was logged" % (name, r[0], r[1]))
    if any(e["user"].get("username") == "dan" for e in events):
        fail("an event of user dan")
    # curl: the client's own Audit-ID is the one logged; 401 and 413 too
    own = curl_id(os.path.join(steps, "curl_own_id"))
    if own != "client-chosen-id-42" or [e["stage"] for e in by_id.get(own, [])] != \
            ["ResponseComplete"]:
        fail("the client's Audit-ID: %s %s" % (own, by_id.get(own)))
    for name, code, stage in (("curl_401", 401, "ResponseStarted"),
                              ("curl_413", 413, "ResponseComplete")):
        aid = curl_id(os.path.join(steps, name))
        evs = by_id.get(aid, [])
        if [(e["stage"], e["responseStatus"]["code"]) for e in evs] != [(stage, code)]:
            fail("%s: events %s" % (name, evs))
    aid = curl_id(os.path.join(steps, "curl_long"))
    evs = by_id.get(aid, [])
    if len(evs) != 1 or len(evs[0]["requestURI"]) < 3000 or \
            evs[0]["userAgent"] != "agent-" + "q" * 1018 + "...TRUNCATED":
        fail("a long request: %s" % [(e["requestURI"][:80], e["userAgent"][-20:]) for e in evs])
    # every logged request was seen by a client, under the same Audit-ID;
    # RequestReceived was omitted everywhere
    for aid, evs in by_id.items():
        if aid not in seen:
            fail("logged %s %s under an Audit-ID no client saw: %s" % (evs[0]["verb"],
                                                                      evs[0]["requestURI"], aid))
        if any(e["stage"] == "RequestReceived" for e in evs):
            fail("a RequestReceived event, omitted by the policy")
    print("    %d events of %d requests; %d Audit-IDs seen by the clients; no Secret value"
          % (len(events), len(by_id), len(seen)))


def rotation(d, maxbackup, maxbytes, creates):
    names = sorted(os.listdir(d))
    backup = re.compile(r"^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$")
    backups = [n for n in names if backup.match(n)]
    if "audit.log" not in names or len(names) != len(backups) + 1:
        fail("rotation: files %s" % names)
    if len(backups) != maxbackup:
        fail("rotation: %d backups, want %d: %s" % (len(backups), maxbackup, names))
    total = 0
    for n in names:
        size = os.path.getsize(os.path.join(d, n))
        if size > maxbytes:
            fail("rotation: %s has %d bytes, over %d" % (n, size, maxbytes))
        total += len(read_events(os.path.join(d, n)))
    print("    %s: %d events in %d files, the largest %d bytes" %
          (", ".join(names), total, len(names),
           max(os.path.getsize(os.path.join(d, n)) for n in names)))


if __name__ == "__main__":
    if sys.argv[1] == "session":
        session(*sys.argv[2:5])
    elif sys.argv[1] == "rotation":
        rotation(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        fail("usage: see the top of the file")
