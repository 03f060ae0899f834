#!/usr/bin/env bash
# test_study.sh - the study's machinery (tests/study/study.py): a tiny HPIO
# sweep over MPI-IO (2 points, verify on) and four request-count rows give a
# CSV, PNGs and a report, with local reads off (Tab. 3.1's sieving and
# two-phase counts as the dissertation's), timed phases and each row's
# record (tests/study/check_csv.py); the report's intervals and verdicts
# (tests/study/test_report.py); a second run resumes (runs nothing again); a run
# stopped by SIGTERM leaves no daemon and resumes where it stopped; chapter 8's
# versioned writes, reads and log storage (tests/bench/bench_version.c); chapters
# 3-4's sweeps (tests/study/patterns.py): request counts as the patterns imply
# them, and verdicts that rest on apart intervals only; S3aSim's strategies and
# locks (romio-adio/bench/mpi_s3asim.c); bad --net, --nodes and --cluster
# refused before anything starts; and, where `ip netns` and tc work, simulated
# links (tests/study/netns.sh: the qdiscs in place, packets through them, ranks
# on their nodes, the added latency where the kernel has netem) and a tiny run
# with its ranks and daemons on 2 namespaces behind 100 Mbit/s links.
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TESSERA_BUILD:-$top/build}
. "$top/tests/integ/checks.sh"
# The plain build's MPI programs (a sanitizer build has none).
case $B in */san) B=${B%/san} ;; esac
export TESSERA_BUILD=$B
for f in romio-adio/bench/mpi_hpio romio-adio/bench/mpi_patterns romio-adio/bench/mpi_s3asim lib/openmpi/mca_io_romio321.so; do
	[ -e "$B/$f" ] || skip_all test_study "$B/$f is not built (the MPI parts need Open MPI: make deps)"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-study.XXXXXX")
tag=c$(($$ % 10000))
trap 'bash "$top/tests/study/netns.sh" down "$tag" 100mbit "$work/net/var" >/dev/null 2>&1
	bash "$top/tests/study/netns.sh" down "${tag}l" 100mbit "$work/links" >/dev/null 2>&1; rm -rf "$work"' EXIT
study() { python3 "$top/tests/study/study.py" --tiny "$@"; }
rows() { tail -n +2 "$1" | wc -l; }
has_matplotlib() { /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || python3 -c 'import matplotlib' 2>/dev/null; }

tiny_sweep() {
	study --out "$work/loop" --parts hpio,tables >"$work/loop.log" 2>&1 || { cat "$work/loop.log"; exit 1; }
	# 2 points x (list, datatype, ufs posix) x 4 cases x 3 repetitions
	[ "$(rows "$work/loop/hpio.csv")" -eq 72 ] || { echo "hpio.csv: $(rows "$work/loop/hpio.csv") rows, not 72"; exit 1; }
	# every repetition verified
	if cut -d, -f13 "$work/loop/hpio.csv" | tail -n +2 | grep -vx ok; then
		echo "hpio.csv: a repetition not verified (above)"
		exit 1
	fi
	# bandwidths are numbers above 0
	awk -F, 'NR > 1 && !($11 > 0 && $12 > 0) { print "bad row: " $0; bad = 1 } END { exit bad }' "$work/loop/hpio.csv"
	# Tab. 3.1 by list, datatype, sieving and two-phase I/O: the tile's
	# 2.25 MiB per client read
	[ "$(rows "$work/loop/tables.csv")" -eq 4 ]
	python3 "$top/tests/study/check_csv.py" "$work/loop"
	grep -q '^# The HPIO study' "$work/loop/report.md"
	grep -q 'Tab. 3.1' "$work/loop/report.md"
	grep -q 'Guidelines of §5.5' "$work/loop/report.md"
	grep -q '95 % t-interval' "$work/loop/report.md"
	grep -q '^## Where the time goes' "$work/loop/report.md"
	grep -q '`sieve_gap` 4096, `sieve_span` 4194304' "$work/loop/report.md"
	if has_matplotlib; then
		[ -s "$work/loop/fig5.2-count-write.png" ]
		grep -q 'fig5.2-count-write.png' "$work/loop/report.md"
	fi
	# no daemon left
	[ -z "$(ls "$work/loop/var/run" 2>/dev/null)" ]
}

