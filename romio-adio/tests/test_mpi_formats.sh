#!/usr/bin/env bash
# test_mpi_formats.sh - parallel HDF5, NetCDF-4 and PnetCDF over the
# Tessera driver (4 ranks, then 2), names under the mount point; the files
# are then read by h5dump and ncdump through the FUSE mount. Where the mount
# is not usable those checks are skipped with the reason, and the same
# tools read copies taken out with `tessera cp` instead. One HDF5 file is
# left open at MPI_Finalize (HDF5 closes it from its MPI_COMM_SELF
# callback, after the driver's), then read back by a later run and h5dump.
# Close-to-open: a second mount that caches attributes for an hour looks
# files up before the driver writes them; h5dump and ncdump through it
# must still read the written files.
# A metadata cache image: HDF5's serial API writes a file through the
# mount with an image of its metadata cache, then 2 ranks open it
# read-only (tessera: name, then the bare name on the mount) and read it,
# close it without reading (HDF5 loads the image in H5Fclose), or leave it
# to MPI_Finalize (HDF5 loads it there, from its MPI_COMM_SELF callback,
# after the driver's). Only rank 0 reads the image; the others wait in
# MPI_Bcast, so each run has a time limit, and freed memory is overwritten
# (MALLOC_PERTURB_) so that a read through a connection already gone fails
# rather than works by chance. Without the mount, the file is written
# locally and copied in.
SUITE=mpi_formats
. "$(dirname "$0")/mpi_lib.sh"
PROGS=$B/romio-adio/tests
"$BIN/tessera" mkdir /fmt >/dev/null

for p in hdf5 netcdf pnetcdf; do
	if [ -x "$PROGS/mpi_$p" ]; then
		mpi_program 4 "$PROGS/mpi_$p" "tessera:$MNT/fmt/four.$p"
		mpi_program 2 "$PROGS/mpi_$p" "tessera:$MNT/fmt/two.$p"
	else
		skip_check "mpi_$p" "$PROGS/mpi_$p is not built (library missing at build time)"
	fi
done
if [ -x "$PROGS/mpi_hdf5" ]; then
	mpi_program 4 "$PROGS/mpi_hdf5" "tessera:$MNT/fmt/atexit.hdf5" open-at-exit
	mpi_program 4 "$PROGS/mpi_hdf5" "tessera:$MNT/fmt/atexit.hdf5" read
fi

image_copied_in() {
	"$PROGS/mpi_hdf5" "$D/image.hdf5" write-image
	"$BIN/tessera" cp "$D/image.hdf5" tessera:/fmt/image.hdf5 >/dev/null
}
if [ -x "$PROGS/mpi_hdf5" ]; then
	if [ "$FUSE_OK" = 1 ]; then
		check hdf5_image_written_serially_through_the_mount \
			"$PROGS/mpi_hdf5" "$MNT/fmt/image.hdf5" write-image
		image_names=("tessera:$MNT/fmt/image.hdf5" "$MNT/fmt/image.hdf5")
	else
		skip_check hdf5_image_written_serially_through_the_mount "$FUSE_WHY"
		check hdf5_image_written_serially_and_copied_in image_copied_in
		image_names=("tessera:/fmt/image.hdf5")
	fi
	for name in "${image_names[@]}"; do
		for mode in image-read image-close image-exit; do
			MALLOC_PERTURB_=165 MPI_TIMEOUT=120 \
				mpi_program 2 "$PROGS/mpi_hdf5" "$name" "$mode"
		done
	done
fi

