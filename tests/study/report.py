#!/usr/bin/env python3
"""report.py DIR [--no-plots] - the figures and report.md of a study folder
(tests/study/study.py): HPIO figures laid out like the dissertation's Figs.
5.2-5.4 (a panel per access case, the parameter on a log2 axis, aggregate
MB/s, a series per method), the request-count tables beside Tabs. 3.1-3.3
and 4.1, the lock figures and the S3D atomic-mode figure, and which of the
guidelines of §5.5 the figures support. Matplotlib only for the PNGs; the
report is written without it (and says so)."""
import csv
import json
import math
import os
import re
import shutil
import statistics
import sys

import report_index

CASES = ["c-c", "nc-c", "c-nc", "nc-nc"]
# list: Tessera's list I/O (the config's batch, memory packed); list64: the
# dissertation's (64 regions a request, memory as a list; mpi_hpio list64).
SERIES = [("tessera", "posix"), ("tessera", "sieve"), ("tessera", "list"),
          ("tessera", "list64"), ("tessera", "datatype"), ("tessera", "two-phase"),
          ("ufs", "posix"), ("ufs", "sieve"), ("ufs", "two-phase")]
COLOR = {"posix": "tab:red", "sieve": "tab:orange", "list": "tab:blue",
         "list64": "tab:cyan", "datatype": "tab:green", "two-phase": "tab:purple"}
DEFAULT = {"count": 4096, "size": 8, "spacing": 128}
FIGS = {"count": ("5.2", "region count"), "size": ("5.3", "region size (bytes)"),
        "spacing": ("5.4", "region spacing (bytes)")}
MiB = 1 << 20


def trimmed(vals):
    """The dissertation's average: drop the highest and the lowest (with 3
    or more repetitions), mean of the rest."""
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return None
    if len(vals) >= 3:
        vals = vals[1:-1]
    return statistics.mean(vals)


# Student's t, two-sided 95 %, by degrees of freedom (n - 1).
T975 = [None, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086]


def t_interval(vals):
    """The 95 % t-interval of the mean of vals (lo, hi), or None with
    fewer than 2 values."""
    vals = [v for v in vals if v is not None]
    n = len(vals)
    if n < 2:
        return None
    m, sd = statistics.mean(vals), statistics.stdev(vals)
    t = T975[n - 1] if n - 1 < len(T975) else 1.96
    h = t * sd / math.sqrt(n)
    return (m - h, m + h)


def overlap(a, b):
    """Whether intervals a and b overlap (an unknown interval overlaps
    everything: no verdict rests on it)."""
    if a is None or b is None:
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def load(out):
    rows = []
    path = os.path.join(out, "hpio.csv")
    if os.path.exists(path):
        rows = list(csv.DictReader(open(path, newline="")))
    raw = {}
    for r in rows:
        k = (int(r["count"]), int(r["size"]), int(r["spacing"]), r["target"], r["method"], r["case"])
        a = raw.setdefault(k, {"write": [], "read": []})
        a["write"].append(float(r["write_mbs"]) if r["write_mbs"] else None)
        a["read"].append(float(r["read_mbs"]) if r["read_mbs"] else None)
    agg = {k: {op: trimmed(v) for op, v in a.items()} for k, a in raw.items()}
    CI.clear()
    CI.update({k: {op: t_interval(v) for op, v in a.items()} for k, a in raw.items()})
    return rows, agg


# The interval of every point and op, as load() found them: {key: {op: (lo, hi)}}.
CI = {}


def ci(pt, target, method, case, op="write"):
    a = CI.get(pt + (target, method, case))
    return a[op] if a else None


def apart(pt, m1, m2, case, op="write", pt2=None):
    """+1 if m1 at pt is faster than m2 at pt2 (default pt) beyond both
    intervals, -1 if slower, 0 if the intervals overlap (no verdict)."""
    a, b = ci(pt, "tessera", m1, case, op), ci(pt2 or pt, "tessera", m2, case, op)
    if overlap(a, b):
        return 0
    return 1 if a[0] > b[1] else -1


def sweep_points(meta, sweep, agg):
    pts = []
    for v in meta["sweeps"].get(sweep, []):
        pt = dict(DEFAULT)
        pt[sweep] = v
        pts.append((v, (pt["count"], pt["size"], pt["spacing"])))
    return pts


def value(agg, pt, target, method, case, op="write"):
    a = agg.get(pt + (target, method, case))
    return a[op] if a else None


def plot_sweeps(out, meta, agg, plt):
    made = []
    for sweep, (fig, label) in FIGS.items():
        pts = sweep_points(meta, sweep, agg)
        if not pts:
            continue
        for op in ("write", "read"):
            f, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
            for ax, case in zip(axes.flat, CASES):
                for target, method in SERIES:
                    xs, ys, err = [], [], [[], []]
                    for v, pt in pts:
                        y = value(agg, pt, target, method, case, op)
                        if y:
                            xs.append(v)
                            ys.append(y)
                            lo, hi = ci(pt, target, method, case, op) or (y, y)
                            # a log axis: the bar stops short of 0
                            err[0].append(max(0.0, y - max(lo, y / 100)))
                            err[1].append(max(0.0, hi - y))
                    if xs:
                        ax.errorbar(xs, ys, yerr=err, capsize=2, elinewidth=0.8,
                                    marker="o" if target == "tessera" else "x",
                                    linestyle="-" if target == "tessera" else ":",
                                    color=COLOR[method], label="%s %s" % (target, method))
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title(case)
                ax.grid(True, which="major", alpha=0.3)
                ax.set_ylabel("aggregate MB/s")
            for ax in axes[1]:
                ax.set_xlabel(label)
            h, lab = axes.flat[0].get_legend_handles_labels()
            f.legend(h, lab, loc="lower center", ncol=4, fontsize=8)
            f.suptitle("HPIO %ss over MPI-IO, vary %s (like Fig. %s); %s, %s mode, %d ranks" % (
                op, label, fig, meta["net"], meta["mode"], meta["nprocs"]))
            f.tight_layout(rect=(0, 0.08, 1, 0.96))
            name = "fig%s-%s-%s.png" % (fig, sweep, op)
            f.savefig(os.path.join(out, name), dpi=60)
            plt.close(f)
            made.append(name)
    return made


def fmt(v, d=2):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    if v >= 1:
        return "%.*f" % (d, v)
    return "%.3f" % v


