"""report_index.py - the report's last section: every table and figure of
the dissertation (seed 001), each with what this study says of it.

A section of report.py (or report_patterns.py) that judges a figure adds
its verdict here with Index.add; the index then lists every item of the
dissertation's lists of tables and figures in order, with that verdict,
"not applicable" for the diagrams and background tables (no measurement
to repeat), and "not run" for a measured figure whose part this study
did not run. Verdicts: reproduced, partly, differs, not decided (the 95 %
intervals overlap where it would be decided), not applicable, not run.
"""
import csv
import os

# The dissertation's tables and figures (its own lists), and what each is.
# kind: "result" (a measurement to repeat), "diagram" (no measurement),
# "background" (a survey or an API list), "example" (see KIND_WHY).
ITEMS = [
    ("Tab. 2.1", "NetCDF library functions", "background"),
    ("Tab. 2.2", "HDF5 interfaces", "background"),
    ("Tab. 2.3", "MPI datatype constructors", "background"),
    ("Tab. 2.4", "HPC production file systems compared", "background"),
    ("Tab. 2.5", "HPC research file systems compared", "background"),
    ("Tab. 3.1", "tile reader: I/O characteristics", "result"),
    ("Tab. 3.2", "ROMIO 3-D block test: I/O characteristics", "result"),
    ("Tab. 3.3", "FLASH I/O: I/O characteristics", "result"),
    ("Tab. 4.1", "the methods' I/O characteristics compared", "result"),
] + [("Fig. 2.%d" % i, "background diagrams (I/O stack, access cases, data sieving, ...)",
       "diagram") for i in range(1, 11)] + [
    ("Fig. 3.%d" % i, w, "diagram") for i, w in (
        (1, "list I/O prototype"), (2, "list I/O write example"), (3, "PVFS list I/O prototype"),
        (4, "MPI-IO example code"), (5, "file datatype tiling"), (6, "flattening a file type"),
        (7, "1-D cyclic access"), (8, "block-block access"))] + [
    ("Fig. 3.9", "1-D cyclic reads over clients", "result"),
    ("Fig. 3.10", "1-D cyclic writes over clients", "result"),
    ("Fig. 3.11", "block-block reads over clients", "result"),
    ("Fig. 3.12", "block-block writes over clients", "result"),
    ("Fig. 3.13", "tile reader access pattern", "diagram"),
    ("Fig. 3.14", "tile reader results", "result"),
    ("Fig. 3.15", "3-D block access pattern", "diagram"),
    ("Fig. 3.16", "3-D block test results", "result"),
    ("Fig. 3.17", "FLASH memory datatype", "diagram"),
    ("Fig. 3.18", "FLASH file datatype", "diagram"),
    ("Fig. 3.19", "FLASH I/O results", "result"),
    ("Fig. 4.1", "datatype I/O prototypes", "diagram"),
    ("Fig. 4.2", "tile reader dataloop conversion", "diagram"),
    ("Fig. 4.3", "datatype I/O call example", "diagram"),
    ("Fig. 4.4", "tile reader with datatype I/O", "result"),
    ("Fig. 4.5", "3-D block with datatype I/O", "result"),
    ("Fig. 4.6", "FLASH I/O with datatype I/O", "result"),
    ("Fig. 5.1", "an HPIO access pattern from its parameters", "diagram"),
    ("Fig. 5.2", "HPIO over region count", "result"),
    ("Fig. 5.3", "HPIO over region size", "result"),
    ("Fig. 5.4", "HPIO over region spacing", "result"),
    ("Fig. 5.5", "POSIX to MPI-IO code conversion", "diagram"),
    ("Fig. 5.6", "reorganizing data cells", "diagram"),
    ("Fig. 5.7", "cost of collective I/O synchronization (one application's timeline)",
     "example"),
    ("Fig. 6.1", "database segmentation", "diagram"),
    ("Fig. 6.2", "S3aSim over processes, no-sync/sync", "result"),
] + [("Fig. 6.%d" % i, "S3aSim phases over processes, %s" % s, "result")
     for i, s in ((3, "MW"), (4, "WW-POSIX"), (5, "WW-List"), (6, "WW-Coll"))] + [
    ("Fig. 6.7", "S3aSim over compute speed, no-sync/sync", "result"),
] + [("Fig. 6.%d" % i, "S3aSim phases over compute speed, %s" % s, "result")
     for i, s in ((8, "MW"), (9, "WW-POSIX"), (10, "WW-List"), (11, "WW-Coll"))] + [
    ("Fig. 7.1", "the three lock methods", "diagram"),
    ("Fig. 7.2", "lock server architecture", "diagram"),
    ("Fig. 7.3", "locks without contention, 64 B apart", "result"),
    ("Fig. 7.4", "locks without contention, 4096 B apart", "result"),
    ("Fig. 7.5", "locks with contention, 64 B apart", "result"),
    ("Fig. 7.6", "locks with contention, 4096 B apart", "result"),
    ("Fig. 7.7", "S3D I/O in atomic mode: bandwidth", "result"),
    ("Fig. 7.8", "S3D I/O: % of no-lock bandwidth", "result"),
    ("Fig. 7.9", "S3aSim with locks: total and I/O time", "result"),
    ("Fig. 7.10", "S3aSim with locks: I/O share and % of no-lock", "result"),
    ("Fig. 8.1", "atomicity with contiguous I/O", "diagram"),
    ("Fig. 8.2", "locking against versioning", "diagram"),
    ("Fig. 8.3", "HPIO over region count with atomicity methods", "result"),
    ("Fig. 8.4", "HPIO over region spacing with atomicity methods", "result"),
]

