#!/usr/bin/env bash
# test_fuse_locks.sh - locks and appends across two tessera-fuse mounts of one
# file system (1 mds + 4 ios on loopback), standing for two nodes; CMocka-style
# output for tests/run-suites.sh. TESSERA_APPEND_LINES: lines per appender
# (default 2000; the issue's full run is 10000).
#
# Needs root, /dev/fuse, fusermount3, flock(1), python3. Without a
# usable /dev/fuse it reports one skipped test and exits 0.
# TESSERA_BUILD names the build directory (default: build/); with
# TESSERA_KEEP=1 the scratch directory (logs, per-test output) is kept.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin

SUITE=fuse_locks
N_IOS=4
LEASE_MS=2000
HARNESS_NEEDS="tessera-lock-tool flock python3 setpriv"
HARNESS_CONF="lock_lease_ms = $LEASE_MS"
. "$top/tests/integ/fuse_harness.sh"
M1=$D/mnt1
M2=$D/mnt2
FT="python3 $top/tests/integ/fcntl_tool.py"
LT="$BIN/tessera-lock-tool $CONF"
LINES=${TESSERA_APPEND_LINES:-2000}
export TESSERA_FUSE_DEADLOCK_MS=3000   # the deadlock test's bound (its mounts read it)

# expect WHAT GOT WANTED: the tool's output lines, joined by spaces.
expect() {
	[ "$2" = "$3" ] || die "$1: got '$2', wanted '$3'"
}
ft() { $FT "$@" | tr '\n' ' ' | sed 's/ $//'; }

# hold MOUNT_FILE OPS...: a holder in the background, its pid in HOLDER,
# once it printed "mark" (after its locks).
hold() {
	local f=$1 out=$D/holder.$RANDOM
	shift
	: >"$out"
	$FT "$f" "$@" mark sleep:600 >"$out" 2>&1 &
	HOLDER=$!
	for ((t = 0; t < 100; t++)); do
		grep -q mark "$out" && { grep -v -e mark -e '^ok$' "$out" && die "holder: $(cat "$out")"; return 0; }
		sleep 0.1
	done
	die "holder did not take its locks: $(cat "$out")"
}
unhold() { kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null || true; HOLDER=; }

# -------------------------------------------------------------- the tests

t_cluster_and_mount() {
	start_cluster && mount_fs "$M1" && mount_fs "$M2"
}

# flock(2) through one mount keeps flock(2) through the other out, both
# ways; shared locks share; an unlock lets the other in.
t_flock_two_mounts() {
	touch "$M1/fl"
	flock -x "$M1/fl" -c "touch $D/fl.held; sleep 3" &
	while [ ! -e "$D/fl.held" ]; do sleep 0.1; done
	! flock -n -x "$M2/fl" true || die "M2 got an exclusive flock M1 holds"
	! flock -n -s "$M2/fl" true || die "M2 got a shared flock over M1's exclusive one"
	# the library sees it on the reserved byte (TESSERA_RECORD_FLOCK = 2^63)
	expect "library over a flock" "$($LT record /fl read 9223372036854775808 9223372036854775809)" \
		"busy"
	wait
	flock -n -x "$M2/fl" true || die "M2 did not get the flock once M1 let go"
	rm -f "$D/fl.held"
	flock -s "$M2/fl" -c "touch $D/fl.held; sleep 3" &
	while [ ! -e "$D/fl.held" ]; do sleep 0.1; done
	flock -n -s "$M1/fl" true || die "shared flocks on two mounts did not share"
	! flock -n -x "$M1/fl" true || die "M1 got an exclusive flock over M2's shared one"
	expect "library beside a shared flock" \
		"$($LT record /fl read 9223372036854775808 9223372036854775809)" "granted"
	expect "library over a shared flock" \
		"$($LT record /fl write 9223372036854775808 9223372036854775809)" "busy"
	# A blocking flock waits for it.
	local t0=$SECONDS
	flock -x "$M1/fl" true || die "blocking flock failed"
	wait
	[ $((SECONDS - t0)) -ge 1 ] || die "blocking flock did not wait"
}

