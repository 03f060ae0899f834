#!/usr/bin/env bash
# bench_startup.sh CONF BASELINE_DIR - what starting costs: `tessera ls /`
# (wall time and peak RSS, median of STARTUP_RUNS, 9 by default) beside
# libfabric alone (`fi_info -p tcp`: loading it and its providers' start,
# the floor of any program on it) and `/bin/ls` of a local directory, the
# three alternating; then the first MPI_File_open of a process
# (romio-adio/bench/mpi_open.c, one rank) on Tessera, beside a second one
# in the same process and a first one on a local file (ROMIO's UFS driver,
# which loads the same component, libtessera and libfabric). Figures, not
# a test. TESSERA_TRACE_STARTUP=1 on any command shows the steps.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
conf=${1:?usage: bench_startup.sh CONF BASELINE_DIR}
base=${2:?usage: bench_startup.sh CONF BASELINE_DIR}
runs=${STARTUP_RUNS:-9}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$base/startup-dir"
: >"$base/startup-dir/a"

echo "== start-up: median of $runs runs, alternating (wall s, peak RSS MB)"
measure() { # LABEL COMMAND... : one run, appended to $out/LABEL
	local label=$1
	shift
	/usr/bin/time -f '%e %M' -o "$out/one" "$@" >/dev/null 2>&1 || {
		echo "bench_startup: $label failed: $*" >&2
		return 1
	}
	cat "$out/one" >>"$out/$label"
}
for _ in $(seq "$runs"); do
	measure tessera "$B/bin/tessera" -c "$conf" ls /
	measure fi_info fi_info -p tcp
	measure ls /bin/ls "$base/startup-dir"
done
median() { # FILE COLUMN
	sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
t_ts=$(median "$out/tessera" 1)
t_fi=$(median "$out/fi_info" 1)
row() { # LABEL NAME
	printf "%-32s %6.3f s  %6.1f MB\n" "$2" "$(median "$out/$1" 1)" \
		"$(median "$out/$1" 2 | awk '{ print $1 / 1024 }')"
}
row tessera "tessera ls /"
row fi_info "fi_info -p tcp (libfabric)"
row ls "/bin/ls (local)"
awk -v t="$t_ts" -v f="$t_fi" 'BEGIN {
	printf "tessera ls / beyond the libfabric floor: %.3f s (libfabric alone is %.0f%% of it)\n",
		t - f, (t > 0 ? 100 * f / t : 0) }'
echo "-- one step by step (TESSERA_TRACE_STARTUP=1 tessera ls /)"
TESSERA_TRACE_STARTUP=1 "$B/bin/tessera" -c "$conf" ls / 2>&1 >/dev/null |
	sed -n 's/^tessera-startup: *//p'

prog=$B/romio-adio/bench/mpi_open
if [ ! -x "$prog" ] || [ ! -f "$B/lib/openmpi/mca_io_romio321.so" ]; then
	echo "bench_startup: the ROMIO component or $prog is not built; MPI skipped"
	exit 0
fi
export TESSERA_CONFIG=$conf
. "$top/romio-adio/tessera-mpi-env.sh" "$B"
export OMPI_MCA_io=romio321 OMPI_MCA_btl=self,vader
run=(mpirun -np 1)
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
echo "== first MPI_File_open of a process (1 rank; ms, median of 3 runs each)"
# and the same without the env script's libfabric preload (Open MPI as it
# comes), alternating; the whole job's wall time beside each
wall() { # FILE CMD...: run CMD, its output to FILE, its wall seconds to FILE.wall
	local f=$1 t0
	shift
	t0=$(date +%s.%N)
	"$@" >>"$f"
	echo "$(date +%s.%N) $t0" | awk '{ printf "%.0f\n", ($1 - $2) * 1000 }' >>"$f.wall"
}
for i in 1 2 3; do
	wall "$out/mpi-t" "${run[@]}" "$prog" tessera:/startup-a tessera:/startup-b "ufs:$base/startup-c"
	"${run[@]}" "$prog" "ufs:$base/startup-c" tessera:/startup-a >>"$out/mpi-u"
	wall "$out/mpi-n" env -u OMPI_MCA_mca_base_env_list "${run[@]}" "$prog" \
		tessera:/startup-a tessera:/startup-b "ufs:$base/startup-c"
done
# the lines of each run come in order: MPI_Init, then one per name
pick() { # FILE NTH-LINE-OF-A-RUN LINES-PER-RUN
	awk -v n="$2" -v per="$3" '(NR - 1) % per == n - 1 { print $1 == "MPI_Init" ? $2 : $3 }' "$1" | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf "%-52s %8s ms\n" "MPI_Init" "$(pick "$out/mpi-t" 1 4)"
printf "%-52s %8s ms\n" "first open, Tessera (connects)" "$(pick "$out/mpi-t" 2 4)"
printf "%-52s %8s ms\n" "second open, Tessera, same process" "$(pick "$out/mpi-t" 3 4)"
printf "%-52s %8s ms\n" "first open, local file (UFS; loads the component)" "$(pick "$out/mpi-u" 2 3)"
printf "%-52s %8s ms\n" "then first Tessera open (connects)" "$(pick "$out/mpi-u" 3 3)"
printf "%-52s %8s ms\n" "whole job (mpirun, 1 rank, 3 opens)" "$(sort -n "$out/mpi-t.wall" | sed -n 2p)"
echo "-- the same without the libfabric preload (Open MPI as it comes)"
printf "%-52s %8s ms\n" "MPI_Init" "$(pick "$out/mpi-n" 1 4)"
printf "%-52s %8s ms\n" "first open, Tessera (loads libfabric again)" "$(pick "$out/mpi-n" 2 4)"
printf "%-52s %8s ms\n" "whole job (mpirun, 1 rank, 3 opens)" "$(sort -n "$out/mpi-n.wall" | sed -n 2p)"
"$B/bin/tessera" -c "$conf" rm /startup-a /startup-b >/dev/null 2>&1 || true
