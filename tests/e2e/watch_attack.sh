#!/usr/bin/env bash
# watch_attack.sh KPLANE [KUBECTL] -- watchers that never read and a 1 MiB
# object updated again and again, against a real server (API only); see
# watch_attack.py for the checks and the figures it prints.
#
# Under CTest (an ASan build on a shared machine) the counts are scaled to
# run in about two minutes, with budgets scaled to match so that every limit
# is still crossed: 200 watchers (1 MiB queue budget each, the default) while 4,000
# ConfigMaps of 1 KB are updated (4.8 MB per watcher's stream), twice, and 30
# updates of 1 MiB through an 8 MiB watch cache. WATCH_ATTACK_FULL=1 runs the
# issue's figures with the default budgets (1,000 watchers, 20,000 writes,
# 1,000 updates of 1 MiB). ASan's quarantine is capped so that the RSS
# measured is the server's, not freed memory ASan holds back (256 MB by
# default).
set -euo pipefail
KP_BIN=$1
KUBECTL=${2:-}
. "$(dirname "$0")/lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
ulimit -n 8192 2>/dev/null || true
if [ "${WATCH_ATTACK_FULL:-}" = 1 ]; then
  kp_start "${KP_API_ONLY[@]}"
else
  export WATCHERS=200 WRITES=4000 BASE_WRITES=4000 DEADLINE_WATCHERS=50 BIG_UPDATES=30
  export CACHE_BYTES=$((8 << 20))
  kp_start "${KP_API_ONLY[@]}" --watch-cache-bytes 8Mi
fi
/usr/bin/python3 "$(dirname "$0")/watch_attack.py" "$KP_PORT" "$KP_TOKEN" \
  "$KP_DIR/data/ca.crt" "$KP_PID" $KUBECTL
