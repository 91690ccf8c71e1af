#!/usr/bin/env bash
# drill_latency.sh KPLANE KUBECTL -- the seed's failure 03 with two API
# servers: each controller manager reaches its API server through a proxy
# that delays every byte by 400 ms each way (proxy.py). A Deployment of 5 is
# rolled out, rolled to a new image twice (the second while the first is under
# way), and has pods deleted under it; through all of it (every event of a
# pod watch) it never has more than 5 + maxSurge (25%: 2) = 7 pods that are
# not terminating, and it ends with 5.
. "$(dirname "$0")/harness.sh"
HA_LEASE=8s HA_RENEW=6s HA_RETRY=1s # a renewal takes several delayed round trips
ha_etcd_start
ha_api_start 0
ha_api_start 1
for i in 0 1; do
  ha_proxy "$i" 400
  HA_COMP_SERVERS=$HA_PROXY_URL ha_cm_start "$i"
  ha_log "controller manager $i -> $HA_PROXY_URL (+400 ms each way) -> ${API_URL[$i]}"
done
ha_sched_start 0
ha_sched_start 1
ha_nodes_start 3
ha_wait_nodes_ready 3
ha_cm_leader >/dev/null || fail "no controller manager leads"
ha_watch_pods 1 "$HA_DIR/pods.ndjson"

t0=$(date +%s.%N)
hk 0 create deployment web --image=nginx:1 --replicas=5 >/dev/null
hk 0 rollout status deploy/web --timeout=120s >/dev/null
ha_log "5 pods available after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")s"
hk 0 set image deploy/web nginx=nginx:2 >/dev/null
sleep 1
hk 1 set image deploy/web nginx=nginx:3 >/dev/null
sleep 1
mapfile -t two < <(hk 1 get pods -l app=web -o name | head -2)
hk 1 delete "${two[@]}" --wait=false >/dev/null
hk 0 rollout status deploy/web --timeout=180s >/dev/null
for _ in $(seq 300); do
  [ "$(hk 0 get pods -l app=web --no-headers 2>/dev/null | wc -l)" = 5 ] && break
  sleep 0.2
done
ha_log "rolled out to nginx:3 after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")s"
sleep 1
read -r peak live created peak_active <<<"$(ha_pod_max "$HA_DIR/pods.ndjson")"
ha_log "pods: created $created; at most $peak_active not terminating at once ($peak with terminating ones); $live now"
[ "$peak_active" -le 7 ] || fail "$peak_active pods at once, more than 5 + maxSurge 2"
expect_eq "pods now" "$live" 5
img=$(hk 1 get pods -l app=web -o jsonpath='{.items[*].spec.containers[0].image}' | tr ' ' '\n' | sort -u)
expect_eq "images" "$img" "nginx:3"
ha_log "drill_latency: all checks passed"
