# fuse_cluster.sh - sourced by the FUSE benchmarks: fuse_cluster_up NAME
# starts a private cluster (1 metadata daemon, N_IOS storage daemons, on
# loopback, under a new directory $D) and a tessera-fuse mount of it at
# $M, and sets an EXIT trap that undoes it all. Needs $top, $BIN and
# $N_IOS; sets D, CONF, M, FUSE_PID. NAME prefixes messages.
# BENCH_FUSE_OPTS, when set, is given to the mount as -o (an A/B of a
# mount option in one build: BENCH_FUSE_OPTS=remove_behind=0), and
# BENCH_CONF, when set, is added to the configuration file (lines, e.g.
# BENCH_CONF="spare_files = 0").
# fuse_passthrough_up NAME then mounts a FUSE passthrough beside it (see
# there), which fuse_cluster_down unmounts too.
fuse_cluster_up() {
	local name=$1 i t
	D=$(mktemp -d "/tmp/tessera-$name.XXXXXX")
	CONF=$D/tessera.conf
	M=$D/mnt
	FUSE_PID=
	trap fuse_cluster_down EXIT
	. "$top/tests/integ/munged.sh"
	. "$top/tests/integ/ports.sh"
	munged_start "$D" || exit 1   # stopped through its pid file, as the daemons
	{
		echo "provider = tcp;ofi_rxm"
		port_lines "$N_IOS"
		echo "timeout_ms = 30000"
		echo "munge_socket = $MUNGE_SOCK"
		echo "key_file = $D/tessera.key"
		[ -z "${BENCH_CONF:-}" ] || echo "$BENCH_CONF"
	} >"$CONF"
	(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$D/tessera.key")
	mkdir -p "$M" "$D/local" && mkdir -p -m 700 "$D/mds"
	fuse_cluster_start "$name" mds "$BIN/tessera-mds" -c "$CONF" -d "$D/mds"
	for ((i = 0; i < N_IOS; i++)); do
		fuse_cluster_start "$name" "ios$i" "$BIN/tessera-ios" -c "$CONF" -d "$D/ios$i" -i "$i"
	done
	"$BIN/tessera-fuse" -c "$CONF" "$M" -f ${BENCH_FUSE_OPTS:+-o "$BENCH_FUSE_OPTS"} >"$D/fuse.log" 2>&1 &
	FUSE_PID=$!
	for ((t = 0; t < 150; t++)); do mountpoint -q "$M" && break; sleep 0.1; done
	mountpoint -q "$M" || { echo "$name: mount failed:" >&2; cat "$D/fuse.log" >&2; exit 1; }
}

fuse_cluster_down() {
	set +e   # (a process already gone must not stop the clean-up)
	local m
	for m in "$D/pt" "$M"; do   # (the passthrough first: it is under $D)
		mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	[ -n "$FUSE_PID" ] && kill "$FUSE_PID" 2>/dev/null
	for f in "$D"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}


# fuse_cluster_start NAME DAEMON PROGRAM ARGS...: run a daemon, wait for
# its pid file.
fuse_cluster_start() {
	local name=$1 daemon=$2 t
	shift 2
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$D/$daemon.log")
	"$@" -p "$D/$daemon.pid" >"$D/$daemon.log" 2>&1 &
	disown $!
	for ((t = 0; t < 100; t++)); do [ -s "$D/$daemon.pid" ] && return; sleep 0.1; done
	echo "$name: $daemon did not start:" >&2; cat "$D/$daemon.log" >&2; exit 1
}

# fuse_passthrough_up NAME: bindfs (a FUSE passthrough: no network, no
# daemons, no syncs) over $D/pt-lower, a directory of the file system the
# local figures use, mounted at $D/pt: what any FUSE file system pays on
# this machine before its own work. Sets PT to the mount, or to "" (with
# a message) when bindfs is missing or would not mount.
fuse_passthrough_up() {
	PT=
	if ! command -v bindfs >/dev/null; then
		echo "$1: no bindfs (make deps installs it): no passthrough figures" >&2
		return 0
	fi
	mkdir -p "$D/pt-lower" "$D/pt"
	if bindfs "$D/pt-lower" "$D/pt"; then
		PT=$D/pt
	else
		echo "$1: bindfs would not mount: no passthrough figures" >&2
	fi
}
