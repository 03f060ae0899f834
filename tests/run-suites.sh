#!/usr/bin/env bash
# Run every test suite and print one summary line over all of them.
#
# Arguments are groups "BUILD_DIR:suite suite ...". A suite is a CMocka
# binary or a script; each runs with TESSERA_BUILD=BUILD_DIR so scripts use
# the programs of that build. Counts come from CMocka's summary lines
# ("[  PASSED  ] N test(s)." etc.), which our scripts print too. A suite
# that dies before its summary counts as one failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
logdir="$top/build/test-logs"
mkdir -p "$logdir"
passed=0 failed=0 skipped=0
failures=()
failed_logs=()  # their logs, whose ends are shown again before the summary
times=()   # "seconds suite (build)", for the slowest ones at the end
suite_timeout=${TESSERA_SUITE_TIMEOUT:-900}
# Leaks inside third-party code (listed there with why) are not ours to fix.
supp=$top/tests/lsan.supp
# On Debian's stripped libfabric (the build's fallback) those names are not
# there to match: its module is (tests/lsan-stripped-libfabric.supp). The
# first suite that links libfabric says which one the build uses.
fabric_of() {
	local g s
	for g in "$@"; do
		for s in ${g#*:}; do
			[ -x "$top/$s" ] || continue
			s=$(ldd "$top/$s" 2>/dev/null | sed -n 's/^[[:space:]]*libfabric\.so\.1 => \([^ ]*\).*/\1/p')
			[ -n "$s" ] && { echo "$s"; return; }
		done
	done
}
case $(fabric_of "$@") in
/lib/* | /usr/lib/*)
	cat "$top/tests/lsan.supp" "$top/tests/lsan-stripped-libfabric.supp" >"$logdir/lsan.supp"
	supp=$logdir/lsan.supp
	echo "run-suites: the tests run on Debian's libfabric.so.1: its leaks are suppressed by module"
	;;
esac
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

for group in "$@"; do
	build=${group%%:*}
	suites=${group#*:}
	for suite in $suites; do
		name=$(echo "$build/$suite" | tr '/' '_')
		log="$logdir/$name.log"
		echo "=== $suite ($build)"
		t0=$(date +%s)
		TESSERA_BUILD="$top/$build" timeout -k 10 "$suite_timeout" \
			"$top/$suite" >"$log" 2>&1
		rc=$?
		cat "$log"
		secs=$(($(date +%s) - t0))
		echo "--- $suite ($build): $secs s"
		times+=("$secs $suite ($build)")
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		summaries=$(grep -c '^\[==========\] [0-9]* test(s) run' "$log")
		# A test whose setup failed is in the run count but in neither
		# the passed nor the failed one.
		r=$(sed -n 's/^\[==========\] \([0-9]*\) test(s) run.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		[ "$r" -gt $((p + f + s)) ] && f=$((r - p - s))
		if [ "$summaries" -eq 0 ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
			echo "!!! $suite exited with status $rc without reporting a failure: counted as one failed test"
			f=$((f + 1))
		fi
		if [ "$f" -gt 0 ]; then
			names=$(sed -n 's/^\[  FAILED  \] \([^0-9].*\)/\1/p' "$log" | sort -u | tr '\n' ' ')
			failures+=("$suite ($build): ${names:-exit status $rc}")
			failed_logs+=("$log")
		fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	done
done
echo "slowest suites (seconds):"
printf '%s\n' "${times[@]}" | sort -rn | head -8 | sed 's/^/  /'
# The failures again, above the summary, so a truncated log still shows
# why: the end of each failed suite's log (a sanitizer report or a
# failed assertion is there), then one line naming each.
for log in "${failed_logs[@]}"; do
	echo "--- $(basename "$log"), its first sanitizer report or else its end:"
	if grep -q -E '^==[0-9]+==ERROR|runtime error:' "$log"; then
		grep -m1 -A 30 -E '^==[0-9]+==ERROR|runtime error:' "$log"
	else
		tail -n 40 "$log"
	fi | sed 's/^/  | /'
done
for line in "${failures[@]}"; do
	echo "FAILED: $line (log: build/test-logs)"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
