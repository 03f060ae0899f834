#!/usr/bin/env python3
"""study.py - the HPIO study in one command (`make study`).

    study.py [--full] [--net RATE[,LATENCY] [--nodes N] | --cluster CONF] [--out DIR]
             [--parts hpio,tables,locks,s3d,versions,patterns,s3asim]
             [--tiny] [--no-plots] [--local-reads] [--sieve-gap N] [--sieve-span N]
             [--csum-block N]

Runs, into one folder (default build/study/<short|full>-<loopback|RATE>):
  hpio.csv      every HPIO repetition over MPI-IO (romio-adio/bench/mpi_hpio):
                the three sweeps of seed 001 §5.3 (region count, size,
                spacing), the four access cases, Tessera's methods (POSIX,
                sieve, list, datatype, two-phase) and ROMIO's UFS driver on a
                local file in the same run; writes with MPI_File_sync
  tables.csv    request counts of the dissertation's Tabs. 3.1-3.3 and 4.1
                from the storage daemons' counters (romio-adio/bench/mpi_patterns)
  locks/        the lock figures 7.3-7.6 (tests/bench/bench_locks.sh): the
                dissertation's POSIX, list (64-region requests) and datatype
                locks, Tessera's joined list locks, independent POSIX locks
                and the block-granular baseline (report.md says what each
                sends)
  s3d.txt       the S3D-like checkpoint in atomic mode (bench_mpi_s3d.sh)
  versions.csv  chapter 8 (Figs. 8.3-8.4): tests/bench/bench_version.c on a
                cluster of its own (8 storage daemons, 64 KiB strips, as
                the dissertation's VPFS): datatype, datatype-lock and
                datatype-version writes of 16 processes over region count
                and spacing in the four access cases; reads with 0, 10 and
                1000 unmerged versions; the log's bytes per byte written
                (versions.txt: the program's own output)
  patterns.csv  chapters 3-4's bandwidth sweeps (Figs. 3.9-3.12, 3.14, 3.16,
                3.19, 4.4-4.6; tests/study/patterns.py): 1-D cyclic and
                block-block over the accesses a client, the tile reader, the
                3-D block test and FLASH I/O over ranks, each method read and
                written (as the dissertation has them) on a cluster of their
                own, every repetition with the daemons' requests a client a
                call beside what the pattern implies
  s3asim.csv    S3aSim (chapter 6, Figs. 6.2-6.11; with atomic mode and
                list:one-try locks, Figs. 7.9-7.10): romio-adio/bench/mpi_s3asim
                on a cluster of its own, one row per run with its phases
  traces/       the clients' request traces (TESSERA_TRACE_REQUESTS) of every
                table run, and with --traces of every HPIO run through
                Tessera; tests/study/trace_summary.py tabulates them
  *.png         the figures (tests/study/plot_study.py)
  report.md     the results beside the dissertation's, with a 95 % t-interval
                per point; a verdict rests only on points whose intervals
                are apart
Every CSV row records the load average, the commit, the network and the
daemons' tunables. Local reads are off (TESSERA_LOCAL_READS=0) unless
--local-reads; --sieve-gap/--sieve-span set the storage daemons' sieve_gap
and sieve_span, --csum-block their csum_block (the checksum block a write
rewrites whole; the folder's name says when they are not the defaults).
--net RATE[,LATENCY] puts the metadata daemon and the storage daemons on
two "nodes", network namespaces joined by a bridge, each link limited to
RATE by a tc token bucket, and with a LATENCY (50us, 1ms) every packet a
node sends delayed by it (tc netem, or where the kernel has none a delay
line in user space, tests/study/delayline.py; tests/study/netns.sh); the MPI ranks
stay in the root namespace unless --nodes N: then the daemons and the ranks
share N nodes (rank r on node r % N, started there by netns-rank.sh), and
the ranks' own traffic is TCP over the same links. --cluster CONF runs
only the clients, against the running daemons CONF names (starts and
stops nothing; refused when a server does not answer). A study that is interrupted resumes: points already in the CSVs
are not run again (delete the folder to start over). --tiny is the check's
sweep (2 points, verify on).
"""
import argparse
import csv
import fcntl
import glob
import json
import os
import shutil
import signal
import statistics
import re
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.environ.get("TESSERA_BUILD", os.path.join(TOP, "build"))
NPROCS = 4
N_IOS = 4
CASES = ["c-c", "nc-c", "c-nc", "nc-nc"]
# list: Tessera's own list I/O (the config's regions per request, memory
# packed); list64: the dissertation's (64 regions per request, memory as a
# list of its regions: mpi_hpio's list64).
TESSERA_METHODS = ["posix", "sieve", "list", "list64", "datatype", "coll"]
UFS_METHODS = ["ufs-posix", "ufs-sieve", "coll"]
DEFAULT = {"count": 4096, "size": 8, "spacing": 128}
POW2 = lambda lo, hi: [1 << i for i in range(lo, hi + 1)]  # noqa: E731
# What every row of every CSV records besides its measurement: the load
# average when the row was taken, the tree's commit, the network, and the
# tunables the daemons ran with (csum_block is the stores' checksum block:
# see docs/benchmarks.md).
RECORD_FIELDS = ["load1", "commit", "net", "local_reads", "sieve_gap", "sieve_span",
                 "csum_block", "strip_size", "max_io", "list_io_max_regions"]
# write_s is the write call and MPI_File_sync together (the bandwidth's
# time, as the dissertation's HPIO times writes); write_call_s and sync_s
# are its parts; opens and closes are timed apart and in no bandwidth.
HPIO_FIELDS = ["count", "size", "spacing", "target", "method", "case", "rep",
               "nprocs", "write_s", "read_s", "write_mbs", "read_mbs", "verify",
               "write_call_s", "sync_s", "w_open_s", "w_close_s", "r_open_s",
               "r_close_s", "sync_mode"] + RECORD_FIELDS
CSV_VERSION = 4  # the columns above; a folder with other columns is refused


def plan(args):
    """The study's parameters: sweeps, repetitions, what is left out."""
    if args.tiny:
        return {"mode": "tiny", "reps": 3, "sweeps": {"count": [512, 1024]},
                "posix_max_count": 0, "verify": True, "nprocs": 2,
                "methods": {"tessera": ["list", "datatype"], "ufs": ["ufs-posix"]}}
    if args.full:
        return {"mode": "full", "reps": 8,
                "sweeps": {"count": POW2(11, 20), "size": POW2(3, 12),
                           # 1016: the last spacing sieve_gap's default merges at 4 ranks
                           "spacing": sorted(POW2(3, 12) + [1016])},
                "posix_max_count": 131072, "verify": False, "nprocs": NPROCS}
    return {"mode": "short", "reps": 3,
            # spacing 1016 and 1024: either side of sieve_gap's default step
            "sweeps": {"count": [2048, 32768], "size": [8, 128, 2048],
                       "spacing": [8, 128, 1016, 1024, 4096]},
            "posix_max_count": 4096, "posix_max_size": 128, "verify": False, "nprocs": NPROCS}


