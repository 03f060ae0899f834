#!/usr/bin/env bash
# netns.sh up|down TAG RATE DIR [N_IOS] - a Tessera file system on a
# network that is not loopback, all on this machine: two storage "nodes",
# Linux network namespaces ts-TAG-n0 and ts-TAG-n1, each joined to a bridge
# (tsb-TAG, in the root namespace, where the clients run) by a veth pair
# whose two ends are limited to RATE (100mbit, 1gbit, 500kbit: a number and
# kbit, mbit or gbit) by a token bucket (tbf, 1 ms of burst), so each node's link is RATE each way. The metadata
# daemon and the even storage daemons run on node 0, the odd ones on node 1
# (N_IOS, default 4), at addresses of a private /24 that exists only on
# that bridge; nothing leaves the machine. DIR gets the config
# (DIR/tessera.conf), the daemons' data, logs and PID files, as
# deploy/tessera-local's. Needs root and iproute2 (ip, tc). `down` stops the
# daemons by PID and deletes the namespaces and the bridge. NETNS_CONF_LINES
# (config lines, newline-separated) is added to the generated config.
set -euo pipefail
cmd=${1:?usage: netns.sh up|down TAG RATE DIR [N_IOS]}
tag=${2:?tag}
rate=${3:?rate}
var=$(realpath -m "${4:?dir}")
n_ios=${5:-4}
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TESSERA_BIN:-${TESSERA_BUILD:-$top/build}/bin}
# The subnet from the tag: 10.77.S.0/24 (ours only: on the bridge and in
# the namespaces, routed nowhere else).
sub=$((10 + $(printf '%s' "$tag" | cksum | cut -d' ' -f1) % 200))
net=10.77.$sub
br=tsb-$tag
# The bucket: 1 ms at RATE, at least 16 KB, so a small transfer is not
# carried by the burst alone.
case $rate in
*gbit) bps=$((${rate%gbit} * 1000000000)) ;;
*mbit) bps=$((${rate%mbit} * 1000000)) ;;
*kbit) bps=$((${rate%kbit} * 1000)) ;;
*) echo "netns.sh: RATE is a number with kbit, mbit or gbit, not '$rate'" >&2; exit 2 ;;
esac
burst=$((bps / 8000 > 16000 ? bps / 8000 : 16000))
ns() { echo "ts-$tag-n$1"; }

down() {
	for pidfile in "$var"/run/*.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
		fi
		rm -f "$pidfile"
	done
	for k in 0 1; do ip netns del "$(ns $k)" 2>/dev/null || true; done
	ip link del "$br" 2>/dev/null || true
}

up() {
	down
	mkdir -p "$var/log" "$var/run"
	ip link add name "$br" type bridge
	ip addr add "$net.1/24" dev "$br"
	ip link set "$br" up
	for k in 0 1; do
		local n v=ts$tag$k
		n=$(ns $k)
		ip netns add "$n"
		ip link add "$v" type veth peer name "${v}p"
		ip link set "${v}p" netns "$n"
		ip link set "$v" master "$br" up
		ip -n "$n" link set lo up
		ip -n "$n" addr add "$net.$((10 + k))/24" dev "${v}p"
		ip -n "$n" link set "${v}p" up
		# A token bucket each way: toward the node on the bridge's side,
		# from the node inside its namespace.
		tc qdisc add dev "$v" root tbf rate "$rate" burst "$burst" latency 100ms
		tc -n "$n" qdisc add dev "${v}p" root tbf rate "$rate" burst "$burst" latency 100ms
	done
	local args=(--mds "$net.10:7400")
	for i in $(seq 0 $((n_ios - 1))); do args+=(--ios "$net.$((10 + i % 2)):$((7401 + i))"); done
	# a munged of our own (its socket is a file: every namespace reaches
	# it), stopped by `down` through its pid file in run/
	. "$top/tests/integ/munged.sh"
	munged_start "$var/run" || exit 1
	args+=(--munge-socket "$MUNGE_SOCK")
	"$top/deploy/tessera-genconfig" "${args[@]}" --key-file "$var/tessera.key" >"$var/tessera.conf"
	# the caller's own config lines (the study's tunables), one a line
	[ -z "${NETNS_CONF_LINES:-}" ] || printf '%s\n' "$NETNS_CONF_LINES" >>"$var/tessera.conf"
	start mds 0 "$bin/tessera-mds" -c "$var/tessera.conf" -d "$var/mds"
	for i in $(seq 0 $((n_ios - 1))); do
		start "ios$i" $((i % 2)) "$bin/tessera-ios" -c "$var/tessera.conf" -d "$var/ios$i" -i "$i"
	done
	# Reachable from the root namespace, where the clients run.
	timeout 5 bash -c "</dev/tcp/$net.11/7402" 2>/dev/null || { echo "netns.sh: node 1 ($net.11:7402) does not answer" >&2; exit 1; }
	echo "netns.sh: 1 mds + $n_ios ios on $net.10 and $net.11, links of $rate; config $var/tessera.conf"
}

start() { # NAME NODE CMD...
	local name=$1 node=$2 pidfile=$var/run/$1.pid
	shift 2
	# the daemons refuse a log that group or others can read
	(umask 077 && touch "$var/log/$name.log")
	nohup ip netns exec "$(ns "$node")" "$@" -p "$pidfile" >>"$var/log/$name.log" 2>&1 </dev/null &
	for _ in $(seq 100); do
		[ -f "$pidfile" ] && return
		kill -0 $! 2>/dev/null || { echo "netns.sh: $name failed to start:" >&2; tail -5 "$var/log/$name.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "netns.sh: $name did not become ready; see $var/log/$name.log" >&2
	exit 1
}

case $cmd in
up) up ;;
down) down ;;
*) echo "usage: netns.sh up|down TAG RATE DIR [N_IOS]" >&2; exit 2 ;;
esac
