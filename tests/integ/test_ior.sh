#!/usr/bin/env bash
# test_ior.sh - IOR and mdtest from the vendored IOR sources
# (tests/third_party/ior, built by tests/integ/build-ior.sh) on a Tessera
# cluster, small sizes, every byte checked:
#
# - ior through the MPI-IO driver (`tessera:` names): a shared file,
#   independent and collective, aligned and not (ior-hard's 47,008-byte
#   records), written, read back at once (-W) and read again by another
#   rank (-C) against ior's pattern (-R);
#   and the same on a versioned file (hint tessera_versioned=true);
# - ior POSIX on the FUSE mount: a file per process with fsync, and the
#   unaligned shared file, also in a versioned directory;
# - across the two paths: written through the driver, read on the mount;
# - mdtest-easy (files in a directory per rank) and a shared-directory
#   mdtest with 3,901-byte files read back and checked, on the mount, with
#   no warning and the tree gone afterwards.
#
# The cluster, the mount and mpirun's environment are the MPI suites'
# (romio-adio/tests/mpi_lib.sh). Skipped with a reason when MPI or mpicc is
# missing; the mount's checks are skipped when /dev/fuse is not usable.
SUITE=ior
# ior and mdtest are built with Open MPI's mpicc: run them under its
# mpirun, whatever TESSERA_MPI a caller set for the MPICH suites.
TESSERA_MPI=openmpi
. "$(dirname "$0")/../../romio-adio/tests/mpi_lib.sh"
command -v mpicc >/dev/null || skip "mpicc is not installed (make deps): IOR cannot be built"

if ! IOR_DIR=$(bash "$top/tests/integ/build-ior.sh" 2>"$D/build.log"); then
	sed 's/^/    /' "$D/build.log" | tail -30
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  FAILED  ] 1 test(s), listed below:"
	echo "[  FAILED  ] build_ior (tests/integ/build-ior.sh)"
	exit 1
fi
echo "ior and mdtest: $(sed -n 's/^ *commit *\([0-9a-f]\{12\}\).*/\1/p' "$top/tests/third_party/ior/PINNED") in $IOR_DIR"
IOR=$IOR_DIR/ior
MDTEST=$IOR_DIR/mdtest

# run_ior NP ARGS...: ior under mpirun; fails on a non-zero exit, on any
# ERROR or WARNING line (ior reports data that differs from its pattern,
# and a file size other than the one written, as warnings) and when the
# summary has no write or read row. One warning is expected: ior's MPIIO
# backend asks statvfs() about the name, which a `tessera:` name is not.
# (Tests are `if`s, not `! grep`: set -e ignores a negated command.)
run_ior() {
	local np=$1 out=$D/ior.$RANDOM.out
	shift
	timeout -k 5 120 "${MPIRUN[@]}" -np "$np" "$IOR" "$@" >"$out" 2>&1 || { cat "$out"; return 1; }
	cat "$out"
	if grep -E '^(ERROR|WARNING)|ior ERROR' "$out" | grep -v 'Backend returned error during statfs'; then
		return 1
	fi
	grep -q -E '^(write|read) ' "$out"
}

# run_mdtest NP DIR ARGS...: mdtest under mpirun; fails on any ERROR or
# WARNING line (a failed stat, open, read or remove is one) but the
# notice that a read phase without -e only opens and closes (mdtest-easy's
# open/close phase, as the IO500 runs it); the tree under DIR must be gone
# at the end (every remove happened).
run_mdtest() {
	local np=$1 dir=$2 out=$D/mdtest.$RANDOM.out
	shift 2
	timeout -k 5 120 "${MPIRUN[@]}" -np "$np" "$MDTEST" -d "$dir" "$@" >"$out" 2>&1 ||
		{ cat "$out"; return 1; }
	cat "$out"
	if grep -E 'ERROR|WARNING' "$out" | grep -v 'Read bytes is 0, thus'; then
		return 1
	fi
	grep -q 'File removal' "$out"
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
		echo "left in $dir:"
		ls -lR "$dir"
		return 1
	fi
}

