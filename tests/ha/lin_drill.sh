#!/bin/sh
# lin_drill.sh -- record a concurrent history on a store under a fault, then
# check that it is linearizable (lin_record, lin_check; see lincheck.h).
#
#   lin_drill.sh lmdb LIN_RECORD LIN_CHECK   the embedded store; the process
#                                            that has it open is killed with
#                                            SIGKILL twice mid-run
#   lin_drill.sh etcd LIN_RECORD LIN_CHECK   one local etcd member (under
#                                            with-etcd.sh run), killed with
#                                            SIGKILL and restarted
#                                            KP_LIN_KILLS (3) times mid-run
#
# Environment: KP_LIN_SECONDS (default 8; etcd: 12), KP_LIN_THREADS (6),
# KP_LIN_KEYS (4). The history is kept (its path printed) when a check fails,
# or always with KP_LIN_KEEP=1. KP_LIN_LENIENT=1 records writes that failed
# with KP_EUNAVAILABLE as of unknown outcome instead of as not applied (see
# lin_record.c), to look past that one rule of store.h.
set -eu
mode=$1
rec=$2
chk=$3
secs=${KP_LIN_SECONDS:-8}
[ "$mode" = etcd ] && secs=${KP_LIN_SECONDS:-12}
threads=${KP_LIN_THREADS:-6}
keys=${KP_LIN_KEYS:-4}
dir=$(mktemp -d "${TMPDIR:-/tmp}/kp-lin-XXXXXX")
hist=$dir/history
keep=0
recpid=
cleanup() {
  [ -n "$recpid" ] && kill "$recpid" 2>/dev/null || true
  if [ "$mode" = etcd ] && [ -n "${KP_TEST_ETCD:-}" ]; then
    "$KP_TEST_ETCD" stop "$dir/etcd" || true
  fi
  if [ $keep = 1 ] || [ -n "${KP_LIN_KEEP:-}" ]; then
    echo "lin_drill: history kept in $hist" >&2
    rm -rf "$dir/store" "$dir/etcd"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case $mode in
  lmdb)
    keep=1
    "$rec" "lmdb:$dir/store" --threads "$threads" --keys "$keys" --seconds "$secs" \
      --crashes 2 --out "$hist"
    crashes=$(grep -c '^# crash' "$hist" || true)
    if [ "$crashes" != 2 ]; then
      echo "lin_drill: expected 2 crashes in the history, found $crashes" >&2
      exit 1
    fi
    ;;
  etcd)
    if [ -z "${KP_TEST_ETCD:-}" ]; then
      echo "lin_drill: run me under tests/store/with-etcd.sh run" >&2
      exit 2
    fi
    keep=1
    url=$("$KP_TEST_ETCD" start "$dir/etcd")
    "$rec" "$url" --threads "$threads" --keys "$keys" --seconds "$secs" --out "$hist" \
      --lenient-unavailable "${KP_LIN_LENIENT:-0}" &
    recpid=$!
    kills=${KP_LIN_KILLS:-3}
    gap=$((secs / (kills + 1)))
    [ $gap -ge 2 ] || gap=2
    i=0
    while [ $i -lt "$kills" ]; do
      sleep $((gap - 1))
      pid=$(cat "$dir/etcd/etcd.pid")
      echo "lin_drill: kill -9 etcd ($pid)" >&2
      kill -9 "$pid"
      echo "# fault: etcd $pid killed with SIGKILL" >>"$hist"
      sleep 1
      "$KP_TEST_ETCD" restart "$dir/etcd" >/dev/null
      echo "lin_drill: etcd restarted" >&2
      i=$((i + 1))
    done
    rc=0
    wait "$recpid" || rc=$?
    recpid=
    if [ $rc != 0 ]; then
      echo "lin_drill: lin_record failed ($rc)" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 lmdb|etcd LIN_RECORD LIN_CHECK" >&2
    exit 2
    ;;
esac
"$chk" --min-ops 200 "$hist"

# The check must be able to fail on this very history: turn the last read
# into a stale one (the value and revision of the key's first create, long
# overwritten) and expect it flagged, with that key.
set -- $(awk '$1 == "I" && $4 == "get" { k = $5; id = $2 } END { print k, id }' "$hist")
key=$1
gid=$2
set -- $(awk -v k="$key" '$1 == "I" && $4 == "create" && $5 == k { c[$2] = $6 }
  $1 == "R" && ($2 in c) && $4 == "ok" { print $5, c[$2]; exit }' "$hist")
awk -v g="$gid" -v r="$1" -v v="$2" '$1 == "R" && $2 == g { print "R", $2, $3, "ok", r, v; next }
  { print }' "$hist" >"$dir/damaged"
rc=0
"$chk" "$dir/damaged" >"$dir/damaged.out" || rc=$?
if [ $rc != 1 ] || ! grep -q "key $key: not linearizable" "$dir/damaged.out"; then
  echo "lin_drill: a stale final read of $key (rev $1) was not flagged (exit $rc):" >&2
  cat "$dir/damaged.out" >&2
  exit 1
fi
echo "lin_drill: and a stale read planted in it is flagged: $(grep -m1 'cannot be linearized' "$dir/damaged.out")"
keep=0
