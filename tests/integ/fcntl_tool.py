#!/usr/bin/env python3
"""fcntl_tool.py - fcntl record locks for tests/integ/test_fuse_locks.sh.

    fcntl_tool.py FILE OP...

Opens FILE read-write (creating it) and runs each OP in order, printing one
line per OP: "ok", the errno's name (EAGAIN, EDEADLK, ...), or for a test
the lock found ("unlck", or "rd|wr START LEN PID").

    w:S:L  r:S:L  u:S:L     F_SETLK write / read / unlock [S, S+L) (L 0: to the end)
    W:S:L  R:S:L            F_SETLKW write / read
    gw:S:L gr:S:L           F_GETLK for a write / read lock
    ow:S:L or:S:L ou:S:L    the same as OFD locks (F_OFD_SETLK) on the current descriptor
    oW:S:L                  F_OFD_SETLKW
    new                     later OFD ops use a new open of FILE (another description)
    sleep:N                 sleep N seconds (float)
    mark                    print "mark" (a point the caller waits for)
"""
import errno
import fcntl
import os
import struct
import sys
import time

FMT = "hhqqi4x"  # struct flock on x86_64 and aarch64 Linux


def flock_bytes(kind, start, length):
    return struct.pack(FMT, kind, os.SEEK_SET, start, length, 0)


def run(fd, cmd, kind, start, length):
    try:
        res = fcntl.fcntl(fd, cmd, flock_bytes(kind, start, length))
    except OSError as e:
        if e.errno == errno.EDEADLK:  # errorcode names it EDEADLOCK, its alias
            return "EDEADLK"
        return errno.errorcode.get(e.errno, str(e.errno))
    if cmd in (fcntl.F_GETLK, fcntl.F_OFD_GETLK):
        t, _, s, ln, pid = struct.unpack(FMT, res)
        if t == fcntl.F_UNLCK:
            return "unlck"
        return "%s %d %d %d" % ("rd" if t == fcntl.F_RDLCK else "wr", s, ln, pid)
    return "ok"


KINDS = {"w": fcntl.F_WRLCK, "r": fcntl.F_RDLCK, "u": fcntl.F_UNLCK}


def main():
    path = sys.argv[1]
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    ofd = fd
    for op in sys.argv[2:]:
        if op == "new":
            ofd = os.open(path, os.O_RDWR)
            out = "ok"
        elif op.startswith("sleep:"):
            time.sleep(float(op[6:]))
            out = "ok"
        elif op == "mark":
            out = "mark"
        else:
            name, s, ln = op.split(":")
            start, length = int(s), int(ln)
            ofd_op = name.startswith("o")
            if ofd_op:
                name = name[1:]
            if name.startswith("g"):
                cmd = fcntl.F_OFD_GETLK if ofd_op else fcntl.F_GETLK
                kind = KINDS[name[1]]
            elif name in ("W", "R"):
                cmd = fcntl.F_OFD_SETLKW if ofd_op else fcntl.F_SETLKW
                kind = KINDS[name.lower()]
            else:
                cmd = fcntl.F_OFD_SETLK if ofd_op else fcntl.F_SETLK
                kind = KINDS[name]
            out = run(ofd if ofd_op else fd, cmd, kind, start, length)
        print(out, flush=True)


main()
