#!/usr/bin/env bash
# The systemd units (deploy/systemd/, docs/admin.md "The systemd units")
# and the daemons' readiness notification:
#   - make install (PREFIX a temporary directory, so that the units'
#     ExecStart programs exist where they say) installs the units, with
#     the programs' paths, and the daemons' sysusers.d file;
#   - systemd-analyze verify accepts each unit (a storage daemon's as
#     instance 0), and its offline security review keeps the hardening;
#   - systemd-sysusers makes the user from the installed file;
#   - a daemon with $NOTIFY_SOCKET sends READY=1 once it answers: a
#     listener on that socket pings the file system as READY=1 arrives,
#     once, with no retry; STATUS= says it serves; STOPPING=1 follows
#     SIGTERM; without $NOTIFY_SOCKET a daemon sends nothing and serves;
#   - the mount unit's What/Type/Options, the same mount as an fstab line
#     (mount -T), and the fuse.tessera-fuse form (mount.fuse3) mount it.
# The daemons run as an unprivileged user with no_new_privs when this
# runs as root, as under the units (User=tessera, NoNewPrivileges=yes).
# systemd is not booted here (no PID 1 of its own in a container).
# Prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-systemd.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
. "$top/tests/integ/munged.sh"
prefix=$tmp/prefix
units=$prefix/lib/systemd/system
conf=$tmp/tessera.conf
# Checks run in subshells: what they start is remembered in files, the
# daemons' PIDs in their pid files (-p, written once they listen).
pids=$tmp/pids   # NAME: the PID of a listener or munged
run=$tmp/run     # NAME.pid: a daemon's
mkdir -p "$pids" "$run"