KIND_WHY = {
    "diagram": "a diagram: nothing measured to repeat",
    "background": "background (a survey or an API list): nothing measured to repeat",
    "example": "one application's timeline on the dissertation's cluster; the cost it "
               "shows, collective I/O's implied synchronization, is what S3aSim's query sync "
               "measures here (Figs. 6.2 and 6.7)",
}

REPRODUCED, PARTLY, DIFFERS = "reproduced", "partly", "differs"
UNDECIDED, NA, NOT_RUN = "not decided", "not applicable", "not run"


def combine(verdicts):
    """One verdict from several claims' (held: True, not: False, not
    decided: None): reproduced only if every claim held, differs if some
    did not and none held, partly if some held and not all."""
    held = [v for v in verdicts if v is True]
    missed = [v for v in verdicts if v is False]
    if held and len(held) == len(verdicts):
        return REPRODUCED
    if missed and not held:
        return DIFFERS
    return PARTLY if held else UNDECIDED


class Index:
    """The verdicts the report's sections found, by item ("Fig. 3.9")."""

    def __init__(self):
        self.found = {}

    def add(self, item, verdict, why, where):
        """item's verdict, the measured reason in a few words, and the
        report section that shows it."""
        self.found[item] = (verdict, why, where)

    def lines(self):
        L = ["## Every table and figure of the dissertation", "",
             "What this study says of each (the sections above give the evidence; a verdict "
             "rests only on points whose 95 % intervals are apart).", "",
             "| item | what | verdict here | why | where |", "|---|---|---|---|---|"]
        rows = []
        for item, what, kind in ITEMS:
            if item in self.found:
                v, why, where = self.found[item]
            elif kind != "result":
                v, why, where = NA, KIND_WHY[kind], "-"
            else:
                v, why, where = NOT_RUN, "its part of the study did not run here", "-"
            rows.append([item, what, v, why, where])
        L += ["| %s | %s | **%s** | %s | %s |" % tuple(r) for r in _runs(rows)]
        counts = {}
        for item, _, kind in ITEMS:
            if kind == "result":
                v = self.found.get(item, (NOT_RUN,))[0]
                counts[v] = counts.get(v, 0) + 1
        L += ["", "Measured items: " + ", ".join("%d %s" % (n, v) for v, n in sorted(
            counts.items(), key=lambda x: -x[1])) + ".", ""]
        return L


def _runs(rows):
    """Consecutive rows of one chapter's tables or figures that are not
    applicable for the same reason, as one row ("Figs. 2.1-2.10")."""
    out = []
    for r in rows:
        kind, num = r[0].split()
        p = out[-1] if out else None
        if (p and r[2] == NA and p[0][2] == NA and r[3] == p[0][3] and
                p[1] == (kind, num.split(".")[0])):
            if r[1] not in p[0][1].split("; "):
                p[0][1] += "; " + r[1]
            p[2] = num
            continue
        out.append([list(r), (kind, num.split(".")[0]), None])
    rows = []
    for r, (kind, _ch), last in out:
        if last:
            r[0] = "%ss. %s-%s" % (kind.rstrip("."), r[0].split()[1], last)
        rows.append(r)
    return rows