# ------------------------------------------------------------ the tables
def paper_tables(row):
    """The dissertation's number and its formula at our parameters:
    {column: (paper value or None, formula value)} for one tables.csv row."""
    t, n, m = row["table"], int(row["nprocs"]), row["method"]
    label = row["label"]
    desired = int(row["bytes_desired"])
    out = {}
    MB4 = 4 * MiB
    if t == "3.1":
        frames = desired // (768 * 3072)
        ext = 767 * 7596 + 3072
        ops = {"posix": 768 * frames, "sieve": 2 * frames,
               "coll": math.ceil(desired * 6 * 0.755 / (6 * MB4)),
               "list": math.ceil(768 / 64) * frames, "datatype": 1}
        paper = {"posix": 768, "sieve": 2, "coll": 1, "list": 12, "datatype": 1}
        acc = {"sieve": ext * frames, "coll": int(1.70 * MiB) * frames}
        out["requests"] = (paper[m] if frames == 1 else None, ops[m])
        out["bytes_accessed"] = ({"sieve": 5.56 * MiB, "coll": 1.70 * MiB}.get(m, 2.25 * MiB)
                                 if frames == 1 else None, acc.get(m, desired))
        out["bytes_resent"] = ((1.50 * MiB if m == "coll" else 0) if frames == 1 else None,
                               None if m == "coll" else 0)
    elif t == "3.2":
        side = int(re.search(r"(\d+)\^3", label).group(1))
        p = round(n ** (1 / 3))
        L = side // p
        ops = {"posix": L * L, "sieve": math.ceil(desired * p * p / MB4),
               "coll": math.ceil(desired / MB4), "list": math.ceil(L * L / 64), "datatype": 1}
        paper = {8: {"posix": 90000, "sieve": 103, "coll": 26, "list": 1408, "datatype": 1},
                 27: {"posix": 40000, "sieve": 69, "coll": 8, "list": 626, "datatype": 1}}
        pp = paper.get(n, {}) if side == 600 else {}
        out["requests"] = (pp.get(m), ops[m])
        # a sieving write reads its window and writes it back: twice the extent
        out["bytes_accessed"] = (None, 2 * desired * p * p if m == "sieve" else desired)
        out["bytes_resent"] = (None, desired * (1 - 1 / (p * p)) if m == "coll" else 0)
    elif t == "3.3":
        blocks = desired // (512 * 24 * 8)
        ops = {"posix": blocks * 512 * 24, "coll": math.ceil(desired / MB4),
               "list": blocks * 512 * 24 // 64, "datatype": 1}
        paper = {"posix": 983040, "coll": 2, "list": 15360, "datatype": 1}
        out["requests"] = (paper.get(m) if blocks == 80 else None, ops[m])
        out["bytes_accessed"] = (7.5 * MiB if blocks == 80 else None, desired)
        out["bytes_resent"] = (None, desired * (n - 1) / n if m == "coll" else 0)
    return out


WHY = {
    "posix": "Tessera counts a request per storage daemon a piece touches; a piece "
             "that crosses a 64 KiB strip boundary is two",
    "sieve": "the driver sieves in windows of ind_*_buffer_size (4 MiB) but reads each "
             "window as one request per storage daemon it spans and per max_io (1 MiB), and a sieving "
             "write reads the window first",
    "coll": "two-phase's aggregators read or write their file domains in cb_buffer_size "
            "pieces, each a request per storage daemon spanned and per max_io (1 MiB); "
            "the dissertation counted one per file-system call",
    "list": "a list request carries at most 64 regions (the tessera_list_batch hint, "
            "the dissertation's limit), split per storage daemon: a batch that spans "
            "k daemons is k requests",
    "datatype": "one request per storage daemon the access touches and per max_io "
                "(1 MiB) of data a request carries at most (the dissertation counted one "
                "file-system call per client)",
}


def _table_index(rows, idx):
    """Tabs. 3.1-3.3 in the report's index: the requests against the
    dissertation's where it gives them at these parameters; Tab. 4.1: the
    bytes POSIX, list and datatype I/O access against the bytes wanted."""
    for t in ("3.1", "3.2", "3.3"):
        rs = [r for r in rows if r["table"] == t]
        held, off = [], []
        for r in rs:
            paper = paper_tables(r)["requests"][0]
            if paper is None:
                continue
            ok = float(r["requests"]) == paper
            held.append(ok)
            if not ok:
                off.append("%s %g (%g)" % (r["method"], round(float(r["requests"]), 1), paper))
        if not rs:
            continue
        if not held:
            idx.add("Tab. " + t, report_index.UNDECIDED, "run at other parameters than the "
                    "dissertation's: compared with the formula only", "Request counts")
            continue
        idx.add("Tab. " + t, report_index.combine(held),
                "requests equal the dissertation's for %d of %d methods%s" % (
                    held.count(True), len(held), "; not: " + ", ".join(off) + " (the "
                    "verdict column says why)" if off else ""), "Request counts")
    acc = [abs(float(r["bytes_accessed"]) - int(r["bytes_desired"])) <= 0.01 * int(r["bytes_desired"])
           for r in rows if r["method"] in ("posix", "list", "datatype")]
    if acc:
        idx.add("Tab. 4.1", report_index.combine(acc),
                "POSIX, list and datatype I/O access the bytes wanted (within 1 %%) in %d of %d "
                "rows; sieving and two-phase as the formulas say" % (acc.count(True), len(acc)),
                "Request counts")


def tables_section(out, idx):
    path = os.path.join(out, "tables.csv")
    if not os.path.exists(path):
        return ["(no tables in this study)"]
    rows = list(csv.DictReader(open(path, newline="")))
    _table_index(rows, idx)
    lines = []
    names = {"3.1": "Tab. 3.1, tile reader (read, per client)",
             "3.2": "Tab. 3.2, ROMIO 3-D block test (write, per client)",
             "3.3": "Tab. 3.3, FLASH I/O (write, per client)"}
    mname = {"coll": "two-phase"}
    for label in dict.fromkeys(r["label"] for r in rows):
        rs = [r for r in rows if r["label"] == label]
        lines += ["", "**%s**: %s" % (names[rs[0]["table"]], label), "",
                  "| method | requests | traced | dissertation | formula here | verdict | desc B | "
                  "accessed MiB | formula | resent MiB (measured) | formula | desired MiB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            pt = paper_tables(r)
            req = float(r["requests"])
            paper, formula = pt["requests"]
            if req == formula:
                verdict = "equal"
            elif r["table"] == "3.3" and r["method"] in ("posix", "list"):
                verdict = ("different: the driver packs the noncontiguous memory type into one "
                           "buffer first, so requests follow the file's regions (a rank's blocks "
                           "of one variable are adjacent: 24 regions), not memory's 8-byte "
                           "pieces; then as for every method, a request per storage daemon")
            else:
                verdict = "different: " + WHY[r["method"]]
            if paper is None:
                paper_s = "(other parameters)"
            else:
                paper_s = "%g" % paper
            acc = float(r["bytes_accessed"]) / MiB
            resent = "%.2f" % (float(r["bytes_resent"]) / MiB)
            if r.get("bytes_resent_model") not in (None, "") and \
                    abs(float(r["bytes_resent_model"]) - float(r["bytes_resent"])) >= 0.005 * MiB:
                resent += " (model %.2f)" % (float(r["bytes_resent_model"]) / MiB)
            fa = pt["bytes_accessed"][1]
            fr = pt["bytes_resent"][1]
            lines.append("| %s | %.1f | %s | %s | %s | %s | %.0f | %.2f | %s | %s | %s | %.2f |" % (
                mname.get(r["method"], r["method"]), req,
                "%.1f" % float(r["trace_requests"]) if r.get("trace_requests") else "-",
                paper_s, formula, verdict,
                float(r["desc_bytes"]), acc, "%.2f" % (fa / MiB) if fa is not None else "ap depend",
                resent, "%.2f" % (fr / MiB) if fr is not None else "ap depend",
                int(r["bytes_desired"]) / MiB))
    lines += ["", "Requests, description bytes and bytes accessed are the storage daemons' "
              "counters (`tessera stats`, summed over the daemons, divided by the clients) "
              "around the one call; traced is the data requests a client sent by its request "
              "trace (traces/, `tests/study/trace_summary.py`); resent bytes are the bytes per client "
              "that two-phase's exchange moved between ranks, measured by the driver (each rank's "
              "bytes in another aggregator's file domain by ROMIO's own domains, one aggregator "
              "per rank; `coll_bytes_sent`/`_received` in its trace, docs/mpi-io.md); where the "
              "benchmark's model of an even split differs, it follows in parentheses. Sieving reads of the window count as accessed (a sieving write reads and writes it: twice the extent).", "",
              "**Tab. 4.1 (the analytic comparison), checked on these rows:** desired data is n "
              "for every method (the `desired` column); POSIX, list and datatype access n "
              "(accessed = desired above, up to whole-strip rounding); sieving accesses the "
              "file extent; two-phase accesses agg file ext / aggregators and resends an "
              "access-pattern-dependent amount (the `resent` column); datatype I/O needs one "
              "request per server touched, list I/O ⌈fr count / fr per access⌉ per server "
              "touched."]
    return lines


# ------------------------------------------------------------ guidelines
def _pt(**kw):
    """The default HPIO point with kw's parameters changed."""
    d = dict(DEFAULT)
    d.update(kw)
    return (d["count"], d["size"], d["spacing"])


def _w(agg, p, m, case, target="tessera"):
    """Write MB/s of method m at point p, or None."""
    return value(agg, p, target, m, case)


UNDECIDED = "not decided"


def _best(agg, p, methods, case):
    """The method of `methods` with the highest write at p, or None."""
    c = {m: _w(agg, p, m, case) for m in methods}
    c = {m: v for m, v in c.items() if v}
    return max(c, key=c.get) if c else None


def _g2_grouping(agg):
    d = _pt()
    heading = "Group individual I/O access to make large MPI-IO calls"
    got = []
    for c in ("c-nc", "nc-nc"):
        b, p_ = _best(agg, d, ("list", "datatype"), c), _w(agg, d, "posix", c)
        if b and p_:
            got.append((c, b, _w(agg, d, b, c) / p_, apart(d, b, "posix", c)))
    if len(got) < 2:
        return (2, heading, "not measured", "POSIX was not run at the default point in this mode")
    r = min(x[2] for x in got)
    ev = "at the default point one list/datatype call writes %.0f× faster than POSIX (a call " \
         "per region)" % r
    if any(x[3] == 0 for x in got):
        return (2, heading, UNDECIDED, ev + "; the intervals overlap in " +
                ", ".join(x[0] for x in got if x[3] == 0))
    return (2, heading, "supported" if r > 3 and all(x[3] > 0 for x in got) else "contradicted", ev)


def _trend(meta, agg, n, heading, sweep, methods, grows):
    """Guideline n: c-nc writes from the sweep's first to its last value
    go up (grows) or down for every method; methods whose two intervals
    overlap decide nothing. (row, (lo, hi)), or (None, None) if the sweep
    has fewer than 2 values."""
    vals = meta["sweeps"].get(sweep, [])
    if len(vals) < 2:
        return None, None
    lo, hi = _pt(**{sweep: vals[0]}), _pt(**{sweep: vals[-1]})
    up = [(m, _w(agg, lo, m, "c-nc"), _w(agg, hi, m, "c-nc"), apart(hi, m, m, "c-nc", pt2=lo))
          for m in methods]
    up = [u for u in up if u[1] and u[2]]
    decided = [u for u in up if u[3]]
    ok = sum((u[3] > 0) == grows for u in decided)
    verdict = UNDECIDED if not decided else "supported" if ok == len(decided) else \
        "partly supported" if ok else "contradicted"
    row = (n, heading, verdict,
           "c-nc writes, %s %d → %d: " % (sweep, vals[0], vals[-1]) +
           ", ".join("%s %s → %s MB/s%s" % (m, fmt(a), fmt(b), "" if d else " (intervals overlap)")
                     for m, a, b, d in up))
    return row, (lo, hi)


def _clear_winner(agg, p, methods, case):
    """The method whose interval lies above every other's at p, else None."""
    w = _best(agg, p, methods, case)
    if not w:
        return None
    others = [m for m in methods if m != w and _w(agg, p, m, case)]
    return w if all(apart(p, w, m, case) > 0 for m in others) else None


def _g5_collective(meta, agg, ends):
    """5: two-phase wins at small spacing, individual methods at large."""
    lo, hi = ends
    sp = meta["sweeps"].get("spacing", [])
    ms = ("list", "datatype", "two-phase")
    wl, wh = _clear_winner(agg, lo, ms, "c-nc"), _clear_winner(agg, hi, ms, "c-nc")
    heading = "Consider individual versus collective (two-phase) I/O"
    ev = "c-nc writes: best at spacing %d is %s, at spacing %d %s (the dissertation: two-phase " \
         "wins small spacing, datatype passes it near 1 KiB)" % (
             sp[0], wl or "none clearly (intervals overlap)", sp[-1],
             wh or "none clearly (intervals overlap)")
    if wl is None or wh is None:
        return (5, heading, UNDECIDED, ev)
    verdict = "supported" if wl == "two-phase" and wh != "two-phase" else \
        "partly supported" if (wl == "two-phase") or (wh != "two-phase") else "contradicted"
    return (5, heading, verdict, ev)


def _g6_datatype(meta, agg):
    """6: datatype best of the individual methods over all nc points,
    counting only points where its interval is clear of the others', and
    only when at least half the points are."""
    wins = losses = total = 0
    for k in {k[:3] for k in agg}:
        for case in ("nc-c", "c-nc", "nc-nc"):
            c = [m for m in ("posix", "sieve", "list", "datatype") if _w(agg, k, m, case)]
            if "datatype" in c and len(c) > 1:
                total += 1
                vs = [apart(k, "datatype", m, case) for m in c if m != "datatype"]
                wins += all(v > 0 for v in vs)
                losses += any(v < 0 for v in vs)
    if not total:
        return None
    heading = "When using individual I/O methods, choose datatype I/O"
    ev = "datatype I/O writes clearly fastest of the individual methods at %d, clearly not at " \
         "%d, of %d noncontiguous points (the rest overlap)" % (wins, losses, total)
    if (wins + losses) * 2 < total:  # a majority verdict needs most points apart
        return (6, heading, UNDECIDED, ev)
    ok = wins > (wins + losses) / 2
    return (6, heading, "supported" if ok else "contradicted",
            ev + ("" if ok else "; list I/O with Tessera's batch of 8192 regions needs as few "
                  "requests, " + ("and on loopback the description bytes datatype I/O saves "
                                  "cost nothing" if meta["net"] == "loopback" else
                                  "and over these links both are mostly bound by the link or "
                                  "the sync")))


def _g7_sieving(meta, agg):
    d = _pt()
    sv = []
    for case in ("c-nc", "nc-nc"):
        s, b = _w(agg, d, "sieve", case), _best(agg, d, ("list", "datatype"), case)
        if s and b:
            sv.append((case, s, _w(agg, d, b, case), apart(d, "sieve", b, case)))
    if not sv:
        return None
    ev = "; ".join("%s: sieve %s MB/s, best of list/datatype %s%s" % (
        c, fmt(s), fmt(b), "" if a else " (intervals overlap)") for c, s, b, a in sv)
    decided = [x for x in sv if x[3]]
    if not decided:
        return (7, "Do not use data sieving I/O for interleaved writes", UNDECIDED, ev)
    ok = all(x[3] < 0 for x in decided)
    return (7, "Do not use data sieving I/O for interleaved writes",
            "supported" if ok else "contradicted", ev)


def _g8_memory(meta, agg):
    """8: nc-nc writes at least 2/3 of c-nc's, per method over every
    point; a point decides only if nc-nc's interval is clear of 2/3 of
    c-nc's (above: supports; below: contradicts), and a verdict needs at
    least half the points decided."""
    rr, sup, con = [], 0, 0
    for m in ("list", "list64", "datatype", "two-phase"):
        q = []
        for k in {k[:3] for k in agg}:
            a, b = value(agg, k, "tessera", m, "nc-nc"), value(agg, k, "tessera", m, "c-nc")
            if not (a and b):
                continue
            q.append(a / b)
            ia, ib = ci(k, "tessera", m, "nc-nc"), ci(k, "tessera", m, "c-nc")
            if ia and ib:
                sup += ia[0] > 0.67 * ib[1]
                con += ia[1] < 0.67 * ib[0]
        if q:
            rr.append((m, statistics.median(q), len(q)))
    if not rr:
        return None
    heading = "No need to reorganize the memory description if the file's is noncontiguous"
    ev = "nc-nc / c-nc writes, the median over the points: " + \
        ", ".join("%s %.2f (%d points)" % x for x in rr) + \
        "; clearly at least 2/3 at %d points, clearly below at %d (the rest overlap)" % (sup, con)
    if (sup + con) * 2 < sum(x[2] for x in rr):
        return (8, heading, UNDECIDED, ev)
    return (8, heading, "supported" if sup > con and not con else
            "contradicted" if con > sup else "partly supported", ev)


def guidelines(meta, agg):
    """(number, heading, verdict, evidence) for §5.5's guidelines."""
    res = [(1, "Use MPI-IO", "not tested",
            "every run here is MPI-IO; the library-level comparison is `tessera-bench-hpio`"),
           _g2_grouping(agg)]
    g3, _ = _trend(meta, agg, 3, "Increase the file region size", "size",
                   ("list", "datatype", "two-phase"), True)
    g4, ends = _trend(meta, agg, 4, "Reduce the file region spacing", "spacing",
                      ("list", "datatype", "two-phase", "sieve"), False)
    res += [g for g in (g3, g4) if g]
    if ends:
        res.append(_g5_collective(meta, agg, ends))
    res += [g for g in (_g6_datatype(meta, agg), _g7_sieving(meta, agg), _g8_memory(meta, agg))
            if g]
    return res


def s3d_plot(out, plt):
    path = os.path.join(out, "s3d.txt")
    if not os.path.exists(path):
        return None, []
    txt = open(path).read().splitlines()
    # the first table after "-- MB/s (% of atomic mode off)"
    start = next((i for i, l in enumerate(txt) if l.startswith("-- MB/s")), None)
    if start is None:
        return None, txt
    head = txt[start + 1].split()[1:]
    ranks = [int(h) for h in head if h.isdigit()]
    data = {}
    for l in txt[start + 2:]:
        if l.startswith("--") or not l.strip():
            break
        name = "atomic mode off" if l.startswith("atomic mode off") else l.split()[0]
        nums = re.findall(r"(?<![(\d.])(\d+(?:\.\d+)?)(?!\s*%)(?![\d.])", l[20:])
        vals = [float(x) for x in nums][:len(ranks)]
        data[name] = vals
    if plt is None or not data:
        return None, txt
    f, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(1, len(data))
    for i, (name, vals) in enumerate(data.items()):
        ax.bar([j + i * width for j in range(len(vals))], vals, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(ranks))])
    ax.set_xticklabels(["%d ranks" % r for r in ranks])
    ax.set_ylabel("MB/s (write + sync)")
    ax.set_title("S3D-like checkpoint, atomic mode by lock method and protocol (like Fig. 7.7)")
    ax.legend(fontsize=7, ncol=2)
    f.tight_layout()
    f.savefig(os.path.join(out, "fig7.7-s3d.png"), dpi=60)
    plt.close(f)
    return "fig7.7-s3d.png", txt


