#!/usr/bin/env bash
# The parts' boundaries hold: each part compiles with only its own folder
# and the public headers of the parts it uses (the Makefile's
# USES_<part>), so a stray include fails to compile.
#
# For every part, with the include path the Makefile gives its objects
# (make print-bounds), a probe source placed as if in that part:
#   - including each header it may not reach (any other part's internal
#     header, a public header of a part it does not use) must fail with
#     "No such file or directory";
#   - including each public header of a part it uses must compile.
# And no source reaches around the include path with a "dir/header" name.
# Needs the build's exported headers ($TESSERA_BUILD/include). Prints
# CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
cd "$top" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-bounds.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
trap 'rm -rf "$tmp"' EXIT

[ -d "$build/include" ] || skip_all bounds "$build/include does not exist (run make)"
# A make of our own, not a job of the make that may be running us.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory \
	B="$build" MPICC= print-bounds >"$tmp/bounds" 2>"$tmp/bounds.err"; then
	cat "$tmp/bounds.err"
	skip_all bounds "make print-bounds failed"
fi
parts=$(sed -n 's/^part \([^ ]*\) .*/\1/p' "$tmp/bounds")

flags_of() { sed -n "s|^part $1 ||p" "$tmp/bounds"; }
public_of() { sed -n "s|^public $1 *||p" "$tmp/bounds"; }
uses_of() { flags_of "$1" | tr ' ' '\n' | sed -n "s|^-I$build/include/||p"; }

# Compile a probe including header $2 as a source of part $1 would.
probe() {
	mkdir -p "$tmp/probe/$1"
	printf '#include "%s"\nint probe_%s;\n' "$2" "$(echo "$2" | tr -c 'A-Za-z0-9\n' _)" \
		>"$tmp/probe/$1/probe.c"
	# shellcheck disable=SC2046
	cc -std=c11 -D_GNU_SOURCE -fsyntax-only $(flags_of "$1") "$tmp/probe/$1/probe.c" \
		>"$tmp/probe.out" 2>&1
}

check_part() { # PART
	local p=$1 q h used own refused=0 accepted=0 bad=0
	used=" $(uses_of "$p" | tr '\n' ' ') "
	own=$(find "$p" -name '*.h' -printf '%f\n' 2>/dev/null)
	# A header public in any part this one uses may be reached (one file
	# can be public in two parts: tessera_stats.h in proto and client).
	local allowed=" " u
	for u in $used; do allowed="$allowed$(public_of "$u") "; done
	for q in $parts; do
		[ "$q" != "$p" ] || continue
		case $used in *" $q "*) public=" $(public_of "$q") " ;; *) public=" " ;; esac
		for h in $( { find "$q" -name '*.h' -printf '%f\n'; public_of "$q" | tr ' ' '\n'; } |
			sort -u); do
			case $public in *" $h "*) continue ;; esac
			case $allowed in *" $h "*) continue ;; esac
			# A header of the same name this part may see is another file.
			if grep -qx "$h" <<<"$own"; then continue; fi
			if probe "$p" "$h"; then
				echo "$p reaches $q's $h, which it may not include"
				bad=$((bad + 1))
			elif ! grep -q "$h: No such file or directory" "$tmp/probe.out"; then
				echo "$p including $q's $h failed for another reason:"
				cat "$tmp/probe.out"
				bad=$((bad + 1))
			else
				refused=$((refused + 1))
			fi
		done
	done
	for q in $used; do
		for h in $(public_of "$q"); do
			if probe "$p" "$h"; then
				accepted=$((accepted + 1))
			else
				echo "$p cannot include $q's public $h:"
				cat "$tmp/probe.out"
				bad=$((bad + 1))
			fi
		done
	done
	echo "$p: $refused stray includes refused, $accepted public ones compiled"
	[ "$refused" -gt 0 ] && [ "$bad" -eq 0 ]
}

# "../x/y.h" or "x/y.h" would reach past the include path.
check_no_paths() {
	local hits
	# shellcheck disable=SC2086
	hits=$(grep -rnE --include='*.c' --include='*.h' \
		'^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' $parts || true)
	[ -z "$hits" ] || { echo "includes by path:"; echo "$hits"; return 1; }
}

# server/ is three parts (the Makefile's PUBLIC_server/core, USES_server/*):
# named here so the proof does not rest on their being found. The daemons
# reach none of each other's headers, neither reaches the core's internal
# ones (daemon_int.h, session.h) and both reach its public ones; the core
# reaches neither daemon.
refused() { # PART HEADER
	if probe "$1" "$2"; then
		echo "$1 reaches $2, which it may not include"
		return 1
	elif ! grep -q "$2: No such file or directory" "$tmp/probe.out"; then
		echo "$1 including $2 failed for another reason:"
		cat "$tmp/probe.out"
		return 1
	fi
}
check_server_split() {
	local p h bad=0 n=0
	for p in server/core server/mds server/ios; do
		grep -qx "$p" <<<"$parts" || { echo "make print-bounds names no part $p"; return 1; }
	done
	for h in $(cd server/ios && ls ./*.h) daemon_int.h session.h; do
		refused server/mds "${h#./}" || bad=$((bad + 1))
		n=$((n + 1))
	done
	for h in $(cd server/mds && ls ./*.h) daemon_int.h session.h; do
		refused server/ios "${h#./}" || bad=$((bad + 1))
		n=$((n + 1))
	done
	for h in $(cd server/mds && ls ./*.h) $(cd server/ios && ls ./*.h); do
		refused server/core "${h#./}" || bad=$((bad + 1))
		n=$((n + 1))
	done
	for p in server/mds server/ios; do
		for h in daemon.h cap.h; do
			probe "$p" "$h" || { echo "$p cannot include $h:"; cat "$tmp/probe.out"; bad=$((bad + 1)); }
		done
	done
	echo "server: $n stray includes between core, mds and ios refused"
	[ "$bad" -eq 0 ]
}

# (A nested part's test is named with _ for /: bounds_server_core.)
for p in $parts; do
	check "bounds_$(echo "$p" | tr / _)" check_part "$p"
done
check bounds_server_split check_server_split
check bounds_no_include_paths check_no_paths
checks_done
