#!/usr/bin/python3
"""attack_conns.py PORT PID CA TOKEN KUBECTL -- connection floods against a running kplane.

Issue 14's first two attacks, at once, on loopback:
  * IDLE peers open connections and send a partial TLS record, then wait;
  * UPLOADERS complete TLS and send an unauthenticated POST with a 3 MiB body.
Meanwhile `kubectl get ns` must answer within 1 s each time, /readyz must
answer, and the server's RSS must grow by less than 100 MB. Afterwards the
idle peers must all have been closed by the server (the oldest at once, past
--max-unauthenticated-connections; the rest at --read-header-timeout).

Then a burst of honest clients: BURST (default 600, over twice the cap on
connections not yet authenticated) open TLS connections at once and each
GETs /api/v1/namespaces with the token: every one must get its 200 (the cap
makes them wait their turn; it must not close any of them).

Counts and times are bounded: IDLE and UPLOADERS from the environment
(defaults 10000 and 1000), every wait with a deadline.
"""
import asyncio
import os
import resource
import ssl
import subprocess
import sys
import time

from attack_lib import check, failures, proc_status

PORT, PID, CA, TOKEN, KUBECTL = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
IDLE = int(os.environ.get("IDLE", "10000"))
UPLOADERS = int(os.environ.get("UPLOADERS", "1000"))
BURST = int(os.environ.get("BURST", "600"))
HEADER_TIMEOUT = float(os.environ.get("HEADER_TIMEOUT", "6"))
BODY = 3 << 20


def rss_mb():
    return proc_status(PID, ("VmRSS",))["VmRSS"] / 1024.0


def threads():
    return proc_status(PID, ("Threads",))["Threads"]


async def idle_peer(opened, closed_at):
    """A partial TLS record (a handshake header announcing 512 bytes), then silence."""
    try:
        r, w = await asyncio.open_connection("127.0.0.1", PORT)
    except OSError:
        closed_at.append(0.0)  # refused at once: fine, it holds nothing
        return
    opened.append(1)
    try:
        w.write(b"\x16\x03\x01\x02\x00")
        await w.drain()
        await asyncio.wait_for(r.read(1 << 16), timeout=HEADER_TIMEOUT + 20)
        closed_at.append(time.monotonic())
    except (OSError, asyncio.TimeoutError):
        closed_at.append(time.monotonic() if not w.is_closing() else 0.0)
    finally:
        w.close()


async def uploader(ctx, codes):
    """An anonymous POST with a 3 MiB body: 403 before the body is read."""
    try:
        r, w = await asyncio.open_connection("127.0.0.1", PORT, ssl=ctx)
    except OSError as e:
        codes.append(f"connect:{e.__class__.__name__}")
        return
    try:
        w.write(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % BODY)
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < BODY:
                w.write(chunk)
                await asyncio.wait_for(w.drain(), timeout=5)
                sent += len(chunk)
        except (OSError, asyncio.TimeoutError):
            pass  # the server stopped reading: it answered already
        line = await asyncio.wait_for(r.readline(), timeout=30)
        codes.append(line.split(b" ")[1].decode() if line.startswith(b"HTTP/1.1") else "none")
    except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
        codes.append(f"err:{e.__class__.__name__}")
    finally:
        w.close()


async def honest(ctx, codes):
    """An authenticated GET on a fresh connection, as a client of a burst."""
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT, ssl=ctx), 30)
        w.write(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                b"Connection: close\r\n\r\n" % TOKEN.encode())
        await w.drain()
        line = await asyncio.wait_for(r.readline(), timeout=30)
        codes.append(line.split(b" ")[1].decode() if line.startswith(b"HTTP/1.1") else "none")
        w.close()
    except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
        codes.append(f"err:{e.__class__.__name__}")


def kubectl_get_ns():
    t = time.monotonic()
    p = subprocess.run([KUBECTL, "get", "ns", "--request-timeout=10s"], capture_output=True, text=True)
    return time.monotonic() - t, p.returncode, p.stderr.strip()


def readyz():
    t = time.monotonic()
    p = subprocess.run(["curl", "-s", "-m", "10", "--cacert", CA, f"https://127.0.0.1:{PORT}/readyz"],
                       capture_output=True, text=True)
    return time.monotonic() - t, p.stdout