# ------------------------------------------------------------------ progress
class Progress:
    """One line on a terminal (what runs, what is left, time so far); plain
    lines otherwise."""

    def __init__(self, total):
        self.total, self.done, self.skipped = total, 0, 0
        self.t0 = time.time()
        self.tty = sys.stderr.isatty()
        self.spent = []

    def clock(self, s):
        s = int(s)
        return "%dm%02ds" % (s // 60, s % 60)

    def start(self, what):
        self.what, self.t1 = what, time.time()
        left = self.total - self.done - self.skipped
        eta = ""
        if self.spent:
            eta = ", about %s left" % self.clock(statistics.mean(self.spent) * left)
        line = "[%d/%d] %s (%d to go%s; %s so far)" % (
            self.done + self.skipped + 1, self.total, what, left, eta,
            self.clock(time.time() - self.t0))
        if self.tty:
            cols = shutil.get_terminal_size((100, 20)).columns
            sys.stderr.write("\r\033[K" + line[:cols - 1])
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def finish(self):
        self.done += 1
        self.spent.append(time.time() - self.t1)

    def skip(self):
        self.skipped += 1

    def add(self, steps, done):
        """A part that counts its own steps when it starts: `steps` more
        in all, `done` of them found in the folder (resumed)."""
        self.total += steps
        self.skipped += done

    def close(self):
        if self.tty:
            sys.stderr.write("\n")
        sys.stderr.write("study: %d run, %d already done (resumed), %s\n" % (
            self.done, self.skipped, self.clock(time.time() - self.t0)))


# ------------------------------------------------------------------ running
class Stopped(Exception):
    """SIGTERM or SIGINT: the running program was stopped; the study ends
    here and resumes next time."""


RUNNING = {"child": None, "stop": False}


def on_signal(*_):
    RUNNING["stop"] = True
    child = RUNNING["child"]
    if child and child.poll() is None:
        child.terminate()  # mpirun passes it on to the ranks
    else:
        raise Stopped()


def run(cmd, env=None, timeout=3600):
    """cmd's CompletedProcess (text output captured), stoppable by a signal."""
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    RUNNING["child"] = child
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.terminate()
        child.communicate()
        raise
    finally:
        RUNNING["child"] = None
    if RUNNING["stop"]:
        raise Stopped()
    return subprocess.CompletedProcess(cmd, child.returncode, out, err)


# ------------------------------------------------------------------ cluster
NETNS = os.path.join(TOP, "tests/study/netns.sh")
# mpirun's environment names the simulated nodes' folder here when the
# ranks run on them (Cluster.rank_env, mpirun)
RANK_NODES_ENV = "TESSERA_STUDY_RANK_NODES"
# parts that start clusters of their own (not with --cluster)
OWN_CLUSTER_PARTS = ("locks", "versions", "patterns", "s3asim")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def alive(pid):
    """Whether process pid exists."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class Cluster:
    """1 metadata and N_IOS storage daemons: tessera-local on loopback, or
    tests/study/netns.sh on namespaces ("nodes") behind a bridge whose links
    have a rate and a latency (net: RATE[,LATENCY]); with nodes > 0 the MPI
    ranks run on those nodes too (rank_env), else in the root namespace."""

    def __init__(self, out, net, tag, tunables, n_ios=N_IOS, var="var", nodes=0):
        self.var = os.path.join(out, var)
        self.net, self.tag, self.n_ios, self.nodes = net, tag, n_ios, nodes
        self.label = net_label(net, nodes, "netem")
        self.conf = os.path.join(self.var, "tessera.conf")
        # config lines the study sets (sieve_gap, sieve_span, local_reads)
        self.lines = ["%s = %s" % kv for kv in sorted(tunables.items())]
        self.settings = {}

    def up(self):
        shutil.rmtree(self.var, ignore_errors=True)
        if self.net:
            env = dict(os.environ, NETNS_CONF_LINES="\n".join(self.lines))
            sh(["bash", NETNS, "up", self.tag, self.net, self.var, str(self.n_ios),
                str(self.nodes or 2)], stdout=subprocess.DEVNULL, env=env)
            # how the latency was made (netem, or the delay line)
            by = open(os.path.join(self.var, "delay_by")).read().strip()
            self.label = net_label(self.net, self.nodes, by)
        else:
            port = subprocess.run(["bash", "-c", ". tests/integ/checks.sh; free_ports %d" % (self.n_ios + 1)],
                                  cwd=TOP, check=True, capture_output=True, text=True).stdout.strip()
            local = [os.path.join(TOP, "deploy/tessera-local"), "--dir", self.var, "--ios",
                     str(self.n_ios), "--port", port, "--no-mount"]
            # tessera-local writes the config at its first start and keeps
            # it after: start, add the study's lines, start again.
            sh(local + ["up"], stdout=subprocess.DEVNULL)
            if not self.lines:
                self.settings = config_values(self.conf)
                return
            self.stop_daemons()
            sh(local + ["down"], stdout=subprocess.DEVNULL)
            with open(self.conf, "a") as f:
                f.write("".join(ln + "\n" for ln in self.lines))
            # the stores the first start made have its checksum block, which
            # they keep (the daemons refuse another): made again, empty
            if any(ln.startswith("csum_block =") for ln in self.lines):
                for i in range(self.n_ios):
                    shutil.rmtree(os.path.join(self.var, "ios%d" % i), ignore_errors=True)
            sh(local + ["up"], stdout=subprocess.DEVNULL)
        self.settings = config_values(self.conf)

    def down(self):
        if self.net:
            subprocess.run(["bash", NETNS, "down", self.tag, self.net, self.var],
                           stdout=subprocess.DEVNULL)
        else:
            self.stop_daemons()
            subprocess.run([os.path.join(TOP, "deploy/tessera-local"), "--dir", self.var, "down"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop_daemons(self):
        """SIGTERM to every Tessera daemon of the cluster at once, then wait
        for them (5 s): tessera-local stops them one after another, each
        taking about 2 s to exit, 20 s for 8 storage daemons. It then
        stops what is left (munged last) and cleans up."""
        pids = []
        for f in glob.glob(os.path.join(self.var, "run", "*.pid")):
            if os.path.basename(f).startswith("munge"):
                continue
            try:
                pid = int(open(f).read().strip())
                os.kill(pid, signal.SIGTERM)
                pids.append(pid)
            except (OSError, ValueError):
                pass
        deadline = time.time() + 5
        while pids and time.time() < deadline:
            pids = [p for p in pids if alive(p)]
            time.sleep(0.05)

    def rank_env(self):
        """What mpirun's environment needs for ranks on the nodes: the
        nodes' folder for netns-rank.sh, and the ranks' own traffic on TCP
        over the bridge (shared memory would cross no link; mpirun's PMIx
        server, in the root namespace, reached at the bridge's address)."""
        if not (self.net and self.nodes):
            return {}
        subnet = open(os.path.join(self.var, "subnet")).read().strip()
        return {RANK_NODES_ENV: self.var, "OMPI_MCA_btl": "self,tcp",
                "OMPI_MCA_btl_tcp_if_include": subnet, "OMPI_MCA_oob_tcp_if_include": subnet,
                "PMIX_MCA_ptl_tcp_if_include": subnet,
                "PMIX_MCA_ptl_tcp_remote_connections": "1"}

    def stats(self):
        """The daemons' summed counters: {(method, column): value}, plus
        'syncs'."""
        txt = subprocess.run([os.path.join(B, "bin/tessera"), "-c", self.conf, "stats"],
                             check=True, capture_output=True, text=True).stdout
        lines = txt.splitlines()
        cols = lines[0].split()[2:]
        got = {}
        for ln in lines[1:]:
            f = ln.split()
            if not f or f[0] != "all":
                continue
            if f[1] in ("contig", "list", "datatype"):
                for c, v in zip(cols, f[2:]):
                    got[(f[1], c)] = int(v)
            elif "syncs" in ln:
                got["syncs"] = int(ln.split("syncs")[1].split(",")[0])
        return got


class ExternalCluster(Cluster):
    """An existing cluster (--cluster CONF: an admin's daemons, on other
    machines perhaps): the study only runs clients against it, starts and
    stops nothing, and records the config's tunables (what the file says;
    the daemons read it when they started)."""

    def __init__(self, conf):
        self.conf = os.path.abspath(conf)
        self.var = os.path.dirname(self.conf)
        self.net, self.tag, self.n_ios, self.nodes = "", "", 0, 0
        self.label = "cluster:" + self.conf
        self.lines, self.settings = [], {}

    def up(self):
        """Refuses (exits) unless every server of the config answers."""
        try:
            r = subprocess.run([os.path.join(B, "bin/tessera"), "-c", self.conf, "ping"],
                               capture_output=True, text=True, timeout=30)
            ok, why = r.returncode == 0, (r.stderr.strip() or r.stdout.strip())
        except subprocess.TimeoutExpired:
            ok, why = False, "tessera ping did not answer in 30 s"
        if not ok:
            sys.exit("study: --cluster %s: unreachable, so nothing was run:\n%s" % (self.conf, why))
        self.settings = config_values(self.conf)
        self.n_ios = len(re.findall(r"^\s*ios\s*=", open(self.conf).read(), re.M))

    def down(self):
        pass  # not ours to stop

    def rank_env(self):
        return {}


def net_label(net, nodes, delay_by="netem"):
    """What the rows' net field says of a study's own network: loopback,
    RATE, "RATE LATENCY", with " Nnodes" when the ranks share N nodes with
    the daemons (a latency of 0 is no latency; spaces, not commas, keep
    the CSV's columns plain). A latency made by netns.sh's delay line in
    user space (no netem here) says so: "200us(delayline)"."""
    if not net:
        return "loopback"
    rate, _, lat = net.partition(",")
    if lat and int(re.sub(r"\D", "", lat)):
        rate += " " + lat + ("(%s)" % delay_by if delay_by != "netem" else "")
    mtu = os.environ.get("NETNS_MTU", "1500")  # netns.sh's, said when not the default
    return rate + (" %dnodes" % nodes if nodes else "") + (" mtu" + mtu if mtu != "1500" else "")


def check_network(args, parts):
    """Refuses (exits with the reason) a network the study cannot have,
    before anything starts: a bad --net, one this machine cannot simulate
    (no root, no ip netns or tc, no netem for a latency: netns.sh check),
    --nodes without --net, --cluster beside --net or with the daemons'
    tunables or the parts that start clusters of their own. Returns how
    netns.sh will make the latency (netem, delayline; none)."""
    if args.cluster:
        if args.net or args.nodes:
            sys.exit("study: --cluster runs against an existing cluster: no --net or --nodes")
        if (args.sieve_gap, args.sieve_span, args.csum_block) != (4096, 4 << 20, 4096):
            sys.exit("study: --cluster: the study cannot set the tunables (--sieve-gap, "
                     "--sieve-span, --csum-block) of daemons it did not start; set them in %s"
                     % args.cluster)
        own = [x for x in parts if x in OWN_CLUSTER_PARTS]
        if own:
            sys.exit("study: --cluster: the parts %s start clusters of their own; pick others "
                     "with --parts (hpio,tables,s3d)" % ",".join(own))
        if not os.path.isfile(args.cluster):
            sys.exit("study: --cluster %s: no such config file" % args.cluster)
        return "none"
    if args.nodes and not args.net:
        sys.exit("study: --nodes N needs --net RATE[,LATENCY] (the nodes are network namespaces "
                 "behind simulated links)")
    if not 0 <= args.nodes <= 16:
        sys.exit("study: --nodes %d: from 1 to 16" % args.nodes)
    if args.net:
        r = subprocess.run(["bash", NETNS, "check", args.tag, args.net], capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit("study: --net %s refused: %s" % (
                args.net, r.stderr.strip().replace("netns.sh: ", "", 1)))
        return r.stdout.split("delay: ", 1)[-1].strip()
    return "none"


def config_values(conf):
    """{key: value} of a config file as the daemons parse it (defaults
    filled in): tp-config-doc check."""
    txt = subprocess.run([os.path.join(B, "proto/tp-config-doc"), "check", conf], check=True,
                         capture_output=True, text=True).stdout
    return dict(ln.split(" = ", 1) for ln in txt.splitlines() if " = " in ln)


def git_commit():
    """The tree's commit, "+dirty" when files differ from it."""
    def git(*a):
        return subprocess.run(["git", "-C", TOP] + list(a), capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def record(s):
    """The RECORD_FIELDS of a row taken now on study s's cluster."""
    c = s.cluster.settings
    return {"load1": "%.2f" % os.getloadavg()[0], "commit": s.commit,
            "net": s.cluster.label, "local_reads": int(s.p["local_reads"]),
            "sieve_gap": c.get("sieve_gap", ""), "sieve_span": c.get("sieve_span", ""),
            "csum_block": c.get("csum_block", ""), "strip_size": c.get("strip_size", ""),
            "max_io": c.get("max_io", ""),
            "list_io_max_regions": c.get("list_io_max_regions", "")}


def mpi_env(conf, local_reads):
    env = dict(os.environ)
    path = subprocess.run(["bash", "-c", '. "$1" "$2"; echo "$OMPI_MCA_mca_base_component_path"',
                           "-", os.path.join(TOP, "romio-adio/tessera-mpi-env.sh"), B],
                          check=True, capture_output=True, text=True).stdout.strip()
    env.update({"OMPI_MCA_mca_base_component_path": path, "OMPI_MCA_io": "romio321",
                "OMPI_MCA_btl": "self,vader", "TESSERA_CONFIG": conf,
                # Local reads (64 KiB and more read from the daemons' files
                # on this host) bypass the daemons and their counters: off
                # unless the study asks for them (--local-reads).
                "TESSERA_LOCAL_READS": "1" if local_reads else "0"})
    return env


def mpirun(np_, env=None):
    """mpirun's command up to the program; with env from a cluster whose
    ranks run on its nodes (Cluster.rank_env), each rank is started on its
    node by tests/study/netns-rank.sh."""
    cmd = ["nice", "mpirun", "--oversubscribe", "-np", str(np_)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if env and env.get(RANK_NODES_ENV):
        cmd += [os.path.join(TOP, "tests/study/netns-rank.sh"), env[RANK_NODES_ENV]]
    return cmd


# ------------------------------------------------------------------ HPIO
def hpio_tasks(p):
    """(count, size, spacing, target, method) once each, the default point
    shared by the sweeps; and what is left out, with why."""
    tasks, seen, left_out = [], set(), []
    for sweep, values in p["sweeps"].items():
        for v in values:
            pt = dict(DEFAULT)
            pt[sweep] = v
            for target, methods in p.get("methods", {"tessera": TESSERA_METHODS,
                                                     "ufs": UFS_METHODS}).items():
                for m in methods:
                    key = (pt["count"], pt["size"], pt["spacing"], target, m)
                    if key in seen:
                        continue
                    seen.add(key)
                    if target == "tessera" and m == "posix" and (
                            pt["count"] > p["posix_max_count"] or
                            pt["size"] > p.get("posix_max_size", pt["size"])):
                        left_out.append("tessera posix at count %d, size %d, spacing %d" % key[:3])
                        continue
                    tasks.append(key)
    return tasks, left_out


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def append_rows(path, fields, rows):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


def run_hpio(key, p, out, env):
    count, size, spacing, target, method = key
    np_ = p["nprocs"]
    if target == "tessera":
        name = "tessera:/hpio"
    else:
        os.makedirs(os.path.join(out, "ufs"), exist_ok=True)
        name = "ufs:" + os.path.join(out, "ufs", "hpio")
    cmd = mpirun(np_, env) + [os.path.join(B, "romio-adio/bench/mpi_hpio"), "-n", str(count),
                         "-s", str(size), "-g", str(spacing), "-r", str(p["reps"]), "-R"]
    if p["verify"]:
        cmd.append("-V")
    # Two-phase on Tessera with one sync for all ranks, as the
    # dissertation's two-phase runs had (seed 001, §5.3; the hint
    # tessera_sync=one); every other method syncs on every rank.
    sync_mode = "one" if target == "tessera" and method == "coll" else "every"
    if sync_mode == "one":
        cmd += ["-S", "one"]
    if p.get("traces") and target == "tessera":
        tdir = os.path.join(out, "traces")
        os.makedirs(tdir, exist_ok=True)
        trace = os.path.join(tdir, "hpio-n%d-s%d-g%d-%s" % (count, size, spacing, method))
        for old in glob.glob(glob.escape(trace) + ".*"):
            os.remove(old)  # a rerun's
        env = dict(env, TESSERA_TRACE_REQUESTS=trace)
    r = run(cmd + [name, method], env=env)
    if r.returncode != 0:
        raise RuntimeError("mpi_hpio %s %s failed (exit %d): %s" % (
            target, method, r.returncode, r.stderr.strip()[-400:]))
    verdict = {}
    for ln in r.stdout.splitlines():
        f = ln.split()
        if len(f) >= 8 and f[0] in CASES and f[-2] == "verify":
            verdict[f[0]] = f[-1]
    rows = []
    mb = count * size * np_ / 1e6
    for ln in r.stdout.splitlines():
        f = ln.split()
        if not f or f[0] != "rep":
            continue
        if len(f) != 12:
            raise RuntimeError("mpi_hpio printed '%s', not 12 fields (rebuild it: make)" % ln)
        ws, rs = float(f[4]), float(f[5])
        rows.append({"count": count, "size": size, "spacing": spacing, "target": target,
                     "method": "two-phase" if method == "coll" else method.replace("ufs-", ""),
                     "case": f[1], "rep": f[3], "nprocs": np_, "write_s": ws, "read_s": rs,
                     "write_mbs": "%.4f" % (mb / ws) if ws > 0 else "",
                     "read_mbs": "%.4f" % (mb / rs) if rs > 0 else "",
                     "verify": verdict.get(f[1], "-") if p["verify"] else "-",
                     "write_call_s": f[7], "sync_s": f[8], "w_open_s": f[6],
                     "w_close_s": f[9], "r_open_s": f[10], "r_close_s": f[11],
                     "sync_mode": sync_mode})
    if len(rows) != 4 * p["reps"]:
        raise RuntimeError("mpi_hpio %s %s printed %d repetitions, not %d" % (
            target, method, len(rows), 4 * p["reps"]))
    bad = [r_["case"] for r_ in rows if r_["verify"] not in ("ok", "-")]
    if bad:
        raise RuntimeError("mpi_hpio %s %s: verify failed in %s" % (target, method, sorted(set(bad))))
    return rows


def done_keys(rows):
    return {(int(r["count"]), int(r["size"]), int(r["spacing"]), r["target"],
             "coll" if r["method"] == "two-phase" else
             ("ufs-" + r["method"] if r["target"] == "ufs" else r["method"])) for r in rows}


# ------------------------------------------------------------------ tables
# Each table's runs: (table, label, nprocs, mpi_patterns args, methods).
def table_runs(p):
    tiny, full = p["mode"] == "tiny", p["mode"] == "full"
    runs = []
    frames = 1
    runs.append(("3.1", "tile reader, 6 clients", 6, ["-p", "tile", "-f", str(frames)],
                 ["posix", "sieve", "coll", "list", "datatype"]))
    for procs in ([8] if not full else [8, 27]):
        side = 600 if full else 120
        runs.append(("3.2", "3-D block %d^3 ints, %d clients" % (side, procs), procs,
                     ["-p", "block3d", "-L", str(side)],
                     ["posix", "sieve", "coll", "list", "datatype"]))
    flash_np = [2] if not full else [2, 4]
    for procs in flash_np:
        runs.append(("3.3", "FLASH I/O, %d clients, %d blocks each" % (procs, 80 if full else 8),
                     procs, ["-p", "flash", "-b", str(80 if full else 8)],
                     ["posix", "coll", "list", "datatype"]))
    if tiny:
        runs = [("3.1", "tile reader, 6 clients", 6, ["-p", "tile", "-f", "1"],
                 ["list", "datatype", "sieve", "coll"])]
    return runs


# bytes_resent is measured: the bytes per rank that ROMIO's two-phase
# exchange moves between ranks, as the driver counts them (coll_bytes_sent
# and coll_bytes_received in its trace, $TESSERA_ROMIO_TRACE: ROMIO's own
# file domains, ad_tessera_strided.c); bytes_resent_model is mpi_patterns'
# model of it (an even split over one aggregator per rank).
# trace_requests: the storage daemons' data requests per client as the
# clients' request traces count them (traces/, TESSERA_TRACE_REQUESTS),
# beside the daemons' own count (requests).
TABLE_FIELDS = ["table", "label", "nprocs", "method", "op", "requests", "desc_bytes",
                "bytes_accessed", "bytes_desired", "bytes_resent", "syncs",
                "seconds", "trace_requests", "bytes_resent_model"] + RECORD_FIELDS


def run_table(trun, method, cluster, env, out):
    table, label, np_, args, _ = trun
    cmd = mpirun(np_, env) + [os.path.join(B, "romio-adio/bench/mpi_patterns")] + args
    if "tile" in args:  # the frames to read, written before the counters are read
        r = run(cmd + ["-P", "tessera:/pattern", method], env=env)
        if r.returncode != 0:
            raise RuntimeError("mpi_patterns -P (the frames) failed (exit %d): %s" % (
                r.returncode, r.stderr.strip()[-400:]))
    cmd += ["tessera:/pattern", method]
    # the measured call's request trace, a file per rank (trace_summary.py)
    tdir = os.path.join(out, "traces")
    os.makedirs(tdir, exist_ok=True)
    trace = os.path.join(tdir, "tab%s-%dranks-%s-%s" % (table, np_, "-".join(args[1:2]), method))
    for old in glob.glob(glob.escape(trace) + ".*"):
        os.remove(old)  # a rerun's
    romio_trace = trace + ".romio"
    if os.path.exists(romio_trace):
        os.remove(romio_trace)  # a rerun's
    env = dict(env, TESSERA_TRACE_REQUESTS=trace, TESSERA_ROMIO_TRACE=romio_trace)
    before = cluster.stats()
    r = run(cmd, env=env)
    if r.returncode != 0:
        raise RuntimeError("mpi_patterns %s %s failed (exit %d): %s" % (
            " ".join(args), method, r.returncode, r.stderr.strip()[-400:]))
    after = cluster.stats()
    rows = []
    # mpi_patterns prints "op OP desired RESENT seconds" per operation and
    # the daemons' counters are read around the whole run, one op each.
    ops = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("op ")]
    if len(ops) != 1:
        raise RuntimeError("mpi_patterns printed %d operations, not 1" % len(ops))
    op = ops[0]
    req = sum(after[(m, "requests")] - before[(m, "requests")] for m in ("contig", "list", "datatype"))
    desc = sum(after[(m, "desc_bytes")] - before[(m, "desc_bytes")] for m in ("contig", "list", "datatype"))
    acc = sum(after[(m, c)] - before[(m, c)] for m in ("contig", "list", "datatype")
              for c in ("bytes_read", "bytes_written"))
    rows.append({"table": table, "label": label, "nprocs": np_, "method": method, "op": op[1],
                 "requests": req / np_, "desc_bytes": desc / np_, "bytes_accessed": acc / np_,
                 "bytes_desired": int(op[2]), "bytes_resent": exchanged(romio_trace) / np_,
                 "syncs": after["syncs"] - before["syncs"], "seconds": op[4],
                 "trace_requests": traced_requests(trace), "bytes_resent_model": int(op[3])})
    return rows


def exchanged(path):
    """The bytes two-phase moved between ranks in one run: the sum over the
    driver's close lines (one per rank and open) in its trace PATH of
    coll_bytes_sent and coll_bytes_received; a run without a close line
    (an older driver) is an error, not 0."""
    total, closes = 0, 0
    with open(path) as f:
        for ln in f:
            if not ln.startswith("ad_tessera close "):
                continue
            kv = dict(w.split("=", 1) for w in ln.split() if "=" in w)
            if "coll_bytes_sent" not in kv:
                raise RuntimeError("%s: the driver does not count two-phase's exchange "
                                   "(rebuild it: make)" % path)
            total += int(kv["coll_bytes_sent"]) + int(kv["coll_bytes_received"])
            closes += 1
    if not closes:
        raise RuntimeError("%s: no close in the driver's trace" % path)
    return total


def traced_requests(prefix):
    """Storage data requests per process in the traces PREFIX.PID, or ""
    without traces."""
    sys.path.insert(0, os.path.join(TOP, "tests/study"))
    import trace_summary
    try:
        traces = [trace_summary.read_trace(p) for p in trace_summary.files([prefix])]
    except (OSError, ValueError):
        return ""
    t = trace_summary.summarise(traces, io_only=True)
    return sum(x["requests"] for x in t.values()) / len(traces)


# ------------------------------------------------------------------ main
def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--net", default="",
                    help="RATE[,LATENCY]: the daemons on network namespaces behind links of "
                         "RATE (100mbit, 1gbit) and LATENCY one way (50us, 1ms; tc netem); root")
    ap.add_argument("--nodes", type=int, default=0,
                    help="with --net: N nodes (namespaces) for the daemons and the MPI ranks "
                         "(rank r and storage daemon i on nodes r %% N and i %% N); without, "
                         "the daemons on 2 nodes and the ranks in the root namespace")
    ap.add_argument("--cluster", metavar="CONF",
                    help="run only the clients against the existing cluster CONF names "
                         "(starts no daemon; parts hpio, tables, s3d)")
    ap.add_argument("--out")
    ap.add_argument("--tag", default="s", help="namespace name tag (netns.sh)")
    ap.add_argument("--parts", help="default hpio,tables,locks,s3d,versions,patterns,s3asim "
                                     "(with --cluster: hpio,tables,s3d)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--methods", help="only these HPIO methods (e.g. list,datatype)")
    ap.add_argument("--local-reads", action="store_true",
                    help="let clients read the daemons' files on this host (off: every "
                         "read goes through the daemons and their counters)")
    ap.add_argument("--traces", action="store_true",
                    help="keep a request trace of every HPIO run through Tessera too (the "
                         "tables' runs always keep theirs; POSIX points make large ones)")
    ap.add_argument("--sieve-gap", type=int, default=4096,
                    help="the storage daemons' sieve_gap (bytes; default 4096)")
    ap.add_argument("--sieve-span", type=int, default=4 << 20,
                    help="the storage daemons' sieve_span (bytes; default 4 MiB)")
    ap.add_argument("--csum-block", type=int, default=4096,
                    help="the storage daemons' csum_block: bytes per checksum, which a "
                         "write rewrites whole (a power of two, 512 to 1 MiB; default 4096)")
    return ap.parse_args()


def study_parts(args):
    """The parts to run: --parts, else all (with --cluster those that run
    only clients)."""
    if args.parts is not None:
        return [x for x in args.parts.split(",") if x]
    parts = ["hpio", "tables", "locks", "s3d", "versions", "patterns", "s3asim"]
    return [x for x in parts if not (args.cluster and x in OWN_CLUSTER_PARTS)]


def tunables(p):
    """The config lines the study sets on its daemons."""
    return {"sieve_gap": p["sieve_gap"], "sieve_span": p["sieve_span"],
            "csum_block": p["csum_block"], "local_reads": int(p["local_reads"])}


def keep_methods(p, methods):
    """Only the HPIO methods named (a comma list; ufs- prefixes implied),
    from all of them (so --tiny --methods list64,coll runs those too)."""
    keep = methods.split(",")
    p["methods"] = {t: [m for m in ms if m in keep or m.replace("ufs-", "") in keep]
                    for t, ms in {"tessera": TESSERA_METHODS, "ufs": UFS_METHODS}.items()}


def lock_out(out):
    """One study at a time in a folder: a second would remove the first's
    daemons' state under it. The open file holds the lock: keep it."""
    lock = open(os.path.join(out, "study.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit("study: another study is running in %s" % out)
    return lock


def write_meta(out, p, net):
    """study.json: the parameters, which must match those of a study the
    folder already holds (a resume)."""
    meta_path = os.path.join(out, "study.json")
    meta = {"mode": p["mode"], "methods": p.get("methods"), "net": net or "loopback", "reps": p["reps"], "nprocs": p["nprocs"],
            "n_ios": p.get("n_ios", N_IOS), "sweeps": p["sweeps"], "posix_max_count": p["posix_max_count"],
            "posix_max_size": p.get("posix_max_size"), "csv_version": CSV_VERSION,
            "local_reads": p["local_reads"], "sieve_gap": p["sieve_gap"],
            "sieve_span": p["sieve_span"], "csum_block": p["csum_block"]}
    if os.path.exists(meta_path):
        old = json.load(open(meta_path))
        if {k: old.get(k) for k in meta} != json.loads(json.dumps(meta)):
            sys.exit("study: %s holds a study with other parameters; delete it or pick --out" % out)
    meta.setdefault("started", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    json.dump(meta, open(meta_path, "w"), indent=1)
    return meta, meta_path


def check_built(parts):
    progs = ["bin/tessera"]
    if set(parts) & {"hpio", "tables", "s3d", "patterns"}:
        progs += ["romio-adio/bench/mpi_hpio", "romio-adio/bench/mpi_patterns",
                  "lib/openmpi/mca_io_romio321.so"]
    if "versions" in parts:
        progs.append("bin/tessera-bench-version")
    if "s3asim" in parts:
        progs += ["romio-adio/bench/mpi_s3asim", "lib/openmpi/mca_io_romio321.so"]
    for prog in progs:
        if not os.path.exists(os.path.join(B, prog)):
            sys.exit("study: %s/%s is not built (make; the MPI parts need Open MPI: make deps)" % (B, prog))


def run_step(prog, what, failures, fn):
    """Runs fn() as one step of the progress; a failed run is noted in
    failures, and the study goes on."""
    prog.start(what)
    try:
        fn()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        failures.append("%s: %s" % (what, e))
    prog.finish()


def recorded(s, rows):
    """rows, each with the RECORD_FIELDS of now."""
    rec = record(s)
    return [dict(r, **rec) for r in rows]


def run_hpio_points(s, env):
    for key in s.tasks:
        if key in s.have:
            s.prog.skip()
            continue
        run_step(s.prog, "hpio count=%d size=%d spacing=%d %s %s" % key, s.failures,
                 lambda: append_rows(s.hpio_csv, HPIO_FIELDS, recorded(
                     s, run_hpio(key, s.p, s.out, env))))


def run_table_rows(s, env):
    for trun in s.truns:
        for m in trun[4]:
            if (trun[0], trun[1], m) in s.thave:
                s.prog.skip()
                continue
            run_step(s.prog, "Tab. %s %s %s" % (trun[0], trun[1], m), s.failures,
                     lambda: append_rows(s.tables_csv, TABLE_FIELDS, recorded(
                         s, run_table(trun, m, s.cluster, env, s.out))))


def run_s3d(s, env):
    dst = os.path.join(s.out, "s3d.txt")
    if os.path.exists(dst):
        s.prog.skip()
        return
    s.prog.start("S3D-like checkpoint, atomic mode (bench_mpi_s3d.sh)")
    e = dict(env)
    if s.p["mode"] != "full":
        e.update({"S3D_N": "64", "S3D_POSIX_N": "32", "S3D_RANKS": "1 2 4", "S3D_REPS": "2"})
    r = run(["nice", "bash", os.path.join(TOP, "tests/bench/bench_mpi_s3d.sh"),
             s.cluster.conf], env=e)
    if r.returncode == 0:
        open(dst + ".tmp", "w").write(r.stdout)
        os.replace(dst + ".tmp", dst)
    else:
        s.failures.append("bench_mpi_s3d.sh: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    s.prog.finish()


def run_on_cluster(s):
    """The parts that use the study's cluster: HPIO, the tables, S3D.
    The cluster is up only if something is left to run; True if stopped."""
    need_cluster = any(k not in s.have for k in s.tasks) or \
        any(k not in s.thave for k in s.tkeys) or \
        ("s3d" in s.extra and not os.path.exists(os.path.join(s.out, "s3d.txt")))
    try:
        if need_cluster:
            s.cluster.up()
        env = mpi_env(s.cluster.conf, s.p["local_reads"])
        env.update(s.cluster.rank_env())
        run_hpio_points(s, env)
        run_table_rows(s, env)
        if "s3d" in s.extra:
            run_s3d(s, env)
    except Stopped:
        return True
    finally:
        if need_cluster:
            s.cluster.down()
    return False


def run_locks(s):
    """The lock figures: bench_locks.sh with clusters of its own."""
    dst = os.path.join(s.out, "locks")
    if os.path.exists(os.path.join(dst, "report.txt")):
        s.prog.skip()
        return
    s.prog.start("lock figures 7.3-7.6 (bench_locks.sh, clusters of their own on loopback)")
    e = dict(os.environ, LOCK_BENCH_OUT=dst)
    if s.p["mode"] != "full":  # an eighth of the locks per client
        e["LOCK_BENCH_ARGS"] = "--locks 16384 --posix-locks 1024"
    try:
        r = run(["nice", "bash", os.path.join(TOP, "tests/bench/bench_locks.sh")], env=e)
    except Stopped:
        s.prog.close()
        sys.exit("study: interrupted; run it again to resume (finished parts are kept in %s)" % s.out)
    if r.returncode != 0:
        s.failures.append("bench_locks.sh: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    else:
        record_locks(s, os.path.join(dst, "locks.csv"))
    s.prog.finish()


def record_locks(s, path):
    """locks.csv's rows get the RECORD_FIELDS too: bench_locks.sh's own
    clusters run on loopback with the config's defaults (and its clients'
    default local reads); the load is the one at the end of its run."""
    rows = read_csv(path)
    if not rows or "load1" in rows[0]:
        return
    conf = os.path.join(s.out, "defaults.conf")
    with open(conf, "w") as f:
        f.write("mds = localhost:1\nios = localhost:2\n")
    c = config_values(conf)
    os.remove(conf)
    rec = {"load1": "%.2f" % os.getloadavg()[0], "commit": s.commit, "net": "loopback",
           "local_reads": os.environ.get("TESSERA_LOCAL_READS", c.get("local_reads", "")),
           }
    rec.update({k: c.get(k, "") for k in ("sieve_gap", "sieve_span", "csum_block", "strip_size",
                                         "max_io", "list_io_max_regions")})
    fields = list(rows[0].keys()) + RECORD_FIELDS
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(dict(r, **rec) for r in rows)
    os.replace(tmp, path)


# ------------------------------------------------------------------ versions
# Chapter 8 (tests/bench/bench_version.c): one row per repetition of a
# write point, per read repetition and per storage measurement ("kind").
VERSION_FIELDS = ["kind", "sweep", "case", "method", "count", "size", "spacing", "rep",
                  "nprocs", "iters", "write_mbs", "wsync_mbs", "write_s", "wsync_s",
                  "versions", "read_s", "unmerged", "log_bytes", "written_bytes",
                  "log_after_merge", "n_ios"] + RECORD_FIELDS
VERSION_N_IOS = 8  # the dissertation's VPFS: 8 servers, 64 KiB strips


def version_plan(p):
    """bench_version's arguments for the study's mode."""
    if p["mode"] == "tiny":
        return ["-p", "4", "-i", "1", "-r", "2", "-a", "c-nc", "-n", "256", "--sweep", "both",
                "--counts", "256", "--spacings", "128", "--versions", "0,10"]
    if p["mode"] == "full":
        return ["-p", "16", "-i", "4", "-r", "5", "--sweep", "both",
                "--counts", "64,256,1024,4096,16384", "--spacings", "8,32,128,512,1024,4096",
                "--versions", "0,10,1000"]
    return ["-p", "16", "-i", "6", "-r", "5", "--sweep", "both", "--counts", "256,1024,4096",
            "--spacings", "8,128,1024,4096", "--versions", "0,10,1000"]


def version_rows(txt, count=4096, spacing=128):
    """versions.csv's rows (without the record) of bench_version's output;
    a write row is in the count sweep at the default spacing, in the
    spacing sweep at the default count (file side nc), in both at the
    point they share (a row each)."""
    rows = []
    for ln in txt.splitlines():
        f = ln.split()
        if not f:
            continue
        if f[0] == "row" and len(f) == 13:
            rows.append({"kind": "write", "case": f[1], "method": f[2], "count": f[3],
                         "size": f[4], "spacing": f[5], "rep": f[6], "nprocs": f[7],
                         "iters": f[8], "write_mbs": f[9], "wsync_mbs": f[10],
                         "write_s": f[11], "wsync_s": f[12]})
        elif f[0] == "readrow" and len(f) == 7:
            rows.append({"kind": "read", "versions": f[1], "rep": f[2], "read_s": f[3],
                         "unmerged": f[4], "log_bytes": f[5], "written_bytes": f[6]})
        elif f[0] == "storagerow" and len(f) == 5:
            rows.append({"kind": "storage", "case": "c-c" if f[1] == "contiguous" else "c-nc",
                         "written_bytes": f[2], "log_bytes": f[3], "log_after_merge": f[4]})
    out = []
    for r in rows:
        names = [""]
        if r["kind"] == "write":
            names = (["count"] if int(r["spacing"]) == spacing else []) + \
                (["spacing"] if int(r["count"]) == count and r["case"].endswith("-nc") else [])
        out += [dict(r, sweep=n) for n in names]
    return out


def run_versions(s):
    """Chapter 8 on a cluster of its own; True if stopped."""
    dst = os.path.join(s.out, "versions.csv")
    if os.path.exists(dst):
        s.prog.skip()
        return False
    s.prog.start("versioning, Figs. 8.3-8.4 (bench_version, %d storage daemons)" % VERSION_N_IOS)
    # the config's defaults unless the study changes them (one start fewer)
    tun = (tunables(s.p) if (s.p["sieve_gap"], s.p["sieve_span"], s.p["csum_block"])
           != (4096, 4 << 20, 4096) else {})
    # the version server's own merges (vmerge_idle_ms after the last
    # commit) off for the run: "with fsync" times the writers' merge, and
    # the reads with 1000 unmerged versions must find them unmerged
    tun = dict(tun, vmerge_idle_ms=24 * 3600 * 1000)
    cl = Cluster(s.out, s.cluster.net, s.cluster.tag + "v", tun, VERSION_N_IOS,
                 "var-versions", s.cluster.nodes)
    try:
        cl.up()
        env = dict(os.environ, TESSERA_LOCAL_READS="1" if s.p["local_reads"] else "0")
        r = run(["nice", os.path.join(B, "bin/tessera-bench-version"), "-c", cl.conf,
                 "-S", "65536", "--reads", "--storage", cl.var] + version_plan(s.p), env=env)
        if r.returncode != 0:
            s.failures.append("bench_version: exit %d: %s" % (r.returncode, r.stderr[-400:]))
        else:
            open(os.path.join(s.out, "versions.txt"), "w").write(r.stdout)
            rec = dict(record(StudyView(s, cl)), n_ios=VERSION_N_IOS)
            plan = version_plan(s.p)
            n = int(plan[plan.index("-n") + 1]) if "-n" in plan else 4096
            rows = [dict(x, **rec) for x in version_rows(r.stdout, n)]
            append_rows(dst + ".tmp", VERSION_FIELDS, rows)
            os.replace(dst + ".tmp", dst)
    except Stopped:
        return True
    finally:
        cl.down()
    s.prog.finish()
    return False


# ------------------------------------------------------------------ patterns
def run_patterns(s):
    """Chapters 3-4's bandwidth sweeps (tests/study/patterns.py) on a
    cluster of their own; True if stopped."""
    sys.path.insert(0, os.path.join(TOP, "tests/study"))
    import patterns
    pl = patterns.plan(s.p["mode"])
    dst = os.path.join(s.out, "patterns.csv")
    fields = patterns.FIELDS + RECORD_FIELDS
    have = patterns.done_keys(read_csv(dst))
    todo = [t for t in patterns.tasks(pl)
            if patterns.key(pl["groups"][t[0]], t[1], t[2]) not in have]
    s.prog.add(len(patterns.tasks(pl)), len(patterns.tasks(pl)) - len(todo))
    if not todo:
        return False
    cl = own_cluster(s, "p", "var-patterns")
    try:
        cl.up()
        env = own_env(s, cl)
        ctx = {"run": run, "mpirun": mpirun, "env": env,
               "prog": os.path.join(B, "romio-adio/bench/mpi_patterns"), "cluster": cl,
               "reps": pl["reps"], "n_ios": N_IOS}
        prepared, view = set(), StudyView(s, cl)
        for gi, m, op in todo:
            g = pl["groups"][gi]
            run_step(s.prog, "patterns %s %d ranks %s=%s %s %s" % (
                g["pattern"], g["nprocs"], g["x_name"], g["x"], m, op), s.failures,
                lambda: append_rows(dst, fields, recorded(
                    view, patterns.run_point(ctx, g, m, op, prepared))))
    except Stopped:
        return True
    finally:
        cl.down()
    return False


# ------------------------------------------------------------------ S3aSim
# Chapter 6 (Figs. 6.2-6.11) and §7.5.3 (Figs. 7.9-7.10):
# romio-adio/bench/mpi_s3asim on a cluster of its own, one row per run.
# part "strategies": the four strategies x no-sync/sync over the ranks (at
# the base speed) and, at the most ranks, over the compute speed; part
# "locks": WW-List in atomic mode (list:one-try) against no lock over the
# ranks. Phases: m_* the master's, w_* the workers' mean (§6.2).
S3A_PHASES = ["setup", "dist", "compute", "merge", "gather", "io", "sync", "other"]
S3ASIM_FIELDS = (["part", "rep", "strategy", "sync", "atomic", "endwrite", "ranks", "speed",
                  "queries", "fragments", "results", "bytes", "total_s"] +
                 ["%s_%s_s" % (side, ph) for side in "mw" for ph in S3A_PHASES] +
                 ["w_io_max_s", "verify"] + RECORD_FIELDS)


def s3asim_plan(p):
    """The simulator's model arguments, ranks, speeds and repetitions by
    mode. The dissertation's runs (20 queries, 128 fragments, 1000-2000
    results a query: 208 MB a run, 2-96 processes) do not fit two cores:
    the short study keeps the NT-like sizes and shrinks the counts."""
    if p["mode"] == "tiny":
        return {"model": ["-q", "3", "-f", "4", "-n", "10:20"], "ranks": [3], "base": 64.0,
                "speeds": [64.0], "reps": 2, "verify": True}
    if p["mode"] == "full":
        return {"model": ["-q", "20", "-f", "32", "-n", "250:500"], "ranks": [2, 3, 4, 6, 8],
                "base": 1.0, "speeds": [0.1, 0.4, 1.0, 6.4, 25.6], "reps": 3, "verify": False}
    # about 4 MB a run, speed 32 at the base: I/O a large share of the time,
    # as at the dissertation's 32-96 processes
    return {"model": ["-q", "4", "-f", "8", "-n", "100:200"], "ranks": [2, 3, 4], "base": 32.0,
            "speeds": [8.0, 32.0, 128.0], "reps": 3, "verify": True}


def s3asim_runs(sp):
    """(part, ranks, arguments) of each mpirun: the strategies over the
    ranks (with the speed sweep at the most ranks), then the locks."""
    runs = []
    for n in sp["ranks"]:
        speeds = sp["speeds"] if n == max(sp["ranks"]) else [sp["base"]]
        runs.append(("strategies", n, ["-S", "mw,ww-coll,ww-posix,ww-list", "-y", "nosync,sync",
                                       "-c", ",".join("%g" % x for x in speeds)]))
    for n in sp["ranks"]:
        runs.append(("locks", n, ["-S", "ww-list", "-y", "nosync", "-a", "off,list:one-try",
                                  "-c", "%g" % sp["base"]]))
    return runs


def s3asim_rows(txt, part):
    """The rows (without the record) of mpi_s3asim's lines."""
    rows = []
    for ln in txt.splitlines():
        if not ln.startswith("s3asim "):
            continue
        kv = dict(f.split("=", 1) for f in ln.split()[1:])
        row = {k: kv.get(k, "") for k in S3ASIM_FIELDS if k not in RECORD_FIELDS}
        row["part"] = part
        rows.append(row)
    return rows


def run_s3asim_one(s, cl, env, run_, sp, dst):
    part, n, args = run_
    name = "tessera:/s3asim-%s-%d" % (part, n)
    cmd = mpirun(n, env) + [os.path.join(B, "romio-adio/bench/mpi_s3asim")] + sp["model"] + args + \
        ["-r", str(sp["reps"])] + (["-V"] if sp["verify"] else []) + [name]
    r = run(cmd, env=env)
    if r.returncode != 0:
        raise RuntimeError("mpi_s3asim %s at %d ranks failed (exit %d): %s" % (
            part, n, r.returncode, r.stderr.strip()[-400:]))
    rows = s3asim_rows(r.stdout, part)
    if not rows or any(x["verify"] not in ("ok", "-") for x in rows):
        raise RuntimeError("mpi_s3asim %s at %d ranks: %d runs, verify %s" % (
            part, n, len(rows), sorted({x["verify"] for x in rows})))
    rec = record(StudyView(s, cl))
    append_rows(dst, S3ASIM_FIELDS, [dict(x, **rec) for x in rows])


def run_s3asim(s):
    """Chapter 6 and §7.5.3 on a cluster of its own (4 storage daemons, the
    study's tunables); each mpirun is a step, resumed by (part, ranks).
    True if stopped."""
    dst = os.path.join(s.out, "s3asim.csv")
    sp = s3asim_plan(s.p)
    have = {(r["part"], int(r["ranks"])) for r in read_csv(dst)}
    todo = [x for x in s3asim_runs(sp) if (x[0], x[1]) not in have]
    s.prog.add(len(s3asim_runs(sp)), len(s3asim_runs(sp)) - len(todo))
    if not todo:
        return False
    cl = own_cluster(s, "a", "var-s3asim")
    try:
        cl.up()
        env = own_env(s, cl)
        # a rank waiting in MPI gives its core up: 4 ranks and 5 daemons share 2 cores
        env["OMPI_MCA_mpi_yield_when_idle"] = "1"
        for run_ in todo:
            run_step(s.prog, "S3aSim %s, %d ranks (Figs. %s)" % (
                run_[0], run_[1], "6.2-6.11" if run_[0] == "strategies" else "7.9-7.10"),
                s.failures, lambda: run_s3asim_one(s, cl, env, run_, sp, dst))
    except Stopped:
        return True
    finally:
        cl.down()
    return False


def own_cluster(s, tag, var):
    """A part's cluster of its own (N_IOS storage daemons, the study's
    tunables, network and nodes), not yet started."""
    return Cluster(s.out, s.cluster.net, s.cluster.tag + tag, tunables(s.p), N_IOS, var,
                   s.cluster.nodes)


def own_env(s, cl):
    """mpirun's environment for ranks on own_cluster's cl."""
    env = mpi_env(cl.conf, s.p["local_reads"])
    env.update(cl.rank_env())
    return env


class StudyView:
    """A study seen with another cluster (record() reads s.cluster)."""

    def __init__(self, s, cluster):
        self.p, self.commit, self.cluster = s.p, s.commit, cluster


def write_failures(out, failures):
    path = os.path.join(out, "failures.txt")
    if failures:
        open(path, "w").write("\n".join(failures) + "\n")
        for f in failures:
            sys.stderr.write("study: FAILED %s\n" % f)
    elif os.path.exists(path):
        os.remove(path)


def make_report(out, no_plots):
    """The figures and the report (matplotlib is Debian's, under
    /usr/bin/python3). True if report.py succeeded."""
    cmd = [os.path.join(TOP, "tests/study/report.py"), out]
    if no_plots:
        cmd.append("--no-plots")
    py = shutil.which("python3")
    for cand in ("/usr/bin/python3", py):
        if cand and subprocess.run([cand, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            py = cand
            break
    return subprocess.run([py] + cmd).returncode == 0


class Study:
    """What the study's steps share: the plan, the folder, what is done
    already, the progress and the failures."""

    def __init__(self, p, out, net, tag, parts, cluster):
        self.p, self.out = p, out
        self.tasks, self.left_out = hpio_tasks(p) if "hpio" in parts else ([], [])
        self.hpio_csv = os.path.join(out, "hpio.csv")
        self.have = done_keys(read_csv(self.hpio_csv))
        self.truns = table_runs(p) if "tables" in parts else []
        self.tkeys = [(r[0], r[1], m) for r in self.truns for m in r[4]]
        self.tables_csv = os.path.join(out, "tables.csv")
        self.thave = {(r["table"], r["label"], r["method"]) for r in read_csv(self.tables_csv)}
        self.extra = [x for x in ("locks", "s3d", "versions") if x in parts]
        # patterns and s3asim add their own steps (Progress.add)
        self.prog = Progress(len(self.tasks) + len(self.tkeys) + len(self.extra))
        self.cluster = cluster
        self.commit = git_commit()
        self.failures = []


def main():
    args = parse_args()
    p = plan(args)
    p.update({"local_reads": args.local_reads, "sieve_gap": args.sieve_gap,
              "sieve_span": args.sieve_span, "csum_block": args.csum_block,
              "traces": args.traces})
    # the daemons' own rule (sieve_gap, sieve_span: docs/configuration.md),
    # said before any daemon is started
    for k in ("sieve_gap", "sieve_span"):
        if not 0 <= p[k] <= 64 << 20:
            sys.exit("study: --%s %d: from 0 to 64 MiB (67108864) bytes" % (
                k.replace("_", "-"), p[k]))
    if p["sieve_gap"] > p["sieve_span"]:
        sys.exit("study: --sieve-gap %d exceeds --sieve-span %d: the daemons refuse a gap "
                 "that could never be merged" % (p["sieve_gap"], p["sieve_span"]))
    cb = p["csum_block"]
    if not 512 <= cb <= 1 << 20 or cb & (cb - 1):
        sys.exit("study: --csum-block %d: a power of two from 512 to 1 MiB (1048576) bytes, "
                 "as the daemons' csum_block" % cb)
    if args.methods:
        keep_methods(p, args.methods)
    net = args.net.strip()
    parts = study_parts(args)
    delay_by = check_network(args, parts)
    cluster = ExternalCluster(args.cluster) if args.cluster else None
    if cluster:
        cluster.up()  # refused here, before any folder, when it does not answer
        p["n_ios"] = cluster.n_ios  # the report's count of storage daemons
    net_name = cluster.label if cluster else net_label(net, args.nodes, delay_by)
    label = "%s-%s" % (p["mode"], "cluster" if cluster else net_name.replace(" ", "-"))
    if args.local_reads:
        label += "-localreads"
    if (args.sieve_gap, args.sieve_span) != (4096, 4 << 20):
        label += "-gap%d-span%d" % (args.sieve_gap, args.sieve_span)
    if args.csum_block != 4096:
        label += "-csum%d" % args.csum_block
    out = os.path.abspath(args.out or os.path.join(B, "study", label))
    os.makedirs(out, exist_ok=True)
    lock = lock_out(out)  # noqa: F841 (held while the study runs)
    meta, meta_path = write_meta(out, p, net_name)
    check_built(parts)
    s = Study(p, out, net, args.tag, parts,
              cluster or Cluster(out, net, args.tag, tunables(p), nodes=args.nodes))
    json.dump(dict(meta, left_out=s.left_out), open(meta_path, "w"), indent=1)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if run_on_cluster(s):
        s.prog.close()
        sys.exit("study: interrupted; run it again to resume (finished points are kept in %s)" % out)
    if "locks" in s.extra:
        run_locks(s)
    for part, run_part in (("versions", run_versions), ("patterns", run_patterns),
                           ("s3asim", run_s3asim)):
        if part in parts and run_part(s):
            s.prog.close()
            sys.exit("study: interrupted; run it again to resume (finished parts are "
                     "kept in %s)" % out)
    s.prog.close()
    write_failures(out, s.failures)
    if not make_report(out, args.no_plots):
        s.failures.append("report.py failed")
    print("study: %s (report.md, hpio.csv, tables.csv, PNGs)" % out)
    return 1 if s.failures else 0

if __name__ == "__main__":
    sys.exit(main())
