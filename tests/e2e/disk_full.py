"""disk_full.py MODE ACKS -- the client side of disk_full.sh.

Reads KP_PORT, KP_TOKEN and KP_DIR (lib.sh) from the environment.

  fill ACKS    several clients create ConfigMaps until the store is out of
               space; every acknowledged create (201) is appended to ACKS as
               "name resourceVersion". Every refusal must be the documented
               one: 500, no reason, "etcdserver: mvcc: database space
               exceeded". Then /readyz fails naming the store, /livez is ok.
  resume ACKS  (space was freed) a create succeeds again within 5 s, without
               a restart; /readyz is ok; the clients write some more.
  verify ACKS  every acknowledged create is there with its resourceVersion.
"""
import http.client
import json
import os
import ssl
import sys
import threading
import time

CLIENTS = 6
BASE = "/api/v1/namespaces/default/configmaps"
NOSPACE = "etcdserver: mvcc: database space exceeded"
PAD = "x" * 1500  # fills the store faster than tiny objects

CTX = ssl.create_default_context(cafile=os.path.join(os.environ["KP_DIR"], "data", "ca.crt"))
HDR = {"Authorization": "Bearer " + os.environ["KP_TOKEN"], "Content-Type": "application/json"}


def conn():
    return http.client.HTTPSConnection("127.0.0.1", int(os.environ["KP_PORT"]), context=CTX,
                                       timeout=30)


def request(c, method, path, body=None):
    c.request(method, path, body=body, headers=HDR)
    r = c.getresponse()
    return r.status, r.read()


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check_refusal(code, body):
    """The documented answer of a write the full store refused."""
    st = json.loads(body)
    if code != 500 or st.get("code") != 500 or st.get("message") != NOSPACE or "reason" in st:
        return "refused write: %d %s" % (code, body[:300])
    return None


def writers(prefix, stop_when_full, max_each, acks_path, pad=PAD):
    """CLIENTS threads create PREFIX-<t>-<i> (data.pad = pad); returns (acks,
    refusals, errors)."""
    lock = threading.Lock()
    full = threading.Event()
    acks, refusals, errors = [], [0], []
    last_ack = [time.monotonic()]

    def run(t):
        c = conn()
        after_full = 0
        for i in range(max_each):
            name = "%s-%d-%d" % (prefix, t, i)
            body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name}, "data": {"pad": pad}})
            try:
                code, resp = request(c, "POST", BASE, body)
            except Exception as e:  # the server must answer every request
                with lock:
                    errors.append("%s: %r" % (name, e))
                return
            if code == 201:
                rv = json.loads(resp)["metadata"]["resourceVersion"]
                with lock:
                    acks.append((name, rv))
                    last_ack[0] = time.monotonic()
            else:
                err = check_refusal(code, resp)
                with lock:
                    if err:
                        errors.append(err)
                        return
                    refusals[0] += 1
                full.set()
            if stop_when_full and full.is_set():
                after_full += 1
                # Keep pressing until the store has refused everything for
                # longer than its retry interval (1 s): while full it refuses
                # without trying, so refusals alone do not prove that no room
                # is left (pages freed by earlier commits can take a write).
                with lock:
                    quiet = time.monotonic() - last_ack[0]
                if after_full >= 50 and quiet >= 2.5:
                    return

    threads = [threading.Thread(target=run, args=(t,)) for t in range(CLIENTS)]
    start = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with open(acks_path, "a") as f:
        for name, rv in acks:
            f.write("%s %s\n" % (name, rv))
    return acks, refusals[0], errors, time.monotonic() - start


def health(c, path):
    code, body = request(c, "GET", path)
    return code, body.decode()


def healthy_format():
    """Kubernetes' healthz format while all is well."""
    c = conn()
    want = {
        "/readyz": (200, "ok"),
        "/livez": (200, "ok"),
        "/readyz?verbose": (200, "[+]ping ok\n[+]store ok\nreadyz check passed\n"),
        "/livez?verbose": (200, "[+]ping ok\nlivez check passed\n"),
        "/readyz?verbose&exclude=store": (200, "[+]ping ok\n[+]store excluded: ok\n"
                                               "readyz check passed\n"),
        "/readyz/store": (200, "ok"),
        "/readyz/ping": (200, "ok"),
    }
    for path, (code, text) in want.items():
        got = health(c, path)
        if got != (code, text):
            fail("%s: %r, want %r" % (path, got, (code, text)))
    code, _ = health(c, "/readyz/bogus")
    if code != 404:
        fail("/readyz/bogus: %d, want 404" % code)


