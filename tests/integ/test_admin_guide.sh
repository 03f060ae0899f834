#!/usr/bin/env bash
# test_admin_guide.sh - docs/admin.md's "A worked three-node deployment",
# run as it is written: the guide's sh blocks are extracted
# (docs_check.py blocks) and run unchanged, so the guide cannot drift from
# the tools it describes.
#
# The three nodes are network namespaces on a bridge of their own (a
# private /24 that exists only there; nothing leaves the machine). Each
# node also has a mount and UTS namespace per command, with its own
# /etc/tessera, /etc/munge, /run/munge, /var/lib/tessera, /mnt/tessera and
# /tmp (directories under the test's own), its host name, a hosts file
# naming the three, and a passwd/group where `systemd-sysusers` made the
# daemons' user from deploy/systemd/tessera.sysusers (the guide's step 1)
# without touching this machine's. `ssh NODE CMD` runs CMD on that node
# and `scp FILES NODE:DIR` copies there, as on a cluster.
#
# What is not run as written: step 1's install (the build's programs are
# on PATH instead), the `systemctl` blocks (systemd cannot start units
# inside a namespace; test_systemd.sh verifies the units), munged's start
# (prose in the guide: each node runs munged with one shared key), and
# step 8's stop, which is prose too: the daemons get SIGTERM and must exit
# cleanly. Needs root, ip, unshare, munged, runuser and systemd-sysusers.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/integ/checks.sh"
build=${TESSERA_BUILD:-$top/build}

[ "$(id -u)" -eq 0 ] || skip_all admin_guide "needs root (namespaces, mounts, runuser)"
for c in ip unshare munged runuser systemd-sysusers python3 fusermount3; do
	command -v "$c" >/dev/null || skip_all admin_guide "needs $c"
done
[ -x "$build/bin/tessera-mds" ] || { echo "no build in $build (make all)" >&2; exit 1; }

# Not under /tmp: each node has a /tmp of its own, bound over the system's.
T=$(mktemp -d /var/tmp/tessera-guide.XXXXXX)
chmod 0755 "$T"
tag=$$
net=10.79.$((tag % 200 + 20))
br=tsg$((tag % 100000))
export T net

# on NODE CMD: run CMD (a bash script) as root on NODE: its network
# namespace, and fresh mount and UTS namespaces with the node's own
# directories bound over the system's. ssh and scp (the guide's) go from
# one node to another. Written to a file that every node's shell sources.
cat >"$T/on.sh" <<'EOF'
nsname() { echo "tsg-$TSG_TAG-$1"; }
on() {
	local n=$1
	shift
	ip netns exec "$(nsname "$n")" unshare --mount --uts --propagation private \
		env -i PATH="$PATH" HOME=/root TERM=dumb TSG_NODE="$n" T="$T" TSG_TAG="$TSG_TAG" \
		bash -c '
		d=$T/$TSG_NODE
		for f in passwd group shadow hosts; do mount --bind "$T/etc/$f" "/etc/$f"; done
		for b in etc/tessera etc/munge run/munge var/lib/tessera mnt/tessera tmp; do
			mount --bind "$d/${b//\//-}" "/$b"
		done
		hostname "$TSG_NODE"
		. "$T/on.sh"
		eval "$1"' on "$*"
}
ssh() {
	local n=$1
	shift
	on "$n" "$*"
}
scp() {
	local files=() a dest
	while [ $# -gt 1 ]; do
		a=$1; shift
		case $a in -*) ;; *) files+=("$a") ;; esac
	done
	dest=$1
	tar -cpf - -P "${files[@]}" |
		on "${dest%%:*}" "tar -C '${dest#*:}' -xpf - -P --transform='s,.*/,,'"
}
EOF
TSG_TAG=$tag
export TSG_TAG
. "$T/on.sh"

setup_nodes() {
	mkdir -p /etc/tessera /etc/munge /run/munge /var/lib/tessera /mnt/tessera "$T/etc"
	# passwd and group as this machine's, plus the daemons' user as the
	# guide makes it
	mkdir -p "$T/sysroot/etc"
	cp /etc/passwd /etc/group "$T/sysroot/etc/"
	cp /etc/shadow "$T/sysroot/etc/" 2>/dev/null || : >"$T/sysroot/etc/shadow"
	systemd-sysusers --root="$T/sysroot" "$top/deploy/systemd/tessera.sysusers"
	cp "$T/sysroot/etc/passwd" "$T/sysroot/etc/group" "$T/sysroot/etc/shadow" "$T/etc/"
	grep -q '^tessera:' "$T/etc/passwd"
	{
		echo "127.0.0.1 localhost"
		for k in 1 2 3; do echo "$net.1$k node$k"; done
	} >"$T/etc/hosts"
	head -c 1024 /dev/urandom >"$T/munge.key"
	ip link add name "$br" type bridge
	ip link set "$br" up
	for k in 1 2 3; do
		local n=node$k ns v=tsg$((tag % 10000))v$k
		ns=$(nsname $n)
		for b in etc-tessera etc-munge run-munge var-lib-tessera mnt-tessera tmp; do
			mkdir -p "$T/$n/$b"
		done
		chmod 1777 "$T/$n/tmp"
		install -m 0400 -o munge -g munge "$T/munge.key" "$T/$n/etc-munge/munge.key"
		chown munge:munge "$T/$n/run-munge"
		ip netns add "$ns"
		ip link add "$v" type veth peer name "${v}p"
		ip link set "${v}p" netns "$ns"
		ip link set "$v" master "$br" up
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "$net.1$k/24" dev "${v}p"
		ip -n "$ns" link set "${v}p" up
		# munged on each node, sharing one key (the guide's step 3, prose)
		on $n 'munged --force --key-file=/etc/munge/munge.key \
			--pid-file=/run/munge/munged.pid --seed-file=/run/munge/seed \
			--log-file=/run/munge/munged.log'
	done
	on node1 'munge -n | ssh node2 unmunge >/dev/null'
}

