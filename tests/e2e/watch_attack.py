#!/usr/bin/env python3
"""watch_attack.py -- issue 14 items 7 and 8 as attacks on a real server.

Usage: watch_attack.py PORT TOKEN CA_FILE SERVER_PID [KUBECTL]

Three attacks, each bounded in count and time, on 127.0.0.1 only, while a
probe GETs /api/v1/namespaces on a fresh connection (TLS handshake
included) every 0.25 s and must be answered within 1 s:

 (i)  WATCHERS watches (timeoutSeconds 600) that never read while WRITES
      ConfigMaps of ~1 KB are updated: each watcher falls behind its queue
      budget (--watch-queue-bytes, 1 MiB) and is closed; the server's open
      watch count (apiserver_registered_watchers) returns to 0; the writers'
      rate with the watchers is within 20% of their rate without. First a
      control round: the same updates with no watcher, so that what the
      writes themselves add (the watch cache's history, the store's pages)
      is measured; once the watchers are closed, what the attack round added
      beyond the control's growth is within 10% of the starting RSS; twice,
      the second round measured from where the first left it. Updates of ConfigMaps created beforehand, so
      that the live state is the same size before and after.
 (i') DEADLINE_WATCHERS watches with timeoutSeconds 4 that never read, their
      socket buffers filled by a few MB of events but under the queue
      budget: closed at their deadline (+2 s grace) although no reader
      callback runs.
 (ii) BIG_UPDATES updates of one 1 MiB ConfigMap: the anonymous RSS (not
      the store's file pages) grows by less than
      the watch cache budget (--watch-cache-bytes, 64 MiB; CACHE_BYTES tells
      the script another) + 100 MB.

The counts come from the environment (WATCHERS, WRITES, BASE_WRITES,
DEADLINE_WATCHERS, BIG_UPDATES); the defaults are the issue's.

Prints the figures; exits non-zero on a failed check.
"""
import http.client
import json
import os
import selectors
import socket
import ssl
import subprocess
import sys
import threading
import time

from attack_lib import check, failures, proc_status

# 0 under ASan (make test): rates and allocator memory are printed, not judged.
STRICT = os.environ.get("WATCH_ATTACK_STRICT", "1") == "1"
from concurrent.futures import ThreadPoolExecutor

PORT, TOKEN, CA, PID = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
KUBECTL = sys.argv[5] if len(sys.argv) > 5 else None
WATCHERS = int(os.environ.get("WATCHERS", "1000"))
WRITES = int(os.environ.get("WRITES", "20000"))
BASE_WRITES = int(os.environ.get("BASE_WRITES", "5000"))
DEADLINE_WATCHERS = int(os.environ.get("DEADLINE_WATCHERS", "100"))
BIG_UPDATES = int(os.environ.get("BIG_UPDATES", "1000"))
WRITERS = 4
CACHE_BUDGET = int(os.environ.get("CACHE_BYTES", str(64 << 20)))  # --watch-cache-bytes
HDR = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}

CTX = ssl.create_default_context(cafile=CA)
CTX.check_hostname = False
def rss_mb():
    return {k: v / 1024.0 for k, v in proc_status(PID, ("VmRSS", "RssAnon", "RssFile")).items()}


def conn():
    return http.client.HTTPSConnection("127.0.0.1", PORT, context=CTX, timeout=30)


def request(c, method, path, body=None):
    c.request(method, path, body=body, headers=HDR)
    r = c.getresponse()
    data = r.read()
    return r.status, data


def open_watches():
    c = conn()
    st, data = request(c, "GET", "/metrics")
    c.close()
    for line in data.decode().splitlines():
        if line.startswith("apiserver_registered_watchers "):
            return int(line.split()[1])
    raise RuntimeError("no apiserver_registered_watchers in /metrics")


