#!/usr/bin/env bash
# drill_apiserver_kill.sh KPLANE KUBECTL -- kill -9 one API server: the
# components' client SDK (--server URL0,URL1) fails over to the other listed
# server and work goes on: a scale through the survivor is carried out
# (controller manager, scheduler and simulated nodes all act). Then the
# killed server comes back, the other is killed, and work goes on again.
. "$(dirname "$0")/harness.sh"
ha_start_all

# ready PODS of deploy/web as server I reports it
ready() { hk "$1" get deploy web -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true; }
wait_ready() { # I N WHAT
  local t0 t1
  t0=$(date +%s.%N)
  for _ in $(seq 600); do
    [ "$(ready "$1")" = "$2" ] && [ "$(hk "$1" get pods -l app=web --no-headers 2>/dev/null | grep -c Running)" = "$2" ] && break
    sleep 0.1
  done
  t1=$(date +%s.%N)
  expect_eq "$3: ready replicas" "$(ready "$1")" "$2"
  ha_log "$3: $2 ready after $(python3 -c "print(round($t1 - $t0, 1))")s"
}

hk 0 create deployment web --image=nginx --replicas=3 >/dev/null
wait_ready 0 3 "start"

ha_log "kill -9 apiserver 0 (${API_URL[0]}), the first listed"
ha_kill9 "${API_PID[0]}"
hk 1 scale deploy web --replicas=6 >/dev/null
wait_ready 1 6 "scale to 6 through apiserver 1"
# The nodes' heartbeats go on through server 1: all still Ready.
n=$(hk 1 get nodes --no-headers | grep -c ' Ready' || true)
expect_eq "nodes Ready" "$n" 3

ha_log "apiserver 0 back on its port; kill -9 apiserver 1"
ha_api_start 0
ha_kill9 "${API_PID[1]}"
hk 0 scale deploy web --replicas=2 >/dev/null
wait_ready 0 2 "scale to 2 through apiserver 0"
for _ in $(seq 100); do
  [ "$(hk 0 get pods -l app=web --no-headers 2>/dev/null | wc -l)" = 2 ] && break
  sleep 0.1
done
expect_eq "pods of web" "$(hk 0 get pods -l app=web --no-headers | wc -l)" 2
# Every component is still running (none gave up on a dead server).
for p in "${CM_PID[@]}" "${SCHED_PID[@]}" "$NODE_PID"; do
  kill -0 "$p" 2>/dev/null || fail "component $p exited"
done
ha_log "drill_apiserver_kill: all checks passed"
