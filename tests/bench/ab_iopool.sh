#!/usr/bin/env bash
# ab_iopool.sh [ROUNDS] - the storage daemons' disk workers off and on:
# tessera-bench-basic's copies in and out (1 and 4 clients, each beside
# its plain pwrite/pread baseline measured in the same run) on a fresh
# local cluster (deploy/tessera-local) with io_threads = 0 and with the
# default, alternated ROUNDS times (3) so both see the same machine.
# Figures, not a test: the last lines give each figure's median per mode
# (MB/s, and the ratio to the baseline).
#
#   TESSERA_IOS=1 AB_MIB=512 tests/bench/ab_iopool.sh 3
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3} mib=${AB_MIB:-1024}
export TESSERA_IOS=${TESSERA_IOS:-4} TESSERA_PORT=${TESSERA_PORT:-7700}
export TESSERA_VAR=${AB_VAR:-$top/build/ab-iopool-var}
out=$(mktemp "${TMPDIR:-/tmp}/ab-iopool.XXXXXX")
trap '"$top/deploy/tessera-local" down >/dev/null 2>&1 || true; rm -f "$out"' EXIT

for round in $(seq "$rounds"); do
	for mode in inline default; do
		rm -rf "$TESSERA_VAR"
		"$top/deploy/tessera-local" up >/dev/null
		"$top/deploy/tessera-local" down >/dev/null
		[ "$mode" = inline ] && echo "io_threads = 0" >>"$TESSERA_VAR/tessera.conf"
		"$top/deploy/tessera-local" up >/dev/null
		mkdir -p "$TESSERA_VAR/baseline"
		"$top/build/bin/tessera-bench-basic" -c "$TESSERA_VAR/tessera.conf" \
			-l "$TESSERA_VAR/baseline" -s "$mib" -n 200 -p 4 |
			awk -v m="$mode" -v r="$round" \
				'/^copy/ { print m, r, $2 $4, $6, $8, $10; fflush() }' | tee -a "$out"
		"$top/deploy/tessera-local" down >/dev/null
	done
done
echo "medians over $rounds rounds ($TESSERA_IOS storage daemons, $mib MiB per client):"
python3 - "$out" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, _, what, tess, base, ratio = line.split()
    rows.setdefault((what, mode), []).append((float(tess), float(base), float(ratio)))
for what in sorted({w for w, _ in rows}):
    cells = []
    for mode in ("inline", "default"):
        v = rows.get((what, mode), [])
        if v:
            cells.append("%s %6.0f MB/s (baseline %6.0f) ratio %.2f" % (
                mode, statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
                statistics.median(x[2] for x in v)))
    print("%-6s %s" % (what, " | ".join(cells)))
EOF
