#!/usr/bin/env bash
# ab_mount_ops.sh BUILD_A BUILD_B [ROUNDS] - metadata operations per
# second through the FUSE mount, and the requests each costs, from two
# builds alternated A B A B... in one run (docs/benchmarks.md, "Metadata
# round trips on the mount"). Each round gets a fresh cluster and mount,
# writes $FILES small files through it, waits out the kernel's attribute
# and name caches (1 s) before each phase, then runs, one file at a time:
#
#   stat      os.stat (mdtest's stat phase)
#   open-r    open O_RDONLY, close
#   open-rw   open O_RDWR, close (mdtest's "read" phase opens so)
#   create    open O_CREAT|O_EXCL, close (mdtest's create phase)
#   tarfile   what tar does per file: create mode 0600, write 6,000
#             bytes, fchown, fchmod, close, utime
#   unlink    of the created files
#
# The mount runs with TESSERA_TRACE_REQUESTS, so each phase's requests per
# operation are counted by opcode and server (metadata daemon, storage
# daemons). Needs root and /dev/fuse. Figures, not a test: the last lines
# give each phase's medians for A and B and B/A.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
a=$(realpath "$1") b=$(realpath "$2") rounds=${3:-3}
FILES=${FILES:-1000}
N_IOS=4
if [ ! -c /dev/fuse ] || [ "$(id -u)" -ne 0 ]; then
	echo "ab_mount_ops: needs root and /dev/fuse; skipped"
	exit 0
fi
. "$top/tests/bench/fuse_cluster.sh"
results=$(mktemp)
for r in $(seq "$rounds"); do
	for which in A B; do
		BIN=$a/bin
		[ "$which" = B ] && BIN=$b/bin
		(
			trace=$(mktemp -d)
			export TESSERA_TRACE_REQUESTS=$trace/req
			fuse_cluster_up ab_mount_ops
			unset TESSERA_TRACE_REQUESTS
			mkdir "$M/d"
			for ((i = 0; i < FILES; i++)); do echo "file $i" >"$M/d/f$i"; done
			python3 - "$M/d" "$FILES" "$which" "$trace" <<'PY' >>"$results"
import collections, glob, os, sys, time
d, n, which, trace = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def requests():
    c = collections.Counter()
    for f in glob.glob(trace + "/req.*"):
        for line in open(f):
            p = line.split("\t")
            if line.startswith("#") or len(p) < 10:
                continue
            c["%s:%s" % (p[1], "mds" if p[2] == "mds" else "ios")] += 1
    return c

def tarfile(p):
    fd = os.open(p + "t", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, b"x" * 6000)
    os.fchown(fd, 0, 0)
    os.fchmod(fd, 0o644)
    os.close(fd)
    os.utime(p + "t", (1000000, 1000000))

def unlink(p):
    os.unlink(p + "c")
    os.unlink(p + "t")

phases = [
    ("stat", os.stat),
    ("open-r", lambda p: os.close(os.open(p, os.O_RDONLY))),
    ("open-rw", lambda p: os.close(os.open(p, os.O_RDWR))),
    ("create", lambda p: os.close(os.open(p + "c", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))),
    ("tarfile", tarfile),
    ("unlink", unlink),
]
for name, fn in phases:
    time.sleep(1.2)           # the kernel's caches (1 s) run out
    c0 = requests()
    t0 = time.perf_counter()
    for i in range(n):
        fn("%s/f%d" % (d, i))
    rate = n / (time.perf_counter() - t0)
    time.sleep(0.5)           # the trace lines of the last calls
    c1 = requests()
    per = " ".join("%s=%.1f" % (k, (c1[k] - c0[k]) / n) for k in sorted(c1)
                   if (c1[k] - c0[k]) / n >= 0.05)
    print(which, name, "%.0f" % rate, per or "-")
    sys.stdout.flush()
PY
			rm -rf "$trace"
		)
		echo "round $r $which:"
		grep "^$which " "$results" | tail -6 | sed 's/^/  /'
	done
done
python3 - "$results" <<'PY'
import statistics, sys
rate, per = {}, {}
for line in open(sys.argv[1]):
    w, phase, r, p = line.rstrip("\n").split(" ", 3)
    rate.setdefault((phase, w), []).append(float(r))
    per[(phase, w)] = p
print("%-8s %10s %10s %6s   requests per operation (A | B)" % ("phase", "A op/s", "B op/s", "B/A"))
for phase in dict.fromkeys(k[0] for k in rate):
    ma = statistics.median(rate[(phase, "A")])
    mb = statistics.median(rate[(phase, "B")])
    print("%-8s %10.0f %10.0f %6.2f   %s | %s" % (phase, ma, mb, mb / ma, per[(phase, "A")],
                                                per[(phase, "B")]))
PY
rm -f "$results"
