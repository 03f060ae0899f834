#!/usr/bin/env bash
# fuse_small_bench.sh - small I/O and metadata through a tessera-fuse
# mount beside the same work on the local file system that holds the
# storage daemons' directories, in the same run. Figures, not a test: it
# prints a table and exits 0 unless something could not start.
#
#   TESSERA_BUILD    build directory (default: build/)
#   BENCH_SMALL_MIB  MiB per small-I/O file (default 64)
#   BENCH_FILES      files for the creates and removes (default 500)
#   BENCH_ROUNDS     rounds, mount and local alternating; the best of
#                    each is kept (default 3)
#
# Jobs (dd for the data, one process each):
#   sequential writes of 400 B and 4 KiB blocks: write then close (the
#     mount's close writes its cached pages back to the storage daemons),
#     and write with conv=fsync (both sides to their disks);
#   sequential reads of the same file, same blocks, cold on both sides:
#     the local file, and the storage daemons' object files, are dropped
#     from the page cache first (fadvise DONTNEED through dd
#     iflag=nocache), and the mount drops its own pages at each open;
#   tar xf of Tessera's own source tree (git archive HEAD), then rm -rf;
#   creates (open O_CREAT, close) then removes of BENCH_FILES empty files
#     in one directory.
# With bindfs installed the same jobs also run on a FUSE passthrough
# (bindfs over a directory of that same local file system): what any
# FUSE file system pays on this machine before its own work, with no
# network, daemons or syncs (its reads dropped from the page cache below
# it, as the local file's).
# Ratios: throughput as mount / local in percent, times as mount / local,
# and the mount against the passthrough the same ways.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin
MIB=${BENCH_SMALL_MIB:-64}
FILES=${BENCH_FILES:-500}
ROUNDS=${BENCH_ROUNDS:-3}
N_IOS=4

for p in tessera-fuse tessera-mds tessera-ios; do
	[ -x "$BIN/$p" ] || { echo "fuse_small_bench: $BIN/$p is not built" >&2; exit 1; }
done
[ -c /dev/fuse ] || { echo "fuse_small_bench: no /dev/fuse" >&2; exit 1; }
. "$top/tests/bench/fuse_cluster.sh"
fuse_cluster_up fuse-small-bench
fuse_passthrough_up fuse-small-bench

now() { date +%s.%N; }
# secs CMD...: the wall time of CMD in seconds
secs() {
	local t0
	t0=$(now)
	"$@"
	python3 -c "import sys; print('%.4f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(now)"
}
# drop FILE...: drop the files' pages from the page cache
drop() { for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done; }
drop_objects() { find "$D"/ios* -type f -print0 | xargs -0 -r -n 64 bash -c 'for f; do dd if="$f" iflag=nocache count=0 status=none 2>/dev/null; done' _; }

write_close() { dd if=/dev/zero of="$1" bs="$2" count="$3" status=none; }
write_fsync() { dd if=/dev/zero of="$1" bs="$2" count="$3" conv=fsync status=none; }
read_all() { dd if="$1" of=/dev/null bs="$2" status=none; }
untar() { mkdir "$1" && tar -C "$1" -xf "$D/src.tar"; }
# creates DIR / removes DIR: BENCH_FILES empty files made (open O_CREAT,
# close) or removed in DIR by one process, which prints the seconds its
# loop took (not its own start-up)
creates() {
	python3 - "$1" "$FILES" <<'EOF'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
for i in range(n):
    os.close(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_WRONLY, 0o644))
print("%.4f" % (time.perf_counter() - t0))
EOF
}
removes() {
	python3 - "$1" "$FILES" <<'EOF'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
for i in range(n):
    os.unlink("%s/f%d" % (d, i))
print("%.4f" % (time.perf_counter() - t0))
EOF
}

git -C "$top" archive --format=tar HEAD >"$D/src.tar"
NSRC=$(tar tf "$D/src.tar" | wc -l)

declare -A T   # where,job -> best (smallest) seconds
keep() {   # keep WHERE JOB SECONDS
	local k=$1,$2
	if [ -z "${T[$k]:-}" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$3" "${T[$k]}"; then
		T[$k]=$3
	fi
}

round() {   # round WHERE DIR
	local w=$1 dir=$2 bs n f
	for bs in 400 4096; do
		n=$(((MIB << 20) / bs))
		f=$dir/small.$bs
		keep "$w" "write$bs" "$(secs write_close "$f" "$bs" "$n")"
		rm -f "$f"
		keep "$w" "fsync$bs" "$(secs write_fsync "$f" "$bs" "$n")"
		drop "$f"
		[ "$w" = mount ] && drop_objects
		[ "$w" = passthrough ] && drop "$D/pt-lower/small.$bs"
		keep "$w" "read$bs" "$(secs read_all "$f" "$bs")"
		rm -f "$f"
	done
	keep "$w" tar "$(secs untar "$dir/tree")"
	keep "$w" rm "$(secs rm -rf "$dir/tree")"
	mkdir "$dir/many"
	keep "$w" create "$(creates "$dir/many")"
	keep "$w" remove "$(removes "$dir/many")"
	rmdir "$dir/many"
}

for ((r = 0; r < ROUNDS; r++)); do
	round mount "$M"
	round local "$D/local"
	[ -z "$PT" ] || round passthrough "$PT"
done

echo "fuse_small_bench: $N_IOS storage daemons on $(df --output=source "$D" | tail -1) ($D), best of $ROUNDS rounds"
echo "  small I/O: $MIB MiB files; tar: Tessera's tree ($NSRC entries, $(($(stat -c %s "$D/src.tar") >> 10)) KiB); $FILES creates/removes"
[ -z "$PT" ] || echo "  passthrough: bindfs over $D/pt-lower (the local column's file system)"
python3 - "$MIB" "$FILES" "$NSRC" <<EOF
import sys
mib, files, nsrc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
T = {$(for k in "${!T[@]}"; do printf '"%s": %s, ' "$k" "${T[$k]}"; done)}
pt = "passthrough,tar" in T
rows = [("write 400 B, close", "write400"), ("write 400 B, fsync", "fsync400"),
        ("read 400 B", "read400"), ("write 4 KiB, close", "write4096"),
        ("write 4 KiB, fsync", "fsync4096"), ("read 4 KiB", "read4096")]
head = "%-22s %14s %14s %10s" % ("job", "mount", "local", "ratio")
print(head + ("  %14s %10s" % ("passthrough", "ratio") if pt else ""))
for name, job in rows:
    rate = {w: mib * 1048576 / T[w + "," + job] / 1e6 for w in ("mount", "local", "passthrough")
            if w + "," + job in T}
    m, l = rate["mount"], rate["local"]
    line = "%-22s %9.1f MB/s %9.1f MB/s %9.0f %%" % (name, m, l, 100 * m / l)
    if pt:
        line += "  %9.1f MB/s %9.0f %%" % (rate["passthrough"], 100 * m / rate["passthrough"])
    print(line)
for name, job, n in (("tar xf", "tar", nsrc), ("rm -rf", "rm", nsrc),
                     ("creates", "create", files), ("removes", "remove", files)):
    m, l = T["mount," + job], T["local," + job]
    line = "%-22s %9.2f s    %9.3f s    %8.1fx" % (name, m, l, m / l)
    if pt:
        p = T["passthrough," + job]
        line += "  %9.3f s    %8.1fx" % (p, m / p)
    print(line + "   (%.0f / %.0f per s)" % (n / m, n / l))
print("(ratio: throughput mount / local (or passthrough) in percent; times mount / local"
      " (or passthrough))")
EOF
