#!/usr/bin/env bash
# test_pjdfstest.sh - pjdfstest (the POSIX file system suite, vendored in
# tests/third_party/pjdfstest) on a Tessera mount, beside the same tests on
# bindfs over a local directory in the same run as the baseline.
#
# Runs as root (pjdfstest switches to other uids itself) on a tessera-fuse
# mount with allow_other,default_permissions over a private cluster
# (tessera-local: 1 mds + 2 ios on free loopback ports). Counts every
# assertion: one that fails on Tessera but passes on bindfs fails this
# suite unless tests/integ/pjdfstest-known.txt lists it with its reason;
# failures bindfs shares are the kernel's or FUSE's and are reported as
# skipped (pjdfstest_compare.py). A known failure that now passes is
# printed so the list can shrink.
#
#   PJDFSTEST_SET=subset (default, make check: all files but the three
#                below, about 2 minutes) or full (make pjdfstest: all 238)
#   PJDFSTEST_FILES="open/03.t link/00.t"  only these files (debugging)
#   PJDFSTEST_JOBS=2   prove -j
#   TESSERA_KEEP=1     keep the scratch directory (prove outputs, logs)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
set_name=${PJDFSTEST_SET:-subset}
jobs=${PJDFSTEST_JOBS:-2}
known=$top/tests/integ/pjdfstest-known.txt
. "$top/tests/integ/checks.sh"

# make check runs every file but the three largest, which hold half of
# the suite's assertions and time: rename/09.t and rename/10.t (rename in
# sticky and non-writable directories, over every pair of file types; the
# sticky rule itself stays covered by unlink/11.t and rmdir/11.t) and
# chown/00.t (chown over every file type and uid pair; chown/05-07.t stay).
SUBSET_LEAVES_OUT="rename/09.t rename/10.t chown/00.t"

case $set_name in subset|full) ;; *) echo "PJDFSTEST_SET is subset or full, not '$set_name'"; exit 2 ;; esac
. "$top/tests/integ/mount_harness.sh"
mount_can_run pjdfstest
for t in bindfs prove python3; do
	command -v "$t" >/dev/null || skip_all pjdfstest "$t is not installed (make deps)"
done

D=$(mktemp -d /tmp/tessera-pjdfstest.XXXXXX)
chmod 0755 "$D"   # the other uids pjdfstest takes must reach both mounts
cleanup() {
	mountpoint -q "$D/bmnt" 2>/dev/null && { fusermount3 -u "$D/bmnt" 2>/dev/null || umount -l "$D/bmnt"; }
	mount_down
	rm -f "$CHECKS_LOG"
	if [ -n "${TESSERA_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
# fail_setup WHAT LOG: the run cannot compare anything: one failed test.
fail_setup() {
	cat "$2"
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  FAILED  ] 1 test(s), listed below:"
	echo "[  FAILED  ] pjdfstest: $1"
	exit 1
}

pjd=$(bash "$top/tests/integ/build-pjdfstest.sh" 2>"$D/build.log") ||
	fail_setup "the build (tests/integ/build-pjdfstest.sh)" "$D/build.log"
files=$(cd "$pjd/tests" && find . -name '*.t' | sed 's|^\./||' | LC_ALL=C sort)
if [ -n "${PJDFSTEST_FILES:-}" ]; then
	files=$PJDFSTEST_FILES
elif [ "$set_name" = subset ]; then
	files=$(printf '%s\n' $files | grep -vxF "$(printf '%s\n' $SUBSET_LEAVES_OUT)")
fi
for f in $files; do
	[ -f "$pjd/tests/$f" ] || { echo "no test file $pjd/tests/$f"; exit 1; }
done
echo "pjdfstest: $(sed -n 's/^ *commit *\([0-9a-f]\{12\}\).*/\1/p' "$top/tests/third_party/pjdfstest/PINNED"), $(echo $files | wc -w) files ($set_name), in $pjd"

# The Tessera mount (mount_harness.sh: allow_other,default_permissions).
mount_up "$D" >"$D/up.log" 2>&1 || fail_setup "the cluster or the mount did not come up" "$D/up.log"
# bindfs over a local directory: the baseline, a FUSE passthrough on the
# same kernel (dev and suid as Tessera's mount has them; bindfs always
# runs with default_permissions).
mkdir -p "$D/local" "$D/bmnt"
bindfs -o allow_other,dev,suid "$D/local" "$D/bmnt" >"$D/bindfs.log" 2>&1 ||
	fail_setup "bindfs did not mount" "$D/bindfs.log"
chmod 0755 "$D/bmnt"

# run_prove NAME DIR: the test files in DIR, the root of a file system of
# their own (pjdfstest works in its current directory; its */03.t make
# paths of PATH_MAX - 1 bytes relative to it, which a path-based FUSE
# daemon sees from the root), prove's output in $D/NAME.prove.
run_prove() {
	local name=$1 dir=$2 t0=$SECONDS
	local paths
	# shellcheck disable=SC2086
	paths=$(printf "$pjd/tests/%s\n" $files)
	# shellcheck disable=SC2046  # one word per test file, none with a space
	(cd "$dir" && prove -j"$jobs" $paths) \
		>"$D/$name.prove" 2>&1
	echo "  $name: $((SECONDS - t0)) s, $(grep -E '^(Files|Result)' "$D/$name.prove" | tr '\n' ' ')" \
		>"$D/$name.time"
}
# Both at once: Tessera's run waits on the network more than on the CPU.
# (wait by pid: the mount's own process is a child of this shell too)
run_prove bindfs "$D/bmnt" &
p1=$!
run_prove tessera "$D/tmnt" &
p2=$!
wait "$p1" "$p2"
cat "$D/bindfs.time" "$D/tessera.time"
[ -z "${PJDFSTEST_OUT:-}" ] || cp "$D/tessera.prove" "$D/bindfs.prove" "$PJDFSTEST_OUT/"
python3 "$top/tests/integ/pjdfstest_compare.py" "$D/tessera.prove" "$D/bindfs.prove" "$known"
