#!/usr/bin/env bash
# Closed disks and stores that know whose they are (issues 29.4, 24.6):
#   - a fresh store, namespace and log are the daemons' user's alone
#     (directories 0700, files 0600), and uid nobody cannot read them;
#   - a daemon refuses a store directory or a log file that group or
#     others can reach, saying which chmod to run;
#   - a daemon refuses another daemon's directory, the other kind's, and
#     another file system's, saying whose it is; an older directory
#     without the record is adopted (and says so); a record that is not
#     one, or an fs_id that cannot be written in one, is refused;
#   - tessera-local up with a taken port leaves nothing running, and
#     status exits 3 when a configured daemon is missing.
# Prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
bin=$build/bin
local_sh=$top/deploy/tessera-local
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-stores.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
. "$top/tests/integ/munged.sh"

[ -x "$bin/tessera-ios" ] || skip_all stores "$build is not built (run make)"

# The daemons' directories live in pub/, which anyone may enter: only
# their own modes keep others out.
pub=$tmp/pub
mkdir -m 755 "$pub" "$tmp/log"
chmod 755 "$tmp"
# Each check runs in a subshell: what it starts is found by PID files.
cleanup() {
	local f
	for f in "$tmp"/*.pid; do [ ! -f "$f" ] || kill "$(cat "$f")" 2>/dev/null; done
	[ ! -d "$tmp/lvar" ] || TESSERA_VAR=$tmp/lvar "$local_sh" down >/dev/null 2>&1
	[ -z "${MUNGED_PID:-}" ] || kill "$MUNGED_PID" 2>/dev/null
	sleep 0.5
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/munge"
munged_start "$tmp/munge" || skip_all stores "munged did not start"
port=$(free_ports 3)
conf=$tmp/fs.conf
"$top/deploy/tessera-genconfig" --mds "127.0.0.1:$port" --ios "127.0.0.1:$((port + 1))" \
	--ios "127.0.0.1:$((port + 2))" --timeout-ms 5000 --key-file "$tmp/key" \
	--munge-socket "$MUNGE_SOCK" >"$conf"
chmod 644 "$conf"
fs_id=$(sed -n 's/^fs_id = //p' "$conf")

# start NAME PROG ARGS...: a daemon in the background, its log 0600; 0
# once it serves (its PID file), 1 if it exits first.
start() {
	local name=$1 prog=$2
	shift 2
	rm -f "$tmp/$name.pid"
	(umask 077 && touch "$tmp/log/$name.log")
	"$bin/$prog" -c "$conf" "$@" -p "$tmp/$name.pid" >>"$tmp/log/$name.log" 2>&1 &
	for _ in $(seq 300); do
		[ -s "$tmp/$name.pid" ] && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/log/$name.log"
	return 1
}
stop() { # NAME
	local pid
	pid=$(cat "$tmp/$1.pid")
	kill "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$tmp/$1.pid"
}

# refused WORDS PROG ARGS...: the daemon exits non-zero at start-up and
# its message holds WORDS (a daemon that serves instead is stopped at 15 s).
refused() {
	local words=$1 prog=$2 rc
	shift 2
	(umask 077 && : >"$tmp/refused.err")
	rc=0
	timeout 15 "$bin/$prog" "$@" 2>>"$tmp/refused.err" >/dev/null || rc=$?
	echo "$prog $*: exit $rc"
	cat "$tmp/refused.err"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$words" "$tmp/refused.err"
}

test_fresh_modes() {
	start mds tessera-mds -d "$pub/mds"
	start ios0 tessera-ios -d "$pub/ios0" -i 0
	start ios1 tessera-ios -d "$pub/ios1" -i 1
	head -c 300000 /dev/urandom >"$tmp/data"
	TESSERA_CONFIG=$conf "$bin/tessera" cp "$tmp/data" tessera:/f
	stat -c '%a %n' "$pub"/* "$pub"/*/* | head -30
	find "$pub/ios0/objects" -type f | head -3 | xargs stat -c '%a %n'
	[ "$(stat -c %a "$pub/ios0")" = 700 ] && [ "$(stat -c %a "$pub/mds")" = 700 ]
	[ -n "$(find "$pub/ios0/objects" -type f)" ]     # the object is there
	# nothing under them lets group or others in
	[ -z "$(find "$pub" -mindepth 1 -perm /077 -print -quit)" ]
	[ "$(stat -c %a "$pub/ios0/owner")" = 600 ]
	grep -qx "fs_id $fs_id" "$pub/ios0/owner"
	grep -qx 'kind storage' "$pub/ios0/owner" && grep -qx 'index 0' "$pub/ios0/owner"
	grep -qx 'kind metadata' "$pub/mds/owner"
}

