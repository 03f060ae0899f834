#!/usr/bin/env python3
"""csum_compare.py - what the storage daemons' checksum block (csum_block)
does to HPIO's spacing figure, as ratios within one run.

    csum_compare.py [--out DIR] [--blocks 512,4096,65536] [--spacings 128,1024,8192]
                    [--count 2048] [--methods list,datatype] [--reps 3] [--rounds 2]

One cluster per block size (study.py's Cluster, local reads off), all up at
once; the points run in rounds, each round every block size in turn, so a
load that changes during the run falls on every block size alike. Writes
csum.csv (hpio.csv's columns, csum_block recorded per row) and prints, per
point, each block's median bandwidth over the default's (4096) with the
95 % intervals of both. The figure in docs/benchmarks.md ("The checksum
block") is this program's output.
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study  # noqa: E402


def interval(xs):
    """The 95 % t-interval of the mean (lo, hi): the study report's."""
    import report
    return report.t_interval(xs) or (float("nan"), float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(study.B, "study", "csum-compare"))
    ap.add_argument("--blocks", default="512,4096,65536")
    ap.add_argument("--spacings", default="128,1024,8192")
    ap.add_argument("--count", type=int, default=2048)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--methods", default="list,datatype")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    blocks = [int(x) for x in a.blocks.split(",")]
    os.makedirs(a.out, exist_ok=True)
    p = {"nprocs": study.NPROCS, "reps": a.reps, "verify": False, "local_reads": False}
    clusters = {}
    rows = []
    try:
        for b in blocks:
            tun = {"sieve_gap": 4096, "sieve_span": 4 << 20, "csum_block": b, "local_reads": 0}
            c = clusters[b] = study.Cluster(a.out, None, "c%d" % b, tun, var="var%d" % b)
            c.up()
            got = c.settings.get("csum_block")
            if got != str(b):
                sys.exit("csum_compare: cluster for %d runs with csum_block %s" % (b, got))
        commit = study.git_commit()
        for rnd in range(a.rounds):
            for g in [int(x) for x in a.spacings.split(",")]:
                for m in a.methods.split(","):
                    for b in blocks:
                        env = study.mpi_env(clusters[b].conf, False)
                        key = (a.count, a.size, g, "tessera", m)
                        sys.stderr.write("round %d spacing %d %s csum_block %d\n" % (rnd, g, m, b))
                        for r in study.run_hpio(key, p, a.out, env):
                            rows.append(dict(r, csum_block=b, round=rnd, commit=commit,
                                             load1="%.2f" % os.getloadavg()[0]))
    finally:
        for c in clusters.values():
            c.down()
    fields = list(rows[0].keys())
    with open(os.path.join(a.out, "csum.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    report(rows, blocks)


def report(rows, blocks):
    """Per (spacing, method, case, direction): each block's median MB/s and
    its ratio to 4096's, with both intervals."""
    base = 4096 if 4096 in blocks else blocks[0]
    print("| spacing | method | case | dir | " + " | ".join(
        "%d B: MB/s (95 %% CI)" % b for b in blocks) + " | " + " | ".join(
        "%d/%d" % (b, base) for b in blocks if b != base) + " |")
    print("|" + "---|" * (4 + len(blocks) + len(blocks) - 1))
    keys = sorted({(int(r["spacing"]), r["method"], r["case"]) for r in rows})
    for g, m, case in keys:
        for d in ("write", "read"):
            med, cells = {}, []
            for b in blocks:
                xs = [float(r[d + "_mbs"]) for r in rows if r["csum_block"] == b and
                      int(r["spacing"]) == g and r["method"] == m and r["case"] == case and
                      r[d + "_mbs"]]
                med[b] = statistics.median(xs)
                lo, hi = interval(xs)
                cells.append("%.3f (%.3f-%.3f)" % (med[b], lo, hi))
            ratios = ["%.2f" % (med[b] / med[base]) for b in blocks if b != base]
            print("| %d | %s | %s | %s | %s | %s |" % (g, m, case, d, " | ".join(cells),
                                                      " | ".join(ratios)))


if __name__ == "__main__":
    main()
