#!/usr/bin/env bash
# netns.sh up|down|check TAG NET DIR [N_IOS] [NODES] - a Tessera file system
# on a network that is not loopback, all on this machine: NODES "nodes"
# (default 2), Linux network namespaces ts-TAG-n0 ... , each joined to a
# bridge (tsb-TAG, in the root namespace) by a veth pair. NET is RATE or
# RATE,LATENCY: RATE (100mbit, 1gbit, 500kbit: a number and kbit, mbit or
# gbit) limits each node's link each way; LATENCY (50us, 1ms: a number and
# us or ms) delays every packet a node (or the root namespace) sends by that
# much, so a one-way trip between two nodes takes LATENCY more and a round
# trip 2 x LATENCY. Rate alone is a token bucket (tbf, 1 ms of burst) on both
# ends of each veth; with a latency the node's end gets tc netem (delay and
# rate in one qdisc), the bridge's end keeps the bucket and the bridge
# itself delays what the root namespace sends. A kernel without netem
# (sch_netem) gets a delay line in user space instead (delayline.py: tc's
# mirred sends every frame put on the bridge to a tap, and the delay line
# writes it into a tap on the bridge LATENCY later; each node's address is
# a static entry of the bridge's table): the latency is then at least
# LATENCY, plus the delay line's own cost. NETNS_DELAY=netem or delayline
# picks one; `check` prints which ("delay: netem"). The metadata daemon runs on node 0, storage daemon i on node
# i % NODES (N_IOS, default 4), at addresses of a private /24 that exists
# only on that bridge; nothing leaves the machine. DIR gets the config
# (DIR/tessera.conf), the daemons' data, logs and PID files, as
# deploy/tessera-local's, and DIR/nodes (the namespaces, one a line) and
# DIR/subnet for tests/study/netns-rank.sh, which starts MPI ranks on the
# nodes. Needs root and iproute2 (ip, tc). `check` only says whether NET is
# valid and can be simulated here (exit 2: bad NET, 3: not here, with the
# reason). `down` stops the daemons by PID and deletes the namespaces and
# the bridge. NETNS_CONF_LINES (config lines, newline-separated) is added
# to the generated config.
set -euo pipefail
usage="usage: netns.sh up|down|check TAG NET DIR [N_IOS] [NODES]"
cmd=${1:?$usage}
tag=${2:?tag}
spec=${3:?net}
var=$(realpath -m "${4:-.}")
n_ios=${5:-4}
n_nodes=${6:-2}
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TESSERA_BIN:-${TESSERA_BUILD:-$top/build}/bin}
# The subnet from the tag: 10.77.S.0/24 (ours only: on the bridge and in
# the namespaces, routed nowhere else).
sub=$((10 + $(printf '%s' "$tag" | cksum | cut -d' ' -f1) % 200))
net=10.77.$sub
br=tsb-$tag
rate=${spec%%,*}
delay=
[ "$rate" = "$spec" ] || delay=${spec#*,}
bad() { echo "netns.sh: $*" >&2; exit 2; }
case $rate in
[1-9]*gbit) num=${rate%gbit} mul=1000000000 ;;
[1-9]*mbit) num=${rate%mbit} mul=1000000 ;;
[1-9]*kbit) num=${rate%kbit} mul=1000 ;;
*) bad "NET '$spec': its RATE is a number with kbit, mbit or gbit (100mbit, 1gbit), not '$rate'" ;;
esac
[[ $num =~ ^[0-9]+$ ]] || bad "NET '$spec': RATE '$rate' is not a whole number of kbit, mbit or gbit"
bps=$((num * mul))
if [ -n "$delay" ]; then
	[[ $delay =~ ^[0-9]+(us|ms)$ ]] ||
		bad "NET '$spec': its LATENCY is a whole number with us or ms (50us, 1ms), not '$delay'"
	# at most 1 s: more is a typo, and tc would hold that much data
	d_us=${delay%?s}
	[ "${delay%us}" != "$delay" ] || d_us=$((d_us * 1000))
	[ "$d_us" -le 1000000 ] || bad "NET '$spec': LATENCY $delay is more than 1 s"
	[ "$d_us" -gt 0 ] || delay=
fi
[[ $n_nodes =~ ^[0-9]+$ ]] && [ "$n_nodes" -ge 1 ] && [ "$n_nodes" -le 16 ] ||
	bad "NODES '$n_nodes': from 1 to 16"
