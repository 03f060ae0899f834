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

CASES = ["c-c", "nc-c", "c-nc", "nc-nc"]
SERIES = [("tessera", "posix"), ("tessera", "sieve"), ("tessera", "list"),
          ("tessera", "datatype"), ("tessera", "two-phase"),
          ("ufs", "posix"), ("ufs", "sieve"), ("ufs", "two-phase")]
COLOR = {"posix": "tab:red", "sieve": "tab:orange", "list": "tab:blue",
         "datatype": "tab:green", "two-phase": "tab:purple"}
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


def load(out):
    rows = []
    path = os.path.join(out, "hpio.csv")
    if os.path.exists(path):
        rows = list(csv.DictReader(open(path, newline="")))
    agg = {}
    for r in rows:
        k = (int(r["count"]), int(r["size"]), int(r["spacing"]), r["target"], r["method"], r["case"])
        a = agg.setdefault(k, {"write": [], "read": []})
        a["write"].append(float(r["write_mbs"]) if r["write_mbs"] else None)
        a["read"].append(float(r["read_mbs"]) if r["read_mbs"] else None)
    return rows, {k: {op: trimmed(v) for op, v in a.items()} for k, a in agg.items()}


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
                    xs, ys = [], []
                    for v, pt in pts:
                        y = value(agg, pt, target, method, case, op)
                        if y:
                            xs.append(v)
                            ys.append(y)
                    if xs:
                        ax.plot(xs, ys, marker="o" if target == "tessera" else "x",
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


def tables_section(out):
    path = os.path.join(out, "tables.csv")
    if not os.path.exists(path):
        return ["(no tables in this study)"]
    rows = list(csv.DictReader(open(path, newline="")))
    lines = []
    names = {"3.1": "Tab. 3.1, tile reader (read, per client)",
             "3.2": "Tab. 3.2, ROMIO 3-D block test (write, per client)",
             "3.3": "Tab. 3.3, FLASH I/O (write, per client)"}
    mname = {"coll": "two-phase"}
    for label in dict.fromkeys(r["label"] for r in rows):
        rs = [r for r in rows if r["label"] == label]
        lines += ["", "**%s**: %s" % (names[rs[0]["table"]], label), "",
                  "| method | requests | dissertation | formula here | verdict | desc B | "
                  "accessed MiB | formula | resent MiB | formula | desired MiB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
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
            resent = float(r["bytes_resent"]) / MiB
            fa = pt["bytes_accessed"][1]
            fr = pt["bytes_resent"][1]
            lines.append("| %s | %.1f | %s | %s | %s | %.0f | %.2f | %s | %.2f | %s | %.2f |" % (
                mname.get(r["method"], r["method"]), req, paper_s, formula, verdict,
                float(r["desc_bytes"]), acc, "%.2f" % (fa / MiB) if fa is not None else "ap depend",
                resent, "%.2f" % (fr / MiB) if fr is not None else "ap depend",
                int(r["bytes_desired"]) / MiB))
    lines += ["", "Requests, description bytes and bytes accessed are the storage daemons' "
              "counters (`tessera stats`, summed over the daemons, divided by the clients) "
              "around the one call; resent bytes are two-phase's bytes that lie in another "
              "aggregator's file domain (computed by the benchmark from ROMIO's even split, "
              "one aggregator per rank). Sieving reads of the window count as accessed (a sieving write reads and writes it: twice the extent).", "",
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


def _g2_grouping(agg):
    d = _pt()
    best_nc = [max([x for x in (_w(agg, d, m, c) for m in ("list", "datatype")) if x] or [0])
               for c in ("c-nc", "nc-nc")]
    posix = [_w(agg, d, "posix", c) for c in ("c-nc", "nc-nc")]
    if all(posix) and all(best_nc):
        r = min(b / p_ for b, p_ in zip(best_nc, posix))
        return (2, "Group individual I/O access to make large MPI-IO calls",
                "supported" if r > 3 else "contradicted",
                "at the default point one list/datatype call writes %.0f× faster than "
                "POSIX (a call per region)" % r)
    return (2, "Group individual I/O access to make large MPI-IO calls", "not measured",
            "POSIX was not run at the default point in this mode")


def _trend(meta, agg, n, heading, sweep, methods, grows):
    """Guideline n: c-nc writes from the sweep's first to its last value
    go up (grows) or down for every method. (row, (lo, hi)), or (None,
    None) if the sweep has fewer than 2 values."""
    vals = meta["sweeps"].get(sweep, [])
    if len(vals) < 2:
        return None, None
    lo, hi = _pt(**{sweep: vals[0]}), _pt(**{sweep: vals[-1]})
    up = [(m, _w(agg, lo, m, "c-nc"), _w(agg, hi, m, "c-nc")) for m in methods]
    up = [u for u in up if u[1] and u[2]]
    ok = sum((b > a) == grows for _, a, b in up)
    row = (n, heading, "supported" if ok == len(up) and up else
           "partly supported" if ok else "contradicted",
           "c-nc writes, %s %d → %d: " % (sweep, vals[0], vals[-1]) +
           ", ".join("%s %s → %s MB/s" % (m, fmt(a), fmt(b)) for m, a, b in up))
    return row, (lo, hi)


def _g5_collective(meta, agg, ends):
    """5: two-phase wins at small spacing, individual methods at large."""
    lo, hi = ends
    sp = meta["sweeps"].get("spacing", [])

    def winner(p):
        c = {m: _w(agg, p, m, "c-nc") for m in ("list", "datatype", "two-phase")}
        c = {m: v for m, v in c.items() if v}
        return max(c, key=c.get) if c else None
    wl, wh = winner(lo), winner(hi)
    verdict = "supported" if wl == "two-phase" and wh != "two-phase" else \
        "partly supported" if (wl == "two-phase") or (wh != "two-phase") else "contradicted"
    return (5, "Consider individual versus collective (two-phase) I/O", verdict,
            "c-nc writes: best at spacing %d is %s, at spacing %d %s (the dissertation: "
            "two-phase wins small spacing, datatype passes it near 1 KiB)" % (
                sp[0], wl, sp[-1], wh))


def _g6_datatype(meta, agg):
    """6: datatype best of the individual methods over all nc points."""
    wins = total = 0
    for k in {k[:3] for k in agg}:
        for case in ("nc-c", "c-nc", "nc-nc"):
            c = {m: _w(agg, k, m, case) for m in ("posix", "sieve", "list", "datatype")}
            c = {m: v for m, v in c.items() if v}
            if "datatype" in c and len(c) > 1:
                total += 1
                wins += max(c, key=c.get) == "datatype"
    if not total:
        return None
    return (6, "When using individual I/O methods, choose datatype I/O",
            "supported" if wins > total / 2 else "contradicted",
            "datatype I/O writes fastest of the individual methods at %d of %d "
            "noncontiguous points%s" % (wins, total, "" if wins > total / 2 else
                                        "; list I/O with Tessera's batch of 8192 regions "
                                        "needs as few requests, " + (
                                            "and on loopback the description bytes "
                                            "datatype I/O saves cost nothing"
                                            if meta["net"] == "loopback" else
                                            "and over these links both are mostly bound "
                                            "by the link or the sync, within noise of "
                                            "each other")))


def _g7_sieving(meta, agg):
    d = _pt()
    sv = []
    for case in ("c-nc", "nc-nc"):
        s, l_, dt = _w(agg, d, "sieve", case), _w(agg, d, "list", case), _w(agg, d, "datatype", case)
        if s and l_ and dt:
            sv.append((case, s, max(l_, dt)))
    if not sv:
        return None
    ok = all(s < b for _, s, b in sv)
    return (7, "Do not use data sieving I/O for interleaved writes",
            "supported" if ok else "contradicted",
            "; ".join("%s: sieve %s MB/s, best of list/datatype %s" % (c, fmt(s), fmt(b))
                      for c, s, b in sv))


def _g8_memory(meta, agg):
    """8: over every point measured, the median of nc-nc / c-nc per method."""
    rr = []
    for m in ("list", "datatype", "two-phase"):
        q = [value(agg, k, "tessera", m, "nc-nc") / value(agg, k, "tessera", m, "c-nc")
             for k in {k[:3] for k in agg}
             if value(agg, k, "tessera", m, "nc-nc") and value(agg, k, "tessera", m, "c-nc")]
        if q:
            rr.append((m, statistics.median(q), len(q)))
    if not rr:
        return None
    ok = all(r > 0.67 for _, r, _ in rr)
    return (8, "No need to reorganize the memory description if the file's is "
            "noncontiguous", "supported" if ok else "contradicted",
            "nc-nc / c-nc writes, the median over the points: " +
            ", ".join("%s %.2f (%d points)" % x for x in rr))


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
    return "- Network: " + ("**loopback** (every daemon and rank on 127.0.0.1; the network costs "
                            "nothing, so description bytes and two-phase's second transfer are "
                            "nearly free)" if net == "loopback" else
                            "**simulated %s**: the metadata daemon and the storage daemons run on "
                            "two \"nodes\", Linux network namespaces joined by a bridge; each "
                            "node's link is limited to %s each way by a tc token bucket (tbf), "
                            "the MPI ranks and the UFS file stay in the root namespace (one "
                            "client node). Simulated: bandwidth of each node's link. Not "
                            "simulated: latency beyond the kernel's own, disks (the daemons "
                            "write into page cache), switches, and the ranks' own network "
                            "(they share memory)." % (net, net))


def _setup_lines(meta):
    """The mode, the network and how to read the numbers."""
    return ["- Mode: **%s** (%d repetitions a point, the highest and the lowest dropped, the rest "
            "averaged%s); %d MPI ranks, 1 metadata and %d storage daemons, 64 KiB strips; "
            "Tessera's methods and ROMIO's UFS driver on a local file in the same run." % (
                meta["mode"], meta["reps"],
                "; the dissertation used 6 repetitions and 64 ranks on 16 servers" if meta["mode"] != "full"
                else "", meta["nprocs"], meta["n_ios"]),
            _network_line(meta["net"]),
            "- Writes include `MPI_File_sync`; reads are from the daemons' page cache. MB = 10^6 bytes; "
            "aggregate MB/s = all ranks' bytes / the slowest rank's time. At the default point a "
            "rank moves 32 KiB, a write of a millisecond or two plus the sync, so points that small "
            "move by ±100 % from run to run on a shared 2-core machine; trends over a sweep and "
            "the larger points are what to read. Unlike the dissertation, no one-second pause "
            "between runs, and every rank runs on this one machine.",
            "- Started %s. Left out: %s." % (meta.get("started", "?"), "; ".join(meta.get("left_out", [])) or
                                            "nothing"),
            ""]


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
                    fmt(value(agg, pt, t, m, case)) for t, m in SERIES) + " |")
        L.append("")
    return L


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


def _guideline_lines(meta, agg):
    net = meta["net"]
    L = ["## Guidelines of §5.5", "", "| # | guideline | verdict here | evidence |", "|---|---|---|---|"]
    for n, g, v, e in guidelines(meta, agg):
        L.append("| %d | %s | **%s** | %s |" % (n, g, v, e))
    L += ["", "Why the verdicts can differ from the dissertation's: %s" % (
        "on loopback the network is free, so list I/O's description bytes and two-phase's "
        "second transfer cost almost nothing, and the daemons write into page cache, so the "
        "fsync storms of §5.4.1 do not happen; with 2 cores the ranks, the daemons and the "
        "baseline share the CPUs." if net == "loopback" else
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
     "(what an fcntl user, or the MPI-IO driver's posix hint, does)",
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


def main():
    out = sys.argv[1]
    plt = _matplotlib("--no-plots" not in sys.argv)
    meta = json.load(open(os.path.join(out, "study.json")))
    rows, agg = load(out)
    figs = plot_sweeps(out, meta, agg, plt) if plt else []
    s3d_fig, s3d_txt = s3d_plot(out, plt)
    L = ["# The HPIO study (`make study`)", ""]
    L += _setup_lines(meta)
    L += _mode_lines(meta)
    L += _failure_lines(out)
    L += _sweep_lines(meta, agg, figs)
    L += _dissertation_lines(agg)
    L += ["## Request counts (Tabs. 3.1-3.3, 4.1)"] + tables_section(out) + [""]
    L += _guideline_lines(meta, agg)
    L += _lock_lines(out, s3d_fig, s3d_txt)
    if not plt:
        L += ["", "(No PNGs: no python3 with matplotlib; `make deps` installs python3-matplotlib.)"]
    open(os.path.join(out, "report.md"), "w").write("\n".join(L) + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main())
