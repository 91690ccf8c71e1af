#!/usr/bin/env bash
# labs.sh KPLANE -- `kplane lab`: the list, and each lab run for real, with
#   - its exit status 0 and its table, with the seed's answers filled in as
#     the run observed them (exercise: a new ReplicaSet for the image, the
#     same one scaled for the count, the deployment controller deciding,
#     the replicaset controller creating pods; kill-the-truth: nothing
#     acknowledged lost, revisions in order; central-brain: the job
#     controller's invariant not held while it is down, caught up after,
#     the others held throughout);
#   - its `@lab` lines (KPLANE_LAB_EVENTS=1) each one JSON object, the last
#     one {"done":1};
#   - nothing left behind: no process whose command line names the lab's
#     TMPDIR, and the lab's directory gone;
# and a lab interrupted with SIGINT: exit 130, done 0, nothing left behind.
set -euo pipefail
KP_BIN=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/kp-labs-XXXXXX")
LAB_PID=

# Anything a lab started that is still running (there should be none): by pid.
leftovers() { pgrep -f -- "$T/kplane-lab-" || true; }

cleanup() {
  local rc=$?
  set +e
  [ -n "$LAB_PID" ] && kill -KILL "$LAB_PID" 2>/dev/null
  for p in $(leftovers); do kill -KILL "$p" 2>/dev/null; done
  if [ $rc -ne 0 ]; then
    for f in "$T"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 60 "$f"; }; done
  fi
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_line() { # expect_line FILE WHAT REGEX
  grep -Eq -- "$3" "$1" || fail "$2: no line matching /$3/ in $1"
}

echo "--- kplane lab list"
list=$("$KP_BIN" lab list)
echo "$list"
for name in exercise kill-the-truth central-brain; do
  grep -Eq "^$name +00[37] " <<<"$list" || fail "lab list does not show $name"
done
out=$("$KP_BIN" lab run nope 2>&1) && fail "an unknown lab ran"
grep -q "unknown lab 'nope'" <<<"$out" || fail "unknown lab: $out"

# run_lab NAME: run it (events on), check status, event lines and leftovers.
run_lab() {
  local name=$1 start end
  echo "--- kplane lab run $name"
  start=$(date +%s.%N)
  TMPDIR=$T KPLANE_LAB_EVENTS=1 timeout 240 "$KP_BIN" lab run "$name" >"$T/$name.out" 2>&1 ||
    fail "lab $name exited $?"
  end=$(date +%s.%N)
  grep -v '^@lab ' "$T/$name.out"
  python3 - "$T/$name.out" <<'PY'
import json, sys
lines = [l[5:] for l in open(sys.argv[1]) if l.startswith("@lab ")]
evs = [json.loads(l) for l in lines]
assert evs, "no @lab lines"
assert all(isinstance(e, dict) for e in evs)
assert evs[-1] == {"done": 1}, evs[-1]
tables = [e["table"] for e in evs if "table" in e]
ends = [e["end"] for e in evs if "end" in e]
assert tables and tables == ends, (tables, ends)
PY
  [ -z "$(leftovers)" ] || fail "lab $name left processes: $(leftovers | xargs ps -o pid,args -p)"
  [ -z "$(ls -A "$T" | grep '^kplane-lab-' || true)" ] || fail "lab $name left its directory"
  echo "--- lab $name took $(python3 -c "print(round($end - $start, 1))") s"
}

run_lab exercise
f=$T/exercise.out
expect_line "$f" "the answers" "^Investigation 003's exercise, revealed"
expect_line "$f" "image" "^Image decision +a NEW ReplicaSet web-[0-9a-z]+ \(pod-template-hash"
expect_line "$f" "count" "^Count decision +the SAME ReplicaSet web-[0-9a-z]+ .*scaled 3->5"
expect_line "$f" "who decides" "^Initial reconciler +deployment-controller "
expect_line "$f" "who converges" "^Pod convergence +replicaset-controller "

run_lab kill-the-truth
f=$T/kill-the-truth.out
expect_line "$f" "lost" "^lost after restart +0 \(missing 0, changed 0\)"
expect_line "$f" "order" "^revisions in order +yes: "
expect_line "$f" "acknowledged" "^acknowledged .* [1-9][0-9]* \([1-9][0-9]* before the kill, [1-9][0-9]* after"
expect_line "$f" "downtime" "^downtime .* [0-9]+ ms"

run_lab central-brain
f=$T/central-brain.out
expect_line "$f" "deployment" "^Deployment replicas follow spec.* held: created to 2.* held: scaled to 4.* held: scaled to 3"
expect_line "$f" "pods" "^a deleted pod is replaced.* held: .* held: .* held: "
expect_line "$f" "job" "^a Job runs to completion \(job\) +held: .*NOT held: Job during: 0 pods.*caught up: "

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