# The tools read a file: through the mount, or a copy.
h5_ok() { # FILE
	h5dump -H "$1" >"$D/h5.out"
	for d in contig_collective contig_independent chunked_collective chunked_independent; do
		grep -q "DATASET \"$d\"" "$D/h5.out"
	done
	grep -q 'SIMPLE { ( 32, 100 )' "$D/h5.out"
	# row 9 was written by rank 1: value 1000000 * which + row * 1000 + col
	h5dump -d /chunked_collective -s "9,0" -c "1,3" "$1" | grep -q '(9,0): 3009000, 3009001, 3009002'
	h5dump -d /contig_independent -s "31,99" -c "1,1" "$1" | grep -q '(31,99): 2031099'
}
nc_ok() { # FILE
	ncdump -h "$1" | grep -q 'int field(y, x)'
	ncdump -h "$1" | grep -q ':title = "tessera netcdf"'
	ncdump -v field "$1" | tr -d ' \n' | grep -q 'field=0,1,2,3,'
	ncdump -v field "$1" | tr -d ' \n' | grep -q '1531;}'   # last value: row 15, col 31
}
pnc_ok() { # FILE
	ncdump -h "$1" | grep -q 'double temperature(y, x)'
	ncdump -h "$1" | grep -q 'y = 20'
	ncdump -v temperature "$1" | tr -d ' \n' | grep -q '19.39;}'
}
copy_out() { # NAME: the file as a local copy
	"$BIN/tessera" cp "tessera:/fmt/$1" "$D/$1" >/dev/null
	echo "$D/$1"
}
through_mount() { "$2" "$MNT/fmt/$1"; }
through_copy() { "$2" "$(copy_out "$1")"; }

for pair in four.hdf5:h5_ok atexit.hdf5:h5_ok four.netcdf:nc_ok four.pnetcdf:pnc_ok; do
	f=${pair%%:*} fn=${pair#*:}
	command -v h5dump >/dev/null && command -v ncdump >/dev/null ||
		{ skip_check "tools_$f" "h5dump or ncdump is not installed"; continue; }
	if [ "$FUSE_OK" = 1 ]; then
		check "${fn%_ok}_dump_${f}_through_mount" through_mount "$f" "$fn"
	else
		skip_check "${fn%_ok}_dump_${f}_through_mount" "$FUSE_WHY"
	fi
	check "${fn%_ok}_dump_${f}_copied_out" through_copy "$f" "$fn"
done

# Close-to-open between the driver and a mount that held the files'
# attributes (size 0) from before they were written.
LONG=$D/mnt-long
if mount_extra "$LONG" -o attr_timeout=3600,entry_timeout=3600; then
	for f in cto.pnetcdf cto.hdf5; do
		touch "$LONG/fmt/$f"
		[ "$(wc -c <"$LONG/fmt/$f")" = 0 ]
	done
	[ -x "$PROGS/mpi_pnetcdf" ] && mpi_program 4 "$PROGS/mpi_pnetcdf" "tessera:$MNT/fmt/cto.pnetcdf"
	[ -x "$PROGS/mpi_hdf5" ] && mpi_program 4 "$PROGS/mpi_hdf5" "tessera:$MNT/fmt/cto.hdf5"
	if command -v ncdump >/dev/null && command -v h5dump >/dev/null; then
		check "pnc_dump_through_a_mount_that_cached_the_file" pnc_ok "$LONG/fmt/cto.pnetcdf"
		check "h5_dump_through_a_mount_that_cached_the_file" h5_ok "$LONG/fmt/cto.hdf5"
	fi
	fusermount3 -u "$LONG"
else
	skip_check "close_to_open_through_a_mount" "${FUSE_WHY:-a second mount did not come up}"
fi

# The driver ran for each library (not OMPIO).
driver_ran() { # FILE
	grep -q "^ad_tessera close rank=3 file=$MNT/fmt/$1 " "$TRACE"
}
for f in four.hdf5 four.netcdf four.pnetcdf; do
	check "driver_ran_$f" driver_ran "$f"
done
# ... and for every run on the image (rank 1 of 2 closed it each time).
image_runs() { # NAME: the driver's closes of it on rank 1
	grep -c "^ad_tessera close rank=1 file=$1 " "$TRACE"
}
if [ -x "$PROGS/mpi_hdf5" ]; then
	image_file=$MNT/fmt/image.hdf5
	[ "$FUSE_OK" = 1 ] || image_file=/fmt/image.hdf5
	check driver_ran_image.hdf5 test "$(image_runs "$image_file")" -eq $((3 * ${#image_names[@]}))
fi
finish