resume_runs_nothing() {
	[ -f "$work/loop/hpio.csv" ] || exit 1
	study --out "$work/loop" --parts hpio,tables >"$work/again.log" 2>&1 || { cat "$work/again.log"; exit 1; }
	grep -q 'study: 0 run, 10 already done' "$work/again.log" || { cat "$work/again.log"; exit 1; }
	[ "$(rows "$work/loop/hpio.csv")" -eq 72 ]
}

interrupted_resumes() {
	# stopped after its first point is in the CSV
	python3 "$top/tests/study/study.py" --tiny --out "$work/stop" --parts hpio \
		--methods list,datatype >"$work/stop.log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		[ "$(rows "$work/stop/hpio.csv" 2>/dev/null || echo 0)" -ge 12 ] && break
		sleep 0.1
	done
	kill -TERM "$pid"
	if wait "$pid"; then
		echo "the study exited 0 after SIGTERM"
		exit 1
	fi
	grep -q 'interrupted; run it again to resume' "$work/stop.log" || { cat "$work/stop.log"; exit 1; }
	[ -z "$(ls "$work/stop/var/run" 2>/dev/null)" ] || { echo "daemons left running"; exit 1; }
	done_before=$(($(rows "$work/stop/hpio.csv") / 12))
	study --out "$work/stop" --parts hpio --methods list,datatype >"$work/stop2.log" 2>&1 ||
		{ cat "$work/stop2.log"; exit 1; }
	grep -q "study: $((4 - done_before)) run, $done_before already done" "$work/stop2.log" || { cat "$work/stop2.log"; exit 1; }
	[ "$(rows "$work/stop/hpio.csv")" -eq 48 ]
	# each (point, method, case, repetition) once
	[ "$(tail -n +2 "$work/stop/hpio.csv" | cut -d, -f1-7 | sort | uniq -d | wc -l)" -eq 0 ]
}

# The study on 2 nodes (ranks and daemons), with a latency where netem
# works: every row says the network, so does the report.
net_run() {
	study --out "$work/net" --parts hpio --methods list,datatype --net "$net_spec" --nodes 2 \
		--tag "$tag" >"$work/net.log" 2>&1 || { cat "$work/net.log"; exit 1; }
	[ "$(rows "$work/net/hpio.csv")" -eq 48 ]
	label="100mbit${net_lat:+ $net_lat}${net_by:+($net_by)} 2nodes"
	python3 - "$work/net/hpio.csv" "$label" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["net"] == sys.argv[2] for r in rows), {r["net"] for r in rows}
PY
	grep -q "simulated $label\*\*" "$work/net/report.md"
	grep -q 'share \*\*2 "nodes"\*\*' "$work/net/report.md"
	# the namespaces are gone again
	! ip netns list | grep -q "ts-$tag-"
}

# netns.sh's links, checked from outside: each node's qdisc (netem with a
# latency, else tbf) carries packets, mpirun's ranks start on their nodes
# (rank r on node r % 2), and with a latency a TCP connect between two
# nodes (one round trip: SYN, SYN-ACK) takes at least twice the latency
# (each node's packets wait it; netem and the delay line hold every
# packet that long, so the bound holds however loaded the machine is).
net_links() {
	local t=${tag}l var=$work/links kind=tbf
	[ "$net_by" != "" ] || [ -z "$net_lat" ] || kind=netem
	bash "$top/tests/study/netns.sh" up "$t" "$net_spec" "$var" 2 2
	[ "$(wc -l <"$var/nodes")" -eq 2 ]
	# ranks on their nodes
	mpirun --allow-run-as-root --oversubscribe -np 4 "$top/tests/study/netns-rank.sh" "$var" \
		ip netns identify | sort | uniq -c >"$var/ranks"
	grep -Eq "^ +2 ts-$t-n0\$" "$var/ranks" && grep -Eq "^ +2 ts-$t-n1\$" "$var/ranks" ||
		{ cat "$var/ranks"; exit 1; }
	# the round trip from node 1 to the metadata daemon on node 0
	ip netns exec "ts-$t-n1" python3 - \
		"$(awk '$1 == "mds" { sub(/:.*/, "", $3); print $3; exit }' "$var/tessera.conf")" \
		"${net_lat%us}" <<'PY'
import socket, sys, time
best = 1e9
for _ in range(20):
    c = socket.socket()
    t = time.perf_counter()
    c.connect((sys.argv[1], 7400))
    best = min(best, time.perf_counter() - t)
    c.close()
want = 2 * int(sys.argv[2] or 0) * 1e-6
print("connect round trip %.0f us, at least %.0f us wanted" % (best * 1e6, want * 1e6))
assert best >= want, "the round trip is shorter than twice the latency"
PY
	for k in 0 1; do
		tc -n "ts-$t-n$k" -s qdisc show dev "ts$t${k}p" >"$var/tc$k"
		grep -q "^qdisc $kind " "$var/tc$k" || { cat "$var/tc$k"; exit 1; }
		# packets went through the node's own qdisc
		awk '/Sent/ { if ($4 > 0) ok = 1 } END { exit !ok }' "$var/tc$k" || { cat "$var/tc$k"; exit 1; }
	done
	if [ -n "$net_by" ]; then # the delay line's taps carried them
		for d in "tsi-$t" "tsd-$t"; do
			[ "$(cat "/sys/class/net/$d/statistics/tx_packets")" -gt 0 ] || { ip -s link show "$d"; exit 1; }
		done
	fi
	bash "$top/tests/study/netns.sh" down "$t" "$net_spec" "$var"
	! ip netns list | grep -q "ts-$t-"
	! ip link show "tsb-$t" 2>/dev/null
	! ip link show "tsi-$t" 2>/dev/null
	[ ! -e "$var/run/delayline.pid" ]
}

