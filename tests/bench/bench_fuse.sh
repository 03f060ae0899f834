#!/usr/bin/env bash
# bench_fuse.sh CONF BASELINE_DIR - make bench's FUSE figures: runs
# fuse_bench.sh (which starts a cluster and a mount of its own, so CONF and
# BASELINE_DIR are not used), or says why it cannot here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -c /dev/fuse ] || ! command -v fio >/dev/null || [ "$(id -u)" -ne 0 ]; then
	echo "bench_fuse: needs root, /dev/fuse and fio; skipped"
	exit 0
fi
exec bash "$here/fuse_bench.sh"
