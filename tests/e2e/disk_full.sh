#!/usr/bin/env bash
# disk_full.sh KPLANE [KUBECTL] -- a full disk, end to end: the server's data dir is a
# 64 MB tmpfs, most of it taken by a filler file; several clients create
# ConfigMaps until the store is out of space (disk_full.py fill), recording
# every acknowledged create with its resourceVersion. Then
#   - refused writes get kube-apiserver's answer for a full etcd (500,
#     "etcdserver: mvcc: database space exceeded");
#   - kubectl says "Error from server: etcdserver: mvcc: database space
#     exceeded", as it does for a full etcd;
#   - /readyz fails with "[-]store failed: reason withheld", /livez is ok;
#   - the filler is deleted, and writes resume within 5 s, no restart;
#   - every acknowledged write is there with its resourceVersion, and again
#     after a kill -9 and a restart.
# Needs root (mount); skipped (exit 77) otherwise.
set -euo pipefail
set -E
trap 'echo "FAIL: disk_full.sh line $LINENO: $BASH_COMMAND (status $?)" >&2' ERR
KP_BIN=$1
KUBECTL=${2:-}
PY=$(dirname "$0")/disk_full.py
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: disk_full.sh mounts a tmpfs and needs root"
  exit 77
fi
. "$(dirname "$0")/lib.sh"

MNT=$KP_DIR/data
ROOM_KB=$((12 * 1024)) # what the filler leaves for the store to fill
mkdir -p "$MNT"
mount -t tmpfs -o size=64m,mode=0700 tmpfs "$MNT" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
cleanup() {
  local rc=$?
  set +e
  kp_stop # before the unmount: the server holds the store open
  umount "$MNT" 2>/dev/null || umount -l "$MNT"
  kp_cleanup "$rc"
}
trap cleanup EXIT

kp_start "${KP_API_ONLY[@]}"
free_kb=$(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ')
fallocate -l $(((free_kb - ROOM_KB) * 1024)) "$MNT/filler"
echo "--- tmpfs: $(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ') KB free for the store"

export KP_PORT KP_TOKEN KP_DIR
ACKS=$KP_DIR/acks
: >"$ACKS"
python3 "$PY" fill "$ACKS"
logged=$(grep -c "no space left on the disk of $MNT/store" "$KP_DIR/server.log" || true)
[ "$logged" = 1 ] || fail "the cause was logged $logged times, want once: $(grep store: "$KP_DIR/server.log" | head -5)"

if [ -n "$KUBECTL" ]; then
  if out=$("$KUBECTL" create configmap while-full --from-literal=a=b 2>&1); then
    fail "kubectl create succeeded on a full store: $out"
  fi
  expect_eq "kubectl's error while full" "$out" "error: failed to create configmap: etcdserver: mvcc: database space exceeded"
fi

echo "--- free the space"
rm -f "$MNT/filler"
python3 "$PY" resume "$ACKS"
grep -q "space is back" "$KP_DIR/server.log" || fail "the recovery was not logged"
python3 "$PY" verify "$ACKS"

echo "--- kill -9 and restart"
kill -KILL "$KP_PID"
wait "$KP_PID" 2>/dev/null || true
kp_restart "${KP_API_ONLY[@]}"
python3 "$PY" verify "$ACKS"

if grep -En "ERROR: (Address|Leak)Sanitizer|runtime error:" "$KP_DIR/server.log"; then
  fail "sanitizer errors in the server log"
fi
echo "PASS"