"$BIN/tessera" mkdir /ior >/dev/null

# ------------------------------------------------------------- driver
CHECK=(-w -r -W -R -C -G 28)   # write, read, check both, neighbour reads
check "ior_driver_shared_file" run_ior 4 -a MPIIO "${CHECK[@]}" -b 256k -t 64k -s 2 \
	-o tessera:/ior/shared
check "ior_driver_collective_unaligned" run_ior 4 -a MPIIO -c "${CHECK[@]}" -b 47008 -t 47008 -s 8 \
	-o tessera:/ior/hard
check "ior_driver_file_per_process" run_ior 2 -a MPIIO -F "${CHECK[@]}" -b 512k -t 128k \
	-o tessera:/ior/fpp
driver_claimed() { # the driver, not Open MPI's own I/O, served the names
	for r in 0 1 2 3; do
		grep -q "^ad_tessera close rank=$r file=/ior/hard" "$TRACE" ||
			{ echo "no close of /ior/hard by rank $r in $TRACE"; return 1; }
	done
}
check "ior_went_through_the_driver" driver_claimed
# A versioned file (chapter 8), made by the hint ior passes on
# (IOR_HINT__MPI__*), every byte checked; the file is versioned.
versioned_driver() {
	IOR_HINT__MPI__tessera_versioned=true run_ior 4 -a MPIIO "${CHECK[@]}" -k -b 256k -t 64k \
		-s 2 -o tessera:/ior/versioned || return 1
	"$BIN/tessera" stat /ior/versioned | grep -q 'versioned: *yes' ||
		{ echo "/ior/versioned is not versioned"; return 1; }
}
check "ior_driver_versioned_file" versioned_driver

# -------------------------------------------------------------- mount
if [ "$FUSE_OK" = 1 ]; then
	mkdir -p "$MNT/posix" "$MNT/md"
	check "ior_posix_mount_file_per_process_fsync" run_ior 2 -a POSIX -F -e "${CHECK[@]}" \
		-b 1m -t 64k -o "$MNT/posix/fpp"
	check "ior_posix_mount_shared_unaligned" run_ior 4 -a POSIX "${CHECK[@]}" -b 47008 -t 47008 -s 8 \
		-o "$MNT/posix/hard"
	# the same in a directory whose new files are versioned
	"$BIN/tessera" mkdir /posixv >/dev/null
	"$BIN/tessera" setstripe --versioned /posixv >/dev/null
	check "ior_posix_mount_versioned_unaligned" run_ior 4 -a POSIX "${CHECK[@]}" -b 47008 \
		-t 47008 -s 8 -o "$MNT/posixv/hard"
	# Written through the driver (kept), read and checked on the mount by
	# the neighbouring ranks: the two paths see the same bytes.
	cross() {
		run_ior 2 -a MPIIO -w -k -G 28 -b 300000 -t 100000 -o tessera:/ior/cross
		run_ior 2 -a POSIX -r -R -C -k -G 28 -b 300000 -t 100000 -o "$MNT/ior/cross"
	}
	check "ior_driver_write_mount_read" cross
	# The check is live: the same bytes against another seed's pattern fail.
	wrong_seed() {
		if run_ior 2 -a POSIX -r -R -C -G 29 -b 300000 -t 100000 -o "$MNT/ior/cross" >"$D/wrong.out"; then
			cat "$D/wrong.out"
			echo "ior found nothing wrong reading seed 28's file as seed 29's"
			return 1
		fi
		grep 'Incorrect data' "$D/wrong.out"
	}
	check "ior_data_check_catches_a_wrong_pattern" wrong_seed
	check "mdtest_easy_mount" run_mdtest 4 "$MNT/md/easy" -F -u -N 1 -n 100
	check "mdtest_shared_dir_3901_bytes_checked_mount" run_mdtest 4 "$MNT/md/hard" -F -N 1 -n 50 \
		-w 3901 -e 3901 -X
else
	skip_check "ior_and_mdtest_on_the_mount" "$FUSE_WHY"
fi
finish