test_nobody_cannot_read() {
	local obj
	obj=$(find "$pub/ios0/objects" -type f | head -1)
	[ -n "$obj" ]
	for what in "ls $pub/ios0/objects" "cat $obj" "ls $pub/mds" "cat $pub/mds/CURRENT"; do
		if setpriv --reuid=65534 --regid=65534 --clear-groups $what >/dev/null 2>&1; then
			echo "uid nobody could: $what"
			return 1
		fi
		echo "uid nobody may not: $what"
	done
}

test_open_store_refused() {
	stop ios1
	chmod 755 "$pub/ios1"
	refused "storage directory $pub/ios1: mode 0755 lets group or others in; refusing to start (chmod 700 $pub/ios1)" \
		tessera-ios -c "$conf" -d "$pub/ios1" -i 1
	chmod 750 "$pub/ios1"
	refused "mode 0750 lets group or others in" tessera-ios -c "$conf" -d "$pub/ios1" -i 1
	chmod 700 "$pub/ios1"
	start ios1 tessera-ios -d "$pub/ios1" -i 1
}

test_open_log_refused() {
	local rc
	stop ios1
	rm -f "$tmp/open.log"
	(umask 022 && : >"$tmp/open.log")
	rc=0
	timeout 15 "$bin/tessera-ios" -c "$conf" -d "$pub/ios1" -i 1 2>>"$tmp/open.log" || rc=$?
	echo "exit $rc"
	cat "$tmp/open.log"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
	grep -qF "log file $tmp/open.log: mode 0644 lets group or others read it; refusing to start (chmod 600 $tmp/open.log)" "$tmp/open.log"
}

test_wrong_directory_refused() {
	stop ios0
	stop mds
	# another storage daemon's
	refused "storage directory $pub/ios0 belongs to storage daemon 0 of file system $fs_id, not storage daemon 1" \
		tessera-ios -c "$conf" -d "$pub/ios0" -i 1
	# the other kind's, both ways
	refused "metadata directory $pub/ios0 belongs to storage daemon 0 of file system $fs_id, not metadata daemon 0" \
		tessera-mds -c "$conf" -d "$pub/ios0"
	refused "storage directory $pub/mds belongs to metadata daemon 0 of file system $fs_id, not storage daemon 0" \
		tessera-ios -c "$conf" -d "$pub/mds" -i 0
	# another file system's
	"$top/deploy/tessera-genconfig" --mds "127.0.0.1:$port" --ios "127.0.0.1:$((port + 1))" \
		--ios "127.0.0.1:$((port + 2))" --key-file "$tmp/key" --fs-id other-fs \
		--munge-socket "$MUNGE_SOCK" >"$tmp/other.conf"
	refused "storage directory $pub/ios0 belongs to storage daemon 0 of file system $fs_id, not of file system other-fs" \
		tessera-ios -c "$tmp/other.conf" -d "$pub/ios0" -i 0
	# nothing was changed by the refusals: the owners serve again
	start mds tessera-mds -d "$pub/mds"
	start ios0 tessera-ios -d "$pub/ios0" -i 0
	start ios1 tessera-ios -d "$pub/ios1" -i 1
	TESSERA_CONFIG=$conf "$bin/tessera" cat /f | cmp - "$tmp/data"
}

# A directory made by an older version has no owner record: one with this
# kind's data is adopted (and the log says so), the other kind's refused.
test_older_directory() {
	stop ios0
	stop mds
	rm "$pub/ios0/owner" "$pub/mds/owner"
	refused "storage directory $pub/mds holds a metadata daemon's namespace (made by an older version, without an owner record), not storage daemon 0's" \
		tessera-ios -c "$conf" -d "$pub/mds" -i 0
	start ios0 tessera-ios -d "$pub/ios0" -i 0
	grep -F "storage directory $pub/ios0 had no owner record (made by an older version); adopted as storage daemon 0 of file system $fs_id" \
		"$tmp/log/ios0.log"
	grep -qx 'kind storage' "$pub/ios0/owner"
	start mds tessera-mds -d "$pub/mds"
	grep -qx 'kind metadata' "$pub/mds/owner"
	TESSERA_CONFIG=$conf "$bin/tessera" cat /f | cmp - "$tmp/data"
}

