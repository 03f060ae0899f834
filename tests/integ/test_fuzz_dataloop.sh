#!/usr/bin/env bash
# Fuzz the dataloop decoder with libFuzzer for a short while.
#
# Builds tests/fuzz/fuzz_dataloop_decode.c with the dataloops sources, the
# decoder (proto/dataloop.c) and the generated message code into
# $TESSERA_BUILD/fuzz/, writes a seed corpus of builder-made encodings, and
# runs the fuzzer for 20 s (10 s in a sanitizer build dir, where it runs a
# second time). Prints CMocka-style summary lines for tests/run-suites.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TESSERA_BUILD:-$top/build}
name=fuzz_dataloop_decode
out=$build/fuzz
secs=20
case $build in *san*) secs=10 ;; esac

summary_fail() {
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  FAILED  ] 1 test(s), listed below:"
	echo "[  FAILED  ] $name: $1"
	exit 1
}

echo "[==========] Running 1 test(s)."
echo "[ RUN      ] $name"
if ! command -v clang >/dev/null 2>&1; then
	echo "[  SKIPPED ] $name: clang not found"
	echo "[==========] 1 test(s) run."
	echo "[  PASSED  ] 0 test(s)."
	echo "[  SKIPPED ] 1 test(s), listed below:"
	echo "[  SKIPPED ] $name: clang is not installed"
	exit 0
fi
mkdir -p "$out" || summary_fail "cannot create $out"

# The decoder (proto/dataloop.c) over the dataloops library and the
# build's generated message code, each seeing only the public headers of
# the parts it uses, as in the build.
gen=$build/proto/tessera.pb-c.c
inc=$build/include
if [ ! -f "$gen" ] || [ "$top/proto/tessera.proto" -nt "$gen" ] ||
   [ ! -e "$inc/proto/tproto.h" ] || [ ! -e "$inc/dataloops/tdl.h" ]; then
	summary_fail "$build is not built or is older than proto/tessera.proto (run make)"
fi
srcs=("$top"/dataloops/*.c "$top/proto/dataloop.c" "$gen")
cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -I"$inc/dataloops" -I"$inc/proto")
clang "${cflags[@]}" -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -o "$out/$name" \
	"$top/tests/fuzz/$name.c" "${srcs[@]}" -lprotobuf-c \
	>"$out/build.log" 2>&1 || { cat "$out/build.log"; summary_fail "build failed"; }
clang "${cflags[@]}" -DFUZZ_SEED_MAIN -o "$out/${name}_seeds" \
	"$top/tests/fuzz/$name.c" "${srcs[@]}" -lprotobuf-c \
	>>"$out/build.log" 2>&1 || { cat "$out/build.log"; summary_fail "seed build failed"; }

rm -rf "$out/seeds" "$out/corpus"
mkdir -p "$out/seeds" "$out/corpus"
"$out/${name}_seeds" "$out/seeds" || summary_fail "seed writer failed"
# Hand-made seeds: a contig of 4 bytes; a 2-node cycle.
printf '\x12\x08\x08\x01\x10\x08\x28\x01\x50\x08\x18\x01' >"$out/seeds/hand-contig"
printf '\x12\x04\x08\x01\x28\x02\x12\x04\x08\x01\x28\x00\x18\x02' >"$out/seeds/hand-cycle"

cd "$out" || summary_fail "cannot enter $out"
"$out/$name" -max_total_time=$secs -max_len=4096 -rss_limit_mb=2048 \
	-timeout=10 -print_final_stats=1 "$out/corpus" "$out/seeds" \
	>"$out/fuzz.log" 2>&1
rc=$?
grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|Done )' "$out/fuzz.log" | tail -3
if [ $rc -ne 0 ]; then
	tail -40 "$out/fuzz.log"
	summary_fail "fuzzer exited with status $rc (crash input in $out)"
fi
echo "[       OK ] $name"
echo "[==========] 1 test(s) run."
echo "[  PASSED  ] 1 test(s)."
