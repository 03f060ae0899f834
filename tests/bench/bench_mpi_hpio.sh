#!/usr/bin/env bash
# bench_mpi_hpio.sh CONF BASELINE_DIR - the HPIO benchmark over MPI-IO
# (romio-adio/bench/mpi_hpio.c, 4 ranks, 4096 regions of 8 bytes, spacing
# 128): every access case by every Tessera method (POSIX, data sieving,
# list, datatype, two-phase collective), beside ROMIO's UFS driver on a
# local file in BASELINE_DIR in the same run, and the ratios.
# Figures, not a test.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
conf=${1:?usage: bench_mpi_hpio.sh CONF BASELINE_DIR}
base=${2:?usage: bench_mpi_hpio.sh CONF BASELINE_DIR}
prog=$B/romio-adio/bench/mpi_hpio
if [ ! -x "$prog" ] || [ ! -f "$B/lib/openmpi/mca_io_romio321.so" ]; then
	echo "bench_mpi_hpio: the ROMIO component or $prog is not built; skipped"
	exit 0
fi
export TESSERA_CONFIG=$conf
. "$top/romio-adio/tessera-mpi-env.sh" "$B"
export OMPI_MCA_io=romio321          # ufs: names need ROMIO too (OMPIO knows no prefixes)
export OMPI_MCA_btl=self,vader
run=(mpirun --oversubscribe -np 4)
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
methods="posix sieve list datatype"
args=(-n "${HPIO_REGIONS:-4096}" -s "${HPIO_SIZE:-8}" -g "${HPIO_SPACING:-128}" -r "${HPIO_REPS:-3}")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== MPI-IO HPIO (romio-adio/bench/mpi_hpio.c): Tessera driver vs ROMIO UFS on $base"
# One line per case and method, the driver's name before the method's.
label() { # PREFIX
	awk -v p="$1" '/^#/ { print; next }
		{ m = $2; sub(/^ufs-/, "", m); printf "%-6s %-16s write %9s  read %9s\n", $1, p m, $4, $6 }'
}
"${run[@]}" "$prog" "${args[@]}" tessera:/hpio $methods coll | label tessera- | tee "$out"
"${run[@]}" "$prog" "${args[@]}" "ufs:$base/hpio" ufs-posix ufs-sieve coll | label ufs- | tee -a "$out"
echo "-- ratios, Tessera / UFS (independent methods against UFS's better independent one)"
awk '$3 == "write" {
	w[$1, $2] = $4; r[$1, $2] = $6; cases[$1] = 1; ms[$2] = 1
} END {
	split("c-c nc-c c-nc nc-nc", order, " ")
	for (i = 1; i <= 4; i++) {
		c = order[i]
		uw = w[c, "ufs-posix"] > w[c, "ufs-sieve"] ? w[c, "ufs-posix"] : w[c, "ufs-sieve"]
		ur = r[c, "ufs-posix"] > r[c, "ufs-sieve"] ? r[c, "ufs-posix"] : r[c, "ufs-sieve"]
		for (m in ms) {
			if (m !~ /^tessera-/) continue
			cw = (m == "tessera-coll") ? w[c, "ufs-coll"] : uw
			cr = (m == "tessera-coll") ? r[c, "ufs-coll"] : ur
			printf "%-6s %-17s write x%.2f  read x%.2f\n", c, m, cw ? w[c, m] / cw : 0, cr ? r[c, m] / cr : 0
		}
	}
}' "$out"
