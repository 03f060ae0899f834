#!/usr/bin/env bash
# Fuzz Tessera's decoders and daemons with libFuzzer.
#
# Builds each target in tests/fuzz/ (clang -fsanitize=fuzzer,address,undefined)
# into $TESSERA_BUILD/fuzz/<target>/ and runs it for FUZZ_SECONDS seconds
# (default 12; `make fuzz` runs long campaigns) over a working corpus and
# the seeds in tests/fuzz/corpus/<target>/ (regression inputs included:
# every one of them runs first). Each target is one test in CMocka-style
# summary lines for tests/run-suites.sh; a crash leaves its input in the
# target's directory, named in the failure.
#
#   FUZZ_SECONDS=600 FUZZ_TARGETS="fuzz_ios fuzz_mds" tests/integ/test_fuzz.sh
#   tests/integ/test_fuzz.sh --seeds   rewrite the generated seeds in the tree
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
out=$build/fuzz
secs=${FUZZ_SECONDS:-12}
all="fuzz_dataloop_decode fuzz_frame fuzz_ios fuzz_ios_list fuzz_ios_lock fuzz_mds
     fuzz_lockmgr fuzz_client_reply fuzz_seal fuzz_auth"
targets=${FUZZ_TARGETS:-$all}
write_seeds=0
[ "${1:-}" = --seeds ] && write_seeds=1
ntests=$(echo $targets | wc -w)

echo "[==========] Running $ntests test(s)."
if ! command -v clang >/dev/null 2>&1 ||
   ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
	clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then
	echo "[==========] $ntests test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  SKIPPED ] $ntests test(s), listed below:"
	for t in $targets; do
		echo "[  SKIPPED ] $t: clang with libFuzzer (-fsanitize=fuzzer) is not installed"
	done
	exit 0
fi
gen=$build/proto/tessera.pb-c.c
if [ ! -f "$gen" ] || [ "$top/proto/tessera.proto" -nt "$gen" ]; then
	echo "[==========] $ntests test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  FAILED  ] $ntests test(s), listed below:"
	for t in $targets; do
		echo "[  FAILED  ] $t: $build is not built or is older than proto/tessera.proto (run make)"
	done
	exit 1
fi
mkdir -p "$out/obj" "$out/seedobj"

# Every part's folder and the build's generated and exported headers:
# the targets are white-box, like the unit tests.
cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer
	-I"$top/tests/fuzz" -I"$top/server/core" -I"$top/server/mds" -I"$top/server/ios"
	-I"$top/proto" -I"$top/client" -I"$top/lockmgr" -I"$top/dataloops" -I"$build/proto"
	-I"$build/include/proto" -I"$build/include/dataloops" -I"$build/include/lockmgr")
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
# -lsystemd: the daemons' mains, which the targets include, run through
# srv_run (server/core/daemon_notify.c, sd_notify).
libs=(-lprotobuf-c -lfabric -lmunge -lsodium -lleveldb -lev -lsystemd -lm -pthread)

# The parts' sources (not the daemons' mains: a target includes the one
# it drives), compiled once per flavour: fuzzing instrumentation, or plain
# for the seed writers.
dl_srcs=("$top"/dataloops/*.c "$top/proto/dataloop.c" "$gen")
proto_srcs=("$top"/proto/*.c "$gen")
srv_srcs=($(ls "$top"/server/*/*.c | grep -v '_main\.c$') "$top/tests/fuzz/fuzz_daemon.c")
lk_srcs=("$top"/lockmgr/*.c)
# The client over the fuzz transport (fuzz_tnet.c, instead of transport.c and transport_conn.c)
# and fuzz credentials (fuzz_creds.c, instead of auth.c: no munged).
client_srcs=("$top"/client/*.c "$top"/dataloops/*.c "$top"/lockmgr/*.c "$gen"
	     $(ls "$top"/proto/*.c | grep -Ev '/(transport|transport_conn|auth)\.c$') "$top/tests/fuzz/fuzz_tnet.c"
	     "$top/tests/fuzz/fuzz_creds.c"
	     "$top/tests/fuzz/fuzz_daemon.c" $(ls "$top"/server/*/*.c | grep -v '_main\.c$'))
