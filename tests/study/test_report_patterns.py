#!/usr/bin/env python3
"""test_report_patterns.py - the patterns part's arithmetic without a
cluster (test_study.sh runs it): the requests the planner's rules imply
(tests/study/patterns.py) and that a figure's verdict rests only on
intervals that are apart (tests/study/report_patterns.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import patterns  # noqa: E402
import report_patterns as RP  # noqa: E402

K, MiB = 1024, 1 << 20


def implied_requests():
    plan = lambda regs, batch=0: patterns.plan_requests(regs, batch, 64 * K, 4, MiB)  # noqa: E731
    assert plan([(0, 100)]) == 1
    assert plan([(64 * K - 10, 20)]) == 2            # crosses a strip: two daemons
    assert plan([(i * 128, 8) for i in range(200)], 64) == 4   # 4 batches, one strip each
    assert plan([(i * 128, 8) for i in range(200)]) == 1       # one view, one daemon
    assert plan([(0, 4 * MiB)]) == 4                 # 1 MiB a daemon: max_io, one round
    assert plan([(0, 4 * MiB + 64 * K)]) == 5        # daemon 0 full: a second round
    # the tiny run's pattern: 1-D cyclic, 2 ranks, 1 MiB, 256 accesses of 2 KiB
    g = {"pattern": "cyclic", "nprocs": 2, "x": 256, "size": MiB}
    assert patterns.regions(g, 1)[:2] == [(2048, 2048), (6144, 2048)]
    want = {"posix": 256, "list": 16, "datatype": 4, "sieve": None}
    for m, n in want.items():
        assert patterns.expected_requests(g, m, 64 * K, 4, MiB) == n, m
    # block-block: 4 ranks in 2 x 2; rank 3 starts at row 64, column 1
    g = {"pattern": "blockblock", "nprocs": 4, "x": 64, "size": MiB}
    assert patterns.regions(g, 3)[0] == (64 * 8192 + 4096, 4096)
    # FLASH: a rank's blocks of one variable are adjacent, 24 regions
    g = {"pattern": "flash", "nprocs": 2, "x": 2, "blocks": 16}
    assert len(patterns.regions(g, 0)) == 24


def rows(points):
    """patterns.csv rows: {(pattern, np, x, method, op): [MB/s]}."""
    out = []
    for (p, n, x, m, op), vals in points.items():
        for i, v in enumerate(vals):
            out.append({"pattern": p, "nprocs": str(n), "x": str(x), "method": m, "op": op,
                        "rep": str(i), "mbs": str(v), "seconds": str(1.0 / v),
                        "requests": "1", "bytes_accessed": "1", "region": "", "x_name": "x",
                        "expected_requests": ""})
    return out


def verdicts():
    c = RP.Claims("9.9", "test")
    c.add("a", 1, "")
    assert c.verdict() == "reproduced"
    c.add("b", 0, "")
    assert c.verdict().startswith("partly reproduced (1 of 2")
    c.add("c", -1, "")
    assert c.verdict() == "differs"
    c = RP.Claims("9.9", "test")
    c.add("a", 0, "")
    assert c.verdict().startswith("undecided")
    c.na = "a diagram"
    assert c.verdict() == "not applicable"
    # datatype 2.5x list: "more than double" holds only when the intervals
    # say so; the same means with wide intervals decide nothing
    t = ("tile", 6, 2, "datatype", "read")
    ls = ("tile", 6, 2, "list", "read")
    d = RP.Data(rows({t: [25.0, 25.1, 24.9], ls: [10.0, 10.1, 9.9]}))
    assert RP.ratio_held(d, t, ls, 2.0) == 1 and RP.ratio_held(d, t, ls, 3.0) == -1
    d = RP.Data(rows({t: [5.0, 45.0, 25.0], ls: [10.0, 10.1, 9.9]}))
    assert RP.ratio_held(d, t, ls, 2.0) == 0
    c = RP.Claims("4.4", "tile")
    RP._best(c, d, "tile", "read", "datatype", ["list", "datatype"], 2.0, "datatype best")
    assert c.items[0][1] == 0 and c.verdict().startswith("undecided"), c.items
    # the 1-D cyclic gap: POSIX 10x slower than list, two orders wanted
    p, li = ("cyclic", 2, 256, "posix", "write"), ("cyclic", 2, 256, "list", "write")
    d = RP.Data(rows({p: [1.0, 1.01, 0.99], li: [10.0, 10.1, 9.9]}))
    c = RP.Claims("3.10", "cyclic")
    RP._gap(c, d, "cyclic", "write", "list", "posix", 50.0, "two orders")
    assert c.items[0][1] == -1 and "×10.0" in c.items[0][2], c.items


if __name__ == "__main__":
    implied_requests()
    verdicts()
    print("test_report_patterns: ok")