# The bucket: 1 ms at RATE, at least 16 KB, so a small transfer is not
# carried by the burst alone.
burst=$((bps / 8000 > 16000 ? bps / 8000 : 16000))
ns() { echo "ts-$tag-n$1"; }

# Whether a delay line can work here: tc's clsact, u32 and mirred, taps
# (/dev/net/tun) and python3, tried in namespace $1. Prints why not.
delayline_works() {
	local probe=$1
	if ! command -v python3 >/dev/null || [ ! -c /dev/net/tun ]; then
		echo "no python3 or no /dev/net/tun for a delay line in user space"
	elif ! ip -n "$probe" tuntap add dev tsq2 mode tap 2>/dev/null ||
		! tc -n "$probe" qdisc add dev tsq0 clsact 2>/dev/null ||
		! tc -n "$probe" filter add dev tsq0 egress protocol all u32 match u32 0 0 \
			action mirred egress redirect dev tsq2 2>/dev/null; then
		echo "no taps or no tc clsact, u32 and mirred for a delay line in user space"
	fi
}

# Whether this machine can simulate NET: root, ip netns, tc, and with a
# latency the kernel's netem or a delay line, tried on a veth pair in a
# namespace of its own (deleted again). Sets delay_by (netem, delayline);
# prints the reason and returns 1 when it cannot.
can_simulate() {
	local probe=tsprobe-$tag-$$ why= dl_why=
	delay_by=
	if [ "$(id -u)" -ne 0 ]; then
		why="not root (network namespaces and tc need root)"
	elif ! command -v tc >/dev/null || ! command -v ip >/dev/null; then
		why="no ip or tc here (iproute2)"
	elif ! ip netns add "$probe" 2>/dev/null; then
		why="ip netns add does not work here"
	elif ! ip -n "$probe" link add tsq0 type veth peer name tsq1 2>/dev/null; then
		why="no veth pairs in a namespace here"
	elif [ -n "$delay" ] && [ "${NETNS_DELAY:-}" != delayline ] &&
		tc -n "$probe" qdisc add dev tsq0 root netem delay "$delay" 2>/dev/null; then
		delay_by=netem
		tc -n "$probe" qdisc del dev tsq0 root
	elif [ -n "$delay" ] && [ "${NETNS_DELAY:-}" = netem ]; then
		why="this kernel has no netem qdisc (sch_netem, CONFIG_NET_SCH_NETEM), and NETNS_DELAY=netem"
	elif [ -n "$delay" ] && dl_why=$(delayline_works "$probe") && [ -n "$dl_why" ]; then
		why="this kernel has no netem qdisc (sch_netem, CONFIG_NET_SCH_NETEM) and $dl_why, so no latency can be added; rate alone ('$rate') works"
	elif ! tc -n "$probe" qdisc replace dev tsq1 root tbf rate "$rate" burst "$burst" latency 100ms 2>/dev/null; then
		why="tc cannot add a token bucket (tbf) here"
	fi
	ip netns del "$probe" 2>/dev/null || true
	[ -z "$delay" ] || [ -n "$delay_by" ] || delay_by=delayline
	[ -z "$why" ] && return 0
	echo "netns.sh: cannot simulate '$spec' here: $why" >&2
	return 1
}

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
	# every node an earlier `up` made, whatever its count
	for n in $(ip netns list 2>/dev/null | awk -v p="ts-$tag-n" 'index($1, p) == 1 { print $1 }'); do
		ip netns del "$n" 2>/dev/null || true
	done
	ip link del "$br" 2>/dev/null || true
	ip link del "tsi-$tag" 2>/dev/null || true
	ip link del "tsd-$tag" 2>/dev/null || true
}

# The qdiscs of node K's link (veth V on the bridge, V"p" in the node).
link_qdiscs() {
	local v=$1 n=$2
	# toward the node, on the bridge's side: the rate
	tc qdisc add dev "$v" root tbf rate "$rate" burst "$burst" latency 100ms
	if [ "$delay_by" = delayline ]; then
		tc -n "$n" qdisc add dev "${v}p" root tbf rate "$rate" burst "$burst" latency 100ms
		# what the node puts on the bridge goes through the delay line,
		# which the bridge's table then sends to the right port only
		tc qdisc add dev "$v" clsact
		tc filter add dev "$v" ingress protocol all u32 match u32 0 0 \
			action mirred egress redirect dev "tsi-$tag"
		bridge fdb replace "$(ip -n "$n" -o link show "${v}p" | sed 's/.*link\/ether \([^ ]*\).*/\1/')" \
			dev "$v" master static
	elif [ -z "$delay" ]; then
		tc -n "$n" qdisc add dev "${v}p" root tbf rate "$rate" burst "$burst" latency 100ms
	else
		# from the node: the delay and the rate; a queue long enough for a
		# second of RATE in 1500-byte packets
		tc -n "$n" qdisc add dev "${v}p" root netem delay "$delay" rate "$rate" \
			limit $((bps / 12000 > 1000 ? bps / 12000 : 1000))
	fi
}