# ------------------------------------------------------------ locks (§7.5.1)
def _lock_rates(out):
    """{(fig, servers, overlap, method, protocol): {"acq": [...], "rel": [...]}}
    of locks/locks.csv's repetitions, aggregate locks/s."""
    path = os.path.join(out, "locks", "locks.csv")
    if not os.path.exists(path):
        return None
    d = {}
    for r in csv.DictReader(open(path, newline="")):
        if r.get("error"):
            continue
        k = (r["fig"], int(r["servers"]), int(r["overlap"]), r["method"], r["protocol"])
        e = d.setdefault(k, {"acq": [], "rel": []})
        e["acq"].append(float(r["acquire_locks_per_s"]))
        e["rel"].append(float(r["release_locks_per_s"]))
    return d


def _faster(d, interval, k1, k2, what, factor=1.0):
    """True if k1's rate is above factor x k2's with the intervals apart
    (factor applied to the whole interval), False if below, None if they
    overlap; MISSING if this study did not run one of them."""
    if k1 not in d or k2 not in d:
        return MISSING
    a, b = interval(d[k1][what]), interval(d[k2][what])
    if a is None or b is None:
        return None
    if a[0] > factor * b[1]:
        return True
    if a[1] < factor * b[0]:
        return False
    return None


MISSING = "missing"


def _tally_why(claims):
    """The claims this study ran: their verdict and "h of n held, ..."."""
    ran = [c for c in claims if c is not MISSING]
    if not ran:
        return NOT_RUN, "none of the methods compared ran in this study"
    return combine(ran), "%d of %d claims held, %d not, %d not decided%s" % (
        ran.count(True), len(ran), ran.count(False), ran.count(None),
        (" (%d not run)" % (len(claims) - len(ran))) if len(ran) < len(claims) else "")


def lock_verdicts(out, idx, interval):
    """Figs. 7.3-7.6 from the lock benchmark's repetitions: the claims
    §7.5.1 states, at the largest scale this study ran."""
    d = _lock_rates(out)
    if not d:
        return
    where = "Locks (Figs. 7.3-7.6)"
    for fig in ("7.3", "7.4"):
        ns = sorted({k[1] for k in d if k[0] == fig and k[2] == 0})
        if not ns:
            continue
        n = ns[-1]

        def k(m, p):
            return (fig, n, 0, m, p)
        claims = [
            _faster(d, interval, k("datatype", "one-try"), k("list64-split", "one-try"), "acq"),
            _faster(d, interval, k("datatype", "one-try"), k("posix", "one-try"), "acq", 10),
            _faster(d, interval, k("datatype", "one-try"), k("list64-split", "one-try"), "rel"),
            _faster(d, interval, k("datatype", "one-try"), k("posix", "one-try"), "rel", 100),
        ] + [_faster(d, interval, k(m, "one-try"), k(m, "two-phase"), "acq")
             for m in ("posix", "list64-split", "datatype")]
        v, tally = _tally_why(claims)
        idx.add("Fig. %s" % fig, v,
                "at %d clients x %d daemons: datatype over list (64-region requests) and POSIX, "
                "acquire and release, and one-try over two-phase: %s" % (n, n, tally), where)
    for fig in ("7.5", "7.6"):
        pts = [k for k in d if k[0] == fig]
        if not pts:
            continue
        n = max(k[1] for k in pts)
        top = max(k[2] for k in pts if k[1] == n)
        claims = [_faster(d, interval, (fig, n, top, "datatype", "alt-try"),
                          (fig, n, top, m, p), "acq")
                  for m, p in (("datatype", "two-phase"), ("posix", "two-phase"),
                               ("list64-split", "two-phase"))]
        v, tally = _tally_why(claims)
        idx.add("Fig. %s" % fig, v,
                "at %d %% overlap, %d clients: datatype-alt-try above datatype-two-phase, "
                "POSIX-two-phase and list-two-phase: %s" % (top, n, tally), where)


def s3d_verdicts(out, idx):
    """Figs. 7.7-7.8: the S3D benchmark prints means of its repetitions
    only, so its comparisons are shown but not judged."""
    if not os.path.exists(os.path.join(out, "s3d.txt")):
        return
    for fig in ("Fig. 7.7", "Fig. 7.8"):
        idx.add(fig, UNDECIDED, "bench_mpi_s3d.sh reports each method's mean over its "
                "repetitions, not their spread: compared in the table, not judged",
                "Locks and atomic mode (S3D)")