async def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = IDLE + UPLOADERS + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < want:
        print(f"skip: need {want} file descriptors, have {hard}")
        return 77

    # kubectl's own start-up, for scale: the 1 s budget is for the server.
    base_kubectl = min(kubectl_get_ns()[0] for _ in range(3))
    rss0, thr0 = rss_mb(), threads()
    print(f"before: rss {rss0:.1f} MB, {thr0} threads, kubectl get ns {base_kubectl*1000:.0f} ms", flush=True)

    ctx = ssl.create_default_context(cafile=CA)
    ctx.check_hostname = False
    opened, closed_at, codes = [], [], []
    loop = asyncio.get_running_loop()
    start = time.monotonic()

    # Open the idle peers in waves (the listen backlog is finite), then the uploaders.
    tasks = []
    for i in range(0, IDLE, 500):
        tasks += [asyncio.create_task(idle_peer(opened, closed_at)) for _ in range(min(500, IDLE - i))]
        await asyncio.sleep(0.05)
    opened_s = time.monotonic() - start
    tasks += [asyncio.create_task(uploader(ctx, codes)) for _ in range(UPLOADERS)]

    # During the attack: kubectl and /readyz, and RSS sampled.
    peak = rss0
    worst = 0.0
    peak_thr = thr0
    for _ in range(5):
        el, rc, err = await loop.run_in_executor(None, kubectl_get_ns)
        worst = max(worst, el)
        check(rc == 0, f"kubectl get ns during the attack (exit {rc} {err[:200]})")
        ry, body = await loop.run_in_executor(None, readyz)
        check(body == "ok", f"/readyz during the attack: {body!r} in {ry*1000:.0f} ms")
        peak, peak_thr = max(peak, rss_mb()), max(peak_thr, threads())
        await asyncio.sleep(0.2)
    check(worst < 1.0, f"kubectl get ns answered within 1 s during the attack (worst {worst*1000:.0f} ms)")

    up_deadline = time.monotonic() + 120
    while len(codes) < UPLOADERS and time.monotonic() < up_deadline:
        peak, peak_thr = max(peak, rss_mb()), max(peak_thr, threads())
        await asyncio.sleep(0.1)
    # The server answers 403 on the headers (the anonymous user may not
    # create) and closes without reading the body; a client still writing
    # then meets a broken pipe or a reset before it reads the answer (so
    # does Go's server's client).
    refused = ("403", "err:BrokenPipeError", "err:ConnectionResetError", "connect:ConnectionResetError")
    n403 = sum(1 for c in codes if c == "403")
    nref = sum(1 for c in codes if c in refused)
    check(nref == UPLOADERS, f"{UPLOADERS} unauthenticated 3 MiB uploads refused: {n403} got 403, "
          f"{nref - n403} cut off while sending (others: {sorted(set(c for c in codes if c not in refused))[:5]})")

    # Every idle peer is closed by the server: the header timeout ends the last.
    deadline = start + opened_s + HEADER_TIMEOUT + 15
    while len(closed_at) < IDLE and time.monotonic() < deadline:
        peak, peak_thr = max(peak, rss_mb()), max(peak_thr, threads())
        await asyncio.sleep(0.2)
    still_open = IDLE - len(closed_at)
    check(still_open == 0, f"the server closed every idle connection ({still_open} of {IDLE} still open "
          f"{time.monotonic() - start:.1f} s after the first)")
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    grow = peak - rss0
    print(f"attack: {IDLE} idle peers ({len(opened)} connected, opened in {opened_s:.1f} s), "
          f"{UPLOADERS} uploads; peak rss {peak:.1f} MB (+{grow:.1f}), peak threads {peak_thr}", flush=True)
    # The bound itself: a thread per unproven connection, at most
    # --max-unauthenticated-connections (256) of them, plus the threads of
    # those just closed for newer ones, which take a moment to end.
    check(peak_thr <= thr0 + 2 * 256 + 8, f"threads stayed bounded by the unauthenticated cap "
          f"({peak_thr} at peak, {thr0} before)")
    budget = float(os.environ.get("RSS_BUDGET_MB", "100"))
    check(grow < budget, f"RSS grew by less than {budget:.0f} MB (+{grow:.1f} MB)")
    el, rc, _ = kubectl_get_ns()
    check(rc == 0 and el < 1.0, f"kubectl get ns after the attack ({el*1000:.0f} ms)")

    ctx = ssl.create_default_context(cafile=CA)
    codes = []
    t = time.monotonic()
    await asyncio.gather(*(honest(ctx, codes) for _ in range(BURST)))
    bad = [c for c in codes if c != "200"]
    check(not bad, f"a burst of {BURST} honest clients at once: {len(codes) - len(bad)} got 200 in "
          f"{time.monotonic() - t:.1f} s (others: {sorted(set(bad))[:5]}, {len(bad)} of them)")
    return 1 if failures else 0


sys.exit(asyncio.run(main()))
