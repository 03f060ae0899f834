#!/usr/bin/env bash
# test_mpi_driver.sh - the Tessera ROMIO driver under mpirun (1-4 ranks):
# mpi_dtype (datatypes to dataloops, against MPI_Pack), mpi_basic (open,
# contiguous I/O, sizes, hints, refusals), mpi_views
# (vector/subarray/darray/struct views and one whose lower bound lies past
# its extent, by every method, independent and
# collective, against ROMIO's UFS driver), then proof from the driver's
# trace that it ran: Open MPI silently falls back to OMPIO when the
# component is stale or missing, and I/O would still succeed.
#
# Names: mpi_basic again with names on the mount without the "tessera:"
# prefix (absolute, relative to a working directory on the mount, through
# a symbolic link), and relative names under ROMIO_FSTYPE_FORCE=tessera:;
# mpi_exchange (memory lists, two-phase exchange counters, one sync);
# a local name stays with Open MPI's own I/O. Finalize: mpi_finalize
# leaves files open for MPI_Finalize (closed from MPI_COMM_SELF callbacks
# before and after the driver's, and never), then a later run checks them.
SUITE=mpi_driver
. "$(dirname "$0")/mpi_lib.sh"
PROGS=$MPI_PROGS
for p in mpi_basic mpi_views mpi_dtype mpi_finalize; do
	[ -x "$PROGS/$p" ] || skip "$PROGS/$p is not built"
done

METHODS=posix,sieve,list,datatype

"$BIN/tessera" mkdir /basic1 /basic4 /views 2>"$D/mkdir.err" || cat "$D/mkdir.err"
mkdir -p "$D/ufs"

mpi_program 1 "$PROGS/mpi_dtype"
mpi_program 1 "$PROGS/mpi_basic" "tessera:$MNT/basic1" tessera:/basic1
mpi_program 4 "$PROGS/mpi_basic" "tessera:$MNT/basic4" tessera:/basic4
mpi_program 4 "$PROGS/mpi_views" "tessera:$MNT/views" "$D/ufs" "$METHODS"
mpi_program 3 "$PROGS/mpi_views" "tessera:/views" "$D/ufs" "$METHODS"

# ---------------------------------------------------------------- names
"$BIN/tessera" mkdir /names /names/abs /names/rel /names/link /names/forced /names/forced/sub >/dev/null
if [ "$FUSE_OK" = 1 ]; then
	mpi_program 2 "$PROGS/mpi_basic" "$MNT/names/abs" tessera:/names/abs
	cd "$MNT/names"
	mpi_program 2 "$PROGS/mpi_basic" rel tessera:/names/rel
	cd "$D"
	ln -s "$MNT/names" "$D/link"
	mpi_program 2 "$PROGS/mpi_basic" "$D/link/link" tessera:/names/link
else
	skip_check "names_on_the_mount" "$FUSE_WHY"
	mkdir -p "$MNT/names/forced"   # the mount point's own directory
fi
# With the prefix forced, relative names resolve against the working
# directory (the mount point's, mapped to Tessera paths, mount or not).
cd "$MNT/names/forced"
ROMIO_FSTYPE_FORCE=tessera: mpi_program 2 "$PROGS/mpi_basic" ../forced/./sub tessera:/names/forced/sub
cd "$D"
names_claimed() {
	for n in "$MNT/names/abs" rel/selected "$D/link/link" ../forced/./sub/selected; do
		grep -q "^ad_tessera close rank=1 file=$n" "$TRACE" || { echo "no trace of $n"; return 1; }
	done
}
if [ "$FUSE_OK" = 1 ]; then
	check "names_on_the_mount_go_through_the_driver" names_claimed
fi
local_names_unclaimed() {
	mkdir -p "$D/local"
	timeout -k 5 300 "${MPIRUN[@]}" -np 2 "$PROGS/mpi_finalize" write "$D/local"
	[ "$(stat -c %s "$D/local/late")" = 200000 ]
	! grep "file=$D/local" "$TRACE"
}
check "local_names_stay_with_open_mpi" local_names_unclaimed

# tessera-mpi-env.sh (which mpi_lib.sh sources) has every rank start with
# libfabric loaded, and only the ranks: without its env list, none does.
ranks_preload_libfabric() {
	n=$("${MPIRUN[@]}" -np 2 grep -l 'libfabric\.so' /proc/self/maps | grep -c maps)
	echo "ranks with libfabric mapped: $n of 2"
	[ "$n" = 2 ]
	if grep -q 'libfabric\.so' /proc/self/maps; then
		echo "the test's own shell has libfabric mapped: the env script preloads it beyond the ranks"
		return 1
	fi
	n=$(env -u OMPI_MCA_mca_base_env_list "${MPIRUN[@]}" -np 2 grep -l 'libfabric\.so' /proc/self/maps | grep -c maps || true)
	echo "without the env list: $n of 2"
	[ "$n" = 0 ]
}
if [ "$MPI_FAMILY" = mpich ]; then
	skip_check "ranks_start_with_libfabric_loaded" "Open MPI's env list only (MPICH ranks load libfabric through libtessera.so)"
