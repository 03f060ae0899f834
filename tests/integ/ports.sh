# ports.sh - sourced by every script that starts daemons on loopback.
#
#   free_ports N     prints a port P such that P..P+N are free on 127.0.0.1
#   port_lines N     prints "mds = 127.0.0.1:P" and N "ios = ..." lines
#                    on the ports P..P+N (a config's daemon lines)
#
# The ports are below the kernel's ephemeral range (ip_local_port_range,
# 32768 up on Debian). A port taken by binding port 0 and closing the
# socket is an ephemeral one: any outgoing connection on the machine (the
# clients of the suites around, each with one per daemon) can take it
# before the daemon binds it, and a test that restarts a daemon on its
# port races every connection made meanwhile.
free_ports() {
	python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
lo, hi = 10000, 32767
try:
    lo_eph = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    hi = min(hi, lo_eph - 1)
except (OSError, ValueError, IndexError):
    pass
for _ in range(200):
    base = random.randint(lo, hi - n)
    socks = []
    try:
        for p in range(base, base + n + 1):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    break
else:
    sys.exit("no %d free ports between %d and %d" % (n + 1, lo, hi))
PY
}

port_lines() {
	local n=$1 base i
	base=$(free_ports "$n") || return 1
	echo "mds = 127.0.0.1:$base"
	for ((i = 1; i <= n; i++)); do echo "ios = 127.0.0.1:$((base + i))"; done
}
