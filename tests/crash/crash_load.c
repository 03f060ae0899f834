/*
 * crash_load.c - tessera-crash-load, the crash test's load generator.
 *
 *   tessera-crash-load CONFIG DIR LOG SEED
 *
 * Runs a mixed load under directory DIR until SIGTERM: creates, writes
 * (contiguous, list and datatype) each followed by fsync, renames (to a
 * new name or over another file), unlinks, symbolic links, and hard links
 * whose first name is then unlinked (the file moves to its second name). Names are never reused. After
 * each call the file system acknowledged, one line goes to LOG and is
 * fdatasync'd before the next call, so LOG is a lower bound of what must
 * survive any crash:
 *
 *   C path                          created (empty)
 *   W path seed off len             len bytes at off (synced)
 *   L path seed off len gap         3 regions of len bytes, gap apart
 *   D path seed off blk stride      a vector of 4 blocks (datatype write)
 *   R from to                       renamed (over `to` if it existed)
 *   U path                          unlinked
 *   S path target                   a symbolic link to target made (never
 *                                   touched again)
 *   H from to                       a hard link `to` of from's file made
 *                                   (the load then unlinks `from`: U)
 *   ? path                          a call on path failed: it may or may
 *                                   not have happened; path is not used
 *                                   again and the checker skips it
 *
 * Data bytes are crash_fill(seed, i) for the i-th byte of the call's
 * stream (crash.h), so the checker rebuilds them from the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crash.h"
#include "tdl.h"
#include "tessera.h"

#define MAX_LIVE 64

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

struct gen {
	tessera_fs *fs;
	int log;
	const char *dir;
	uint64_t rng;
	unsigned next_name;
	char live[MAX_LIVE][64];  /* files known to exist, all ops acknowledged */
	int nlive;
};

