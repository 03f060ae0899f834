/*
 * bench_version.c - the dissertation's versioning figures (seed 001, §8.5,
 * Figs. 8.3-8.4) on libtessera, against a running cluster: P client
 * processes (fork, each its own tessera_connect; default 16, the
 * dissertation's) write their own datatype pattern of one shared file at
 * the same time, in the HPIO access cases c-c, nc-c, c-nc and nc-nc
 * (memory side, file side: contiguous or not), by three methods:
 *
 *   datatype          tessera_write_dtype on a plain file (no atomicity)
 *   datatype-lock     the same, each write inside tessera_lock_dtype of its
 *                     file type (write lock, alt-try protocol: the MPI
 *                     driver's default)
 *   datatype-version  tessera_write_dtype on a versioned file (atomic
 *                     without locks: every write is a version)
 *
 * The pattern (file side, nc): region i of process p is `size` bytes at
 * p x size/2 + i x stride, stride = (P + 1) x size/2 + spacing. So the
 * processes' regions interleave and each overlaps half of its neighbours'
 * (atomicity matters: two writers want the same bytes), and every process
 * touches every stripe the pattern covers; `spacing` is the hole after
 * each group of P regions. File side c: process p writes count x size
 * bytes from p x count x size/2 (again half over the next one's). Memory
 * side nc: count regions of `size` bytes 128 bytes apart (HPIO's memory
 * default); c: one buffer.
 *
 * A point is one access case, method, count, size, spacing: a fresh file
 * (64 KiB strips over every storage daemon unless -S/-w), the P writers
 * connected and open, then -r repetitions, each: all start together
 * (pipes as a barrier), each does -i writes, then tessera_fsync (on a
 * versioned file: the merge). Aggregate MB/s = P x bytes x iterations /
 * (latest end - earliest start), for the writes alone ("write") and with
 * the fsync ("w+sync"). Every repetition is a line "row ..."; the summary
 * gives each method's mean and 95 % t-interval and the ratios
 * datatype-version / datatype and / datatype-lock of the same run.
 *
 * --reads: one process, a versioned file of 512 KiB written and merged,
 * then 0, 10 and 1000 unmerged versions (each a 64-region, 8-byte datatype
 * write spread over the file): time per 512 KiB read, ratio to 0.
 * --storage DIR (the cluster's folder, tessera-local's --dir): the bytes
 * of the storage daemons' *.vlog files per byte written, for a contiguous
 * and a noncontiguous 32 KiB write and for the 1000 versions above,
 * before and after the merge.
 *
 *   tessera-bench-version -c CONFIG [-p PROCS] [-n COUNT] [-s SIZE]
 *       [-g SPACING] [-i ITERS] [-r REPS] [-a CASE] [-m METHODS]
 *       [-S STRIP] [-w WIDTH] [--sweep count|spacing|both] [--counts LIST]
 *       [--spacings LIST] [--reads] [--versions LIST] [--storage DIR]
 *       [--no-writes]
 *
 * Figures, not tests: nothing here asserts a time.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdl.h"
#include "tessera.h"

#define PROG "tessera-bench-version"
#define PATH "/version-bench"
#define MAX_PROCS 256
#define MAX_LIST 32
#define MEM_SPACING 128

enum method { M_DTYPE, M_LOCK, M_VERSION, M_COUNT };
static const char *const method_names[M_COUNT] = { "datatype", "datatype-lock",
						   "datatype-version" };
static const char *const case_names[4] = { "c-c", "nc-c", "c-nc", "nc-nc" };

struct point {
	int access;              /* index in case_names: bit 0 memory nc, bit 1 file nc */
	enum method method;
	uint64_t count, size, spacing;
};

struct opts {
	const char *config, *storage_dir, *sweep;
	int procs, iters, reps, cases[4], methods[M_COUNT], reads, writes;
	uint64_t count, size, spacing, strip;
	uint32_t width;
	uint64_t counts[MAX_LIST], spacings[MAX_LIST], versions[MAX_LIST];
	int ncounts, nspacings, nversions;
};

struct times {           /* one writer's repetition, CLOCK_MONOTONIC seconds */
	double start, written, synced;
	int err;             /* 0 or the negative errno that stopped it */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *what, int err)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, what);
	if (err)
		fprintf(stderr, ": %s", strerror(-err));
	fprintf(stderr, "\n");
	exit(1);
}

