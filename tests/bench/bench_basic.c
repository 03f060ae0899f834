/*
 * bench_basic.c - contiguous bandwidth and metadata rates of Tessera, each
 * beside a baseline measured in the same run on the storage daemons' own
 * local file system (plain pwrite/pread; plain create/stat/unlink). The
 * copy out is measured twice: with local reads (the default: the daemons
 * run on this host), and through the daemons (TESSERA_LOCAL_READS=0).
 *
 *   tessera-bench-basic -c CONFIG -l LOCALDIR [-s MiB] [-n FILES] [-p CLIENTS] [-m]
 *
 * The metadata rates come from one client (create, stat, unlink of FILES
 * files), then from CLIENTS processes at once (create and unlink, each
 * process a share of FILES in the one directory). -m: metadata only.
 *
 * Figures, not tests: nothing here asserts a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"

#define BLOCK (8u << 20) /* bytes per call, as `tessera cp` uses */

struct opts {
	const char *config, *local;
	uint64_t bytes;
	int files, clients;
	int metadata_only;   /* -m: skip the copies */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The three passes of a client, in order; each has its time in out[]. */
enum pass { PASS_WRITE, PASS_READ, PASS_READ_REMOTE };

/* One client's file: Tessera's (tf; tf_remote, opened for the last pass,
 * reads through the storage daemons) or the baseline's (fd). */
struct cfile {
	int tessera;
	char path[4096];
	tessera_fs *fs, *fs_remote;
	tessera_file *tf, *tf_remote;
	int fd;
};

static int cfile_open(const struct opts *o, int idx, struct cfile *c)
{
	char err[512];
	int rc;

	if (!c->tessera) {
		snprintf(c->path, sizeof(c->path), "%s/bench-%d", o->local, idx);
		c->fd = open(c->path, O_CREAT | O_TRUNC | O_RDWR, 0644);
		if (c->fd < 0) {
			rc = -errno;
			perror(c->path);
			return rc;
		}
		return 0;
	}
	snprintf(c->path, sizeof(c->path), "/bench-%d", idx);
	if ((rc = tessera_connect(o->config, &c->fs, err, sizeof(err)))) {
		fprintf(stderr, "connect: %s\n", err);
		return rc;
	}
	if ((rc = tessera_open(c->fs, c->path, O_CREAT | O_TRUNC | O_RDWR, 0644, NULL, &c->tf)))
		fprintf(stderr, "%s\n", tessera_errmsg(c->fs));
	return rc;
}

/* A second connection with local reads off, for the read through the
 * storage daemons. */
static int cfile_open_remote(const struct opts *o, struct cfile *c)
{
	char err[512];
	int rc;

	setenv("TESSERA_LOCAL_READS", "0", 1);
	if ((rc = tessera_connect(o->config, &c->fs_remote, err, sizeof(err)))) {
		fprintf(stderr, "connect: %s\n", err);
		return rc;
	}
	if ((rc = tessera_open(c->fs_remote, c->path, O_RDONLY, 0, NULL, &c->tf_remote)))
		fprintf(stderr, "%s\n", tessera_errmsg(c->fs_remote));
	return rc;
}

static ssize_t cfile_io(struct cfile *c, enum pass pass, char *buf, size_t len, uint64_t off)
{
	if (!c->tessera)
		return pass != PASS_WRITE ? pread(c->fd, buf, len, (off_t)off)
					  : pwrite(c->fd, buf, len, (off_t)off);
	if (pass == PASS_WRITE)
		return tessera_pwrite(c->tf, buf, len, off);
	return tessera_pread(pass == PASS_READ_REMOTE ? c->tf_remote : c->tf, buf, len, off);
}

/* Why a transfer of the pass answered n bytes, not all. */
static const char *cfile_why(const struct cfile *c, enum pass pass, ssize_t n)
{
	if (!c->tessera || n >= 0)
		return "short transfer";
	return tessera_errmsg(pass == PASS_READ_REMOTE ? c->fs_remote : c->fs);
}

static int cfile_sync(struct cfile *c)
{
	int rc = c->tessera ? tessera_fsync(c->tf) : (fsync(c->fd) ? -errno : 0);

	if (rc)
		fprintf(stderr, "fsync %s: %s\n", c->path,
			c->tessera ? tessera_errmsg(c->fs) : strerror(-rc));
	return rc;
}

/* Moves `bytes` in calls of BLOCK; the write pass ends with the fsync. */
static int cfile_pass(struct cfile *c, enum pass pass, char *buf, uint64_t bytes)
{
	for (uint64_t off = 0; off < bytes; off += BLOCK) {
		size_t len = bytes - off < BLOCK ? (size_t)(bytes - off) : BLOCK;
		ssize_t n = cfile_io(c, pass, buf, len, off);

		if (n != (ssize_t)len) {
			fprintf(stderr, "%s %s at %llu: %s\n", pass != PASS_WRITE ? "read" : "write",
				c->path, (unsigned long long)off, cfile_why(c, pass, n));
			return -EIO;
		}
	}
	return pass == PASS_WRITE ? cfile_sync(c) : 0;
}

static void cfile_close(struct cfile *c)
{
	if (c->tf_remote)
		tessera_close(c->tf_remote);
	tessera_disconnect(c->fs_remote);
	if (c->tf)
		tessera_close(c->tf);
	if (c->fs) {
		tessera_unlink(c->fs, c->path);
		tessera_disconnect(c->fs);
	}
	if (c->fd >= 0) {
		close(c->fd);
		unlink(c->path);
	}
}

/* One client's share: write then read `bytes` of file `idx`, then read
 * it again. The write's time includes the fsync that makes it durable (a
 * synced copy in, as `pvfs2-cp` + flush or `tessera cp` does); the reads
 * land in memory only (a copy out to /dev/null). Tessera's second read
 * goes through the storage daemons (a second connection with local reads
 * off), the baseline's is a second pread. Returns 0 and the three
 * durations in out[]. */
static int run_client(const struct opts *o, int tessera, int idx, uint64_t bytes, double out[3])
{
	char *buf = malloc(BLOCK);
	struct cfile c = { .tessera = tessera, .fd = -1 };
	int rc;

	memset(buf, 'a' + idx, BLOCK);
	rc = cfile_open(o, idx, &c);
	for (enum pass pass = PASS_WRITE; pass <= PASS_READ_REMOTE && !rc; pass++) {
		double t0;

		if (tessera && pass == PASS_READ_REMOTE && (rc = cfile_open_remote(o, &c)))
			break;
		t0 = now_s();
		rc = cfile_pass(&c, pass, buf, bytes);
		out[pass] = now_s() - t0;
	}
	cfile_close(&c);
	free(buf);
	return rc;
}

/* `clients` processes at once, each moving bytes/clients; aggregate MB/s. */
static int bandwidth(const struct opts *o, int tessera, int clients, double mbs[3])
{
	uint64_t share = o->bytes / (uint64_t)clients;
	double worst[3] = { 0, 0, 0 };
	int pipes[64][2], rc = 0;
	pid_t pids[64];

	for (int i = 0; i < clients; i++) {
		if (pipe(pipes[i]))
			return -errno;
		pids[i] = fork();
		if (pids[i] == 0) {
			double t[3] = { 0, 0, 0 };
			int r = run_client(o, tessera, i, share, t);

			if (write(pipes[i][1], t, sizeof(t)) != sizeof(t))
				r = -EIO;
			_exit(r ? 1 : 0);
		}
		close(pipes[i][1]);
	}
	for (int i = 0; i < clients; i++) {
		double t[3];
		int status;

		if (read(pipes[i][0], t, sizeof(t)) != sizeof(t))
			rc = -EIO;
		close(pipes[i][0]);
		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = -EIO;
		for (int k = 0; k < 3; k++)
			if (t[k] > worst[k])
				worst[k] = t[k];
	}
	/* Writes happen together, then reads: each phase's aggregate rate is
	 * its bytes over the slowest client's time. */
	for (int k = 0; k < 3; k++)
		mbs[k] = (double)share * clients / worst[k] / 1e6;
	return rc;
}

/* The three metadata phases, in order; each has its rate in rate[]. */
enum md_phase { MD_CREATE, MD_STAT, MD_UNLINK };

/* File i of the phase through Tessera. */
static int md_tessera(tessera_fs *fs, enum md_phase phase, int i)
{
	char path[64];
	tessera_file *f;
	struct tessera_stat st;
	int rc = 0;

	snprintf(path, sizeof(path), "/mdbench/f%d", i);
	if (phase == MD_CREATE && !(rc = tessera_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, 0644,
						      NULL, &f)))
		tessera_close(f);
	else if (phase == MD_STAT)
		rc = tessera_stat(fs, path, &st);
	else if (phase == MD_UNLINK)
		rc = tessera_unlink(fs, path);
	if (rc)
		fprintf(stderr, "%s\n", tessera_errmsg(fs));
	return rc;
}

