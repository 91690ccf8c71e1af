#!/usr/bin/env bash
# labs_ha.sh KPLANE [SLOWDOWN] -- the labs of investigation 007 that need etcd (skipped,
# 77, where it is not installed), each run for real:
#   - two-copies: the naive design labelled as such; on one history a
#     ReplicaSet of 5 never had more than 5 pods, the two writes at one
#     instant got one 200 and one 409 Conflict, and the minority side of the
#     partition refused its write; on the naive design both writes were
#     accepted (200 and 200) and both sides of the partition accepted theirs.
#     (More than 5 pods on the naive design is likely, not certain: printed.)
#   - store-unreachable: its three tables, a write refused while the store
#     was cut, and a recovery;
# each exiting 0 within its time, its `@lab` lines JSON ending {"done":1},
# and nothing left behind: no process whose command line names the lab's
# TMPDIR, no listening port of those processes, the lab's directory gone.
# Time limits: two-copies 180 s (the issue's 3 minutes on 2 cores), times
# SLOWDOWN (default 1; the sanitizer build passes 2).
set -euo pipefail
KP_BIN=$1
SLOW=${2:-1}
if [ -z "${KP_ETCD_BIN:-}" ] && ! command -v etcd >/dev/null; then
  echo "SKIP: etcd is not installed (Debian: etcd-server)"
  exit 77
fi
. "$(dirname "$0")/labs_lib.sh"
labs_init kp-labs-ha

list=$("$KP_BIN" lab list)
for name in two-copies store-unreachable; do
  grep -Eq "^$name +007 " <<<"$list" || fail "lab list does not show $name"
done

run_lab two-copies 180
f=$T/two-copies.out
expect_line "$f" "the naive design, said to be" "naive design \(deliberately wrong\)"
expect_line "$f" "the table" "^Breaking our design"
# One history: at most 5 pods, one 409, the minority refused.
expect_line "$f" "one history: ReplicaSet of 5" "\] one history \(b\):.* at most 5 pods on api-1 and 5 on api-2 at once"
expect_line "$f" "one history: 200 and 409" "\] one history \(c\): .*-> (200; .*-> 409 Conflict|409 Conflict.*-> 200;)"
expect_line "$f" "one history: minority refused" "\] one history \(d\): majority side: 4 via api-1 -> 200 .*minority side: 6 via api-2 -> (5[0-9][0-9]|no answer)"
# The naive design: both accepted, twice.
expect_line "$f" "two copies: both accepted" "\] two copies \(c\): .*-> 200; B set it to 2 via server 2 -> 200;"
expect_line "$f" "two copies: both sides of the partition" "\] two copies \(d\): server 1 accepted 4 \(200,.*then 7 \(200,.*server 2 accepted 6 \(200,.*then 1 \(200,"
peak=$(sed -n 's/^pods  *\([0-9]*\)  *[0-9]*$/\1/p' "$f")
echo "--- two copies: at most $peak pods at once for a ReplicaSet of 5 (the seed got 8)"

run_lab store-unreachable 150
f=$T/store-unreachable.out
expect_line "$f" "observe table" "^Observe: the API server cut off from etcd"
expect_line "$f" "recovery table" "^Recovery"
expect_line "$f" "predict table" "^Predict / Observe / Reflect"
expect_line "$f" "silent table" "^Observe: the same, when the store does not answer at all"
expect_line "$f" "the write refused" "^a write: scale web to 5 \(merge patch\) +(5[0-9][0-9]|no answer)"
expect_line "$f" "recovered" "^web scaled to 5, all available +[0-9.]+ m?s"
echo "labs_ha: all checks passed"
