#!/usr/bin/env bash
# store_cli.sh -- end-to-end test of `kplane store` against a temp data dir.
#
# Usage: store_cli.sh PATH-TO-KPLANE
#
# Every check states what it expects; the first failure prints
# "store_cli.sh: FAIL: <what>" and exits 1.
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

A=$TMP/a # the source data dir
B=$TMP/b # the restore target

ka() { "$KPLANE" store --data-dir "$A" "$@"; }
kb() { "$KPLANE" store --data-dir "$B" "$@"; }

# expect_eq WHAT GOT WANT
expect_eq() {
    [[ $2 == "$3" ]] || fail "$1: got
$2
--- want
$3"
}

# expect_ok WHAT CMD... : run CMD, which must succeed; its stdout is in $OUT.
expect_ok() {
    local what=$1 rc=0
    shift
    "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [[ $rc == 0 ]] || fail "$what: '$*' exited $rc: $(cat "$TMP/err")"
    OUT=$(cat "$TMP/out")
}

# wait_lines FILE N : wait up to 10 s for FILE to have at least N lines.
wait_lines() {
    local i
    for i in $(seq 100); do
        [[ -f $1 && $(wc -l <"$1") -ge $2 ]] && return 0
        sleep 0.1
    done
    fail "$1 has $(wc -l <"$1" 2>/dev/null || echo 0) lines after 10 s, want $2:
$(cat "$1" 2>/dev/null)"
}

# The store's current revision, from status -w json.
revision() {
    local json
    json=$("$KPLANE" store --data-dir "$1" status -w json) || fail "status of $1 failed"
    sed -n 's/.*"revision":\([0-9]*\),.*/\1/p' <<<"$json"
}

step "help, version and usage errors"
expect_ok "--help" "$KPLANE" --help
grep -q "store" <<<"$OUT" || fail "--help does not mention store: $OUT"
expect_ok "version" "$KPLANE" version
grep -Eq '^kplane version [0-9]' <<<"$OUT" || fail "version output: $OUT"
expect_ok "store --help" "$KPLANE" store --help
grep -q "watch PREFIX" <<<"$OUT" || fail "store --help lacks watch: $OUT"
expect_fail "no command" 2 "" "$KPLANE"
expect_fail "unknown command" 2 "unknown command" "$KPLANE" frobnicate
expect_fail "unknown subcommand" 2 "unknown store subcommand" ka frobnicate
expect_fail "missing argument" 2 "get takes 1 argument" ka get
expect_fail "option of another subcommand" 2 "does not take --from" ka get /x --from 1
expect_fail "bad revision" 2 "bad revision" ka get /x --rev abc
expect_fail "bad format" 2 "unknown format" ka status -w yaml
expect_fail "both --data-dir and --store" 2 "exclude" \
    "$KPLANE" store --data-dir "$A" --store "lmdb:$A/store" status

step "reads of a store that does not exist"
expect_fail "get before any put" 1 "^kplane: no store at $A/store: not found$" ka get /a/1
[[ ! -e $A ]] || fail "a read created $A"

step "put / get"
expect_ok "put /a/1" ka put /a/1 v1
expect_eq "put /a/1 revision" "$OUT" 1
expect_ok "put /a/2" ka put /a/2 v2
expect_eq "put /a/2 revision" "$OUT" 2
expect_ok "update /a/1" ka put /a/1 v1b
expect_eq "update /a/1 revision" "$OUT" 3
expect_ok "get /a/1" ka get /a/1
expect_eq "get /a/1" "$OUT" v1b
expect_ok "get /a/1 --rev 1" ka get /a/1 --rev 1
expect_eq "get /a/1 --rev 1" "$OUT" v1
expect_ok "get /a/1 -w json" ka get /a/1 -w json
expect_eq "get /a/1 -w json" "$OUT" \
    '{"key":"/a/1","value":"v1b","create_revision":1,"mod_revision":3,"version":2}'
expect_ok "get --write-out=json --rev 2" ka --write-out=json get --rev 2 /a/1
expect_eq "get --rev 2 json" "$OUT" \
    '{"key":"/a/1","value":"v1","create_revision":1,"mod_revision":1,"version":1}'
