#!/usr/bin/env bash
#SBATCH --job-name=tessera
#SBATCH --ntasks-per-node=1
#SBATCH --export=ALL
#
# tessera-job.sh - a Tessera file system for the life of one Slurm job, on
# the job's nodes: the metadata daemon on the first node, a storage daemon
# on every node (storing on node-local disk), a FUSE mount on every node
# (unless --no-fuse), then COMMAND, then everything stopped and removed.
#
#   sbatch [-N NODES ...] tessera-job.sh [OPTIONS] [--] COMMAND [ARG...]
#   salloc [-N NODES ...] tessera-job.sh [OPTIONS] [--] COMMAND [ARG...]
#
# With sbatch, COMMAND runs in the batch script on the first node; with
# salloc it runs where salloc was typed (`salloc -N4 tessera-job.sh bash`
# gives a shell with the file system up; leaving the shell tears it
# down). COMMAND sees TESSERA_CONFIG (the file system's config, on every
# node of the job), TESSERA_MNT (the mount point, the same path on every
# node; unset unless every node mounted), the Tessera programs first on PATH, and
# Open MPI's path to the Tessera ROMIO driver (the install's
# tessera-mpi-env.sh, when it has one). Start the application from
# COMMAND as usual:
#   sbatch -N4 --ntasks-per-node=8 tessera-job.sh mpirun ./app tessera:/out.h5
#   sbatch -N4 tessera-job.sh -- sh -c 'srun ./app "$TESSERA_MNT/out"'
# (srun starts MPI ranks only where the site's MPI supports it, PMIx).
# The job's exit code is COMMAND's (1 if the file system did not start).
#
# Options (each also read from the environment, which sbatch and salloc
# pass on: `--export=ALL` is their default):
#   --keep       TESSERA_KEEP=1      keep each node's data and logs
#   --no-fuse    TESSERA_FUSE=no     do not mount (the MPI driver and the
#   --fuse       TESSERA_FUSE=yes    CLI need no mount); yes: fail when a
#                                    node cannot mount; auto (default):
#                                    mount where /dev/fuse is usable
# Environment only:
#   TESSERA_PREFIX   where Tessera is: an install prefix (PREFIX/bin) or a
#                    built checkout (build/bin, deploy/). Unset: the
#                    directory of `tessera-mds` on PATH. Slurm runs a
#                    copy of this script from its spool directory, so its
#                    own location says nothing.
#   TESSERA_LOCAL    node-local parent directory (/tmp): each node keeps
#                    its state in TESSERA_LOCAL/tessera-JOBID
#   TESSERA_PORT_BASE, TESSERA_PORT_SPAN   ports (17400, 7000): the job
#                    takes P = BASE + 2 * (JOBID mod SPAN) for the metadata
#                    daemon and P+1 for each node's storage daemon, so
#                    jobs sharing a node never collide unless their ids
#                    are SPAN apart; the default stays below the kernel's
#                    ephemeral ports (32768)
#   TESSERA_PROVIDER       libfabric provider (tcp;msg)
#   TESSERA_MUNGE_SOCKET   munged's socket when not the default one
#   TESSERA_HOST_SUFFIX    appended to node names for the daemons'
#                          addresses (e.g. -ib); unset: each node's
#                          NodeAddr as Slurm knows it
#   TESSERA_GENCONFIG_ARGS more tessera-genconfig options (--strip-size 1M)
#   TESSERA_START_TIMEOUT  seconds to wait for the file system (60)
#
# The servers run in one job step (one task per node, --overlap, so the
# application's steps can share the CPUs) named tessera-servers; the job
# stops it with `scancel --signal=TERM`, as Slurm does when the job is
# cancelled or reaches its time limit, so both take one path: each node
# unmounts, stops its daemons by PID and removes its directory. Keep
# Slurm's KillWait (30 s by default) above that teardown (a few seconds).
set -euo pipefail

