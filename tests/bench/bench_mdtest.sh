#!/usr/bin/env bash
# bench_mdtest.sh CONF BASELINE_DIR - issue 28's mdtest and IOR figures,
# from the vendored IOR sources (tests/third_party/ior, built by
# tests/integ/build-ior.sh), 4 ranks under mpirun, on a cluster and mount
# of its own (CONF and BASELINE_DIR are not used: the local baseline is a
# directory on the file system that holds the storage daemons'
# directories, as in the other mount benchmarks):
#
#   mdtest-easy  a directory per rank (-u), empty files: create, stat,
#                read (open and close only, no data), remove
#   mdtest-hard  one shared directory, 3,901-byte files written at
#                create and read back (-w 3901 -e 3901)
#   ior-easy     a file per rank (-F), 1 MiB transfers, fsync at close
#   ior-hard     one shared file, 47,008-byte records interleaved by rank
#                (-s segments), fsync at close
#
# mdtest runs on the mount, on the local disk and, with bindfs installed,
# on a FUSE passthrough over that disk (fuse_passthrough_up: what FUSE
# alone costs); ior on the mount (POSIX), through the MPI-IO driver
# (`tessera:` names, independent I/O) and on the local disk (POSIX).
# Rounds alternate the targets; the medians are printed with the ratio to
# the local disk and to the passthrough, and for mdtest-easy issue 28's
# goal (1.5x OrangeFS's figures there, measured on this machine).
# Figures, not a test: it exits 0, or says why it cannot run here.
#
#   MDTEST_EASY_FILES  files per rank, mdtest-easy (default 1000)
#   MDTEST_HARD_FILES  files per rank, mdtest-hard (default 500)
#   IOR_EASY_MIB       MiB per rank, ior-easy (default 64)
#   IOR_HARD_SEGMENTS  records per rank, ior-hard (default 2000: 376 MB)
#   BENCH_ROUNDS       rounds (default 3)
#   BENCH_LOCAL_READS  1: the mount and the driver read local object files
#                      directly (default 0: through the storage daemons,
#                      the message path, as issue 28 compares)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
BIN=$B/bin
N_IOS=4
NP=4
EASY=${MDTEST_EASY_FILES:-1000}
HARD=${MDTEST_HARD_FILES:-500}
EASY_MIB=${IOR_EASY_MIB:-64}
SEGS=${IOR_HARD_SEGMENTS:-2000}
ROUNDS=${BENCH_ROUNDS:-3}

say() { echo "bench_mdtest: $*"; }
[ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] || { say "needs root and /dev/fuse; skipped"; exit 0; }
command -v mpirun >/dev/null && command -v mpicc >/dev/null || { say "needs Open MPI (mpirun, mpicc); skipped"; exit 0; }
[ -f "$B/lib/openmpi/mca_io_romio321.so" ] || { say "the ROMIO component is not built; skipped"; exit 0; }
for p in tessera-fuse tessera-mds tessera-ios; do
	[ -x "$BIN/$p" ] || { say "$BIN/$p is not built; skipped"; exit 0; }
done
log=$(mktemp)
IOR_DIR=$(bash "$top/tests/integ/build-ior.sh" 2>"$log") || { cat "$log"; say "IOR did not build; skipped"; exit 0; }
rm -f "$log"

# (before the mount starts: it reads this once)
export TESSERA_LOCAL_READS=${BENCH_LOCAL_READS:-0}
. "$top/tests/bench/fuse_cluster.sh"
fuse_cluster_up mdtest-bench
fuse_passthrough_up mdtest-bench
export TESSERA_CONFIG=$CONF
. "$top/romio-adio/tessera-mpi-env.sh" "$B"
export OMPI_MCA_btl=self,vader
# 4 ranks on 2 cores: a rank waiting in MPI gives its core to the mount
# and the daemons (and to the other ranks on the local disk alike).
export OMPI_MCA_mpi_yield_when_idle=1
run=(mpirun --oversubscribe -np "$NP")
[ "$(id -u)" -ne 0 ] || run+=(--allow-run-as-root)
R=$D/results   # lines: BENCH PHASE TARGET VALUE

# mdtest_run NAME TARGET DIR ARGS...: one mdtest, its phases' rates.
mdtest_run() {
	local name=$1 target=$2 dir=$3 out=$D/out
	shift 3
	"${run[@]}" "$IOR_DIR/mdtest" -d "$dir/$name" "$@" >"$out" 2>&1 ||
		{ cat "$out" >&2; say "$name on $target failed"; return 0; }
	awk -v b="$name" -v t="$target" '
		/^SUMMARY rate/ { on = 1 }
		on && $1 == "File" && $2 ~ /^(creation|stat|read|removal)$/ { print b, $2, t, $5 }
		/^SUMMARY time/ { on = 0 }' "$out" >>"$R"
}

