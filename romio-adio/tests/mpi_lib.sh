# mpi_lib.sh - shared by the MPI test scripts (sourced, not run).
#
# Starts a Tessera cluster (1 mds + 4 ios on free loopback ports, in a
# temporary directory, stopped by PID at exit), mounts it with FUSE when
# /dev/fuse is usable, and points Open MPI at the ROMIO component with the
# Tessera driver. Scripts print CMocka-style lines for tests/run-suites.sh:
# their own checks through `check`, and the MPI programs' own lines.
#
# MPI_CONF_EXTRA (optional, set before sourcing): more config lines.
# Sets: top B BIN D CONF MNT (the config's mount point) FUSE_OK (1 when
# mounted) MPIRUN (an array: mpirun and its flags) TRACE (the driver's
# trace file, see ad_tessera.h).
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin
COMPONENT=$B/lib/openmpi/mca_io_romio321.so
# Which MPI runs the programs: Open MPI (the default) or, with
# TESSERA_MPI=mpich, Debian's MPICH with libmpich.so.12 rebuilt with the
# driver (romio-adio/build-mpich.sh) ahead of Debian's on LD_LIBRARY_PATH.
# MPI_PROGS is where the test programs for that MPI are built.
MPI_FAMILY=${TESSERA_MPI:-openmpi}
MPICH_LIBDIR=$B/lib/mpich
if [ "$MPI_FAMILY" = mpich ]; then
	SUITE=${SUITE:-mpi}_mpich
	MPI_PROGS=$B/romio-adio/tests-mpich
else
	MPI_PROGS=$B/romio-adio/tests
fi

skip() { # REASON: the whole script is skipped
	echo "[==========] 0 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  SKIPPED ] 1 test(s), listed below:"
	echo "[  SKIPPED ] ${SUITE:-mpi}: $1"
	exit 0
}

if [ "$MPI_FAMILY" = mpich ]; then
	command -v mpiexec.hydra >/dev/null || skip "MPICH is not installed (mpiexec.hydra missing; make deps)"
	[ -f "$MPICH_LIBDIR/libmpich.so.12" ] ||
		skip "MPICH's libmpich.so.12 with the driver is not built: make mpich (about 30 min on 2 cores, cached outside the checkout), then make check runs this suite"
else
	command -v mpirun >/dev/null || skip "mpirun is not installed (make deps)"
	[ -f "$COMPONENT" ] || skip "$COMPONENT is not built (mpicc missing at build time?)"
fi
for p in tessera tessera-mds tessera-ios; do
	[ -x "$BIN/$p" ] || skip "$BIN/$p is not built"
done

D=$(mktemp -d "${TMPDIR:-/tmp}/tessera-mpi.XXXXXX")
chmod 0755 "$D"
CONF=$D/tessera.conf
MNT=$D/mnt
TRACE=$D/trace
FUSE_OK=0
EXTRA_MOUNTS=()   # further mounts a script made (mount_extra)
mkdir -p "$MNT"