# Chapter 8 (bench_version on 8 storage daemons of its own): the three
# methods in both sweeps, reads with 0 and 10 unmerged versions, the log's
# storage, every row recorded, the report's verdicts; no daemon left.
versions_tiny() {
	study --out "$work/ver" --parts versions >"$work/ver.log" 2>&1 || { cat "$work/ver.log"; exit 1; }
	# (count, spacing) x 3 methods x 2 repetitions, 2 x 2 reads, 2 storage rows
	[ "$(grep -c '^write,' "$work/ver/versions.csv")" -eq 12 ] || { cat "$work/ver/versions.csv"; exit 1; }
	[ "$(grep -c '^read,' "$work/ver/versions.csv")" -eq 4 ]
	[ "$(grep -c '^storage,' "$work/ver/versions.csv")" -eq 2 ]
	awk -F, 'NR > 1 && $1 == "write" && !($11 > 0 && $12 > 0) { print "bad row: " $0; bad = 1 }
		NR > 1 && $1 == "read" && !($16 > 0) { print "bad row: " $0; bad = 1 }
		NR > 1 && $1 == "storage" && !($18 > 0) { print "bad row: " $0; bad = 1 }
		END { exit bad }' "$work/ver/versions.csv"
	# 10 versions unmerged at the version server while read
	grep -q '^read,,,,,,,0,,,,,,,10,[0-9.e-]*,10,' "$work/ver/versions.csv"
	python3 - "$work/ver/versions.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    assert r["n_ios"] == "8" and r["strip_size"] and float(r["load1"]) >= 0, r
    assert r["commit"] and r["net"] == "loopback", r
PY
	grep -q '^## Versioning (chapter 8' "$work/ver/report.md"
	grep -Eq '"more than triple" \*\*(does not reproduce|reproduces)\*\*' "$work/ver/report.md"
	grep -Eq '"more than twice" \*\*(does not reproduce|reproduces)\*\*' "$work/ver/report.md"
	grep -q '| 10 | 10 |' "$work/ver/report.md"
	if has_matplotlib; then [ -s "$work/ver/fig8.3-count.png" ]; fi
	[ -z "$(ls "$work/ver/var-versions/run" 2>/dev/null)" ]
}