def _matplotlib(plots):
    """pyplot, or None without plots or without matplotlib."""
    if not plots:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _network_line(net):
    """The report's network paragraph from meta's net: loopback,
    cluster:CONF (--cluster) or "RATE[ LATENCY][ Nnodes]" (--net, --nodes:
    tests/study/netns.sh)."""
    if net == "loopback":
        return ("- Network: **loopback** (every daemon and rank on 127.0.0.1; the network costs "
                "nothing, so description bytes and two-phase's second transfer are nearly free)")
    if net.startswith("cluster:"):
        return ("- Network: **an existing cluster** (`--cluster %s`): the study **did not start "
                "or stop the servers**; it ran only the clients (the MPI ranks, on this host) "
                "against the daemons this config names, and records the config's tunables (what "
                "the file says now; the daemons read it when they started). The network, disks "
                "and load of that cluster are whatever they were." % net[len("cluster:"):])
    f = net.split()
    rate = f[0]
    lat = next((x for x in f[1:] if re.match(r"\d+[um]s", x)), "")
    lat, by = (lat.rstrip(")").split("(") + ["netem"])[:2] if lat else ("", "")
    nodes = next((int(x[:-5]) for x in f[1:] if x.endswith("nodes")), 0)
    where = ("the metadata daemon, the storage daemons and the MPI ranks share **%d \"nodes\"** "
             "(rank r and storage daemon i on nodes r mod %d and i mod %d), Linux network "
             "namespaces joined by a bridge; the ranks talk to each other over TCP on the same "
             "links (Open MPI's tcp BTL), ranks on one node over its own loopback" % (
                 nodes, nodes, nodes) if nodes else
             "the metadata daemon and the storage daemons run on two \"nodes\", Linux network "
             "namespaces joined by a bridge; the MPI ranks and the UFS file stay in the root "
             "namespace (one client node), where the ranks share memory")
    how = ("tc netem" if by == "netem" else
           "a delay line in user space, tests/study/delayline.py, as this kernel has no netem: "
           "at least that, plus the delay line's own cost, tens of microseconds")
    delay = (" and every packet a node (or the root namespace) sends waits %s (%s), so "
             "a round trip between two nodes takes 2 x %s more" % (lat, how, lat) if lat else
             "; no latency is added beyond the kernel's own")
    return ("- Network: **simulated %s**: %s. Each node's link is limited to %s each way (tc "
            "token bucket; with a latency, netem's rate on the node's side)%s. Not simulated: "
            "disks (the daemons write into page cache), switches, and CPUs (every node shares "
            "this machine's 2 cores)." % (net, where, rate, delay))


def _setup_lines(meta):
    """The mode, the network and how to read the numbers."""
    return ["- Mode: **%s** (%d repetitions a point, the highest and the lowest dropped, the rest "
            "averaged, with the 95 %% t-interval of the mean over all of them; a verdict rests "
            "only on points whose intervals do not overlap%s); %d MPI ranks, 1 metadata and %d storage daemons, 64 KiB strips; "
            "Tessera's methods and ROMIO's UFS driver on a local file in the same run." % (
                meta["mode"], meta["reps"],
                "; the dissertation used 6 repetitions and 64 ranks on 16 servers" if meta["mode"] != "full"
                else "", meta["nprocs"], meta["n_ios"]),
            _network_line(meta["net"]),
            "- Writes include `MPI_File_sync` (the call and the sync are also timed apart, and opens "
            "and closes outside both: see \"Where the time goes\"); reads are from the daemons' "
            "page cache%s. MB = 10^6 bytes; " % (
                ", through the daemons (local reads off: `TESSERA_LOCAL_READS=0`)"
                if not meta.get("local_reads") else ", **with local reads on** (reads of 64 KiB "
                "or more go to the daemons' files on this host, around the daemons and their "
                "counters; every series of this study is so labelled)") +
            "aggregate MB/s = all ranks' bytes / the slowest rank's time. At the default point a "
            "rank moves 32 KiB, a write of a millisecond or two plus the sync, so points that small "
            "move by ±100 % from run to run on a shared 2-core machine; trends over a sweep and "
            "the larger points are what to read. Unlike the dissertation, no one-second pause "
            "between runs, and every rank runs on this one machine.",
            "- Started %s. Left out: %s." % (meta.get("started", "?"), "; ".join(meta.get("left_out", [])) or
                                            "nothing"),
            ""]


def _sieve_text(meta, allr):
    """What sieve_gap and sieve_span do to the figures, with the spacing
    where this study's step falls."""
    gap = int(allr[0]["sieve_gap"]) if allr and allr[0].get("sieve_gap") else 4096
    n, size = meta["nprocs"], DEFAULT["size"]
    # one rank's regions are (size + spacing) * n - size apart in the file
    last = (gap + size) // n - size
    return ("What the storage daemons' own parameters do to the figures: the pieces of one "
            "request that lie at most `sieve_gap` bytes apart (and within `sieve_span`) move "
            "as one span: a read reads the span, a write reads it, lays the pieces over it and "
            "writes it back (data sieving inside the daemon), in whole checksum blocks; pieces "
            "farther apart take a system call each, a write also reading and rewriting the "
            "partial checksum blocks at its ends. In an interleaved HPIO file one rank's "
            "regions lie (size + spacing) × ranks − size apart, so with %d ranks, %d-byte "
            "regions and `sieve_gap` %d, list and datatype writes change from one sieved span "
            "to a call per region past spacing %d (the issue measured a 4× drop from spacing "
            "1016 to 1024 at 4 ranks and the default 4096): a step in Fig. 5.4 there is "
            "Tessera's parameter, not the network's or the method's. Sieving I/O's and "
            "two-phase's file accesses are contiguous and do not change with it. "
            "`--sieve-gap` and `--sieve-span` rerun the study with other values (its folder is "
            "named after them)." % (n, size, gap, last))


def _csum_text(allr):
    """What csum_block (the stores' checksum block) does to the figures."""
    blocks = sorted({r.get("csum_block") or "4096" for r in allr}, key=int)
    return ("The checksum block (`csum_block`, here %s bytes) is the unit of the daemons' "
            "integrity checks: a write that does not cover whole blocks reads and checks the "
            "partial block at each of its ends and checksums whole blocks again, and a read "
            "through the daemons reads and checks whole blocks. Below the sieve step a "
            "request's regions are one span and the block only widens its two ends; past it "
            "every small region of a list or datatype write is a read-modify-write of its "
            "own block (read, two CRCs of the block, the region, its sum), and every region "
            "read alone reads and checks a whole block, so the per-region cost of the "
            "spacing figure's right side grows with the block while sieving and two-phase "
            "(contiguous accesses) do not see it. docs/benchmarks.md (\"The checksum "
            "block\") has the measured ratios; `--csum-block` reruns the study with another "
            "block (each store keeps the block it was made with, so the study's daemons "
            "start on new stores)." % ", ".join(blocks))


