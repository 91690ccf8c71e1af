#!/usr/bin/env bash
# run_python.sh KPLANE SCRIPT -- start a server, run a python3-kubernetes script
# against it with the system's /usr/bin/python3, stop the server.
set -euo pipefail
KP_BIN=$1
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
/usr/bin/python3 "$2" "$KUBECONFIG"