# Chapters 3-4's sweeps (tests/study/patterns.py), tiny: 1-D cyclic, 2 ranks,
# 1 MiB, 256 accesses a client of 2 KiB, by POSIX, list and datatype I/O both
# ways, with local reads off. Asserted without timing: the daemons' requests
# a client a call are what the pattern implies: POSIX a request a region
# (256, none crosses a strip), list 64 regions a request, each batch (256 KiB
# of file) cut over the 4 storage daemons (16), datatype one request a
# daemon (4: 128 KiB each, under max_io); the bytes accessed are the bytes
# wanted, and only list and datatype send descriptions.
patterns_tiny() {
	study --out "$work/pat" --parts patterns >"$work/pat.log" 2>&1 || { cat "$work/pat.log"; exit 1; }
	# 3 methods x 2 directions x 2 repetitions (a warm-up call dropped)
	[ "$(rows "$work/pat/patterns.csv")" -eq 12 ] || { cat "$work/pat/patterns.csv"; exit 1; }
	python3 - "$work/pat/patterns.csv" <<'PY' || exit 1
import csv, sys
want = {"posix": 256, "list": 16, "datatype": 4}
bad = []
for r in csv.DictReader(open(sys.argv[1])):
    m, req = r["method"], float(r["requests"])
    if req != want[m] or float(r["expected_requests"]) != req:
        bad.append("%s %s: %s requests a call, implied %s, want %d" % (
            m, r["op"], r["requests"], r["expected_requests"], want[m]))
    if int(r["bytes_desired"]) != 524288 or float(r["bytes_accessed"]) != 524288:
        bad.append("%s %s: %s bytes wanted, %s accessed, not 512 KiB" % (
            m, r["op"], r["bytes_desired"], r["bytes_accessed"]))
    if (float(r["desc_bytes"]) > 0) != (m != "posix"):
        bad.append("%s %s: %s description bytes" % (m, r["op"], r["desc_bytes"]))
    if not float(r["seconds"]) > 0 or r["figure"] != {"read": "3.9", "write": "3.10"}[r["op"]]:
        bad.append("bad row %s" % r)
    if r["local_reads"] != "0" or not r["commit"] or r["net"] != "loopback" or not r["strip_size"]:
        bad.append("record of %s" % r)
print("\n".join(bad[:10]))
sys.exit(1 if bad else 0)
PY
	grep -q '^## Bandwidth sweeps of chapters 3-4' "$work/pat/report.md"
	grep -Eq '^\| 3\.17 \|.*\*\*not applicable\*\*' "$work/pat/report.md"
	grep -Eq '^\| 3\.10 \|.*\*\*(reproduced|differs|undecided|partly)' "$work/pat/report.md"
	if has_matplotlib; then [ -s "$work/pat/fig3.9-cyclic-read.png" ]; fi
	[ -z "$(ls "$work/pat/var-patterns/run" 2>/dev/null)" ]
}

# S3aSim (mpi_s3asim on 4 storage daemons of its own): the four strategies
# x no-sync/sync and WW-List with list-one-try locks; every run's output
# file checked against the model (verify ok) and the same size, every row
# recorded, the report's section; no daemon left.
s3asim_tiny() {
	study --out "$work/s3a" --parts s3asim >"$work/s3a.log" 2>&1 || { cat "$work/s3a.log"; exit 1; }
	# 4 strategies x 2 syncs x 2 repetitions; WW-List x (off, list:one-try) x 2
	[ "$(grep -c '^strategies,' "$work/s3a/s3asim.csv")" -eq 16 ] || { cat "$work/s3a/s3asim.csv"; exit 1; }
	[ "$(grep -c '^locks,' "$work/s3a/s3asim.csv")" -eq 4 ]
	python3 - "$work/s3a/s3asim.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert {r["verify"] for r in rows} == {"ok"}, {r["verify"] for r in rows}
assert len({r["bytes"] for r in rows}) == 1 and int(rows[0]["bytes"]) > 0
assert {r["strategy"] for r in rows} == {"mw", "ww-coll", "ww-posix", "ww-list"}
assert {r["atomic"] for r in rows if r["part"] == "locks"} == {"off", "list:one-try"}
for r in rows:
    assert float(r["total_s"]) > 0 and float(r["w_compute_s"]) > 0, r
    assert r["commit"] and r["net"] == "loopback" and r["local_reads"] == "0", r
    assert r["sieve_gap"] == "4096" and r["strip_size"] and float(r["load1"]) >= 0, r
PY
	grep -q '^## S3aSim (chapter 6' "$work/s3a/report.md"
	grep -q '"WW-List beats all strategies", nosync' "$work/s3a/report.md"
	grep -q '"list-one-try stays between 70 % and 87 %' "$work/s3a/report.md"
	if has_matplotlib; then
		[ -s "$work/s3a/fig6.2-6.7-s3asim.png" ] && [ -s "$work/s3a/fig7.9-7.10-s3asim.png" ]
	fi
	[ -z "$(ls "$work/s3a/var-s3asim/run" 2>/dev/null)" ]
}

report_statistics() { python3 "$top/tests/study/test_report.py"; }
patterns_arithmetic() { python3 "$top/tests/study/test_report_patterns.py"; }

