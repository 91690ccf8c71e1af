# labs_lib.sh -- sourced by labs.sh and labs_ha.sh: a temp dir $T for the
# labs' own temp dirs (TMPDIR=$T), what they left behind, and the checks every
# lab run gets.
#
#   labs_init PREFIX      makes $T, traps EXIT: kills leftovers by pid, prints
#                         the tail of each $T/*.out on failure, removes $T
#   leftovers             pids of processes whose command line names $T's labs
#   fail MSG, expect_line FILE WHAT REGEX
#   check_lab_run NAME    $T/NAME.out: printed without its `@lab` lines, which
#                         must each be a JSON object, the last {"done":1},
#                         tables ended in order; nothing left: no process,
#                         no lab directory
#   run_lab NAME SECONDS  runs it (events on) within SECONDS x $SLOW (default
#                         1), sampling the ports it and its processes listen
#                         on; then check_lab_run, and every such port closed
# A test may set LAB_PID (a lab running in the background) for the trap.

LAB_PID=
SLOW=${SLOW:-1}

leftovers() { pgrep -f -- "$T/kplane-lab-" || true; }

labs_cleanup() {
  local rc=$?
  set +e
  [ -n "$LAB_PID" ] && kill -KILL "$LAB_PID" 2>/dev/null
  for p in $(leftovers); do kill -KILL "$p" 2>/dev/null; done
  if [ $rc -ne 0 ]; then
    for f in "$T"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 80 "$f"; }; done
  fi
  rm -rf "$T"
  exit $rc
}

labs_init() {
  T=$(mktemp -d "${TMPDIR:-/tmp}/$1-XXXXXX")
  trap labs_cleanup EXIT
}

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_line() { # expect_line FILE WHAT REGEX
  grep -Eq -- "$3" "$1" || fail "$2: no line matching /$3/ in $1"
}

check_lab_run() {
  local name=$1
  grep -v '^@lab ' "$T/$name.out"
  python3 - "$T/$name.out" <<'PY' || fail "lab $name: its @lab lines"
import json, sys
evs = [json.loads(l[5:]) for l in open(sys.argv[1]) if l.startswith("@lab ")]
assert evs, "no @lab lines"
assert all(isinstance(e, dict) for e in evs)
assert evs[-1] == {"done": 1}, evs[-1]
tables = [e["table"] for e in evs if "table" in e]
ends = [e["end"] for e in evs if "end" in e]
assert tables and tables == ends, (tables, ends)
PY
  [ -z "$(leftovers)" ] || fail "lab $name left processes: $(leftovers | xargs ps -o pid,args -p)"
  [ -z "$(ls -A "$T" | grep '^kplane-lab-' || true)" ] || fail "lab $name left its directory"
}

# The ports the lab (pid $1: its proxies) and the processes it started
# listen on, while it runs (ss, if installed).
ports_of_lab() {
  command -v ss >/dev/null || return 0
  local pids
  pids=$({ echo "$1"; leftovers; } | paste -sd'|')
  [ -n "$pids" ] || return 0
  ss -ltnpH 2>/dev/null | grep -E "pid=($pids)," | awk '{print $4}' | sed 's/.*://' | sort -u
}

run_lab() { # run_lab NAME SECONDS
  local name=$1 limit=$(($2 * SLOW)) start end pid ports=''
  echo "--- kplane lab run $name"
  start=$(date +%s.%N)
  TMPDIR=$T KPLANE_LAB_EVENTS=1 timeout $((limit + 60)) "$KP_BIN" lab run "$name" \
    >"$T/$name.out" 2>&1 &
  pid=$!
  # Every port the lab's processes listen on while it runs, sampled.
  while kill -0 $pid 2>/dev/null; do
    ports=$(printf '%s\n%s\n' "$ports" "$(ports_of_lab $pid)" | grep . | sort -u || true)
    sleep 0.5
  done
  wait $pid || fail "lab $name exited $?"
  end=$(date +%s.%N)
  check_lab_run "$name"
  if [ -n "$ports" ] && command -v ss >/dev/null; then
    for p in $ports; do
      ! ss -ltnH "sport = :$p" | grep -q . || fail "lab $name left port $p listening"
    done
    echo "--- $(echo "$ports" | wc -l) ports the lab listened on are closed"
  fi
  local took
  took=$(python3 -c "print(round($end - $start, 1))")
  echo "--- lab $name took $took s"
  python3 -c "import sys; sys.exit(0 if $took <= $limit else 1)" ||
    fail "lab $name took $took s (limit $limit)"
}

