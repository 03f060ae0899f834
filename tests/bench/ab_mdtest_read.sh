#!/usr/bin/env bash
# ab_mdtest_read.sh BUILD_A BUILD_B [ROUNDS] - mdtest-easy's stat and read
# (open, close) phases on the mount from two builds, alternated A B A B...
# in one run so both see the same machine. Each round of each build gets
# a fresh cluster and mount (tests/bench/fuse_cluster.sh: 1 metadata and
# 4 storage daemons, local reads off), where 4 ranks make 1,000 files
# each (mdtest -C), and after a pause longer than the kernel's attribute
# cache (1 s), stat and open-close them (-T -E, one mdtest run). Figures,
# not a test: one line per round and build, op/s.
#
#   tests/bench/ab_mdtest_read.sh /work/wt/base/build build 3
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: ab_mdtest_read.sh BUILD_A BUILD_B [ROUNDS]" >&2; exit 2; }
a=$(realpath "$1") b=$(realpath "$2") rounds=${3:-3}
IOR_DIR=$(bash "$top/tests/integ/build-ior.sh")
export TESSERA_LOCAL_READS=0 OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
N_IOS=4
. "$top/tests/bench/fuse_cluster.sh"
run=(mpirun --oversubscribe -np 4)
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)

# one BUILD: "stat R read R" of one fresh cluster (a subshell: its own trap)
one() (
	BIN=$1/bin
	fuse_cluster_up ab-mdtest
	md=("$IOR_DIR/mdtest" -F -u -N 1 -n 1000 -d "$M/md")
	"${run[@]}" "${md[@]}" -C >"$D/create.out" 2>&1 || { cat "$D/create.out" >&2; exit 1; }
	sleep 1.5
	"${run[@]}" "${md[@]}" -T -E >"$D/out" 2>&1 || { cat "$D/out" >&2; exit 1; }
	awk '$1 == "File" && ($2 == "stat" || $2 == "read") { printf "%s %s ", $2, $5 }' "$D/out"
	echo
)

for ((r = 1; r <= rounds; r++)); do
	echo "round $r A: $(one "$a")"
	echo "round $r B: $(one "$b")"
done
