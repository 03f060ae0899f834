#!/usr/bin/env python3
"""trace_summary.py [--by opcode|server] [--io] FILE_OR_PREFIX... - the
request-count tables of request traces (TESSERA_TRACE_REQUESTS=PATH makes
PATH.PID per process; docs/benchmarks.md, "Request traces").

For each opcode (or each opcode and daemon with --by server): requests in
all, per process (the files given: one per client process), regions, the
description (encoded body) bytes, data bytes out and in, and the mean time
from the call's start to the reply. --io keeps the storage daemons' data
requests (READ, WRITE, LIST_*, DTYPE_*): the requests Tabs. 3.1-3.3 count.
A PREFIX stands for every PREFIX.PID file. --json prints the table as JSON."""
import argparse
import glob
import json
import os
import sys

FIELDS = ["seq", "opcode", "server", "regions", "body_out", "data_out", "data_in",
          "start_ns", "end_ns", "status"]
IO = {"READ", "WRITE", "LIST_READ", "LIST_WRITE", "DTYPE_READ", "DTYPE_WRITE"}


def read_trace(path):
    """The requests of one trace file, as dicts; ValueError for a file
    that is not a trace."""
    with open(path) as f:
        head = f.readline()
        if not head.startswith("# tessera-trace 1"):
            raise ValueError("%s: not a tessera request trace (no '# tessera-trace 1' line)" % path)
        out = []
        for n, ln in enumerate(f, 2):
            if ln.startswith("#") or not ln.strip():
                continue
            v = ln.rstrip("\n").split("\t")
            if len(v) != len(FIELDS):
                raise ValueError("%s:%d: %d fields, not %d" % (path, n, len(v), len(FIELDS)))
            r = dict(zip(FIELDS, v))
            for k in FIELDS[3:]:
                r[k] = int(r[k])
            out.append(r)
    return out


def files(args):
    got = []
    for a in args:
        if os.path.isfile(a):
            got.append(a)
        else:
            more = sorted(p for p in glob.glob(glob.escape(a) + ".*")
                          if os.path.basename(p)[len(os.path.basename(a)) + 1:].isdigit())
            if not more:
                raise ValueError("%s: no such trace, and no %s.PID files" % (a, a))
            got += more
    return got


def summarise(traces, by="opcode", io_only=False):
    """{key: totals} over the traces (a list of request lists, one per
    process); key is the opcode, or (opcode, server) by server."""
    table = {}
    for reqs in traces:
        for r in reqs:
            if io_only and (r["opcode"] not in IO or not r["server"].startswith("ios")):
                continue
            key = r["opcode"] if by == "opcode" else (r["opcode"], r["server"])
            t = table.setdefault(key, {"requests": 0, "regions": 0, "body_out": 0,
                                       "data_out": 0, "data_in": 0, "ns": 0, "failed": 0})
            t["requests"] += 1
            for k in ("regions", "body_out", "data_out", "data_in"):
                t[k] += r[k]
            t["ns"] += max(0, r["end_ns"] - r["start_ns"])
            t["failed"] += r["status"] != 0
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--by", choices=("opcode", "server"), default="opcode")
    ap.add_argument("--io", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        paths = files(a.traces)
        traces = [read_trace(p) for p in paths]
    except (OSError, ValueError) as e:
        sys.exit("trace_summary: %s" % e)
    table = summarise(traces, a.by, a.io)
    nproc = len(traces)
    if a.json:
        print(json.dumps({"processes": nproc, "rows": [
            dict(t, key=k if isinstance(k, str) else "/".join(k)) for k, t in sorted(table.items())]}))
        return 0
    print("%d trace file(s) (one per process)%s" % (nproc, "; storage data requests only"
                                                   if a.io else ""))
    print("| %s | requests | per process | regions | desc bytes | data out | data in | "
          "mean ms | failed |" % ("opcode" if a.by == "opcode" else "opcode | daemon"))
    print("|---|" + ("---|" if a.by == "server" else "") + "---|" * 8)
    total = 0
    for k, t in sorted(table.items()):
        total += t["requests"]
        print("| %s | %d | %.1f | %d | %d | %d | %d | %.3f | %d |" % (
            k if isinstance(k, str) else " | ".join(k), t["requests"], t["requests"] / nproc,
            t["regions"], t["body_out"], t["data_out"], t["data_in"],
            t["ns"] / t["requests"] / 1e6, t["failed"]))
    print("total: %d requests, %.1f per process" % (total, total / max(1, nproc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
