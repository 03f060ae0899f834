#!/usr/bin/env bash
# ab_spares.sh [ROUNDS] - tar xf, rm -rf, then tar xf again of Tessera's
# own tree (git archive HEAD) on a fresh cluster and mount per run
# (fuse_cluster.sh), A with the storage daemons' spare files off
# (spare_files = 0) and B with the default, one build, alternated ROUNDS
# times (default 3). Prints one line per run; figures, not a test.
#   TESSERA_BUILD   build directory (default: build/)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${TESSERA_BUILD:-$top/build}/bin
N_IOS=4
src=$(mktemp /tmp/ab-spares-src.XXXXXX)
git -C "$top" archive --format=tar HEAD >"$src"
trap 'rm -f "$src"' EXIT

run() {   # run LABEL CONF
	(
		BENCH_CONF=$2
		. "$top/tests/bench/fuse_cluster.sh"
		fuse_cluster_up ab-spares >/dev/null
		secs() {
			local t0
			t0=$(date +%s.%N)
			"$@"
			python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" \
				"$t0" "$(date +%s.%N)"
		}
		untar() { mkdir "$1" && tar -C "$1" -xf "$src"; }
		a=$(secs untar "$M/t1")
		b=$(secs rm -rf "$M/t1")
		sleep 1   # the purger's removes reach the storage daemons
		c=$(secs untar "$M/t2")
		echo "$1 tar $a s, rm -rf $b s, tar again $c s"
	)
}

for ((r = 0; r < ${1:-3}; r++)); do
	run "A (spare_files = 0)" "spare_files = 0"
	run "B (default)        " ""
done
