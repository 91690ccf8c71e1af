#!/usr/bin/env bash
# attack_conns.sh KPLANE KUBECTL -- connection floods (issue 14, attacks 1 and 2):
# 10,000 idle peers and 1,000 unauthenticated 3 MiB uploads at once, while
# kubectl must answer within 1 s and RSS grow by less than 100 MB
# (attack_conns.py does the attack and the checks).
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
# A short header timeout keeps the test short; the default is 32 s.
kp_start "${KP_API_ONLY[@]}" --read-header-timeout 6s
HEADER_TIMEOUT=6 /usr/bin/python3 "$(dirname "$0")/attack_conns.py" "$KP_PORT" "$KP_PID" \
  "$KP_DIR/data/ca.crt" "$KP_TOKEN" "$KUBECTL"
