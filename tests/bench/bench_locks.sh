#!/usr/bin/env bash
# bench_locks.sh [CONF BASELINE_DIR] - the dissertation's lock figures
# (seed 001, §7.5.1, Figs. 7.3-7.6) with tessera-bench-locks: for N = 1..4
# a private cluster of N storage daemons (the run-bench.sh cluster named by
# CONF has 4, so it is not used), N clients, no contention; then 4 x 4 with
# overlapping sets. Then the table beside the dissertation's figures, and
# PNGs laid out like its figures (python3-matplotlib). Figures, not a test.
#
# Environment: LOCK_BENCH_OUT (build/bench-locks), LOCK_BENCH_SERVERS (4),
# LOCK_BENCH_REPS (1; the dissertation averaged 3), LOCK_BENCH_ARGS (more
# arguments for tessera-bench-locks, e.g. --full or --posix-locks 16384).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
out=${LOCK_BENCH_OUT:-$B/bench-locks}
max=${LOCK_BENCH_SERVERS:-4}
reps=${LOCK_BENCH_REPS:-1}
read -r -a extra <<<"${LOCK_BENCH_ARGS:-}"
bench=$B/bin/tessera-bench-locks
mkdir -p "$out"
CHECKS_LOG=$out/checks.log
. "$top/tests/integ/checks.sh" # for free_ports
csv=$out/locks.csv
rm -f "$csv"
var=""
trap '[ -z "$var" ] || "$top/deploy/tessera-local" --dir "$var" down >/dev/null 2>&1 || true' EXIT
echo "== Locks (seed 001 Figs. 7.3-7.6): tessera-bench-locks, 1..$max storage daemons, $reps rep(s)"
for n in $(seq 1 "$max"); do
	var=$out/var$n
	rm -rf "$var"
	"$top/deploy/tessera-local" --dir "$var" --ios "$n" --port "$(free_ports $((n + 1)))" \
		--no-mount up >/dev/null
	runs=(--uncontended)
	[ "$n" -ne "$max" ] || runs+=(--contention --false-sharing)
	"$bench" -c "$var/tessera.conf" --pid-dir "$var/run" --reps "$reps" -o "$csv" \
		"${runs[@]}" ${extra[@]+"${extra[@]}"}
	"$top/deploy/tessera-local" --dir "$var" down >/dev/null
	rm -rf "$var"
	var=""
done
"$bench" --report "$csv" | tee "$out/report.txt"
# Debian's python3-matplotlib serves /usr/bin/python3, which may not be
# the python3 first on PATH.
py=""
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then
		py=$p
		break
	fi
done
if [ -n "$py" ]; then
	"$py" "$top/tests/bench/plot_locks.py" "$csv" "$out"
else
	echo "bench_locks: no python3 with matplotlib (make deps installs python3-matplotlib); no plots"
fi
echo "bench_locks: CSV, report and plots in $out"
