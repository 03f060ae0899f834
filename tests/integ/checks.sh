# checks.sh - sourced by test scripts: run named checks and print the
# CMocka-style lines tests/run-suites.sh counts.
#
#   . "$(dirname "$0")/checks.sh"
#   check NAME COMMAND [ARG...]   # runs COMMAND under set -e in a subshell;
#                                 # its output is shown only if it fails
#   checks_done                   # the summary; exits 1 if any failed
#   skip_all NAME REASON          # a suite that cannot run here: one skip
#   skip_check NAME REASON        # one check that cannot run here
#   free_ports N                  # from ports.sh: P such that P..P+N are
#                                 # free on 127.0.0.1 (for tessera-local)
#
# CHECKS_LOG (default: a temporary file) holds each check's output.
checks_run=0 checks_passed=0
checks_failed=() checks_skipped=()
CHECKS_LOG=${CHECKS_LOG:-$(mktemp "${TMPDIR:-/tmp}/tessera-check.XXXXXX")}

check() {
	local name=$1 rc
	shift
	checks_run=$((checks_run + 1))
	echo "[ RUN      ] $name"
	( set -e; "$@" ) >"$CHECKS_LOG" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		checks_passed=$((checks_passed + 1))
		echo "[       OK ] $name"
	else
		sed 's/^/    /' "$CHECKS_LOG"
		echo "[  FAILED  ] $name"
		checks_failed+=("$name")
	fi
}

skip_check() {
	checks_run=$((checks_run + 1))
	echo "[ SKIPPED  ] $1: $2"
	checks_skipped+=("$1: $2")
}

checks_done() {
	rm -f "$CHECKS_LOG"
	echo "[==========] $checks_run test(s) run."
	echo "[  PASSED  ] $checks_passed test(s)."
	if [ "${#checks_skipped[@]}" -gt 0 ]; then
		echo "[  SKIPPED ] ${#checks_skipped[@]} test(s), listed below:"
		for n in "${checks_skipped[@]}"; do echo "[  SKIPPED ] $n"; done
	fi
	if [ "${#checks_failed[@]}" -gt 0 ]; then
		echo "[  FAILED  ] ${#checks_failed[@]} test(s), listed below:"
		for n in "${checks_failed[@]}"; do echo "[  FAILED  ] $n"; done
		exit 1
	fi
	exit 0
}

skip_all() {
	rm -f "$CHECKS_LOG"
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  SKIPPED ] 1 test(s), listed below:"
	echo "[  SKIPPED ] $1: $2"
	exit 0
}

. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"