else
	check "ranks_start_with_libfabric_loaded" ranks_preload_libfabric
fi

# ------------------------------------------------------------- exchange
# Memory lists (tessera_mem_pack=false), the two-phase exchange counters
# and tessera_sync=one (mpi_exchange.c).
if [ -x "$PROGS/mpi_exchange" ]; then
	"$BIN/tessera" mkdir /exch >/dev/null
	mpi_program 4 "$PROGS/mpi_exchange" tessera:/exch
	mpi_program 2 "$PROGS/mpi_exchange" tessera:/exch
	# seed 001 §5.3: one MPI_File_sync of 4 ranks is one sync per object
	# with tessera_sync=one, four with every
	all_syncs() { "$BIN/tessera" stats | awk '$1 == "all" && match($0, /syncs [0-9]+/) { print substr($0, RSTART + 6, RLENGTH - 6) }'; }
	one_sync_for_all() {
		local a b c
		a=$(all_syncs)
		timeout -k 5 300 "${MPIRUN[@]}" -np 4 "$PROGS/mpi_exchange" sync tessera:/exch every
		b=$(all_syncs)
		timeout -k 5 300 "${MPIRUN[@]}" -np 4 "$PROGS/mpi_exchange" sync tessera:/exch one
		c=$(all_syncs)
		echo "storage daemon syncs: every $((b - a)), one $((c - b))"
		[ $((c - b)) -gt 0 ] && [ $((b - a)) -eq $((4 * (c - b))) ]
	}
	check "sync_one_syncs_once_for_all_ranks" one_sync_for_all
else
	skip_check "mpi_exchange" "$PROGS/mpi_exchange is not built"
fi

# ------------------------------------------------------------- finalize
"$BIN/tessera" mkdir /fin >/dev/null
syncs() { "$BIN/tessera" stats | awk '$1 == "all" && match($0, /syncs [0-9]+/) { print substr($0, RSTART + 6, RLENGTH - 6) }'; }
finalize_left_open() {
	local before after
	before=$(syncs)
	timeout -k 5 300 "${MPIRUN[@]}" -np 2 "$PROGS/mpi_finalize" write "tessera:$MNT/fin"
	after=$(syncs)
	echo "storage daemon syncs: $before before, $after after"
	# files closed once MPI_Finalize began were synced first
	[ "$after" -gt "$before" ]
}
check "finalize_with_files_left_open" finalize_left_open
mpi_program 2 "$PROGS/mpi_finalize" check "tessera:$MNT/fin"

# ---------------------------------------------------------------- proof
trace_has_ranks() { # every rank 0-3 closed a Tessera file
	for r in 0 1 2 3; do
		grep -q "^ad_tessera close rank=$r file=$MNT/basic4/" "$TRACE"
	done
}
collective_open_asks_once() {
	# /basic4/contig was opened by 4 ranks: rank 0 asked the metadata
	# daemon, ranks 1-3 opened from its share.
	grep "file=$MNT/basic4/contig " "$TRACE" | grep -q "rank=0 .*mds_opens=1 shared_opens=0"
	[ "$(grep "file=$MNT/basic4/contig " "$TRACE" | grep -c "mds_opens=0 shared_opens=1")" -ge 3 ]
}
paths_used() {
	# contiguous, collective and (from mpi_views) strided calls of each method
	awk -v methods="$METHODS" '/^ad_tessera close/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		c += v["contig_w"] + v["contig_r"]; coll += v["coll_w"] + v["coll_r"]
		split(v["strided_w"], w, "/"); split(v["strided_r"], r, "/")
		for (m = 1; m <= 4; m++) { sw[m] += w[m]; sr[m] += r[m] }
	} END {
		printf "contig=%d coll=%d posix=%d/%d sieve=%d/%d list=%d/%d datatype=%d/%d\n",
			c, coll, sw[1], sr[1], sw[2], sr[2], sw[3], sr[3], sw[4], sr[4]
		if (!c || !coll || !sw[1] || !sr[1] || !sw[2] || !sr[2]) exit 1
		if (methods ~ /list/ && (!sw[3] || !sr[3])) exit 1
		if (methods ~ /datatype/ && (!sw[4] || !sr[4])) exit 1
	}' "$TRACE"
}
# The storage daemons' own counters: list and datatype requests arrived.
servers_saw_methods() {
	"$BIN/tessera" stats >"$D/stats"
	cat "$D/stats"
	awk '$1 == "all" && $2 == "list" && $3 > 0 { l = 1 }
	     $1 == "all" && $2 == "datatype" && $3 > 0 { d = 1 }
	     END { exit !(l && d) }' "$D/stats"
}
check "servers_saw_list_and_datatype_requests" servers_saw_methods
if [ -s "$TRACE" ]; then
	check "driver_ran_on_every_rank" trace_has_ranks
	check "collective_open_asks_the_mds_once" collective_open_asks_once
	check "driver_paths_used" paths_used
else
	check "driver_ran (trace $TRACE written)" false
fi
finish
