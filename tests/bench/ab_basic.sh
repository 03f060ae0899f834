#!/usr/bin/env bash
# ab_basic.sh BUILD_A BUILD_B [ROUNDS] - the same figures from two builds,
# alternated A B A B... in one run so both see the same machine: the time
# of `tessera cp` of a 1 GiB file into Tessera and back out, and the
# metadata rates of tessera-bench-basic (create, stat, unlink). Each round
# of each build gets a fresh cluster (1 metadata + 4 storage daemons on
# loopback, state under $TMPDIR). A build whose daemons want a capability
# key (docs/security.md, "Capabilities") gets one, and one that asks munged
# (docs/security.md) gets a munged of the run's own. Figures, not a test:
# the last lines give each figure's median per build and B's ratio to A.
# AB_CLIENTS=N (default 1) runs the metadata figures from N clients too
# (creates and unlinks); AB_META=1 leaves out the copies.
#
#   tests/bench/ab_basic.sh /work/main/build build 3
#   AB_META=1 AB_CLIENTS=4 tests/bench/ab_basic.sh /work/wt/base/build build 3
set -euo pipefail
a=$(realpath "$1") b=$(realpath "$2") rounds=${3:-3}
mib=${AB_MIB:-1024} files=${AB_FILES:-5000} clients=${AB_CLIENTS:-1} meta_only=${AB_META:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-ab.XXXXXX")
pids=()
MUNGED_PID=""
cleanup() {
	for p in "${pids[@]}" $MUNGED_PID; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
if grep -qa 'munge_socket' "$a/bin/tessera-mds" "$b/bin/tessera-mds"; then
	. "$(dirname "$0")/../integ/munged.sh"
	mkdir -p "$tmp/munge"
	munged_start "$tmp/munge"
fi

. "$(dirname "$0")/../integ/ports.sh"

# up BUILD DIR: a cluster of BUILD's daemons under DIR (config DIR/conf).
up() {
	local bin=$1/bin d=$2
	mkdir -p "$d"
	{
		port_lines 4
		if grep -qa 'no key_file in the config' "$bin/tessera-mds"; then
			(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$d/key")
			echo "key_file = $d/key"
		fi
		if grep -qa 'munge_socket' "$bin/tessera-mds"; then
			echo "munge_socket = $MUNGE_SOCK"
		fi
	} >"$d/conf"
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$d/log")
	"$bin/tessera-mds" -c "$d/conf" -d "$d/mds" -p "$d/mds.pid" 2>>"$d/log" &
	pids+=($!)
	for i in 0 1 2 3; do
		"$bin/tessera-ios" -c "$d/conf" -d "$d/ios$i" -i "$i" -p "$d/ios$i.pid" 2>>"$d/log" &
		pids+=($!)
	done
	for f in mds ios0 ios1 ios2 ios3; do
		for _ in $(seq 200); do [ -s "$d/$f.pid" ] && break; sleep 0.05; done
		[ -s "$d/$f.pid" ] || { echo "ab_basic: $f of $1 did not start:" >&2; cat "$d/log" >&2; exit 1; }
	done
}

down() { # the daemons alone (the run's munged serves every round)
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}

ns() { # COMMAND...: its wall time in nanoseconds
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null
	echo $(($(date +%s%N) - t0))
}
mbps() { python3 -c "print($mib * 1.048576 / ($1 / 1e9))"; } # NS: MB/s of the copy

[ "$meta_only" = 1 ] || head -c "$((mib << 20))" /dev/urandom >"$tmp/src"
per_round=3 # the figures a round adds
[ "$clients" -gt 1 ] && per_round=$((per_round + 2))
[ "$meta_only" = 1 ] || per_round=$((per_round + 2))
results=$tmp/results
for r in $(seq "$rounds"); do
	for which in A B; do
		build=$a
		[ "$which" = B ] && build=$b
		d=$tmp/$which$r
		up "$build" "$d"
		if [ "$meta_only" != 1 ]; then
			tin=$(ns "$build/bin/tessera" -c "$d/conf" cp "$tmp/src" tessera:/big)
			tout=$(ns "$build/bin/tessera" -c "$d/conf" cp tessera:/big "$tmp/out")
			cmp -s "$tmp/src" "$tmp/out" || { echo "ab_basic: $which: copy differs" >&2; exit 1; }
			rm -f "$tmp/out"
			echo "$which cp_in_MBps $(mbps "$tin")" >>"$results"
			echo "$which cp_out_MBps $(mbps "$tout")" >>"$results"
		fi
		mkdir -p "$d/local"
		meta=$("$build/bin/tessera-bench-basic" -c "$d/conf" -l "$d/local" -s 1 -n "$files" \
			-p "$clients" -m)
		down
		for op in create stat unlink; do
			echo "$which ${op}_ops $(echo "$meta" | awk -v op="$op" '$1 == op { print $2; exit }')" \
				>>"$results"
		done
		if [ "$clients" -gt 1 ]; then
			for op in create unlink; do
				echo "$which ${op}_${clients}_clients_ops $(echo "$meta" |
					awk -v op="$op," -v n="$clients" '$1 == op && $2 == n { print $4; exit }')" \
					>>"$results"
			done
		fi
		echo "round $r $which: $(grep "^$which " "$results" | tail -n "$per_round" | cut -d' ' -f2- |
			tr '\n' ' ')"
		rm -rf "$d"
	done
done
python3 - "$results" <<'EOF'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    w, k, v = line.split()
    vals.setdefault(k, {}).setdefault(w, []).append(float(v))
print("%-22s %12s %12s %8s" % ("median of", "A", "B", "B/A"))
for k, d in vals.items():
    ma, mb = statistics.median(d["A"]), statistics.median(d["B"])
    print("%-22s %12.1f %12.1f %8.3f" % (k, ma, mb, mb / ma))
EOF
