#!/usr/bin/env python3
"""plot_locks.py CSV OUTDIR - PNGs of tessera-bench-locks' CSV laid out like
the dissertation's Figs. 7.3-7.6 (seed 001, §7.5.1): locks/s on a log scale,
(a) acquire and (b) release against clients = servers for 7.3 / 7.4; one
panel per method against overlap for 7.5 / 7.6. Means over repetitions
(of the times, as the benchmark's report). The dissertation's stated
figures (32 servers) are drawn as dotted lines. Series: posix and
list64-split are the dissertation's POSIX and list locks (§7.2.1, §7.2.2:
a lock request per region, per 64-region message); posix-seq takes
independent locks one after another; list and list64 are Tessera's joined
list locks (one request per daemon); block is the block-granular
(Lustre/GPFS-style) baseline; datatype as §7.2.3."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

METHODS = ["posix", "posix-seq", "list", "list64", "list64-split", "datatype", "block"]
PROTOCOLS = ["two-phase", "one-try", "alt-try"]
COLOR = {"posix": "tab:red", "posix-seq": "tab:orange", "list": "tab:blue",
         "list64": "tab:cyan", "list64-split": "tab:purple", "datatype": "tab:green",
         "block": "tab:gray"}
STYLE = {"two-phase": ("s", "--"), "one-try": ("o", "-"), "alt-try": ("^", ":")}
# What §7.5.1 states in numbers (the rest of its figures are curves).
PAPER = {
    ("7.3", "acquire"): [("datatype-one-try", 2059165), ("list64-split-one-try", 1123928),
                         ("posix-one-try", 40532)],
    ("7.3", "release"): [("datatype", 55721183), ("list64-split (~1/20)", 55721183 / 20),
                         ("posix (~1/3000)", 55721183 / 3000)],
    ("7.4", "release"): [("datatype (~7.3b)", 55721183)],
    ("7.6", "datatype"): [("datatype-alt-try", 2062079)],
}


def load(path):
    """{(fig, servers, overlap, method, protocol): [acquire_s, release_s, locks x clients]}"""
    acc = defaultdict(lambda: [0.0, 0.0, 0, 0])
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["error"]:
                continue
            key = (r["fig"], int(r["servers"]), int(r["overlap"]), r["method"], r["protocol"])
            a = acc[key]
            a[0] += float(r["acquire_s"])
            a[1] += float(r["release_s"])
            a[2] = int(r["locks_per_client"]) * int(r["clients"])
            a[3] += 1
    return {k: (v[2] * v[3] / v[0], v[2] * v[3] / v[1]) for k, v in acc.items()}


def paper_lines(ax, key, color_of):
    for label, value in PAPER.get(key, []):
        ax.axhline(value, color=color_of(label), linestyle=(0, (1, 2)), linewidth=1)
        ax.annotate("dissertation, 32 srv: " + label, (0.99, value),
                    xycoords=("axes fraction", "data"), fontsize=6, color=color_of(label),
                    ha="right", va="bottom")


def method_color(label):
    name = label.split(" ")[0]
    for m in sorted(COLOR, key=len, reverse=True):  # list64-split before list64
        if name.startswith(m):
            return COLOR[m]
    return "gray"


def scaling(data, fig, spacing, out):
    pts = {k: v for k, v in data.items() if k[0] == fig}
    if not pts:
        return
    ns = sorted({k[1] for k in pts})
    f, axes = plt.subplots(1, 2, figsize=(10, 5))
    for m in METHODS:
        for p in PROTOCOLS:
            ys = [pts.get((fig, n, 0, m, p)) for n in ns]
            if not any(ys):
                continue
            mk, ls = STYLE[p]
            xs = [n for n, y in zip(ns, ys) if y]
            axes[0].plot(xs, [y[0] for y in ys if y], marker=mk, linestyle=ls,
                         color=COLOR[m], label=f"{m}-{p}")
        # release does not depend on the protocol: the mean of the protocols run
        rel = []
        for n in ns:
            v = [pts[(fig, n, 0, m, p)][1] for p in PROTOCOLS if (fig, n, 0, m, p) in pts]
            rel.append(sum(v) / len(v) if v else None)
        if any(rel):
            axes[1].plot([n for n, y in zip(ns, rel) if y], [y for y in rel if y], marker="o",
                         color=COLOR[m], label=m)
    for ax, what in zip(axes, ["acquire", "release"]):
        paper_lines(ax, (fig, what), method_color)
        ax.set_yscale("log")
        ax.set_xticks(ns)
        ax.set_xlabel("clients = storage daemons")
        ax.set_ylabel("aggregate locks/s")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7, ncol=2 if what == "acquire" else 4, loc="upper center",
                  bbox_to_anchor=(0.5, -0.15))
    axes[0].set_title("(a) acquire")
    axes[1].set_title("(b) release")
    f.suptitle(f"Fig. {fig}: no contention, 1-byte locks {spacing} B apart "
               f"(128K per client; POSIX on fewer, in locks/s)", fontsize=10)
    f.tight_layout()
    f.savefig(f"{out}/fig{fig.replace('.', '_')}.png", dpi=80)
    plt.close(f)


def overlap(data, fig, spacing, out):
    pts = {k: v for k, v in data.items() if k[0] == fig}
    if not pts:
        return
    n = max(k[1] for k in pts)
    ovs = sorted({k[2] for k in pts})
    panels = [m for m in ["datatype", "list", "list64-split", "posix", "posix-seq", "block"]
              if any(k[3] == m for k in pts)]
    f, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 4.5), squeeze=False)
    axes = axes[0]
    for ax, m, letter in zip(axes, panels, "abcdef"):
        for p in PROTOCOLS:
            ys = [pts.get((fig, n, o, m, p)) for o in ovs]
            if not any(ys):
                continue
            mk, ls = STYLE[p]
            ax.plot([o for o, y in zip(ovs, ys) if y], [y[0] for y in ys if y], marker=mk,
                    linestyle=ls, color=COLOR[m], label=f"{m}-{p}")
        paper_lines(ax, (fig, m), method_color)
        ax.set_yscale("log")
        ax.set_xticks(ovs)
        ax.set_xlabel("overlap (%)")
        ax.set_ylabel("aggregate acquire locks/s")
        ax.set_title(f"({letter}) {m}")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=3)
    f.suptitle(f"Fig. {fig}: contention, {n} clients x {n} storage daemons, locks {spacing} B "
               f"apart; each set released once held", fontsize=10)
    f.tight_layout()
    f.savefig(f"{out}/fig{fig.replace('.', '_')}.png", dpi=80)
    plt.close(f)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_locks.py CSV OUTDIR")
    data = load(sys.argv[1])
    scaling(data, "7.3", 64, sys.argv[2])
    scaling(data, "7.4", 4096, sys.argv[2])
    overlap(data, "7.5", 64, sys.argv[2])
    overlap(data, "7.6", 4096, sys.argv[2])
    print(f"plot_locks: PNGs in {sys.argv[2]}")


if __name__ == "__main__":
    main()
