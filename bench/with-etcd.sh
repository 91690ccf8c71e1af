#!/bin/sh
# with-etcd.sh -- run a benchmark with KP_BENCH_STORE naming a local
# single-node etcd (tests/store/with-etcd.sh one: free loopback ports, stopped
# by pid afterwards), so that bench_api also measures `kplane server --store
# etcd://...`. Without etcd installed (scripts/install-deps --test) the
# benchmark runs alone.
#
#   bench/with-etcd.sh CMD [ARG...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v "${KP_ETCD_BIN:-etcd}" >/dev/null 2>&1; then
  echo "bench: etcd is not installed: no etcd figures" >&2
  exec "$@"
fi
# Like the benchmarks' own data dirs: never /tmp, which may be a tmpfs.
TMPDIR=${KP_BENCH_DIR:-$PWD/.bench-tmp}
mkdir -p "$TMPDIR"
export TMPDIR
set +e
# shellcheck disable=SC2016
"$here/../tests/store/with-etcd.sh" one sh -c 'KP_BENCH_STORE=$KP_TEST_STORE_URL exec "$@"' sh "$@"
rc=$?
rmdir "$TMPDIR" 2>/dev/null || true
exit $rc
