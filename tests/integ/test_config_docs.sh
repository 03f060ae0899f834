#!/usr/bin/env bash
# The configuration reference cannot drift from the parser: both come
# from one table (proto/tp_config_keys.h). The committed copies,
# docs/configuration.md and deploy/man/tessera.conf.5, must equal what the
# build's generator (tp-config-doc) makes of it now (`make docs` rewrites
# them). And what tessera-genconfig writes, sizes with suffixes included,
# is a config the daemons' parser accepts. Prints CMocka-style lines for
# tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
gen=$build/proto/tp-config-doc
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-config-docs.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
trap 'rm -rf "$tmp"' EXIT

[ -x "$gen" ] || skip_all config_docs "$gen does not exist (run make)"

current() { # FORMAT TEMPLATE COMMITTED
	"$gen" "$1" "$top/$2" >"$tmp/out"
	diff -u "$top/$3" "$tmp/out" || {
		echo "$3 is stale: run make docs"
		return 1
	}
}

# Every key of the table has its row in the reference and its entry in
# the manual page (a guard against a template that lost its @KEYS@).
every_key() {
	local keys
	keys=$("$gen" markdown "$top/proto/doc/configuration.md.in" |
		sed -n 's/^| `\([a-z_0-9]*\)` |.*/\1/p')
	[ "$(echo "$keys" | wc -l)" -ge 17 ]
	for k in $keys; do
		grep -q "^| \`$k\` |" "$top/docs/configuration.md"
		grep -q "^\.B $(echo "$k" | sed 's/-/\\\\-/g')\$" "$top/deploy/man/tessera.conf.5"
	done
}

man_renders() {
	command -v groff >/dev/null || { echo "no groff"; return 0; }
	groff -man -ww -z "$top/deploy/man/tessera.conf.5" 2>"$tmp/groff"
	! [ -s "$tmp/groff" ] || { cat "$tmp/groff"; return 1; }
}

# tessera-genconfig passes --strip-size through: 64K must be accepted.
genconfig_sizes() {
	"$top/deploy/tessera-genconfig" --mds n0:7400 --ios n1:7401 --ios n2:7401 \
		--strip-size 64K --key-file "$tmp/tessera.key" >"$tmp/tessera.conf"
	grep -qx 'strip_size = 64K' "$tmp/tessera.conf"
	"$gen" check "$tmp/tessera.conf" >"$tmp/parsed"
	cat "$tmp/parsed"
	grep -qx 'strip_size = 65536' "$tmp/parsed"
	grep -qx 'ios = n2:7401' "$tmp/parsed"
	sed -i 's/^strip_size = .*/strip_size = 1MiB/' "$tmp/tessera.conf"
	"$gen" check "$tmp/tessera.conf" | grep -qx 'strip_size = 1048576'
}

# A refused value: the message names the file, the line, the key and the
# range.
range_in_message() {
	printf 'mds = a:1\nios = b:2\n\nmax_io = 128M\n' >"$tmp/bad.conf"
	if "$gen" check "$tmp/bad.conf" 2>"$tmp/err"; then
		echo "a bad max_io was accepted"
		return 1
	fi
	cat "$tmp/err"
	grep -q "$tmp/bad.conf:4: bad value '128M' for 'max_io': expected a size in bytes from 4 KiB to 64 MiB" \
		"$tmp/err"
}

# The storage daemon's own rule across two keys: a sieve_gap wider than
# sieve_span is refused by `tessera-ios -t`, naming both; 0 and 0 (no
# merging at all) is valid.
sieve_rule() {
	local ios=$build/bin/tessera-ios
	[ -x "$ios" ] || { echo "no $ios"; return 1; }
	printf 'mds = a:1\nios = b:2\nkey_file = /k\nsieve_gap = 8K\nsieve_span = 4K\n' >"$tmp/sieve.conf"
	if "$ios" -c "$tmp/sieve.conf" -i 0 -t 2>"$tmp/err"; then
		echo "a sieve_gap wider than sieve_span was accepted"
		return 1
	fi
	cat "$tmp/err"
	grep -q "config $tmp/sieve.conf: sieve_gap (8192 bytes) exceeds sieve_span (4096 bytes)" "$tmp/err"
	printf 'mds = a:1\nios = b:2\nkey_file = /k\nsieve_gap = 0\nsieve_span = 0\n' >"$tmp/sieve.conf"
	"$ios" -c "$tmp/sieve.conf" -i 0 -t
}

# csum_block must be a power of two (the range is the parser's): 3000 is
# refused by `tessera-ios -t`, naming the key and the value; 64K passes.
csum_rule() {
	local ios=$build/bin/tessera-ios
	[ -x "$ios" ] || { echo "no $ios"; return 1; }
	printf 'mds = a:1\nios = b:2\nkey_file = /k\ncsum_block = 3000\n' >"$tmp/csum.conf"
	if "$ios" -c "$tmp/csum.conf" -i 0 -t 2>"$tmp/err"; then
		echo "a csum_block of 3000 was accepted"
		return 1
	fi
	cat "$tmp/err"
	grep -q "config $tmp/csum.conf: csum_block (3000 bytes) is not a power of two" "$tmp/err"
	printf 'mds = a:1\nios = b:2\nkey_file = /k\ncsum_block = 64K\n' >"$tmp/csum.conf"
	"$ios" -c "$tmp/csum.conf" -i 0 -t
}

check docs_current current markdown proto/doc/configuration.md.in docs/configuration.md
check man_current current man proto/doc/tessera.conf.5.in deploy/man/tessera.conf.5
check every_key every_key
check man_renders man_renders
check genconfig_sizes genconfig_sizes
check range_in_message range_in_message
check sieve_gap_within_span sieve_rule
check csum_block_power_of_two csum_rule
checks_done
