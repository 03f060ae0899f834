#!/usr/bin/env bash
# test_slurm.sh - deploy/slurm/tessera-job.sh under a real Slurm (Debian's
# slurm-wlm): a slurmctld and a slurmd of the test's own on this host
# (non-default ports, state in a temporary directory, MUNGE through a
# private munged), and jobs that run the script from Slurm's spool:
#   - a command writes through the mount and reads back with the CLI (and
#     the other way round); the job's exit code is the command's;
#   - the install is found by TESSERA_PREFIX or on PATH;
#   - two jobs at once on the one node take different ports;
#   - a cancelled job (scancel) still tears down;
#   - the salloc recipe, and --keep;
#   - a daemon that cannot start (its port taken) fails the job, which
#     says why, runs no command and cleans up;
#   - an MPI-IO program (Open MPI's mpirun in the job) through the driver;
# and after each job: no daemon of it left, no mount, its ports free, its
# directory gone. Skipped only when slurm-wlm is not installed.
# Prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
JOB=$top/deploy/slurm/tessera-job.sh
. "$top/tests/integ/checks.sh"

for p in slurmctld slurmd slurmstepd sbatch salloc srun scancel sbcast squeue scontrol sinfo; do
	command -v "$p" >/dev/null ||
		skip_all slurm "slurm-wlm is not installed ($p missing; make deps installs it)"
done
[ "$(id -u)" -eq 0 ] || skip_all slurm "needs root (slurmd runs jobs as their user)"

tmp=$(mktemp -d /tmp/tessera-slurm.XXXXXX)
chmod 0711 "$tmp"
CHECKS_LOG=$tmp/check.log
export SLURM_CONF=$tmp/slurm.conf
CTLD_PID="" SLURMD_PID="" MUNGED_PID=""
node=$(hostname -s)