# A network the study cannot have is refused before anything starts, with
# the reason: bad rates and latencies, --nodes without --net, --cluster
# beside --net, with parts that start clusters of their own, or naming
# daemons that do not answer.
bad_networks() {
	refused() { # WHAT ARGS...
		local what=$1
		shift
		! study --out "$work/badnet" "$@" 2>"$work/badnet.err" >/dev/null
		grep -q -- "$what" "$work/badnet.err" || { echo "$*:"; cat "$work/badnet.err"; exit 1; }
		[ ! -e "$work/badnet" ]
	}
	refused "its RATE is a number with kbit, mbit or gbit" --net 10xbit
	refused "its LATENCY is a whole number with us or ms" --net 100mbit,5s
	refused "LATENCY 2000ms is more than 1 s" --net 100mbit,2000ms
	refused "its RATE is" --net ,50us
	refused "needs --net" --nodes 2
	refused "from 1 to 16" --net 100mbit --nodes 17
	port=$(free_ports 2)
	printf 'mds = 127.0.0.1:%d\nios = 127.0.0.1:%d\n' "$port" $((port + 1)) >"$work/gone.conf"
	refused "no --net or --nodes" --cluster "$work/gone.conf" --net 100mbit
	refused "start clusters of their own" --cluster "$work/gone.conf" --parts hpio,versions
	refused "cannot set the tunables" --cluster "$work/gone.conf" --sieve-gap 0
	refused "no such config file" --cluster "$work/none.conf"
	refused "gone.conf: unreachable, so nothing was run" --cluster "$work/gone.conf"
	grep -q "storage daemon 0 (127.0.0.1:$((port + 1)))" "$work/badnet.err"
}

# NETNS_DELAY=netem on a kernel without netem: refused, naming it.
netem_refused() {
	! NETNS_DELAY=netem bash "$top/tests/study/netns.sh" check "$tag" "$net_spec" 2>"$work/netem.err"
	grep -q 'no netem qdisc (sch_netem' "$work/netem.err" || { cat "$work/netem.err"; exit 1; }
}

# A sieve gap wider than the span is refused before any daemon starts.
bad_tunables() {
	# (if, not "! cmd": set -e ignores a negated command's status)
	if study --out "$work/bad" --sieve-gap 8192 --sieve-span 4096 2>"$work/bad.err"; then
		echo "--sieve-gap 8192 --sieve-span 4096 was accepted"
		exit 1
	fi
	grep -q 'sieve-gap 8192 exceeds --sieve-span 4096' "$work/bad.err" || { cat "$work/bad.err"; exit 1; }
	if study --out "$work/bad" --sieve-span 128M 2>/dev/null; then
		echo "--sieve-span 128M was accepted"
		exit 1
	fi
	[ ! -e "$work/bad" ]
}

# A checksum block the daemons would refuse (not a power of two, or out
# of 512 B to 1 MiB) is refused before any daemon starts.
bad_csum_block() {
	local b
	for b in 3000 256 2097152; do
		if study --out "$work/badcsum" --csum-block "$b" 2>"$work/badcsum.err"; then
			echo "--csum-block $b was accepted"
			exit 1
		fi
		grep -q "csum-block $b: a power of two from 512 to 1 MiB" "$work/badcsum.err" ||
			{ cat "$work/badcsum.err"; exit 1; }
	done
	[ ! -e "$work/badcsum" ]
}

check report_intervals_and_verdicts report_statistics
check patterns_implied_requests_and_verdicts patterns_arithmetic
check bad_csum_block_refused bad_csum_block
check bad_sieve_parameters_refused bad_tunables
check tiny_sweep_csv_plots_report tiny_sweep
check resume_runs_nothing_again resume_runs_nothing
check versions_tiny_csv_report versions_tiny
check patterns_tiny_request_counts patterns_tiny
check s3asim_tiny_csv_report s3asim_tiny
check interrupted_study_resumes interrupted_resumes
check bad_networks_refused bad_networks
# 100 Mbit/s links with 200 us of latency: netem's, else the delay line's
# (net_by), else none (the reason is netns.sh check's)
net_lat=200us net_by=
net_spec=100mbit,$net_lat
if ! why=$(bash "$top/tests/study/netns.sh" check "$tag" "$net_spec" 2>&1); then
	skip_check net_latency "${why#netns.sh: }"
	net_lat= net_spec=100mbit
elif [ "$why" = "delay: delayline" ]; then
	net_by=delayline
	# asked for netem where there is none: refused, naming it
	check netem_asked_refused netem_refused
fi
if why=$(bash "$top/tests/study/netns.sh" check "$tag" "$net_spec" 2>&1); then
	check net_links_on_2_nodes net_links
	check net_run_on_2_nodes net_run
else
	skip_check net_links_on_2_nodes "${why#netns.sh: }"
	skip_check net_run_on_2_nodes "${why#netns.sh: }"
fi
checks_done
