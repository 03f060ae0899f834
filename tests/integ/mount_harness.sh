# mount_harness.sh - sourced by the suites that run programs on a Tessera
# mount (test_pjdfstest.sh, test_mount_programs.sh): a private cluster
# through deploy/tessera-local (1 mds + 2 ios on free loopback ports) and
# one tessera-fuse mount with allow_other,default_permissions, the shared
# scratch line of docs/user-guide.md. Needs checks.sh sourced first.
#
#   mount_can_run            skip_all (exits) with the reason when this
#                            machine cannot mount (no /dev/fuse, not root...)
#   mount_up DIR             cluster state in DIR/var, mount at DIR/tmnt;
#                            prints what failed and returns 1 on failure
#   mount_down               unmount and stop everything mount_up started
#                            (call from the suite's EXIT trap)
#
# TESSERA_BUILD names the build (default build/).
MH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MH_BIN=${TESSERA_BUILD:-$MH_TOP/build}/bin
MH_DIR=
MH_FUSE_PID=

mount_can_run() { # SUITE
	[ -c /dev/fuse ] || skip_all "$1" "/dev/fuse is missing"
	{ exec 3<>/dev/fuse; } 2>/dev/null || skip_all "$1" "/dev/fuse cannot be opened"
	exec 3>&-
	[ "$(id -u)" -eq 0 ] || skip_all "$1" "needs root (other uids on the mount, allow_other)"
	command -v fusermount3 >/dev/null || skip_all "$1" "fusermount3 is not installed (make deps)"
	local p
	for p in tessera-fuse tessera-mds tessera-ios tessera; do
		[ -x "$MH_BIN/$p" ] || skip_all "$1" "$MH_BIN/$p is not built"
	done
}

# mount_wait DIR PID LOG: until DIR is a mount point, or PID died.
mount_wait() {
	local t
	for ((t = 0; t < 150; t++)); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	echo "the mount on $1 did not come up:"
	cat "$3"
	return 1
}

mount_up() { # DIR
	MH_DIR=$1
	local port
	port=$(free_ports 3)
	mkdir -p "$MH_DIR/tmnt"
	if ! "$MH_TOP/deploy/tessera-local" -d "$MH_DIR/var" -p "$port" -n 2 -b "$MH_BIN" \
		--no-mount up >"$MH_DIR/local.log" 2>&1; then
		echo "the cluster did not start (tessera-local up):"
		cat "$MH_DIR/local.log"
		return 1
	fi
	"$MH_BIN/tessera-fuse" -c "$MH_DIR/var/tessera.conf" "$MH_DIR/tmnt" -f \
		-o allow_other,default_permissions >"$MH_DIR/fuse.log" 2>&1 &
	MH_FUSE_PID=$!
	mount_wait "$MH_DIR/tmnt" "$MH_FUSE_PID" "$MH_DIR/fuse.log" || return 1
	chmod 0755 "$MH_DIR/tmnt"
}

mount_down() {
	[ -n "$MH_DIR" ] || return 0
	if mountpoint -q "$MH_DIR/tmnt" 2>/dev/null; then
		fusermount3 -u "$MH_DIR/tmnt" 2>/dev/null || umount -l "$MH_DIR/tmnt" 2>/dev/null
	fi
	if [ -n "$MH_FUSE_PID" ]; then
		kill "$MH_FUSE_PID" 2>/dev/null
		wait "$MH_FUSE_PID" 2>/dev/null
	fi
	[ ! -d "$MH_DIR/var" ] ||
		"$MH_TOP/deploy/tessera-local" -d "$MH_DIR/var" -b "$MH_BIN" down >/dev/null 2>&1
	MH_DIR=
	return 0
}