def cache_mb():
    """The configmaps watch cache's history (kplane_watch_cache_history_bytes), MB."""
    c = conn()
    st, data = request(c, "GET", "/metrics")
    c.close()
    key = 'kplane_watch_cache_history_bytes{group="",version="v1",resource="configmaps"} '
    for line in data.decode().splitlines():
        if line.startswith(key):
            return int(line.split()[-1]) / 1048576.0
    return float("nan")


class Probe(threading.Thread):
    """An authenticated GET on a fresh connection every 0.25 s."""

    def __init__(self):
        super().__init__(daemon=True)
        self.lat, self.errors, self.stop = [], [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                c = conn()
                st, _ = request(c, "GET", "/api/v1/namespaces")
                c.close()
                if st != 200:
                    self.errors.append(st)
            except Exception as e:  # noqa: BLE001 -- any failure is a finding
                self.errors.append(repr(e))
            self.lat.append(time.monotonic() - t)
            self.stop.wait(0.25)

    def finish(self, name):
        self.stop.set()
        self.join()
        worst = max(self.lat) if self.lat else 0
        print("  probe during %s: %d GETs, worst %.0f ms, errors %s"
              % (name, len(self.lat), worst * 1000, self.errors[:3]))
        check(self.lat and not self.errors and worst < 1.0,
              "%s: GET /api/v1/namespaces answered within 1 s throughout" % name)


def kubectl_get_ns(name):
    if not KUBECTL:
        return
    t = time.monotonic()
    r = subprocess.run([KUBECTL, "get", "ns", "--request-timeout=5s"], capture_output=True)
    dt = time.monotonic() - t
    print("  kubectl get ns during %s: rc %d in %.0f ms (process start included)"
          % (name, r.returncode, dt * 1000))
    check(r.returncode == 0, "%s: kubectl get ns answered" % name)


def cm(ns, name, payload):
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": ns},
                       "data": {"v": payload}})


def write_all(ns, names, payload, create):
    """Create or update each ConfigMap with WRITERS keep-alive clients;
    returns writes per second."""
    chunks = [names[i::WRITERS] for i in range(WRITERS)]
    errs = []

    def run(part):
        c = conn()
        for n in part:
            if create:
                st, d = request(c, "POST", "/api/v1/namespaces/%s/configmaps" % ns,
                                cm(ns, n, payload))
            else:
                st, d = request(c, "PUT", "/api/v1/namespaces/%s/configmaps/%s" % (ns, n),
                                cm(ns, n, payload))
            if st not in (200, 201):
                errs.append((st, d[:200]))
                return
        c.close()

    t = time.monotonic()
    threads = [threading.Thread(target=run, args=(p,)) for p in chunks]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.monotonic() - t
    if errs:
        raise RuntimeError("writes failed: %r" % errs[:3])
    return len(names) / dt


def ensure_ns(name):
    c = conn()
    st, d = request(c, "POST", "/api/v1/namespaces",
                    json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": name}}))
    c.close()
    if st not in (201, 409):
        raise RuntimeError("namespace %s: %d %r" % (name, st, d[:200]))


def open_stuck_watch(path):
    """A watch whose client reads the response head and then nothing: a
    4 KiB receive buffer so that the server's socket fills soon."""
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(30)
    raw.connect(("127.0.0.1", PORT))
    s = CTX.wrap_socket(raw, server_hostname="127.0.0.1")
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
               % (path, TOKEN)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)  # byte by byte: nothing past the head is taken
        if not b:
            raise RuntimeError("watch closed before its head")
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("watch refused: %r" % head[:80])
    return s


def open_stuck_watches(n, path):
    with ThreadPoolExecutor(4) as ex:
        return list(ex.map(lambda _: open_stuck_watch(path), range(n)))


def wait_watches(target, limit_s):
    t = time.monotonic()
    while True:
        n = open_watches()
        if n <= target or time.monotonic() - t > limit_s:
            return n, time.monotonic() - t
        time.sleep(0.2)