# fcntl locks conflict across mounts byte for byte, both ways; F_GETLK
# names the conflicting lock (mode and range; pid 0); read locks share.
t_fcntl_two_mounts() {
	hold "$M1/fc" w:0:100 r:200:100
	expect "M2 write over M1's write" "$(ft "$M2/fc" w:50:10 w:99:1 w:100:100 r:150:100 r:250:10)" \
		"EAGAIN EAGAIN ok ok ok"
	expect "M2 tests" "$(ft "$M2/fc" gw:0:1 gw:250:1 gr:250:1 gw:100:100 gw:0:0)" \
		"wr 0 100 0 rd 200 100 0 unlck unlck wr 0 100 0"
	expect "M2 write over M1's read" "$(ft "$M2/fc" w:299:1 w:300:0)" "EAGAIN ok"
	unhold
	expect "after M1 let go" "$(ft "$M2/fc" w:0:0)" "ok"
	hold "$M2/fc" w:10:10
	expect "the other way" "$(ft "$M1/fc" r:15:1 w:0:10 w:20:0 gr:0:0)" "EAGAIN ok ok wr 10 10 0"
	unhold
}

# POSIX semantics per owner: a lock over one's own locks replaces them,
# unlocking the middle of a range splits it, downgrade and upgrade;
# another mount sees exactly the bytes held.
t_posix_semantics() {
	hold "$M1/px" w:0:100 u:40:20 r:0:10 w:200:10 r:200:5 w:300:0 u:400:0
	expect "split" "$(ft "$M2/px" w:40:20 w:39:1 w:60:1)" "ok EAGAIN EAGAIN"
	expect "downgraded" "$(ft "$M2/px" r:0:10 w:5:1 r:10:1)" "ok EAGAIN EAGAIN"
	expect "downgrade inside a write" "$(ft "$M2/px" r:200:5 r:205:1 w:204:1)" "ok EAGAIN EAGAIN"
	expect "to the end, less the unlocked tail" "$(ft "$M2/px" w:300:100 w:399:1 w:400:0 w:500:1 r:299:1)" \
		"EAGAIN EAGAIN ok ok ok"
	unhold
	# Upgrade: a read lock becomes a write lock when nobody else reads.
	expect "upgrade" "$(ft "$M1/px" r:0:10 w:0:10 mark)" "ok ok mark"
	hold "$M2/px" r:5:1
	expect "upgrade refused under another reader" "$(ft "$M1/px" r:0:10 w:0:10 gw:0:10)" \
		"ok EAGAIN rd 5 1 0"
	unhold
}

# OFD locks: owned by the open file description, so two opens in one
# process conflict; and they conflict across mounts like the others.
t_ofd_locks() {
	expect "two descriptions, one process" "$(ft "$M1/ofd" ow:0:10 new ow:5:1 or:20:1 new ou:0:0)" \
		"ok ok EAGAIN ok ok ok"
	hold "$M1/ofd" ow:0:10
	expect "OFD across mounts" "$(ft "$M2/ofd" ow:0:1 w:9:1 ow:10:1)" "EAGAIN EAGAIN ok"
	unhold
}

# flock and fcntl locks do not conflict with each other (as on Linux):
# flock's live past every byte an fcntl lock can reach.
t_flock_fcntl_apart() {
	touch "$M1/apart"
	flock -x "$M1/apart" -c "touch $D/apart.held; sleep 3" &
	while [ ! -e "$D/apart.held" ]; do sleep 0.1; done
	expect "whole-file fcntl beside flock" "$(ft "$M2/apart" w:0:0 w:9223372036854775806:1)" "ok ok"
	wait
}

# Against the library: a mount's fcntl lock keeps the library's locks out
# and the library's keep the mount's out.
t_library_locks() {
	hold "$M1/lib" w:0:100
	expect "library record lock over a mount's" "$($LT record /lib write 50 60)" "busy"
	expect "library record lock beside it" "$($LT record /lib write 100 200)" "granted"
	# A library byte-range lock waits for the mount's lock.
	timeout 3 $LT hold /lib read 10 5 0 >"$D/lib.out" 2>&1 || true
	[ ! -s "$D/lib.out" ] || die "library lock was granted over the mount's: $(cat "$D/lib.out")"
	unhold
	$LT hold /lib write 0 10 2 >"$D/lib.out" 2>&1 &
	while ! grep -q locked "$D/lib.out"; do sleep 0.1; done
	expect "mount under a library lock" "$(ft "$M2/lib" w:5:1 r:0:1 w:20:10 gw:0:0)" \
		"EAGAIN EAGAIN ok wr 0 10 0"
	# F_SETLKW waits until the library lets go.
	local t0=$SECONDS
	expect "F_SETLKW after the library" "$(ft "$M1/lib" W:0:10)" "ok"
	[ $((SECONDS - t0)) -ge 1 ] || die "F_SETLKW did not wait for the library lock"
	wait
}

