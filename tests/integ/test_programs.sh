#!/usr/bin/env bash
# The programs' conventions (issue 27): every program answers --version and
# -h/--help with exit 0 (usage on stdout) and refuses an unknown option with
# exit 2; tessera-genconfig checks every value; the config search path
# (-c, $TESSERA_CONFIG, ./var/tessera.conf, /etc/tessera/tessera.conf)
# shared by the library, the CLI and the mount; the daemons' log levels (-v)
# and syslog target (-L syslog). Prints CMocka-style lines (checks.sh).
#
#   TESSERA_BUILD=/abs/build tests/integ/test_programs.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
bin=$build/bin
. "$top/tests/integ/checks.sh"

dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-programs.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT

# The release the Makefile builds (client/client.mk reads it there).
version=$(sed -n 's/^#define TP_VERSION_STRING "\(.*\)"/\1/p' "$top/proto/tproto.h")

# Each program and where it is; tessera-fuse only where it was built.
programs=("tessera-mds:$bin/tessera-mds" "tessera-ios:$bin/tessera-ios"
	  "tessera-genconfig:$top/deploy/tessera-genconfig"
	  "tessera-local:$top/deploy/tessera-local"
	  "tessera-mpirun:$top/romio-adio/tessera-mpirun")
[ -x "$bin/tessera-fuse" ] && programs+=("tessera-fuse:$bin/tessera-fuse")