up() {
	can_simulate || exit 3
	down
	mkdir -p "$var/log" "$var/run"
	ip link add name "$br" type bridge
	ip addr add "$net.1/24" dev "$br"
	ip link set "$br" up
	# what the root namespace sends (`tessera stats`, ranks left there)
	# waits as long as what a node sends
	case $delay_by in
	netem) tc qdisc add dev "$br" root netem delay "$delay" limit 100000 ;;
	delayline) delay_line ;;
	esac
	: >"$var/nodes"
	for k in $(seq 0 $((n_nodes - 1))); do
		local n v=ts$tag$k
		n=$(ns "$k")
		ip netns add "$n"
		ip link add "$v" type veth peer name "${v}p"
		ip link set "${v}p" netns "$n"
		ip link set "$v" master "$br" up
		ip -n "$n" link set lo up
		ip -n "$n" addr add "$net.$((10 + k))/24" dev "${v}p"
		ip -n "$n" link set "${v}p" up
		link_qdiscs "$v" "$n"
		echo "$n" >>"$var/nodes"
	done
	echo "$net.0/24" >"$var/subnet"
	echo "${delay_by:-none}" >"$var/delay_by"
	local args=(--mds "$net.10:7400")
	for i in $(seq 0 $((n_ios - 1))); do args+=(--ios "$net.$((10 + i % n_nodes)):$((7401 + i))"); done
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
		start "ios$i" $((i % n_nodes)) "$bin/tessera-ios" -c "$var/tessera.conf" -d "$var/ios$i" -i "$i"
	done
	# Reachable from the root namespace (`tessera stats`, clients there).
	local last=$((n_ios - 1))
	timeout 5 bash -c "</dev/tcp/$net.$((10 + last % n_nodes))/$((7401 + last))" 2>/dev/null ||
		{ echo "netns.sh: storage daemon $last ($net.$((10 + last % n_nodes)):$((7401 + last))) does not answer" >&2; exit 1; }
	echo "netns.sh: 1 mds + $n_ios ios on $n_nodes nodes ($net.10-$((10 + n_nodes - 1))), links of $rate${delay:+ and $delay latency ($delay_by)}; config $var/tessera.conf"
}

# The delay line (delayline.py): frames into tap tsi-TAG come out of tap
# tsd-TAG, a port of the bridge that learns nothing (every node's address
# is a static entry, else a node's frames coming out of the delay line
# would teach the bridge that the node sits behind it), LATENCY later.
delay_line() {
	ip tuntap add dev "tsi-$tag" mode tap
	ip tuntap add dev "tsd-$tag" mode tap
	ip link set "tsi-$tag" up
	ip link set "tsd-$tag" master "$br" up
	bridge link set dev "tsd-$tag" learning off
	nohup python3 "$top/tests/study/delayline.py" "tsi-$tag" "tsd-$tag" "$d_us" \
		"$var/run/delayline.pid" >"$var/log/delayline.log" 2>&1 </dev/null &
	for _ in $(seq 50); do
		[ -f "$var/run/delayline.pid" ] && break
		kill -0 $! 2>/dev/null || { echo "netns.sh: the delay line failed:" >&2; cat "$var/log/delayline.log" >&2; exit 1; }
		sleep 0.1
	done
	[ -f "$var/run/delayline.pid" ] || { echo "netns.sh: the delay line did not start" >&2; exit 1; }
	# what the root namespace sends goes through it too
	tc qdisc add dev "$br" clsact
	tc filter add dev "$br" egress protocol all u32 match u32 0 0 \
		action mirred egress redirect dev "tsi-$tag"
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
check)
	can_simulate || exit 3
	echo "delay: ${delay_by:-none}"
	;;
*) echo "$usage" >&2; exit 2 ;;
esac
