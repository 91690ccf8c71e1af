# shellcheck shell=bash
# lib.sh -- what the tests/cli scripts share: the kplane binary (their first
# argument), a temp dir and background processes removed and stopped (by
# pid) on exit, and the failure and check helpers.
#
# Source it first thing: . "$(dirname "$0")/lib.sh" "$@"
# The first failure prints "<script>: FAIL: <what>" and exits 1.
set -euo pipefail

CLI_TEST=$(basename "$0")
KPLANE=${1:?usage: $CLI_TEST PATH-TO-KPLANE}
[[ -x $KPLANE ]] || { echo "$CLI_TEST: FAIL: $KPLANE is not an executable" >&2; exit 1; }

TMP=$(mktemp -d)
BG_PIDS=() # background processes to stop on exit
cleanup() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
unset KPLANE_DATA_DIR

fail() { echo "$CLI_TEST: FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }

# expect_fail WHAT CODE PATTERN CMD... : CMD (stdin empty) must exit CODE
# with PATTERN (grep -E) on stderr.
expect_fail() {
    local what=$1 want=$2 pat=$3 rc=0
    shift 3
    "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
    [[ $rc == "$want" ]] || fail "$what: '$*' exited $rc, want $want (stderr: $(cat "$TMP/err"))"
    grep -Eq -- "$pat" "$TMP/err" || fail "$what: stderr of '$*' lacks /$pat/: $(cat "$TMP/err")"
}