def _record_lines(meta, rows, out):
    """What every CSV row recorded: load, commits, the daemons' tunables,
    and what the tunables do to the figures."""
    trows = []
    tpath = os.path.join(out, "tables.csv")
    if os.path.exists(tpath):
        trows = list(csv.DictReader(open(tpath, newline="")))
    allr = [r for r in rows + trows if "load1" in r]
    if not allr:
        return []
    loads = [float(r["load1"]) for r in allr]

    def vals(k):
        return ", ".join(sorted({r[k] for r in allr}))
    return ["## What the runs ran with", "",
            "Every row of hpio.csv and tables.csv records the 1-minute load average when it was "
            "taken, the commit, the network and the daemons' settings. Here: load %.2f to %.2f "
            "(median %.2f; 2 cores), commit %s, network %s, local reads %s, `sieve_gap` %s, "
            "`sieve_span` %s, checksum block %s, strips %s, `max_io` %s, list batch %s." % (
                min(loads), max(loads), statistics.median(loads), vals("commit"), vals("net"),
                vals("local_reads"), vals("sieve_gap"), vals("sieve_span"), vals("csum_block"),
                vals("strip_size"), vals("max_io"), vals("list_io_max_regions")), "",
            _sieve_text(meta, allr), "",
            _csum_text(allr), ""]


PHASES = [("write_call_s", "write call"), ("sync_s", "sync"), ("w_open_s", "open (write)"),
          ("w_close_s", "close (write)"), ("r_open_s", "open (read)"),
          ("r_close_s", "close (read)")]


def _phase_lines(rows):
    """Where the time goes: each phase's mean over the repetitions at the
    default point (else the first point), c-nc, in ms."""
    rows = [r for r in rows if "sync_s" in r]
    if not rows:
        return []
    pts = {(int(r["count"]), int(r["size"]), int(r["spacing"])) for r in rows}
    pt = (DEFAULT["count"], DEFAULT["size"], DEFAULT["spacing"])
    pt = pt if pt in pts else sorted(pts)[0]
    L = ["## Where the time goes (count %d, size %d, spacing %d; c-nc; ms, mean of the "
         "repetitions, each the slowest rank's)" % pt, "",
         "| series | " + " | ".join(h for _, h in PHASES) + " | write + sync |",
         "|---|" + "---|" * (len(PHASES) + 1)]
    for t, m in SERIES:
        rs = [r for r in rows if (int(r["count"]), int(r["size"]), int(r["spacing"])) == pt
              and r["target"] == t and r["method"] == m and r["case"] == "c-nc"]
        if rs:
            L.append("| %s %s | " % (t, m) + " | ".join(
                "%.2f" % (1000 * statistics.mean(float(r[k]) for r in rs)) for k, _ in PHASES) +
                " | %.2f |" % (1000 * statistics.mean(float(r["write_s"]) for r in rs)))
    return L + ["", "The bandwidths above are of the write call and the sync together (as the "
                "dissertation's); opens and closes are in none of them.", ""]


def _list_sync_lines(rows, agg):
    """The two list series side by side at the default point (or the first
    point run), and what one sync does to two-phase's sync time."""
    pts = {(int(r["count"]), int(r["size"]), int(r["spacing"])) for r in rows
           if r["method"] == "list64"}
    if not pts:
        return []
    pt = (DEFAULT["count"], DEFAULT["size"], DEFAULT["spacing"])
    pt = pt if pt in pts else sorted(pts)[0]
    L = ["## List I/O: the dissertation's (list64) and Tessera's (list)", "",
         "list64 sends 64 file regions per request and noncontiguous memory as a list of its "
         "regions (hints `tessera_list_batch=64`, `tessera_mem_pack=false`), as the "
         "dissertation's list I/O; list sends the config's `list_io_max_regions` per request "
         "and packs noncontiguous memory into one buffer first. At count %d, size %d, "
         "spacing %d (MB/s, trimmed mean; * where the 95 %% intervals are apart):" % pt, "",
         "| case | list write | list64 write | list read | list64 read |", "|---|---|---|---|---|"]
    for case in CASES:
        cells = []
        for op in ("write", "read"):
            for m in ("list", "list64"):
                v = value(agg, pt, "tessera", m, case, op)
                mark = "*" if apart(pt, "list", "list64", case, op) else ""
                cells.append("%s%s" % (fmt(v) if v else "-", mark))
        L.append("| %s | %s |" % (case, " | ".join(cells[i] for i in (0, 1, 2, 3))))
    sync = {}
    for r in rows:
        if r["target"] == "tessera" and r.get("sync_mode") and r["sync_s"] not in ("", "-1"):
            sync.setdefault((r["method"], r["sync_mode"]), []).append(float(r["sync_s"]))
    if sync:
        L += ["", "MPI_File_sync after the write (ms, mean over every point and case): " +
              ", ".join("%s %.2f (%s)" % (m, 1000 * statistics.mean(v), "one rank syncs"
                                          if mode == "one" else "every rank syncs")
                        for (m, mode), v in sorted(sync.items())) +
              ". Two-phase runs with `tessera_sync=one` (seed 001, §5.3: the PVFS2 driver "
              "had one process sync for all in two-phase runs); the others sync on every "
              "rank, as the dissertation's individual methods did."]
    return L + [""]


def _mode_lines(meta):
    """What a quick or tiny mode leaves out; nothing in full mode."""
    if meta["mode"] == "full":
        return []
    return ["%s mode: fewer sweep points (%s), %d repetitions, POSIX through Tessera only "
            "up to %d regions%s (a request per region), smaller table parameters "
            "(3-D block 120^3, FLASH 8 blocks a client), a smaller S3D grid; "
            "`make study FULL=1` runs the dissertation's ranges." % (
                meta["mode"].capitalize(), "; ".join("%s %s" % (k, ",".join(map(str, v))) for k, v in meta["sweeps"].items()),
                meta["reps"], meta["posix_max_count"],
                " of up to %d bytes" % meta["posix_max_size"] if meta.get("posix_max_size") else ""), ""]


def _failure_lines(out):
    fail = os.path.join(out, "failures.txt")
    if not os.path.exists(fail):
        return []
    return ["**Failures** (these points are missing; rerun to retry them):", "", "```",
            open(fail).read().strip(), "```", ""]


def _sweep_lines(meta, agg, figs):
    """Figs. 5.2-5.4: the PNGs and a table of each sweep."""
    L = ["## HPIO over MPI-IO (Figs. 5.2-5.4)", ""]
    for f in figs:
        if f.endswith("write.png"):
            L.append("![%s](%s)" % (f, f))
    L += ["", "Reads: " + ", ".join("[%s](%s)" % (f, f) for f in figs if f.endswith("read.png")), ""]
    for sweep, (fig, label) in FIGS.items():
        pts = sweep_points(meta, sweep, agg)
        if not pts:
            continue
        L += ["### Vary %s (Fig. %s), write MB/s" % (label, fig), "",
              "| case | %s | " % sweep + " | ".join("%s %s" % s for s in SERIES) + " |",
              "|---|---|" + "---|" * len(SERIES)]
        for case in CASES:
            for v, pt in pts:
                L.append("| %s | %d | " % (case, v) + " | ".join(
                    cell(agg, pt, t, m, case) for t, m in SERIES) + " |")
        L.append("")
    L += ["Each cell: the average (the dissertation's: highest and lowest repetition dropped) "
          "and, in brackets, the 95 % t-interval of the mean over the repetitions. † marks a "
          "point whose interval overlaps that of another series at the same point and case: "
          "their order there is not established, and no verdict below rests on it.", ""]
    return L


def cell(agg, pt, target, method, case, op="write"):
    """A sweep table's cell: value [interval], † if the interval overlaps
    another series' at this point."""
    v = value(agg, pt, target, method, case, op)
    if v is None:
        return "-"
    mine = ci(pt, target, method, case, op)
    if mine is None:
        return fmt(v) + " †"
    flag = any(overlap(mine, ci(pt, t, m, case, op)) for t, m in SERIES
               if (t, m) != (target, method) and value(agg, pt, t, m, case, op) is not None)
    return "%s [%s–%s]%s" % (fmt(v), fmt(max(mine[0], 0)), fmt(mine[1]), " †" if flag else "")


def _dissertation_lines(agg):
    """Beside the dissertation's stated numbers."""
    L = ["### Beside the dissertation's stated numbers (64 ranks, 16 PVFS2 servers, Myrinet)", "",
         "| what | dissertation | here |", "|---|---|---|"]
    d = (4096, 8, 128)
    L.append("| POSIX nc-c, 4096 regions of 8 B | ≤ 0.145 MB/s | %s MB/s (the driver packs "
             "noncontiguous memory and writes the contiguous file region at once; POSIX c-nc: "
             "%s) |" % (fmt(value(agg, d, "tessera", "posix", "nc-c")),
                        fmt(value(agg, d, "tessera", "posix", "c-nc"))))
    L.append("| datatype nc-c (their spacing-test average; here the default point) | 23.83 MB/s (c-c 23.65) | %s (c-c %s) |" % (
        fmt(value(agg, d, "tessera", "datatype", "nc-c")), fmt(value(agg, d, "tessera", "datatype", "c-c"))))
    L.append("| two-phase nc-c | 30.83 MB/s (c-c 32.02) | %s (c-c %s) |" % (
        fmt(value(agg, d, "tessera", "two-phase", "nc-c")), fmt(value(agg, d, "tessera", "two-phase", "c-c"))))
    cc = [v["write"] for k, v in agg.items() if k[3] == "tessera" and k[5] == "c-c" and v["write"]]
    cn = [v["write"] for k, v in agg.items() if k[3] == "tessera" and k[5] == "c-nc" and v["write"]]
    if cc and cn:
        L.append("| best c-nc write / best c-c write | < 5 %% | %.0f %% |" % (100 * max(cn) / max(cc)))
    L.append("")
    return L


# Which of §5.5's guidelines rest on which sweep's figure (guideline 1 is
# not tested; 6 to 8 compare methods at the default point, which is the
# region-count figure's).
GUIDELINE_FIGS = {"Fig. 5.2": (2, 6, 7, 8), "Fig. 5.3": (3,), "Fig. 5.4": (4, 5)}
GUIDELINE_HELD = {"supported": [True], "contradicted": [False],
                  "partly supported": [True, False], UNDECIDED: [None]}