static uint64_t next(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static void logf_sync(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logf_sync(struct gen *g, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(g->log, line, (size_t)n) != n || fdatasync(g->log)) {
		perror("tessera-crash-load: log");
		exit(1);
	}
}

static void drop(struct gen *g, int i)
{
	g->live[i][0] = 0;
	memcpy(g->live[i], g->live[g->nlive - 1], sizeof(g->live[i]));
	g->nlive--;
}

/* A call on live file i failed: it may have happened; forget the name. */
static void uncertain(struct gen *g, int i)
{
	logf_sync(g, "? %s\n", g->live[i]);
	drop(g, i);
}

static void do_create(struct gen *g)
{
	struct tessera_layout l = { .strip_size = CRASH_STRIP };
	tessera_file *f;
	char path[64];

	if (g->nlive == MAX_LIVE)
		return;
	l.count = 1 + (uint32_t)(next(g) % tessera_ios_count(g->fs));
	snprintf(path, sizeof(path), "%s/f%u", g->dir, g->next_name++);
	if (tessera_open(g->fs, path, O_CREAT | O_EXCL | O_RDWR, 0644, &l, &f)) {
		logf_sync(g, "? %s\n", path);
		return;
	}
	tessera_close(f);
	logf_sync(g, "C %s\n", path);
	snprintf(g->live[g->nlive++], sizeof(g->live[0]), "%s", path);
}

/* One write of each kind, then fsync; logged once synced. */
static void do_write(struct gen *g, int i, int kind)
{
	static uint8_t buf[4 * CRASH_MAX_LEN];
	uint64_t seed = next(g), off = next(g) % CRASH_MAX_OFF;
	uint64_t len = 1 + next(g) % CRASH_MAX_LEN, gap = 1 + next(g) % CRASH_MAX_LEN;
	struct tdl_dataloop *b = NULL, *v = NULL;
	tessera_file *f;
	ssize_t want, got = -1;

	if (tessera_open(g->fs, g->live[i], O_RDWR, 0, NULL, &f)) {
		uncertain(g, i);
		return;
	}
	want = (ssize_t)(kind == 0 ? len : kind == 1 ? 3 * len : 4 * len);
	for (ssize_t k = 0; k < want; k++)
		buf[k] = crash_fill(seed, (uint64_t)k);
	if (kind == 0) {
		got = tessera_pwrite(f, buf, len, off);
	} else if (kind == 1) {
		struct iovec mem = { buf, (size_t)want };
		uint64_t offs[3] = { off, off + len + gap, off + 2 * (len + gap) };
		uint64_t lens[3] = { len, len, len };

		got = tessera_write_list(f, &mem, 1, offs, lens, 3);
	} else if (!tdl_bytes(1, &b) &&
		   !tdl_vector(4, (int64_t)len, (int64_t)(len + gap), b, &v)) {
		got = tessera_write_dtype(f, buf, (uint64_t)want, NULL, v, (int64_t)off, 0);
	}
	tdl_free(v);
	tdl_free(b);
	if (got != want || tessera_fsync(f)) {
		tessera_close(f);
		uncertain(g, i);
		return;
	}
	tessera_close(f);
	if (kind == 0)
		logf_sync(g, "W %s %llu %llu %llu\n", g->live[i], (unsigned long long)seed,
			  (unsigned long long)off, (unsigned long long)len);
	else
		logf_sync(g, "%c %s %llu %llu %llu %llu\n", kind == 1 ? 'L' : 'D', g->live[i],
			  (unsigned long long)seed, (unsigned long long)off,
			  (unsigned long long)len, (unsigned long long)(kind == 1 ? gap : len + gap));
}

static void do_rename(struct gen *g, int i)
{
	char to[64];
	int j = -1;

	if (g->nlive > 1 && next(g) % 3 == 0) {   /* over another live file */
		j = (int)(next(g) % (uint64_t)g->nlive);
		if (j == i)
			j = -1;
	}
	if (j >= 0)
		snprintf(to, sizeof(to), "%s", g->live[j]);
	else
		snprintf(to, sizeof(to), "%s/f%u", g->dir, g->next_name++);
	if (tessera_rename(g->fs, g->live[i], to)) {
		logf_sync(g, "? %s\n? %s\n", g->live[i], to);
		if (j >= 0 && i < j) {
			drop(g, j);
			drop(g, i);
		} else {
			drop(g, i);
			if (j >= 0)
				drop(g, j);
		}
		return;
	}
	logf_sync(g, "R %s %s\n", g->live[i], to);
	snprintf(g->live[i], sizeof(g->live[i]), "%s", to);
	if (j >= 0)
		drop(g, j);
}

static void do_unlink(struct gen *g, int i)
{
	if (tessera_unlink(g->fs, g->live[i])) {
		uncertain(g, i);
		return;
	}
	logf_sync(g, "U %s\n", g->live[i]);
	drop(g, i);
}

/* A symbolic link to live file i (relative: its last component), or a
 * second name of it after which the first goes (the objects must stay). */
static void do_link(struct gen *g, int i)
{
	char to[64];
	const char *base = strrchr(g->live[i], '/') + 1;

	if (next(g) % 2) {
		snprintf(to, sizeof(to), "%s/s%u", g->dir, g->next_name++);
		if (tessera_symlink(g->fs, base, to))
			logf_sync(g, "? %s\n", to);
		else
			logf_sync(g, "S %s %s\n", to, base);
		return;
	}
	snprintf(to, sizeof(to), "%s/f%u", g->dir, g->next_name++);
	if (tessera_link(g->fs, g->live[i], to)) {
		logf_sync(g, "? %s\n? %s\n", g->live[i], to);
		drop(g, i);
		return;
	}
	logf_sync(g, "H %s %s\n", g->live[i], to);
	if (tessera_unlink(g->fs, g->live[i]))
		logf_sync(g, "? %s\n", g->live[i]);
	else
		logf_sync(g, "U %s\n", g->live[i]);
	/* either way the file lives on as `to` (an uncertain first name is
	 * never used again) */
	snprintf(g->live[i], sizeof(g->live[i]), "%s", to);
}

int main(int argc, char **argv)
{
	struct gen g = { 0 };
	char err[512];
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: tessera-crash-load CONFIG DIR LOG SEED\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	g.dir = argv[2];
	g.rng = strtoull(argv[4], NULL, 0) | 1;
	g.log = open(argv[3], O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (g.log < 0) {
		perror(argv[3]);
		return 1;
	}
	if ((rc = tessera_connect(argv[1], &g.fs, err, sizeof(err)))) {
		fprintf(stderr, "tessera-crash-load: connect: %s\n", err);
		return 1;
	}
	/* The daemon may be down already: retry until the directory exists. */
	while ((rc = tessera_mkdir(g.fs, g.dir, 0755)) && rc != -EEXIST && !stopping) {
		fprintf(stderr, "tessera-crash-load: mkdir %s: %s (retrying)\n", g.dir,
			tessera_errmsg(g.fs));
		usleep(100000);
	}
	while (!stopping) {
		uint64_t op = next(&g) % 11;
		int i = g.nlive ? (int)(next(&g) % (uint64_t)g.nlive) : -1;

		if (i < 0 || op < 3)
			do_create(&g);
		else if (op < 7)
			do_write(&g, i, (int)(op - 3) % 3);
		else if (op < 9)
			do_rename(&g, i);
		else if (op < 10)
			do_unlink(&g, i);
		else
			do_link(&g, i);
	}
	tessera_disconnect(g.fs);
	close(g.log);
	return 0;
}