/* File i of the phase on the baseline's local file system. */
static int md_local(const struct opts *o, enum md_phase phase, int i)
{
	char path[4096];
	struct stat st;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/mdbench/f%d", o->local, i);
	if (phase == MD_CREATE) {
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		rc = fd < 0 ? -errno : close(fd);
	} else if (phase == MD_STAT) {
		rc = stat(path, &st) ? -errno : 0;
	} else {
		rc = unlink(path) ? -errno : 0;
	}
	if (rc)
		fprintf(stderr, "%s: %s\n", path, strerror(-rc));
	return rc;
}

/* The directory the files go in: made (make != 0) or removed. */
static int md_dir(const struct opts *o, tessera_fs *fs, int make)
{
	char path[4096];

	if (fs)
		return make ? tessera_mkdir(fs, "/mdbench", 0755) : tessera_rmdir(fs, "/mdbench");
	snprintf(path, sizeof(path), "%s/mdbench", o->local);
	if (make)
		return mkdir(path, 0755) ? -errno : 0;
	return rmdir(path) ? -errno : 0;
}

/* create, stat, unlink of n files; ops/s for each. */
static int metadata(const struct opts *o, int tessera, double rate[3])
{
	char err[512];
	tessera_fs *fs = NULL;
	int rc = 0;

	if (tessera && (rc = tessera_connect(o->config, &fs, err, sizeof(err)))) {
		fprintf(stderr, "connect: %s\n", err);
		return rc;
	}
	rc = md_dir(o, fs, 1);
	for (enum md_phase phase = MD_CREATE; phase <= MD_UNLINK && !rc; phase++) {
		double t0 = now_s();

		for (int i = 0; i < o->files && !rc; i++)
			rc = tessera ? md_tessera(fs, phase, i) : md_local(o, phase, i);
		rate[phase] = o->files / (now_s() - t0);
	}
	md_dir(o, fs, 0);
	tessera_disconnect(fs);
	return rc;
}