def _guideline_index(rows, agg, idx):
    """Figs. 5.2-5.4 in the report's index, from the guidelines on them
    (none without HPIO rows)."""
    if not agg:
        return
    by = {n: v for n, _g, v, _e in rows}
    for fig, ns in GUIDELINE_FIGS.items():
        held = [h for n in ns for h in GUIDELINE_HELD.get(by.get(n), [])]
        if not held:
            continue
        idx.add(fig, report_index.combine(held), "guidelines %s: %s" % (
            ", ".join(str(n) for n in ns if n in by),
            "; ".join("%d %s" % (n, by[n]) for n in ns if n in by)), "Guidelines of §5.5")


def _guideline_lines(meta, agg, idx):
    net = meta["net"]
    L = ["## Guidelines of §5.5", "", "| # | guideline | verdict here | evidence |", "|---|---|---|---|"]
    rows = guidelines(meta, agg)
    for n, g, v, e in rows:
        L.append("| %d | %s | **%s** | %s |" % (n, g, v, e))
    _guideline_index(rows, agg, idx)
    L += ["", "Why the verdicts can differ from the dissertation's: %s" % (
        "on loopback the network is free, so list I/O's description bytes and two-phase's "
        "second transfer cost almost nothing, and the daemons write into page cache, so the "
        "fsync storms of §5.4.1 do not happen; with 2 cores the ranks, the daemons and the "
        "baseline share the CPUs." if net == "loopback" else
        "this ran on an existing cluster (%s), whose network and disks are its own." % net
        if net.startswith("cluster:") else
        "the simulated %s links make bytes on the wire cost, as on the dissertation's cluster, "
        "but the daemons still write into page cache and there are 2 cores." % net), ""]
    return L


# The lock benchmark's series (tests/bench/bench_locks.c): what each sends
# for n regions on d storage daemons (R lock requests), and what it stands
# for. The counts are definitions, checked by tests/integ/test_lock_methods.
LOCK_SERIES = [
    ("posix", "§7.2.1 POSIX locks: one lock request per region (one more where a region "
     "crosses a strip), all taken under the protocol before the I/O",
     "R = n requests: one-try and alt-try send them in one round, two-phase in n ordered "
     "rounds; n release messages"),
    ("posix-seq", "not the dissertation's: independent one-region locks one after another "
     "(what an fcntl user, or the MPI-IO driver's posix-seq lock method, does)",
     "n locks of one request each, n round trips whatever the protocol; n releases"),
    ("list", "Tessera's list lock: one request per daemon, the regions in as few messages as "
     "fit a frame", "about d messages; d releases"),
    ("list64", "Tessera's list lock at PVFS2's 64 regions a message, still one request per "
     "daemon (the pieces joined)", "n/64 messages; d releases"),
    ("list64-split", "§7.2.2 list locks: one request per 64-region message",
     "R = n/64 requests, sent as posix's; n/64 releases (the dissertation's thousands of "
     "unlock requests)"),
    ("datatype", "§7.2.3 datatype locks: the view sent to every daemon, each finds its bytes",
     "d messages in one-try; d releases"),
    ("block", "block-granular locks (Lustre/GPFS-style), the false-sharing baseline of §7.1 "
     "and §7.5: each region rounded out to 4 KiB blocks, then a list lock",
     "about d messages; d releases; disjoint bytes of one block conflict"),
]
LOCK_PROTOCOLS = ("With a conflict at request k of R, §7.3 and §7.4.1 give: two-phase R "
                  "messages (one blocking round each); one-try R + (R-1-k) partial releases "
                  "+ 1 + (R-1-k) blocking rounds; alt-try the same number in two optimistic "
                  "rounds and one blocking round. Without a conflict every protocol sends R "
                  "acquire messages; they differ in rounds (two-phase R, the others 1). "
                  "The false-sharing table (§7.1) interleaves the clients' locks so that no "
                  "byte is wanted twice: byte-range methods never wait there, block locks "
                  "take turns, and their message count shows the waits.")


def _lock_series_lines():
    L = ["Series (method-protocol; what each sends for n regions on d daemons):", "",
         "| method | what it is | lock messages |", "|---|---|---|"]
    L += ["| %s | %s | %s |" % m for m in LOCK_SERIES]
    return L + ["", LOCK_PROTOCOLS, ""]


def _lock_lines(out, s3d_fig, s3d_txt):
    """Figs. 7.3-7.7: the lock benchmark's figures and S3D."""
    L = ["## Locks (Figs. 7.3-7.6) and atomic mode (S3D, Fig. 7.7)", ""]
    ldir = os.path.join(out, "locks")
    if os.path.exists(os.path.join(ldir, "report.txt")):
        L += _lock_series_lines()
        for f in sorted(os.listdir(ldir)):
            if f.endswith(".png"):
                L.append("![%s](locks/%s)" % (f, f))
        L += ["", "```", open(os.path.join(ldir, "report.txt")).read().strip()[:12000], "```", ""]
        L.append("(tests/bench/bench_locks.sh: clusters of its own on loopback, also in a NET study.)")
    else:
        L.append("(lock figures not run in this study)")
    L.append("")
    if s3d_txt:
        if s3d_fig:
            L.append("![S3D](%s)" % s3d_fig)
        L += ["", "```"] + s3d_txt + ["```", ""]
    else:
        L.append("(S3D not run in this study)")
    return L


# ------------------------------------------------------------------ chapter 8
VMETHODS = ["datatype", "datatype-lock", "datatype-version"]
VCOLOR = {"datatype": "tab:green", "datatype-lock": "tab:red", "datatype-version": "tab:blue"}
VFIGS = {"count": ("8.3", "region count", "more than triple", 3.0),
         "spacing": ("8.4", "region spacing (bytes)", "more than twice", 2.0)}


def load_versions(out):
    """versions.csv: {(sweep, case, count, spacing, method): {op: [MB/s]}},
    the read rows and the storage rows; None without the file."""
    path = os.path.join(out, "versions.csv")
    if not os.path.exists(path):
        return None
    rows = list(csv.DictReader(open(path, newline="")))
    w = {}
    for r in rows:
        if r["kind"] == "write" and r["sweep"]:
            k = (r["sweep"], r["case"], int(r["count"]), int(r["spacing"]), r["method"])
            a = w.setdefault(k, {"write": [], "wsync": []})
            a["write"].append(float(r["write_mbs"]))
            a["wsync"].append(float(r["wsync_mbs"]))
    return {"rows": rows, "w": w, "reads": [r for r in rows if r["kind"] == "read"],
            "storage": [r for r in rows if r["kind"] == "storage"]}


def _vmean(v, k, op):
    a = v["w"].get(k)
    return statistics.mean(a[op]) if a and a[op] else None


def _vcell(v, k, op):
    a = v["w"].get(k)
    if not a:
        return "-"
    iv = t_interval(a[op])
    return "%s [%s, %s]" % (fmt(statistics.mean(a[op])), fmt(iv[0]), fmt(iv[1])) if iv else \
        fmt(statistics.mean(a[op]))


def _vpoints(v, sweep, case):
    """The (count, spacing) points of a sweep and case, by the swept value."""
    pts = sorted({(k[2], k[3]) for k in v["w"] if k[0] == sweep and k[1] == case})
    return sorted(pts, key=lambda p: p[0] if sweep == "count" else p[1])


def _vratios(v, sweep, case, op, other):
    """datatype-version / other at each point of the sweep (both measured)."""
    out = []
    for c, g in _vpoints(v, sweep, case):
        a = _vmean(v, (sweep, case, c, g, "datatype-version"), op)
        b = _vmean(v, (sweep, case, c, g, other), op)
        if a is not None and b:
            out.append(a / b)
    return out


def _vtable(v, sweep, op):
    L = ["| case | %s | datatype | datatype-lock | datatype-version | version/datatype | "
         "version/lock |" % ("regions" if sweep == "count" else "spacing"),
         "|---|---|---|---|---|---|---|"]
    for case in CASES:
        for c, g in _vpoints(v, sweep, case):
            k = lambda m: (sweep, case, c, g, m)  # noqa: E731
            ver = _vmean(v, k("datatype-version"), op)
            rat = [ver / b if ver is not None and b else None
                   for b in (_vmean(v, k("datatype"), op), _vmean(v, k("datatype-lock"), op))]
            L.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                case, c if sweep == "count" else g, _vcell(v, k("datatype"), op),
                _vcell(v, k("datatype-lock"), op), _vcell(v, k("datatype-version"), op),
                fmt(rat[0]) + "x" if rat[0] else "-", fmt(rat[1]) + "x" if rat[1] else "-"))
    return L


def _vverdict(v, sweep):
    """The dissertation's claim of a sweep against this run, writes alone
    and with fsync, on c-nc and nc-nc."""
    fig, _, words, factor = VFIGS[sweep]
    L, all_held = [], True
    for op, what in (("write", "the writes alone"), ("wsync", "writes with fsync (the merge)")):
        parts, held = [], True
        for case in ("c-nc", "nc-nc"):
            for other in ("datatype", "datatype-lock"):
                r = _vratios(v, sweep, case, op, other)
                if not r:
                    continue
                avg = statistics.mean(r)
                held = held and avg > factor
                parts.append("%s over %s %.2fx" % (case, other, avg))
        if parts:
            L.append("- Fig. %s, %s: datatype-version averages %s (mean of the per-point ratios "
                     "of means): \"%s\" %s." % (fig, what, ", ".join(parts), words,
                                                "**reproduces**" if held else
                                                "**does not reproduce**"))
            all_held = all_held and held
    return L, all_held


def _vindex(idx, sweep, held, above):
    """Fig. 8.3 or 8.4 in the report's index: the claim on the sweep's
    average, and whether it holds somewhere (_vabove)."""
    fig, _, words, _f = VFIGS[sweep]
    somewhere = not above[0].startswith("- Fig. %s: at no point" % fig)
    idx.add("Fig. " + fig, report_index.REPRODUCED if held else
            report_index.PARTLY if somewhere else report_index.DIFFERS,
            "versions write \"%s\" datatype and datatype-lock %s" % (
                words, "on average" if held else "at some points only" if somewhere
                else "nowhere"), "Versioning (chapter 8)")


def _vabove(v, sweep):
    """The points of a sweep where datatype-version beat both datatype and
    datatype-lock by the claim's factor, writes alone: an average that
    misses the claim may still hide the regime where it holds."""
    fig, _, words, factor = VFIGS[sweep]
    hits = []
    for case in ("c-nc", "nc-nc"):
        for c, g in _vpoints(v, sweep, case):
            k = lambda m: (sweep, case, c, g, m)  # noqa: E731
            ver = _vmean(v, k("datatype-version"), "write")
            base = [_vmean(v, k(m), "write") for m in ("datatype", "datatype-lock")]
            if ver is None or not all(base):
                continue
            r = [ver / b for b in base]
            if min(r) > factor:
                hits.append("%s at %s %d (%.2fx datatype, %.2fx datatype-lock)" % (
                    case, "count" if sweep == "count" else "spacing",
                    c if sweep == "count" else g, r[0], r[1]))
    if not hits:
        return ["- Fig. %s: at no point does datatype-version write %s datatype and "
                "datatype-lock." % (fig, words)]
    return ["- Fig. %s: \"%s\" holds at %s." % (fig, words, "; ".join(hits))]