static tessera_fs *connect_or_die(const struct opts *o)
{
	tessera_fs *fs;
	char err[512];

	if (tessera_connect(o->config, &fs, err, sizeof(err)))
		die("connect: %s", err, 0);
	return fs;
}

static void check(tessera_fs *fs, int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, PROG ": %s: %s (%s)\n", what, strerror(-rc), tessera_errmsg(fs));
		exit(1);
	}
}

/* ---------------------------------------------------------- the pattern */

/* Process p's file type (nc: an hvector; c: count x size bytes) and its
 * displacement. */
static struct tdl_dataloop *file_type(const struct point *pt, int procs, int p, int64_t *disp)
{
	struct tdl_dataloop *b, *t;
	int64_t stride = (int64_t)((procs + 1) * pt->size / 2 + pt->spacing);
	int rc;

	if (!(pt->access & 2)) {
		*disp = (int64_t)(p * pt->count * pt->size / 2);
		rc = tdl_bytes((int64_t)(pt->count * pt->size), &t);
	} else {
		*disp = (int64_t)(p * pt->size / 2);
		rc = tdl_bytes(1, &b);
		if (!rc) {
			rc = tdl_hvector((int64_t)pt->count, (int64_t)pt->size, stride, b, &t);
			tdl_free(b);
		}
	}
	if (rc)
		die("cannot build the %s file type", case_names[pt->access], rc);
	return t;
}

/* The memory type (NULL: contiguous) and the buffer for it. */
static struct tdl_dataloop *mem_type(const struct point *pt, uint8_t **buf, uint64_t *mcount,
				     uint64_t *span_out)
{
	struct tdl_dataloop *b, *t = NULL;
	uint64_t span = pt->count * pt->size;

	*mcount = span;
	if (pt->access & 1) {
		if (tdl_bytes((int64_t)pt->size, &b) ||
		    tdl_resized(b, 0, (int64_t)(pt->size + MEM_SPACING), &t))
			die("cannot build the %s memory type", case_names[pt->access], 0);
		tdl_free(b);
		*mcount = pt->count;
		span = pt->count * (pt->size + MEM_SPACING);
	}
	*buf = malloc(span);
	*span_out = span;
	if (!*buf)
		die("out of memory for %s", "the buffer", 0);
	return t;
}

static struct tessera_layout layout_of(const struct opts *o, int versioned)
{
	struct tessera_layout l;

	memset(&l, 0, sizeof(l));
	l.strip_size = o->strip;
	l.count = o->width;
	l.kind = versioned ? TESSERA_LAYOUT_VERSIONED : TESSERA_LAYOUT_PLAIN;
	return l;
}

/* In a child of its own (this process never connects: no library state
 * crosses a fork): PATH removed and created anew, plain or versioned. */
static void fresh_file(const struct opts *o, int versioned)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		tessera_fs *fs = connect_or_die(o);
		struct tessera_layout l = layout_of(o, versioned);
		tessera_file *f;
		int rc = tessera_unlink(fs, PATH);

		if (rc && rc != -ENOENT)
			check(fs, rc, "unlink " PATH);
		check(fs, tessera_open(fs, PATH, O_CREAT | O_EXCL | O_RDWR, 0644, &l, &f),
		      "create " PATH);
		check(fs, tessera_close(f), "close " PATH);
		tessera_disconnect(fs);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("creating %s failed", PATH, 0);
}

/* ---------------------------------------------------------- the writers */

static int write_once(tessera_file *f, const struct point *pt, const uint8_t *buf,
		      uint64_t mcount, const struct tdl_dataloop *mt,
		      const struct tdl_dataloop *ft, int64_t disp)
{
	uint64_t bytes = pt->count * pt->size;
	tessera_lock *lk = NULL;
	ssize_t k;
	int rc;

	if (pt->method == M_LOCK) {
		rc = tessera_lock_dtype(f, TESSERA_LOCK_WRITE, ft, disp, 0, bytes,
					TESSERA_LOCK_ALT_TRY, &lk);
		if (rc)
			return rc;
	}
	k = tessera_write_dtype(f, buf, mcount, mt, ft, disp, 0);
	rc = k == (ssize_t)bytes ? 0 : k < 0 ? (int)k : -EIO;
	if (lk) {
		int u = tessera_unlock(lk);

		rc = rc ? rc : u;
	}
	return rc;
}

