#!/usr/bin/env bash
# bench_seal.sh [CONF BASELINE_DIR] - the cost of sealing every byte
# (docs/security.md, "Sessions"): `tessera cp` of SEAL_MIB MiB (512) into
# Tessera (write, synced) and back out (read, through the storage daemons:
# local_reads = 0), on a private cluster (1 metadata + SEAL_IOS storage
# daemons, 4, on loopback) whose daemons are restarted in each sealing
# mode, SEAL_ROUNDS rounds (3) each visiting the modes in a rotated order:
#   unsealed   measure_seal_off = 1: raw data outside the tag, as before
#              issue 29 (a key for measurement only; header and body stay
#              sealed, which costs about a microsecond a frame)
#   integrity  the default: raw data under the tag (Poly1305)
#   secrecy    encrypt = 1: body and raw data encrypted (ChaCha20) too
# The last lines give each figure's median and its ratio to unsealed. The
# run-bench.sh cluster (CONF) is not used. Figures, not a test.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
mib=${SEAL_MIB:-512}
rounds=${SEAL_ROUNDS:-3}
n_ios=${SEAL_IOS:-4}
. "$top/tests/bench/private_cluster.sh" seal
port=$(free_ports $((n_ios + 1)))

modes=(unsealed integrity secrecy)
# Restart the daemons with the config lines of mode $1.
restart_in() {
	local_ down >/dev/null 2>&1 || true
	sed -i '/^encrypt *=/d; /^measure_seal_off *=/d; /^local_reads *=/d' "$var/tessera.conf"
	echo "local_reads = 0" >>"$var/tessera.conf"
	case $1 in
	unsealed) echo "measure_seal_off = 1" >>"$var/tessera.conf" ;;
	secrecy) echo "encrypt = 1" >>"$var/tessera.conf" ;;
	esac
	local_ --port "$port" up >/dev/null
}
secs() { # COMMAND...: its wall time in seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

local_ --port "$port" up >/dev/null
head -c "$((mib << 20))" /dev/urandom >"$tmp/src"
echo "== sealing: tessera cp $mib MiB in and out, $n_ios storage daemons, $rounds rounds"
for r in $(seq 0 $((rounds - 1))); do
	for k in 0 1 2; do
		m=${modes[$(((r + k) % 3))]}
		restart_in "$m"
		conf=$var/tessera.conf
		"$B/bin/tessera" -c "$conf" rm /seal-big >/dev/null 2>&1 || true
		tin=$(secs "$B/bin/tessera" -c "$conf" cp -q "$tmp/src" tessera:/seal-big)
		tout=$(secs "$B/bin/tessera" -c "$conf" cp -q tessera:/seal-big "$tmp/out")
		cmp -s "$tmp/src" "$tmp/out" || { echo "bench_seal: $m: the copy out differs" >&2; exit 1; }
		rm -f "$tmp/out"
		printf '%s %s %s\n' "$m" "$(echo "$mib * 1.048576 / $tin" | bc -l)" \
			"$(echo "$mib * 1.048576 / $tout" | bc -l)" >>"$tmp/rates"
		printf '  round %d %-9s write %6.0f MB/s  read %6.0f MB/s\n' "$((r + 1))" "$m" \
			"$(echo "$mib * 1.048576 / $tin" | bc -l)" "$(echo "$mib * 1.048576 / $tout" | bc -l)"
	done
done
median() { # MODE COLUMN
	awk -v m="$1" '$1 == m' "$tmp/rates" | sort -g -k"$2" |
		awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
for dir in write read; do
	col=2
	[ "$dir" = write ] || col=3
	base=$(median unsealed $col)
	integ=$(median integrity $col)
	secret=$(median secrecy $col)
	printf 'sealing %-5s  unsealed %6.0f MB/s  integrity %6.0f MB/s (%.2f)  secrecy %6.0f MB/s (%.2f)\n' \
		"$dir" "$base" "$integ" "$(echo "$integ / $base" | bc -l)" "$secret" \
		"$(echo "$secret / $base" | bc -l)"
done