usage() {
	cat <<EOF
usage: sbatch [SBATCH OPTIONS] tessera-job.sh [--keep] [--fuse|--no-fuse] [--] COMMAND [ARG...]
       salloc [SALLOC OPTIONS] tessera-job.sh [--keep] [--fuse|--no-fuse] [--] COMMAND [ARG...]
EOF
}
say() { echo "tessera-job: $*" >&2; }
die() { say "$*"; exit 1; }

# --- node side: run on every node in the servers step --------------------
# (shipped to the nodes with `declare -f`: the script itself is only on
# the node that runs the batch step)

# node_unmount: by the mount table, not mountpoint(1), which fails on a
# mount whose tessera-fuse has gone: Slurm's TERM reaches tessera-fuse
# too, and it exits on TERM without unmounting.
node_unmount() {
	[ -n "${NODE_MNT:-}" ] && grep -q " $NODE_MNT fuse" /proc/mounts || return 0
	fusermount3 -u "$NODE_MNT" 2>/dev/null || fusermount3 -uz "$NODE_MNT" 2>/dev/null ||
		umount -l "$NODE_MNT" 2>/dev/null || true
}

# node_stop: unmount, stop the daemons by PID, remove the node's directory.
# Safe to run twice and with nothing started.
node_stop() {
	local pidfile pid n
	# to its end: a second TERM (the job's stop after a failure, or a
	# cancel) must not cut the teardown short
	trap '' TERM INT HUP
	node_unmount
	for pidfile in "$NODE_DIR"/run/*.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${NODE_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${NODE_PIDS[@]}"; do
		for ((n = 0; n < 100; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	node_unmount # one that tessera-fuse left while this ran
	if [ "$NODE_KEEP" = 1 ]; then
		echo "tessera-node $(hostname -s): stopped; kept $NODE_DIR"
	else
		rm -rf "$NODE_DIR"
		echo "tessera-node $(hostname -s): stopped; removed $NODE_DIR"
	fi
	rm -f "$NODE_DIR.conf" "$NODE_DIR.key"
}

# node_fail MESSAGE: stop, then report (the batch side reads
# TESSERA-FAILED, and stops every node).
node_fail() {
	node_stop
	echo "TESSERA-FAILED $(hostname -s): $*"
	exit 1
}

# node_launch NAME PROGRAM ARGS...: a daemon in the background; its PID
# file appears once it serves.
node_launch() {
	local name=$1
	shift
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$NODE_DIR/log/$name.log")
	"$@" -p "$NODE_DIR/run/$name.pid" >>"$NODE_DIR/log/$name.log" 2>&1 </dev/null &
	NODE_PIDS+=("$!")
	NODE_NAMES+=("$name")
}

# node_wait_pidfiles DEADLINE: every launched daemon serves, or fail.
node_wait_pidfiles() {
	local i name
	for i in "${!NODE_NAMES[@]}"; do
		name=${NODE_NAMES[$i]}
		until [ -s "$NODE_DIR/run/$name.pid" ]; do
			kill -0 "${NODE_PIDS[$i]}" 2>/dev/null ||
				node_fail "$name exited: $(tail -3 "$NODE_DIR/log/$name.log" | tr '\n' ' ')"
			[ "$SECONDS" -lt "$1" ] || node_fail "$name did not start in time"
			sleep 0.1
		done
	done
}

# node_mount BIN MODE DEADLINE: tessera-fuse in the foreground (a child,
# so it stays inside the step); ready once the root answers a stat. Where
# FUSE is not usable: fail under MODE yes, else leave NODE_MNT empty.
node_mount() {
	local bin=$1 mode=$2 deadline=$3
	if [ ! -x "$bin/tessera-fuse" ] || ! command -v fusermount3 >/dev/null ||
		! { true <>/dev/fuse; } 2>/dev/null; then
		[ "$mode" = yes ] && node_fail "FUSE is not usable here (tessera-fuse, fusermount3, /dev/fuse)"
		return 0
	fi
	mkdir -p "$NODE_DIR/mnt"
	"$bin/tessera-fuse" -f -c "$NODE_DIR/tessera.conf" "$NODE_DIR/mnt" \
		>>"$NODE_DIR/log/fuse.log" 2>&1 </dev/null &
	NODE_PIDS+=("$!")
	NODE_MNT=$NODE_DIR/mnt
	until mountpoint -q "$NODE_MNT" && timeout 5 stat "$NODE_MNT" >/dev/null 2>&1; do
		kill -0 "$!" 2>/dev/null ||
			node_fail "tessera-fuse exited: $(tail -3 "$NODE_DIR/log/fuse.log" | tr '\n' ' ')"
		[ "$SECONDS" -lt "$deadline" ] || node_fail "the mount did not come up in time"
		sleep 0.1
	done
}

# node_main DIR BIN FUSE KEEP TIMEOUT: this node's share of the file system.
node_main() {
	local bin=$2 fuse=$3 deadline=$((SECONDS + $5)) mounted=no
	NODE_DIR=$1 NODE_KEEP=$4 NODE_MNT="" NODE_PIDS=() NODE_NAMES=()
	trap 'node_stop; exit 0' TERM INT HUP
	# The config and key arrive by sbcast beside the directory (the
	# node that generated them has them in place already).
	if [ ! -f "$NODE_DIR/tessera.conf" ]; then
		mkdir -p -m 0700 "$NODE_DIR"
		mv "$NODE_DIR.conf" "$NODE_DIR/tessera.conf" && mv "$NODE_DIR.key" "$NODE_DIR/tessera.key" ||
			node_fail "the config or key did not arrive (sbcast to $NODE_DIR.conf, .key)"
	fi
	rm -f "$NODE_DIR.conf" "$NODE_DIR.key"
	mkdir -p "$NODE_DIR/log" "$NODE_DIR/run"
	[ "$SLURM_NODEID" != 0 ] ||
		node_launch mds "$bin/tessera-mds" -c "$NODE_DIR/tessera.conf" -d "$NODE_DIR/mds"
	node_launch ios "$bin/tessera-ios" -c "$NODE_DIR/tessera.conf" -d "$NODE_DIR/ios" -i "$SLURM_NODEID"
	node_wait_pidfiles "$deadline"
	# Every server, as this node sees them, answers a ping; a short
	# timeout keeps each try to a second while another node is starting.
	{ cat "$NODE_DIR/tessera.conf"; echo "timeout_ms = 500"; } >"$NODE_DIR/probe.conf"
	until TESSERA_CONFIG=$NODE_DIR/probe.conf "$bin/tessera" ping >"$NODE_DIR/log/ping.log" 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] ||
			node_fail "servers did not answer: $(tail -3 "$NODE_DIR/log/ping.log" | tr '\n' ' ')"
		sleep 0.2
	done
	if [ "$fuse" != no ]; then
		node_mount "$bin" "$fuse" "$deadline"
		[ -z "$NODE_MNT" ] || mounted=yes
	fi
	echo "TESSERA-READY $(hostname -s) mounted=$mounted"
	# Serve until Slurm signals the step (the job's end or its cancel).
	sleep infinity &
	NODE_PIDS+=("$!")
	wait "$!" || true
	node_stop
}

# --- batch side -----------------------------------------------------------

# find_install: BIN (the programs), GENCONFIG and MPIENV (Open MPI's
# path to the ROMIO component with the Tessera driver, when built), from
# TESSERA_PREFIX or PATH.
find_install() {
	local p=${TESSERA_PREFIX:-}
	MPIENV="" MPIENV_ARG=""
	if [ -n "$p" ]; then
		if [ -x "$p/bin/tessera-mds" ]; then
			BIN=$p/bin GENCONFIG=$p/bin/tessera-genconfig
			MPIENV=$p/share/tessera/tessera-mpi-env.sh
		elif [ -x "$p/build/bin/tessera-mds" ]; then
			BIN=$p/build/bin GENCONFIG=$p/deploy/tessera-genconfig
			MPIENV=$p/romio-adio/tessera-mpi-env.sh MPIENV_ARG=$p/build
		else
			die "TESSERA_PREFIX=$p holds neither bin/tessera-mds nor build/bin/tessera-mds"
		fi
	else
		p=$(command -v tessera-mds) ||
			die "tessera-mds is not on PATH: set TESSERA_PREFIX (sbatch --export=ALL,TESSERA_PREFIX=...)"
		BIN=$(dirname "$p")
		GENCONFIG=$BIN/tessera-genconfig
		MPIENV=$BIN/../share/tessera/tessera-mpi-env.sh
		[ -x "$GENCONFIG" ] || GENCONFIG=$(command -v tessera-genconfig) ||
			die "tessera-genconfig is not beside $p nor on PATH"
	fi
	BIN=$(realpath "$BIN")
}

# write_config: the hosts file (NodeAddr or name+suffix; ios index = node
# order, as SLURM_NODEID numbers the step's tasks) and the config, key.
write_config() {
	local n addr
	mkdir -p -m 0700 "$DIR" "$DIR/job"
	for n in "${NODES[@]}"; do
		if [ -n "${TESSERA_HOST_SUFFIX:-}" ]; then
			addr=$n$TESSERA_HOST_SUFFIX
		else
			addr=$(scontrol show node -o "$n" | tr ' ' '\n' | sed -n 's/^NodeAddr=//p')
			addr=${addr:-$n}
		fi
		[ "$n" != "${NODES[0]}" ] || echo "$addr mds $PORT"
		echo "$addr ios $((PORT + 1))"
	done >"$DIR/job/hosts"
	local extra=() munge=()
	[ -z "${TESSERA_MUNGE_SOCKET:-}" ] || munge=(--munge-socket "$TESSERA_MUNGE_SOCKET")
	# shellcheck disable=SC2206 # words, as on a command line
	[ -z "${TESSERA_GENCONFIG_ARGS:-}" ] || extra=($TESSERA_GENCONFIG_ARGS)
	"$GENCONFIG" --provider "${TESSERA_PROVIDER:-tcp;msg}" --hosts "$DIR/job/hosts" \
		--key-file "$DIR/tessera.key" --mount-point "$DIR/mnt" "${munge[@]}" "${extra[@]}" \
		>"$DIR/tessera.conf"
}

# is_job_node: this host runs a servers task (always under sbatch; under
# salloc only when typed on one of the job's nodes).
is_job_node() {
	local n me
	[ -z "${SLURMD_NODENAME:-}" ] || return 0
	me=$(hostname -s)
	for n in "${NODES[@]}"; do [ "$n" != "$me" ] || return 0; done
	return 1
}

servers_step() {
	squeue -h -s -j "$SLURM_JOB_ID" -o '%i %j' 2>/dev/null | awk '$2 == "tessera-servers" { print $1 }'
}

# cleanup: stop the servers step (TERM: each node tears itself down),
# wait for it, remove what this side made. Runs on every exit.
cleanup() {
	local rc=$? step n
	trap - EXIT
	trap '' TERM INT HUP # to its end, as node_stop
	[ -z "${APP_PID:-}" ] || kill -TERM "$APP_PID" 2>/dev/null || true
	if [ -n "${SERVERS_PID:-}" ] && kill -0 "$SERVERS_PID" 2>/dev/null; then
		step=$(servers_step)
		if [ -n "$step" ]; then
			scancel --signal=TERM "$step" 2>/dev/null || true
		fi
		for ((n = 0; n < 200; n++)); do kill -0 "$SERVERS_PID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$SERVERS_PID" 2>/dev/null && { say "servers step did not stop; killing it"; kill -KILL "$SERVERS_PID"; }
		wait "$SERVERS_PID" 2>/dev/null || true
	fi
	# A node's directory is its servers' to remove (they may still be
	# tearing down when a cancel ends srun early); this side removes its
	# own only where no servers ran: the salloc host outside the job, or
	# before the step started.
	if [ -n "${DIR:-}" ] && [ "${KEEP:-0}" != 1 ]; then
		if [ -z "${SERVERS_PID:-}" ] || ! is_job_node; then
			rm -rf "$DIR" "$DIR.conf" "$DIR.key"
		else
			rm -rf "$DIR/job"
		fi
	fi
	exit "$rc"
}

main() {
	KEEP=${TESSERA_KEEP:-0}
	local fuse=${TESSERA_FUSE:-auto} start=${TESSERA_START_TIMEOUT:-60}
	while [ $# -gt 0 ]; do
		case $1 in
		--keep) KEEP=1; shift ;;
		--fuse) fuse=yes; shift ;;
		--no-fuse) fuse=no; shift ;;
		-h|--help) usage; exit 0 ;;
		--) shift; break ;;
		-*) usage >&2; die "unknown option '$1'" ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || { usage >&2; die "no command given"; }
	case $fuse in auto|yes|no) ;; *) die "TESSERA_FUSE wants auto, yes or no, not '$fuse'" ;; esac
	[ -n "${SLURM_JOB_ID:-}" ] || die "not inside a Slurm job: run it with sbatch or salloc"
	find_install
	local base=${TESSERA_PORT_BASE:-17400} span=${TESSERA_PORT_SPAN:-7000}
	PORT=$((base + 2 * (SLURM_JOB_ID % span)))
	DIR=${TESSERA_LOCAL:-/tmp}/tessera-$SLURM_JOB_ID
	mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
	local n=${#NODES[@]}
	trap cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	trap 'exit 129' HUP
	say "job $SLURM_JOB_ID ($0): $n node(s) ${NODES[*]}, ports $PORT-$((PORT + 1)), state $DIR, programs $BIN"
	write_config
	sbcast --force --preserve "$DIR/tessera.conf" "$DIR.conf"
	sbcast --force --preserve "$DIR/tessera.key" "$DIR.key"
	srun --overlap --job-name=tessera-servers --nodes="$n" --ntasks="$n" --ntasks-per-node=1 \
		--input=none --label --kill-on-bad-exit=0 \
		bash -c "$(declare -f node_main node_stop node_unmount node_fail node_launch node_wait_pidfiles node_mount); node_main \"\$@\"" \
		tessera-node "$DIR" "$BIN" "$fuse" "$KEEP" "$start" \
		> >(tee "$DIR/job/servers.out") 2>&1 &
	SERVERS_PID=$!
	wait_ready "$n" "$((SECONDS + start + 5))"
	export TESSERA_CONFIG=$DIR/tessera.conf PATH=$BIN:$PATH
	if [ "$(grep -c 'TESSERA-READY .* mounted=yes' "$DIR/job/servers.out")" -ge "$n" ]; then
		export TESSERA_MNT=$DIR/mnt
	else
		unset TESSERA_MNT
	fi
	"$BIN/tessera" ping >&2 || true
	# Open MPI programs the command starts find the Tessera driver
	if [ -f "$MPIENV" ]; then
		set +u
		# shellcheck disable=SC1090
		# always one argument: without, it would see COMMAND's as its own
		. "$MPIENV" "$MPIENV_ARG"
		set -u
	fi
	say "running: $*"
	# In the background, so a TERM (scancel) runs the trap at once.
	"$@" &
	APP_PID=$!
	local rc=0
	wait "$APP_PID" || rc=$?
	APP_PID=""
	say "command exited with status $rc"
	exit "$rc"
}

# wait_ready NODES DEADLINE: every node reports TESSERA-READY (each has
# pinged every server and mounted), or one reports TESSERA-FAILED, or the
# step ends, or time runs out.
wait_ready() {
	local out=$DIR/job/servers.out
	while :; do
		if [ -f "$out" ] && [ "$(grep -c 'TESSERA-READY' "$out")" -ge "$1" ]; then
			return 0
		fi
		# a node that failed has stopped, and its step may have ended
		# before its TESSERA-FAILED line reached the file
		if { [ -f "$out" ] && grep -q 'TESSERA-FAILED' "$out"; } || ! kill -0 "$SERVERS_PID" 2>/dev/null; then
			die "the file system did not start (see the tessera-node lines; --keep keeps each node's logs)"
		fi
		[ "$SECONDS" -lt "$2" ] || die "the file system was not up within ${TESSERA_START_TIMEOUT:-60} s"
		sleep 0.1
	done
}

main "$@"
