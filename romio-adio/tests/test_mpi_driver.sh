#!/usr/bin/env bash
# test_mpi_driver.sh - the Tessera ROMIO driver under mpirun (1-4 ranks):
# mpi_dtype (datatypes to dataloops, against MPI_Pack), mpi_basic (open,
# contiguous I/O, sizes, hints, refusals), mpi_views
# (vector/subarray/darray/struct views by every method, independent and
# collective, against ROMIO's UFS driver), then proof from the driver's
# trace that it ran: Open MPI silently falls back to OMPIO when the
# component is stale or missing, and I/O would still succeed.
SUITE=mpi_driver
. "$(dirname "$0")/mpi_lib.sh"
PROGS=$B/romio-adio/tests
for p in mpi_basic mpi_views mpi_dtype; do
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
