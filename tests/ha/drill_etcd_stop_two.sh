#!/usr/bin/env bash
# drill_etcd_stop_two.sh KPLANE KUBECTL HA_WRITER -- SIGSTOP two of the three
# etcd members (the leader and one follower): the cluster has no quorum, so
# creates fail (a 5xx status or no answer) and none is acknowledged. After
# SIGCONT writes succeed again, and no acknowledged write is lost.
. "$(dirname "$0")/harness.sh"
[ -n "$HA_WRITER" ] || fail "usage: drill_etcd_stop_two.sh KPLANE KUBECTL HA_WRITER"
ha_etcd_start
ha_api_start 0
ha_api_start 1

ha_log "before: $(ha_write pre "$HA_DIR/pre" --count 400)"

leader=$(ha_etcd_leader)
other=$(((leader + 1) % 3))
ha_log "SIGSTOP etcd e$leader (the leader) and e$other"
ha_stop "${ETCD_PID[$leader]}"
ha_stop "${ETCD_PID[$other]}"
# 8 clients keep creating for 8 s; a request waits at most 15 s for an answer
# (the API server's store timeout is 10 s).
ha_log "stopped: $(ha_write stop "$HA_DIR/stopped" --count 100000 --seconds 8 --timeout-ms 15000)"
python3 - "$HA_DIR/stopped" <<'PY'
import sys
rec = [l.split() for l in open(sys.argv[1]) if l.strip()]
ack = [r for r in rec if r[1] == "ack"]
bad = [r for r in rec if r[1] == "error" and not r[2].startswith("5")]
lat = sorted(float(r[5]) - float(r[4]) for r in rec)
print("without quorum: %d creates, %d acknowledged; answers %s; time to fail: min %.1f s, max %.1f s"
      % (len(rec), len(ack), sorted(set(r[2] if r[1] == "error" else r[1] for r in rec)),
         lat[0] / 1e3, lat[-1] / 1e3))
if not rec:
    sys.exit("FAIL: no create was attempted")
if ack:
    sys.exit("FAIL: %d creates acknowledged without a quorum: %s" % (len(ack), [r[0] for r in ack][:5]))
if bad:
    sys.exit("FAIL: creates failed with a non-5xx status: %s" % bad[:5])
PY

ha_log "SIGCONT both"
t0=$(date +%s.%N)
ha_cont "${ETCD_PID[$leader]}"
ha_cont "${ETCD_PID[$other]}"
ha_await_write probe-after 30 || fail "no write succeeded within 30 s of SIGCONT"
ha_log "first write succeeded $(python3 -c "print(round($(date +%s.%N) - $t0, 2))")s after SIGCONT"
ha_log "after: $(ha_write post "$HA_DIR/post" --count 400)"
if grep -qv ' ack ' "$HA_DIR/post"; then
  fail "creates failed after SIGCONT: $(grep -v ' ack ' "$HA_DIR/post" | head -3)"
fi
ha_verify_writes "$HA_DIR/pre" "$HA_DIR/stopped" "$HA_DIR/post"
ha_log "drill_etcd_stop_two: all checks passed"
