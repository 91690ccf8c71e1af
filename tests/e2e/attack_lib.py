"""attack_lib.py -- what the attack scripts (attack_conns.py, watch_attack.py) share:
a check that prints and remembers failures, and the server's figures from /proc."""

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def proc_status(pid, keys):
    """The numbers of /proc/PID/status lines `keys` (kB for memory, a count for
    Threads), 0 for a key not there."""
    vals = dict.fromkeys(keys, 0)
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in vals:
                vals[k] = int(v.split()[0])
    return vals
