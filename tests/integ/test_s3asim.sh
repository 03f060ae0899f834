#!/usr/bin/env bash
# test_s3asim.sh - S3aSim (romio-adio/bench/mpi_s3asim.c, seed 001 chapter 6)
# through the Tessera driver, asserting nothing about time:
#   - the output file is byte-identical across the four strategies (MW,
#     WW-Coll, WW-POSIX, WW-List), with and without query sync, at 2 ranks
#     (one worker: contiguous writes) and at 4 (noncontiguous), and with
#     the writes at the end (-E); each run also reads its file back and
#     compares it with the model (-V: verify=ok);
#   - it equals the same run on a local file through ROMIO's UFS driver;
#   - in atomic mode with the driver's lock hints (list:one-try, the
#     dissertation's Figs. 7.9-7.10, and posix:two-phase) the file is the
#     same, and the driver's trace shows the locks were taken (none with
#     atomic mode off);
#   - workers that write a different number of times (one worker without
#     results in a query) finish: WW-POSIX's and WW-List's views and syncs
#     are each worker's own;
#   - bad parameters are refused with a message and exit status 2, a lock
#     hint the driver does not know with a message naming the file.
# The cluster, the mount and mpirun's environment are the MPI suites'
# (romio-adio/tests/mpi_lib.sh); skipped with a reason without MPI.
SUITE=s3asim
TESSERA_MPI=openmpi
. "$(dirname "$0")/../../romio-adio/tests/mpi_lib.sh"
SIM=$B/romio-adio/bench/mpi_s3asim
[ -x "$SIM" ] || skip "$SIM is not built (make; it needs mpicc)"
"$BIN/tessera" mkdir /s3asim >/dev/null
DIR=tessera:$MNT/s3asim
# small: 4 queries of 20-40 results over 6 fragments (about 1 MB), fast compute
MODEL=(-q 4 -f 6 -n 20:40 -c 200 -s 7)
# shellcheck disable=SC2054 # (the commas are the program's lists)
ALL=(-S mw,ww-coll,ww-posix,ww-list -y nosync,sync)

# sim NP RUNS NAME ARGS...: mpi_s3asim -V under mpirun; RUNS lines, each verify=ok
sim() {
	local np=$1 runs=$2 name=$3 out=$D/sim.$RANDOM.out
	shift 3
	timeout -k 5 120 "${MPIRUN[@]}" -np "$np" "$SIM" "${MODEL[@]}" -V "$@" "$name" >"$out" 2>&1 ||
		{ cat "$out"; return 1; }
	cat "$out"
	[ "$(grep -c '^s3asim .* verify=ok$' "$out")" -eq "$runs" ]
}

# same REFERENCE FILE...: every file (Tessera paths, or local with a /)
# equals the reference, byte for byte
same() {
	local ref=$D/ref.bin f
	"$BIN/tessera" cat "$1" >"$ref"
	[ -s "$ref" ]
	shift
	for f in "$@"; do
		if [ -f "$f" ]; then
			cmp "$ref" "$f"
		else
			"$BIN/tessera" cat "$f" | cmp "$ref" -
		fi
		echo "same: $f"
	done
}

all_files() { # PREFIX [ATOMIC]: the Tessera paths of the ALL runs
	local s y
	for s in mw ww-coll ww-posix ww-list; do
		for y in nosync sync; do echo "/s3asim/$1.$s.$y.${2:-off}"; done
	done
}

identical_two_ranks() {
	sim 2 8 "$DIR/two" "${ALL[@]}"
	# shellcheck disable=SC2046
	same /s3asim/two.mw.nosync.off $(all_files two)
}
check "identical_across_strategies_and_sync_2_ranks" identical_two_ranks

identical_four_ranks() {
	sim 4 8 "$DIR/four" "${ALL[@]}"
	# shellcheck disable=SC2046
	same /s3asim/two.mw.nosync.off $(all_files four)
}
check "identical_across_strategies_and_sync_4_ranks" identical_four_ranks

identical_at_end() {
	sim 3 4 "$DIR/end" -E -S mw,ww-coll,ww-posix,ww-list
	same /s3asim/two.mw.nosync.off /s3asim/end.{mw,ww-coll,ww-posix,ww-list}.nosync.off
}
check "identical_with_writes_at_the_end_3_ranks" identical_at_end