# F_SETLKW waits for another mount's lock to go.
t_setlkw_waits() {
	hold "$M1/wt" w:0:10
	( sleep 2; kill "$HOLDER" ) &
	local t0=$SECONDS
	expect "F_SETLKW" "$(ft "$M2/wt" W:5:1)" "ok"
	[ $((SECONDS - t0)) -ge 1 ] || die "F_SETLKW did not wait"
	wait "$HOLDER" 2>/dev/null || true
	wait
}

# Two F_SETLKW waiters on two mounts, each holding what the other wants:
# the bounded wait (TESSERA_FUSE_DEADLOCK_MS, 3 s here) answers EDEADLK
# to at least one, and the other then gets its lock.
t_deadlock() {
	$FT "$M1/dl" w:0:1 sleep:1 W:1:1 >"$D/dl.1" 2>&1 &
	local a=$!
	$FT "$M2/dl" w:1:1 sleep:1 W:0:1 >"$D/dl.2" 2>&1 &
	local b=$!
	wait $a $b
	local out
	out="$(tr '\n' ' ' <"$D/dl.1") / $(tr '\n' ' ' <"$D/dl.2")"
	echo "$out"
	grep -q EDEADLK "$D/dl.1" "$D/dl.2" || die "no EDEADLK: $out"
}

# A holder killed with kill -9 loses its locks at once (the kernel closes
# its descriptors); a mount killed with kill -9 loses them with its lease.
t_kill_holder() {
	hold "$M1/kl" w:0:0
	touch "$M1/kl2"
	flock -o -x "$M1/kl2" sleep 600 &
	local fl=$!
	sleep 0.5
	expect "held" "$(ft "$M2/kl" w:0:1)" "EAGAIN"
	! flock -n -x "$M2/kl2" true || die "flock not held"
	kill -9 "$HOLDER" $fl
	wait 2>/dev/null || true
	sleep 0.3
	expect "holder killed" "$(ft "$M2/kl" w:0:1)" "ok"
	flock -n -x "$M2/kl2" true || die "flock of a killed holder still held"
	# Now the mount itself.
	hold "$M1/kl" w:0:0
	kill -9 "${MOUNT_PID[$M1]}"
	expect "mount killed, within its lease" "$(ft "$M2/kl" w:0:1)" "EAGAIN"
	sleep $((LEASE_MS / 1000 + 2))
	expect "mount killed, lease over" "$(ft "$M2/kl" w:0:1)" "ok"
	kill -9 "$HOLDER" 2>/dev/null; wait 2>/dev/null || true
}

# The killed mount's mount point is unmounted and mounted again.
t_remount() {
	umount -l "$M1" 2>/dev/null || fusermount3 -u "$M1" 2>/dev/null
	mount_fs "$M1" && touch "$M1/again"
}

# Bad input: a negative l_len locks the bytes before l_start (fcntl(2));
# a negative start and a range past the largest offset are refused; the
# library refuses empty ranges and ranges past its reserved bytes.
t_bad_input() {
	hold "$M1/bad" w:10:-5
	expect "l_len < 0" "$(ft "$M2/bad" w:5:1 w:9:1 w:10:1 w:4:1)" "EAGAIN EAGAIN ok ok"
	unhold
	expect "refused" "$(ft "$M1/bad" w:-1:1 w:9223372036854775807:2 w:9223372036854775807:1)" \
		"EINVAL EOVERFLOW ok"
	! $LT record /bad write 10 10 2>/dev/null || die "library: empty record range accepted"
	! $LT record /bad write 0 9223372036854775811 2>/dev/null ||
		die "library: record range past the reserved bytes accepted"
}