def fill(acks_path):
    healthy_format()
    acks, refused, errors, secs = writers("cm", True, 100000, acks_path)
    if errors:
        fail("\n  ".join(errors[:20]))
    if refused == 0:
        fail("the disk never filled (%d creates acknowledged)" % len(acks))
    # Room a large object did not find may still hold small ones (a write
    # the store takes ends its full state): fill that with small objects too,
    # so that a small write such as kubectl's later is refused as well.
    small, small_refused, errors, _ = writers("small", True, 100000, acks_path, pad="x")
    if errors:
        fail("\n  ".join(errors[:20]))
    acks += small
    refused += small_refused
    print("fill: %d creates acknowledged, %d refused as out of space, in %.1f s"
          % (len(acks), refused, secs), flush=True)
    c = conn()
    code, body = health(c, "/readyz")
    if code != 500 or "[-]store failed: reason withheld" not in body \
            or "[+]ping ok" not in body or "readyz check failed" not in body:
        fail("/readyz while full: %d %r" % (code, body))
    code, vbody = health(c, "/readyz?verbose")
    if code != 500 or "[-]store failed: reason withheld" not in vbody:
        fail("/readyz?verbose while full: %d %r" % (code, vbody))
    code, sbody = health(c, "/readyz/store")
    if code != 500 or "disk is full" not in sbody:
        fail("/readyz/store while full: %d %r" % (code, sbody))
    code, lbody = health(c, "/livez")
    if code != 200 or lbody != "ok":
        fail("/livez while full: %d %r" % (code, lbody))
    # Reads go on.
    code, _ = request(c, "GET", BASE + "/" + acks[0][0])
    if code != 200:
        fail("read while full: %d" % code)
    print("while full: /readyz %r; /readyz/store %r; /livez ok" % (body, sbody.strip()))


def resume(acks_path):
    c = conn()
    start = time.monotonic()
    n = 0
    while True:
        n += 1
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "resume-%d" % n}, "data": {"pad": PAD}})
        code, resp = request(c, "POST", BASE, body)
        if code == 201:
            rv = json.loads(resp)["metadata"]["resourceVersion"]
            with open(acks_path, "a") as f:
                f.write("resume-%d %s\n" % (n, rv))
            break
        err = check_refusal(code, resp)
        if err:
            fail(err)
        if time.monotonic() - start > 5:
            fail("writes did not resume within 5 s of freeing space (%d tries)" % n)
        time.sleep(0.02)
    secs = time.monotonic() - start
    code, body = health(c, "/readyz?verbose")
    if code != 200 or "[+]store ok" not in body or "readyz check passed" not in body:
        fail("/readyz after space returned: %d %r" % (code, body))
    acks, refused, errors, _ = writers("more", False, 100, acks_path)
    if errors or refused:
        fail("writes after recovery: %d refused; %s" % (refused, "\n  ".join(errors[:20])))
    print("resume: the first write was accepted %.2f s after the space returned (%d tries); "
          "%d more creates acknowledged" % (secs, n, len(acks)), flush=True)


def verify(acks_path):
    want = dict(line.split() for line in open(acks_path))
    c = conn()
    got, cont = {}, ""
    while True:
        path = BASE + "?limit=500" + ("&continue=" + cont if cont else "")
        code, body = request(c, "GET", path)
        if code != 200:
            fail("list: %d %s" % (code, body[:300]))
        lst = json.loads(body)
        for item in lst["items"]:
            got[item["metadata"]["name"]] = item["metadata"]["resourceVersion"]
        cont = lst["metadata"].get("continue", "")
        if not cont:
            break
    errors = []
    for name, rv in want.items():
        if name not in got:
            errors.append("acknowledged %s (rv %s) is missing" % (name, rv))
        elif got[name] != rv:
            errors.append("acknowledged %s: rv %s, acknowledged as %s" % (name, got[name], rv))
    if errors:
        fail("%d of %d acknowledged writes wrong:\n  %s"
             % (len(errors), len(want), "\n  ".join(errors[:30])))
    print("verify: all %d acknowledged writes present with their resourceVersion (%d listed)"
          % (len(want), len(got)), flush=True)


{"fill": fill, "resume": resume, "verify": verify}[sys.argv[1]](sys.argv[2])