daemon_pgids=()
teardown() {
	local g
	for g in "${daemon_pgids[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
	for k in 1 2 3; do
		ip netns pids "$(nsname node$k)" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$(nsname node$k)" 2>/dev/null
	done
	ip link del "$br" 2>/dev/null
	rm -rf "$T"
}
trap teardown EXIT

blocks="$T/blocks"
python3 "$top/tests/integ/docs_check.py" blocks "$top" "$top/docs/admin.md" \
	"A worked three-node deployment" >"$blocks" || exit 1

# Block N of the section, as written.
block() {
	awk -v n="$1" '/^#### block /{b=$3+0; next} b==n' "$blocks"
}
nblocks() { grep -c '^#### block ' "$blocks"; }

export PATH="$build/bin:$top/deploy:$PATH"

# A block whose lines say `nodeK$ CMD` runs each CMD on its node; a
# daemon (runuser ... tessera-mds/ios) is started in the background, in a
# process group of its own, and waited for until its port listens.
run_node_lines() {
	local line n cmd
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		n=${line%%\$ *}
		cmd=${line#*\$ }
		case $cmd in
		runuser*tessera-mds* | runuser*tessera-ios*)
			# the daemons refuse a log that group or others can read
			(umask 077 && touch "$T/$n.daemons.log")
			setsid bash -c '. "$T/on.sh"; on "$1" "exec $2"' _ "$n" "$cmd" \
				>>"$T/$n.daemons.log" 2>&1 </dev/null &
			daemon_pgids+=($!)
			;;
		*) on "$n" "$cmd" || return 1 ;;
		esac
	done
}

wait_ports() { # the ports of the config, listening in their nodes
	local p n
	for p in "node1 7400" "node1 7401" "node2 7402" "node3 7403"; do
		set -- $p
		for _ in $(seq 100); do
			ip netns exec "$(nsname "$1")" ss -ltnH "sport = :$2" | grep -q . && break
			sleep 0.1
		done
		ip netns exec "$(nsname "$1")" ss -ltnH "sport = :$2" | grep -q . ||
			{ echo "no daemon listens on $1:$2; logs:"; cat "$T"/*.daemons.log; return 1; }
	done
}

test_steps() {
	local i text ran=0
	setup_nodes
	for i in $(seq "$(nblocks)"); do
		text=$(block "$i")
		echo "--- block $i:"
		echo "$text" | sed 's/^/    /'
		if grep -q 'systemctl' <<<"$text"; then
			echo "    (skipped: systemd units are verified by test_systemd.sh)"
			continue
		fi
		if grep -q '^node[0-9]\$ ' <<<"$text"; then
			run_node_lines <<<"$text" || return 1
			grep -q runuser <<<"$text" && { wait_ports || return 1; }
		elif grep -q 'tessera-fuse' <<<"$text"; then
			# the mount lives in this one command's namespace: use it there
			on node2 "set -e; $text
				cmp /mnt/tessera/x /tmp/x.copy
				umount /mnt/tessera" || return 1
		else
			on node1 "set -e; $text" || return 1
			# what the mount block compares against: step 6's file
			[ -f "$T/node1/tmp/x" ] && [ ! -f "$T/node2/tmp/x.copy" ] &&
				cp "$T/node1/tmp/x" "$T/node2/tmp/x.copy"
		fi
		ran=$((ran + 1))
	done
	[ "$ran" -ge 5 ] || { echo "only $ran blocks ran: has the section changed shape?"; return 1; }
	grep -q "^tessera:" "$T/etc/passwd"
	# the key stayed the daemons' own on every daemon node
	local uid
	uid=$(awk -F: '$1 == "tessera" { print $3 }' "$T/etc/passwd")
	for n in node1 node2 node3; do
		[ "$(stat -c '%u %a' "$T/$n/etc-tessera/tessera.key")" = "$uid 600" ]
	done
	# step 8 (prose): SIGTERM stops each daemon cleanly
	local g
	for g in "${daemon_pgids[@]}"; do kill -TERM -- "-$g"; done
	for g in "${daemon_pgids[@]}"; do
		for _ in $(seq 100); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
		if kill -0 -- "-$g" 2>/dev/null; then echo "a daemon ignored SIGTERM"; return 1; fi
	done
	daemon_pgids=()
}

check worked_three_node_deployment test_steps
checks_done