def _vstorage(v):
    """The log's bytes per byte written, before and after the merge."""
    st = {r["case"]: r for r in v["storage"]}
    nc, c = st.get("c-nc"), st.get("c-c")
    if not nc:
        return []
    per = lambda r: float(r["log_bytes"]) / float(r["written_bytes"])  # noqa: E731
    return ["- A versioned write stores more, not less: one noncontiguous %s-byte write grew "
            "the objects' logs by %s bytes (%.2f per byte written: each record carries its "
            "dataloop and header besides the data)%s; after the merge the logs hold %s bytes "
            "(their space is given back)." % (
                nc["written_bytes"], nc["log_bytes"], per(nc),
                "; a contiguous one %.2f" % per(c) if c else "", nc["log_after_merge"])]


def _vsync_share(v, method):
    """The mean share of fsync in a c-nc repetition of method."""
    shares = [1 - statistics.mean(a["wsync"]) / statistics.mean(a["write"])
              for k, a in v["w"].items()
              if k[1] == "c-nc" and k[4] == method and a["write"] and a["wsync"]]
    return statistics.mean(shares) if shares else None


def _vwhy(v, held):
    """Why the ratios come out as they do, from this run's numbers (held:
    whether every claim reproduced)."""
    w = [r for r in v["rows"] if r["kind"] == "write"]
    L = ["", "Why, from this run:"]
    if held:
        L.append("- The versions' contiguous log appends beat the scattered writes of the "
                 "other methods here too.")
    L += _vstorage(v)
    ver, dt = _vsync_share(v, "datatype-version"), _vsync_share(v, "datatype")
    if ver is not None and dt is not None:
        L.append("- The merge is where the scattered writes happen after all: in c-nc, fsync "
                 "(on the versioned file the merge of every process's versions) took %.0f %% "
                 "of a datatype-version repetition, against %.0f %% of a datatype one "
                 "(docs/benchmarks.md, \"Versioning (chapter 8)\", has a profile of the "
                 "merge)." % (100 * ver, 100 * dt))
    if held:
        return L
    L.append("- The dissertation's gain came from the disk: its datatype and datatype-lock "
             "writes scattered 8-byte regions over a disk (seeks), while a version is one "
             "contiguous log append. Here the storage daemons' objects are files on one "
             "host's file system, whose page cache takes scattered writes (no seek to save); "
             "a plain datatype write is already one request per storage daemon applying its "
             "regions in memory, and a versioned write adds a log record synced before the "
             "reply and a commit at the version server. So the version's extra work shows, "
             "and the seek it saves does not; on a disk-bound cluster the comparison may "
             "differ. With %s writers on %d cores the intervals are wide; the verdicts use "
             "the means of this one run." % (w[0]["nprocs"] if w else "the",
                                              os.cpu_count() or 1))
    return L


def _vreads(v):
    rd = {}
    for r in v["reads"]:
        rd.setdefault(int(r["versions"]), []).append(r)
    if not rd:
        return []
    base = statistics.mean(float(r["read_s"]) for r in rd[min(rd)])
    L = ["", "Reads of a versioned file (512 KiB, one process) with unmerged versions (each a "
         "datatype write of 64 8-byte regions over the file), the read overhead §8.6 warns of:",
         "", "| versions | unmerged (version server) | ms per read [95 %] | x the first | "
         "log bytes per byte written |", "|---|---|---|---|---|"]
    for k in sorted(rd):
        t = [float(r["read_s"]) * 1e3 for r in rd[k]]
        iv = t_interval(t)
        per = float(rd[k][0]["log_bytes"]) / float(rd[k][0]["written_bytes"]) \
            if float(rd[k][0]["written_bytes"] or 0) > 0 and float(rd[k][0]["log_bytes"]) >= 0 \
            else None
        L.append("| %d | %s | %s%s | %.2fx | %s |" % (
            k, rd[k][0]["unmerged"], fmt(statistics.mean(t), 3),
            " [%s, %s]" % (fmt(iv[0], 3), fmt(iv[1], 3)) if iv else "",
            statistics.mean(t) / 1e3 / base, fmt(per) if per else "-"))
    return L


def plot_versions(out, v, plt):
    """Figs. 8.3-8.4: a panel per access case, MB/s over the swept value
    (log2), a color per method; solid the writes, dashed with fsync."""
    figs = []
    for sweep, (fig, xlabel, _, _) in VFIGS.items():
        if not any(k[0] == sweep for k in v["w"]):
            continue
        # the spacing sweep varies the file side's gaps: only the *-nc
        # cases have it (the dissertation's Fig. 8.4 has those two panels)
        cases = [c for c in CASES if _vpoints(v, sweep, c)]
        f, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.6), squeeze=False)
        axes = axes[0]
        for ax, case in zip(axes, cases):
            pts = _vpoints(v, sweep, case)
            xs = [c if sweep == "count" else g for c, g in pts]
            for m in VMETHODS:
                for op, ls in (("write", "-"), ("wsync", "--")):
                    ys = [_vmean(v, (sweep, case, c, g, m), op) for c, g in pts]
                    if xs and any(y is not None for y in ys):
                        ax.plot(xs, ys, ls, marker="o", color=VCOLOR[m],
                                label=m + ("" if op == "write" else " + fsync"))
            ax.set_xscale("log", base=2)
            ax.set_title(case)
            ax.set_xlabel(xlabel)
        axes[0].set_ylabel("aggregate MB/s")
        for ax in axes:
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6)
                break
        f.suptitle("Fig. %s: versioned writes over %s" % (fig, xlabel))
        f.tight_layout()
        name = "fig%s-%s.png" % (fig, sweep)
        f.savefig(os.path.join(out, name), dpi=60)
        plt.close(f)
        figs.append(name)
    return figs


def _version_lines(out, plt, idx):
    v = load_versions(out)
    L = ["## Versioning (chapter 8, Figs. 8.3-8.4)", ""]
    if v is None:
        return L + ["(versions not run in this study)", ""]
    w = [r for r in v["rows"] if r["kind"] == "write"]
    if w:
        L.append("tests/bench/bench_version.c on a cluster of its own: %s storage daemons, 64 KiB "
                 "strips, %s client processes (forked, each its own connection) writing %s "
                 "writes each per repetition of %s-byte regions; each process's regions overlap "
                 "half of its neighbours' (so atomicity matters) and every process touches every "
                 "stripe. datatype: plain file, no atomicity; datatype-lock: each write inside a "
                 "datatype write lock (alt-try); datatype-version: a versioned file. MB/s mean "
                 "[95 %% t-interval]; \"with fsync\" includes each process's tessera_fsync, which "
                 "on a versioned file merges the logs." % (
                     w[0]["n_ios"], w[0]["nprocs"], w[0]["iters"], w[0]["size"]))
    for fig in (plot_versions(out, v, plt) if plt and v["w"] else []):
        L += ["", "![%s](%s)" % (fig, fig)]
    for sweep in ("count", "spacing"):
        if not any(k[0] == sweep for k in v["w"]):
            continue
        for op, what in (("write", "writes alone"), ("wsync", "with fsync")):
            L += ["", "Fig. %s (%s), %s:" % (VFIGS[sweep][0], VFIGS[sweep][1], what), ""]
            L += _vtable(v, sweep, op)
    L += ["", "Does the dissertation's claim hold here?", ""]
    c, c_held = _vverdict(v, "count")
    g, g_held = _vverdict(v, "spacing")
    L += c + _vabove(v, "count") + g + _vabove(v, "spacing")
    for sweep, lines, held in (("count", c, c_held), ("spacing", g, g_held)):
        if lines:
            _vindex(idx, sweep, held, _vabove(v, sweep))
    L += _vwhy(v, c_held and g_held) + _vreads(v)
    return L + [""]


def _patterns_lines(out, plt, idx):
    """Chapters 3-4's bandwidth sweeps (tests/study/report_patterns.py)."""
    import report_patterns
    return report_patterns.section(out, plt, idx)


# ------------------------------------------------------------ S3aSim
S3A_STRATS = ["mw", "ww-coll", "ww-posix", "ww-list"]
S3A_NAMES = {"mw": "MW", "ww-coll": "WW-Coll", "ww-posix": "WW-POSIX", "ww-list": "WW-List"}
S3A_COLOR = {"mw": "tab:red", "ww-coll": "tab:purple", "ww-posix": "tab:orange",
             "ww-list": "tab:blue"}
S3A_PHASES = ["setup", "dist", "compute", "merge", "gather", "io", "sync", "other"]


def load_s3asim(out):
    """s3asim.csv as {(part, strategy, sync, atomic, ranks, speed): [row...]},
    or None without it."""
    path = os.path.join(out, "s3asim.csv")
    if not os.path.exists(path):
        return None
    by = {}
    for r in csv.DictReader(open(path, newline="")):
        k = (r["part"], r["strategy"], r["sync"], r["atomic"], int(r["ranks"]), float(r["speed"]))
        by.setdefault(k, []).append(r)
    return by or None


def _s3a_vals(rows, col):
    return [float(r[col]) for r in rows or [] if r.get(col) not in (None, "")]


def _s3a_stat(by, key, col="total_s"):
    """(mean, 95 % interval) of a column over a point's repetitions."""
    v = _s3a_vals(by.get(key), col)
    return (statistics.mean(v) if v else None), t_interval(v)


def _s3a_axes(by):
    """The ranks sweep (at the base speed) and the speed sweep (at the most
    ranks) of the strategies part: (ranks, base speed, speeds, top ranks)."""
    keys = [k for k in by if k[0] == "strategies"]
    if not keys:
        return [], None, [], None
    top = max(k[4] for k in keys)
    per_rank = {}
    for k in keys:
        per_rank.setdefault(k[4], set()).add(k[5])
    # the base speed: the one every rank count ran
    common = set.intersection(*per_rank.values())
    base = min(common) if common else None
    ranks = sorted(n for n in per_rank if base in per_rank[n])
    return ranks, base, sorted(per_rank[top]), top


def _s3a_key(strategy, sync, ranks, speed, part="strategies", atomic="off"):
    return (part, strategy, sync, atomic, ranks, speed)


