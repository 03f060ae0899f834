#!/usr/bin/env python3
"""delayline.py IN OUT DELAY_US [PIDFILE] - a fixed latency in user space,
for kernels without tc netem (tests/study/netns.sh uses it then).

IN and OUT are tap devices (made by `ip tuntap add ... mode tap`): the
frames the kernel sends into IN (netns.sh redirects there, with tc's
mirred, every frame a node or the root namespace puts on the bridge) are
written into OUT, a port of the bridge, DELAY_US microseconds after they
arrived, in the order they arrived (the delay is the same for every frame,
so order is kept). A frame leaves no earlier than DELAY_US after it came:
the latency is at least DELAY_US; on top come this process's own cost and
its wake-ups on a loaded machine (a few tens of microseconds here), which
netns.sh's users measure rather than assume. What the bridge sends to OUT
(its floods) is read and dropped. Stops on SIGTERM."""
import collections
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def drain(fd, now, due, queue):
    """Every frame waiting on fd, queued to leave at now + due (due None:
    dropped)."""
    while True:
        try:
            frame = os.read(fd, 65536)
        except BlockingIOError:
            return
        if due is not None:
            queue.append((now + due, frame))


def run(fd_in, fd_out, delay):
    # select, not poll: its timeout has microseconds, poll's milliseconds
    queue = collections.deque()
    while True:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            try:
                os.write(fd_out, queue.popleft()[1])
            except OSError:
                pass  # a frame the bridge will not take is lost, as on a wire
        wait = None if not queue else max(0.0, queue[0][0] - now)
        ready, _, _ = select.select([fd_in, fd_out], [], [], wait)
        for fd in ready:
            drain(fd, time.monotonic(), delay if fd == fd_in else None, queue)


def no_timer_slack():
    """Wake-ups when asked, not up to 50 us later (the kernel's default
    slack: PR_SET_TIMERSLACK to 1 ns)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n")[0])
    fd_in, fd_out = open_tap(sys.argv[1]), open_tap(sys.argv[2])
    delay = int(sys.argv[3]) * 1e-6
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    no_timer_slack()
    if len(sys.argv) == 5:  # ready: the taps are open
        with open(sys.argv[4] + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(sys.argv[4] + ".tmp", sys.argv[4])
    run(fd_in, fd_out, delay)


if __name__ == "__main__":
    main()
