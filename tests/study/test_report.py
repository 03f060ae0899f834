#!/usr/bin/env python3
"""test_report.py - report.py's statistics without a cluster (test_study.sh
runs it): the t-interval, the overlap rule, that a guideline's verdict
rests only on points whose intervals do not overlap, and chapter 8's
"more than triple" verdict."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def near(a, b):
    assert abs(a - b) < 1e-3, (a, b)


def interval():
    lo, hi = report.t_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(2) 4.303
    near(lo, 2 - 4.303 / math.sqrt(3))
    near(hi, 2 + 4.303 / math.sqrt(3))
    assert report.t_interval([5.0]) is None
    assert report.t_interval([5.0, None]) is None
    assert report.overlap((1, 2), (2, 3)) and not report.overlap((1, 2), (2.5, 3))
    assert report.overlap(None, (1, 2))


def sieving_verdict(sieve, best):
    """Guideline 7 at the default point with sieve's and list's write
    repetitions as given (c-nc and nc-nc alike)."""
    rows = []
    for case in ("c-nc", "nc-nc"):
        for m, reps in (("sieve", sieve), ("list", best), ("datatype", best)):
            for i, v in enumerate(reps):
                rows.append({"count": "4096", "size": "8", "spacing": "128", "target": "tessera",
                             "method": m, "case": case, "rep": str(i), "write_mbs": str(v),
                             "read_mbs": str(v)})
    raw = {}
    for r in rows:
        k = (4096, 8, 128, "tessera", r["method"], r["case"])
        raw.setdefault(k, {"write": [], "read": []})
        raw[k]["write"].append(float(r["write_mbs"]))
        raw[k]["read"].append(float(r["read_mbs"]))
    agg = {k: {op: report.trimmed(v) for op, v in a.items()} for k, a in raw.items()}
    report.CI.clear()
    report.CI.update({k: {op: report.t_interval(v) for op, v in a.items()}
                      for k, a in raw.items()})
    return report._g7_sieving({"net": "loopback"}, agg)[2]


def datatype_verdict(apart_points):
    """Guideline 6 over 3 c-nc points where datatype's interval is clear
    above list's at the first apart_points points and overlaps it at the
    rest."""
    agg = {}
    report.CI.clear()
    for i in range(3):
        pt = (4096 * (i + 1), 8, 128)
        dt = (10.0, 11.0) if i < apart_points else (5.0, 11.0)
        for m, iv in (("datatype", dt), ("list", (4.0, 6.0))):
            k = pt + ("tessera", m, "c-nc")
            agg[k] = {"write": sum(iv) / 2, "read": None}
            report.CI[k] = {"write": iv, "read": None}
    return report._g6_datatype({"net": "loopback"}, agg)[2]


def verdicts():
    # a majority over points needs at least half of them apart
    assert datatype_verdict(1) == report.UNDECIDED
    assert datatype_verdict(2) == "supported"
    assert sieving_verdict([1.0, 1.1, 0.9], [10.0, 10.5, 9.5]) == "supported"
    assert sieving_verdict([10.0, 10.5, 9.5], [1.0, 1.1, 0.9]) == "contradicted"
    # sieving's average is lower, but the intervals overlap: no verdict
    assert sieving_verdict([1.0, 9.0, 2.0], [3.0, 12.0, 4.0]) == report.UNDECIDED


def version_verdict(factor):
    """Chapter 8's count claim when datatype-version writes `factor` times
    datatype and datatype-lock at every point of c-nc and nc-nc."""
    w = {}
    for case in ("c-nc", "nc-nc"):
        for count in (256, 4096):
            for m, v in (("datatype", 1.0), ("datatype-lock", 0.5),
                         ("datatype-version", factor)):
                w[("count", case, count, 128, m)] = {"write": [v, v], "wsync": [v, v]}
    lines, held = report._vverdict({"w": w}, "count")
    return held, lines


def version_verdicts():
    # 3.5x datatype is 7x datatype-lock: "more than triple" holds
    held, lines = version_verdict(3.5)
    assert held and all("**reproduces**" in ln for ln in lines), lines
    # 2.5x datatype is 5x datatype-lock, but not 3x datatype: it does not
    held, lines = version_verdict(2.5)
    assert not held and all("**does not reproduce**" in ln for ln in lines), lines
    assert "c-nc over datatype 2.50x" in lines[0], lines[0]


def version_points():
    # the average misses the claim, one sparse point makes it: named
    w = {}
    for case in ("c-nc", "nc-nc"):
        for g, f in ((8, 0.5), (4096, 2.5)):
            for m, v in (("datatype", 1.0), ("datatype-lock", 1.0), ("datatype-version", f)):
                w[("spacing", case, 4096, g, m)] = {"write": [v, v], "wsync": [v, v]}
    lines = report._vabove({"w": w}, "spacing")
    assert "holds at c-nc at spacing 4096 (2.50x" in lines[0], lines
    assert "spacing 8" not in lines[0], lines
    w = {k: val for k, val in w.items() if k[3] == 8}
    assert "at no point" in report._vabove({"w": w}, "spacing")[0]


def index_of_items():
    """The last section lists every item once, in the dissertation's order,
    the diagrams of a chapter joined into one row; claims combine into one
    verdict; a lock figure is judged only on apart intervals, and not run
    where its methods did not run."""
    import csv
    import tempfile
    import report_index as ri
    assert ri.combine([True, True]) == ri.REPRODUCED
    assert ri.combine([True, None]) == ri.PARTLY
    assert ri.combine([False, None]) == ri.DIFFERS
    assert ri.combine([True, False]) == ri.PARTLY
    assert ri.combine([None]) == ri.UNDECIDED
    idx = ri.Index()
    idx.add("Fig. 8.3", ri.DIFFERS, "why", "where")
    L = idx.lines()
    rows = [x for x in L if x.startswith("| ") and not x.startswith("| item")]
    assert any(x.startswith("| Fig. 8.3 | ") and "**differs** | why | where" in x for x in rows)
    assert any(x.startswith("| Figs. 2.1-2.10 | ") and "**not applicable**" in x for x in rows)
    assert any(x.startswith("| Fig. 3.9 | ") and "**not run**" in x for x in rows)
    assert sum(1 for x in rows if x.startswith("| Fig. 3.13 |")) == 1
    with tempfile.TemporaryDirectory() as out:
        os.mkdir(os.path.join(out, "locks"))
        with open(os.path.join(out, "locks", "locks.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["fig", "servers", "clients", "overlap", "method", "protocol", "rep",
                        "acquire_locks_per_s", "release_locks_per_s", "error"])
            rates = {"datatype": (100, 1000), "list64-split": (50, 100), "posix": (5, 1)}
            for m, (acq, rel) in rates.items():
                for p in ("one-try", "two-phase"):
                    for rep, wob in enumerate((0.99, 1.0, 1.01)):
                        f2 = 1.0 if p == "one-try" else 0.5
                        w.writerow(["7.3", 4, 4, 0, m, p, rep, acq * wob * f2, rel * wob, ""])
        idx = ri.Index()
        ri.lock_verdicts(out, idx, report.t_interval)
        v, why, _ = idx.found["Fig. 7.3"]
        assert v == ri.REPRODUCED, (v, why)
        assert "Fig. 7.5" not in idx.found and "Fig. 7.4" not in idx.found


if __name__ == "__main__":
    interval()
    verdicts()
    version_verdicts()
    version_points()
    index_of_items()
    print("test_report: ok")
