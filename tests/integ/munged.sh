# munged.sh - sourced by test scripts that start their own daemons: a
# munged of the suite's own, as tests/integ/cluster.c starts one.
#
#   . "$top/tests/integ/munged.sh"
#   munged_start DIR   # a generated key (DIR/munge.key, mode 0600), socket
#                      # DIR/munge.sock; sets MUNGED_PID (stop it by that
#                      # PID) and MUNGE_SOCK (the config's munge_socket)
munged_start() {
	local dir=$1
	command -v munged >/dev/null || { echo "munged is not installed (make deps)" >&2; return 1; }
	(umask 077; head -c 1024 /dev/urandom >"$dir/munge.key")
	chmod 0711 "$dir" # others reach the socket (tests that drop privileges)
	MUNGE_SOCK=$dir/munge.sock
	munged --foreground --force --key-file="$dir/munge.key" --socket="$MUNGE_SOCK" \
		--pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" \
		>>"$dir/munged.log" 2>&1 &
	MUNGED_PID=$!
	for _ in $(seq 300); do
		[ -S "$MUNGE_SOCK" ] && return 0
		kill -0 "$MUNGED_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "munged did not start; its log:" >&2
	cat "$dir/munged.log" >&2
	return 1
}