def server_side_open(socks):
    """How many of these connections the server still holds open (TCP state
    ESTABLISHED or CLOSE_WAIT on its side, from /proc/net/tcp): a server
    that closed one leaves it in FIN_WAIT, whatever the client's unread
    data."""
    ours = {s.getsockname()[1] for s in socks}
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            lport = int(p[1].split(":")[1], 16)
            rport = int(p[2].split(":")[1], 16)
            if lport == PORT and rport in ours and p[3] in ("01", "08"):
                n += 1
    return n


def closed_by_server(socks, limit_s):
    """Drain every socket; count the streams that end in time: the
    connection closed (EOF or reset), or the chunked reply's last chunk
    (a watch that ended at its timeoutSeconds keeps its connection, as
    HTTP/1.1 does)."""
    sel = selectors.DefaultSelector()
    tails = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        tails[s] = b""
    closed, deadline = 0, time.monotonic() + limit_s
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            s = key.fileobj
            try:
                while True:
                    b = s.recv(65536)
                    if not b:
                        end = True
                        break
                    tails[s] = (tails[s] + b)[-7:]
            except (ssl.SSLWantReadError, BlockingIOError):
                end = tails[s].endswith(b"\r\n0\r\n\r\n")
            except (ssl.SSLError, OSError):
                end = True
            if end:
                sel.unregister(s)
                closed += 1
    for key in list(sel.get_map().values()):
        sel.unregister(key.fileobj)
    for s in socks:
        s.close()
    return closed


def stuck_round(names, payload, rate_base, rss0, tag):
    """Open WATCHERS watches that never read, update every ConfigMap, and
    check that the server closed them; returns the RSS once they are gone."""
    t = time.monotonic()
    socks = open_stuck_watches(WATCHERS, "/api/v1/namespaces/attack/configmaps?watch=true"
                               "&timeoutSeconds=600")
    print("  %s: %d watches open in %.1f s; the server counts %d" % (tag, len(socks),
          time.monotonic() - t, open_watches()))
    # The probe starts once they are open: a flood of TLS handshakes is
    # another attack (connection caps), not this one.
    probe = Probe()
    probe.start()
    peak = [rss0["VmRSS"]]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.5):
            peak[0] = max(peak[0], rss_mb()["VmRSS"])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    kubectl_get_ns(tag)
    rate = write_all("attack", names, payload, create=False)
    left, waited = wait_watches(0, 15)
    stop.set()
    sampler.join()
    print("  %s: with the watchers %d updates at %.0f/s (without: %.0f/s, %+.0f%%)"
          % (tag, len(names), rate, rate_base, (rate / rate_base - 1) * 100))
    print("  %s: open watches %.1f s after the writes: %d; RSS peak %.0f MB"
          % (tag, waited, left, peak[0]))
    check(left == 0, "%s every watcher that stopped reading was closed by the server" % tag)
    still = server_side_open(socks)
    check(still == 0, "%s the server closed every one of their connections (%d of %d still "
          "open on its side)" % (tag, still, WATCHERS))
    for s in socks:
        s.close()
    # The second round is for memory; its rate is printed. Under ASan on a
    # shared machine (make test) the rates swing by half from run to run (a
    # clean clone's run: 555/s against 1,059/s), so there they are printed,
    # not judged; the release build's full run judges them.
    if tag == "(i)" and STRICT:
        check(rate >= 0.8 * rate_base, "%s writers kept their rate within 20%%" % tag)
    probe.finish(tag)
    return settled_rss(tag)