/* A writer: connect, open, say ready, then per repetition wait for the go
 * byte, write, fsync, send its times. */
static void writer(const struct opts *o, const struct point *pt, int p, int go, int res)
{
	tessera_fs *fs = connect_or_die(o);
	tessera_file *f;
	uint64_t mcount, span;
	uint8_t *buf, c;
	int64_t disp;
	struct tdl_dataloop *mt = mem_type(pt, &buf, &mcount, &span);
	struct tdl_dataloop *ft = file_type(pt, o->procs, p, &disp);
	struct times t = { 0 };

	check(fs, tessera_open(fs, PATH, O_RDWR, 0, NULL, &f), "open " PATH);
	memset(buf, 'a' + p % 26, span);
	if (write(res, &t, sizeof(t)) != sizeof(t))
		_exit(1);
	while (read(go, &c, 1) == 1) {
		t.start = now_s();
		for (int i = 0; i < o->iters && !t.err; i++)
			t.err = write_once(f, pt, buf, mcount, mt, ft, disp);
		t.written = now_s();
		if (!t.err)
			t.err = tessera_fsync(f);
		t.synced = now_s();
		if (t.err)
			fprintf(stderr, PROG ": writer %d, %s %s: %s\n", p, case_names[pt->access],
				method_names[pt->method], tessera_errmsg(fs));
		if (write(res, &t, sizeof(t)) != sizeof(t) || t.err)
			_exit(1);
	}
	tessera_close(f);
	tessera_disconnect(fs);
	_exit(0);
}

/* ---------------------------------------------------------- a point */

struct result {          /* a point's repetitions, MB/s */
	double write[MAX_LIST], wsync[MAX_LIST];
	int n;
};

/* Reads one writer's record; a writer that died or failed ends the run. */
static void get_times(int res, struct times *t, const struct point *pt)
{
	if (read(res, t, sizeof(*t)) != sizeof(*t) || t->err)
		die("a writer of %s failed (its message is above)", method_names[pt->method], 0);
}

/* One repetition: every writer goes; MB/s of the writes and with fsync. */
static void repetition(const struct opts *o, const struct point *pt, const int *go, int res,
		       struct result *r)
{
	double start = 1e300, written = 0, synced = 0, mb;
	struct times t;

	for (int p = 0; p < o->procs; p++)
		if (write(go[p], "g", 1) != 1)
			die("a writer of %s is gone", method_names[pt->method], 0);
	for (int p = 0; p < o->procs; p++) {
		get_times(res, &t, pt);
		start = t.start < start ? t.start : start;
		written = t.written > written ? t.written : written;
		synced = t.synced > synced ? t.synced : synced;
	}
	mb = (double)o->procs * (double)(pt->count * pt->size) * o->iters / 1e6;
	r->write[r->n] = mb / (written - start);
	r->wsync[r->n] = mb / (synced - start);
	printf("row %s %s %llu %llu %llu %d %d %d %.3f %.3f %.6f %.6f\n", case_names[pt->access],
	       method_names[pt->method], (unsigned long long)pt->count,
	       (unsigned long long)pt->size, (unsigned long long)pt->spacing, r->n, o->procs,
	       o->iters, r->write[r->n], r->wsync[r->n], written - start, synced - start);
	fflush(stdout);
	r->n++;
}

