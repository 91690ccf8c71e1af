#!/bin/sh
# run.sh KPLANE OUTDIR -- the dashboard's browser test: a real `kplane
# server` (a temp data dir, 127.0.0.1 and a free port, 3 simulated nodes),
# then dashboard.mjs drives chromium through the page; screenshots and the
# server's output land in OUTDIR. The server is stopped by its pid on every
# way out. Exit 77 (skipped) when the browser or its driver is missing.
set -eu
kplane=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
skip() { echo "SKIP: $*"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/install-deps --test)"
[ -x "$chromium" ] || skip "$chromium is not installed (scripts/install-deps --test: Debian's chromium)"
[ -f "$here/node_modules/playwright-core/package.json" ] ||
  skip "playwright-core is not in $here/node_modules (scripts/install-deps --test runs npm ci there)"

rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
pid=""
stop_server() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# A second user, "viewer", whose rights the test grants through RBAC.
printf 'viewer-token-0123456789abcdef,viewer,2001\n' >"$tmp/tokens.csv"
"$kplane" server --data-dir "$tmp/data" --listen 127.0.0.1:0 --nodes 3 \
  --token-auth-file "$tmp/tokens.csv" >"$out/server.out" 2>"$out/server.log" &
pid=$!
url=""
i=0
while [ -z "$url" ] && [ $i -lt 600 ]; do
  url=$(grep -o 'https://127\.0\.0\.1:[0-9]*/ui/#token=[0-9a-f]*' "$out/server.out" 2>/dev/null || true)
  if [ -z "$url" ]; then
    kill -0 "$pid" 2>/dev/null || { echo "FAIL: kplane server exited (see $out/server.log)"; exit 1; }
    sleep 0.1
    i=$((i + 1))
  fi
done
[ -n "$url" ] || { echo "FAIL: no dashboard URL from kplane server in 60 s (see $out/)"; exit 1; }
echo "dashboard: ${url%%#*}"
rc=0
KPLANE_DASHBOARD_URL=$url KPLANE_VIEWER_TOKEN=viewer-token-0123456789abcdef KPLANE_OUT=$out CHROMIUM=$chromium node "$here/dashboard.mjs" || rc=$?
stop_server
# The server under ASan: a leak or error report at its exit fails the test.
if grep -q 'ERROR: \(AddressSanitizer\|LeakSanitizer\)' "$out/server.log"; then
  echo "FAIL: the server's sanitizer report (see $out/server.log)"
  rc=1
fi
echo "screenshots: $out"
exit $rc
