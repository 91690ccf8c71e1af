#!/usr/bin/env bash
# labs.sh KPLANE -- `kplane lab`: the list, and each lab run for real, with
#   - its exit status 0 and its table, with the seed's answers filled in as
#     the run observed them (exercise: a new ReplicaSet for the image, the
#     same one scaled for the count, the deployment controller deciding,
#     the replicaset controller creating pods; kill-the-truth: nothing
#     acknowledged lost, revisions in order; central-brain: the job
#     controller's invariant not held while it is down, caught up after,
#     the others held throughout; polling-vs-watching: no list by the
#     watching manager, lists that found nothing changed by the polling one,
#     more objects received by polling than by watching, every change met);
#   - its `@lab` lines (KPLANE_LAB_EVENTS=1) each one JSON object, the last
#     one {"done":1};
#   - nothing left behind: no process whose command line names the lab's
#     TMPDIR, no port it or they listened on, the lab's directory gone
#     (labs_lib.sh);
# and a lab interrupted with SIGINT: exit 130, done 0, nothing left behind.
set -euo pipefail
KP_BIN=$1
. "$(dirname "$0")/labs_lib.sh"
labs_init kp-labs

echo "--- kplane lab list"
list=$("$KP_BIN" lab list)
echo "$list"
for name in exercise polling-vs-watching kill-the-truth central-brain; do
  grep -Eq "^$name +00[37] " <<<"$list" || fail "lab list does not show $name"
done
out=$("$KP_BIN" lab run nope 2>&1) && fail "an unknown lab ran"
grep -q "unknown lab 'nope'" <<<"$out" || fail "unknown lab: $out"

run_lab exercise 180
f=$T/exercise.out
expect_line "$f" "the answers" "^Investigation 003's exercise, revealed"
expect_line "$f" "image" "^Image decision +a NEW ReplicaSet web-[0-9a-z]+ \(pod-template-hash"
expect_line "$f" "count" "^Count decision +the SAME ReplicaSet web-[0-9a-z]+ .*scaled 3->5"
expect_line "$f" "who decides" "^Initial reconciler +deployment-controller "
expect_line "$f" "who converges" "^Pod convergence +replicaset-controller "

run_lab kill-the-truth 180
f=$T/kill-the-truth.out
expect_line "$f" "lost" "^lost after restart +0 \(missing 0, changed 0\)"
expect_line "$f" "order" "^revisions in order +yes: "
expect_line "$f" "acknowledged" "^acknowledged .* [1-9][0-9]* \([1-9][0-9]* before the kill, [1-9][0-9]* after"
expect_line "$f" "downtime" "^downtime .* [0-9]+ ms"

run_lab central-brain 180
f=$T/central-brain.out
expect_line "$f" "deployment" "^Deployment replicas follow spec.* held: created to 2.* held: scaled to 4.* held: scaled to 3"
expect_line "$f" "pods" "^a deleted pod is replaced.* held: .* held: .* held: "
expect_line "$f" "job" "^a Job runs to completion \(job\) +held: .*NOT held: Job during: 0 pods.*caught up: "

run_lab polling-vs-watching 180
f=$T/polling-vs-watching.out
expect_line "$f" "lists" "^of them, lists +0 +[1-9][0-9]* *$"
expect_line "$f" "unchanged" "^lists that found nothing changed +0 +[1-9][0-9]* *$"
expect_line "$f" "missed" "^changes not met within 15 s +0 +0 *$"
python3 - "$f" <<'PY' || fail "polling received no more objects than watching"
import re, sys
for l in open(sys.argv[1]):
    m = re.match(r"objects received \(list items, watch events\) +(\d+) +(\d+)", l)
    if m:
        sys.exit(0 if int(m.group(2)) > int(m.group(1)) else 1)
sys.exit(1)
PY

echo "--- SIGINT in the middle of a lab"
TMPDIR=$T KPLANE_LAB_EVENTS=1 "$KP_BIN" lab run exercise >"$T/sigint.out" 2>&1 &
LAB_PID=$!
for _ in $(seq 600); do
  grep -q "serving on" "$T/sigint.out" 2>/dev/null && break
  kill -0 "$LAB_PID" 2>/dev/null || fail "the lab ended before serving"
  sleep 0.1
done
[ -n "$(leftovers)" ] || fail "no server running to be stopped"
kill -INT "$LAB_PID"
rc=0
wait "$LAB_PID" || rc=$?
LAB_PID=
[ "$rc" = 130 ] || fail "interrupted lab exited $rc, want 130"
tail -n 1 "$T/sigint.out" | grep -q '^@lab {"done":0,"error":"interrupted (SIGINT)"}$' ||
  fail "last line: $(tail -n 1 "$T/sigint.out")"
[ -z "$(leftovers)" ] || fail "the interrupted lab left processes: $(leftovers)"
[ -z "$(ls -A "$T" | grep '^kplane-lab-' || true)" ] || fail "the interrupted lab left its directory"
echo "PASS"
