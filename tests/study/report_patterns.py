"""report_patterns.py - report.py's section on the study's `patterns` part
(patterns.csv, tests/study/patterns.py): the chapter 3-4 bandwidth sweeps
beside the dissertation's Figs. 3.9-3.19 and 4.4-4.6, their figures, the
request counts of every point beside what the pattern implies, and a
verdict per figure that rests only on intervals that are apart."""
import csv
import os
import statistics

import patterns
import report as R

MiB = 1 << 20
COLOR = {"posix": "tab:red", "sieve": "tab:orange", "list": "tab:blue",
         "datatype": "tab:green", "coll": "tab:purple"}
NAME = {"posix": "POSIX", "sieve": "sieving", "list": "list", "datatype": "datatype",
        "coll": "two-phase"}
ORDER = ["posix", "sieve", "coll", "list", "datatype"]


class Data:
    """patterns.csv by point: (pattern, nprocs, x, method, op) -> rows."""

    def __init__(self, rows):
        self.rows = rows
        self.pts = {}
        for r in rows:
            k = (r["pattern"], int(r["nprocs"]), int(r["x"]), r["method"], r["op"])
            self.pts.setdefault(k, []).append(r)

    def vals(self, k, metric):
        return [float(r[metric]) for r in self.pts.get(k, []) if r[metric] not in ("", None)]

    def mean(self, k, metric="mbs"):
        """The dissertation's average (highest and lowest dropped) or None."""
        return R.trimmed(self.vals(k, metric))

    def ci(self, k, metric="mbs"):
        return R.t_interval(self.vals(k, metric))

    def first(self, k):
        return self.pts[k][0] if k in self.pts else None

    def keys(self, pattern, op):
        return sorted(k for k in self.pts if k[0] == pattern and k[4] == op)

    def axis(self, pattern, op, what):
        """The ranks (what=1) or x values (what=2) measured."""
        return sorted({k[what] for k in self.keys(pattern, op)})


def cmp(d, a, b, metric="mbs"):
    """+1 if point a's metric is above b's beyond both intervals, -1 below,
    0 when they overlap or either is missing (no verdict)."""
    ia, ib = d.ci(a, metric), d.ci(b, metric)
    if R.overlap(ia, ib):
        return 0
    return 1 if ia[0] > ib[1] else -1


def ratio_held(d, a, b, want, metric="mbs"):
    """Whether a / b is at least `want` by the intervals: +1 if even a's
    lowest over b's highest is, -1 if even a's highest over b's lowest is
    not, 0 otherwise (no verdict)."""
    ia, ib = d.ci(a, metric), d.ci(b, metric)
    if not ia or not ib:
        return 0
    if ib[1] > 0 and ia[0] / ib[1] >= want:
        return 1
    if ib[0] > 0 and ia[1] / ib[0] < want:
        return -1
    return 0


def cell(d, k, metric="mbs"):
    m = d.mean(k, metric)
    if m is None:
        return "-"
    iv = d.ci(k, metric)
    return "%s [%s–%s]" % (R.fmt(m), R.fmt(max(iv[0], 0)), R.fmt(iv[1])) if iv else R.fmt(m)


