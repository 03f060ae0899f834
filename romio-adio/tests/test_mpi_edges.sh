#!/usr/bin/env bash
# test_mpi_edges.sh - MPI-IO edges (issue 27 item 6):
#   empty views  mpi_empty with 2, 3 and 4 ranks: ranks whose file view
#                holds no data (a filetype of size 0, count 0, a view past
#                all data) in independent and collective reads and writes,
#                plain and atomic; every call succeeds, on ROMIO's ufs:
#                driver as on tessera:, with the same bytes read and the
#                same files (OMPI_MCA_io=romio321: a ufs: name goes to ROMIO,
#                not to OMPIO)
#   quiet errors mpi_errors: an open of a missing file, exclusive creates of
#                an existing one, a delete of a missing one fail with the
#                right class and words in the code, and nothing on stderr;
#                with TESSERA_DEBUG=1 the driver's debug log (stderr) has them
SUITE=mpi_edges
. "$(dirname "$0")/mpi_lib.sh"
PROGS=$B/romio-adio/tests
for p in mpi_empty mpi_errors; do
	[ -x "$PROGS/$p" ] || skip "$PROGS/$p is not built"
done

# ---------------------------------------------------------- empty views
"$BIN/tessera" mkdir /empty2 /empty3 /empty4 /errors >/dev/null
for np in 2 3 4; do
	mkdir -p "$D/ufs$np"
	OMPI_MCA_io=romio321 mpi_program "$np" "$PROGS/mpi_empty" "tessera:$MNT/empty$np" "ufs:$D/ufs$np"
done

# --------------------------------------------------------- quiet errors
# mpi_program keeps the program's stderr in $D/prog.err.
mpi_program 3 "$PROGS/mpi_errors" "tessera:$MNT/errors"
cp "$D/prog.err" "$D/errors.err"
stderr_is_empty() {
	cat "$D/errors.err"
	[ ! -s "$D/errors.err" ]
}
check "returned_errors_print_nothing" stderr_is_empty
debug_log_has_them() {
	"$BIN/tessera" rm /errors/exists >/dev/null
	TESSERA_DEBUG=1 timeout -k 5 300 "${MPIRUN[@]}" -np 3 "$PROGS/mpi_errors" "tessera:$MNT/errors" \
		>"$D/debug.out" 2>"$D/debug.err"
	cat "$D/debug.err"
	grep -q "^tessera: .*MPI_File_open .*/errors/missing: .*no such file" "$D/debug.err"
	grep -q "^tessera: .*MPI_File_open .*/errors/exists: .*exists" "$D/debug.err"
}
check "debug_log_has_the_errors" debug_log_has_them
finish
