#!/usr/bin/env bash
# test_mpi_atomic.sh - MPI atomic mode and shared file pointers through the
# Tessera driver (mpi_atomic.c; files of 4 KiB strips over 4 storage
# daemons, so one access spans several):
#   atomicity   8 ranks, every lock method x protocol, 20 repetitions: rank
#               0 overwrites 10,000 ints (contiguous, then a vector view)
#               while 7 ranks read; every read is all old or all new. The
#               posix method's vector view (10,000 locks an access, about
#               10 s a repetition here) repeats once: 7 reads all under way
#               with the write (TESSERA_ATOMIC_POSIX_VREPS=3 for more)
#   serial      8 ranks write their own byte value to random overlapping
#               noncontiguous views at once (independent and collective,
#               every method x protocol): the result is serializable
#   shared      shared file pointers: write_shared tiles the file,
#               read_shared reads each record once, ordered calls in rank
#               order, seek/position/view/append/sequential, atomic mode
#   versioned   the atomicity, serializability and sieving checks again on
#               versioned files (hint tessera_versioned=true): they pass
#               with no lock taken (chapter 8), and one VERSION_ID request
#               per open for all 8 ranks (rank 0's, broadcast)
#   killed      a rank killed while holding a lock: the others go on
#               within the lease (10 s here: shorter ones expired under load)
# and from the driver's trace, that the locks and the pointer were the
# driver's (locks taken, ROMIO's generic locks routed to it, fetch-adds).
SUITE=mpi_atomic
LEASE_MS=10000
MPI_CONF_EXTRA="lock_lease_ms = $LEASE_MS"
. "$(dirname "$0")/mpi_lib.sh"
PROG=$MPI_PROGS/mpi_atomic
[ -x "$PROG" ] || skip "$PROG is not built"
"$BIN/tessera" mkdir /atomic >/dev/null
DIR=tessera:$MNT/atomic

mpi_program 8 "$PROG" "$DIR" atomicity "${TESSERA_ATOMIC_REPS:-20}" "${TESSERA_ATOMIC_POSIX_VREPS:-1}"
mpi_program 8 "$PROG" "$DIR" serial "${TESSERA_SERIAL_ROUNDS:-20}"
mpi_program 8 "$PROG" "$DIR" shared