# ------------------------------------------------------------ plots
def _plot_synth(out, d, pattern, op, fig, plt):
    """Figs. 3.9-3.12: time over the accesses a client, a line per method
    and client count (the dissertation plots time, lower is better)."""
    keys = d.keys(pattern, op)
    if not keys:
        return None
    f, ax = plt.subplots(figsize=(7, 4.5))
    styles = ["-", "--", ":", "-."]
    for i, np_ in enumerate(d.axis(pattern, op, 1)):
        for m in ORDER:
            xs = [x for x in d.axis(pattern, op, 2) if (pattern, np_, x, m, op) in d.pts]
            if not xs:
                continue
            ys = [d.mean((pattern, np_, x, m, op), "seconds") for x in xs]
            err = [[], []]
            for x, y in zip(xs, ys):
                lo, hi = d.ci((pattern, np_, x, m, op), "seconds") or (y, y)
                err[0].append(max(0.0, y - max(lo, y / 100)))
                err[1].append(max(0.0, hi - y))
            ax.errorbar(xs, ys, yerr=err, capsize=2, marker="o", color=COLOR[m],
                        linestyle=styles[i % len(styles)], label="%s, %d clients" % (NAME[m], np_))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("accesses a client")
    ax.set_ylabel("seconds (slowest rank%s)" % (", with MPI_File_sync" if op == "write" else ""))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Fig. %s: %s %ss (%s)" % (fig, "1-D cyclic" if pattern == "cyclic" else
                                            "block-block", op, _size_label(d, pattern)))
    f.tight_layout()
    name = "fig%s-%s-%s.png" % (fig, pattern, op)
    f.savefig(os.path.join(out, name), dpi=60)
    plt.close(f)
    return name


def _size_label(d, pattern):
    r = next((r for r in d.rows if r["pattern"] == pattern), None)
    return "%.0f MiB aggregate" % (int(r["bytes"]) / MiB) if r else ""


def _bar_series(d, pattern, op, m, nps):
    """Method m's bars: positions (the index of the rank count), means and
    their interval as error bars."""
    xs, ys, err = [], [], [[], []]
    for i, np_ in enumerate(nps):
        k = _at(d, pattern, op, np_, m)
        if not k:
            continue
        y = d.mean(k)
        lo, hi = d.ci(k) or (y, y)
        xs.append(i)
        ys.append(y)
        err[0].append(max(0.0, y - lo))
        err[1].append(max(0.0, hi - y))
    return xs, ys, err


def _at(d, pattern, op, np_, m):
    """The key of method m at np_ ranks (one x per rank count), or None."""
    return next((k for k in d.keys(pattern, op) if k[1] == np_ and k[3] == m), None)


def _plot_bars(out, d, pattern, fig, title, plt):
    """Figs. 3.14/4.4, 3.16/4.5, 3.19/4.6: aggregate MB/s, a bar per method
    at each rank count, a panel per direction."""
    ops = [op for op in ("write", "read") if d.keys(pattern, op)]
    if not ops:
        return None
    f, axes = plt.subplots(1, len(ops), figsize=(5.5 * len(ops), 4), squeeze=False)
    for ax, op in zip(axes[0], ops):
        nps = d.axis(pattern, op, 1)
        ms = [m for m in ORDER if any(k[3] == m for k in d.keys(pattern, op))]
        w = 0.8 / max(1, len(ms))
        for j, m in enumerate(ms):
            xs, ys, err = _bar_series(d, pattern, op, m, nps)
            ax.bar([x + j * w for x in xs], ys, w, yerr=err, capsize=2, color=COLOR[m],
                   label=NAME[m])
        ax.set_xticks([i + 0.4 - w / 2 for i in range(len(nps))])
        ax.set_xticklabels(["%d ranks" % n for n in nps])
        ax.set_ylabel("aggregate MB/s")
        ax.set_yscale("log")
        ax.set_title(op + "s")
        ax.legend(fontsize=7)
    f.suptitle("Fig. %s: %s" % (fig, title))
    f.tight_layout()
    name = "fig%s-%s.png" % (fig.replace("/", "-"), pattern)
    f.savefig(os.path.join(out, name), dpi=60)
    plt.close(f)
    return name


