#!/usr/bin/env bash
# make bench: bring up a private local cluster (1 mds + 4 ios) under
# build/bench-var, run the benchmarks beside their local baselines, and
# stop it (tessera-bench-version: a short run of chapter 8's versioned
# writes). Figures go to stdout and build/bench-results.txt. The scripts
# tests/bench/bench_*.sh run last: bench_mpi_hpio.sh and bench_startup.sh on
# this cluster, bench_fuse.sh (fuse_bench.sh) and bench_fuse_small.sh
# (fuse_small_bench.sh) on a cluster and mount of their own,
# bench_locks.sh on clusters of its own (1 to 4 storage daemons),
# bench_mdtest.sh (IOR's mdtest and ior, tests/third_party/ior) on a
# cluster and mount of its own beside the local disk,
# bench_transport.sh on clusters of its own, one per provider (tcp;msg, the
# default, against tcp;ofi_rxm).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
export TESSERA_VAR="$top/build/bench-var" TESSERA_PORT=${TESSERA_PORT:-7500}
rm -rf "$TESSERA_VAR"
trap '"$top/deploy/tessera-local" down >/dev/null' EXIT
"$top/deploy/tessera-local" up >/dev/null
mkdir -p "$TESSERA_VAR/baseline"
{
	"$top/build/bin/tessera-bench-basic" -c "$TESSERA_VAR/tessera.conf" \
		-l "$TESSERA_VAR/baseline" -s "${BENCH_MIB:-1024}" -n "${BENCH_FILES:-10000}" -p 4
	"$top/build/bin/tessera-bench-hpio" -c "$TESSERA_VAR/tessera.conf" -t "${BENCH_SECONDS:-0.5}" \
		--sweep --batch-sweep
	# chapter 8 at the dissertation's point (4096 regions of 8 bytes a
	# process) with 8 writers on this cluster's 4 daemons, reads with
	# unmerged versions and the log's storage; the figures are the study's
	# (study.py --parts versions: 16 writers, 8 daemons, both sweeps)
	"$top/build/bin/tessera-bench-version" -c "$TESSERA_VAR/tessera.conf" -p 8 -i 2 -r 3 \
		--reads --storage "$TESSERA_VAR" | grep -Ev '^(row|readrow|storagerow) '
	"$top/build/bin/tessera-bench-tlk"
	"$top/build/bin/tessera-bench-store" -d "$TESSERA_VAR/baseline" -s "${BENCH_MIB:-1024}"
	for extra in "$top"/tests/bench/bench_*.sh; do
		if [ -x "$extra" ]; then "$extra" "$TESSERA_VAR/tessera.conf" "$TESSERA_VAR/baseline"; fi
	done
} | tee "$top/build/bench-results.txt"
