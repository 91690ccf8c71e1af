#!/usr/bin/env bash
# encryption.sh KPLANE KUBECTL -- Secrets encrypted at rest, as Kubernetes
# encrypts them: `kplane server` makes a key at its first start; a Secret's
# value is in the store files in no form (plain or base64) after a create, an
# update, a delete and a compaction, and kubectl reads it back; a rotation
# (new key first, restart, `kubectl replace` of unchanged Secrets or
# `kplane store rewrite-secrets`, old key dropped)
# moves every Secret to the new key; a backup taken before the rotation needs
# the old key; Secrets written in plain before encryption are rewritten and
# a compacted backup then holds no plain copy; a bad config stops the start
# naming the field.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

k() { "$KUBECTL" "$@"; }
store() { "$KP_BIN" store "$@"; }
VAL=Zebra-Quartz-4711-first
VAL2=Yak-Onyx-0815-second
b64() { printf %s "$1" | base64 -w0; }
# no_trace WHAT FILE...: neither value, plain or base64, in the files.
no_trace() {
  local what=$1
  shift
  for v in "$VAL" "$VAL2"; do
    for form in "$v" "$(b64 "$v")"; do
      if grep -a -q -F -- "$form" "$@"; then fail "$what: '$form' found in $*"; fi
    done
  done
}
rev_of() { store "$@" status -w json | sed 's/.*"revision":\([0-9]*\).*/\1/'; }
# prefixes DIR: the stored prefix of every Secret, one per line, sorted.
prefixes() {
  store --data-dir "$1" list /registry/core/secrets/ | cut -f2 | cut -d: -f1-5 | sort | uniq -c
}
newkey() { head -c 32 /dev/urandom | base64 -w0; }
config() { # FILE PROVIDER-LINES...
  local f=$1
  shift
  {
    printf 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n'
    printf 'resources:\n- resources: [secrets]\n  providers:\n'
    printf '%s\n' "$@"
  } >"$f"
  chmod 600 "$f"
}
aescbc() { printf '  - aescbc:\n      keys:\n      - name: %s\n        secret: %s' "$1" "$2"; }

echo "--- kplane server encrypts Secrets by default, with a key made at first start"
kp_start "${KP_API_ONLY[@]}"
CFG=$KP_DIR/data/encryption-config.yaml
[ -f "$CFG" ] || fail "no $CFG"
expect_eq "its mode" "$(stat -c %a "$CFG")" 600
grep -q 'encryption at rest from .*secrets: aescbc key1, identity' "$KP_DIR/server.log" ||
  fail "the server did not log its encryption"
KEY1=$(sed -n 's/^ *secret: //p' "$CFG")
k create secret generic s1 --from-literal=password="$VAL" >/dev/null
expect_eq "s1 read back" "$(k get secret s1 -o jsonpath='{.data.password}' | base64 -d)" "$VAL"
expect_eq "s1 listed" "$(k get secrets -o jsonpath='{.items[?(@.metadata.name=="s1")].data.password}' |
  base64 -d)" "$VAL"
no_trace "after create" "$KP_DIR"/data/store/*
expect_match "s1 as stored" "$(store --data-dir "$KP_DIR/data" get /registry/core/secrets/default/s1 |
  head -c 40)" '^k8s:enc:aescbc:v1:key1:'
k create configmap c1 --from-literal=k=Plain-Config-Value >/dev/null
grep -a -q Plain-Config-Value "$KP_DIR"/data/store/data.mdb || fail "a ConfigMap is not stored plain"

echo "--- update, watch, delete and compaction"
k get secrets --watch-only -o jsonpath='{.data.password}{"\n"}' >"$KP_DIR/watch.out" &
WATCH=$!
sleep 1
k patch secret s1 -p "{\"data\":{\"password\":\"$(b64 "$VAL2")\"}}" >/dev/null
expect_eq "s1 updated" "$(k get secret s1 -o jsonpath='{.data.password}' | base64 -d)" "$VAL2"
kp_wait_for "the watch event" 10 grep -q "$(b64 "$VAL2")" "$KP_DIR/watch.out"
kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
no_trace "after update" "$KP_DIR"/data/store/*
k delete secret s1 >/dev/null
store --data-dir "$KP_DIR/data" compact "$(rev_of --data-dir "$KP_DIR/data")" >/dev/null
no_trace "after delete and compaction" "$KP_DIR"/data/store/*

echo "--- rotation: key2 first, restart, rewrite-secrets, key1 dropped"
for i in 1 2 3 4 5; do k create secret generic "r$i" --from-literal=password="$VAL" >/dev/null; done
k create namespace other >/dev/null
k create secret generic r6 -n other --from-literal=password="$VAL" >/dev/null
n=$(store --data-dir "$KP_DIR/data" list /registry/core/secrets/ --keys-only | wc -l)
expect_eq "stored Secrets" "$(prefixes "$KP_DIR/data" | sed 's/^ *//')" "$n k8s:enc:aescbc:v1:key1"
store --data-dir "$KP_DIR/data" backup "$KP_DIR/before-rotation.db" >/dev/null
KEY2=$(newkey)
config "$KP_DIR/rotate.yaml" "$(aescbc key2 "$KEY2")" "$(aescbc key1 "$KEY1")" '  - identity: {}'
kp_restart "${KP_API_ONLY[@]}" --encryption-provider-config "$KP_DIR/rotate.yaml"
expect_eq "r1 under key1, read with key2 first" \
  "$(k get secret r1 -o jsonpath='{.data.password}' | base64 -d)" "$VAL"