def _s3a_plot_totals(out, by, plt):
    """Figs. 6.2 and 6.7: total time over the ranks and over the speed, a
    color per strategy, solid no-sync, dashed sync, 95 % intervals."""
    ranks, base, speeds, top = _s3a_axes(by)
    f, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, xs, mk, xl in ((axes[0], ranks, lambda x: (x, base), "ranks (1 master)"),
                           (axes[1], speeds, lambda x: (top, x), "compute speed")):
        for st in S3A_STRATS:
            for sync, ls in (("nosync", "-"), ("sync", "--")):
                pts = [(x,) + _s3a_stat(by, _s3a_key(st, sync, *mk(x))) for x in xs]
                pts = [p for p in pts if p[1] is not None]
                if not pts:
                    continue
                err = [[p[1] - (p[2] or (p[1], p[1]))[0] for p in pts],
                       [(p[2] or (p[1], p[1]))[1] - p[1] for p in pts]]
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err, ls=ls, marker="o",
                            color=S3A_COLOR[st], capsize=2,
                            label="%s %s" % (S3A_NAMES[st], sync))
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel("total seconds")
        if xl == "compute speed":
            ax.set_xscale("log", base=2)
    axes[0].set_title("Fig. 6.2: over ranks (speed %g)" % (base or 0))
    axes[1].set_title("Fig. 6.7: over compute speed (%s ranks)" % top)
    axes[0].legend(fontsize=6, ncol=2)
    f.tight_layout()
    f.savefig(os.path.join(out, "fig6.2-6.7-s3asim.png"), dpi=60)
    plt.close(f)
    return "fig6.2-6.7-s3asim.png"


def _s3a_plot_phases(out, by, plt, sweep):
    """Figs. 6.3-6.6 (sweep "ranks") or 6.8-6.11 ("speed"): a panel per
    strategy, a stacked bar of the workers' mean phases per point, no-sync
    and sync side by side."""
    ranks, base, speeds, top = _s3a_axes(by)
    xs = ranks if sweep == "ranks" else speeds
    f, axes = plt.subplots(1, 4, figsize=(14, 3.6), sharey=True)
    cmap = plt.get_cmap("tab10")
    for ax, st in zip(axes, S3A_STRATS):
        labels = []
        for i, x in enumerate(xs):
            for j, sync in enumerate(("nosync", "sync")):
                key = _s3a_key(st, sync, *((x, base) if sweep == "ranks" else (top, x)))
                bottom = 0.0
                for pi, ph in enumerate(S3A_PHASES):
                    v = _s3a_vals(by.get(key), "w_%s_s" % ph)
                    h = statistics.mean(v) if v else 0.0
                    ax.bar(i * 2.5 + j, h, 0.9, bottom=bottom, color=cmap(pi),
                           label=ph if (i, j) == (0, 0) else None)
                    bottom += h
                labels.append((i * 2.5 + j, "%g%s" % (x, "s" if sync == "sync" else "")))
        ax.set_xticks([p for p, _ in labels])
        ax.set_xticklabels([t for _, t in labels], fontsize=7)
        ax.set_title(S3A_NAMES[st])
        ax.set_xlabel(("ranks" if sweep == "ranks" else "speed") + " (s: query sync)")
    axes[0].set_ylabel("workers' mean seconds")
    axes[0].legend(fontsize=6)
    figs = "6.3-6.6" if sweep == "ranks" else "6.8-6.11"
    f.suptitle("Figs. %s: the workers' phases over the %s" % (figs, sweep))
    f.tight_layout()
    name = "fig%s-s3asim-phases.png" % figs
    f.savefig(os.path.join(out, name), dpi=60)
    plt.close(f)
    return name


def _s3a_lock_points(by):
    """Figs. 7.9-7.10 per rank count: (ranks, total, io, io share) of no-lock
    and list:one-try, each (mean, interval)."""
    ranks = sorted({k[4] for k in by if k[0] == "locks"})
    pts = []
    for n in ranks:
        row = {"ranks": n}
        for atomic in ("off", "list:one-try"):
            rs = [r for k, v in by.items() if k[0] == "locks" and k[3] == atomic and k[4] == n
                  for r in v]
            tot, io = _s3a_vals(rs, "total_s"), _s3a_vals(rs, "w_io_s")
            share = [100 * a / b for a, b in zip(io, tot) if b > 0]
            row[atomic] = {"total": (statistics.mean(tot) if tot else None, t_interval(tot)),
                           "io": (statistics.mean(io) if io else None, t_interval(io)),
                           "share": (statistics.mean(share) if share else None,
                                     t_interval(share))}
        pts.append(row)
    return pts


def _s3a_plot_locks(out, pts, plt):
    f, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    xs = [p["ranks"] for p in pts]
    for atomic, color in (("off", "tab:gray"), ("list:one-try", "tab:blue")):
        label = "no-lock" if atomic == "off" else "list-one-try"
        for ax, what in zip(axes[:3], ("total", "io", "share")):
            ys = [p[atomic][what][0] for p in pts]
            ax.plot(xs, ys, marker="o", color=color, label=label)
    ratio = [100 * p["off"]["io"][0] / p["list:one-try"]["io"][0]
             if p["off"]["io"][0] and p["list:one-try"]["io"][0] else None for p in pts]
    axes[3].plot(xs, ratio, marker="o", color="tab:blue", label="list-one-try")
    for ax, t, yl in zip(axes, ("7.9a total", "7.9b I/O", "7.10a I/O % of total",
                                "7.10b % of no-lock I/O"),
                         ("seconds", "workers' I/O seconds", "%", "%")):
        ax.set_title("Fig. " + t)
        ax.set_xlabel("ranks")
        ax.set_ylabel(yl)
        ax.legend(fontsize=6)
    f.tight_layout()
    f.savefig(os.path.join(out, "fig7.9-7.10-s3asim.png"), dpi=60)
    plt.close(f)
    return "fig7.9-7.10-s3asim.png"


def _s3a_cmp(by, k1, k2):
    """-1 if k1's total is below k2's with the intervals apart, 1 if above,
    0 if they overlap (no verdict)."""
    m1, i1 = _s3a_stat(by, k1)
    m2, i2 = _s3a_stat(by, k2)
    if m1 is None or m2 is None or overlap(i1, i2):
        return 0
    return -1 if m1 < m2 else 1


def _s3a_points(by):
    """Every (ranks, speed) of the strategies part."""
    return sorted({(k[4], k[5]) for k in by if k[0] == "strategies"})


def _s3a_tally(results):
    """(held, differs, undecided) counts of a list of -1/1/0 outcomes
    where -1 means the claim held."""
    return (sum(1 for x in results if x < 0), sum(1 for x in results if x > 0),
            sum(1 for x in results if x == 0))


def _s3a_within(i1, i2, frac):
    """-1 when every value of both 95 % intervals is within frac of every
    other (the claim "changes by at most frac" holds), 1 when the intervals
    are apart by more than frac, 0 otherwise (no verdict)."""
    if i1 is None or i2 is None:
        return 0
    lo, hi = min(i1[0], i2[0]), max(i1[1], i2[1])
    if lo > 0 and hi <= (1 + frac) * lo:
        return -1
    if i1[1] * (1 + frac) < i2[0] or i2[1] * (1 + frac) < i1[0]:
        return 1
    return 0


def _s3a_verdict(name, diss, held, differs, undecided, why=""):
    if held and not differs:
        v = "**reproduces**"
    elif differs and not held:
        v = "**differs**"
    elif held or differs:
        v = "**mixed**"
    else:
        v = "**not decided**"
    return ["- %s (dissertation: %s): %s — held at %d point(s), the opposite at %d (95 %% "
            "intervals apart), not decided at %d (intervals overlapping).%s" % (
                name, diss, v, held, differs, undecided, (" " + why) if why else "")]


def _s3a_ranking(by):
    """The dissertation's rankings, point by point, only where intervals are apart."""
    L = []
    pts = _s3a_points(by)
    for sync, diss in (("nosync", "by 364 % (MW), 33 % (WW-POSIX), 75 % (WW-Coll) at 96 "
                        "processes; 592 %, 32 %, 98 % at speed 25.6"),
                       ("sync", "by 182 %, 37 %, 13 % at 96 processes; 444 %, 65 %, 58 % at "
                        "speed 25.6")):
        res = [_s3a_cmp(by, _s3a_key("ww-list", sync, n, x), _s3a_key(o, sync, n, x))
               for n, x in pts for o in S3A_STRATS if o != "ww-list"]
        L += _s3a_verdict("\"WW-List beats all strategies\", %s" % sync, diss, *_s3a_tally(res))
    res = [_s3a_cmp(by, _s3a_key(i, "nosync", n, x), _s3a_key(o, "nosync", n, x))
           for n, x in pts for i in ("ww-posix", "ww-list") for o in ("ww-coll", "mw")]
    L += _s3a_verdict("\"The individual WW strategies outperform WW-Coll and MW\", no-sync",
                      "all no-sync cases", *_s3a_tally(res))
    res = [-_s3a_cmp(by, _s3a_key(st, "sync", n, x), _s3a_key(st, "nosync", n, x)) or 0
           for n, x in pts for st in S3A_STRATS]
    # held = sync slower or equal: count "sync faster, apart" as differs
    res = [0 if r == 0 else (-1 if r < 0 else 1) for r in res]
    L += _s3a_verdict("\"No-sync performs as well as or better than sync\"",
                      "all strategies", *_s3a_tally(res))
    return L


def _s3a_change(by, st, a, b):
    """Relative change of st's total from key-part a to b (means), and
    whether the intervals are apart."""
    m1, i1 = _s3a_stat(by, a)
    m2, i2 = _s3a_stat(by, b)
    if not m1 or m2 is None:
        return None, False
    return 100 * (m2 - m1) / m1, not overlap(i1, i2)


def _s3a_sync_effects(by):
    """Sync's cost per strategy (WW-Coll barely, WW-POSIX most) and MW's
    insensitivity to compute speed."""
    L, pts = [], _s3a_points(by)
    L += ["", "Query sync's effect on the total (sync against no-sync, mean; * where the "
          "intervals are apart):", "", "| ranks | speed | " + " | ".join(
              S3A_NAMES[s] for s in S3A_STRATS) + " |", "|---|---|" + "---|" * 4]
    for n, x in pts:
        cells = []
        for st in S3A_STRATS:
            c, apart_ = _s3a_change(by, st, _s3a_key(st, "nosync", n, x), _s3a_key(st, "sync", n, x))
            cells.append("-" if c is None else "%+.0f %%%s" % (c, "*" if apart_ else ""))
        L.append("| %d | %g | %s |" % (n, x, " | ".join(cells)))
    coll = [_s3a_within(_s3a_stat(by, _s3a_key("ww-coll", "nosync", n, x))[1],
                        _s3a_stat(by, _s3a_key("ww-coll", "sync", n, x))[1], 0.06) for n, x in pts]
    L += [""] + _s3a_verdict("\"WW-Coll is barely affected by sync\" (at most 6 %)",
                             "at most 6 % and 4 %", *_s3a_tally(coll),
                             why="(Held: both intervals within 6 % of each other.)")
    ranks, base, speeds, top = _s3a_axes(by)
    if len(speeds) >= 2:
        lo, hi = speeds[0], speeds[-1]
        c, _ = _s3a_change(by, "mw", _s3a_key("mw", "nosync", top, hi),
                           _s3a_key("mw", "nosync", top, lo))
        res = [_s3a_within(_s3a_stat(by, _s3a_key("mw", y, top, hi))[1],
                           _s3a_stat(by, _s3a_key("mw", y, top, lo))[1], 0.02)
               for y in ("nosync", "sync")]
        if c is not None:
            L += _s3a_verdict("\"MW is insensitive to compute speed\" (< 2 %% from speed %g to "
                              "%g at %d ranks, no-sync and sync)" % (lo, hi, top),
                              "less than 2 % from 0.1 to 25.6 at 64 processes", *_s3a_tally(res),
                              why="MW's no-sync total changes by %+.0f %% here: with %d workers "
                              "the master is not the bottleneck it is with 63, so the compute "
                              "phase shows." % (c, top - 1) if any(r > 0 for r in res) else "")
    return L