def settled_rss(tag):
    """The server's memory once the allocator has given back what it gives
    back (jemalloc decays freed pages over its decay time, 10 s): sampled
    every second until RssAnon has not fallen by 1% for 11 s, 60 s at most.
    Where memory is not judged (not STRICT: ASan's allocator), 1 s."""
    if not STRICT:
        time.sleep(1)  # connection threads finish after the sockets close
        return rss_mb()
    t = time.monotonic()
    last, calm = rss_mb(), 0
    while calm < 11 and time.monotonic() - t < 60:
        time.sleep(1)
        r = rss_mb()
        calm = calm + 1 if r["RssAnon"] >= 0.99 * last["RssAnon"] else 0
        last = r
    last["cache"] = cache_mb()
    print("  %s: RSS settled after %.0f s: %.0f MB (anon %.0f; the configmaps watch cache's "
          "history %.0f MB)" % (tag, time.monotonic() - t, last["VmRSS"], last["RssAnon"],
                                last["cache"]))
    return last


def attack_slow_watchers():
    print("== (i) %d watchers that never read, %d ConfigMap writes" % (WATCHERS, WRITES))
    ensure_ns("attack")
    payload = "x" * 1000
    names = ["cm-%05d" % i for i in range(WRITES)]
    rate_create = write_all("attack", names, payload, create=True)
    rate_base = write_all("attack", names[:BASE_WRITES], payload + "a", create=False)
    rss_setup = settled_rss("setup")
    print("  setup: %d creates at %.0f/s; without watchers %d updates at %.0f/s; RSS %.0f MB"
          " (anon %.0f, file %.0f)" % (WRITES, rate_create, BASE_WRITES, rate_base,
                                       rss_setup["VmRSS"], rss_setup["RssAnon"],
                                       rss_setup["RssFile"]))
    # The control: the round's very writes with no watcher. What they add
    # (the watch cache's history of them, kept by design up to its budget,
    # and the store's pages) is the writes', not the attack's; the start the
    # attack is measured from is after them.
    rate_control = write_all("attack", names, payload + "0", create=False)
    rss0 = settled_rss("control")
    print("  control: the same %d updates without watchers at %.0f/s; RSS %.0f MB (%+.1f%%;"
          " anon %.0f, file %.0f)" % (WRITES, rate_control, rss0["VmRSS"],
                                     (rss0["VmRSS"] / rss_setup["VmRSS"] - 1) * 100,
                                     rss0["RssAnon"], rss0["RssFile"]))
    rss1 = stuck_round(names, payload + "b", rate_control, rss0, "(i)")
    # The memory a round's connections used stays with the allocator (glibc
    # keeps its arenas): a second round must reuse it, not add to it.
    rss2 = stuck_round(names, payload + "c", rate_control, rss0, "(i) again")
    for tag, r in (("after (i)", rss1), ("after (i) again", rss2)):
        print("  RSS %s: %.0f MB (%+.1f%% of %.0f; anon %.0f, file %.0f)"
              % (tag, r["VmRSS"], (r["VmRSS"] / rss0["VmRSS"] - 1) * 100, rss0["VmRSS"],
                 r["RssAnon"], r["RssFile"]))
    # Under ASan (make test) the allocator's own retention dominates: a clean
    # clone's run saw anon 199 then 446 MB where the release build (jemalloc)
    # saw 331 then 284 MB; there the figure is printed, not judged.
    if STRICT:
        # The control round's writes grew RSS too (the store keeps 5
        # minutes of history, as kube-apiserver's etcd compaction does, and
        # the watch cache keeps its history up to its budget): what each
        # attack round must give back is what it added beyond the same
        # writes. The second round must not add to what the first left.
        control = rss0["VmRSS"] - rss_setup["VmRSS"]
        before = rss0
        for tag, r in (("(i)", rss1), ("(i) again", rss2)):
            residue = r["VmRSS"] - before["VmRSS"] - control
            print("  %s RSS growth: the control's writes %+.0f MB, the attack round's %+.0f MB;"
                  " left by the watchers %+.0f MB (%+.1f%% of the start, %.0f MB)"
                  % (tag, control, r["VmRSS"] - before["VmRSS"], residue,
                     residue / rss_setup["VmRSS"] * 100, rss_setup["VmRSS"]))
            check(residue <= 0.1 * rss_setup["VmRSS"],
                  "%s once the watchers were closed, RSS was within 10%% of where the same"
                  " writes without watchers leave it" % tag)
            before = r
    else:
        print("  (i) memory not judged (WATCH_ATTACK_STRICT=0)")