mpi_cleanup() {
	for m in "${EXTRA_MOUNTS[@]}"; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; }
	done
	if [ "$FUSE_OK" = 1 ]; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	for f in "$D"/*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	sleep 0.2
	for f in "$D"/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	if [ -n "${TESSERA_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap mpi_cleanup EXIT

. "$top/tests/integ/ports.sh"

. "$top/tests/integ/munged.sh"
munged_start "$D" || exit 1   # stopped through its pid file, as the daemons
{
	echo "provider = ${TESSERA_TEST_PROVIDER:-tcp;msg}"
	echo "munge_socket = $MUNGE_SOCK"
	port_lines 4
	echo "timeout_ms = 20000"
	echo "mount_point = $MNT"
	echo "key_file = $D/tessera.key"
	# more config lines a script wants (set before sourcing this file)
	[ -z "${MPI_CONF_EXTRA:-}" ] || printf '%s\n' "$MPI_CONF_EXTRA"
} >"$CONF"
# the daemons' capability key (clients never read it)
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$D/tessera.key")
export TESSERA_CONFIG=$CONF

start_daemon() { # NAME PROGRAM ARGS...
	local name=$1 prog=$2
	shift 2
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$D/$name.log")
	"$BIN/$prog" "$@" -p "$D/$name.pid" >>"$D/$name.log" 2>&1 &
	disown $!
}
start_daemon mds tessera-mds -c "$CONF" -d "$D/mds"
for i in 0 1 2 3; do
	start_daemon "ios$i" tessera-ios -c "$CONF" -d "$D/ios$i" -i "$i"
done
up=0
for _ in $(seq 1 300); do
	if [ -s "$D/mds.pid" ] && [ -s "$D/ios3.pid" ] && "$BIN/tessera" ping >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.2
done
[ "$up" = 1 ] || { cat "$D"/*.log >&2; echo "cluster did not come up" >&2; }

# FUSE, for checks "through the mount" (h5dump, ncdump).
FUSE_WHY=""
if [ ! -x "$BIN/tessera-fuse" ]; then
	FUSE_WHY="tessera-fuse is not built"
elif [ ! -c /dev/fuse ] || ! { exec 3<>/dev/fuse; } 2>/dev/null; then
	FUSE_WHY="/dev/fuse is not usable"
elif ! command -v fusermount3 >/dev/null; then
	FUSE_WHY="fusermount3 is not installed"
else
	exec 3>&-
	if "$BIN/tessera-fuse" -c "$CONF" "$MNT" >>"$D/fuse.log" 2>&1; then
		for _ in $(seq 1 50); do
			mountpoint -q "$MNT" && { FUSE_OK=1; break; }
			sleep 0.1
		done
	fi
	[ "$FUSE_OK" = 1 ] || FUSE_WHY="tessera-fuse did not mount (see its log)"
fi

# mount_extra DIR [fuse options]: one more mount of the file system (only
# when the first came up); 0 when it is mounted.
mount_extra() {
	local dir=$1
	shift
	[ "$FUSE_OK" = 1 ] || return 1
	mkdir -p "$dir"
	"$BIN/tessera-fuse" -c "$CONF" "$dir" "$@" >>"$D/fuse-extra.log" 2>&1 || return 1
	EXTRA_MOUNTS+=("$dir")
	for _ in $(seq 1 50); do
		mountpoint -q "$dir" && return 0
		sleep 0.1
	done
	return 1
}

# Open MPI: our component first, libfabric preloaded in the ranks, as a
# user gets them from the environment script; as root, allowed; more ranks
# than cores.
export TESSERA_ROMIO_TRACE=$TRACE
if [ "$MPI_FAMILY" = mpich ]; then
	# MPICH: ranks started on this host by hydra (fork, no ssh), which
	# passes them the whole environment; our libmpich.so.12 first (and
	# the libtessera.so it links). MPICH's
	# ROMIO is inside libmpi, so nothing else is to be pointed at.
	MPIRUN=(env "LD_LIBRARY_PATH=$MPICH_LIBDIR:$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		mpiexec.hydra -launcher fork)
else
	. "$top/romio-adio/tessera-mpi-env.sh" "$B"
	export OMPI_MCA_btl=self,vader   # loopback only, no network probing
	export OMPI_MCA_rmaps_base_oversubscribe=1
	# More ranks than cores: a rank waiting in MPI gives up its core, so the
	# ranks and threads doing the work (lease renewals among them) get it.
	export OMPI_MCA_mpi_yield_when_idle=1
	MPIRUN=(mpirun --oversubscribe)
	[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
fi

# ------------------------------------------------------------ checks
run=0 passed=0 skipped=0 prog_failed=0
failed_names=() skipped_names=()

check() { # NAME FUNCTION ARGS...: the function runs under set -e in a subshell
	local name=$1 log rc
	shift
	run=$((run + 1))
	log=$D/check.$run.log
	echo "[ RUN      ] $name"
	( set -e; "$@" ) >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "[       OK ] $name"
	else
		sed 's/^/    /' "$log"
		echo "[  FAILED  ] $name"
		failed_names+=("$name")
	fi
}

skip_check() { # NAME REASON
	skipped=$((skipped + 1))
	skipped_names+=("$1: $2")
	echo "[ SKIPPED  ] $1: $2"
}

# An MPI program whose own CMocka lines count: NP PROGRAM ARGS...
# Its output goes to stdout as it is; a crash without a summary is caught
# by run-suites.sh (a summary missing counts as a failure) and here. A run
# that has not ended after MPI_TIMEOUT seconds (default 300) is killed and
# fails.
mpi_program() {
	local np=$1 limit=${MPI_TIMEOUT:-300} why
	shift
	timeout -k 5 "$limit" "${MPIRUN[@]}" -np "$np" "$@" >"$D/prog.out" 2>"$D/prog.err"
	local rc=$?
	cat "$D/prog.out"
	if [ "$rc" -ne 0 ] || ! grep -q '^\[==========\]' "$D/prog.out"; then
		prog_failed=1
		sed 's/^/    /' "$D/prog.err" | tail -30
		why="exited with status $rc"
		[ "$rc" -ne 124 ] || why="did not finish within $limit s"
		if [ "$rc" -eq 124 ] || ! grep -q '^\[  FAILED  \] [0-9]* test(s)' "$D/prog.out"; then
			echo "[==========] 1 test(s) run."
			echo "[  PASSED  ] 0 test(s)."
			echo "[  FAILED  ] 1 test(s), listed below:"
			echo "[  FAILED  ] $(basename "$1") -np $np ${*:2} $why"
		fi
	fi
	return 0
}

finish() {
	echo "[==========] $run test(s) run."
	echo "[  PASSED  ] $passed test(s)."
	if [ "$skipped" -gt 0 ]; then
		echo "[  SKIPPED ] $skipped test(s), listed below:"
		for n in "${skipped_names[@]}"; do echo "[  SKIPPED ] $n"; done
	fi
	if [ "${#failed_names[@]}" -gt 0 ]; then
		echo "[  FAILED  ] ${#failed_names[@]} test(s), listed below:"
		for n in "${failed_names[@]}"; do echo "[  FAILED  ] $n"; done
		exit 1
	fi
	exit "$prog_failed"
}