# 4 appenders (2 per mount) of $LINES lines each, through O_APPEND, plus
# the library's tessera_append: every line whole, none lost, each
# appender's in its order.
t_append() {
	local i m t0=$SECONDS
	: >"$M1/app"
	for i in 0 1 2 3; do
		m=$M1; [ $i -ge 2 ] && m=$M2
		( for ((n = 0; n < LINES; n++)); do echo "tag$i $n xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; done >>"$m/app" ) &
	done
	$LT append /app 500 lib &
	wait
	local total want=$((4 * LINES + 500))
	total=$(wc -l <"$M2/app")
	[ "$total" = "$want" ] || die "$total lines, wanted $want"
	[ "$(grep -c -v -E '^(tag[0-3] [0-9]+ x{32}|lib [0-9]+)$' "$M2/app")" = 0 ] ||
		die "garbled lines: $(grep -v -E '^(tag[0-3] [0-9]+ x{32}|lib [0-9]+)$' "$M2/app" | head -3)"
	for i in 0 1 2 3; do
		grep "^tag$i " "$M2/app" | awk '{print $2}' | cmp -s - <(seq 0 $((LINES - 1))) ||
			die "appender $i's lines are missing or out of order"
	done
	grep '^lib ' "$M2/app" | awk '{print $2}' | cmp -s - <(seq 0 499) ||
		die "the library appender's lines are missing or out of order"
	echo "$want lines appended by 5 appenders on 2 mounts and the library in $((SECONDS - t0)) s"
}

# An append of 1 MiB (max_write) lands whole.
t_append_big() {
	head -c 1048576 /dev/urandom >"$D/big"
	: >"$M1/appbig"
	for i in 1 2 3 4; do
		dd if="$D/big" of="$M1/appbig" bs=1M oflag=append conv=notrunc status=none &
		dd if="$D/big" of="$M2/appbig" bs=1M oflag=append conv=notrunc status=none &
	done
	wait
	# the size as an open sees it: under the writeback cache a stat on
	# this mount may show its kernel's own size until the file's next
	# open, which here missed the other mount's appends
	[ "$(wc -c <"$M1/appbig")" = $((8 * 1048576)) ] || die "size $(wc -c <"$M1/appbig")"
	for i in 0 1 2 3 4 5 6 7; do
		dd if="$M1/appbig" bs=1M skip=$i count=1 status=none | cmp -s - "$D/big" ||
			die "1 MiB append $i is not whole"
	done
}

# An append by another user drops the file's capabilities
# (security.capability), as a cached write does: the kernel leaves that to
# the mount on the direct_io path appends take; the setuid bit too
# (test_fuse.sh's setid checks the rest of the rules).
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
t_append_privs() {
	mkdir -p "$M1/ap" && chmod 0777 "$M1/ap"
	echo x >"$M1/ap/f"
	chmod 0666 "$M1/ap/f"
	python3 -c 'import os, struct, sys
os.setxattr(sys.argv[1], "security.capability", struct.pack("<5I", 0x02000000, 0x400, 0, 0, 0))
' "$M1/ap/f"
	as_nobody sh -c "echo more >>'$M1/ap/f'"
	! getfattr -n security.capability "$M1/ap/f" >/dev/null 2>&1 ||
		die "an append by uid 65534 kept the file's capabilities"
	[ "$(tail -n 1 "$M1/ap/f")" = more ] || die "the append is missing"
	chmod 04666 "$M1/ap/f"
	as_nobody sh -c "echo again >>'$M1/ap/f'"
	[ "$(stat -c %a "$M1/ap/f")" = 666 ] || die "an append by uid 65534 kept setuid: $(stat -c %a "$M1/ap/f")"
}

echo "[==========] Running 15 test(s)."
check_here cluster_and_mount t_cluster_and_mount
if [ ${#failed[@]} -eq 0 ]; then
	check flock_two_mounts t_flock_two_mounts
	check fcntl_two_mounts t_fcntl_two_mounts
	check posix_semantics t_posix_semantics
	check ofd_locks t_ofd_locks
	check flock_fcntl_apart t_flock_fcntl_apart
	check library_locks t_library_locks
	check setlkw_waits t_setlkw_waits
	check deadlock t_deadlock
	check bad_input t_bad_input
	check append t_append
	check append_big t_append_big
	check append_privs t_append_privs
	check kill_holder t_kill_holder
	check_here remount t_remount
fi

checks_finish