# ------------------------------------------------------------ trace
trace_sum() { # FILE-PATTERN COUNTER: summed over the closes of matching files
	awk -v f="$1" -v k="$2" '$1 == "ad_tessera" && $4 ~ ("^file=" f) {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) n += substr($i, length(k) + 2)
	} END { print n + 0 }' "$TRACE"
}
# METHOD COUNTER: summed over the atomicity files of one lock method (the
# protocol in the pattern, so that "posix" is not also "posix-seq")
method_sum() { trace_sum "$MNT/atomic/atomicity-$1-(two-phase|one-try|alt-try)$" "$2"; }
locks_were_taken() {
	local m n r
	for m in posix list datatype posix-seq list-split block; do
		n=$(method_sum "$m" locks)
		r=$(method_sum "$m" lock_requests)
		echo "$m: $n locks, $r lock requests"
		[ "$n" -gt 0 ] && [ "$r" -ge "$n" ]
	done
	# posix: a lock request per region (posix-seq: a lock per region), so
	# many more than list, which sends one per storage daemon
	[ "$(method_sum posix lock_requests)" -gt "$(method_sum list lock_requests)" ]
	[ "$(method_sum posix-seq locks)" -gt "$(method_sum list locks)" ]
	# posix takes one lock an access (of many requests); posix-seq, with
	# the same accesses, one lock a region
	[ "$(method_sum posix locks)" -lt "$(method_sum posix-seq locks)" ]
}
check "atomic_accesses_took_locks" locks_were_taken
# A versioned file's atomic and sieving accesses took none: versions, not
# locks, made them atomic (atomicity_versioned, serializable_versioned_*,
# sieving_writes_at_once_versioned passed above).
versioned_took_no_locks() {
	local f n
	for f in atomicity-versioned- serial-versioned- sieve-versioned; do
		n=$(trace_sum "$MNT/atomic/$f" locks)
		echo "$f: $n locks"
		[ "$n" -eq 0 ] || return 1
	done
	# and the trace has them (a pattern that matched nothing would pass)
	grep -q "file=$MNT/atomic/atomicity-versioned-" "$TRACE"
}
check "versioned_accesses_took_no_locks" versioned_took_no_locks
# Each open of a versioned file made one VERSION_ID request for the whole
# job (rank 0's, one ID per rank, broadcast with the open): no rank took
# an ID of its own, and every rank's writes committed (the checks above
# read them back).
versioned_took_one_id_request() {
	awk -v d="$MNT/atomic/" '$1 == "ad_tessera" && $4 ~ ("^file=" d "(atomicity|serial|sieve)-versioned") {
		f = substr($4, 6)
		for (i = 1; i <= NF; i++) {
			if (index($i, "version_ids=") == 1) ids[f] += substr($i, 13)
			if (index($i, "bytes_w=") == 1 && substr($i, 9) + 0 > 0) writers[f]++
		}
		if ($3 == "rank=0") opens[f]++
	} END {
		bad = 0
		for (f in opens) {
			printf "%s: %d open(s), %d VERSION_ID request(s), %d rank(s) wrote\n", f, opens[f], ids[f], writers[f]
			if (ids[f] != opens[f]) bad = 1
			# independent writes: every rank wrote, under its ID of the block
			if (f ~ /-indep-/ && writers[f] != 8 * opens[f]) bad = 1
			n++
		}
		exit bad || n == 0
	}' "$TRACE" | sort | tail -n 12
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
check "versioned_job_one_writer_id_request" versioned_took_one_id_request
generic_locks_routed() {
	n=$(trace_sum "$MNT/atomic/shared-atomic" generic_locks)
	echo "ROMIO's generic locks taken by the driver: $n"
	[ "$n" -ge 800 ]   # 8 ranks x 100 atomic write_shared
}
check "romio_generic_locks_go_to_the_driver" generic_locks_routed
pointer_is_a_fetch_add() {
	n=$(trace_sum "$MNT/atomic/shared\$" shared_fp_ops)
	echo "shared pointer fetch-adds: $n"
	[ "$n" -ge 8000 ]
}
check "shared_pointer_is_a_fetch_add" pointer_is_a_fetch_add

# ------------------------------------------------------------ killed
# A rank holds a lock (an atomic write of 1,000,000 pieces, one call each) and
# is killed; 7 ranks of another job wait on the bytes and go on once the
# lease runs out.
killed_holder() {
	local pidfile=$D/victim.pid started=$D/survivors.started size pid kill_at end
	rm -f "$pidfile" "$started"
	"${MPIRUN[@]}" -np 1 "$PROG" "$DIR" victim "$pidfile" >"$D/victim.out" 2>&1 &
	local victim_job=$!
	for _ in $(seq 1 300); do
		size=$("$BIN/tessera" stat /atomic/killed 2>/dev/null | awk '$1 == "Size:" { print $2 }')
		[ -s "$pidfile" ] && [ "${size:-0}" -gt 0 ] && break
		sleep 0.1
	done
	[ "${size:-0}" -gt 0 ] || { echo "the victim did not start writing"; cat "$D/victim.out"; return 1; }
	pid=$(cat "$pidfile")
	timeout -k 5 120 "${MPIRUN[@]}" -np 7 "$PROG" "$DIR" survivors "$started" \
		>"$D/survivors.out" 2>&1 &
	local survivors_job=$!
	for _ in $(seq 1 300); do
		[ -e "$started" ] && break
		sleep 0.1
	done
	sleep 1   # the survivors wait on the victim's lock now
	kill_at=$(date +%s.%N)
	kill -9 "$pid"
	wait "$victim_job" || true
	wait "$survivors_job" || { cat "$D/survivors.out"; return 1; }
	cat "$D/survivors.out"
	grep -q '^\[  PASSED  \] 1 test' "$D/survivors.out"
	end=$(sed -n 's/^survivors-ended-at //p' "$D/survivors.out")
	awk -v k="$kill_at" -v e="$end" -v lease="$LEASE_MS" 'BEGIN {
		d = e - k
		printf "the survivors ended %.2f s after the kill (lease %.1f s)\n", d, lease / 1000
		# they waited for the dead holder (the lock was real) and no longer
		# than its lease, plus time for the I/O and a renewal period
		exit !(d > 0 && d < lease / 1000 + 3)
	}'
}
check "killed_lock_holder_others_go_on_within_the_lease" killed_holder
finish
