#!/usr/bin/env bash
# ab_stat_mount.sh BUILD_A BUILD_B [ROUNDS] - stats per second of closed
# files through the FUSE mount, from two builds alternated A B A B... in
# one run (docs/performance.md, "Stat of a closed file"): each round gets
# a fresh cluster and mount, writes $FILES small files through it, waits
# out the kernel's attribute and name caches (1 s), then stats every
# file once (the mdtest stat phase's pattern). Needs root and /dev/fuse.
# Figures, not a test: the last line gives each build's median and B/A.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
a=$(realpath "$1") b=$(realpath "$2") rounds=${3:-3}
FILES=${FILES:-2000}
N_IOS=4
if [ ! -c /dev/fuse ] || [ "$(id -u)" -ne 0 ]; then
	echo "ab_stat_mount: needs root and /dev/fuse; skipped"
	exit 0
fi
. "$top/tests/bench/fuse_cluster.sh"
results=$(mktemp)
for r in $(seq "$rounds"); do
	for which in A B; do
		BIN=$a/bin
		[ "$which" = B ] && BIN=$b/bin
		(
			fuse_cluster_up ab_stat_mount
			mkdir "$M/d"
			for ((i = 0; i < FILES; i++)); do echo "file $i" >"$M/d/f$i"; done
			sleep 1.2
			python3 - "$M/d" "$FILES" "$which" <<'EOF' >>"$results"
import os, sys, time
d, n, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
for i in range(n):
    st = os.stat("%s/f%d" % (d, i))
    assert st.st_size == len("file %d\n" % i)
print(which, n / (time.perf_counter() - t0))
EOF
		)
		echo "round $r $which: $(tail -1 "$results")"
	done
done
python3 - "$results" <<'EOF'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    w, x = line.split()
    v.setdefault(w, []).append(float(x))
ma, mb = statistics.median(v["A"]), statistics.median(v["B"])
print("mount stat/s median A %.0f B %.0f B/A %.2f" % (ma, mb, mb / ma))
EOF
rm -f "$results"
