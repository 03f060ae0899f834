#!/usr/bin/env bash
# bench_startup.sh CONF BASELINE_DIR - what starting costs: `tessera ls /`
# (wall time and peak RSS, median of STARTUP_RUNS, 9 by default) on the
# libfabric Tessera links (its own build, deploy/build-libfabric.sh) beside
# the same binary on Debian's libfabric.so.1 (LD_LIBRARY_PATH, which the
# loader searches before a runpath), libfabric alone (`fi_info -p tcp` of
# each build: loading it and its providers' start, the floor of any
# program on it) and `/bin/ls` of a local directory, all alternating; then
# the first MPI_File_open of a process (romio-adio/bench/mpi_open.c, one
# rank) on Tessera, beside a second one in the same process and a first
# one on a local file (ROMIO's UFS driver, which loads the same component,
# libtessera and libfabric), with the ranks on Tessera's libfabric (the env
# script's default) and on Debian's (TESSERA_MPI_LIBFABRIC=system),
# alternating. Figures, not a test. TESSERA_TRACE_STARTUP=1 on any
# command shows the steps.
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

# The libfabric the build links (the program's runpath), and Debian's.
ours=$(objdump -p "$B/bin/tessera" | awk '$1 == "RUNPATH" { print $2 }')
ours=${ours%%:*}
debian=$(dirname "$(dpkg -L libfabric1 2>/dev/null | grep '/libfabric\.so\.1$' | head -1)")
echo "== start-up: median of $runs runs, alternating (wall s, peak RSS MB)"
echo "   Tessera's libfabric: ${ours:-none}; Debian's: $debian"
# wall seconds to the microsecond (time's %e has 10 ms steps), peak KB
measure() { # LABEL COMMAND... : one run, appended to $out/LABEL
	local label=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$out/one" "$@" >/dev/null 2>&1 || {
		echo "bench_startup: $label failed: $*" >&2
		return 1
	}
	t1=$(date +%s.%N)
	echo "$t1 $t0 $(cat "$out/one")" | awk '{ printf "%.6f %d\n", $1 - $2, $3 }' >>"$out/$label"
}
for _ in $(seq "$runs"); do
	measure tessera "$B/bin/tessera" -c "$conf" ls /
	measure tessera-deb env LD_LIBRARY_PATH="$debian" "$B/bin/tessera" -c "$conf" ls /
	[ ! -x "$ours/../bin/fi_info" ] || measure fi_info "$ours/../bin/fi_info" -p tcp
	measure fi_info-deb /usr/bin/fi_info -p tcp
	measure ls /bin/ls "$base/startup-dir"
done
median() { # FILE COLUMN
	sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
row() { # LABEL NAME
	[ -f "$out/$1" ] || return 0
	printf "%-44s %6.3f s  %6.1f MB\n" "$2" "$(median "$out/$1" 1)" \
		"$(median "$out/$1" 2 | awk '{ print $1 / 1024 }')"
}
row tessera "tessera ls /, Tessera's libfabric"
row tessera-deb "tessera ls /, Debian's libfabric"
row fi_info "fi_info -p tcp, Tessera's libfabric"
row fi_info-deb "fi_info -p tcp, Debian's libfabric"
row ls "/bin/ls (local)"
echo "   (goal: tessera ls / <= 0.050 s and <= 20 MB)"
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
echo "== first MPI_File_open of a process (1 rank; ms and peak RSS, median of 3 runs each)"
# Tessera's libfabric in the ranks (the env script's default: Open MPI's
# psm, psm2 and ofi components left out) and Debian's (as Open MPI comes),
# alternating; the whole job's wall time beside each.
wall() { # FILE CMD...: run CMD, its output to FILE, its wall seconds to FILE.wall
	local f=$1 t0
	shift
	t0=$(date +%s.%N)
	"$@" >>"$f"
	echo "$(date +%s.%N) $t0" | awk '{ printf "%.0f\n", ($1 - $2) * 1000 }' >>"$f.wall"
}
mpi() { # MODE CMD...: CMD with the env script's environment for MODE
	local mode=$1
	shift
	(
		unset OMPI_MCA_mtl OMPI_MCA_btl OMPI_MCA_mca_base_env_list
		export TESSERA_MPI_LIBFABRIC=$mode
		. "$top/romio-adio/tessera-mpi-env.sh" "$B"
		export OMPI_MCA_io=romio321 OMPI_MCA_btl=self,vader
		"$@"
	)
}
for i in 1 2 3; do
	wall "$out/mpi-t" mpi tessera "${run[@]}" "$prog" tessera:/startup-a tessera:/startup-b "ufs:$base/startup-c"
	mpi tessera "${run[@]}" "$prog" "ufs:$base/startup-c" tessera:/startup-a >>"$out/mpi-u"
	wall "$out/mpi-d" mpi system "${run[@]}" "$prog" tessera:/startup-a tessera:/startup-b "ufs:$base/startup-c"
done
# the lines of each run come in order: MPI_Init, then one per name
pick() { # FILE NTH-LINE-OF-A-RUN LINES-PER-RUN [FIELD]
	awk -v n="$2" -v per="$3" -v f="${4:-}" '(NR - 1) % per == n - 1 {
		print f != "" ? $(NF - 1) : ($1 == "MPI_Init" ? $2 : $3) }' "$1" | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf "%-52s %10s %10s\n" "" "Tessera's" "Debian's"
both() { # NAME NTH-LINE [rss]
	local unit=ms
	[ -z "${3:-}" ] || unit=MB
	printf "%-52s %7s %s %7s %s\n" "$1" "$(pick "$out/mpi-t" "$2" 4 "${3:-}")" "$unit" \
		"$(pick "$out/mpi-d" "$2" 4 "${3:-}")" "$unit"
}
both "MPI_Init" 1
both "first open, Tessera (connects)" 2
both "second open, Tessera, same process" 3
both "peak RSS after the first open" 2 rss
printf "%-52s %7s ms %7s ms\n" "whole job (mpirun, 1 rank, 3 opens)" \
	"$(sort -n "$out/mpi-t.wall" | sed -n 2p)" "$(sort -n "$out/mpi-d.wall" | sed -n 2p)"
printf "%-52s %7s ms\n" "first open, local file (UFS; loads the component)" "$(pick "$out/mpi-u" 2 3)"
printf "%-52s %7s ms\n" "then first Tessera open (connects)" "$(pick "$out/mpi-u" 3 3)"
echo "   (goal: first open <= 50 ms and <= 20 MB)"
"$B/bin/tessera" -c "$conf" rm /startup-a /startup-b >/dev/null 2>&1 || true
