#!/usr/bin/env bash
# bench_fuse_small.sh CONF BASELINE_DIR - make bench's small-I/O and
# metadata figures for the FUSE mount: runs fuse_small_bench.sh (which
# starts a cluster and a mount of its own, so CONF and BASELINE_DIR are not
# used), or says why it cannot here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -c /dev/fuse ] || [ "$(id -u)" -ne 0 ]; then
	echo "bench_fuse_small: needs root and /dev/fuse; skipped"
	exit 0
fi
exec bash "$here/fuse_small_bench.sh"
