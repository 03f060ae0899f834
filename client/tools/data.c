/* data.c - cp (local <-> Tessera, in 8 MiB blocks, with a progress bar on
 * a terminal) and cat. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"
#include "tp_clock.h"

/* One side of a copy: a local file or a Tessera file. */
struct end {
	const char *name;       /* for messages: the local or Tessera path */
	int tessera;
	int fd;                 /* local */
	tessera_file *f;        /* Tessera */
};

/* Up to `len` bytes at `off`; fewer only at the end of the file. */
static ssize_t end_read(struct tool *t, struct end *e, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	if (e->tessera) {
		ssize_t n = tessera_pread(e->f, buf, len, off);

		return n < 0 ? tool_fserr(t, (int)n) : n;
	}
	while (got < len) {
		ssize_t n = read(e->fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tool_err(t, -errno, "read %s: %s", e->name, strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int end_write(struct tool *t, struct end *e, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;

		if (e->tessera) {
			n = tessera_pwrite(e->f, (const char *)buf + done, len - done, off + done);
			if (n < 0)
				return tool_fserr(t, (int)n);
			if (n == 0)
				return tool_err(t, -EIO, "write %s: no progress at offset %" PRIu64,
						e->name, off + done);
		} else {
			n = write(e->fd, (const char *)buf + done, len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return tool_err(t, -errno, "write %s: %s", e->name, strerror(errno));
		}
		done += (size_t)n;
	}
	return 0;
}

/* Open the source; *size is its size (for the progress bar). */
static int open_src(struct tool *t, struct end *e, uint64_t *size)
{
	struct tessera_stat tst;
	struct stat st;
	int rc;

	if (e->tessera) {
		rc = tessera_open(t->fs, e->name, O_RDONLY, 0, NULL, &e->f);
		if (!rc)
			rc = tessera_fstat(e->f, &tst);
		if (rc)
			return tool_fserr(t, rc);
		*size = tst.size;
		return 0;
	}
	e->fd = open(e->name, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return tool_err(t, -errno, "open %s: %s", e->name, strerror(errno));
	if (fstat(e->fd, &st))
		return tool_err(t, -errno, "stat %s: %s", e->name, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tool_err(t, -EISDIR, "read %s: %s", e->name, strerror(EISDIR));
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	return 0;
}

static int open_dst(struct tool *t, struct end *e)
{
	int rc;

	if (e->tessera) {
		rc = tessera_open(t->fs, e->name, O_WRONLY | O_CREAT | O_TRUNC, 0666 & ~t->umask,
				  NULL, &e->f);
		return rc ? tool_fserr(t, rc) : 0;
	}
	e->fd = open(e->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (e->fd < 0)
		return tool_err(t, -errno, "open %s: %s", e->name, strerror(errno));
	return 0;
}

/* Close; for a destination, make the data durable first. */
static int end_close(struct tool *t, struct end *e, int dst, int rc)
{
	int r;

	if (e->tessera && e->f) {
		if (dst && !rc) {
			r = tessera_fsync(e->f);
			if (r)
				rc = tool_fserr(t, r);
		}
		tessera_close(e->f);
		e->f = NULL;
	} else if (!e->tessera && e->fd >= 0) {
		if (close(e->fd) && dst && !rc)
			rc = tool_err(t, -errno, "close %s: %s", e->name, strerror(errno));
		e->fd = -1;
	}
	return rc;
}

/* Is `name` (local or Tessera) an existing directory? */
static int is_dir(struct tool *t, const char *name, int tessera)
{
	struct tessera_stat tst;
	struct stat st;

	if (tessera)
		return tessera_stat(t->fs, name, &tst) == 0 && S_ISDIR(tst.mode);
	return stat(name, &st) == 0 && S_ISDIR(st.st_mode);
}

static void progress(uint64_t done, uint64_t total, double start, int last)
{
	char d[32], s[32];
	double el = tp_mono_s() - start;
	double pct = total ? (double)done * 100.0 / (double)total : 100.0;
	int fill;

	if (pct > 100.0)
		pct = 100.0;
	fill = (int)(pct * 30 / 100);
	tool_human(done, d, sizeof(d));
	tool_human(total, s, sizeof(s));
	fprintf(stderr, "\r[%.*s%*s] %3.0f%% %8s / %-8s %8.1f MB/s", fill,
		"##############################", 30 - fill, "", pct, d, s,
		el > 0 ? (double)done / 1e6 / el : 0.0);
	if (last)
		fputc('\n', stderr);
	fflush(stderr);
}

/* A copy's two ends from its operands (tessera:// or local); connect when
 * either is in Tessera. */
static int cp_operands(struct tool *t, const struct tool_opts *o, struct end *src,
		       struct end *dst)
{
	if (o->nops != 2)
		return tool_usage(t, "expected SRC and DST, got %d operand(s)", o->nops);
	src->tessera = tool_tpath(o->ops[0]) != NULL;
	src->name = src->tessera ? tool_path(o->ops[0]) : o->ops[0];
	dst->tessera = tool_tpath(o->ops[1]) != NULL;
	dst->name = dst->tessera ? tool_path(o->ops[1]) : o->ops[1];
	return src->tessera || dst->tessera ? tool_connect(t) : 0;
}

/* Like cp(1): a directory as the target means "into it" (*joined: the
 * name made, which the caller frees). */
static int cp_into_dir(struct tool *t, const struct end *src, struct end *dst, char **joined)
{
	char base[256];

	if (!is_dir(t, dst->name, dst->tessera))
		return 0;
	tool_basename(src->name, base, sizeof(base));
	*joined = tool_join(dst->name, base);
	if (!*joined)
		return tool_err(t, -ENOMEM, "out of memory");
	dst->name = *joined;
	return 0;
}

/* Every block of src to dst; *off counts the bytes copied, *last is when
 * the progress bar was drawn last (0: never). */
static int cp_blocks(struct tool *t, struct end *src, struct end *dst, char *buf, uint64_t total,
		     double start, uint64_t *off, double *last)
{
	for (;;) {
		ssize_t n = end_read(t, src, buf, TOOL_BLOCK, *off);
		int rc;

		if (n <= 0)
			return (int)n;
		rc = end_write(t, dst, buf, (size_t)n, *off);
		if (rc)
			return rc;
		*off += (uint64_t)n;
		if (t->stderr_tty && tp_mono_s() - *last >= 0.1) {
			progress(*off, total > *off ? total : *off, start, 0);
			*last = tp_mono_s();
		}
	}
}

int cmd_cp(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct end src = { .fd = -1 }, dst = { .fd = -1 };
	char *buf = NULL, *joined = NULL;
	uint64_t total = 0, off = 0;
	double start, last = 0, el;
	int rc;

	rc = tool_opts_parse(t, argc, argv, "", "", &o);
	if (rc)
		goto out;
	rc = cp_operands(t, &o, &src, &dst);
	if (rc)
		goto out;
	buf = malloc(TOOL_BLOCK);
	if (!buf) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	rc = cp_into_dir(t, &src, &dst, &joined);
	if (!rc)
		rc = open_src(t, &src, &total);
	if (!rc)
		rc = open_dst(t, &dst);
	if (rc)
		goto out;
	start = tp_mono_s();
	rc = cp_blocks(t, &src, &dst, buf, total, start, &off, &last);
	if (!rc)
		rc = end_close(t, &dst, 1, 0);
	if (rc)
		goto out;
	el = tp_mono_s() - start;
	if (t->stderr_tty)
		progress(off, off, start, 1);
	printf("copied %" PRIu64 " bytes in %.3f s (%.1f MB/s)\n", off, el,
	       el > 0 ? (double)off / 1e6 / el : 0.0);
out:
	if (rc && t->stderr_tty && last > 0)
		fputc('\n', stderr);
	rc = end_close(t, &dst, 1, rc);
	end_close(t, &src, 0, rc);
	free(joined);
	free(buf);
	tool_opts_free(&o);
	return rc;
}

static int cat_one(struct tool *t, char *arg, char *buf)
{
	struct end e = { .name = tool_path(arg), .tessera = 1, .fd = -1 };
	struct end out = { .name = "standard output", .fd = STDOUT_FILENO };
	uint64_t off = 0;
	int rc;

	rc = tessera_open(t->fs, e.name, O_RDONLY, 0, NULL, &e.f);
	if (rc)
		return tool_fserr(t, rc);
	for (;;) {
		ssize_t n = end_read(t, &e, buf, TOOL_BLOCK, off);

		if (n <= 0) {
			rc = (int)n;
			break;
		}
		rc = end_write(t, &out, buf, (size_t)n, 0);
		if (rc)
			break;
		off += (uint64_t)n;
	}
	tessera_close(e.f);
	return rc;
}

int cmd_cat(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	char *buf = NULL;
	int rc, first = 0;

	rc = tool_start(t, argc, argv, "", "", &o, "no file given");
	if (rc)
		goto out;
	buf = malloc(TOOL_BLOCK);
	if (!buf) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	fflush(stdout);
	for (int i = 0; i < o.nops; i++) {
		rc = cat_one(t, o.ops[i], buf);
		if (rc && !first)
			first = rc;
	}
	rc = first;
out:
	free(buf);
	tool_opts_free(&o);
	return rc;
}
