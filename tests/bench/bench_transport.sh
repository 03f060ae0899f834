#!/usr/bin/env bash
# bench_transport.sh [CONF BASELINE_DIR] - connected mode (`tcp;msg`)
# against rxm (`tcp;ofi_rxm`) in the same run (docs/design.md, "Frames and
# transport"; docs/security.md, "Connection takeover"): on a private
# cluster (1 metadata + XPORT_IOS storage daemons, 4, on loopback) started
# once per provider and round, tessera-bench-basic with one client:
# XPORT_MIB MiB (256) copied in (write+fsync) and out through the storage
# daemons (local reads do not use the transport, so that figure is left
# out), then XPORT_FILES files (2000) created, stat'ed and removed.
# XPORT_ROUNDS rounds (3), each visiting the providers in a rotated order.
# The last lines give each figure's median and the ratio msg/rxm (above 1:
# connected mode is faster). The run-bench.sh cluster (CONF) is not used.
# TMPDIR=/dev/shm puts the daemons' stores on tmpfs, which takes the disk's
# (fsync's) noise out of the write figure and leaves the transport's cost.
# Figures, not a test.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
mib=${XPORT_MIB:-256}
files=${XPORT_FILES:-2000}
rounds=${XPORT_ROUNDS:-3}
n_ios=${XPORT_IOS:-4}
. "$top/tests/bench/private_cluster.sh" xport

providers=("tcp;ofi_rxm" "tcp;msg")
short() { [ "$1" = "tcp;msg" ] && echo msg || echo rxm; }
mkdir -p "$tmp/base"
echo "== transport: tcp;msg against tcp;ofi_rxm, $mib MiB and $files files, $n_ios storage daemons, $rounds rounds"
for r in $(seq 0 $((rounds - 1))); do
	for k in 0 1; do
		p=${providers[$(((r + k) % 2))]}
		local_ down >/dev/null 2>&1 || true
		rm -rf "$var"
		local_ --provider "$p" --port "$(free_ports $((n_ios + 1)))" up >/dev/null
		out=$("$B/bin/tessera-bench-basic" -c "$var/tessera.conf" -l "$tmp/base" -s "$mib" \
			-n "$files" -p 1)
		# copy in / through the daemons: MB/s (field 6); create, stat,
		# unlink: op/s (field 2)
		w=$(awk '/^copy in/ { print $6 }' <<<"$out")
		rd=$(awk '/through the daemons/ { print $6 }' <<<"$out")
		cr=$(awk '$1 == "create" { print $2 }' <<<"$out")
		st=$(awk '$1 == "stat" { print $2 }' <<<"$out")
		ul=$(awk '$1 == "unlink" { print $2 }' <<<"$out")
		echo "$(short "$p") $w $rd $cr $st $ul" >>"$tmp/rates"
		printf '  round %d %-3s write %6.0f MB/s  read %6.0f MB/s  create %6.0f/s  stat %6.0f/s  unlink %6.0f/s\n' \
			"$((r + 1))" "$(short "$p")" "$w" "$rd" "$cr" "$st" "$ul"
	done
done
median() { # PROVIDER COLUMN
	awk -v m="$1" '$1 == m' "$tmp/rates" | sort -g -k"$2" |
		awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
col=2
for what in "write MB/s" "read MB/s" "create op/s" "stat op/s" "unlink op/s"; do
	rxm=$(median rxm $col)
	msg=$(median msg $col)
	printf 'transport %-12s rxm %8.0f  msg %8.0f  (msg/rxm %.2f)\n' "$what" "$rxm" "$msg" \
		"$(echo "$msg / $rxm" | bc -l)"
	col=$((col + 1))
done
