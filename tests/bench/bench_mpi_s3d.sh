#!/usr/bin/env bash
# bench_mpi_s3d.sh CONF [BASELINE_DIR] - the S3D-like checkpoint
# (romio-adio/bench/mpi_s3d.c; seed 001 §7.5.2) on 1, 2, 4 and 8 ranks:
# MB/s of write and sync with atomic mode off, and with it on by every lock
# method x protocol, and each as a % of atomic mode off. The posix method
# (one lock per contiguous row of an array, taken one after the other) is
# there for contrast; it runs one checkpoint per rank count, the others
# the best of S3D_REPS (5), all interleaved. Figures, not a test.
#
#   S3D_N        grid points per side (128: a 268 MB checkpoint, rows of
#                512 bytes per rank on 2, 4 and 8 ranks)
#   S3D_RANKS    rank counts ("1 2 4 8")
#   S3D_CONFIGS  the configs (off and every METHOD:PROTOCOL)
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
configs="off"
for m in datatype list posix; do
	for p in two-phase one-try alt-try; do configs="$configs $m:$p"; done
done
configs=${S3D_CONFIGS:-$configs}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== S3D-like checkpoint (romio-adio/bench/mpi_s3d.c): atomic mode by lock method and protocol"
for np in ${S3D_RANKS:-1 2 4 8}; do
	"${run[@]}" -np "$np" "$prog" -n "${S3D_N:-128}" -r "${S3D_REPS:-5}" -p 1 \
		tessera:/s3d-checkpoint $configs | tee -a "$out"
done
echo "-- MB/s (% of atomic mode off)"
awk '/^#/ { next }
{ mb[$1, $2] = $3; ranks[$1] = 1; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
END {
	printf "%-20s", "config"
	for (r = 1; r <= 64; r *= 2) if (r in ranks) printf " %16s", r " ranks"
	printf "\n"
	for (i = 0; i < n; i++) {
		c = order[i]
		printf "%-20s", c == "off" ? "atomic mode off" : c
		for (r = 1; r <= 64; r *= 2) {
			if (!(r in ranks)) continue
			v = mb[r, c]; off = mb[r, "off"]
			if (c == "off" || v == "failed" || off + 0 == 0) printf " %16s", v
			else printf " %8s (%3.0f%%)", v, 100 * v / off
		}
		printf "\n"
	}
}' "$out"