/* A point: fresh file, P writers, the repetitions. */
static void run_point(const struct opts *o, const struct point *pt, struct result *r)
{
	int go[MAX_PROCS], res[2];
	pid_t pid[MAX_PROCS];
	struct times t;

	fresh_file(o, pt->method == M_VERSION);
	if (pipe(res))
		die("pipe: %s", strerror(errno), 0);
	for (int p = 0; p < o->procs; p++) {
		int g[2];

		if (pipe(g))
			die("pipe: %s", strerror(errno), 0);
		fflush(stdout);
		pid[p] = fork();
		if (pid[p] < 0)
			die("fork: %s", strerror(errno), 0);
		if (pid[p] == 0) {
			close(g[1]);
			close(res[0]);
			writer(o, pt, p, g[0], res[1]);
		}
		close(g[0]);
		go[p] = g[1];
	}
	close(res[1]);
	for (int p = 0; p < o->procs; p++)     /* every writer connected and open */
		get_times(res[0], &t, pt);
	r->n = 0;
	for (int i = 0; i < o->reps; i++)
		repetition(o, pt, go, res[0], r);
	for (int p = 0; p < o->procs; p++)
		close(go[p]);
	close(res[0]);
	for (int p = 0; p < o->procs; p++)
		waitpid(pid[p], NULL, 0);
}

/* ---------------------------------------------------------- statistics */

/* Student's t, two-sided 95 %, by degrees of freedom (1..30; then 1.96). */
static double t95(int df)
{
	static const double t[] = { 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
				    2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
				    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
				    2.060, 2.056, 2.052, 2.048, 2.045, 2.042 };

	return df >= 1 && df <= 30 ? t[df] : 1.96;
}

static void mean_ci(const double *v, int n, double *mean, double *half)
{
	double s = 0, ss = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	*mean = n ? s / n : 0;
	for (int i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*half = n > 1 ? t95(n - 1) * sqrt(ss / (n - 1)) / sqrt(n) : 0;
}

/* Every method at one pattern, then the summary line with the ratios. */
static void run_pattern(const struct opts *o, const char *sweep, int access, uint64_t count,
			uint64_t spacing)
{
	struct result r[M_COUNT] = { { { 0 }, { 0 }, 0 } };
	double mw[M_COUNT] = { 0 }, hw[M_COUNT] = { 0 }, ms[M_COUNT] = { 0 }, hs[M_COUNT] = { 0 };

	for (int m = 0; m < M_COUNT; m++) {
		struct point pt = { access, (enum method)m, count, o->size, spacing };

		if (!o->methods[m])
			continue;
		run_point(o, &pt, &r[m]);
		mean_ci(r[m].write, r[m].n, &mw[m], &hw[m]);
		mean_ci(r[m].wsync, r[m].n, &ms[m], &hs[m]);
	}
	printf("%-8s %-6s %7llu %7llu", sweep, case_names[access], (unsigned long long)count,
	       (unsigned long long)spacing);
	for (int m = 0; m < M_COUNT; m++)
		printf(" %8.2f ±%6.2f %8.2f ±%6.2f", mw[m], hw[m], ms[m], hs[m]);
	printf(" %6.2fx %6.2fx %6.2fx %6.2fx\n", mw[M_DTYPE] > 0 ? mw[M_VERSION] / mw[M_DTYPE] : 0,
	       mw[M_LOCK] > 0 ? mw[M_VERSION] / mw[M_LOCK] : 0,
	       ms[M_DTYPE] > 0 ? ms[M_VERSION] / ms[M_DTYPE] : 0,
	       ms[M_LOCK] > 0 ? ms[M_VERSION] / ms[M_LOCK] : 0);
	fflush(stdout);
}

static void summary_header(const struct opts *o)
{
	printf("Versioned writes (Figs. 8.3-8.4): %d processes, %llu-byte regions, %d writes "
	       "each per repetition, %d repetitions; MB/s mean ± 95 %% interval; write: the "
	       "writes alone, w+sync: with tessera_fsync (a versioned file's merge)\n",
	       o->procs, (unsigned long long)o->size, o->iters, o->reps);
	printf("%-8s %-6s %7s %7s", "sweep", "case", "regions", "spacing");
	for (int m = 0; m < M_COUNT; m++)
		printf(" %17s %17s", method_names[m] + (m ? 9 : 0), "w+sync");
	printf(" %7s %7s %7s %7s\n", "v/dt", "v/lock", "v/dt+s", "v/lk+s");
}

static int in_list(uint64_t v, const uint64_t *list, int n)
{
	for (int i = 0; i < n; i++)
		if (list[i] == v)
			return 1;
	return 0;
}

static void run_writes(const struct opts *o)
{
	int sweeps = !strcmp(o->sweep, "both") ? 3 : !strcmp(o->sweep, "count") ? 1 :
		     !strcmp(o->sweep, "spacing") ? 2 : 0;

	summary_header(o);
	for (int a = 0; a < 4; a++) {
		if (!o->cases[a])
			continue;
		if (!sweeps)
			run_pattern(o, "point", a, o->count, o->spacing);
		for (int i = 0; (sweeps & 1) && i < o->ncounts; i++)
			run_pattern(o, "count", a, o->counts[i], o->spacing);
		/* the file side is what spacing changes: c-c and nc-c once;
		 * the point both sweeps share once */
		for (int i = 0; (sweeps & 2) && (a & 2) && i < o->nspacings; i++)
			if (!(sweeps & 1) || o->spacings[i] != o->spacing ||
			    !in_list(o->count, o->counts, o->ncounts))
				run_pattern(o, "spacing", a, o->count, o->spacings[i]);
	}
}

/* ---------------------------------------------------------- reads, storage */

/* The bytes of the logs (HANDLE.vlog files anywhere under dir) of f's
 * objects; -1 without a dir. */
static int64_t vlog_bytes_in(const char *dir, const struct tessera_layout *l, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int64_t sum = 0;
	char path[4096];

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 6) {
			sum += vlog_bytes_in(path, l, depth + 1);
			continue;
		}
		for (uint32_t i = 0; S_ISREG(st.st_mode) && i < l->count; i++) {
			char name[40];

			snprintf(name, sizeof(name), "%016llx.vlog", (unsigned long long)l->handles[i]);
			if (!strcmp(e->d_name, name))
				sum += st.st_size;
		}
	}
	closedir(d);
	return sum;
}