expect_ok "put from stdin" ka put /b/x - < <(printf 'line1\n"quoted"\ttab\n')
expect_eq "put /b/x revision" "$OUT" 4
ka get /b/x >"$TMP/got" || fail "get /b/x failed"
printf 'line1\n"quoted"\ttab\n\n' >"$TMP/want"
cmp -s "$TMP/got" "$TMP/want" || fail "get /b/x: value from stdin did not round-trip: $(od -c "$TMP/got")"
expect_ok "get /b/x -w json" ka get /b/x -w json
expect_eq "json escaping" "$OUT" \
    '{"key":"/b/x","value":"line1\n\"quoted\"\ttab\n","create_revision":4,"mod_revision":4,"version":1}'
expect_ok "put a value starting with -" ka put /b/dash -- -v
expect_ok "get /b/dash" ka get /b/dash
expect_eq "get /b/dash" "$OUT" -v
expect_fail "get missing key" 1 "^kplane: get /nope: not found$" ka get /nope
expect_fail "get --rev in the future" 1 "future" ka get /a/1 --rev 999
expect_ok "KPLANE_DATA_DIR" env KPLANE_DATA_DIR="$A" "$KPLANE" store get /a/2
expect_eq "get via KPLANE_DATA_DIR" "$OUT" v2
expect_ok "--store URL" "$KPLANE" store --store "lmdb:$A/store" get /a/2
expect_eq "get via --store" "$OUT" v2
if [[ $(id -u) != 0 ]]; then
    expect_ok "default data dir" env -u KPLANE_DATA_DIR HOME="$TMP/home" "$KPLANE" store put /h 1
    [[ -f $TMP/home/.local/share/kplane/store/data.mdb ]] || fail "default data dir not under \$HOME"
fi

step "list"
expect_ok "list /a/" ka list /a/
expect_eq "list /a/" "$OUT" $'/a/1\tv1b\n/a/2\tv2'
expect_ok "list /a/ --rev 2" ka list /a/ --rev 2
expect_eq "list /a/ --rev 2" "$OUT" $'/a/1\tv1\n/a/2\tv2'
expect_ok "list --keys-only" ka list "" --keys-only
expect_eq "list --keys-only" "$OUT" $'/a/1\n/a/2\n/b/dash\n/b/x'
expect_ok "list --limit 1" ka list /a/ --limit 1
expect_eq "list --limit 1" "$OUT" $'/a/1\tv1b'
expect_ok "list /b/x (escaped preview)" ka list /b/x
expect_eq "list /b/x" "$OUT" $'/b/x\tline1\\n"quoted"\\ttab\\n'
long=$(printf 'x%.0s' $(seq 100))
expect_ok "put long value" ka put /c/long "$long"
expect_ok "list long value" ka list /c/
expect_eq "list preview is cut" "$OUT" "/c/long"$'\t'"$(printf 'x%.0s' $(seq 64))..."
expect_ok "delete /c/long" ka delete /c/long

step "list across pages (1100 keys written by parallel processes)"
r0=$(revision "$A")
# Leak checks are the other steps' business: at exit each of these 1,100
# processes would spend half its life on one (under ASan, 146 ms a put
# against 83 ms without).
seq -f '%04g' 1 1100 |
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        xargs -P 8 -I{} "$KPLANE" store --data-dir "$A" put /many/{} v{} >"$TMP/revs" ||
    fail "parallel puts failed"
expect_eq "revisions of 1100 parallel puts" "$(sort -n "$TMP/revs" | uniq | wc -l)" 1100
expect_eq "revisions of parallel puts are dense" "$(sort -n "$TMP/revs" | sed -n '1p;$p' | paste -sd' ')" "$((r0 + 1)) $((r0 + 1100))"
ka list /many/ --keys-only >"$TMP/many" || fail "list /many/ failed"
seq -f '/many/%04g' 1 1100 >"$TMP/many.want"
cmp -s "$TMP/many" "$TMP/many.want" || fail "list /many/ across pages: $(diff "$TMP/many" "$TMP/many.want" | head)"
expect_ok "list --limit 1050" ka list /many/ --limit 1050
expect_eq "list --limit 1050 count" "$(wc -l <<<"$OUT")" 1050
expect_eq "list --limit 1050 last" "$(tail -n1 <<<"$OUT")" $'/many/1050\tv1050'

