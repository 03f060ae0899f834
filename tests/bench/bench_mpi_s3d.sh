#!/usr/bin/env bash
# bench_mpi_s3d.sh CONF [BASELINE_DIR] - the S3D-like checkpoint
# (romio-adio/bench/mpi_s3d.c; seed 001 §7.5.2) on 1, 2, 4 and 8 ranks:
# MB/s of write and sync with atomic mode off, and with it on by every lock
# method x protocol, and each as a % of atomic mode off (best of S3D_REPS,
# 5, the configs' checkpoints interleaved).
#
# The posix method (one lock per contiguous row of an array, one after the
# other) is there for contrast, in a table of its own on a smaller grid:
# it takes one lock request per row, a round trip each, so the 128^3
# grid's rows (a quarter of a million per rank on 2 ranks) would take
# minutes. It runs one checkpoint per rank count. Figures, not a test.
#
#   S3D_N        grid points per side (128: a 268 MB checkpoint, rows of 512
#                bytes per rank on 2, 4 and 8 ranks)
#   S3D_POSIX_N  the same for the posix table (64: 33.6 MB, rows of 256 B)
#   S3D_RANKS    rank counts ("1 2 4 8")
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
conf=${1:?usage: bench_mpi_s3d.sh CONF [BASELINE_DIR]}
prog=$B/romio-adio/bench/mpi_s3d
if [ ! -x "$prog" ] || [ ! -f "$B/lib/openmpi/mca_io_romio321.so" ]; then
	echo "bench_mpi_s3d: the ROMIO component or $prog is not built; skipped"
	exit 0
fi
export TESSERA_CONFIG=$conf
. "$top/romio-adio/tessera-mpi-env.sh" "$B"
export OMPI_MCA_btl=self,vader
run=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

table() { # RESULTS: MB/s and % of atomic mode off, a column per rank count
	awk '/^#/ { next }
	{ mb[$1, $2] = $3; ranks[$1] = 1; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
	END {
		printf "%-20s", "config"
		for (r = 1; r <= 64; r *= 2) if (r in ranks) printf " %15s", r " ranks"
		printf "\n"
		for (i = 0; i < n; i++) {
			c = order[i]
			printf "%-20s", c == "off" ? "atomic mode off" : c
			for (r = 1; r <= 64; r *= 2) {
				if (!(r in ranks)) continue
				v = mb[r, c]; off = mb[r, "off"]
				if (c == "off" || v == "failed" || off + 0 == 0) printf " %15s", v
				else printf " %7s (%3.0f%%)", v, 100 * v / off
			}
			printf "\n"
		}
	}' "$1"
}

series() { # N POSIX_REPS CONFIGS...: every rank count, into $out
	local n=$1 preps=$2
	shift 2
	: >"$out"
	for np in ${S3D_RANKS:-1 2 4 8}; do
		"${run[@]}" -np "$np" "$prog" -n "$n" -r "${S3D_REPS:-5}" -p "$preps" \
			tessera:/s3d-checkpoint "$@" | tee -a "$out"
	done
}

configs="off"
for m in datatype list; do
	for p in two-phase one-try alt-try; do configs="$configs $m:$p"; done
done
echo "== S3D-like checkpoint (romio-adio/bench/mpi_s3d.c): atomic mode by lock method and protocol"
series "${S3D_N:-128}" 1 $configs
echo "-- MB/s (% of atomic mode off), ${S3D_N:-128}^3"
table "$out"
echo "-- posix locks, for contrast"
series "${S3D_POSIX_N:-64}" 1 off posix:two-phase posix:one-try posix:alt-try
echo "-- MB/s (% of atomic mode off), ${S3D_POSIX_N:-64}^3"
table "$out"
