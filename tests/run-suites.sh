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
times=()   # "seconds suite (build)", for the slowest ones at the end
suite_timeout=${TESSERA_SUITE_TIMEOUT:-900}

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
		fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	done
done
echo "slowest suites (seconds):"
printf '%s\n' "${times[@]}" | sort -rn | head -8 | sed 's/^/  /'
# The failures again, above the summary, so a truncated log still names them.
for line in "${failures[@]}"; do
	echo "FAILED: $line (log: build/test-logs)"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