# ------------------------------------------------------ --version, --help
version_of() { # NAME PATH
	local out
	out=$("$2" --version)
	echo "$out"
	grep -q "^$1 $version\$" <<<"$out"
}
help_of() { # PATH OPTION: usage on stdout, exit 0
	local out
	out=$("$1" "$2" 2>/dev/null)
	echo "$out"
	grep -qi '^usage:' <<<"$out"
}
unknown_option() { # PATH: exit 2, and a word on stderr
	local rc=0
	"$1" --no-such-option >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
	cat "$dir/out" "$dir/err"
	[ "$rc" -eq 2 ] && [ -s "$dir/err" ]
}
for p in "${programs[@]}"; do
	name=${p%%:*} path=${p#*:}
	check "$name --version" version_of "$name" "$path"
	check "$name --help" help_of "$path" --help
	check "$name -h" help_of "$path" -h
	if [ "$name" = tessera-mpirun ]; then
		skip_check "$name unknown option" "every argument but --help and --version is mpirun's"
	else
		check "$name unknown option" unknown_option "$path"
	fi
done
[ -x "$bin/tessera-fuse" ] || skip_check "tessera-fuse" "not built here (no libfuse3-dev)"

# ------------------------------------------------------ tessera-genconfig
G=$top/deploy/tessera-genconfig
refused() { # MESSAGE ARGS...: exit 2 with MESSAGE on stderr
	local want=$1 rc=0
	shift
	"$G" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
	cat "$dir/err"
	[ "$rc" -eq 2 ] && grep -qF -- "$want" "$dir/err" && [ ! -s "$dir/out" ]
}
ok=(--mds 127.0.0.1:7400 --ios 127.0.0.1:7401 --key-file "$dir/key")
check "genconfig: --mds without a value" refused "option --mds needs a value" --mds
check "genconfig: --mds followed by an option" refused "option --mds needs a value" \
	--mds --ios 127.0.0.1:7401
check "genconfig: --key-file without a value" refused "option --key-file needs a value" \
	--mds h:1 --ios h:2 --key-file
check "genconfig: port 0" refused "the port must be a number 1-65535" \
	--mds 127.0.0.1:0 --ios h:2 --key-file "$dir/key"
check "genconfig: port 65536" refused "the port must be a number 1-65535" \
	--mds h:1 --ios h:65536 --key-file "$dir/key"
check "genconfig: no port" refused "wants HOST:PORT" --mds h --ios h:2 --key-file "$dir/key"
check "genconfig: bad host" refused "is not a host name" \
	--mds 'a b:1' --ios h:2 --key-file "$dir/key"
check "genconfig: size suffix" refused "wants a size" "${ok[@]}" --strip-size 64Q
check "genconfig: size range" refused "out of range" "${ok[@]}" --strip-size 8G
check "genconfig: count" refused "wants a whole number" "${ok[@]}" --io-threads many
check "genconfig: count range" refused "out of range" "${ok[@]}" --io-threads 65
check "genconfig: time range" refused "out of range" "${ok[@]}" --timeout-ms 0
check "genconfig: one address twice" refused "given to two daemons" \
	--mds h:1 --ios h:1 --key-file "$dir/key"
printf 'n1 mds\nn1 ios\nn2 ios 70000\n' >"$dir/hosts.bad"
check "genconfig: --hosts port" refused "$dir/hosts.bad:3:" --hosts "$dir/hosts.bad" \
	--key-file "$dir/key"
printf 'n1 mds\nn2 mds\n' >"$dir/hosts.two"
check "genconfig: --hosts two mds" refused "a second metadata daemon" \
	--hosts "$dir/hosts.two" --key-file "$dir/key"

# A good config is written, parses as the daemons parse it (64K included),
# and a refusal by the daemons' parser stops it being written.
genconfig_good() {
	"$G" "${ok[@]}" --strip-size 64K --io-threads 2 --timeout-ms 5000 >"$dir/good.conf"
	cat "$dir/good.conf"
	grep -qx 'strip_size = 64K' "$dir/good.conf"
	"$bin/tessera-mds" -c "$dir/good.conf" -t
	"$build/proto/tp-config-doc" check "$dir/good.conf" | grep -qx 'strip_size = 65536'
}
check "genconfig: a good config parses" genconfig_good
check "genconfig: --daemon-user unknown" refused "no such user on this host" "${ok[@]}" \
	--daemon-user no-such-user-here
check "genconfig: --admin-hosts" refused "wants host names or addresses" "${ok[@]}" \
	--admin-hosts 'a;b'
# daemon_uid: the user running it, or --daemon-user's uid
genconfig_daemon_uid() {
	"$G" "${ok[@]}" | grep -qx "daemon_uid = $(id -u)"
	"$G" "${ok[@]}" --daemon-user nobody --admin-hosts "adm1, 10.0.0.7" >"$dir/duid.conf"
	cat "$dir/duid.conf"
	grep -qx "daemon_uid = $(id -u nobody)" "$dir/duid.conf"
	grep -qx "admin_hosts = adm1, 10.0.0.7" "$dir/duid.conf"
}
check "genconfig: daemon_uid and admin_hosts" genconfig_daemon_uid
genconfig_checked() {
	mkdir -p "$dir/fakebin"
	printf '#!/bin/sh\necho "tessera-mds: refused for the test" >&2\nexit 1\n' \
		>"$dir/fakebin/tessera-mds"
	chmod +x "$dir/fakebin/tessera-mds"
	local rc=0
	TESSERA_BIN=$dir/fakebin "$G" "${ok[@]}" >"$dir/out" 2>"$dir/err" || rc=$?
	cat "$dir/err"
	[ "$rc" -eq 1 ] && [ ! -s "$dir/out" ] && grep -q "the daemons refuse this config" "$dir/err"
}
check "genconfig: the daemons' parser has the last word" genconfig_checked

# ---------------------------------------------------- config search path
# Which config the CLI and the mount took shows in their error: each
# candidate here names no reachable daemon or is not a config at all.
mkdir -p "$dir/cwd/var" "$dir/empty" "$dir/mnt"
echo "this is not a config" >"$dir/cwd/var/tessera.conf"
echo "neither is this" >"$dir/env.conf"
echo "nor this" >"$dir/flag.conf"
took() { # WANT CWD [ENV] -- COMMAND...: COMMAND, run in CWD, fails naming WANT
	local want=$1 cwd=$2 env=$3
	shift 4
	(cd "$cwd" && env -u TESSERA_CONFIG ${env:+TESSERA_CONFIG=$env} timeout 20 "$@") \
		>"$dir/out" 2>&1 && return 1
	cat "$dir/out"
	grep -qF -- "$want" "$dir/out"
}
T=$bin/tessera
check "config: -c first" took "$dir/flag.conf" "$dir/cwd" "$dir/env.conf" -- \
	"$T" -c "$dir/flag.conf" ping
check "config: then \$TESSERA_CONFIG" took "$dir/env.conf" "$dir/cwd" "$dir/env.conf" -- "$T" ping
check "config: then ./var/tessera.conf" took "./var/tessera.conf" "$dir/cwd" "" -- "$T" ping
if [ -e /etc/tessera/tessera.conf ]; then
	skip_check "config: none found" "/etc/tessera/tessera.conf exists on this machine"
else
	check "config: none found lists the places" took \
		"searched -c FILE (not given), \$TESSERA_CONFIG (not set), ./var/tessera.conf and /etc/tessera/tessera.conf" \
		"$dir/empty" "" -- "$T" ping
fi
if [ -x "$bin/tessera-fuse" ]; then
	check "config: the mount takes \$TESSERA_CONFIG" took "$dir/env.conf" "$dir/cwd" \
		"$dir/env.conf" -- "$bin/tessera-fuse" -f "$dir/mnt"
	check "config: the mount takes ./var/tessera.conf" took "var/tessera.conf" "$dir/cwd" "" -- \
		"$bin/tessera-fuse" -f "$dir/mnt"
	if [ ! -e /etc/tessera/tessera.conf ]; then
		check "config: the mount lists the places" took "searched -c FILE" "$dir/empty" "" -- \
			"$bin/tessera-fuse" -f "$dir/mnt"
	fi
fi

# ------------------------------------------------------ the daemons' log
. "$top/tests/integ/munged.sh"
if ! munged_start "$dir" >"$dir/munged.err" 2>&1; then
	skip_check "daemon log" "no munged: $(head -1 "$dir/munged.err")"
	checks_done
fi
pids+=("$MUNGED_PID")
port=$(free_ports 2)
conf=$dir/tessera.conf
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$dir/tessera.key")
{
	echo "mds = 127.0.0.1:$port"
	echo "ios = 127.0.0.1:$((port + 1))"
	echo "timeout_ms = 5000"
	echo "munge_socket = $MUNGE_SOCK"
	echo "key_file = $dir/tessera.key"
} >"$conf"
# the daemons refuse a log that group or others can read (docs/admin.md)
(umask 077 && touch "$dir"/{ios,mds,mds-v}.log "$dir/mds-syslog.stderr")
"$bin/tessera-ios" -c "$conf" -d "$dir/ios0" -i 0 >"$dir/ios.log" 2>&1 &
pids+=($!)

# wait_for FILE TEXT: up to 10 s
wait_for() {
	for _ in $(seq 100); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no '$2' in $1:"
	cat "$1"
	return 1
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; true; }

# -v: a ping's session is a debug line; without -v it is not logged.
daemon_levels() {
	local pid
	"$bin/tessera-mds" -c "$conf" -d "$dir/mds" >"$dir/mds.log" 2>&1 &
	pid=$!
	wait_for "$dir/mds.log" "serving"
	TESSERA_CONFIG=$conf timeout 30 "$bin/tessera" ping >/dev/null 2>&1 || true
	stop_pid "$pid"
	cat "$dir/mds.log"
	grep -q 'tessera-mds\[0\]: info: serving' "$dir/mds.log"
	if grep -q 'debug:' "$dir/mds.log"; then
		echo "debug lines without -v"
		return 1
	fi
	"$bin/tessera-mds" -c "$conf" -d "$dir/mds" -v >"$dir/mds-v.log" 2>&1 &
	pid=$!
	wait_for "$dir/mds-v.log" "serving"
	TESSERA_CONFIG=$conf timeout 30 "$bin/tessera" ping >/dev/null 2>&1 || true
	wait_for "$dir/mds-v.log" "debug: session"
	stop_pid "$pid"
	cat "$dir/mds-v.log"
	grep -q 'info: signal 15: shutting down' "$dir/mds-v.log"
}
check "daemon: levels, and -v logs debug" daemon_levels
check "daemon: -L with a bad target" bash -c \
	"\"$bin/tessera-mds\" -c \"$conf\" -d \"$dir/mds\" -L journal 2>&1; [ \$? -eq 2 ]"

# -L syslog: syslog(3) writes to /dev/log. The daemon runs in a mount
# namespace of its own whose /dev holds a datagram socket of ours as log
# (and the few device nodes it uses), so nothing reaches the machine's log.
syslog_target() {
	local pid
	mkdir -p "$dir/dev"
	for n in null zero urandom random; do : >"$dir/dev/$n"; done
	python3 - "$dir/dev/log" "$dir/syslog.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", 0) as f:
    while True:
        f.write(s.recv(65536) + b"\n")
PY
	pid=$!
	# (check runs this in a subshell: the listener goes with it, not
	# with the script's own trap, which never sees this pid)
	trap "kill $pid 2>/dev/null" EXIT   # (a wait here would set the status)
	wait_for_socket() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.1; done; return 1; }
	wait_for_socket "$dir/dev/log"
	: >"$dir/syslog.out"
	unshare --mount --propagation private sh -c '
		for n in null zero urandom random; do mount --bind /dev/$n "$1/dev/$n"; done
		mount --bind "$1/dev" /dev
		exec "$2" -c "$3" -d "$1/mds" -L syslog -v' sh "$dir" "$bin/tessera-mds" "$conf" \
		>"$dir/mds-syslog.stderr" 2>&1 &
	local mds=$!
	wait_for "$dir/syslog.out" "serving"
	TESSERA_CONFIG=$conf timeout 30 "$bin/tessera" ping >/dev/null 2>&1 || true
	wait_for "$dir/syslog.out" "session"
	stop_pid "$mds"
	cat "$dir/syslog.out"
	echo "stderr:"; cat "$dir/mds-syslog.stderr"
	# <30> is daemon.info, <31> daemon.debug (facility 3 * 8 + priority)
	grep -q '^<30>.*tessera-mds\[[0-9]*\]: mds 0: serving' "$dir/syslog.out"
	grep -q '^<31>.*tessera-mds\[[0-9]*\]: mds 0: session' "$dir/syslog.out"
	! grep -q 'serving' "$dir/mds-syslog.stderr"
}
if unshare --mount true 2>/dev/null; then
	check "daemon: -L syslog" syslog_target
else
	skip_check "daemon: -L syslog" "cannot make a mount namespace here (unshare --mount)"
fi
checks_done