# A record that is not one, and an fs_id that could not be written in one.
test_bad_owner_refused() {
	stop ios1
	cp "$pub/ios1/owner" "$tmp/owner.good"
	echo garbage >"$pub/ios1/owner"
	refused "storage directory $pub/ios1: $pub/ios1/owner is not a Tessera owner record; refusing to start" \
		tessera-ios -c "$conf" -d "$pub/ios1" -i 1
	cp "$tmp/owner.good" "$pub/ios1/owner"
	sed 's|^fs_id = .*|fs_id = a/b|' "$conf" >"$tmp/slash.conf"
	refused "fs_id 'a/b' in the config: at most 63 letters, digits, '-' and '_'" \
		tessera-ios -c "$tmp/slash.conf" -d "$pub/ios1" -i 1
	cmp "$tmp/owner.good" "$pub/ios1/owner"
	start ios1 tessera-ios -d "$pub/ios1" -i 1
}

# tessera-local's daemons, found by the instance's PID files and ports.
local_running() { # VAR PORT N_IOS: prints what still runs or listens
	local f i
	for f in "$1"/run/*.pid; do
		[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && echo "running: $f"
	done
	pgrep -af -- "-c $1/tessera.conf" | grep -v pgrep || true
	for ((i = 0; i <= $3; i++)); do
		ss -Hltn "sport = :$(($2 + i))" | grep -q . && echo "listening: $(($2 + i))"
	done
	return 0
}

test_local_up_rolls_back() {
	local lport rc out
	lport=$(free_ports 3)
	# a listener on the second storage daemon's port
	python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(120)' \
		"$((lport + 2))" &
	holder=$!
	echo "$holder" >"$tmp/holder.pid"
	sleep 0.5
	set +e
	"$local_sh" --dir "$tmp/lvar" --ios 2 --port "$lport" --bin "$bin" --no-mount up >"$tmp/up.out" 2>&1
	rc=$?
	set -e
	cat "$tmp/up.out"
	echo "up: exit $rc"
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	rm -f "$tmp/holder.pid"
	[ "$rc" -ne 0 ]
	out=$(local_running "$tmp/lvar" "$lport" 2)
	echo "${out:-nothing runs}"
	[ -z "$out" ]
	grep -q 'ios1 failed to start' "$tmp/up.out"
	grep -q 'stopped what it had started' "$tmp/up.out"
	set +e
	"$local_sh" --dir "$tmp/lvar" status
	rc=$?
	set -e
	[ "$rc" -eq 3 ]
}

test_local_status_missing() {
	local lport rc
	lport=$(free_ports 3)
	[ ! -d "$tmp/lvar" ] || "$local_sh" --dir "$tmp/lvar" down >/dev/null 2>&1
	rm -rf "$tmp/lvar"
	"$local_sh" --dir "$tmp/lvar" --ios 2 --port "$lport" --bin "$bin" --no-mount up
	[ "$(stat -c %a "$tmp/lvar/ios0")" = 700 ] && [ "$(stat -c %a "$tmp/lvar/log")" = 700 ]
	[ "$(stat -c %a "$tmp/lvar/log/ios0.log")" = 600 ]
	"$local_sh" --dir "$tmp/lvar" status
	# killed, its PID file left behind
	kill -9 "$(cat "$tmp/lvar/run/ios1.pid")"
	sleep 0.2
	set +e
	"$local_sh" --dir "$tmp/lvar" status >"$tmp/status.out"
	rc=$?
	set -e
	cat "$tmp/status.out"
	[ "$rc" -eq 3 ] && grep -qx 'ios1: not running' "$tmp/status.out"
	# never started (no PID file at all): still missing
	rm -f "$tmp/lvar/run/ios1.pid"
	set +e
	"$local_sh" --dir "$tmp/lvar" status >"$tmp/status.out"
	rc=$?
	set -e
	cat "$tmp/status.out"
	[ "$rc" -eq 3 ] && grep -qx 'ios1: not running' "$tmp/status.out"
	grep -q 'missing: ios1' "$tmp/status.out"
	"$local_sh" --dir "$tmp/lvar" down
}

check stores_fresh_modes test_fresh_modes
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	check stores_nobody_cannot_read test_nobody_cannot_read
else
	skip_check stores_nobody_cannot_read "needs root and setpriv"
fi
check stores_open_store_refused test_open_store_refused
check stores_open_log_refused test_open_log_refused
check stores_wrong_directory_refused test_wrong_directory_refused
check stores_older_directory_adopted test_older_directory
check stores_bad_owner_refused test_bad_owner_refused
check local_up_rolls_back test_local_up_rolls_back
check local_status_missing test_local_status_missing
checks_done
