#!/usr/bin/env bash
# drill_lin_faults.sh KPLANE KUBECTL HA_WRITER LIN_RECORD LIN_CHECK -- the
# store's linearizability on a 3-member etcd cluster under the drills'
# faults: lin_record (tests/ha/lin_record.c) runs concurrent creates, CAS
# updates, deletes and gets on a few keys through every member's endpoint
# while the etcd leader is killed with SIGKILL (and restarted), and then two
# of the three members are stopped with SIGSTOP (no quorum) and continued;
# lin_check then checks the whole history against the register model (ops
# with an unknown outcome may or may not have happened, at any time after
# they began), and the revision order across keys.
. "$(dirname "$0")/harness.sh"
REC=${4:?usage: drill_lin_faults.sh KPLANE KUBECTL HA_WRITER LIN_RECORD LIN_CHECK}
CHK=${5:?usage: drill_lin_faults.sh KPLANE KUBECTL HA_WRITER LIN_RECORD LIN_CHECK}
ha_etcd_start

hist=$HA_DIR/history
"$REC" "$HA_ETCD_URL" --threads 6 --keys 4 --seconds 16 --out "$hist" \
  >"$HA_DIR/lin_record.log" 2>&1 &
rec_pid=$!
ha_track $rec_pid

sleep 3
leader=$(ha_etcd_leader)
ha_log "kill -9 etcd leader e$leader"
echo "# fault: etcd leader e$leader killed with SIGKILL" >>"$hist"
ha_kill9 "${ETCD_PID[$leader]}"
sleep 2
ha_etcd_member "$leader"
ha_log "e$leader restarted; leader now e$(ha_etcd_leader)"

sleep 3
leader=$(ha_etcd_leader)
other=$(((leader + 1) % 3))
ha_log "SIGSTOP e$leader (leader) and e$other"
echo "# fault: e$leader and e$other stopped" >>"$hist"
ha_stop "${ETCD_PID[$leader]}"
ha_stop "${ETCD_PID[$other]}"
sleep 3
ha_cont "${ETCD_PID[$leader]}"
ha_cont "${ETCD_PID[$other]}"
ha_log "SIGCONT e$leader and e$other"

rc=0
wait $rec_pid || rc=$?
[ $rc = 0 ] || fail "lin_record failed ($rc): $(tail -5 "$HA_DIR/lin_record.log")"
ha_log "lin_record: $(tail -1 "$HA_DIR/lin_record.log")"
"$CHK" --min-ops 200 "$hist" || fail "the history is not linearizable (lin_check above)"
ha_log "drill_lin_faults: linearizable"
