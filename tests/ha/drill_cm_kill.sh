#!/usr/bin/env bash
# drill_cm_kill.sh KPLANE KUBECTL -- kill -9 the leading controller manager
# in the middle of a scale from 1 to 50 replicas: the standby takes over
# within the lease duration (4 s, plus slack for a loaded machine), the scale
# completes, and the number of pods (sampled through a watch, every event)
# never exceeds 50 plus maxSurge (25%: 13). The controller managers' API
# clients are rate limited (20 requests/s) so that the scale takes a few
# seconds and the kill lands in its middle.
. "$(dirname "$0")/harness.sh"
HA_CM_FLAGS=(--kube-api-qps 20 --kube-api-burst 20)
ha_start_all

ha_watch_pods 1 "$HA_DIR/pods.ndjson"
hk 0 create deployment web --image=nginx --replicas=1 >/dev/null
hk 0 rollout status deploy/web --timeout=60s >/dev/null
leader=$(ha_cm_leader) || fail "no controller manager leads"
standby=$((1 - leader))

hk 0 scale deploy web --replicas=50 >/dev/null
for _ in $(seq 600); do
  n=$(grep -c '"type":"ADDED"' "$HA_DIR/pods.ndjson" || true)
  [ "${n:-0}" -ge 10 ] && break
  sleep 0.02
done
t0=$(date +%s.%N)
{ kill -KILL "${CM_PID[$leader]}"; wait "${CM_PID[$leader]}"; } 2>/dev/null || true
at_kill=$(grep -c '"type":"ADDED"' "$HA_DIR/pods.ndjson" || true)
ha_log "kill -9 controller manager $leader (the leader) with ${at_kill} pods created"
for _ in $(seq 200); do
  [ "$(ha_leading "${CM_MPORT[$standby]}" kube-controller-manager)" = 1 ] && break
  sleep 0.05
done
t1=$(date +%s.%N)
expect_eq "the standby leads" "$(ha_leading "${CM_MPORT[$standby]}" kube-controller-manager)" 1
took=$(python3 -c "print(round($t1 - $t0, 2))")
ha_log "standby took over after ${took}s (lease $HA_LEASE)"
# The Lease runs out at most 4 s after the kill; the standby tries every
# 0.5 s (jitter 1.2); the rest is slack for ASan on a busy machine.
python3 -c "import sys; sys.exit(0 if $took <= 9.0 else 1)" || fail "takeover took ${took}s"

hk 1 rollout status deploy/web --timeout=120s >/dev/null
t2=$(date +%s.%N)
ha_log "50 replicas available $(python3 -c "print(round($t2 - $t0, 2))")s after the kill"
sleep 1
read -r peak live created _ <<<"$(ha_pod_max "$HA_DIR/pods.ndjson")"
ha_log "pods: created $created, at most $peak at once, $live now (limit 50 + maxSurge 13 = 63)"
[ "$at_kill" -lt 50 ] || fail "the scale had finished before the kill"
[ "$peak" -le 63 ] || fail "$peak pods at once, more than 63"
expect_eq "pods now" "$live" 50
expect_eq "pods ever created (none twice)" "$created" 50
ha_log "drill_cm_kill: all checks passed"