all_srcs=("$top"/dataloops/*.c "${proto_srcs[@]}" "${srv_srcs[@]}" "${lk_srcs[@]}")
# The daemon core alone (AUTH needs no role's handlers).
core_srcs=("$top"/dataloops/*.c "${proto_srcs[@]}" "$top"/server/core/*.c "${lk_srcs[@]}"
	   "$top/tests/fuzz/fuzz_daemon.c")

# objs FLAVOUR SRC...: compile what changed; print the objects.
objs() {
	local dir=$out/$1 flags=() s o
	shift
	if [ "$dir" = "$out/obj" ]; then
		flags=(-fsanitize=fuzzer-no-link "${san[@]}")
	fi
	for s in "$@"; do
		o=$dir/$(echo "${s#$top/}" | tr / _ | sed 's/\.c$/.o/')
		o=${o/$(echo "${build#$top/}" | tr / _)_/gen_}
		if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$top/tests/integ/test_fuzz.sh" -nt "$o" ] ||
		   [ -n "$(find "$top/server" "$top/proto" "$top/dataloops" "$top/lockmgr" \
			"$top/tests/fuzz" "$top/client" -name '*.h' -newer "$o" -print -quit)" ]; then
			clang "${cflags[@]}" "${flags[@]}" -c -o "$o" "$s" || return 1
		fi
		echo "$o"
	done
}

# srcs_of TARGET: the sources besides the target's own file.
srcs_of() {
	case $1 in
	fuzz_dataloop_decode) echo "${dl_srcs[@]}" ;;
	fuzz_lockmgr) echo "${lk_srcs[@]}" ;;
	fuzz_client_reply) echo "${client_srcs[@]}" ;;
	fuzz_seal) echo "$top"/dataloops/*.c "${proto_srcs[@]}" ;;
	fuzz_auth) echo "${core_srcs[@]}" ;;
	*) echo "${all_srcs[@]}" ;;
	esac
}

# The file a target is built from, and its defines.
src_of() {
	case $1 in
	fuzz_ios_list) echo "$top/tests/fuzz/fuzz_ios.c -DFUZZ_IOS_LIST" ;;
	fuzz_ios_lock) echo "$top/tests/fuzz/fuzz_ios.c -DFUZZ_IOS_LOCK" ;;
	*) echo "$top/tests/fuzz/$1.c" ;;
	esac
}

passed=0
failed=()
for t in $targets; do
	echo "[ RUN      ] $t"
	dir=$out/$t
	seeds=$top/tests/fuzz/corpus/$t
	mkdir -p "$dir/corpus" "$dir/gen"
	log=$dir/build.log
	srcs=($(srcs_of "$t"))
	main=($(src_of "$t"))
	if ! { fobjs=($(objs obj "${srcs[@]}")) && pobjs=($(objs seedobj "${srcs[@]}")); } >"$log" 2>&1 ||
	   ! clang "${cflags[@]}" -fsanitize=fuzzer "${san[@]}" -o "$dir/$t" "${main[@]}" \
		"${fobjs[@]}" "${libs[@]}" >>"$log" 2>&1; then
		tail -30 "$log"
		failed+=("$t: build failed (log: $log)")
		continue
	fi
	# The seed writer, for a target that has one: the same file, built
	# plain with FUZZ_SEED_MAIN.
	rm -rf "$dir/gen" && mkdir -p "$dir/gen"
	if grep -q FUZZ_SEED_MAIN "${main[0]}" &&
	   ! { clang "${cflags[@]}" -DFUZZ_SEED_MAIN -o "$dir/${t}_seeds" "${main[@]}" \
		"${pobjs[@]}" "${libs[@]}" && "$dir/${t}_seeds" "$dir/gen"; } >>"$log" 2>&1; then
		tail -30 "$log"
		failed+=("$t: seed writer failed (log: $log)")
		continue
	fi
	if [ $write_seeds = 1 ]; then
		mkdir -p "$seeds" && cp "$dir"/gen/* "$seeds"/ 2>/dev/null
	fi
	mkdir -p "$seeds"
	(cd "$dir" && "$dir/$t" -max_total_time="$secs" -max_len=16384 -rss_limit_mb=2048 \
		-timeout=20 -print_final_stats=1 "$dir/corpus" "$dir/gen" "$seeds" \
		>"$dir/fuzz.log" 2>&1)
	rc=$?
	grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|Done )' "$dir/fuzz.log" | tail -2
	if [ $rc -ne 0 ]; then
		tail -50 "$dir/fuzz.log"
		crash=$(ls -t "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null | head -1)
		failed+=("$t: fuzzer exited with status $rc (input: ${crash:-see $dir/fuzz.log})")
		continue
	fi
	echo "[       OK ] $t"
	passed=$((passed + 1))
done
echo "[==========] $ntests test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ ${#failed[@]} -gt 0 ]; then
	echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
	for f in "${failed[@]}"; do
		echo "[  FAILED  ] $f"
	done
	exit 1
fi
exit 0
