#!/usr/bin/env bash
# test_mpi_romio.sh - ROMIO's own test programs (from the Debian openmpi
# source build-romio.sh built the component from) against "tessera:" names,
# with the rank counts of ROMIO's runtests. A program passes when it exits
# 0 and prints "No Errors" (large_file prints nothing: exit status and no
# error line), and the driver's trace shows it ran. large_file writes and
# reads back a 4 GiB file (about 15 s here); it is skipped, saying so, with
# less than 10 GiB free, or with TESSERA_ROMIO_LARGE=0.
#
# atomicity (8 ranks, as its comment asks), shared_fp and ordered_fp
# write to a directory of 4 KiB strips, so that one access spans every
# storage daemon (at the default 64 KiB its 40 KB would sit on one daemon,
# which serves one request at a time, and pass without locks).
#
# Left out, and why:
#   error  checks for MPICH's error text ("displacement"); Open MPI's ROMIO
#       glue keeps only error classes, so it fails the same way on ufs:
#   perf, coll_perf, large_array  benchmarks / gigabytes, not tests
#
# noncontig, noncontig_coll, noncontig_coll2 and i_noncontig use MPI_LB and
# MPI_UB, which Open MPI 4's mpi.h hides; romio_mpi1_compat.h declares them
# (libmpi still has them). A listed program that did not compile fails.
#
# atomicity runs twice: also in a directory whose new files are versioned
# (tessera setstripe --versioned; chapter 8), where it must pass with no
# lock taken (romio_atomicity_versioned).
#
# Run, with the driver's documented differences allowed (and nothing else):
#   file_info  expects the striping_factor it asked for (0) echoed back; the
#              driver reports the file's real striping (what is in force)
#   external32, syshints, fmisc, fcoll_test, pfcoll_test  external32 data
#       representation and the Fortran programs: not about the driver
#       (Debian's libraries are built without Fortran ROMIO tests)
SUITE=mpi_romio
. "$(dirname "$0")/mpi_lib.sh"
RT=$B/romio-adio/romio-tests
[ -d "$RT" ] || skip "$RT is missing (built by romio-adio/build-romio.sh)"
"$BIN/tessera" mkdir /romio /romio/small >/dev/null
"$BIN/tessera" setstripe -s 4096 -c 4 /romio/small >/dev/null

# name:ranks:how the file name is passed (f: -fname F, v: -v -fname F,
# a: F, h: -h -f F)
tests="simple:4:f psimple:4:f coll_test:4:f hindexed:4:a types_with_zeros:2:a darray_read:4:a
aggregation1:4:h aggregation2:4:a async:4:f async-multiple:4:f excl:4:f file_info:4:v
split_coll:4:f status:1:f misc:4:f large_file:1:f noncontig:2:f noncontig_coll:2:f
noncontig_coll2:4:f i_noncontig:2:f atomicity:8:f shared_fp:4:f ordered_fp:4:f"

# Complaints a test may make that are the driver's documented choices.
allowed() { # NAME: a grep -E pattern of allowed lines, or nothing
	case $1 in
	file_info) echo '^striping_factor is [0-9]+; should be 0$|^Found [0-9]+ errors' ;;
	esac
}