step "delete"
expect_ok "delete /a/2" ka delete /a/2
del_rev=$OUT
[[ $del_rev =~ ^[0-9]+$ ]] || fail "delete printed '$del_rev', want a revision"
expect_fail "get deleted" 1 "^kplane: get /a/2: not found$" ka get /a/2
expect_fail "delete again" 1 "^kplane: delete /a/2: not found$" ka delete /a/2
expect_ok "get deleted key at an older revision" ka get /a/2 --rev $((del_rev - 1))
expect_eq "get /a/2 before its delete" "$OUT" v2

step "status"
rev=$(revision "$A")
expect_eq "status revision" "$rev" "$del_rev"
expect_ok "status -w json" ka status -w json
grep -Eq '^\{"revision":[0-9]+,"compact_revision":0,"keys":1103,"db_bytes":[0-9]+,"file_bytes":[0-9]+\}$' <<<"$OUT" ||
    fail "status -w json: $OUT"
expect_ok "status" ka status
grep -Eq "^revision: +$rev$" <<<"$OUT" || fail "status text lacks the revision: $OUT"
grep -Eq "^compacted revision: +0$" <<<"$OUT" || fail "status text lacks compacted revision: $OUT"
grep -Eq "^keys: +1103$" <<<"$OUT" || fail "status text lacks keys: $OUT"
grep -Eq "^db size: .*[0-9]+ bytes" <<<"$OUT" || fail "status text lacks db size: $OUT"
grep -Eq "^on-disk size: .*[0-9]+ bytes" <<<"$OUT" || fail "status text lacks on-disk size: $OUT"

step "watch --from catches earlier events, then follows live ones"
r0=$(revision "$A")
ka put /w/1 a >/dev/null
ka put /w/2 'b c' >/dev/null
ka delete /w/1 >/dev/null
ka put /other/x y >/dev/null # outside the prefix: not reported
# Started directly, not through ka(): $! must be kplane itself, not a subshell.
"$KPLANE" store --data-dir "$A" watch /w/ --from "$r0" >"$TMP/watch.out" 2>"$TMP/watch.err" &
watch_pid=$!
BG_PIDS+=("$watch_pid")
wait_lines "$TMP/watch.out" 3
ka put /w/3 live >/dev/null
wait_lines "$TMP/watch.out" 4
kill -INT "$watch_pid"
watch_rc=0
wait "$watch_pid" || watch_rc=$?
expect_eq "watch exit status after SIGINT (stderr: $(cat "$TMP/watch.err"))" "$watch_rc" 0
expect_eq "watch output" "$(cat "$TMP/watch.out")" "PUT $((r0 + 1)) /w/1 a
PUT $((r0 + 2)) /w/2 b c
DELETE $((r0 + 3)) /w/1
PUT $((r0 + 5)) /w/3 live"

step "watch from now ends with exit 0 on SIGTERM"
r1=$(revision "$A")
"$KPLANE" store --data-dir "$A" watch /w/ >"$TMP/watch2.out" 2>"$TMP/watch2.err" &
watch_pid=$!
BG_PIDS+=("$watch_pid")
# Writes made before the watch is open are not reported: write until one is,
# which also proves the watch is up before it gets the signal.
for i in $(seq 100); do
    ka put "/w/ping" "$i" >/dev/null
    [[ -s $TMP/watch2.out ]] && break
    sleep 0.1
done
wait_lines "$TMP/watch2.out" 1
kill -TERM "$watch_pid"
watch_rc=0
wait "$watch_pid" || watch_rc=$?
expect_eq "watch exit status after SIGTERM (stderr: $(cat "$TMP/watch2.err"))" "$watch_rc" 0
read -r typ rev key _ <"$TMP/watch2.out"
[[ $typ == PUT && $key == /w/ping && $rev -gt $r1 ]] ||
    fail "watch from now: first event '$typ $rev $key', want a PUT of /w/ping above $r1"

