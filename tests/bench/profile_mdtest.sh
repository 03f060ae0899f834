#!/usr/bin/env bash
# profile_mdtest.sh [PHASE] - where one mdtest-easy phase on the mount
# spends its time (docs/benchmarks.md, "mdtest and IOR (issue 28)"). Not
# part of make bench: run it by hand, as root, on an otherwise quiet
# machine.
#
# Starts a cluster and mount of its own (tests/bench/fuse_cluster.sh,
# local reads off), creates mdtest-easy's files (4 ranks, -C), then runs
# the one PHASE under
#   - perf stat of the system calls that carry requests: per file, the
#     FUSE requests the mount answered (its writev()s to /dev/fuse), the
#     messages the mount sent to the daemons (sendmsg) and the replies
#     the metadata and storage daemons sent back;
#   - uprobes on the mount's FUSE handlers and the library calls that
#     make round trips (perf probe: a group of this run's own, removed at
#     the end), counted per file;
#   - perf record (DWARF call graphs) of tessera-fuse, tessera-mds and
#     the first storage daemon;
# and prints the counts per file and each process's top functions (self
# time, and with callees). PHASE is mdtest's flag: E (read: open and close; the default),
# T (stat), r (remove). MDTEST_EASY_FILES (default 1000) files per rank.
# With TESSERA_KEEP=1 the perf data and counts are copied to a directory
# it prints.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin
N_IOS=4
NP=4
N=${MDTEST_EASY_FILES:-1000}
PHASE=${1:-E}
case $PHASE in E | T | r) ;; *) echo "usage: profile_mdtest.sh [E|T|r]" >&2; exit 2 ;; esac
command -v perf >/dev/null || { echo "profile_mdtest: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
IOR_DIR=$(bash "$top/tests/integ/build-ior.sh")

export TESSERA_LOCAL_READS=0
. "$top/tests/bench/fuse_cluster.sh"
fuse_cluster_up mdtest-prof
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
run=(mpirun --oversubscribe -np "$NP")
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
md=("$IOR_DIR/mdtest" -F -u -N 1 -n "$N" -d "$M/md")

"${run[@]}" "${md[@]}" -C >"$D/create.out" 2>&1 || { cat "$D/create.out"; exit 1; }
[ "$PHASE" != r ] || [ -z "$(find "$M/md" -maxdepth 0 -empty)" ]   # (files there)

# Probes on the mount's handlers and round trips: op_* are FUSE requests;
# (the kernel's LOOKUP and GETATTR both come to op_getattr: libfuse's
# high-level API); lookup_attr is a LOOKUP to the metadata daemon (an open's, a stat's);
# tc_file_size asks every storage daemon the size (one GETSIZE each, in
# parallel); close_writer a CLOSE_WRITE when the open counted a writer;
# size_report a SIZE_REPORT; tc_call is any one request and reply.
grp=tprof$$
probes=(op_getattr op_open op_flush op_release lookup_attr tc_file_size close_writer size_report tc_call)
probe_ev=
for f in "${probes[@]}"; do
	perf probe -q -x "$BIN/tessera-fuse" -a "$grp:$f=$f" 2>/dev/null && probe_ev+=${probe_ev:+,}$grp:$f
done
trap 'perf probe -q -d "$grp:*" 2>/dev/null; fuse_cluster_down' EXIT

fuse=$FUSE_PID mds=$(cat "$D/mds.pid")
ios=$(for ((i = 0; i < N_IOS; i++)); do cat "$D/ios$i.pid"; done | paste -sd,)
ev=task-clock,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_writev
perf stat -x, -e "$ev${probe_ev:+,$probe_ev}" -p "$fuse" -o "$D/stat.fuse" &
s1=$!
perf stat -x, -e "$ev" -p "$mds" -o "$D/stat.mds" &
s2=$!
perf stat -x, -e "$ev" -p "$ios" -o "$D/stat.ios" &
s3=$!
perf record -q -F 499 --call-graph dwarf,16384 -p "$fuse" -o "$D/perf.fuse" 2>/dev/null &
r1=$!
perf record -q -F 499 --call-graph dwarf,16384 -p "$mds" -o "$D/perf.mds" 2>/dev/null &
r2=$!
perf record -q -F 499 --call-graph dwarf,16384 -p "$(cat "$D/ios0.pid")" -o "$D/perf.ios0" 2>/dev/null &
r3=$!
sleep 1   # (perf attached)
"${run[@]}" "${md[@]}" "-$PHASE" >"$D/phase.out" 2>&1 || { cat "$D/phase.out"; exit 1; }
kill -INT $s1 $s2 $s3 $r1 $r2 $r3
wait $s1 $s2 $s3 $r1 $r2 $r3 2>/dev/null || true

files=$((NP * N))
calc() { awk "BEGIN { print $1 }"; }   # an arithmetic expression
echo "== mdtest-easy -$PHASE on the mount, $NP ranks x $N files, local reads off"
case $PHASE in E) what="read" ;; T) what="stat" ;; r) what="removal" ;; esac
rate=$(awk -v w="$what" '$1 == "File" && $2 == w { print $5; exit }' "$D/phase.out")
echo "$rate files/s"
count() { awk -F, -v e="$2" '$3 == "syscalls:sys_enter_" e { print $1 }' "$D/stat.$1"; }
printf 'per file: %.1f FUSE replies from the mount (writev), %.1f messages from the mount (sendmsg+sendto),\n' \
	"$(calc "$(count fuse writev) / $files")" \
	"$(calc "($(count fuse sendmsg) + $(count fuse sendto)) / $files")"
printf '          %.1f from the metadata daemon, %.1f from the storage daemons (their replies)\n' \
	"$(calc "($(count mds sendmsg) + $(count mds sendto) + $(count mds writev)) / $files")" \
	"$(calc "($(count ios sendmsg) + $(count ios sendto) + $(count ios writev)) / $files")"
# CPU per file (task-clock, ms): the mount, the metadata daemon, the 4
# storage daemons; beside the wall time per file of the whole phase
# (2 cores: up to twice the wall time is available; the ranks and the
# kernel's side of FUSE, not counted here, take their share too).
cpu() { awk -F, '$3 ~ /^task-clock/ { print $1 }' "$D/stat.$1"; }
printf 'CPU per file: mount %.0f us, metadata daemon %.0f us, storage daemons %.0f us; wall per file %.0f us\n' \
	"$(calc "$(cpu fuse) * 1000 / $files")" "$(calc "$(cpu mds) * 1000 / $files")" \
	"$(calc "$(cpu ios) * 1000 / $files")" "$(calc "1000000 / $rate")"
echo "per file, mount calls (uprobes):"
awk -F, -v g="$grp:" -v n="$files" 'index($3, g) == 1 { sub(g, "", $3); printf "  %-14s %6.2f\n", $3, $1 / n }' "$D/stat.fuse"
for p in fuse mds ios0; do
	echo "-- tessera-$p, self time, top 25"
	perf report -i "$D/perf.$p" --no-children --sort dso,symbol --stdio -q -g none 2>/dev/null |
		grep -v '^$' | grep '%' | head -25
	echo "-- tessera-$p, with callees (children), top 25"
	perf report -i "$D/perf.$p" --children --sort symbol --stdio -q -g none 2>/dev/null |
		grep -v '^$' | grep '%' | head -25
done
if [ -n "${TESSERA_KEEP:-}" ]; then
	keep=$(mktemp -d /tmp/tessera-mdtest-prof-kept.XXXXXX)
	cp "$D"/perf.* "$D"/stat.* "$D"/*.out "$keep"/
	echo "kept in $keep"
fi
