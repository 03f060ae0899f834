# fuse_harness.sh - sourced by the suites that drive tessera-fuse mounts
# of a private cluster they start themselves (test_fuse.sh,
# test_fuse_locks.sh): the checks that this machine can mount, a scratch
# directory $D with a config $CONF (1 mds + N_IOS ios on free loopback
# ports, a munged of its own), daemons started and restarted by name,
# mounts held by pid, the check runner with the CMocka-style lines
# tests/run-suites.sh counts, and an EXIT trap that undoes it all.
#
# Set before sourcing: top, BIN, SUITE (the name a skip is reported
# under), N_IOS; optionally HARNESS_NEEDS (more programs: in $BIN, else on
# PATH) and HARNESS_CONF (more config lines). TESSERA_KEEP=1 keeps $D.
#
#   start NAME PROGRAM ARGS...   a daemon of $BIN, until its pid file shows
#   restart NAME                 the same again
#   start_cluster                the mds and the N_IOS ios
#   mount_fs DIR [OPTIONS...]    tessera-fuse -f -o allow_other on DIR; its
#                                pid in MOUNT_PID[DIR] and FUSE_PIDS
#   check NAME FUNCTION          FUNCTION in a subshell under set -e
#   check_here NAME FUNCTION     in this shell (it starts what the EXIT
#                                trap must stop), so it checks its own steps
#   checks_finish                the mounts' logs if any check failed, the
#                                summary, and the exit status

skip() {
	echo "[==========] 0 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  SKIPPED ] 1 test(s), listed below:"
	echo "[  SKIPPED ] $SUITE: $1"
	exit 0
}

[ -c /dev/fuse ] || skip "/dev/fuse is missing"
{ exec 3<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened"
exec 3>&-
[ "$(id -u)" -eq 0 ] || skip "needs root (allow_other, setpriv)"
command -v fusermount3 >/dev/null || skip "fusermount3 is not installed"
for p in tessera-fuse tessera-mds tessera-ios ${HARNESS_NEEDS:-}; do
	[ -x "$BIN/$p" ] || command -v "$p" >/dev/null || skip "$p is not built or installed"
done

D=$(mktemp -d "/tmp/tessera-$SUITE.XXXXXX")
chmod 0755 "$D"   # uid 65534 must reach the mounts (permission tests)
CONF=$D/tessera.conf
declare -A DAEMON_ARGS   # name -> program and arguments, for restarts
declare -A MOUNT_PID     # mount point -> its tessera-fuse
FUSE_PIDS=()

harness_cleanup() {
	local m p f
	[ -f "$D/tl/var/tessera.conf" ] && "$top/deploy/tessera-local" --dir "$D/tl/var" down >/dev/null 2>&1
	for m in $(awk -v d="$D/" 'index($2, d) == 1 { print $2 }' /proc/mounts); do
		fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for p in "${FUSE_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for f in "$D"/*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "${TESSERA_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap harness_cleanup EXIT

. "$top/tests/integ/ports.sh"

. "$top/tests/integ/munged.sh"
munged_start "$D" || exit 1   # stopped through its pid file, as the daemons
{
	echo "provider = ${TESSERA_TEST_PROVIDER:-tcp;msg}"
	port_lines "$N_IOS"
	echo "timeout_ms = 5000"
	echo "munge_socket = $MUNGE_SOCK"
	echo "key_file = $D/tessera.key"
	[ -n "${HARNESS_CONF:-}" ] && echo "$HARNESS_CONF"
} >"$CONF"
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$D/tessera.key")

start() {
	local name=$1 prog=$2 t
	shift 2
	DAEMON_ARGS[$name]="$prog $*"
	rm -f "$D/$name.pid"
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$D/$name.log")
	"$BIN/$prog" "$@" -p "$D/$name.pid" >>"$D/$name.log" 2>&1 &
	disown $!   # killed through its pid file; no "Killed" notices
	for ((t = 0; t < 100; t++)); do
		[ -s "$D/$name.pid" ] && return 0
		sleep 0.1
	done
	echo "$name did not write its pid file:"; cat "$D/$name.log"
	return 1
}
restart() {
	local name=$1
	set -- ${DAEMON_ARGS[$name]}
	start "$name" "$@"
}
start_cluster() {
	local i
	mkdir -p -m 700 "$D/mds" && start mds tessera-mds -c "$CONF" -d "$D/mds" || return 1
	for ((i = 0; i < N_IOS; i++)); do
		# no mkdir: a storage daemon makes a new store where its directory
		# did not exist (an existing empty one would be a lost disk)
		start "ios$i" tessera-ios -c "$CONF" -d "$D/ios$i" -i "$i" || return 1
	done
}

mount_fs() {
	local dir=$1 t
	shift
	mkdir -p "$dir"
	"$BIN/tessera-fuse" -c "$CONF" "$dir" -f -o allow_other "$@" \
		>>"$D/fuse-$(basename "$dir").log" 2>&1 &
	FUSE_PIDS+=($!)
	MOUNT_PID[$dir]=$!
	for ((t = 0; t < 150; t++)); do
		mountpoint -q "$dir" && return 0
		kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	echo "mount on $dir did not come up:"; cat "$D/fuse-$(basename "$dir").log"
	return 1
}

run=0 passed=0
failed=()
check() {
	local name=$1 out=$D/out.$1 rc
	shift
	echo "[ RUN      ] $name"
	run=$((run + 1))
	if [ "$name" = "$HERE" ]; then
		"$@" >"$out" 2>&1
	else
		( set -e; "$@" ) >"$out" 2>&1
	fi
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "[       OK ] $name"
		passed=$((passed + 1))
	else
		sed 's/^/    /' "$out"
		echo "    (exit status $rc)"
		echo "[  FAILED  ] $name"
		failed+=("$name")
	fi
}
HERE=
check_here() { HERE=$1; check "$@"; HERE=; }
die() { echo "$*"; exit 1; }

checks_finish() {
	local f
	if [ ${#failed[@]} -ne 0 ]; then
		for f in "$D"/fuse-*.log; do
			[ -f "$f" ] && { echo "--- $(basename "$f") (last 30 lines)"; tail -n 30 "$f"; }
		done
	fi
	echo "[==========] $run test(s) run."
	echo "[  PASSED  ] $passed test(s)."
	if [ ${#failed[@]} -ne 0 ]; then
		echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
		for f in "${failed[@]}"; do echo "[  FAILED  ] $f"; done
		exit 1
	fi
	exit 0
}
