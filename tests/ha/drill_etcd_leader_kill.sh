#!/usr/bin/env bash
# drill_etcd_leader_kill.sh KPLANE KUBECTL HA_WRITER -- kill -9 the etcd
# leader during 5,000 creates from 8 clients (ha_writer: ConfigMaps through
# both API servers). Writes resume after the election; every acknowledged
# create (201) is afterwards listed by both API servers with the
# resourceVersion it was acknowledged with (0 lost); resourceVersions only
# increase: a create acknowledged before another began has the lower one.
. "$(dirname "$0")/harness.sh"
[ -n "$HA_WRITER" ] || fail "usage: drill_etcd_leader_kill.sh KPLANE KUBECTL HA_WRITER"
COUNT=${HA_CREATES:-5000}
ha_etcd_start
ha_api_start 0
ha_api_start 1

# The client's timeout is beyond the API server's 10 s store timeout, so that
# the server's own answer (an error) is what the writer sees.
w0=$(date +%s.%N)
ha_write cm "$HA_DIR/writes" --count "$COUNT" --timeout-ms 15000 >"$HA_DIR/writer.out" &
WPID=$!
ha_track $WPID

# Kill the leader once a fifth of the creates are acknowledged.
for _ in $(seq 1200); do
  n=$(grep -c ' ack ' "$HA_DIR/writes" 2>/dev/null || true)
  [ "${n:-0}" -ge $((COUNT / 5)) ] && break
  kill -0 $WPID 2>/dev/null || break
  sleep 0.05
done
leader=$(ha_etcd_leader)
tk=$(date +%s.%N)
{ kill -KILL "${ETCD_PID[$leader]}"; wait "${ETCD_PID[$leader]}"; } 2>/dev/null || true
kill_ms=$(python3 -c "print(round(($tk - $w0) * 1000))")
ha_log "killed etcd leader e$leader (pid ${ETCD_PID[$leader]}) with SIGKILL after $(grep -c ' ack ' "$HA_DIR/writes") acks"
newleader=$(ha_etcd_leader)
ha_log "new leader e$newleader"
[ "$newleader" != "$leader" ] || fail "the killed member still leads"
wait $WPID || fail "ha_writer failed"
ha_log "writer: $(cat "$HA_DIR/writer.out")"
# The killed member rejoins on its data and catches up.
ha_etcd_member "$leader"
ha_etcd_wait_healthy

ha_verify_writes "$HA_DIR/writes"
python3 - "$HA_DIR/writes" "$kill_ms" "$COUNT" <<'PY'
import sys
path, kill_ms, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rec = [l.split() for l in open(path) if l.strip()]
rec = [(n, o, c, rv, float(s), float(e)) for n, o, c, rv, s, e in rec]
ack = [r for r in rec if r[1] == "ack"]
problems = []
if len(rec) != count:
    problems.append("%d attempts recorded, want %d" % (len(rec), count))
after = [r for r in ack if r[4] > kill_ms]
if not after:
    problems.append("no create begun after the kill was acknowledged")
failed = [r for r in rec if r[1] != "ack"]
ends = sorted([kill_ms] + [r[5] for r in ack if r[5] >= kill_ms])
gap = max((b - a for a, b in zip(ends, ends[1:])), default=0)
print("acknowledged before the kill %d, after it %d; creates begun after the kill: first "
      "acknowledged %.0f ms after it; longest time without an acknowledgement %.0f ms; "
      "failures end %.0f ms after the kill"
      % (sum(1 for r in ack if r[5] < kill_ms), len(after),
         min((r[5] for r in after), default=-1) - kill_ms, gap,
         max((r[5] for r in failed), default=kill_ms) - kill_ms))
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
PY
ha_log "drill_etcd_leader_kill: all checks passed"