# ------------------------------------------------------------ tables
def _table(d, pattern, op):
    L = ["| ranks | %s | method | MB/s [95 %%] | seconds [95 %%] | requests a client a call "
         "| implied | desc B | accessed MiB |" % ("accesses (region B)" if pattern in (
             "cyclic", "blockblock") else "x"),
         "|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(d.keys(pattern, op), key=lambda k: (k[1], k[2], ORDER.index(k[3]))):
        r = d.first(k)
        x = "%d (%s)" % (k[2], r["region"]) if r["region"] else "%s %d" % (r["x_name"], k[2])
        exp = r["expected_requests"]
        req = float(r["requests"])
        L.append("| %d | %s | %s | %s | %s | %.1f | %s | %.0f | %.2f |" % (
            k[1], x, NAME[k[3]], cell(d, k), cell(d, k, "seconds"), req,
            ("%.1f%s" % (float(exp), "" if float(exp) == req else " ≠")) if exp else "-",
            float(r["desc_bytes"]), float(r["bytes_accessed"]) / MiB))
    return L


# ------------------------------------------------------------ verdicts
class Claims:
    """One figure's claims: each (text, +1 held / -1 not / 0 undecided,
    evidence)."""

    def __init__(self, fig, what):
        self.fig, self.what, self.items, self.na = fig, what, [], None

    def add(self, text, held, ev):
        self.items.append((text, held, ev))

    def verdict(self):
        """differs if a claim fails beyond the intervals; reproduced if
        every claim holds beyond them; else how many held."""
        if self.na:
            return "not applicable"
        hs = [h for _, h, _ in self.items]
        if not hs:
            return "not measured"
        if any(h < 0 for h in hs):
            return "differs"
        if all(h > 0 for h in hs):
            return "reproduced"
        if not any(hs):
            return "undecided (intervals overlap)"
        return "partly reproduced (%d of %d claims; the rest undecided)" % (
            sum(h > 0 for h in hs), len(hs))


def _ratio(d, a, b, metric="seconds"):
    x, y = d.mean(a, metric), d.mean(b, metric)
    return x / y if x is not None and y else None


def _grows(c, d, pattern, op, m, what):
    """m's time from the fewest to the most accesses, per client count."""
    for np_ in d.axis(pattern, op, 1):
        # the method's own points (POSIX stops at POSIX_MAX_ACCESSES)
        xs = [x for x in d.axis(pattern, op, 2) if (pattern, np_, x, m, op) in d.pts]
        if len(xs) < 2:
            continue
        a, b = (pattern, np_, xs[0], m, op), (pattern, np_, xs[-1], m, op)
        r = _ratio(d, b, a)
        h = cmp(d, b, a, "seconds")
        c.add("%s time grows with the accesses (%d clients)" % (what, np_), h,
              "%d → %d accesses (×%d): %s s → %s s, ×%.2f%s" % (
                  xs[0], xs[-1], xs[-1] // xs[0], R.fmt(d.mean(a, "seconds"), 3),
                  R.fmt(d.mean(b, "seconds"), 3), r, "" if h else " (intervals overlap)"))


def _sieve_flat(c, d, pattern):
    xs = d.axis(pattern, "read", 2)
    for np_ in d.axis(pattern, "read", 1):
        a, b = (pattern, np_, xs[0], "sieve", "read"), (pattern, np_, xs[-1], "sieve", "read")
        if len(xs) < 2 or a not in d.pts or b not in d.pts:
            continue
        r = _ratio(d, b, a)
        h = cmp(d, b, a, "seconds")
        # flat: the intervals overlap, or the change is under 1.5x either way
        held = 1 if (not h or 2 / 3 <= r <= 1.5) else -1
        c.add("sieving time nearly constant over the accesses (%d clients)" % np_, held,
              "×%.2f from %d to %d accesses%s" % (r, xs[0], xs[-1],
                                                 "" if h else " (intervals overlap)"))


def _gap(c, d, pattern, op, fast, slow, want, text):
    """slow's time over fast's at every point: at least `want` times."""
    rs, dec = [], []
    for k in d.keys(pattern, op):
        if k[3] != fast:
            continue
        s = (k[0], k[1], k[2], slow, op)
        if s in d.pts:
            rs.append((k[1], k[2], _ratio(d, s, k), float(d.first(s)["requests"]) /
                       max(float(d.first(k)["requests"]), 1e-9)))
            dec.append(ratio_held(d, s, k, want, "seconds"))
    if not rs:
        return
    lo = min(r[2] for r in rs)
    # fails where the intervals put the ratio below `want` at some point;
    # holds where they put it above at every point
    held = -1 if any(x < 0 for x in dec) else (1 if all(x > 0 for x in dec) else 0)
    c.add(text, held, "%s / %s time from ×%.1f to ×%.1f (%s); requests ×%.0f to ×%.0f (counters)" % (
        NAME[slow], NAME[fast], lo, max(r[2] for r in rs),
        ", ".join("%d clients %d: ×%.1f" % r[:3] for r in rs[:6]),
        min(r[3] for r in rs), max(r[3] for r in rs)))


def _rank(c, d, pattern, op, order, text):
    """Each neighbour pair of `order` (fastest first) in order, by MB/s."""
    for np_ in d.axis(pattern, op, 1):
        ks = {m: _at(d, pattern, op, np_, m) for m in order}
        if not all(ks.values()):
            continue
        parts, hs = [], []
        for a, b in zip(order, order[1:]):
            h = cmp(d, ks[a], ks[b])
            hs.append(h)
            parts.append("%s %s %s" % (NAME[a], {1: ">", -1: "<", 0: "≈"}[h], NAME[b]))
        held = -1 if any(h < 0 for h in hs) else (1 if all(hs) else 0)
        c.add("%s (%d ranks)" % (text, np_), held, ", ".join(parts) + " (MB/s: " + ", ".join(
            "%s %s" % (NAME[m], R.fmt(d.mean(ks[m]))) for m in order) + ")")


def _best_held(d, hs, kb, kn, factor):
    """-1 if the best is below another beyond the intervals or short of
    `factor` over the next; +1 if above every other and by `factor`."""
    f = ratio_held(d, kb, kn, factor) if factor > 1 else 1
    if any(h < 0 for h in hs) or f < 0:
        return -1
    return 1 if all(hs) and f > 0 else 0


def _best(c, d, pattern, op, best, among, factor, text):
    for np_ in d.axis(pattern, op, 1):
        ks = {m: _at(d, pattern, op, np_, m) for m in among}
        ks = {m: k for m, k in ks.items() if k}
        if best not in ks or len(ks) < 2:
            continue
        others = [m for m in ks if m != best]
        nxt = max(others, key=lambda m: d.mean(ks[m]) or 0)
        r = (d.mean(ks[best]) or 0) / (d.mean(ks[nxt]) or 1e-9)
        hs = [cmp(d, ks[best], ks[m]) for m in others]
        held = _best_held(d, hs, ks[best], ks[nxt], factor)
        by = {v: [NAME[m] for m, h in zip(others, hs) if h == v] for v in (1, -1, 0)}
        c.add("%s (%d ranks)" % (text, np_), held, "%s %s MB/s, the best other %s %s MB/s: "
              "×%.2f; clearly above %s; clearly below %s; intervals overlap with %s" % (
                  NAME[best], R.fmt(d.mean(ks[best])), NAME[nxt], R.fmt(d.mean(ks[nxt])), r,
                  ", ".join(by[1]) or "none", ", ".join(by[-1]) or "none",
                  ", ".join(by[0]) or "none"))


def claims(d):
    """Every figure the task names, with its claims checked on d."""
    out = []
    for pattern, fig_r, fig_w, label in (("cyclic", "3.9", "3.10", "1-D cyclic"),
                                         ("blockblock", "3.11", "3.12", "block-block")):
        c = Claims(fig_r, "%s reads over the accesses a client" % label)
        _grows(c, d, pattern, "read", "posix", "multiple (POSIX) I/O")
        _grows(c, d, pattern, "read", "list", "list I/O")
        _gap(c, d, pattern, "read", "list", "posix", 1.0, "list I/O faster than multiple I/O")
        _sieve_flat(c, d, pattern)
        if pattern == "cyclic":
            _sieve_clients(c, d)
        else:
            _bb_vs_cyclic(c, d)
            _list_turn(c, d)
        out.append(c)
        c = Claims(fig_w, "%s writes over the accesses a client" % label)
        _gap(c, d, pattern, "write", "list", "posix", 50.0,
             "a gap of nearly two orders of magnitude between list and multiple I/O")
        _grows(c, d, pattern, "write", "posix", "multiple (POSIX) I/O")
        out.append(c)
    c = Claims("3.14", "tile reader (cached reads; ch. 3's methods)")
    _rank(c, d, "tile", "read", ["list", "sieve", "coll", "posix"],
          "list > data sieving > two-phase > POSIX")
    out.append(c)
    c = Claims("4.4", "tile reader with datatype I/O")
    _best(c, d, "tile", "read", "datatype", ["posix", "sieve", "coll", "list", "datatype"], 1.2,
          "datatype I/O the clear winner, 37 % faster than list I/O")
    out.append(c)
    c = Claims("3.16", "3-D block, ch. 3's methods")
    _best(c, d, "block3d", "write", "list", ["posix", "coll", "list"], 1.0,
          "writes: list I/O takes a big lead")
    _best(c, d, "block3d", "read", "list", ["posix", "sieve", "coll", "list"], 1.0,
          "reads: list I/O ahead")
    out.append(c)
    c = Claims("4.5", "3-D block with datatype I/O")
    for op in ("write", "read"):
        _best(c, d, "block3d", op, "datatype", ORDER, 2.0,
              "%ss: datatype the clear winner, more than double the next" % op)
    out.append(c)
    c = Claims("3.19", "FLASH I/O writes, ch. 3's methods")
    _best(c, d, "flash", "write", "coll", ["posix", "coll", "list"], 1.0,
          "two-phase best (the aggregate file access is contiguous)")
    _gap(c, d, "flash", "write", "list", "posix", 50.0, "list I/O about two orders above POSIX")
    out.append(c)
    c = Claims("4.6", "FLASH I/O writes with datatype I/O")
    _rank(c, d, "flash", "write", ["coll", "list"], "list I/O below two-phase")
    _datatype_small(c, d)
    out.append(c)
    for fig, what in (("3.15", "the 3-D block pattern (a diagram)"),
                      ("3.17", "FLASH's memory datatype (a diagram)"),
                      ("3.18", "FLASH's file datatype (a diagram)")):
        c = Claims(fig, what)
        c.na = "a diagram; mpi_patterns builds the pattern as drawn"
        out.append(c)
    return sorted(out, key=lambda c: [int(x) for x in c.fig.split(".")])


def _sieve_clients(c, d):
    """Fig. 3.9: sieving time nearly doubles when the clients double."""
    nps = d.axis("cyclic", "read", 1)
    for x in d.axis("cyclic", "read", 2):
        for a, b in zip(nps, nps[1:]):
            ka, kb = ("cyclic", a, x, "sieve", "read"), ("cyclic", b, x, "sieve", "read")
            if b != 2 * a or ka not in d.pts or kb not in d.pts:
                continue
            r, h = _ratio(d, kb, ka), cmp(d, kb, ka, "seconds")
            held = 0 if not h else (1 if 1.5 <= r <= 2.7 else -1)
            c.add("sieving time nearly doubles from %d to %d clients (%d accesses)" % (a, b, x),
                  held, "×%.2f%s; bytes accessed a client ×%.2f (counters)" % (
                      r, "" if h else " (intervals overlap)",
                      float(d.first(kb)["bytes_accessed"]) / float(d.first(ka)["bytes_accessed"])))


def _bb_vs_cyclic(c, d):
    """§3.4.2.3: sieving reads faster on block-block than 1-D cyclic at the
    same clients (less data it does not want)."""
    for k in d.keys("blockblock", "read"):
        if k[3] != "sieve":
            continue
        kc = ("cyclic",) + k[1:]
        if kc not in d.pts:
            continue
        h = cmp(d, k, kc, "seconds")
        c.add("sieving reads faster on block-block than 1-D cyclic (%d clients, %d accesses)" % (
            k[1], k[2]), -h, "%s s against %s s; accessed %.1f against %.1f MiB a client" % (
            R.fmt(d.mean(k, "seconds"), 3), R.fmt(d.mean(kc, "seconds"), 3),
            float(d.first(k)["bytes_accessed"]) / MiB, float(d.first(kc)["bytes_accessed"]) / MiB))


def _list_turn(c, d):
    """Fig. 3.11's list I/O turn at about 150 bytes an access, 9 and 16
    clients: measurable only where the regions get that small."""
    regs = [int(r["region"]) for r in d.rows if r["pattern"] == "blockblock" and r["region"]]
    nps = d.axis("blockblock", "read", 1)
    if not regs or min(regs) > 300 or max(nps) < 9:
        c.add("list I/O turns sharply upward near 150 bytes an access (9 and 16 clients)", 0,
              "not reached here: the smallest block-block region is %s bytes, the most clients %s "
              "(the short run's scale; `--full` runs 9 clients)" % (
                  min(regs) if regs else "-", max(nps) if nps else "-"))


def _datatype_small(c, d):
    """Fig. 4.6: at small client counts list and datatype I/O are below
    two-phase; datatype passes two-phase only at 96 processes."""
    for np_ in d.axis("flash", "write", 1):
        kd, kc = ("flash", np_, np_, "datatype", "write"), ("flash", np_, np_, "coll", "write")
        if kd in d.pts and kc in d.pts:
            h = cmp(d, kc, kd)
            c.add("datatype I/O below two-phase at few clients (%d ranks)" % np_, h,
                  "two-phase %s, datatype %s MB/s" % (R.fmt(d.mean(kc)), R.fmt(d.mean(kd))))


def _claim_lines(cs):
    L = ["| Fig. | what | verdict here | claims: held (+), not (−), undecided (?) |",
         "|---|---|---|---|"]
    for c in cs:
        if c.na:
            L.append("| %s | %s | **not applicable** | %s |" % (c.fig, c.what, c.na))
            continue
        items = "<br>".join("%s %s: %s" % ({1: "+", -1: "−", 0: "?"}[h], t, e)
                            for t, h, e in c.items) or "-"
        L.append("| %s | %s | **%s** | %s |" % (c.fig, c.what, c.verdict(), items))
    return L


WHY = ("Why results differ from the dissertation's, from what this run measured: the "
       "daemons serve from page cache on one host over loopback, so a request costs tens of "
       "microseconds rather than a disk seek plus a fast-Ethernet round trip; time then follows "
       "the request counts (the `requests` column) and the CPU the ranks and the daemons share "
       "(2 cores), not the disk. List I/O sends 64 regions a request (`tessera_list_batch`), "
       "split per storage daemon, so its request gap to POSIX is at most 64× and smaller where "
       "a batch spans several daemons; the dissertation's \"two orders of magnitude\" also "
       "counted disk and network per request. FLASH's POSIX here follows the file's 24 "
       "regions a variable, not memory's 8-byte pieces: the driver packs the noncontiguous "
       "memory first (Tab. 3.3's note). Two-phase and sieving read more bytes, or move them "
       "twice, and that costs little here: the bytes come from page cache and the second "
       "transfer between ranks is shared memory, where the dissertation's reads were uncached "
       "and crossed fast Ethernet twice; so they can pass list and datatype I/O in the tile "
       "and 3-D block reads. Sieving reads a client's whole extent whatever the clients (the "
       "`accessed` column), so doubling the clients doubles the bytes the daemons serve, as "
       "in Fig. 3.9, but on 2 cores the time also follows how many ranks share them.")


def section(out, plt):
    """report.md's lines for the patterns part."""
    path = os.path.join(out, "patterns.csv")
    L = ["## Bandwidth sweeps of chapters 3-4 (Figs. 3.9-3.19, 4.4-4.6)", ""]
    if not os.path.exists(path):
        return L + ["(patterns not run in this study)", ""]
    d = Data(list(csv.DictReader(open(path, newline=""))))
    if not d.rows:
        return L + ["(no rows)", ""]
    reps = max(int(r["rep"]) for r in d.rows) + 1
    L += ["romio-adio/bench/mpi_patterns through the `tessera:` driver on a cluster of its own "
          "(4 storage daemons, 64 KiB strips), %d repetitions a point in one mpirun; MB/s and "
          "seconds are the dissertation's average (highest and lowest dropped) with the 95 %% "
          "t-interval of the mean; writes include `MPI_File_sync`; reads are from the daemons' "
          "page cache (Fig. 3.14's cached case; the dissertation's other read figures are "
          "uncached). Requests are the storage daemons' counters around the run, a client a "
          "call; *implied* is what the client's planner sends for those file regions (a call a "
          "region for POSIX, 64 regions a list request, the whole view for datatype, each cut "
          "per storage daemon and per `max_io`); ≠ marks a difference. Scale: %s." % (
              reps, _scale(d)), ""]
    L += ["### Verdicts", ""] + _claim_lines(claims(d)) + ["", WHY, ""]
    figs = []
    if plt:
        for pattern, op, fig in (("cyclic", "read", "3.9"), ("cyclic", "write", "3.10"),
                                 ("blockblock", "read", "3.11"), ("blockblock", "write", "3.12")):
            figs.append(_plot_synth(out, d, pattern, op, fig, plt))
        figs.append(_plot_bars(out, d, "tile", "3.14/4.4", "tile reader", plt))
        figs.append(_plot_bars(out, d, "block3d", "3.16/4.5", "3-D block test", plt))
        figs.append(_plot_bars(out, d, "flash", "3.19/4.6", "FLASH I/O", plt))
    L += ["![%s](%s)" % (f, f) for f in figs if f] + [""]
    for pattern, op, title in (("cyclic", "read", "Fig. 3.9, 1-D cyclic reads"),
                               ("cyclic", "write", "Fig. 3.10, 1-D cyclic writes"),
                               ("blockblock", "read", "Fig. 3.11, block-block reads"),
                               ("blockblock", "write", "Fig. 3.12, block-block writes"),
                               ("tile", "read", "Figs. 3.14 and 4.4, tile reader"),
                               ("block3d", "write", "Figs. 3.16 and 4.5, 3-D block writes"),
                               ("block3d", "read", "Figs. 3.16 and 4.5, 3-D block reads"),
                               ("flash", "write", "Figs. 3.19 and 4.6, FLASH I/O writes")):
        if d.keys(pattern, op):
            L += ["### %s" % title, ""] + _table(d, pattern, op) + [""]
    return L


def _scale(d):
    parts = []
    for p, what in (("cyclic", "1-D cyclic"), ("blockblock", "block-block")):
        rs = [r for r in d.rows if r["pattern"] == p]
        if rs:
            parts.append("%s %.0f MiB aggregate (1 GiB), %s accesses a client (POSIX up to %d), "
                         "%s clients" % (
                             what, statistics.median(int(r["bytes"]) for r in rs) / MiB,
                             ",".join(sorted({r["x"] for r in rs}, key=int)),
                             patterns.POSIX_MAX_ACCESSES,
                             ",".join(sorted({r["nprocs"] for r in rs}, key=int))))
    for p, what, full in (("tile", "tile reader", "100 frames, 6 clients"),
                          ("block3d", "3-D block", "600^3 integers, 8-64 ranks"),
                          ("flash", "FLASH", "80 blocks a rank, 2-128 ranks")):
        rs = [r for r in d.rows if r["pattern"] == p]
        if rs:
            parts.append("%s %.1f MiB a client on %s ranks (%s)" % (
                what, int(rs[0]["bytes_desired"]) / MiB,
                ",".join(sorted({r["nprocs"] for r in rs}, key=int)), full))
    return "; ".join(parts)
