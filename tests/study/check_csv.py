#!/usr/bin/env python3
"""check_csv.py DIR - what test_study.sh asserts of a tiny study's CSVs
without timing: the request and byte counts of Tab. 3.1 that must equal
the dissertation's with local reads off, the clients' request traces
agreeing with the daemons' counters, the timed phases of every HPIO
row, and the record (load, commit, network, tunables) of every row.
Exits 1 saying what is wrong."""
import csv
import os
import sys

MiB = 1 << 20


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_record(name, rs, bad):
    for r in rs:
        try:
            float(r["load1"])
        except ValueError:
            bad.append("%s: load1 %r is not a number" % (name, r["load1"]))
        if not r["commit"] or r["commit"] == "unknown":
            bad.append("%s: no commit" % name)
        want = {"net": "loopback", "local_reads": "0", "sieve_gap": "4096",
                "sieve_span": "4194304", "csum_block": "4096"}
        for k, v in want.items():
            if r[k] != v:
                bad.append("%s: %s is %r, not %r" % (name, k, r[k], v))


def check_tables(rs, bad):
    """Tab. 3.1, one frame, per client: sieving reads the tile's extent,
    5.56 MB in the dissertation (5.55 MiB here: the window starts at the
    first byte wanted), in 8 requests (2 windows, each split per storage
    daemon and per max_io); two-phase's aggregators read 1.70 MB as there.
    With local reads on, both read 0 bytes through the daemons."""
    by = {r["method"]: r for r in rs if r["table"] == "3.1"}
    for m, r in by.items():
        if int(r["bytes_desired"]) != 2359296 or float(r["requests"]) < 1:
            bad.append("Tab. 3.1 %s: %s bytes desired (not the tile's 2.25 MiB) in %s requests"
                       % (m, r["bytes_desired"], r["requests"]))
    # datatype I/O: one request per storage daemon touched (4)
    if "datatype" in by and float(by["datatype"]["requests"]) != 4:
        bad.append("Tab. 3.1 datatype: %s requests, not 4" % by["datatype"]["requests"])
    sv, tp = by.get("sieve"), by.get("coll")
    if not sv or not tp:
        bad.append("tables.csv: no sieve or two-phase row of Tab. 3.1")
        return
    if float(sv["requests"]) != 8:
        bad.append("Tab. 3.1 sieve: %s requests, not 8" % sv["requests"])
    if abs(float(sv["bytes_accessed"]) / MiB - 5.56) > 0.01:
        bad.append("Tab. 3.1 sieve: %.3f MiB accessed, not the dissertation's 5.56"
                   % (float(sv["bytes_accessed"]) / MiB))
    if round(float(tp["bytes_accessed"]) / MiB, 2) != 1.70:
        bad.append("Tab. 3.1 two-phase: %.3f MiB accessed, not the dissertation's 1.70"
                   % (float(tp["bytes_accessed"]) / MiB))


def check_traces(rs, bad):
    """The clients' request traces count what the daemons counted."""
    for r in rs:
        if r.get("trace_requests") in (None, "") or \
                float(r["trace_requests"]) != float(r["requests"]):
            bad.append("Tab. %s %s: the traces count %s requests a client, the daemons %s"
                       % (r["table"], r["method"], r.get("trace_requests"), r["requests"]))


def check_resent(rs, bad):
    """Resent bytes are the driver's count of two-phase's exchange: some for
    two-phase (the tile reader's domains cut through every client's tile),
    none for the independent methods, and never above what a client wants."""
    for r in rs:
        resent, desired = float(r["bytes_resent"]), float(r["bytes_desired"])
        if r["method"] == "coll" and not 0 < resent <= desired:
            bad.append("Tab. %s two-phase: %g bytes resent a client (measured), of %g desired"
                       % (r["table"], resent, desired))
        if r["method"] != "coll" and resent != 0:
            bad.append("Tab. %s %s: %g bytes resent by an independent method"
                       % (r["table"], r["method"], resent))


def check_phases(rs, bad):
    """write_s (call and sync) against its two parts, each the slowest
    rank's: max(call, sync) <= write_s <= call + sync; opens and closes
    timed, none negative."""
    eps = 2e-6
    for r in rs:
        w, c, s = float(r["write_s"]), float(r["write_call_s"]), float(r["sync_s"])
        if not (max(c, s) - eps <= w <= c + s + eps):
            bad.append("hpio.csv: write_s %g is not between its parts %g and %g" % (w, c, s))
        for k in ("w_open_s", "w_close_s", "r_open_s", "r_close_s"):
            if float(r[k]) < 0:
                bad.append("hpio.csv: %s %s" % (k, r[k]))


def main():
    out, bad = sys.argv[1], []
    t = rows(os.path.join(out, "tables.csv"))
    h = rows(os.path.join(out, "hpio.csv"))
    check_tables(t, bad)
    check_traces(t, bad)
    check_resent(t, bad)
    check_phases(h, bad)
    check_record("tables.csv", t, bad)
    check_record("hpio.csv", h, bad)
    for b in bad[:20]:
        print("check_csv: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