def _s3a_table(by, xs, mk, xl):
    L = ["| %s | sync | " % xl + " | ".join(S3A_NAMES[s] for s in S3A_STRATS) + " |",
         "|---|---|" + "---|" * 4]
    for x in xs:
        for sync in ("nosync", "sync"):
            cells = []
            for st in S3A_STRATS:
                m, i = _s3a_stat(by, _s3a_key(st, sync, *mk(x)))
                cells.append("-" if m is None else "%s [%s, %s]" % (
                    fmt(m), fmt(i[0]) if i else "-", fmt(i[1]) if i else "-"))
            L.append("| %g | %s | %s |" % (x, sync, " | ".join(cells)))
    return L


def _s3a_lock_lines(by, plt, out):
    pts = _s3a_lock_points(by)
    if not pts:
        return []
    L = ["", "### Figs. 7.9-7.10: WW-List in atomic mode (list-one-try) against no lock", ""]
    if plt:
        L += ["![Figs. 7.9-7.10](%s)" % _s3a_plot_locks(out, pts, plt), ""]
    L += ["| ranks | total no-lock | total list-one-try | I/O no-lock | I/O list-one-try | "
          "I/O % of total (lock) | % of no-lock I/O |", "|---|---|---|---|---|---|---|"]
    for p in pts:
        a, b = p["off"], p["list:one-try"]
        pct = 100 * a["io"][0] / b["io"][0] if a["io"][0] and b["io"][0] else None
        apart_ = not overlap(a["io"][1], b["io"][1])
        L.append("| %d | %s | %s | %s | %s | %s | %s%s |" % (
            p["ranks"], fmt(a["total"][0]), fmt(b["total"][0]), fmt(a["io"][0]),
            fmt(b["io"][0]), fmt(b["share"][0]), fmt(pct), "" if apart_ else " (intervals "
            "overlap: no measurable overhead)"))
    res = []
    for p in pts:
        if p["ranks"] <= 2:
            continue  # one worker: one contiguous lock (the dissertation leaves it out)
        a, b = p["off"]["io"][1], p["list:one-try"]["io"][1]
        if a is None or b is None:
            res.append(0)
        elif b[1] * 0.70 <= a[0]:
            res.append(-1)   # even the slowest lock run is within 1/0.7 of the fastest no-lock
        elif b[0] * 0.70 > a[1]:
            res.append(1)    # the lock costs more than 30 % of the I/O for sure
        else:
            res.append(0)
    L += [""] + _s3a_verdict("\"list-one-try stays between 70 % and 87 % of peak I/O "
                             "performance\" (more than one worker; here: at least 70 %)",
                             "70-87 %; I/O below 11 % of the total", *_s3a_tally(res))
    return L


def _s3a_claim(outcomes):
    """A claim over points (-1 held, 1 the opposite, 0 overlapping) as
    report_index's True, False or None."""
    held, differs, _ = _s3a_tally(outcomes)
    if held and not differs:
        return True
    if differs and not held:
        return False
    return None


def _s3a_fig_claims(by, pts):
    """The claims of Fig. 6.2 or 6.7 at these (ranks, speed) points."""
    claims = []
    for sync in ("nosync", "sync"):
        claims.append(_s3a_claim([_s3a_cmp(by, _s3a_key("ww-list", sync, n, x),
                                           _s3a_key(o, sync, n, x))
                                  for n, x in pts for o in S3A_STRATS if o != "ww-list"]))
    claims.append(_s3a_claim([_s3a_cmp(by, _s3a_key(i, "nosync", n, x), _s3a_key(o, "nosync", n, x))
                              for n, x in pts for i in ("ww-posix", "ww-list")
                              for o in ("ww-coll", "mw")]))
    return claims


# The phase figures: the strategy, and its claim about query sync (§6.3):
# MW and WW-Coll barely change (5 %, 6 %), WW-POSIX and WW-List pay for it.
S3A_PHASE_FIGS = {"mw": (3, 8, 0.05), "ww-posix": (4, 9, None), "ww-list": (5, 10, None),
                  "ww-coll": (6, 11, 0.06)}


def _s3a_sync_claim(by, st, pts, within):
    if within is not None:
        return _s3a_claim([_s3a_within(_s3a_stat(by, _s3a_key(st, "nosync", n, x))[1],
                                       _s3a_stat(by, _s3a_key(st, "sync", n, x))[1], within)
                           for n, x in pts])
    return _s3a_claim([_s3a_cmp(by, _s3a_key(st, "nosync", n, x), _s3a_key(st, "sync", n, x))
                       for n, x in pts])


def _s3a_index(by, idx):
    """Figs. 6.2-6.11 and 7.9-7.10 in the report's index."""
    ranks, base, speeds, top = _s3a_axes(by)
    where = "S3aSim"
    sweeps = [("6.2", [(n, base) for n in ranks], 0), ("6.7", [(top, x) for x in speeds], 5)]
    for fig, pts, off in sweeps:
        if len(pts) < 2:
            continue
        v = report_index.combine(_s3a_fig_claims(by, pts))
        idx.add("Fig. " + fig, v, "WW-List first, individual WW ahead of WW-Coll and MW: %s at "
                "%d points (%s)" % (v, len(pts), "%s-%s ranks here, 2-96 there" % (
                    ranks[0], ranks[-1]) if off == 0 else "speed %g-%g at %d ranks here, 0.1-25.6 "
                    "at 64 there" % (speeds[0], speeds[-1], top)), where)
        for st, (fr, fs, within) in S3A_PHASE_FIGS.items():
            c = _s3a_sync_claim(by, st, pts, within)
            v = report_index.combine([c])
            idx.add("Fig. 6.%d" % (fr if off == 0 else fs), v, "%s under query sync: %s" % (
                S3A_NAMES[st], "barely changed" if within else "slower"), where)
    pts = _s3a_lock_points(by)
    res = [(-1 if b[1] * 0.70 <= a[0] else 1 if b[0] * 0.70 > a[1] else 0)
           for p in pts if p["ranks"] > 2
           for a, b in [(p["off"]["io"][1], p["list:one-try"]["io"][1])] if a and b]
    if pts:
        v = report_index.combine([_s3a_claim(res)])
        for fig in ("Fig. 7.9", "Fig. 7.10"):
            idx.add(fig, v, "list-one-try's I/O within 70 % of no-lock's (a Lustre baseline "
                    "is not run)", where)


def _s3asim_lines(out, plt, idx=None):
    by = load_s3asim(out)
    L = ["## S3aSim (chapter 6, Figs. 6.2-6.11; §7.5.3, Figs. 7.9-7.10)", ""]
    if by is None:
        return L + ["(s3asim not run in this study)", ""]
    r0 = next(iter(by.values()))[0]
    ranks, base, speeds, top = _s3a_axes(by)
    L.append("romio-adio/bench/mpi_s3asim on a cluster of its own (%s storage daemons): %s "
             "queries x %s fragments, %s results (%s bytes, NT-like sizes), one master and "
             "ranks - 1 workers; total seconds, mean [95 %% t-interval] of %d repetitions. "
             "Compute is a sleep of (0.05 s + 1 s/MB of results) / speed. The dissertation ran "
             "20 x 128 with 1000-2000 results a query (208 MB), 2-96 processes, 16 PVFS2 "
             "servers." % (N_IOS_S3A, r0["queries"], r0["fragments"], r0["results"], r0["bytes"],
                            max(len(v) for v in by.values())))
    if plt and ranks:
        L += ["", "![Figs. 6.2 and 6.7](%s)" % _s3a_plot_totals(out, by, plt)]
        L += ["", "![Figs. 6.3-6.6](%s)" % _s3a_plot_phases(out, by, plt, "ranks")]
        if len(speeds) > 1:
            L += ["", "![Figs. 6.8-6.11](%s)" % _s3a_plot_phases(out, by, plt, "speed")]
    if ranks:
        L += ["", "Fig. 6.2 (over ranks, speed %g):" % base, ""]
        L += _s3a_table(by, ranks, lambda x: (x, base), "ranks")
    if len(speeds) > 1:
        L += ["", "Fig. 6.7 (over compute speed, %d ranks):" % top, ""]
        L += _s3a_table(by, speeds, lambda x: (top, x), "speed")
    if ranks:
        L += ["", "Does the dissertation's ranking hold here?", ""]
        L += _s3a_ranking(by) + _s3a_sync_effects(by)
    L += _s3a_lock_lines(by, plt, out)
    if idx is not None:
        _s3a_index(by, idx)
    return L + [""]


N_IOS_S3A = 4


def main():
    out = sys.argv[1]
    plt = _matplotlib("--no-plots" not in sys.argv)
    meta = json.load(open(os.path.join(out, "study.json")))
    rows, agg = load(out)
    figs = plot_sweeps(out, meta, agg, plt) if plt and rows else []
    s3d_fig, s3d_txt = s3d_plot(out, plt)
    L = ["# The HPIO study (`make study`)", ""]
    L += _setup_lines(meta)
    L += _mode_lines(meta)
    L += _failure_lines(out)
    L += _sweep_lines(meta, agg, figs)
    L += _dissertation_lines(agg)
    L += _phase_lines(rows)
    L += _list_sync_lines(rows, agg)
    L += _record_lines(meta, rows, out)
    idx = report_index.Index()
    L += ["## Request counts (Tabs. 3.1-3.3, 4.1)"] + tables_section(out, idx) + [""]
    L += _guideline_lines(meta, agg, idx)
    L += _lock_lines(out, s3d_fig, s3d_txt)
    report_index.lock_verdicts(out, idx, t_interval)
    report_index.s3d_verdicts(out, idx)
    L += _version_lines(out, plt, idx)
    L += _patterns_lines(out, plt, idx)
    L += _s3asim_lines(out, plt, idx)
    L += idx.lines()
    if not plt:
        L += ["", "(No PNGs: no python3 with matplotlib; `make deps` installs python3-matplotlib.)"]
    open(os.path.join(out, "report.md"), "w").write("\n".join(L) + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main())