static int64_t vlog_bytes(const struct opts *o, tessera_file *f)
{
	struct tessera_layout l;

	if (!o->storage_dir || tessera_file_layout(f, &l))
		return -1;
	return vlog_bytes_in(o->storage_dir, &l, 0);
}

#define READ_SPAN (512u << 10)
#define VREGIONS 64

static tessera_file *fresh_versioned(tessera_fs *fs, const struct opts *o)
{
	struct tessera_layout l = layout_of(o, 1);
	tessera_file *f;
	int rc = tessera_unlink(fs, PATH);

	if (rc && rc != -ENOENT)
		check(fs, rc, "unlink " PATH);
	check(fs, tessera_open(fs, PATH, O_CREAT | O_EXCL | O_RDWR, 0644, &l, &f), "create " PATH);
	return f;
}

/* k small versions (64 regions of 8 bytes, 8 KiB apart, a different
 * offset each) over the file's first READ_SPAN bytes, none merged. */
static void small_versions(tessera_fs *fs, tessera_file *f, uint64_t k)
{
	struct tdl_dataloop *b, *t;
	uint8_t buf[VREGIONS * 8];

	if (tdl_bytes(1, &b) || tdl_hvector(VREGIONS, 8, READ_SPAN / VREGIONS, b, &t))
		die("cannot build the %s type", "versions'", 0);
	tdl_free(b);
	for (uint64_t j = 0; j < k; j++) {
		memset(buf, (int)(j & 0xff), sizeof(buf));
		if (tessera_write_dtype(f, buf, sizeof(buf), NULL, t,
					(int64_t)((j * 8) % (READ_SPAN / VREGIONS - 8)), 0) !=
		    (ssize_t)sizeof(buf))
			check(fs, -EIO, "a small version");
	}
	tdl_free(t);
}

/* Seconds per READ_SPAN read, one repetition (at least 5 reads, 0.2 s). */
static double time_reads(tessera_fs *fs, tessera_file *f, uint8_t *buf)
{
	double t0 = now_s(), t;
	int n = 0;

	do {
		if (tessera_pread(f, buf, READ_SPAN, 0) != (ssize_t)READ_SPAN)
			check(fs, -EIO, "read " PATH);
		n++;
		t = now_s() - t0;
	} while (n < 5 || t < 0.2);
	return t / n;
}

/* Reads with k unmerged versions, for each k asked; log bytes of the k
 * versions per byte written. */