run_romio_test() { # NAME NP HOW
	local name=$1 np=$2 how=$3 f="tessera:$MNT/romio/$1" args rc ok
	case $name in atomicity | shared_fp | ordered_fp) f="tessera:$MNT/romio/small/$name" ;; esac
	case $how in
	f) args=(-fname "$f") ;;
	v) args=(-v -fname "$f") ;;
	a) args=("$f") ;;
	h) args=(-h -f "$f") ;;
	esac
	rc=0
	timeout -k 5 600 "${MPIRUN[@]}" -np "$np" "$RT/$name" "${args[@]}" >"$D/$name.out" 2>&1 ||
		rc=$?
	cat "$D/$name.out"
	ok=$(allowed "$name")
	if [ -n "$ok" ]; then
		# Only allowed complaints; the rest of the program ran clean.
		grep -E "$ok" "$D/$name.out" >/dev/null || grep -q 'No Errors' "$D/$name.out"
		if grep -Ev "$ok|^unexpected key|^tessera: |No Errors|^ *$|^-+$|MPI_ABORT|NOTE: invoking|You may or may not|exactly when Open MPI|^\[vm|errorcode" \
			"$D/$name.out" | grep -Eiq 'error|should|fail|signal|abort'; then
			echo "complaints beyond the allowed ones (/$ok/)"
			return 1
		fi
	elif [ "$rc" -ne 0 ]; then
		echo "exit status $rc"
		return 1
	elif [ "$name" = large_file ]; then
		if grep -qi 'error' "$D/$name.out"; then
			echo "$name reported an error"
			return 1
		fi
	else
		grep -q 'No Errors' "$D/$name.out"
	fi
	grep -q "^ad_tessera close rank=0 file=${f#tessera:}" "$TRACE" ||
		{ echo "no trace of the Tessera driver for $name"; return 1; }
	# The driver, not luck, made them pass: locks taken, pointers fetched.
	case $name in
	atomicity) traced_sum "${f#tessera:}" locks ;;
	shared_fp | ordered_fp) traced_sum "${f#tessera:}" shared_fp_ops ;;
	esac
}

traced_sum() { # FILE COUNTER: the counter summed over the file's closes is > 0
	awk -v f="file=$1" -v k="$2" '$1 == "ad_tessera" && $4 == f {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) n += substr($i, length(k) + 2)
	} END { print k " = " n + 0; exit !(n > 0) }' "$TRACE"
}

not_built() { # WHY
	echo "$1"
	return 1
}

for t in $tests; do
	IFS=: read -r name np how <<<"$t"
	if [ -x "$RT/$name" ]; then
		if [ "$name" = large_file ]; then
			# 4 GiB through the storage daemons' directories under $D
			free_kib=$(df -Pk "$D" | awk 'NR == 2 { print $4 }')
			if [ "${TESSERA_ROMIO_LARGE:-1}" = 0 ]; then
				skip_check "romio_$name" "TESSERA_ROMIO_LARGE=0"
				continue
			elif [ "${free_kib:-0}" -lt $((10 * 1024 * 1024)) ]; then
				skip_check "romio_$name" "writes a 4 GiB file: less than 10 GiB free under $D"
				continue
			fi
		fi
		check "romio_$name" run_romio_test "$name" "$np" "$how"
	else
		why=$(sed -n "s/^$name //p" "$RT/not-compiled" 2>/dev/null)
		check "romio_$name" not_built "$name did not compile with Open MPI 4: ${why:-not built}"
	fi
done
while read -r name why; do
	[ -n "$name" ] || continue
	case " $(echo $tests) " in *" $name:"*) continue ;; esac
	skip_check "romio_$name" "does not compile with Open MPI 4: $why"
done <"$RT/not-compiled"

# ROMIO's atomicity test on a versioned file: versions, not locks, keep
# every read whole.
atomicity_versioned() {
	local f=$MNT/romio/versioned/atomicity
	"$BIN/tessera" mkdir /romio/versioned >/dev/null &&
		"$BIN/tessera" setstripe -s 4096 -c 4 --versioned /romio/versioned >/dev/null ||
		return 1
	timeout -k 5 600 "${MPIRUN[@]}" -np 8 "$RT/atomicity" -fname "tessera:$f" \
		>"$D/atomicity-versioned.out" 2>&1
	cat "$D/atomicity-versioned.out"
	grep -q 'No Errors' "$D/atomicity-versioned.out" || return 1
	"$BIN/tessera" stat /romio/versioned/atomicity | grep -q 'versioned: *yes' ||
		{ echo "the file is not versioned"; return 1; }
	awk -v f="file=$f" '$1 == "ad_tessera" && $4 == f {
		seen = 1
		for (i = 1; i <= NF; i++) if (index($i, "locks=") == 1) n += substr($i, 7)
	} END { print "locks = " n + 0; exit !(seen && n == 0) }' "$TRACE"
}
if [ -x "$RT/atomicity" ]; then
	check romio_atomicity_versioned atomicity_versioned
fi
finish