# ior_run NAME TARGET API NAME_OF_FILE ARGS...: one ior, write and read
# mean MiB/s.
ior_run() {
	local name=$1 target=$2 api=$3 file=$4 out=$D/out
	shift 4
	"${run[@]}" "$IOR_DIR/ior" -a "$api" -o "$file" "$@" >"$out" 2>&1 ||
		{ cat "$out" >&2; say "$name on $target failed"; return 0; }
	awk -v b="$name" -v t="$target" '
		/^Summary of all tests/ { on = 1; next }
		on && ($1 == "write" || $1 == "read") { print b, $1, t, $4 }' "$out" >>"$R"
}

mkdir -p "$M/md" "$D/local/md" "$M/ior" "$D/local/ior" ${PT:+"$PT/md"}
"$BIN/tessera" -c "$CONF" mkdir /ior-driver >/dev/null 2>&1 || true
for ((r = 1; r <= ROUNDS; r++)); do
	for t in mount local ${PT:+passthrough}; do
		case $t in
		mount) dir=$M/md ;;
		local) dir=$D/local/md ;;
		passthrough) dir=$PT/md ;;
		esac
		mdtest_run mdtest-easy "$t" "$dir" -F -u -N 1 -n "$EASY"
		mdtest_run mdtest-hard "$t" "$dir" -F -N 1 -n "$HARD" -w 3901 -e 3901
	done
	for t in mount driver local; do
		case $t in
		mount) api=POSIX pre=$M/ior ;;
		driver) api=MPIIO pre=tessera:/ior-driver ;;
		local) api=POSIX pre=$D/local/ior ;;
		esac
		ior_run ior-easy "$t" "$api" "$pre/easy" -F -e -w -r -C -t 1m -b "${EASY_MIB}m"
		ior_run ior-hard "$t" "$api" "$pre/hard" -e -w -r -C -t 47008 -b 47008 -s "$SEGS"
	done
done

echo "== mdtest and IOR (tests/third_party/ior, $(sed -n 's/^ *commit *\([0-9a-f]\{7\}\).*/\1/p' "$top/tests/third_party/ior/PINNED")), $NP ranks, medians of $ROUNDS alternated rounds"
echo "   mdtest-easy ${EASY}, mdtest-hard ${HARD} files per rank (read: open, read -e bytes, close); ior-easy ${EASY_MIB} MiB per rank, ior-hard $SEGS x 47008 B per rank; local reads $([ "$TESSERA_LOCAL_READS" = 1 ] && echo on || echo "off (message path)")"
# Issue 28's goal for mdtest-easy: 1.5x OrangeFS's stat, open-close
# (mdtest's "read" without data) and remove on this machine.
awk '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j - 1]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1 SUBSEP $2 SUBSEP $3; v[k] = v[k] " " $4; if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[++n] = $1 SUBSEP $2 } }
END {
	goal["mdtest-easy", "stat"] = 1.5 * 19207
	goal["mdtest-easy", "read"] = 1.5 * 29585
	goal["mdtest-easy", "removal"] = 1.5 * 1243
	for (i = 1; i <= n; i++) {
		split(order[i], p, SUBSEP)
		unit = p[1] ~ /^mdtest/ ? "op/s" : "MiB/s"
		l = median(v[p[1], p[2], "local"])
		for (t = 1; t <= 2; t++) {
			tg = t == 1 ? "mount" : "driver"
			if (!((p[1], p[2], tg) in v)) continue
			m = median(v[p[1], p[2], tg])
			printf "%-12s %-8s %-6s %10.1f %-5s  local %10.1f %-5s  ratio %6.3f", p[1], p[2], tg, m, unit, l, unit, l ? m / l : 0
			if ((p[1], p[2], "passthrough") in v && tg == "mount") {
				f = median(v[p[1], p[2], "passthrough"])
				printf "  passthrough %10.1f  ratio %6.3f", f, f ? m / f : 0
			}
			if ((p[1], p[2]) in goal && tg == "mount")
				printf "  goal %.0f (%.2f of it)", goal[p[1], p[2]], m / goal[p[1], p[2]]
			printf "\n"
		}
	}
}' "$R"
