#!/usr/bin/env bash
# options_cli.sh -- the kplane command line: options, help, a busy port and
# the data dir's mode, against the real binary.
#
# Usage: options_cli.sh PATH-TO-KPLANE
#
# What it proves: every subcommand names an unknown option and exits 2; an
# option missing its value says so; every subcommand's --help exits 0 with
# its usage; controller-manager --help lists exactly the controllers that
# --controllers accepts; a port in use is named with the flag that picks
# another (--listen, --metrics-listen); a data dir kplane creates is 0700
# (missing parents too, whatever the umask); an existing one that group or
# others may write is refused (path, mode, chmod 700) before anything is
# written into it; one they may only read starts with a warning.
#
# The servers listen on 127.0.0.1 port 0 and are stopped by pid on exit.
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# mode PATH: its permission bits in octal, as stat prints them (700, 2775).
mode() { stat -c %a "$1"; }

# start_server NAME DIR [ARGS...]: a kplane server (API only) on a free port
# in the background; waits for its "serving" line (60 s at most) and sets
# PORT. stderr goes to $TMP/NAME.err.
start_server() {
    local name=$1 dir=$2
    shift 2
    "$KPLANE" server --data-dir "$dir" --listen 127.0.0.1:0 --nodes 0 --no-controllers \
        --no-scheduler "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    BG_PIDS+=($!)
    local pid=$! i
    for ((i = 0; i < 600; i++)); do
        if grep -q "is serving on" "$TMP/$name.out" 2>/dev/null; then
            PORT=$(sed -n 's|.*https://127\.0\.0\.1:\([0-9]*\);.*|\1|p' "$TMP/$name.out")
            [[ -n $PORT ]] || fail "$name: no port in: $(cat "$TMP/$name.out")"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || fail "$name: exited before serving: $(cat "$TMP/$name.err")"
        sleep 0.1
    done
    fail "$name: not serving after 60 s: $(cat "$TMP/$name.err")"
}

stop_server() { # stop_server: the last one started
    local pid=${BG_PIDS[-1]}
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    unset 'BG_PIDS[-1]'
}

SUBCOMMANDS=(server apiserver controller-manager scheduler node store lab version)

step "unknown options name themselves (exit 2)"
for cmd in "${SUBCOMMANDS[@]}"; do
    expect_fail "$cmd --bogus" 2 "^kplane: unknown option --bogus$" "$KPLANE" "$cmd" --bogus
    expect_fail "$cmd --bogus=1" 2 "^kplane: unknown option --bogus$" "$KPLANE" "$cmd" --bogus=1
    expect_fail "$cmd -Z" 2 "^kplane: unknown option -Z$" "$KPLANE" "$cmd" -Z
    grep -q "Run 'kplane $cmd --help' for usage." "$TMP/err" || fail "$cmd: no hint: $(cat "$TMP/err")"
done
expect_fail "kplane --bogus" 2 "^kplane: unknown option --bogus$" "$KPLANE" --bogus
expect_fail "unknown command" 2 "^kplane: unknown command 'bogus'$" "$KPLANE" bogus
expect_fail "missing value" 2 "^kplane: option --listen needs a value$" "$KPLANE" server --listen
expect_fail "missing value" 2 "^kplane: option --kubeconfig needs a value$" \
    "$KPLANE" scheduler --kubeconfig
expect_fail "version args" 2 "version takes no arguments" "$KPLANE" version extra
expect_fail "apiserver without --store" 2 "--store URL is required" "$KPLANE" apiserver

step "every --help exits 0 with its usage"
for cmd in "${SUBCOMMANDS[@]}"; do
    for how in "$cmd --help" "$cmd -h" "help $cmd"; do
        # shellcheck disable=SC2086 # $how is words on purpose
        out=$("$KPLANE" $how 2>&1) || fail "'kplane $how' exited $?"
        grep -q "Usage: kplane $cmd" <<<"$out" || fail "'kplane $how' printed no usage: $out"
    done
done
out=$("$KPLANE" --help) || fail "kplane --help exited $?"
for cmd in "${SUBCOMMANDS[@]}"; do
    grep -Eq "^  $cmd +[a-z]" <<<"$out" || fail "kplane --help does not list $cmd: $out"
done
out=$("$KPLANE" version) || fail "kplane version exited $?"
[[ $out == "kplane version "* ]] || fail "kplane version printed '$out'"