static void run_reads(const struct opts *o, tessera_fs *fs)
{
	uint8_t *buf = calloc(1, READ_SPAN);
	double base = 0;

	printf("Reads of a versioned file (%u KiB, one process) with unmerged versions of "
	       "%d 8-byte regions each:\n", READ_SPAN >> 10, VREGIONS);
	for (int i = 0; i < o->nversions; i++) {
		uint64_t k = o->versions[i];
		tessera_file *f = fresh_versioned(fs, o);
		struct tessera_version_state vs;
		double per[MAX_LIST], mean, half;
		int64_t log;

		check(fs, (int)tessera_pwrite(f, buf, READ_SPAN, 0) == (int)READ_SPAN ? 0 : -EIO,
		      "write " PATH);
		check(fs, tessera_fsync(f), "merge " PATH);
		log = vlog_bytes(o, f);
		small_versions(fs, f, k);
		log = log < 0 ? -1 : vlog_bytes(o, f) - log;
		check(fs, tessera_version_state(f, &vs), "version state of " PATH);
		for (int r = 0; r < o->reps; r++) {
			per[r] = time_reads(fs, f, buf);
			printf("readrow %llu %d %.9f %u %lld %llu\n", (unsigned long long)k, r, per[r],
			       vs.unmerged, (long long)log,
			       (unsigned long long)(k * VREGIONS * 8));
		}
		mean_ci(per, o->reps, &mean, &half);
		base = i == 0 ? mean : base;
		printf("  %5llu versions (%u unmerged): %8.3f ms ± %.3f per read, %.2fx the first",
		       (unsigned long long)k, vs.unmerged, mean * 1e3, half * 1e3, mean / base);
		if (log >= 0 && k)
			printf("; log %lld bytes, %.2f per byte written", (long long)log,
			       (double)log / (double)(k * VREGIONS * 8));
		printf("\n");
		fflush(stdout);
		check(fs, tessera_close(f), "close " PATH);
	}
	free(buf);
}

/* The log's bytes per byte written for a contiguous and a noncontiguous
 * 32 KiB write, before and after the merge. */
static void run_storage(const struct opts *o, tessera_fs *fs)
{
	static const char *const what[2] = { "contiguous", "noncontiguous" };
	uint64_t bytes = o->count * o->size;
	uint8_t *buf = calloc(1, bytes);

	printf("Log storage (the objects' .vlog files) of one %llu-byte write:\n",
	       (unsigned long long)bytes);
	for (int nc = 0; nc < 2; nc++) {
		struct point pt = { nc ? 2 : 0, M_VERSION, o->count, o->size, o->spacing };
		int64_t disp;
		struct tdl_dataloop *ft = file_type(&pt, 1, 0, &disp);
		tessera_file *f = fresh_versioned(fs, o);
		int64_t before = vlog_bytes(o, f), after, merged;

		if (tessera_write_dtype(f, buf, bytes, NULL, ft, disp, 0) != (ssize_t)bytes)
			check(fs, -EIO, "write " PATH);
		after = vlog_bytes(o, f);
		check(fs, tessera_fsync(f), "merge " PATH);
		merged = vlog_bytes(o, f);
		printf("storagerow %s %llu %lld %lld\n", what[nc], (unsigned long long)bytes,
		       (long long)(after - before), (long long)merged);
		printf("  %-13s: log grew %lld bytes (%.2f per byte written); %lld bytes after "
		       "the merge\n", what[nc], (long long)(after - before),
		       (double)(after - before) / (double)bytes, (long long)merged);
		check(fs, tessera_close(f), "close " PATH);
		tdl_free(ft);
	}
	free(buf);
}

/* Reads and storage in a child of their own (see fresh_file). */
static void run_single(const struct opts *o)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		tessera_fs *fs = connect_or_die(o);

		if (o->reads)
			run_reads(o, fs);
		if (o->storage_dir)
			run_storage(o, fs);
		tessera_unlink(fs, PATH);
		tessera_disconnect(fs);
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the %s run failed", "reads/storage", 0);
}

/* ---------------------------------------------------------- arguments */

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " -c CONFIG [-p PROCS] [-n COUNT] [-s SIZE] [-g SPACING]\n"
		"    [-i ITERS] [-r REPS] [-a CASE[,CASE]] [-m METHOD[,METHOD]] [-S STRIP]\n"
		"    [-w WIDTH] [--sweep count|spacing|both] [--counts LIST] [--spacings LIST]\n"
		"    [--reads] [--versions LIST] [--storage DIR] [--no-writes]\n");
	exit(2);
}

