#!/usr/bin/env bash
# fuse_bench.sh - fio through a tessera-fuse mount beside the same jobs on
# the local file system that holds the storage daemons' directories.
# Figures, not a test: it prints a table and exits 0 unless something
# could not start.
#
#   TESSERA_BUILD   build directory (default: build/)
#   BENCH_SEQ_SIZE  bytes for the sequential jobs (default 1G)
#   BENCH_RAND_SIZE file size for the random jobs (default 256M)
#   BENCH_RUNTIME   seconds per random job (default 15)
#   BENCH_JOBS      fio jobs for the random jobs (default 4)
#   BENCH_DD_MIB    MiB for the dd comparison (default 1024)
#
# First, dd with 1 MiB blocks through the mount (a write with conv=fsync,
# then a read of it: each open drops the file's cached pages, so the read
# crosses FUSE) beside the library's own figure in the same run (`tessera
# cp` of a local file of the same size in, then out to /dev/null), each
# twice, alternating, the better of each kept; the ratio is mount over
# library.
# Jobs (psync, buffered, fio's default cache invalidation before each
# job): sequential 1 MiB write then read, one job; random 4 KiB write then
# read, BENCH_JOBS jobs. The local run reads the local page cache after
# fio's invalidation only where the kernel kept nothing; the mount's reads
# always cross FUSE and the transport to the storage daemons (whose own
# page cache may hold the data): the ratio is the cost of the whole path.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin
SEQ=${BENCH_SEQ_SIZE:-1G}
RAND=${BENCH_RAND_SIZE:-256M}
RUNTIME=${BENCH_RUNTIME:-15}
JOBS=${BENCH_JOBS:-4}
N_IOS=4

for p in tessera tessera-fuse tessera-mds tessera-ios; do
	[ -x "$BIN/$p" ] || { echo "fuse_bench: $BIN/$p is not built" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "fuse_bench: fio is not installed" >&2; exit 1; }
[ -c /dev/fuse ] || { echo "fuse_bench: no /dev/fuse" >&2; exit 1; }

. "$top/tests/bench/fuse_cluster.sh"
fuse_cluster_up fuse-bench

# run_fio DIR NAME ARGS...: print "MB/s IOPS" of the job's one direction.
run_fio() {
	local dir=$1 name=$2
	shift 2
	fio --name="$name" --directory="$dir" --ioengine=psync --group_reporting \
		--output-format=json "$@" >"$D/fio.json"
	python3 - "$D/fio.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
print("%.1f %.0f" % (d["bw_bytes"] / 1e6, d["iops"]))
EOF
}

declare -A R
jobs_for() {
	local where=$1 dir=$2
	R[$where,seqwrite]=$(run_fio "$dir" seq --rw=write --bs=1M --size="$SEQ" --end_fsync=1)
	R[$where,seqread]=$(run_fio "$dir" seq --rw=read --bs=1M --size="$SEQ")
	R[$where,randwrite]=$(run_fio "$dir" rnd --rw=randwrite --bs=4k --size="$RAND" \
		--numjobs="$JOBS" --time_based --runtime="$RUNTIME")
	R[$where,randread]=$(run_fio "$dir" rnd --rw=randread --bs=4k --size="$RAND" \
		--numjobs="$JOBS" --time_based --runtime="$RUNTIME")
	rm -rf "${dir:?}"/*
}

# dd_mbps ARGS...: dd's own figure in MB/s (dd picks its unit: kB/s to
# TB/s, or bytes/s)
dd_mbps() {
	dd "$@" 2>&1 | awk '/copied/ {
		v = $(NF - 1); u = $NF
		f = u == "TB/s" ? 1e6 : u == "GB/s" ? 1e3 : u == "kB/s" ? 1e-3 : u == "bytes/s" ? 1e-6 : 1
		print v * f }'
}
# cp_mbps ARGS...: tessera cp's MB/s figure
cp_mbps() { "$BIN/tessera" -c "$CONF" cp "$@" | sed -n 's/.*(\([0-9.]*\) MB\/s).*/\1/p'; }
best() { python3 -c 'import sys; print(max(float(x) for x in sys.argv[1:]))' "$@"; }
DD_MIB=${BENCH_DD_MIB:-1024}
head -c "$((DD_MIB << 20))" /dev/zero >"$D/local/dd.src"
fw=() fr=() lw=() lr=()
for _ in 1 2; do
	rm -f "$M/dd"
	fw+=("$(dd_mbps if=/dev/zero of="$M/dd" bs=1M count="$DD_MIB" conv=fsync)")
	fr+=("$(dd_mbps if="$M/dd" of=/dev/null bs=1M)")
	"$BIN/tessera" -c "$CONF" rm /dd.lib >/dev/null 2>&1 || true
	lw+=("$(cp_mbps "$D/local/dd.src" tessera:/dd.lib)")
	lr+=("$(cp_mbps tessera:/dd.lib /dev/null)")
done
rm -f "$M/dd" "$M/dd.lib" "$D/local/dd.src"
echo "fuse_bench: dd, 1 MiB blocks, $DD_MIB MiB, best of 2, beside the library (tessera cp) in this run"
printf '%-8s %12s %12s %8s\n' "" "mount MB/s" "library MB/s" "ratio"
for dir in write read; do
	if [ $dir = write ]; then m=$(best "${fw[@]}") l=$(best "${lw[@]}"); else m=$(best "${fr[@]}") l=$(best "${lr[@]}"); fi
	printf '%-8s %12s %12s %8s\n' "$dir" "$m" "$l" "$(python3 -c "print('%.2f' % ($m / $l if $l else 0))")"
done
echo

echo "fuse_bench: $N_IOS storage daemons on $(df --output=source "$D" | tail -1) ($D)"
echo "  sequential: 1 MiB blocks, $SEQ, 1 job; random: 4 KiB blocks, $RAND file, $JOBS jobs, ${RUNTIME} s"
jobs_for mount "$M"
jobs_for local "$D/local"

printf '\n%-12s %12s %10s   %12s %10s   %8s %8s\n' job "mount MB/s" "IOPS" "local MB/s" "IOPS" "MB/s %" "IOPS %"
for job in seqwrite seqread randwrite randread; do
	read -r mbw mio <<<"${R[mount,$job]}"
	read -r lbw lio <<<"${R[local,$job]}"
	printf '%-12s %12s %10s   %12s %10s   %8s %8s\n' "$job" "$mbw" "$mio" "$lbw" "$lio" \
		"$(python3 -c "print('%.1f' % (100 * $mbw / $lbw if $lbw else 0))")" \
		"$(python3 -c "print('%.1f' % (100 * $mio / $lio if $lio else 0))")"
done
echo "(ratio = mount / local, in percent)"