# Kubernetes' way for some: an unchanged replace is written when the stored
# form is stale; then rewrite-secrets for the rest.
k get secrets r1 r2 r3 -o json | k replace -f - >/dev/null
expect_eq "after kubectl replace" "$(prefixes "$KP_DIR/data" | sed 's/^ *//')" \
  "$((n - 3)) k8s:enc:aescbc:v1:key1"$'\n'"3 k8s:enc:aescbc:v1:key2"
out=$(store --data-dir "$KP_DIR/data" rewrite-secrets --encryption-provider-config "$KP_DIR/rotate.yaml")
echo "    $out"
expect_match "rewrite-secrets" "$out" "^rewrote $((n - 3)) of $n values"
expect_eq "after the rewrite" "$(prefixes "$KP_DIR/data" | sed 's/^ *//')" "$n k8s:enc:aescbc:v1:key2"
out=$(store --data-dir "$KP_DIR/data" rewrite-secrets --encryption-provider-config "$KP_DIR/rotate.yaml")
expect_match "a second rewrite" "$out" "^rewrote 0 of $n values"
config "$KP_DIR/key2.yaml" "$(aescbc key2 "$KEY2")" '  - identity: {}'
kp_restart "${KP_API_ONLY[@]}" --encryption-provider-config "$KP_DIR/key2.yaml"
for s in r1 r2 r3 r4 r5; do
  expect_eq "$s with key2 alone" "$(k get secret "$s" -o jsonpath='{.data.password}' | base64 -d)" "$VAL"
done
expect_eq "r6 with key2 alone" "$(k get secret r6 -n other -o jsonpath='{.data.password}' | base64 -d)" "$VAL"
no_trace "after the rotation" "$KP_DIR"/data/store/*

echo "--- a backup from before the rotation needs the old key"
no_trace "the backup" "$KP_DIR/before-rotation.db"
store --data-dir "$KP_DIR/old" restore "$KP_DIR/before-rotation.db" >/dev/null
if out=$(store --data-dir "$KP_DIR/old" get /registry/core/secrets/default/r1 \
  --encryption-provider-config "$KP_DIR/key2.yaml" 2>&1); then
  fail "the old backup read with key2 alone: $out"
fi
expect_match "read with key2 alone" "$out" 'unable to transform key "/registry/core/secrets/default/r1": no matching prefix'
rc=0
timeout 60 "$KP_BIN" server --data-dir "$KP_DIR/old" --listen 127.0.0.1:0 "${KP_API_ONLY[@]}" \
  --encryption-provider-config "$KP_DIR/key2.yaml" >"$KP_DIR/old.out" 2>"$KP_DIR/old.err" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a server on the old backup with key2 alone: exit $rc"
grep -q 'unable to transform key "/registry/core/secrets/' "$KP_DIR/old.err" ||
  fail "the server did not say why: $(tail -n 3 "$KP_DIR/old.err")"
echo "    server: $(grep -m1 'unable to transform' "$KP_DIR/old.err")"
json=$(store --data-dir "$KP_DIR/old" get /registry/core/secrets/default/r1 \
  --encryption-provider-config "$KP_DIR/rotate.yaml")
expect_match "read with the old key" "$json" "$(b64 "$VAL")"

echo "--- Secrets written in plain before encryption: rewritten, compacted, backed up"
kp_stop
rm -rf "$KP_DIR/data"
config "$KP_DIR/plain.yaml" '  - identity: {}'
kp_start "${KP_API_ONLY[@]}" --encryption-provider-config "$KP_DIR/plain.yaml"
k create secret generic p1 --from-literal=password="$VAL" >/dev/null
grep -a -q -F "$(b64 "$VAL")" "$KP_DIR"/data/store/data.mdb || fail "identity alone did not store plain"
kp_restart "${KP_API_ONLY[@]}" # the default: a new key1, identity second
expect_eq "p1 read through identity" "$(k get secret p1 -o jsonpath='{.data.password}' | base64 -d)" "$VAL"
out=$(store --data-dir "$KP_DIR/data" rewrite-secrets)
expect_match "rewrite-secrets with the default config" "$out" '^rewrote 1 of 1 values'
expect_eq "p1 as stored" "$(prefixes "$KP_DIR/data" | sed 's/^ *//')" "1 k8s:enc:aescbc:v1:key1"
store --data-dir "$KP_DIR/data" compact "$(rev_of --data-dir "$KP_DIR/data")" >/dev/null
store --data-dir "$KP_DIR/data" backup "$KP_DIR/after.db" >/dev/null
no_trace "the compacted backup" "$KP_DIR/after.db"
if grep -a -q -F "$(b64 "$VAL")" "$KP_DIR"/data/store/data.mdb; then
  echo "    (the live data.mdb still holds the old plain value in a freed page, as the README says)"
fi
kp_stop

echo "--- a bad config stops the start, naming the field"
config "$KP_DIR/bad.yaml" '  - aesgcm:' '      keys:' '      - name: k' '        secret: AAAAAAAAAAA='
for cmd in server apiserver; do
  rc=0 args=(--data-dir "$KP_DIR/bad-$cmd" --listen 127.0.0.1:0)
  [ "$cmd" = apiserver ] && args+=(--store "lmdb:$KP_DIR/bad-$cmd/store")
  [ "$cmd" = server ] && args+=("${KP_API_ONLY[@]}")
  timeout 60 "$KP_BIN" "$cmd" "${args[@]}" --encryption-provider-config "$KP_DIR/bad.yaml" \
    >"$KP_DIR/bad.out" 2>"$KP_DIR/bad.err" || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$cmd with a bad config: exit $rc"
  grep -q 'resources\[0\].providers\[0\].aesgcm.keys\[0\].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8' \
    "$KP_DIR/bad.err" || fail "$cmd: $(cat "$KP_DIR/bad.err")"
done
echo "    $(tail -n 1 "$KP_DIR/bad.err")"
echo "PASS"
