"""patterns.py - the study's `patterns` part (study.py --parts patterns):
the bandwidth sweeps of the dissertation's chapters 3 and 4 (seed 001,
Figs. 3.9-3.12, 3.14, 3.16, 3.19 and 4.4-4.6) through the tessera: ROMIO
driver (romio-adio/bench/mpi_patterns), with each point's request counts
from the storage daemons' counters beside what the pattern implies.

One mpirun per (pattern, ranks, x, method, direction) runs the measured
call `reps` + 1 times (a write ends with MPI_File_sync) and drops the first
(it opens the connections and faults the buffers in, and was slower by up
to 3x); the daemons' counters are read around it, so its requests a
client a call are exact. Reads read
a file the same group wrote (or mpi_patterns -P wrote, on a resume).
Everything runs on a cluster of its own (var-patterns/), local reads off
unless --local-reads."""
import math
import os

MiB = 1 << 20

# What each pattern stands for: the dissertation's figures by direction,
# the x-axis, and its methods (ch. 3: multiple (POSIX), list, data sieving
# reads; ch. 4 adds datatype I/O, and two-phase runs in both).
FIGURES = {
    ("cyclic", "read"): "3.9", ("cyclic", "write"): "3.10",
    ("blockblock", "read"): "3.11", ("blockblock", "write"): "3.12",
    ("tile", "read"): "3.14/4.4",
    ("block3d", "read"): "3.16/4.5", ("block3d", "write"): "3.16/4.5",
    ("flash", "write"): "3.19/4.6",
}
# The synthetic tests (Figs. 3.9-3.12): multiple (POSIX) and list I/O both
# ways, data sieving reads only (PVFS1 had no locks, so no sieving writes);
# datatype I/O is Tessera's beside them (chapter 4's method).
SYNTH = {"write": ["posix", "list", "datatype"], "read": ["posix", "sieve", "list", "datatype"]}
ROMIO_ALL = {"write": ["posix", "coll", "list", "datatype"],
             "read": ["posix", "sieve", "coll", "list", "datatype"]}
FIELDS = ["figure", "pattern", "nprocs", "x_name", "x", "region", "method", "op", "rep",
          "bytes", "seconds", "mbs", "requests", "desc_bytes", "bytes_accessed",
          "bytes_desired", "expected_requests"]


def plan(mode):
    """{"reps": n, "groups": [group]}; a group is one pattern file at one
    scale: pattern, ranks, mpi_patterns arguments, x name and value, the
    methods per direction."""
    groups = []

    def synth(pattern, nps, size, accesses):
        for np_ in nps:
            for a in accesses:
                groups.append({"pattern": pattern, "nprocs": np_, "x_name": "accesses", "x": a,
                               "args": ["-p", pattern, "-S", str(size), "-A", str(a)],
                               "size": size, "methods": SYNTH})

    if mode == "tiny":
        synth("cyclic", [2], MiB, [256])
        groups[0]["methods"] = {"write": ["posix", "list", "datatype"],
                                "read": ["posix", "list", "datatype"]}
        return {"reps": 2, "groups": groups}
    full = mode == "full"
    size = (64 if full else 16) * MiB
    acc = [256, 1024, 4096, 16384] if full else [256, 4096]
    synth("cyclic", [2, 4, 8] if full else [2, 4], size, acc)
    synth("blockblock", [4, 9] if full else [4], size, acc)
    groups += romio_groups(full)
    return {"reps": 8 if full else 5, "groups": groups}


def romio_groups(full):
    """The tile reader, the 3-D block test and FLASH I/O at the mode's scale."""
    groups = []
    frames = 10 if full else 2
    groups.append({"pattern": "tile", "nprocs": 6, "x_name": "frames", "x": frames,
                   "args": ["-p", "tile", "-f", str(frames)],
                   "methods": {"read": ROMIO_ALL["read"]}})
    side = 240 if full else 120
    for np_ in ([8, 27] if full else [8]):
        groups.append({"pattern": "block3d", "nprocs": np_, "x_name": "nprocs", "x": np_,
                       "args": ["-p", "block3d", "-L", str(side)], "side": side,
                       "methods": ROMIO_ALL})
    blocks = 80 if full else 16
    for np_ in ([2, 4, 8] if full else [2, 4]):
        groups.append({"pattern": "flash", "nprocs": np_, "x_name": "nprocs", "x": np_,
                       "args": ["-p", "flash", "-b", str(blocks)], "blocks": blocks,
                       "methods": {"write": ROMIO_ALL["write"]}})
    return groups


# POSIX (a request a region) runs the synthetic patterns up to this many
# accesses a client: at 16384 on 8 or 9 ranks a point would take minutes of
# both cores, and the trend over the accesses is plain by 4096.
POSIX_MAX_ACCESSES = 4096


def tasks(pl):
    """(group index, method, op) in run order: a group's writes before its
    reads (a read reads the file its group wrote)."""
    out = []
    for gi, g in enumerate(pl["groups"]):
        for op in ("write", "read"):
            for m in g["methods"].get(op, []):
                if m == "posix" and g["x_name"] == "accesses" and g["x"] > POSIX_MAX_ACCESSES:
                    continue
                out.append((gi, m, op))
    return out


def key(g, method, op):
    return (g["pattern"], int(g["nprocs"]), str(g["x"]), method, op)


def done_keys(rows):
    return {(r["pattern"], int(r["nprocs"]), r["x"], r["method"], r["op"]) for r in rows}