step "controller-manager --help lists the controllers --controllers accepts"
help=$("$KPLANE" controller-manager --help)
# The names: the lines after "--controllers", up to the next option or to
# a parenthesised note (csrsigning's).
names=$(sed -n '/--controllers/,/^  --workers/p' <<<"$help" | sed '1d;$d' | sed '/^ *(/,$d' |
    tr -d ' \n' | tr ',' ' ')
[[ -n $names ]] || fail "no controllers in: $help"
for want in replicaset deployment garbagecollector namespace daemonset; do
    grep -qw "$want" <<<"$names" || fail "$want missing from the list: $names"
done
# Each listed name passes --controllers' check (it fails later, on the
# kubeconfig); a name not in the table does not.
for n in $names; do
    expect_fail "--controllers $n" 1 "reading $TMP/none" \
        "$KPLANE" controller-manager --controllers "$n" --kubeconfig "$TMP/none"
done
expect_fail "--controllers bogus" 2 "unknown controller 'bogus'" \
    "$KPLANE" controller-manager --controllers replicaset,bogus --kubeconfig "$TMP/none"

step "a data dir kplane creates is 0700, parents too, whatever the umask"
old_umask=$(umask)
umask 000
start_server new "$TMP/new/a/b"
umask "$old_umask"
for d in "$TMP/new" "$TMP/new/a" "$TMP/new/a/b"; do
    [[ $(mode "$d") == 700 ]] || fail "$d: mode $(mode "$d"), want 700"
done
grep -q "warning" "$TMP/new.err" && fail "a 0700 data dir warned: $(cat "$TMP/new.err")"
NEW_PORT=$PORT

step "a port in use is named, with the flag that picks another (exit 1)"
expect_fail "busy --listen" 1 \
    "^kplane: 127\.0\.0\.1:$NEW_PORT is in use; choose another with --listen ADDR:PORT" \
    "$KPLANE" server --data-dir "$TMP/busy" --listen "127.0.0.1:$NEW_PORT"
[[ -e $TMP/busy ]] && fail "a refused start created its data dir"
expect_fail "busy apiserver" 1 "127\.0\.0\.1:$NEW_PORT is in use; choose another with --listen" \
    "$KPLANE" apiserver --store "lmdb:$TMP/busy-store" --data-dir "$TMP/busy" \
    --listen "127.0.0.1:$NEW_PORT"
for cmd in controller-manager scheduler; do
    expect_fail "busy --metrics-listen ($cmd)" 1 \
        "127\.0\.0\.1:$NEW_PORT is in use; choose another with --metrics-listen ADDR:PORT" \
        "$KPLANE" "$cmd" --kubeconfig "$TMP/new/a/b/kubeconfig" --metrics-listen "127.0.0.1:$NEW_PORT"
done
expect_fail "bad --listen" 2 "bad --listen 'nowhere'" "$KPLANE" server --listen nowhere
stop_server

step "a data dir group or others may write is refused, before anything is written"
for m in 775 757 1777; do
    d=$TMP/open$m
    mkdir "$d"
    chmod "$m" "$d"
    want=$(printf '%04o' "$((8#$m & 07777))")
    expect_fail "mode $m" 1 "data dir $d has mode $want: group or others may write" \
        "$KPLANE" server --data-dir "$d" --listen 127.0.0.1:0 --nodes 0
    grep -q "chmod 700 $d" "$TMP/err" || fail "mode $m: no fix named: $(cat "$TMP/err")"
    [[ -z $(ls -A "$d") ]] || fail "mode $m: files written into a refused data dir: $(ls -A "$d")"
    [[ $(mode "$d") == "$m" ]] || fail "mode $m: the refused dir's mode changed to $(mode "$d")"
done

step "a data dir group or others may only read starts, with a warning"
mkdir "$TMP/read"
chmod 750 "$TMP/read"
start_server read "$TMP/read"
grep -q "warning: data dir $TMP/read has mode 0750: group or others may read it" \
    "$TMP/read.err" || fail "no warning for 0750: $(cat "$TMP/read.err")"
grep -q "chmod 700 $TMP/read" "$TMP/read.err" || fail "no fix named: $(cat "$TMP/read.err")"
stop_server

echo "options_cli.sh: ok"