/* One process's share of a metadata phase, files [first, end): connect,
 * wait for the go byte on `go`, run, and answer the seconds it took on
 * `out`. */
static int md_share(const struct opts *o, int tessera, enum md_phase phase, int first, int end,
		    int go, int out)
{
	char err[512], byte;
	tessera_fs *fs = NULL;
	double t0, t = 0;
	int rc = 0;

	if (tessera && (rc = tessera_connect(o->config, &fs, err, sizeof(err))))
		fprintf(stderr, "connect: %s\n", err);
	if (read(go, &byte, 1) != 1)
		rc = -EIO;
	t0 = now_s();
	for (int i = first; i < end && !rc; i++)
		rc = tessera ? md_tessera(fs, phase, i) : md_local(o, phase, i);
	t = now_s() - t0;
	if (write(out, &t, sizeof(t)) != sizeof(t))
		rc = -EIO;
	tessera_disconnect(fs);
	return rc;
}

/* A metadata phase over o->files files from o->clients processes at once,
 * all connected before the clock starts; *rate: files over the slowest
 * process's time. */
static int md_phase_parallel(const struct opts *o, int tessera, enum md_phase phase, double *rate)
{
	int go[2], back[2], rc = 0;
	int n = o->clients;
	pid_t pids[64];
	double worst = 0;

	if (pipe(go) || pipe(back))
		return -errno;
	for (int k = 0; k < n; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			close(go[1]);
			close(back[0]);
			_exit(md_share(o, tessera, phase, o->files * k / n, o->files * (k + 1) / n,
				       go[0], back[1]) ? 1 : 0);
		}
	}
	close(go[0]);
	close(back[1]);
	/* Connecting is not part of the phase: give them a moment, then go. */
	usleep(500000);
	for (int k = 0; k < n; k++)
		if (write(go[1], "g", 1) != 1)
			rc = -EIO;
	close(go[1]);
	for (int k = 0; k < n; k++) {
		double t = 0;

		if (read(back[0], &t, sizeof(t)) != sizeof(t))
			rc = -EIO;
		if (t > worst)
			worst = t;
	}
	close(back[0]);
	for (int k = 0; k < n; k++) {
		int status;

		waitpid(pids[k], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = -EIO;
	}
	*rate = worst > 0 ? o->files / worst : 0;
	return rc;
}

