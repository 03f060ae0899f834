/* data.c - cp (local <-> Tessera, in 8 MiB blocks, with a progress bar on
 * a terminal) and cat. */
#include <dirent.h>
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
	int borrowed;           /* fd is standard input or output: not ours */
	tessera_file *f;        /* Tessera */
};

/* A single file, or a tree (-r: directories too, modes kept exactly). */
enum cp_tree { CP_FILE, CP_TREE };

/* One cp command's state. */
struct cp {
	enum cp_tree tree;
	int quiet;              /* -q: no summary, no progress bar */
	char *buf;              /* TOOL_BLOCK bytes */
	uint64_t bytes, files;  /* copied so far */
	double start, last;     /* when it began; the progress bar drawn last */
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

/* Open the source; *size is its size (for the progress bar), *mode its
 * permission bits (what -r gives the copy). Standard input is already open. */
static int open_src(struct tool *t, struct end *e, uint64_t *size, mode_t *mode)
{
	struct tessera_stat tst;
	struct stat st;
	int rc;

	*mode = 0666;
	if (e->tessera) {
		rc = tessera_open(t->fs, e->name, O_RDONLY, 0, NULL, &e->f);
		if (!rc)
			rc = tessera_fstat(e->f, &tst);
		if (rc)
			return tool_fserr(t, rc);
		*size = tst.size;
		*mode = tst.mode & 07777;
		return 0;
	}
	if (!e->borrowed)
		e->fd = open(e->name, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return tool_err(t, -errno, "open %s: %s", e->name, strerror(errno));
	if (fstat(e->fd, &st))
		return tool_err(t, -errno, "stat %s: %s", e->name, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tool_err(t, -EISDIR, "read %s: %s (use cp -r)", e->name, strerror(EISDIR));
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	*mode = st.st_mode & 07777;
	return 0;
}

/* Open (create or truncate) the destination with `mode`; a local file the
 * copy made or truncated is given `mode` exactly when `exact` (cp -r
 * preserves modes), else the umask applies as for any new file. */
static int open_dst(struct tool *t, struct end *e, mode_t mode, enum cp_tree tree)
{
	int rc;

	if (e->tessera) {
		if (tree == CP_FILE)
			mode &= ~t->umask;
		rc = tessera_open(t->fs, e->name, O_WRONLY | O_CREAT | O_TRUNC, mode, NULL, &e->f);
		return rc ? tool_fserr(t, rc) : 0;
	}
	if (e->borrowed)
		return 0;
	e->fd = open(e->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (e->fd < 0)
		return tool_err(t, -errno, "open %s: %s", e->name, strerror(errno));
	if (tree == CP_TREE && fchmod(e->fd, mode))
		return tool_err(t, -errno, "chmod %s: %s", e->name, strerror(errno));
	return 0;
}

/* Close; for a destination, make the data durable first. Standard input
 * and output stay open. */
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
	} else if (!e->tessera && e->fd >= 0 && !e->borrowed) {
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

/* One operand as a copy's end: tessera:PATH, `-` (standard input for the
 * source, output for the destination) or a local path. */
static void cp_end(char *op, struct end *e, int fd)
{
	e->tessera = tool_tpath(op) != NULL;
	e->name = e->tessera ? tool_path(op) : op;
	if (!e->tessera && !strcmp(op, "-")) {
		e->borrowed = 1;
		e->fd = fd;
		e->name = fd == STDIN_FILENO ? "standard input" : "standard output";
	}
}

/* A copy's two ends from its operands; connect when either is in Tessera. */
static int cp_operands(struct tool *t, const struct tool_opts *o, struct end *src,
		       struct end *dst)
{
	if (o->nops != 2)
		return tool_usage(t, "expected SRC and DST, got %d operand(s)", o->nops);
	if (!strcmp(o->ops[0], "-") && !strcmp(o->ops[1], "-"))
		return tool_usage(t, "'-' given twice (one end must be a file)");
	cp_end(o->ops[0], src, STDIN_FILENO);
	cp_end(o->ops[1], dst, STDOUT_FILENO);
	if (o->flags['r'] && (src->borrowed || dst->borrowed))
		return tool_usage(t, "-r copies a directory tree, not standard input or output");
	return src->tessera || dst->tessera ? tool_connect(t) : 0;
}

/* Like cp(1): a directory as the target means "into it" (*joined: the
 * name made, which the caller frees). */
static int cp_into_dir(struct tool *t, const struct end *src, struct end *dst, char **joined)
{
	char base[256];

	if (src->borrowed || dst->borrowed || !is_dir(t, dst->name, dst->tessera))
		return 0;
	tool_basename(src->name, base, sizeof(base));
	*joined = tool_join(dst->name, base);
	if (!*joined)
		return tool_err(t, -ENOMEM, "out of memory");
	dst->name = *joined;
	return 0;
}

/* A copy into Tessera stopped by a failed write (its own message printed
 * already, about that call): say what the file now holds for the whole
 * copy. It began from an empty file (opened with O_TRUNC) and was written
 * in order, so every byte before the failed call's offset is in place. */
static void cp_stopped(struct tool *t, const struct end *dst)
{
	struct tessera_write_outcome w;
	char now[48];

	if (!dst->tessera || !dst->f || tessera_write_outcome(dst->f, &w))
		return;
	if (w.size_now < 0)
		snprintf(now, sizeof(now), "unknown");
	else
		snprintf(now, sizeof(now), "%" PRId64 " bytes", w.size_now);
	tool_err(t, 0, "%s: copy stopped; %" PRIu64 " bytes known written by this copy "
		 "(bytes 0 to %" PRIu64 "); the file's size was 0 when the copy began and is now %s",
		 dst->name, w.offset + w.in_place, w.offset + w.in_place, now);
}

/* Every block of src to dst; c->bytes counts the bytes copied, c->last is
 * when the progress bar was drawn last (0: never). */
static int cp_blocks(struct tool *t, struct cp *c, struct end *src, struct end *dst,
		     uint64_t total)
{
	for (uint64_t off = 0;;) {
		ssize_t n = end_read(t, src, c->buf, TOOL_BLOCK, off);
		int rc;

		if (n <= 0)
			return (int)n;
		rc = end_write(t, dst, c->buf, (size_t)n, off);
		if (rc) {
			cp_stopped(t, dst);
			return rc;
		}
		off += (uint64_t)n;
		c->bytes += (uint64_t)n;
		if (t->stderr_tty && !c->quiet && tp_mono_s() - c->last >= 0.1) {
			progress(off, total > off ? total : off, c->start, 0);
			c->last = tp_mono_s();
		}
	}
}

/* One file, src to dst (names set, nothing open); closes both. */
static int cp_file(struct tool *t, struct cp *c, struct end *src, struct end *dst)
{
	uint64_t total = 0;
	mode_t mode = 0;
	int rc;

	rc = open_src(t, src, &total, &mode);
	if (!rc)
		rc = open_dst(t, dst, c->tree == CP_TREE ? mode : 0666, c->tree);
	if (!rc)
		rc = cp_blocks(t, c, src, dst, total);
	rc = end_close(t, dst, 1, rc);
	end_close(t, src, 0, rc);
	if (!rc)
		c->files++;
	return rc;
}

/* ------------------------------------------------------------ cp -r */

/* A directory's entries, local or Tessera, one at a time. */
struct walk {
	int tessera;
	const char *path;
	DIR *d;                         /* local */
	struct tessera_dirent *ents;    /* Tessera: one page */
	uint32_t n, i;
	int eof;
};

static int walk_open(struct tool *t, struct walk *w, const char *path, int tessera)
{
	memset(w, 0, sizeof(*w));
	w->tessera = tessera;
	w->path = path;
	if (tessera) {
		w->ents = malloc(TOOL_PAGE * sizeof(*w->ents));
		return w->ents ? 0 : tool_err(t, -ENOMEM, "out of memory");
	}
	w->d = opendir(path);
	return w->d ? 0 : tool_err(t, -errno, "open %s: %s", path, strerror(errno));
}

/* The next entry's name and kind (S_IFDIR, S_IFREG or another local
 * type); 1 when there is one, 0 at the end, or a negative errno. */
static int walk_next(struct tool *t, struct walk *w, char name[256], mode_t *type)
{
	if (!w->tessera) {
		struct dirent *de;
		struct stat st;
		char *p;

		do {
			errno = 0;
			de = readdir(w->d);
		} while (de && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")));
		if (!de)
			return errno ? tool_err(t, -errno, "read %s: %s", w->path, strerror(errno)) : 0;
		snprintf(name, 256, "%s", de->d_name);
		p = tool_join(w->path, name);
		if (!p)
			return tool_err(t, -ENOMEM, "out of memory");
		if (lstat(p, &st)) {
			int e = errno;

			free(p);
			return tool_err(t, -e, "stat %s/%s: %s", w->path, name, strerror(e));
		}
		free(p);
		*type = st.st_mode & S_IFMT;
		return 1;
	}
	if (w->i == w->n) {
		char cursor[256] = "";
		int rc;

		if (w->eof)
			return 0;
		if (w->n)
			snprintf(cursor, sizeof(cursor), "%s", w->ents[w->n - 1].name);
		rc = tessera_readdir(t->fs, w->path, cursor, w->ents, TOOL_PAGE, &w->n, &w->eof);
		if (rc)
			return tool_fserr(t, rc);
		w->i = 0;
		if (!w->n)
			return 0;
	}
	snprintf(name, 256, "%s", w->ents[w->i].name);
	*type = w->ents[w->i].mode & S_IFMT;
	w->i++;
	return 1;
}

static void walk_close(struct walk *w)
{
	if (w->d)
		closedir(w->d);
	free(w->ents);
}

static int dir_mode(struct tool *t, const char *path, int tessera, mode_t *mode)
{
	struct tessera_stat tst;
	struct stat st;
	int rc;

	if (tessera) {
		rc = tessera_stat(t->fs, path, &tst);
		if (rc)
			return tool_fserr(t, rc);
		*mode = tst.mode & 07777;
		return 0;
	}
	if (stat(path, &st))
		return tool_err(t, -errno, "stat %s: %s", path, strerror(errno));
	*mode = st.st_mode & 07777;
	return 0;
}

/* Make directory `path` with `mode` exactly; an existing directory is
 * reused (cp -r into a tree that is already there). */
static int make_dir(struct tool *t, const char *path, int tessera, mode_t mode)
{
	int rc;

	if (tessera) {
		rc = tessera_mkdir(t->fs, path, mode);
		if (rc == -EEXIST && is_dir(t, path, 1))
			return 0;
		return rc ? tool_fserr(t, rc) : 0;
	}
	if (mkdir(path, 0700) && (errno != EEXIST || !is_dir(t, path, 0)))
		return tool_err(t, -errno, "mkdir %s: %s", path, strerror(errno));
	return 0;
}

static int cp_tree(struct tool *t, struct cp *c, const char *from, int ftess, const char *to,
		   int ttess);

/* A symbolic link is copied as a link with the same target (as cp -r
 * does), never followed. */
static int cp_symlink(struct tool *t, const char *from, int ftess, const char *to, int ttess)
{
	char target[4097];
	ssize_t n;
	int rc;

	n = ftess ? tessera_readlink(t->fs, from, target, sizeof(target) - 1)
		  : readlink(from, target, sizeof(target) - 1);
	if (n < 0)
		return ftess ? tool_fserr(t, (int)n)
			     : tool_err(t, -errno, "readlink %s: %s", from, strerror(errno));
	if ((size_t)n >= sizeof(target) - 1)
		return tool_err(t, -ENAMETOOLONG, "readlink %s: target too long", from);
	target[n] = '\0';
	if (ttess) {
		rc = tessera_symlink(t->fs, target, to);
		return rc ? tool_fserr(t, rc) : 0;
	}
	if (symlink(target, to))
		return tool_err(t, -errno, "symlink %s: %s", to, strerror(errno));
	return 0;
}

/* One entry of a directory being copied. */
static int cp_entry(struct tool *t, struct cp *c, const char *from, int ftess, const char *to,
		    int ttess, mode_t type)
{
	struct end src = { .name = from, .tessera = ftess, .fd = -1 };
	struct end dst = { .name = to, .tessera = ttess, .fd = -1 };

	if (type == S_IFDIR)
		return cp_tree(t, c, from, ftess, to, ttess);
	if (type == S_IFLNK)
		return cp_symlink(t, from, ftess, to, ttess);
	if (type != S_IFREG)
		return tool_err(t, -EINVAL, "%s: not a regular file, directory or symbolic link:"
				" not copied", from);
	return cp_file(t, c, &src, &dst);
}

/* Copy directory `from` to `to` (made, or reused), its mode last so that a
 * read-only directory is filled first. Goes on after a failed entry;
 * returns the first failure. */
static int cp_tree(struct tool *t, struct cp *c, const char *from, int ftess, const char *to,
		   int ttess)
{
	struct walk w;
	char name[256];
	mode_t mode = 0, type = 0;
	int rc, r, first = 0;

	rc = dir_mode(t, from, ftess, &mode);
	if (!rc)
		rc = make_dir(t, to, ttess, ttess ? mode : 0700);
	if (!rc)
		rc = walk_open(t, &w, from, ftess);
	if (rc)
		return rc;
	while ((r = walk_next(t, &w, name, &type)) > 0) {
		char *f = tool_join(from, name), *d = tool_join(to, name);

		rc = f && d ? cp_entry(t, c, f, ftess, d, ttess, type)
			    : tool_err(t, -ENOMEM, "out of memory");
		if (rc && !first)
			first = rc;
		free(f);
		free(d);
	}
	walk_close(&w);
	if (r < 0 && !first)
		first = r;
	if (!ttess && chmod(to, mode) && !first)
		first = tool_err(t, -errno, "chmod %s: %s", to, strerror(errno));
	return first;
}

/* `path` made absolute and canonical as far as it exists (a local copy's
 * target need not exist yet: its parent must). Malloc'd, or NULL. */
static char *local_canon(const char *path)
{
	char *r = realpath(path, NULL), *dir, *p, base[256];

	if (r)
		return r;
	dir = strdup(path);
	if (!dir)
		return NULL;
	tool_basename(path, base, sizeof(base));
	p = strrchr(dir, '/');
	if (p)
		*(p == dir ? p + 1 : p) = '\0';
	r = realpath(p ? dir : ".", NULL);
	free(dir);
	if (!r)
		return NULL;
	p = tool_join(r, base);
	free(r);
	return p;
}

/* A tree copied into itself would never end: refuse a target inside the
 * source (same side, after canonicalising local paths). */
static int cp_loop_check(struct tool *t, const struct end *src, const struct end *dst)
{
	char *s, *d;
	size_t n;
	int inside;

	if (src->tessera != dst->tessera)
		return 0;
	s = src->tessera ? strdup(src->name) : local_canon(src->name);
	d = dst->tessera ? strdup(dst->name) : local_canon(dst->name);
	n = s ? strlen(s) : 0;
	inside = s && d && !strncmp(s, d, n) && (d[n] == '\0' || d[n] == '/' || !strcmp(s, "/"));
	free(s);
	free(d);
	if (inside)
		return tool_err(t, -EINVAL, "cannot copy directory %s into itself (%s)", src->name,
				dst->name);
	return 0;
}

static int cp_recursive(struct tool *t, struct cp *c, struct end *src, struct end *dst)
{
	int rc;

	if (!is_dir(t, src->name, src->tessera))
		return cp_file(t, c, src, dst);
	rc = cp_loop_check(t, src, dst);
	return rc ? rc : cp_tree(t, c, src->name, src->tessera, dst->name, dst->tessera);
}

/* On stderr: stdout may be the copy itself (cp SRC -). */
static void cp_summary(struct tool *t, const struct cp *c)
{
	double el = tp_mono_s() - c->start;

	if (t->stderr_tty)
		progress(c->bytes, c->bytes, c->start, 1);
	fprintf(stderr, "copied %" PRIu64 " bytes in %.3f s (%.1f MB/s)", c->bytes, el,
		el > 0 ? (double)c->bytes / 1e6 / el : 0.0);
	if (c->tree == CP_TREE)
		fprintf(stderr, ", %" PRIu64 " file%s", c->files, c->files == 1 ? "" : "s");
	fputc('\n', stderr);
}

int cmd_cp(struct tool *t, int argc, char **argv)
{
	struct tool_opts o;
	struct end src = { .fd = -1 }, dst = { .fd = -1 };
	struct cp c = { .tree = CP_FILE };
	char *joined = NULL;
	int rc;

	rc = tool_opts_parse(t, argc, argv, "qrR", "", &o);
	if (!rc)
		rc = cp_operands(t, &o, &src, &dst);
	if (rc)
		goto out;
	c.quiet = o.flags['q'] > 0;
	c.tree = o.flags['r'] || o.flags['R'] ? CP_TREE : CP_FILE;
	c.buf = malloc(TOOL_BLOCK);
	if (!c.buf) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	rc = cp_into_dir(t, &src, &dst, &joined);
	if (rc)
		goto out;
	c.start = tp_mono_s();
	rc = c.tree == CP_TREE ? cp_recursive(t, &c, &src, &dst) : cp_file(t, &c, &src, &dst);
	if (!rc && !c.quiet)
		cp_summary(t, &c);
out:
	if (rc && t->stderr_tty && c.last > 0)
		fputc('\n', stderr);
	free(joined);
	free(c.buf);
	tool_opts_free(&o);
	return rc;
}

/* cat of one file (as of snapshot `snap`, if not NULL). */
static int cat_one(struct tool *t, char *arg, char *buf, const char *snap)
{
	struct end e = { .name = tool_path(arg), .tessera = 1, .fd = -1 };
	struct end out = { .name = "standard output", .fd = STDOUT_FILENO };
	uint64_t off = 0;
	int rc;

	rc = snap ? tessera_open_snapshot(t->fs, e.name, snap, &e.f)
		  : tessera_open(t->fs, e.name, O_RDONLY, 0, NULL, &e.f);
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

	rc = tool_start(t, argc, argv, "", "S", &o, "no file given");
	if (rc)
		goto out;
	buf = malloc(TOOL_BLOCK);
	if (!buf) {
		rc = tool_err(t, -ENOMEM, "out of memory");
		goto out;
	}
	fflush(stdout);
	for (int i = 0; i < o.nops; i++) {
		rc = cat_one(t, o.ops[i], buf, o.vals['S']);
		if (rc && !first)
			first = rc;
	}
	rc = first;
out:
	free(buf);
	tool_opts_free(&o);
	return rc;
}