equals_local_ufs() {
	mkdir -p "$D/ufs"
	# ufs: names are ROMIO's (Open MPI's own ompio would take the job else)
	OMPI_MCA_io=romio321 sim 3 2 "ufs:$D/ufs/out" -S mw,ww-list
	same /s3asim/two.mw.nosync.off "$D/ufs/out.mw.nosync.off" "$D/ufs/out.ww-list.nosync.off"
}
check "equals_a_local_file_through_ufs" equals_local_ufs

trace_locks() { # FILE-PATTERN: locks summed over the closes of matching files
	awk -v f="$1" '$1 == "ad_tessera" && $4 ~ ("^file=" f) {
		for (i = 1; i <= NF; i++) if (index($i, "locks=") == 1) n += substr($i, 7)
	} END { print n + 0 }' "$TRACE"
}
atomic_with_locks() {
	local m n
	sim 4 6 "$DIR/atomic" -S ww-list,ww-posix -y nosync -a off,list:one-try,posix:two-phase
	same /s3asim/two.mw.nosync.off /s3asim/atomic.ww-{list,posix}.nosync.{off,list-one-try,posix-two-phase}
	for m in list-one-try posix-two-phase; do
		n=$(trace_locks "$MNT/s3asim/atomic\\.ww-list\\.nosync\\.$m")
		echo "$m: $n locks"
		[ "$n" -gt 0 ]
	done
	n=$(trace_locks "$MNT/s3asim/atomic\\.ww-list\\.nosync\\.off")
	echo "off: $n locks"
	[ "$n" -eq 0 ]
	grep -q "file=$MNT/s3asim/atomic.ww-list.nosync.off" "$TRACE"
}
check "atomic_mode_with_lock_hints_same_file" atomic_with_locks

# Workers that write a different number of times (4 queries of one
# fragment over 3 workers): WW-POSIX and WW-List workers set views and
# sync on handles of their own (on the workers' handle a view is
# collective, and the worker with one more waited in it forever)
uneven_writes() {
	sim 4 4 "$DIR/uneven" -f 1 -S ww-list,ww-posix -y nosync -a off,list:one-try
	same /s3asim/two.mw.nosync.off /s3asim/uneven.ww-{list,posix}.nosync.{off,list-one-try}
}
check "workers_writing_unevenly_do_not_wait_for_each_other" uneven_writes

# refused ARGS... MESSAGE: exit status 2, MESSAGE on stderr, no output file
refused() {
	local msg=${*: -1} out=$D/refused.out rc=0
	set -- "${@:1:$(($# - 1))}"
	timeout -k 5 60 "${MPIRUN[@]}" -np 2 "$SIM" "$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	[ "$rc" -ne 0 ]
	grep -q -- "$msg" "$out"
	! grep -q '^s3asim ' "$out"
}
bad_parameters() {
	refused -S master "$DIR/bad" "mpi_s3asim: -S STRATEGY"
	refused -n 50:10 "$DIR/bad" "mpi_s3asim: -n MIN:MAX"
	refused -c 0 "$DIR/bad" "mpi_s3asim: -c SPEED"
	refused -y sometimes "$DIR/bad" "mpi_s3asim: -y nosync|sync"
	refused -a list "$DIR/bad" "mpi_s3asim: -a off|METHOD:PROTOCOL"
	refused -D 10-5:1 "$DIR/bad" "mpi_s3asim: -D LO-HI:WEIGHT"
	refused -q 0 "$DIR/bad" "mpi_s3asim: -q QUERIES"
	refused -q 2 "mpi_s3asim: one output NAME is needed"
	# the driver refuses the hint, naming it; the simulator says which file
	refused -q 2 -f 2 -n 1:2 -S ww-list -a list:sometimes "$DIR/bad" \
		"cannot open $DIR/bad.ww-list.nosync.list-sometimes"
	local rc=0
	timeout -k 5 60 "${MPIRUN[@]}" -np 1 "$SIM" "$DIR/bad" >"$D/one.out" 2>&1 || rc=$?
	cat "$D/one.out"
	# (one test a line: set -e does not stop at the first of an && list)
	[ "$rc" -ne 0 ]
	grep -q "at least 2 ranks" "$D/one.out"
	! "$BIN/tessera" stat /s3asim/bad.mw.nosync.off >/dev/null 2>&1
}
check "bad_parameters_are_refused" bad_parameters
finish