# ------------------------------------------------------------ what each pattern implies
def regions(g, rank):
    """Rank's file regions [(offset, length)] as mpi_patterns makes them
    (adjacent ones joined)."""
    np_, p = g["nprocs"], g["pattern"]
    out = []

    def add(off, ln):
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + ln)
        else:
            out.append((off, ln))

    if p in ("cyclic", "blockblock"):
        a = g["x"]
        b = g["size"] // (np_ * a)
        if p == "cyclic":
            for y in range(a):
                add((y * np_ + rank) * b, b)
        else:
            q = math.isqrt(np_)
            for y in range(a):
                add(((rank // q) * a + y) * b * q + (rank % q) * b, b)
    elif p == "tile":
        fw, fh = 2532 * 3, 1408
        c, r = rank % 3, rank // 3
        for f in range(g["x"]):
            for y in range(768):
                add(f * fw * fh + (r * 640 + y) * fw + c * 754 * 3, 3072)
    elif p == "block3d":
        side, q = g["side"], round(np_ ** (1 / 3))
        L = side // q
        s = ((rank // (q * q)) * L, ((rank // q) % q) * L, (rank % q) * L)
        for z in range(L):
            for y in range(L):
                add(4 * (((s[0] + z) * side + s[1] + y) * side + s[2]), 4 * L)
    elif p == "flash":
        for v in range(24):
            for b in range(g["blocks"]):
                add(((v * np_ + rank) * g["blocks"] + b) * 4096, 4096)
    return out


def plan_requests(regs, max_regions, strip, n_ios, max_io):
    """Requests the client's planner (client/plan.c) sends for one call
    over regs: rounds of at most max_regions file regions (0: no limit),
    each ending when an object has max_io bytes; a request per object a
    round touches."""
    n, i, within = 0, 0, 0
    while i < len(regs):
        objs, nreg = {}, 1 if within else 0
        while i < len(regs):
            if within == 0 and max_regions and nreg == max_regions:
                break
            off = regs[i][0] + within
            run = min(regs[i][1] - within, strip - off % strip)
            obj = (off // strip) % n_ios
            take = min(run, max_io - objs.get(obj, 0))
            if take == 0:
                break
            nreg += within == 0
            objs[obj] = objs.get(obj, 0) + take
            within += take
            if within == regs[i][1]:
                i, within = i + 1, 0
        n += len(objs)
    return n


def expected_requests(g, method, strip, n_ios, max_io, batch=64):
    """Requests a client a call by the planner's rules, for the methods
    whose requests follow from the file regions alone (POSIX: a call per
    region; list: batches of 64; datatype: the whole view), else None
    (sieving's windows and two-phase's file domains are ROMIO's)."""
    if method not in ("posix", "list", "datatype"):
        return None
    total = 0
    for rank in range(g["nprocs"]):
        regs = regions(g, rank)
        if method == "posix":
            total += sum(plan_requests([r], 0, strip, n_ios, max_io) for r in regs)
        else:
            total += plan_requests(regs, batch if method == "list" else 0, strip, n_ios, max_io)
    return total / g["nprocs"]


# ------------------------------------------------------------ running
def run_point(ctx, g, method, op, prepared):
    """One mpirun of the point's `reps` calls: its CSV rows (without the
    record). ctx: run, mpirun, prog (mpi_patterns' path), env, cluster,
    reps. prepared: the groups whose file exists on this cluster."""
    name = "tessera:/pat-%s-%d-%s" % (g["pattern"], g["nprocs"], g["x"])
    base = ctx["mpirun"](g["nprocs"], ctx["env"]) + [ctx["prog"]] + g["args"]
    gid = (g["pattern"], g["nprocs"], g["x"])
    if op == "read" and gid not in prepared:
        r = ctx["run"](base + ["-P", name, "posix"], env=ctx["env"])
        if r.returncode != 0:
            raise RuntimeError("mpi_patterns -P %s failed (exit %d): %s" % (
                " ".join(g["args"]), r.returncode, r.stderr.strip()[-400:]))
        prepared.add(gid)
    before = ctx["cluster"].stats()
    calls = ctx["reps"] + 1  # the first a warm-up
    r = ctx["run"](base + ["-o", op, "-r", str(calls), name, method], env=ctx["env"])
    if r.returncode != 0:
        raise RuntimeError("mpi_patterns %s -o %s %s failed (exit %d): %s" % (
            " ".join(g["args"]), op, method, r.returncode, r.stderr.strip()[-400:]))
    after = ctx["cluster"].stats()
    if op == "write":
        prepared.add(gid)
    ops = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("op ")]
    if len(ops) != calls:
        raise RuntimeError("mpi_patterns printed %d calls, not %d" % (len(ops), calls))
    per = g["nprocs"] * calls
    kinds = ("contig", "list", "datatype")

    def delta(cols):
        return sum(after[(m, c)] - before[(m, c)] for m in kinds for c in cols) / per
    c = ctx["cluster"].settings
    exp = expected_requests(g, method, int(c.get("strip_size") or 65536), ctx["n_ios"],
                            int(c.get("max_io") or MiB))
    rows = []
    for rep, f in enumerate(ops[1:]):
        desired, secs = int(f[2]), float(f[4])
        agg = desired * g["nprocs"]
        rows.append({"figure": FIGURES.get((g["pattern"], op), ""), "pattern": g["pattern"],
                     "nprocs": g["nprocs"], "x_name": g["x_name"], "x": g["x"],
                     "region": regions(g, 0)[0][1] if g["pattern"] in ("cyclic", "blockblock")
                     else "", "method": method, "op": op, "rep": rep, "bytes": agg,
                     "seconds": secs, "mbs": "%.4f" % (agg / 1e6 / secs) if secs > 0 else "",
                     "requests": delta(["requests"]), "desc_bytes": delta(["desc_bytes"]),
                     "bytes_accessed": delta(["bytes_read", "bytes_written"]),
                     "bytes_desired": desired,
                     "expected_requests": "" if exp is None else exp})
    return rows
