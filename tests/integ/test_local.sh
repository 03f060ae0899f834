#!/usr/bin/env bash
# `make run` and deploy/tessera-local, as a newcomer meets them:
#   - `make run` installs the dependencies before it builds anything (a
#     dry run in an empty build directory shows the order);
#   - tessera-local refuses an option or command it does not know, saying
#     what it takes, and starts nothing;
#   - its options work: --dir, --ios, --port, --bin, --no-mount bring a
#     private instance up, report it, and take it down.
# Prints CMocka-style lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
local_sh=$top/deploy/tessera-local
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-local.XXXXXX")
CHECKS_LOG=$tmp/check.log
. "$top/tests/integ/checks.sh"
cleanup() { # (by TESSERA_VAR too: a tessera-local that ignores --dir)
	for d in "$tmp/var" "$tmp/refused"; do
		[ ! -d "$d" ] || TESSERA_VAR=$d "$local_sh" down >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

test_run_installs_deps() {
	# A make of our own (not a job of one running us), dry: recursive
	# makes still run, and print what they would do.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" -n --no-print-directory \
		B="$tmp/b" MPICC= run >"$tmp/run.n" 2>&1 || { cat "$tmp/run.n"; return 1; }
	deps=$(grep -n 'install-deps\.sh' "$tmp/run.n" | head -1 | cut -d: -f1)
	build_line=$(grep -n -E 'protoc-c|(^| )cc .* -c ' "$tmp/run.n" | head -1 | cut -d: -f1)
	echo "make -n run: install-deps.sh at line ${deps:-none}, first build step at line ${build_line:-none}"
	[ -n "$deps" ] && [ -n "$build_line" ] && [ "$deps" -lt "$build_line" ]
}

# Exit status, and the usage on stderr, of a refused command line.
expect_refused() { # WHAT ARGS...
	local what=$1 rc
	shift
	set +e
	TESSERA_VAR=$tmp/refused "$local_sh" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	echo "tessera-local $*: exit $rc"
	cat "$tmp/err"
	[ "$rc" -eq 2 ]
	grep -q "$what" "$tmp/err"
	grep -q '^usage: tessera-local' "$tmp/err"
	[ ! -s "$tmp/out" ]
	[ ! -e "$tmp/refused" ]   # nothing was created, nothing started
}

test_refuses_unknown_option() {
	expect_refused "unknown option '--bogus'" up --bogus
	expect_refused "unknown option '-x'" -x status
}

test_refuses_unknown_command() {
	expect_refused "unknown command 'start'" start
	expect_refused "no command given" --dir "$tmp/refused"
	expect_refused "one command only" up down
	expect_refused "needs a value" up --dir
	expect_refused "wants a count" --ios none up
}

test_help() {
	"$local_sh" --help >"$tmp/out"
	grep -q '^usage: tessera-local' "$tmp/out"
	grep -q -- '--dir DIR' "$tmp/out"
}

test_options_work() {
	local port
	port=$(free_ports 2)
	"$local_sh" --dir "$tmp/var" status && return 1   # no instance yet
	"$local_sh" --dir "$tmp/var" --ios 2 --port "$port" --bin "$build/bin" --no-mount up
	grep -qx "mds = 127.0.0.1:$port" "$tmp/var/tessera.conf"
	[ "$(grep -c '^ios = ' "$tmp/var/tessera.conf")" -eq 2 ]
	"$local_sh" --dir="$tmp/var" status | tee "$tmp/status"
	[ "$(grep -Ec '^(mds|ios[0-9]+): running' "$tmp/status")" -eq 3 ]
	# its own munged, unless the machine's answers (then none is started)
	if grep -q '^munge_socket = ' "$tmp/var/tessera.conf"; then
		grep -q '^munged: running' "$tmp/status"
	fi
	TESSERA_CONFIG=$tmp/var/tessera.conf "$build/bin/tessera" ping
	if mountpoint -q "$tmp/mnt"; then
		echo "$tmp/mnt is mounted although no mount was asked for"
		return 1
	fi
	"$local_sh" down --dir "$tmp/var"
	"$local_sh" --dir "$tmp/var" status && return 1
	return 0
}

check make_run_installs_deps_first test_run_installs_deps
check local_refuses_unknown_option test_refuses_unknown_option
check local_refuses_unknown_command test_refuses_unknown_command
check local_help test_help
check local_options_work test_options_work
checks_done