step "compact"
crev=$(revision "$A")
expect_ok "compact" ka compact "$crev"
expect_fail "get below the compaction" 1 \
    "^kplane: get /a/1 at revision 1 \(store compacted up to revision $crev\): revision has been compacted$" \
    ka get /a/1 --rev 1
expect_fail "list below the compaction" 1 "compacted" ka list "" --rev 2
expect_fail "watch below the compaction" 1 \
    "^kplane: watch /w/ after revision 1 \(store compacted up to revision $crev\): revision has been compacted$" \
    ka watch /w/ --from 1
expect_fail "compact again" 1 "compacted" ka compact "$crev"
expect_ok "get at the compaction revision" ka get /w/3 --rev "$crev"
expect_eq "get at the compaction revision" "$OUT" live
expect_ok "status after compact" ka status -w json
grep -q "\"compact_revision\":$crev," <<<"$OUT" || fail "status after compact: $OUT"

step "backup under write load, then restore"
rm -f "$TMP/stop"
(
    i=0
    while [[ ! -e $TMP/stop ]]; do
        "$KPLANE" store --data-dir "$A" put "/load/$i" "value $i" >/dev/null ||
            { echo "put /load/$i failed" >"$TMP/load.err"; exit 1; }
        i=$((i + 1))
    done
) &
load_pid=$!
BG_PIDS+=("$load_pid")
before=$(revision "$A")
for _ in $(seq 100); do
    [[ $(revision "$A") -ge $((before + 20)) ]] && break
    sleep 0.1
done
[[ $(revision "$A") -ge $((before + 20)) ]] || fail "the write load is not writing"
expect_ok "backup" ka backup "$TMP/backup.db"
[[ $OUT =~ ^backup\ of\ revision\ ([0-9]+)\ written\ to\ $TMP/backup.db$ ]] ||
    fail "backup output: $OUT"
brev=${BASH_REMATCH[1]}
after=$(revision "$A")
for _ in $(seq 100); do
    [[ $(revision "$A") -ge $((after + 20)) ]] && break
    sleep 0.1
done
touch "$TMP/stop"
wait "$load_pid" || fail "write load failed: $(cat "$TMP/load.err" 2>/dev/null)"
final=$(revision "$A")
((brev > before)) || fail "backup revision $brev is not newer than $before: no load before it"
((final > brev)) || fail "no writes after the backup revision $brev (final $final)"
expect_fail "backup onto an existing file" 1 "already exists" ka backup "$TMP/backup.db"

expect_ok "restore" kb restore "$TMP/backup.db"
expect_eq "restore output" "$OUT" "backup of revision $brev restored into $B/store"
expect_eq "restored revision" "$(revision "$B")" "$brev"
kb list "" >"$TMP/restored.list" || fail "list of the restored store failed"
ka list "" --rev "$brev" >"$TMP/source.list" || fail "list of the source at $brev failed"
cmp -s "$TMP/restored.list" "$TMP/source.list" ||
    fail "restored store differs from the source at revision $brev: $(diff "$TMP/source.list" "$TMP/restored.list" | head)"
[[ $(wc -l <"$TMP/restored.list") -gt 1100 ]] || fail "restored list is too short"
# The history came along too: the restored store reads as the source at an
# older revision (the source's compaction point, which the backup keeps).
kb list "" --rev "$crev" >"$TMP/restored.old" || fail "list of the restored store at $crev failed"
ka list "" --rev "$crev" >"$TMP/source.old" || fail "list of the source at $crev failed"
cmp -s "$TMP/restored.old" "$TMP/source.old" ||
    fail "restored store differs from the source at revision $crev: $(diff "$TMP/source.old" "$TMP/restored.old" | head)"
expect_fail "restore over an existing store" 1 "already exists" kb restore "$TMP/backup.db"
expect_fail "restore of a non-backup" 1 "restore" \
    "$KPLANE" store --data-dir "$TMP/c" restore "$TMP/watch.out"
expect_ok "restored store takes writes" kb put /after/restore x
expect_eq "first write after restore" "$OUT" $((brev + 1))

echo "store_cli.sh: all checks passed"