def attack_deadline():
    print("== (i') %d watchers with timeoutSeconds=4 that never read" % DEADLINE_WATCHERS)
    ensure_ns("deadline")
    names = ["d-%04d" % i for i in range(1500)]
    payload = "y" * 1000
    probe = Probe()
    probe.start()
    t0 = time.monotonic()
    socks = open_stuck_watches(DEADLINE_WATCHERS, "/api/v1/namespaces/deadline/configmaps"
                               "?watch=true&timeoutSeconds=4")
    # ~2 MB of events each: their sockets fill, their queues stay in budget.
    write_all("deadline", names, payload, create=True)
    opened = time.monotonic() - t0
    left, waited = wait_watches(0, 15)
    total = time.monotonic() - t0
    print("  watches open and written to for %.1f s; all closed after %.1f s (%d left)"
          % (opened, total, left))
    check(left == 0 and total < 4 + 2 + 3, "(i') watches closed at timeoutSeconds although "
          "their clients do not read")
    closed = closed_by_server(socks, 30)
    check(closed == DEADLINE_WATCHERS, "(i') %d of %d ended on the client"
          % (closed, DEADLINE_WATCHERS))
    probe.finish("(i')")


def attack_big_object():
    print("== (ii) %d updates of a 1 MiB ConfigMap" % BIG_UPDATES)
    ensure_ns("big")
    rss0 = rss_mb()
    probe = Probe()
    probe.start()
    peak = dict(rss0)

    def sample():
        for k, v in rss_mb().items():
            peak[k] = max(peak[k], v)

    c = conn()
    body = cm("big", "one", "z" * (1 << 20))
    st, d = request(c, "POST", "/api/v1/namespaces/big/configmaps", body)
    if st != 201:
        raise RuntimeError("create: %d %r" % (st, d[:200]))
    t = time.monotonic()
    for i in range(BIG_UPDATES):
        body = cm("big", "one", chr(ord("a") + i % 26) * (1 << 20))
        st, d = request(c, "PUT", "/api/v1/namespaces/big/configmaps/one", body)
        if st != 200:
            raise RuntimeError("update %d: %d %r" % (i, st, d[:200]))
        sample()
        if i == BIG_UPDATES // 2:
            kubectl_get_ns("(ii)")
    dt = time.monotonic() - t
    st, d = request(c, "DELETE", "/api/v1/namespaces/big/configmaps/one")
    c.close()
    sample()
    print("  %d updates in %.1f s; peak growth: VmRSS +%.0f MB, RssAnon +%.0f MB, RssFile "
          "+%.0f MB (%.0f -> %.0f MB)" % (BIG_UPDATES, dt, peak["VmRSS"] - rss0["VmRSS"],
                                          peak["RssAnon"] - rss0["RssAnon"],
                                          peak["RssFile"] - rss0["RssFile"], rss0["VmRSS"],
                                          peak["VmRSS"]))
    # RssFile is the store's file in the page cache (LMDB's map): the store
    # keeps five minutes of revisions, as etcd does before compaction.
    check(peak["RssAnon"] - rss0["RssAnon"] < CACHE_BUDGET / 2**20 + 100,
          "(ii) the server's memory (RssAnon) grew by less than the watch cache budget "
          "(%d MiB) + 100 MB" % (CACHE_BUDGET >> 20))
    probe.finish("(ii)")


def main():
    t = time.monotonic()
    only = os.environ.get("ONLY", "i,i',ii").split(",")
    if "i" in only:
        attack_slow_watchers()
    if "i'" in only:
        attack_deadline()
    if "ii" in only:
        attack_big_object()
    print("total %.0f s" % (time.monotonic() - t))
    if failures:
        print("FAILED: %s" % "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