# stop PID: TERM, then KILL after 10 s.
stop_pid() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	local ids pids
	if [ -n "$CTLD_PID" ]; then   # a job a failed check left behind
		ids=$(squeue -h -o %i 2>/dev/null)
		if [ -n "$ids" ]; then
			scancel $ids 2>/dev/null
			for _ in $(seq 200); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
		fi
	fi
	stop_pid "$SLURMD_PID"
	stop_pid "$CTLD_PID"
	# anything still running from this test's directory (by PID)
	grep -o " $tmp/[^ ]*" /proc/mounts | while read -r m; do umount -l "$m"; done
	stop_pid "$MUNGED_PID"
	pids=$(pgrep -f -- "$tmp/") && kill -KILL $pids 2>/dev/null
	if [ -n "${TESSERA_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

fail_setup() {
	echo "$1" >&2
	for f in "$tmp"/log/*; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; } >&2; done
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  FAILED  ] 1 test(s), listed below:"
	echo "[  FAILED  ] slurm_setup"
	exit 1
}

for p in tessera tessera-mds tessera-ios tessera-fuse; do
	[ -x "$B/bin/$p" ] || fail_setup "$B/bin/$p is not built"
done
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/local" "$tmp/prefix/bin"
. "$top/tests/integ/munged.sh"
munged_start "$tmp/munge" || fail_setup "munged did not start"

# The Slurm of this test: this host as its one node (its real CPUs and
# memory, from slurmd -C), reached on 127.0.0.1; controller and slurmd on
# free ports; authentication by the private munged (AuthInfo names its
# socket, for credentials too).
port=$(free_ports 1)
{
	echo "ClusterName=tessera-test"
	echo "SlurmctldHost=$node(127.0.0.1)"
	echo "SlurmctldPort=$port"
	echo "SlurmdPort=$((port + 1))"
	echo "SlurmUser=root"
	echo "SlurmdUser=root"
	echo "AuthType=auth/munge"
	echo "CredType=cred/munge"
	echo "AuthInfo=socket=$MUNGE_SOCK"
	echo "StateSaveLocation=$tmp/state"
	echo "SlurmdSpoolDir=$tmp/spool"
	echo "SlurmctldPidFile=$tmp/slurmctld.pid"
	echo "SlurmdPidFile=$tmp/slurmd.pid"
	echo "SlurmctldLogFile=$tmp/log/slurmctld.log"
	echo "SlurmdLogFile=$tmp/log/slurmd.log"
	echo "ProctrackType=proctrack/linuxproc"
	echo "TaskPlugin=task/none"
	echo "SelectType=select/cons_tres"
	echo "SelectTypeParameters=CR_CPU"
	echo "MpiDefault=none"
	echo "ReturnToService=2"
	echo "KillWait=15"
	echo "AccountingStorageType=accounting_storage/none"
	echo "JobCompType=jobcomp/none"
	echo "JobAcctGatherType=jobacct_gather/none"
	echo "$(slurmd -C | head -1) NodeAddr=127.0.0.1 State=UNKNOWN"
	echo "PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP"
} >"$SLURM_CONF"
slurmctld -D -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 &
SLURMD_PID=$!
for _ in $(seq 300); do
	[ "$(sinfo -h -n "$node" -o %T 2>/dev/null)" = idle ] && break
	kill -0 "$CTLD_PID" 2>/dev/null && kill -0 "$SLURMD_PID" 2>/dev/null ||
		fail_setup "slurmctld or slurmd exited"
	sleep 0.1
done
[ "$(sinfo -h -n "$node" -o %T 2>/dev/null)" = idle ] || fail_setup "the node did not become idle"

# An install prefix as `make install` lays it out (bin/ with the programs
# and tessera-genconfig; the MPI environment script and the component).
for p in tessera tessera-mds tessera-ios tessera-fuse; do ln -s "$B/bin/$p" "$tmp/prefix/bin/$p"; done
ln -s "$top/deploy/tessera-genconfig" "$tmp/prefix/bin/tessera-genconfig"
mkdir -p "$tmp/prefix/share/tessera" "$tmp/prefix/lib/tessera/openmpi"
ln -s "$top/romio-adio/tessera-mpi-env.sh" "$tmp/prefix/share/tessera/tessera-mpi-env.sh"
[ ! -f "$B/lib/openmpi/mca_io_romio321.so" ] ||
	ln -s "$B/lib/openmpi/mca_io_romio321.so" "$tmp/prefix/lib/tessera/openmpi/mca_io_romio321.so"

# Every job: node-local state under the test's directory, MUNGE through
# the private munged; the install by TESSERA_PREFIX unless a check says.
export TESSERA_LOCAL=$tmp/local TESSERA_MUNGE_SOCKET=$MUNGE_SOCK
if [ -c /dev/fuse ] && { true <>/dev/fuse; } 2>/dev/null && command -v fusermount3 >/dev/null; then
	fuse=yes fuse_opt=--fuse
else
	fuse=no fuse_opt=--no-fuse
fi

# The ports of job $1 (the script's defaults).
job_port() { echo $((17400 + 2 * ($1 % 7000))); }

# assert_clean JOBID: the job has ended and left nothing behind.
assert_clean() {
	local id=$1 p
	[ -z "$(squeue -h -j "$id" 2>/dev/null)" ] || { echo "job $id still in squeue"; return 1; }
	[ ! -e "$tmp/local/tessera-$id" ] || { echo "tessera-$id left behind"; ls -R "$tmp/local"; return 1; }
	[ ! -e "$tmp/local/tessera-$id.conf" ] && [ ! -e "$tmp/local/tessera-$id.key" ]
	if pgrep -af -- "$tmp/local/tessera-$id/"; then echo "processes of job $id left"; return 1; fi
	if grep " $tmp/local/tessera-$id/" /proc/mounts; then echo "a mount of job $id left"; return 1; fi
	for p in $(job_port "$id") $(($(job_port "$id") + 1)); do
		[ -z "$(ss -Hltn "sport = :$p")" ] || { echo "port $p still listened on"; ss -ltnp "sport = :$p"; return 1; }
	done
	echo "job $id: no process, mount, listener or directory left"
}

# submit OUT ARGS...: sbatch --wait on one node; prints the job id, the
# job's exit code is sbatch's.
submit() {
	local out=$1
	shift
	sbatch --parsable --wait -N1 -n1 -o "$out" "$JOB" "$@"
}

test_mount_and_cli() {
	local id rc=0 out=$tmp/out.mount
	# written through the mount and read with the CLI, and the other way
	# (with a genconfig option passed through, in the form it takes)
	id=$(TESSERA_PREFIX=$tmp/prefix TESSERA_GENCONFIG_ARGS="--strip-size 64K" \
		submit "$out" --fuse -- bash -c '
		set -e
		grep -x "strip_size = 64K" "$TESSERA_CONFIG"
		echo "through the mount $SLURM_JOB_ID" >"$TESSERA_MNT/a"
		tessera cp tessera:/a "$TESSERA_LOCAL/a.$SLURM_JOB_ID"
		cat "$TESSERA_LOCAL/a.$SLURM_JOB_ID"
		rm "$TESSERA_LOCAL/a.$SLURM_JOB_ID"
		printf "through the CLI %s\n" "$SLURM_JOB_ID" >"$TESSERA_LOCAL/b.$SLURM_JOB_ID"
		tessera cp "$TESSERA_LOCAL/b.$SLURM_JOB_ID" tessera:/b
		cat "$TESSERA_MNT/b"
		rm "$TESSERA_LOCAL/b.$SLURM_JOB_ID"') || rc=$?
	cat "$out"
	[ "$rc" -eq 0 ]
	grep -qx "strip_size = 64K" "$out"
	grep -qx "through the mount $id" "$out"
	grep -qx "through the CLI $id" "$out"
	grep -q "TESSERA-READY $node mounted=yes" "$out"
	# it ran from the spool, not from deploy/slurm/
	grep -q "^tessera-job: job $id ($tmp/spool/job0*$id/slurm_script)" "$out"
	grep -q "ports $(job_port "$id")-" "$out"
	assert_clean "$id"
}

test_exit_code_path_no_fuse() {
	local id rc=0 out=$tmp/out.exit
	# found on PATH (programs in the build, genconfig in deploy/); the
	# command fails after a CLI round trip: its status is the job's
	id=$(PATH=$B/bin:$top/deploy:$PATH submit "$out" --no-fuse -- bash -c '
		[ -z "${TESSERA_MNT:-}" ] || exit 99
		head -c 3000000 /dev/urandom >"$TESSERA_LOCAL/r.$SLURM_JOB_ID"
		tessera cp "$TESSERA_LOCAL/r.$SLURM_JOB_ID" tessera:/r
		tessera cp tessera:/r "$TESSERA_LOCAL/r.$SLURM_JOB_ID.back"
		cmp "$TESSERA_LOCAL/r.$SLURM_JOB_ID" "$TESSERA_LOCAL/r.$SLURM_JOB_ID.back" && echo "round trip identical"
		rm -f "$TESSERA_LOCAL/r.$SLURM_JOB_ID"*
		exit 7') || rc=$?
	cat "$out"
	[ "$rc" -eq 7 ]
	grep -qx "round trip identical" "$out"
	grep -q "TESSERA-READY $node mounted=no" "$out"
	grep -q "command exited with status 7" "$out"
	assert_clean "$id"
}

test_two_jobs_at_once() {
	local a b rca=0 rcb=0 pa pb
	# each command waits until both jobs run, then uses its file system
	local cmd='
		touch "$TESSERA_LOCAL/running.$SLURM_JOB_ID"
		for i in $(seq 300); do
			[ "$(ls "$TESSERA_LOCAL"/running.* | wc -l)" -ge 2 ] && break
			sleep 0.1
		done
		[ "$(ls "$TESSERA_LOCAL"/running.* | wc -l)" -ge 2 ] || { echo "not concurrent"; exit 1; }
		tessera mkdir "/job$SLURM_JOB_ID"
		sleep 1
		tessera ls /
		[ -z "${TESSERA_MNT:-}" ] || ls "$TESSERA_MNT"'
	submit "$tmp/out.a" "$fuse_opt" -- bash -c "$cmd" >"$tmp/id.a" &
	pa=$!
	submit "$tmp/out.b" "$fuse_opt" -- bash -c "$cmd" >"$tmp/id.b" &
	pb=$!
	wait "$pa" || rca=$?
	wait "$pb" || rcb=$?
	rm -f "$tmp/local"/running.*
	a=$(cat "$tmp/id.a") b=$(cat "$tmp/id.b")
	cat "$tmp/out.a" "$tmp/out.b"
	[ "$rca" -eq 0 ] && [ "$rcb" -eq 0 ]
	# each job sees its own file system: its directory and not the other's
	grep -qx "job$a" "$tmp/out.a" && ! grep -qx "job$b" "$tmp/out.a"
	grep -qx "job$b" "$tmp/out.b" && ! grep -qx "job$a" "$tmp/out.b"
	[ "$(job_port "$a")" != "$(job_port "$b")" ]
	assert_clean "$a"
	assert_clean "$b"
}

test_cancel_cleans_up() {
	local id out=$tmp/out.cancel
	id=$(TESSERA_PREFIX=$tmp/prefix sbatch --parsable -N1 -n1 -o "$out" "$JOB" "$fuse_opt" -- \
		bash -c '[ -z "${TESSERA_MNT:-}" ] || echo x >"$TESSERA_MNT/x"; touch "$TESSERA_LOCAL/started.$SLURM_JOB_ID"; sleep 300')
	for _ in $(seq 600); do [ -e "$tmp/local/started.$id" ] && break; sleep 0.1; done
	[ -e "$tmp/local/started.$id" ] || { cat "$out"; echo "job $id did not start its command"; return 1; }
	rm -f "$tmp/local/started.$id"
	scancel "$id"
	for _ in $(seq 400); do [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break; sleep 0.1; done
	cat "$out"
	assert_clean "$id"
}

test_salloc_keep() {
	local rc=0 out=$tmp/out.salloc id
	# the recipe: salloc runs the script (and so COMMAND) where it is typed
	TESSERA_PREFIX=$tmp/prefix salloc -N1 -n1 "$JOB" --keep "$fuse_opt" -- bash -c '
		echo "job $SLURM_JOB_ID"
		tessera mkdir /d && tessera ls /
		[ -z "${TESSERA_MNT:-}" ] || ls -d "$TESSERA_MNT/d"' >"$out" 2>&1 || rc=$?
	cat "$out"
	[ "$rc" -eq 0 ]
	id=$(sed -n 's/^job \([0-9]*\)$/\1/p' "$out")
	grep -qx "d" "$out"
	[ "$fuse" = no ] || grep -qx "$tmp/local/tessera-$id/mnt/d" "$out"
	grep -q "stopped; kept $tmp/local/tessera-$id" "$out"
	[ -s "$tmp/local/tessera-$id/log/mds.log" ]
	[ -d "$tmp/local/tessera-$id/ios" ]
	rm -rf "$tmp/local/tessera-$id"   # kept, as asked; nothing else left
	assert_clean "$id"
}

# An MPI-IO program: every rank writes its line with a collective write,
# rank 0 reads them all back (sync, barrier, sync between) and prints them.
mpi_program() {
	cat >"$tmp/mpi_job.c" <<'EOF2'
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	MPI_File fh;
	char line[16], all[72] = "";
	int rank, size, rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	snprintf(line, sizeof(line), "rank %-2d\n", rank);
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_write_at_all(fh, rank * 8, line, 8, MPI_CHAR, MPI_STATUS_IGNORE);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_sync(fh);
	if (rc == MPI_SUCCESS && rank == 0 && size <= 8)
		rc = MPI_File_read_at(fh, 0, all, 8 * size, MPI_CHAR, MPI_STATUS_IGNORE);
	if (rc == MPI_SUCCESS)
		rc = MPI_File_close(&fh);
	if (rank == 0)
		printf("%s", rc == MPI_SUCCESS ? all : "MPI-IO failed\n");
	MPI_Finalize();
	return rc != MPI_SUCCESS;
}
EOF2
	mpicc -o "$tmp/mpi_job" "$tmp/mpi_job.c"
}

test_mpi_driver() {
	local id rc=0 out=$tmp/out.mpi
	mpi_program
	# the application step through the ROMIO driver: Open MPI's mpirun in
	# the allocation, the component found through the prefix's
	# share/tessera/tessera-mpi-env.sh, which the job sources
	id=$(TESSERA_PREFIX=$tmp/prefix MPI_JOB=$tmp/mpi_job \
		sbatch --parsable --wait -N1 --ntasks-per-node=2 -o "$out" "$JOB" "$fuse_opt" -- bash -c '
		set -e
		mpirun --allow-run-as-root -np 2 "$MPI_JOB" tessera:/mpi.out
		tessera ls -l /mpi.out
		if [ -n "${TESSERA_MNT:-}" ]; then mpirun --allow-run-as-root -np 2 "$MPI_JOB" "$TESSERA_MNT/m2"; fi') || rc=$?
	cat "$out"
	[ "$rc" -eq 0 ]
	[ "$(grep -cx 'rank 0 ' "$out")" -ge 1 ] && [ "$(grep -cx 'rank 1 ' "$out")" -ge 1 ]
	grep -q ' 16 .*mpi.out$' "$out"
	[ "$fuse" = no ] || [ "$(grep -cx 'rank 1 ' "$out")" -eq 2 ]
	assert_clean "$id"
}

test_port_busy_fails_cleanly() {
	local id rc=0 out=$tmp/out.busy busy lpid
	# the job's metadata port held by another listener (SPAN 1: the
	# port is BASE whatever the job id): the job fails, saying why,
	# before running the command, and still cleans up
	busy=$(free_ports 1)
	python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$busy" &
	lpid=$!
	for _ in $(seq 50); do [ -n "$(ss -Hltn "sport = :$busy")" ] && break; sleep 0.1; done
	id=$(TESSERA_PREFIX=$tmp/prefix TESSERA_PORT_BASE=$busy TESSERA_PORT_SPAN=1 \
		submit "$out" "$fuse_opt" -- touch "$tmp/ran.busy") || rc=$?
	kill "$lpid"
	wait "$lpid" 2>/dev/null || true
	cat "$out"
	[ "$rc" -eq 1 ]
	[ ! -e "$tmp/ran.busy" ]
	grep -q "TESSERA-FAILED $node: mds exited" "$out"
	grep -q "tessera-job: the file system did not start" "$out"
	[ -z "$(ss -Hltn "sport = :$((busy + 1))")" ] # the storage daemon's
	assert_clean "$id"
}

test_refuses() {
	local rc=0
	"$JOB" --help | grep -q '^usage: sbatch'
	env -u SLURM_JOB_ID "$JOB" true 2>"$tmp/err" || rc=$?
	cat "$tmp/err"
	[ "$rc" -eq 1 ] && grep -q "not inside a Slurm job" "$tmp/err"
	rc=0
	SLURM_JOB_ID=1 "$JOB" 2>"$tmp/err" || rc=$?
	cat "$tmp/err"
	[ "$rc" -eq 1 ] && grep -q "no command given" "$tmp/err"
}

check slurm_job_refuses_misuse test_refuses
if [ "$fuse" = yes ]; then
	check slurm_job_mount_and_cli test_mount_and_cli
else
	skip_check slurm_job_mount_and_cli "/dev/fuse or fusermount3 is not usable here"
fi
check slurm_job_exit_code_path_no_fuse test_exit_code_path_no_fuse
check slurm_two_jobs_at_once test_two_jobs_at_once
check slurm_cancel_cleans_up test_cancel_cleans_up
check slurm_salloc_keep test_salloc_keep
check slurm_port_busy_fails_cleanly test_port_busy_fails_cleanly
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	skip_check slurm_mpi_driver "Open MPI is not installed (make deps)"
elif [ ! -f "$B/lib/openmpi/mca_io_romio321.so" ]; then
	skip_check slurm_mpi_driver "the ROMIO component is not built"
else
	check slurm_mpi_driver test_mpi_driver
fi
checks_done