/* A comma list of numbers into v (at most MAX_LIST). */
static int parse_list(const char *s, uint64_t *v)
{
	int n = 0;
	char *end;

	while (*s && n < MAX_LIST) {
		v[n++] = strtoull(s, &end, 0);
		if (end == s || (*end && *end != ','))
			usage();
		s = *end ? end + 1 : end;
	}
	return n;
}

/* A comma list of names into flags (names[i] given: flags[i] = 1). */
static void parse_names(const char *s, const char *const *names, int n, int *flags)
{
	char *copy = strdup(s), *save, *tok;

	memset(flags, 0, sizeof(int) * (size_t)n);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i = 0;

		while (i < n && strcmp(tok, names[i]))
			i++;
		if (i == n)
			usage();
		flags[i] = 1;
	}
	free(copy);
}

static int long_option(struct opts *o, const char *a, const char *v)
{
	if (!strcmp(a, "--reads"))
		o->reads = 1;
	else if (!strcmp(a, "--no-writes"))
		o->writes = 0;
	else if (!v)
		usage();
	else if (!strcmp(a, "--sweep"))
		o->sweep = v;
	else if (!strcmp(a, "--counts"))
		o->ncounts = parse_list(v, o->counts);
	else if (!strcmp(a, "--spacings"))
		o->nspacings = parse_list(v, o->spacings);
	else if (!strcmp(a, "--versions"))
		o->nversions = parse_list(v, o->versions);
	else if (!strcmp(a, "--storage"))
		o->storage_dir = v;
	else
		usage();
	return !strcmp(a, "--reads") || !strcmp(a, "--no-writes") ? 0 : 1;
}

static void short_option(struct opts *o, const char *a, const char *v)
{
	if (!v || strlen(a) != 2)
		usage();
	switch (a[1]) {
	case 'c': o->config = v; break;
	case 'p': o->procs = atoi(v); break;
	case 'n': o->count = strtoull(v, NULL, 0); break;
	case 's': o->size = strtoull(v, NULL, 0); break;
	case 'g': o->spacing = strtoull(v, NULL, 0); break;
	case 'i': o->iters = atoi(v); break;
	case 'r': o->reps = atoi(v); break;
	case 'a': parse_names(v, case_names, 4, o->cases); break;
	case 'm': parse_names(v, method_names, M_COUNT, o->methods); break;
	case 'S': o->strip = strtoull(v, NULL, 0); break;
	case 'w': o->width = (uint32_t)atoi(v); break;
	default: usage();
	}
}

/* Defaults: the dissertation's point (16 processes, 4096 regions of 8
 * bytes, 32 KiB each, spacing 128; 64 KiB strips over every daemon). */
static void parse_args(int argc, char **argv, struct opts *o)
{
	static const uint64_t counts[] = { 256, 1024, 4096 }, spacings[] = { 8, 128, 1024, 4096 };
	static const uint64_t versions[] = { 0, 10, 1000 };

	*o = (struct opts){ .sweep = "none", .procs = 16, .iters = 4, .reps = 3,
			    .cases = { 1, 1, 1, 1 }, .methods = { 1, 1, 1 }, .writes = 1,
			    .count = 4096, .size = 8, .spacing = 128, .strip = 64 << 10 };
	memcpy(o->counts, counts, sizeof(counts));
	o->ncounts = 3;
	memcpy(o->spacings, spacings, sizeof(spacings));
	o->nspacings = 4;
	memcpy(o->versions, versions, sizeof(versions));
	o->nversions = 3;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strncmp(argv[i], "--", 2))
			i += long_option(o, argv[i], v);
		else if (argv[i][0] == '-')
			short_option(o, argv[i], v), i++;
		else
			usage();
	}
	if (!o->config || o->procs < 1 || o->procs > MAX_PROCS || o->iters < 1 || o->reps < 1 ||
	    o->reps > MAX_LIST || o->size < 2 || !o->count || !o->ncounts || !o->nversions)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o;

	parse_args(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.writes)
		run_writes(&o);
	if (o.reads || o.storage_dir)
		run_single(&o);
	return 0;
}