/* create and unlink from o->clients processes: rate[MD_CREATE], rate[MD_UNLINK]. */
static int metadata_parallel(const struct opts *o, int tessera, double rate[3])
{
	char err[512];
	tessera_fs *fs = NULL;
	int rc;

	rate[MD_STAT] = 0;
	if (tessera && (rc = tessera_connect(o->config, &fs, err, sizeof(err)))) {
		fprintf(stderr, "connect: %s\n", err);
		return rc;
	}
	rc = md_dir(o, fs, 1);
	if (!rc)
		rc = md_phase_parallel(o, tessera, MD_CREATE, &rate[MD_CREATE]);
	if (!rc)
		rc = md_phase_parallel(o, tessera, MD_UNLINK, &rate[MD_UNLINK]);
	md_dir(o, fs, 0);
	tessera_disconnect(fs);
	return rc;
}

/* Parses the command line into o; 0, or -EINVAL on a bad one. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	int opt;

	*o = (struct opts){ NULL, NULL, 1ull << 30, 10000, 4, 0 };
	while ((opt = getopt(argc, argv, "c:l:s:n:p:m")) != -1) {
		switch (opt) {
		case 'c': o->config = optarg; break;
		case 'l': o->local = optarg; break;
		case 's': o->bytes = strtoull(optarg, NULL, 10) << 20; break;
		case 'n': o->files = atoi(optarg); break;
		case 'p': o->clients = atoi(optarg); break;
		case 'm': o->metadata_only = 1; break;
		default: return -EINVAL;
		}
	}
	if (!o->config || !o->local || o->clients < 1 || o->clients > 64 || o->files < 1 || !o->bytes)
		return -EINVAL;
	return 0;
}

/* Copies in and out with 1 client, then with o->clients. */
static int bandwidths(const struct opts *o)
{
	static const char *const what[3] = { "copy in (write+fsync)", "copy out (read)",
					     "  through the daemons" };
	double t[3], l[3];
	int rc = 0;

	for (int clients = 1; clients <= o->clients && !rc; clients *= o->clients) {
		rc = bandwidth(o, 0, clients, l);
		if (!rc)
			rc = bandwidth(o, 1, clients, t);
		if (rc)
			break;
		for (int i = 0; i < 3; i++)
			printf("%-25s %d client%s %9.0f MB/s %7.0f MB/s %8.2f\n", what[i], clients,
			       clients > 1 ? "s" : " ", t[i], l[i], t[i] / l[i]);
		if (o->clients == 1)
			break;
	}
	return rc;
}

/* The metadata rates, one client then o->clients, beside the baseline's. */
static int metadatas(const struct opts *o)
{
	const char *names[3] = { "create", "stat", "unlink" };
	double tm[3], lm[3];
	char label[64];
	int rc;

	if ((rc = metadata(o, 0, lm)) || (rc = metadata(o, 1, tm)))
		return rc;
	for (int i = 0; i < 3; i++)
		printf("%-34s %8.0f op/s %8.0f op/s %8.3f\n", names[i], tm[i], lm[i], tm[i] / lm[i]);
	if (o->clients == 1)
		return 0;
	if ((rc = metadata_parallel(o, 0, lm)) || (rc = metadata_parallel(o, 1, tm)))
		return rc;
	for (int i = 0; i < 3; i += 2) {
		snprintf(label, sizeof(label), "%s, %d clients", names[i], o->clients);
		printf("%-34s %8.0f op/s %8.0f op/s %8.3f\n", label, tm[i], lm[i], tm[i] / lm[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	if (parse_opts(argc, argv, &o)) {
		fprintf(stderr, "usage: %s -c CONFIG -l LOCALDIR [-s MiB] [-n FILES] [-p CLIENTS]"
			" [-m]\n", argv[0]);
		return 2;
	}
	printf("Tessera basic benchmark: %llu MiB, %d files; baseline: %s\n",
	       (unsigned long long)(o.bytes >> 20), o.files, o.local);
	printf("%-34s %12s %12s %8s\n", "", "tessera", "baseline", "ratio");
	rc = o.metadata_only ? 0 : bandwidths(&o);
	if (!rc)
		rc = metadatas(&o);
	if (rc)
		fprintf(stderr, "benchmark failed: %s\n", strerror(-rc));
	return rc ? 1 : 0;
}