cleanup() {
	local m f
	for m in "$tmp"/mnt-*; do
		! mountpoint -q "$m" || umount "$m" 2>/dev/null
	done
	for f in "$run"/*.pid "$pids"/*; do
		[ ! -f "$f" ] || kill "$(cat "$f")" 2>/dev/null
	done
	sleep 0.5
	rm -rf "$tmp"
}
trap cleanup EXIT

[ -x "$build/bin/tessera-mds" ] || skip_all systemd "$build is not built (run make)"

# The daemons run as the service user would: another uid, no new
# privileges. Without root they run as the caller.
chmod 0711 "$tmp"
svc_uid=$(id -u)
as_service() { "$@"; }
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	svc_uid=65534
	as_service() { setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs "$@"; }
fi
chown "$svc_uid" "$run"

test_make_install() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" --no-print-directory \
		B="$build" MPICC= PREFIX="$prefix" DESTDIR= install
}

test_installed_units() {
	local u
	for u in tessera-mds.service tessera-ios@.service mnt-tessera.mount; do
		[ -f "$units/$u" ] || { echo "missing: $units/$u"; return 1; }
		! grep -n '@[a-z]*@' "$units/$u"   # every placeholder substituted
		grep -qx 'Requires=munge.service' "$units/$u"
		grep -q '^After=.*munge.service' "$units/$u"
	done
	grep -qx "ExecStart=$prefix/bin/tessera-mds -c /etc/tessera/tessera.conf -d /var/lib/tessera/mds" \
		"$units/tessera-mds.service"
	grep -q "^ExecStart=$prefix/bin/tessera-ios .* -i %i\$" "$units/tessera-ios@.service"
	grep -qx "What=$prefix/bin/tessera-fuse#/etc/tessera/tessera.conf" "$units/mnt-tessera.mount"
	for u in tessera-mds.service tessera-ios@.service; do
		grep -qx 'Type=notify' "$units/$u"
		grep -qx 'User=tessera' "$units/$u"
		grep -qx 'StateDirectory=tessera' "$units/$u"
		# the stores are the daemons' user's alone (docs/admin.md, closed disks)
		grep -qx 'StateDirectoryMode=0700' "$units/$u"
		grep -qx 'UMask=0077' "$units/$u"
		grep -qx 'ProtectSystem=strict' "$units/$u"
	done
	[ -f "$prefix/lib/sysusers.d/tessera.conf" ]
}

# verify loads each unit as systemd would, runs `man` for Documentation=
# (the pages installed beside them) and checks that ExecStart exists.
test_verify_units() {
	local u out
	command -v systemd-analyze >/dev/null || { echo "no systemd-analyze"; return 1; }
	for u in tessera-mds.service tessera-ios@0.service mnt-tessera.mount; do
		out=$(cd "$units" && MANPATH=$prefix/share/man: systemd-analyze verify "$units/$u" 2>&1) ||
			{ echo "verify $u:"; echo "$out"; return 1; }
		[ -z "$out" ] || { echo "verify $u warns:"; echo "$out"; return 1; }
		echo "verify $u: clean"
	done
}

# The review's exposure scale is 0 (locked down) to 10 (root, nothing
# restricted); the daemons' units stand at 1.7. 2.5 leaves room for a
# deliberate change, not for hardening dropped by mistake.
test_security_review() {
	local u
	for u in tessera-mds.service tessera-ios@0.service; do
		systemd-analyze security --offline=yes --threshold=25 "$units/$u" >"$tmp/sec" 2>&1 ||
			{ grep -E 'Overall|✗' "$tmp/sec"; return 1; }
		grep 'Overall' "$tmp/sec"
	done
}

test_sysusers() {
	mkdir -p "$tmp/sysroot/etc"
	systemd-sysusers --root="$tmp/sysroot" "$prefix/lib/sysusers.d/tessera.conf"
	grep '^tessera:' "$tmp/sysroot/etc/passwd" | tee "$tmp/pw"
	[ "$(cut -d: -f6 "$tmp/pw")" = /var/lib/tessera ]
	grep -q 'nologin$' "$tmp/pw"
	# the same uid on every host: the config's daemon_uid
	[ "$(cut -d: -f3 "$tmp/pw")" = 740 ]
	grep -q '^tessera:' "$tmp/sysroot/etc/group"
}

# A NOTIFY_SOCKET listener: every datagram as "TIME MESSAGE" lines in
# LOG; as READY=1 arrives it runs PING once and logs its exit status and
# output. Ready to receive once SOCK exists.
cat >"$tmp/listen.py" <<'PY'
import os, socket, subprocess, sys, time
sock_path, log_path, ping = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock_path + ".new")
os.chmod(sock_path + ".new", 0o666)
os.rename(sock_path + ".new", sock_path)
with open(log_path, "a", buffering=1) as log:
    while True:
        msg = s.recv(4096).decode()
        log.write("%.3f %s\n" % (time.time(), msg.replace("\n", " | ")))
        if "READY=1" in msg.split("\n"):
            p = subprocess.run(ping, capture_output=True, text=True, timeout=60)
            log.write("ping exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
PY

listen() { # NAME: a listener on $tmp/NAME.sock logging to $tmp/NAME.log
	python3 "$tmp/listen.py" "$tmp/$1.sock" "$tmp/$1.log" \
		env TESSERA_CONFIG="$conf" "$build/bin/tessera" ping &
	echo $! >"$pids/listen-$1"
	for _ in $(seq 100); do [ -S "$tmp/$1.sock" ] && return 0; sleep 0.05; done
	echo "listener $1 did not start"
	return 1
}

wait_for() { # SECONDS COMMAND...: until COMMAND succeeds
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# A daemon NAME (mds or ios): PROGRAM ARGS..., run by WRAPPER (say,
# strace) if given, with $NOTIFY_SOCKET set to SOCKET or unset ("").
start_daemon() { # NAME SOCKET|"" [WRAPPER...] --
	local name=$1 sock=$2 wrap=() args
	shift 2
	while [ "$1" != -- ]; do wrap+=("$1"); shift; done
	if [ "$name" = mds ]; then args=("${mds_args[@]}"); else args=("${ios_args[@]}"); fi
	rm -f "$run/$name.pid"
	# the daemons refuse a log that group or others can read
	rm -f "$tmp/$name.out" && (umask 077 && touch "$tmp/$name.out")
	if [ -n "$sock" ]; then
		as_service env NOTIFY_SOCKET="$sock" "${wrap[@]}" "${args[@]}" -p "$run/$name.pid" \
			>"$tmp/$name.out" 2>&1 &
	else
		as_service env -u NOTIFY_SOCKET "${wrap[@]}" "${args[@]}" -p "$run/$name.pid" \
			>"$tmp/$name.out" 2>&1 &
	fi
}

ping_ok() { timeout 10 env TESSERA_CONFIG="$conf" "$build/bin/tessera" ping >/dev/null 2>&1; }

stop_daemon() { # NAME: SIGTERM, then until it is gone
	local pid
	wait_for 30 test -s "$run/$1.pid"
	pid=$(cat "$run/$1.pid")
	kill -TERM "$pid"
	wait_for 30 eval "! kill -0 $pid 2>/dev/null"
	rm -f "$run/$1.pid"
}

test_cluster_config() {
	local port
	mkdir -p "$tmp/munge" "$tmp/state"
	munged_start "$tmp/munge"
	echo "$MUNGED_PID" >"$pids/munged"
	port=$(free_ports 2)
	"$top/deploy/tessera-genconfig" --mds "127.0.0.1:$port" --ios "127.0.0.1:$((port + 1))" \
		--timeout-ms 5000 --key-file "$tmp/key" --munge-socket "$MUNGE_SOCK" \
		--daemon-user "$(id -nu "$svc_uid")" >"$conf"
	grep -qx "daemon_uid = $svc_uid" "$conf"
	chown "$svc_uid" "$tmp/key" "$tmp/state"
	chmod 0644 "$conf"
	cat "$conf"
}

mds_args=("$build/bin/tessera-mds" -c "$conf" -d "$tmp/state/mds")
ios_args=("$build/bin/tessera-ios" -c "$conf" -d "$tmp/state/ios0" -i 0)

# The metadata daemon first: as READY=1 arrives, the listener's ping
# finds it answering (the storage daemon is not up yet, so ping fails
# for that one alone).
test_mds_ready_when_serving() {
	listen mds
	start_daemon mds "$tmp/mds.sock" --
	wait_for 30 grep -q '^ping exit' "$tmp/mds.log" || { cat "$tmp/mds.out"; return 1; }
	cat "$tmp/mds.log"
	grep -q ' READY=1 | STATUS=serving (provider tcp;msg, version ' "$tmp/mds.log"
	grep -Eq '^mds +0 .* [0-9.]+ ?(us|ms)' "$tmp/mds.log"
	grep -q 'serving' "$tmp/mds.out"
	[ "$(grep -c 'READY=1' "$tmp/mds.log")" -eq 1 ]
}

# Then the storage daemon: ready means the whole file system answers.
test_ios_ready_when_serving() {
	listen ios
	start_daemon ios "$tmp/ios.sock" --
	wait_for 30 grep -q '^ping exit' "$tmp/ios.log" || { cat "$tmp/ios.out"; return 1; }
	cat "$tmp/ios.log"
	grep -q ' READY=1 | STATUS=serving ' "$tmp/ios.log"
	grep -qx 'ping exit 0' "$tmp/ios.log"
}

test_stopping_on_sigterm() {
	stop_daemon ios
	cat "$tmp/ios.log"
	grep -q ' STOPPING=1 | STATUS=stopping$' "$tmp/ios.log"
	[ "$(grep -c 'READY=1' "$tmp/ios.log")" -eq 1 ]
	! grep -q sd_notify "$tmp/ios.out"
}

# Without NOTIFY_SOCKET: the daemon serves and sends no datagram. strace
# shows every sendmsg; the same trace with NOTIFY_SOCKET set shows
# READY=1, so the trace would have seen one.
test_silent_without_socket() {
	local sent
	command -v strace >/dev/null || { echo "strace is not installed (make deps)"; return 1; }
	start_daemon ios "" strace -f -s 64 -e trace=sendmsg,sendto -o "$run/ios.trace" --
	wait_for 30 ping_ok ||
		{ cat "$tmp/ios.out"; return 1; }
	stop_daemon ios
	sent=$(grep -c 'READY=1\|STOPPING=1' "$run/ios.trace" || true)
	echo "without NOTIFY_SOCKET: $sent notifications in the trace"
	[ "$sent" -eq 0 ]
	! grep -q sd_notify "$tmp/ios.out"
	start_daemon ios "$tmp/ios.sock" strace -f -s 64 -e trace=sendmsg,sendto \
		-o "$run/ios.trace" --
	wait_for 30 grep -q 'READY=1' "$run/ios.trace"
	grep 'READY=1' "$run/ios.trace"
	stop_daemon ios
	start_daemon ios "" --   # for the mounts, untraced
	wait_for 30 ping_ok
}

fuse_usable() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root"; return 1; }
	[ -x "$prefix/bin/tessera-fuse" ] || { echo "tessera-fuse is not built"; return 1; }
	{ exec 3<>/dev/fuse; } 2>/dev/null || { echo "/dev/fuse cannot be opened"; return 1; }
	exec 3>&-
	command -v mount.fuse3 >/dev/null || { echo "mount.fuse3 is not installed"; return 1; }
}

# Mounted at DIR: a file written there is the file system's, and is read
# back through the mount; then it unmounts.
use_mount() { # DIR NAME
	local dir=$1 name=$2
	mountpoint -q "$dir"
	grep " $dir fuse.tessera " /proc/self/mounts
	head -c 300000 /dev/urandom >"$tmp/$name.in"
	cp "$tmp/$name.in" "$dir/$name"
	env TESSERA_CONFIG="$conf" "$build/bin/tessera" stat "/$name" | grep -qx '  Size: 300000'
	cmp "$tmp/$name.in" "$dir/$name"
	umount "$dir"
	! mountpoint -q "$dir"
}

# What systemd runs for the installed mount unit: mount -t TYPE WHAT
# WHERE -o OPTIONS, the config and mount point moved to this test's.
test_mount_unit() {
	local what type opts dir=$tmp/mnt-unit
	mkdir -p "$dir"
	what=$(sed -n 's/^What=//p' "$units/mnt-tessera.mount")
	type=$(sed -n 's/^Type=//p' "$units/mnt-tessera.mount")
	opts=$(sed -n 's/^Options=//p' "$units/mnt-tessera.mount")
	mount -t "$type" "${what%#*}#$conf" "$dir" -o "$opts"
	use_mount "$dir" unit.bin
}

# The fstab line docs/admin.md gives for a prefix off mount's PATH
# (PROGRAM#CONFIG, type fuse), read by mount from an fstab.
test_fstab_line() {
	local dir=$tmp/mnt-fstab
	mkdir -p "$dir"
	echo "$prefix/bin/tessera-fuse#$conf $dir fuse _netdev,allow_other 0 0" >"$tmp/fstab"
	mount -T "$tmp/fstab" "$dir"
	use_mount "$dir" fstab.bin
}

# The fuse.tessera-fuse line (type fuse.tessera-fuse, the config as the
# source): mount hands it to mount.fuse3 so, which finds tessera-fuse on
# the PATH (mount's own PATH has /usr/local/bin, not this prefix).
test_fstab_type_line() {
	local dir=$tmp/mnt-type
	mkdir -p "$dir"
	PATH=$prefix/bin:$PATH mount.fuse3 "$conf" "$dir" -o rw,_netdev,allow_other \
		-t fuse.tessera-fuse
	use_mount "$dir" type.bin
}

check make_install test_make_install
check installed_units test_installed_units
if command -v systemd-analyze >/dev/null; then
	check verify_units test_verify_units
	check security_review test_security_review
else
	skip_check verify_units "systemd-analyze is not installed"
	skip_check security_review "systemd-analyze is not installed"
fi
if command -v systemd-sysusers >/dev/null && [ "$(id -u)" -eq 0 ]; then
	check sysusers test_sysusers
else
	skip_check sysusers "needs systemd-sysusers and root"
fi
check cluster_config test_cluster_config
check mds_ready_when_serving test_mds_ready_when_serving
check ios_ready_when_serving test_ios_ready_when_serving
check stopping_on_sigterm test_stopping_on_sigterm
check silent_without_notify_socket test_silent_without_socket
if why=$(fuse_usable); then
	check mount_unit test_mount_unit
	check fstab_line test_fstab_line
	check fstab_type_line test_fstab_type_line
else
	for t in mount_unit fstab_line fstab_type_line; do skip_check $t "$why"; done
fi
checks_done
