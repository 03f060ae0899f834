/*
 * ios_faults.c - a disk that fails chosen calls of the disk it wraps (the
 * spec's grammar is in ios_disk.h). It knows each descriptor's object,
 * file and path from the open that made it, so rules on one object reach
 * the calls made through its descriptors, and a lost object's file can be
 * removed whatever call loses it. Rules count the calls on objects' data
 * and counters only: the checksums beside them and the store's own files
 * are the store's bookkeeping, which a spec does not aim at.
 *
 * The storage daemon's disk workers call it from several threads: every
 * call holds the disk's lock, so rules count calls in the order they are
 * made; only the sleep of a slow rule is outside it, so calls on other
 * objects go on meanwhile.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ios_disk.h"

enum fault_call {
	FC_OPEN, FC_READ, FC_WRITE, FC_STAT, FC_TRUNCATE, FC_SYNC, FC_LOSE, FC_CORRUPT, FC_SLOW
};

static const char *const call_names[] = {
	[FC_OPEN] = "open", [FC_READ] = "read", [FC_WRITE] = "write", [FC_STAT] = "stat",
	[FC_TRUNCATE] = "truncate", [FC_SYNC] = "sync", [FC_LOSE] = "lose",
	[FC_CORRUPT] = "corrupt", [FC_SLOW] = "slow",
};

static const struct { const char *name; int code; } errno_names[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
	{ "EFBIG", EFBIG }, { "EACCES", EACCES }, { "ENOMEM", ENOMEM }, { "EMFILE", EMFILE },
};

struct fault_rule {
	enum fault_call call;
	int has_handle;        /* count only calls on `handle` */
	uint64_t handle;
	uint64_t nth;          /* fail the nth matching call (1-based); 0 (lose
				* only): lose objects at their first call */
	int onward;            /* and every matching call after it */
	int err;               /* negative errno */
	unsigned ms;           /* slow: the delay */
	uint64_t seen;         /* matching calls so far */
};

/* What an open descriptor is: from the open that made it. */
struct fault_fd {
	uint64_t handle;
	enum ios_file file;
	char *path;            /* NULL: not open through this disk */
};

struct fault_disk {
	struct ios_disk base;  /* first: the ops get &base */
	pthread_mutex_t mu;    /* held by every call (see the top) */
	struct ios_disk *inner;
	struct fault_rule *rules;
	size_t n_rules;
	struct fault_fd *fds;  /* indexed by descriptor, n_fds long */
	size_t n_fds;
	uint64_t *lost;        /* objects lost so far (each is lost once) */
	size_t n_lost;
};

static struct fault_disk *fault_of(struct ios_disk *d)
{
	return (struct fault_disk *)d;
}

static const struct fault_fd *fd_info(const struct fault_disk *f, int fd)
{
	return fd >= 0 && (size_t)fd < f->n_fds && f->fds[fd].path ? &f->fds[fd] : NULL;
}

/* Rules see an object's data and counters; lose and corrupt its data. */
static int rule_matches(const struct fault_rule *r, enum fault_call call,
			const struct fault_fd *obj)
{
	if (obj && obj->file != IOS_FILE_DATA &&
	    (obj->file != IOS_FILE_COUNTERS || call == FC_LOSE || call == FC_CORRUPT))
		return 0;
	return r->call == call && (!r->has_handle || (obj && obj->handle == r->handle));
}

/* Count a call against the rules of its kind: the error of the first rule
 * that fires, or 0. */
static int fire(struct fault_disk *f, enum fault_call call, const struct fault_fd *obj)
{
	int rc = 0;

	for (size_t i = 0; i < f->n_rules; i++) {
		struct fault_rule *r = &f->rules[i];

		if (!rule_matches(r, call, obj) || !r->nth)
			continue;
		r->seen++;
		if (!rc && (r->seen == r->nth || (r->onward && r->seen > r->nth)))
			rc = r->err;
	}
	return rc;
}

/* The object is lost: its data file is removed, as a disk might lose it,
 * and the calls after pass (the store knows what it should hold and says
 * so). An object is lost once: one made again later is not touched. */
static int lose(struct fault_disk *f, const struct fault_fd *obj)
{
	uint64_t *l;

	for (size_t i = 0; i < f->n_lost; i++)
		if (f->lost[i] == obj->handle)
			return 0;
	if (!(l = realloc(f->lost, (f->n_lost + 1) * sizeof(*l))))
		return -ENOMEM;
	f->lost = l;
	l[f->n_lost++] = obj->handle;
	(void)f->inner->ops->unlink(f->inner, obj->handle, IOS_FILE_DATA, obj->path);
	return 0;
}

/* Before a call on an object's file: lose:HANDLE (without @) loses it at
 * the first; then the call's injected error, or 0. */
static int before(struct fault_disk *f, enum fault_call call, const struct fault_fd *obj)
{
	for (size_t i = 0; obj && i < f->n_rules; i++)
		if (rule_matches(&f->rules[i], FC_LOSE, obj) && !f->rules[i].nth) {
			int rc = lose(f, obj);

			if (rc)
				return rc;
		}
	return fire(f, call, obj);
}

/* slow: how long a data read or write waits before it is made (the
 * longest delay of the rules that fire on it), in ms. */
static unsigned slow_ms(struct fault_disk *f, const struct fault_fd *obj)
{
	unsigned ms = 0;

	for (size_t i = 0; obj && obj->file == IOS_FILE_DATA && i < f->n_rules; i++) {
		struct fault_rule *r = &f->rules[i];

		if (r->call != FC_SLOW || (r->has_handle && r->handle != obj->handle))
			continue;
		r->seen++;
		if ((r->seen == r->nth || (r->onward && r->seen > r->nth)) && r->ms > ms)
			ms = r->ms;
	}
	return ms;
}

static void pause_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int l_open(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path,
		  int flags, mode_t mode)
{
	struct fault_disk *f = fault_of(d);
	struct fault_fd obj = { handle, file, (char *)path };
	int fd, rc = before(f, FC_OPEN, &obj);

	if (rc)
		return rc;
	fd = f->inner->ops->open(f->inner, handle, file, path, flags, mode);
	if (fd < 0)
		return fd;
	if ((size_t)fd >= f->n_fds) {
		size_t n = (size_t)fd + 64;
		struct fault_fd *fds = realloc(f->fds, n * sizeof(*fds));

		if (!fds)
			goto nomem;
		memset(fds + f->n_fds, 0, (n - f->n_fds) * sizeof(*fds));
		f->fds = fds;
		f->n_fds = n;
	}
	free(f->fds[fd].path);
	f->fds[fd].handle = handle;
	f->fds[fd].file = file;
	if (!(f->fds[fd].path = strdup(path)))
		goto nomem;
	return fd;
nomem:
	f->inner->ops->close(f->inner, fd);
	return -ENOMEM;
}

static int l_unlink(struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->unlink(f->inner, handle, file, path);
}

static int l_close(struct ios_disk *d, int fd)
{
	struct fault_disk *f = fault_of(d);

	if (fd_info(f, fd)) {
		free(f->fds[fd].path);
		f->fds[fd].path = NULL;
	}
	return f->inner->ops->close(f->inner, fd);
}

static ssize_t l_preadv(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	struct fault_disk *f = fault_of(d);
	int rc = before(f, FC_READ, fd_info(f, fd));

	return rc ? rc : f->inner->ops->preadv(f->inner, fd, iov, n, off);
}

static ssize_t l_pwritev(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	struct fault_disk *f = fault_of(d);
	const struct fault_fd *obj = fd_info(f, fd);
	int rc = before(f, FC_WRITE, obj);
	ssize_t k;

	if (rc)
		return rc;
	if (n > 0 && iov[0].iov_len && fire(f, FC_CORRUPT, obj)) {
		/* corrupt: the disk stores the write with its first byte flipped */
		struct iovec *bad = malloc((size_t)n * sizeof(*bad));
		uint8_t *first = malloc(iov[0].iov_len);

		if (!bad || !first) {
			free(bad);
			free(first);
			return -ENOMEM;
		}
		memcpy(bad, iov, (size_t)n * sizeof(*bad));
		memcpy(first, iov[0].iov_base, iov[0].iov_len);
		first[0] ^= 0xff;
		bad[0].iov_base = first;
		k = f->inner->ops->pwritev(f->inner, fd, bad, n, off);
		free(first);
		free(bad);
	} else {
		k = f->inner->ops->pwritev(f->inner, fd, iov, n, off);
	}
	/* lose@N: the write is made, then its object is lost. */
	if (k >= 0 && obj && fire(f, FC_LOSE, obj) && (rc = lose(f, obj)))
		return rc;
	return k;
}

static int l_fstat(struct ios_disk *d, int fd, struct stat *sb)
{
	struct fault_disk *f = fault_of(d);
	int rc = before(f, FC_STAT, fd_info(f, fd));

	return rc ? rc : f->inner->ops->fstat(f->inner, fd, sb);
}

static int l_ftruncate(struct ios_disk *d, int fd, off_t size)
{
	struct fault_disk *f = fault_of(d);
	int rc = before(f, FC_TRUNCATE, fd_info(f, fd));

	return rc ? rc : f->inner->ops->ftruncate(f->inner, fd, size);
}

/* (the truncate rules cover fallocate: both change an object's extent) */
static int l_fallocate(struct ios_disk *d, int fd, off_t off, off_t len)
{
	struct fault_disk *f = fault_of(d);
	int rc = before(f, FC_TRUNCATE, fd_info(f, fd));

	return rc ? rc : f->inner->ops->fallocate(f->inner, fd, off, len);
}

static int l_fchmod(struct ios_disk *d, int fd, mode_t mode)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->fchmod(f->inner, fd, mode);
}

static int l_fdatasync(struct ios_disk *d, int fd)
{
	struct fault_disk *f = fault_of(d);
	int rc = before(f, FC_SYNC, fd_info(f, fd));

	return rc ? rc : f->inner->ops->fdatasync(f->inner, fd);
}

static void f_writeback(struct ios_disk *d, int fd, off_t off, off_t len)
{
	struct fault_disk *f = fault_of(d);

	if (f->inner->ops->writeback)
		f->inner->ops->writeback(f->inner, fd, off, len);
}

static int l_mkdir(struct ios_disk *d, const char *path, mode_t mode)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->mkdir(f->inner, path, mode);
}

static int l_syncdir(struct ios_disk *d, const char *path)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->syncdir(f->inner, path);
}

static int l_statvfs(struct ios_disk *d, const char *path, struct statvfs *sv)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->statvfs(f->inner, path, sv);
}

static int l_rename(struct ios_disk *d, const char *from, const char *to, enum ios_rename how)
{
	struct fault_disk *f = fault_of(d);

	return f->inner->ops->rename(f->inner, from, to, how);
}

/* The calls under the disk's lock; reads and writes wait first if a slow
 * rule says so. */
#define LOCKED(type, call, params, args)                 \
	static type f_##call params                      \
	{                                                \
		struct fault_disk *f = fault_of(d);      \
		type rc;                                 \
                                                         \
		pthread_mutex_lock(&f->mu);              \
		rc = l_##call args;                      \
		pthread_mutex_unlock(&f->mu);            \
		return rc;                               \
	}
LOCKED(int, open, (struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path,
		   int flags, mode_t mode), (d, handle, file, path, flags, mode))
LOCKED(int, unlink, (struct ios_disk *d, uint64_t handle, enum ios_file file, const char *path),
       (d, handle, file, path))
LOCKED(int, close, (struct ios_disk *d, int fd), (d, fd))
LOCKED(int, fstat, (struct ios_disk *d, int fd, struct stat *sb), (d, fd, sb))
LOCKED(int, ftruncate, (struct ios_disk *d, int fd, off_t size), (d, fd, size))
LOCKED(int, fdatasync, (struct ios_disk *d, int fd), (d, fd))
LOCKED(int, fallocate, (struct ios_disk *d, int fd, off_t off, off_t len), (d, fd, off, len))
LOCKED(int, fchmod, (struct ios_disk *d, int fd, mode_t mode), (d, fd, mode))
LOCKED(int, mkdir, (struct ios_disk *d, const char *path, mode_t mode), (d, path, mode))
LOCKED(int, syncdir, (struct ios_disk *d, const char *path), (d, path))
LOCKED(int, statvfs, (struct ios_disk *d, const char *path, struct statvfs *sv), (d, path, sv))
LOCKED(int, rename, (struct ios_disk *d, const char *from, const char *to, enum ios_rename how),
       (d, from, to, how))
#undef LOCKED

static void slow_wait(struct fault_disk *f, int fd)
{
	unsigned ms;

	pthread_mutex_lock(&f->mu);
	ms = slow_ms(f, fd_info(f, fd));
	pthread_mutex_unlock(&f->mu);
	if (ms)
		pause_ms(ms);
}

/* A read or write, after any slow rule on fd, under the fault lock. */
static ssize_t f_io(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off,
		    ssize_t (*io)(struct ios_disk *d, int fd, const struct iovec *iov, int n,
				  off_t off))
{
	struct fault_disk *f = fault_of(d);
	ssize_t k;

	slow_wait(f, fd);
	pthread_mutex_lock(&f->mu);
	k = io(d, fd, iov, n, off);
	pthread_mutex_unlock(&f->mu);
	return k;
}

static ssize_t f_preadv(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return f_io(d, fd, iov, n, off, l_preadv);
}

static ssize_t f_pwritev(struct ios_disk *d, int fd, const struct iovec *iov, int n, off_t off)
{
	return f_io(d, fd, iov, n, off, l_pwritev);
}

static void f_destroy(struct ios_disk *d)
{
	struct fault_disk *f = fault_of(d);

	if (!f)
		return;
	for (size_t i = 0; i < f->n_fds; i++)
		free(f->fds[i].path);
	if (f->inner)
		f->inner->ops->destroy(f->inner);
	free(f->fds);
	free(f->lost);
	free(f->rules);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static const struct ios_disk_ops fault_ops = {
	.size = sizeof(struct ios_disk_ops),
	.open = f_open,
	.unlink = f_unlink,
	.close = f_close,
	.preadv = f_preadv,
	.pwritev = f_pwritev,
	.fstat = f_fstat,
	.ftruncate = f_ftruncate,
	.fdatasync = f_fdatasync,
	.mkdir = f_mkdir,
	.syncdir = f_syncdir,
	.statvfs = f_statvfs,
	.rename = f_rename,
	.destroy = f_destroy,
	.writeback = f_writeback,
	.fallocate = f_fallocate,
	.fchmod = f_fchmod,
};

/* ----------------------------------------------------------- the spec */

static int parse_errno(const char *s, int *out)
{
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (!strcmp(s, errno_names[i].name)) {
			*out = -errno_names[i].code;
			return 0;
		}
	v = strtol(s, &end, 10);
	if (end == s || *end || v <= 0 || v > 4095)
		return -EINVAL;
	*out = (int)-v;
	return 0;
}

/* A rule's parts, each parsed in place; err says what is wrong. */
static int parse_nth(char *at, struct fault_rule *r, char *err, size_t errlen)
{
	char *end;

	r->nth = strtoull(at, &end, 10);
	r->onward = *end == '+';
	if (end == at || *at == '-' || !r->nth || *(end + r->onward)) {
		snprintf(err, errlen, "@%s: want @N or @N+ with N from 1", at);
		return -EINVAL;
	}
	return 0;
}

static int parse_handle(char *colon, struct fault_rule *r, char *err, size_t errlen)
{
	char *end;

	r->has_handle = 1;
	r->handle = strtoull(colon, &end, 16);
	if (end == colon || *colon == '-' || *end) {
		snprintf(err, errlen, ":%s: want an object handle in hex", colon);
		return -EINVAL;
	}
	return 0;
}

static int parse_call(const char *s, struct fault_rule *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(call_names) / sizeof(call_names[0]); i++)
		if (!strcmp(s, call_names[i])) {
			r->call = (enum fault_call)i;
			return 0;
		}
	snprintf(err, errlen, "unknown call \"%s\" (open, read, write, stat, truncate, "
		 "sync, lose, corrupt or slow)", s);
	return -EINVAL;
}

/* After "=": a slow rule's delay, else an errno. */
static int parse_value(const char *errname, struct fault_rule *r, char *err, size_t errlen)
{
	char *end;

	if (r->call == FC_SLOW) {
		unsigned long long ms = strtoull(errname, &end, 10);

		if (end == errname || *end || *errname == '-' || !ms || ms > 60000) {
			snprintf(err, errlen, "slow=%s: want a delay in ms from 1 to 60000", errname);
			return -EINVAL;
		}
		r->ms = (unsigned)ms;
	} else if (parse_errno(errname, &r->err)) {
		snprintf(err, errlen, "\"%s\" is not an errno name (EIO, ENOSPC, EDQUOT, "
			 "EROFS, EFBIG, EACCES, ENOMEM, EMFILE) or number", errname);
		return -EINVAL;
	}
	return 0;
}

/* One rule, CALL[:HANDLE][@N[+]][=ERRNO], in place (s is a copy). */
static int parse_rule(char *s, struct fault_rule *r, char *err, size_t errlen)
{
	char *errname = strchr(s, '='), *at, *colon;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->err = -EIO;
	r->ms = 100;
	if (errname)
		*errname++ = 0;
	if ((at = strchr(s, '@'))) {
		*at++ = 0;
		rc = parse_nth(at, r, err, errlen);
	}
	if (!rc && (colon = strchr(s, ':'))) {
		*colon++ = 0;
		rc = parse_handle(colon, r, err, errlen);
	}
	if (!rc)
		rc = parse_call(s, r, err, errlen);
	if (!rc && errname)
		rc = parse_value(errname, r, err, errlen);
	if (rc)
		return rc;
	if (!at && r->call != FC_LOSE) { /* corrupt too: every matching write */
		r->nth = 1;   /* every matching call */
		r->onward = 1;
	}
	return 0;
}

int ios_disk_faults(struct ios_disk *inner, const char *spec, struct ios_disk **out, char *err,
		    size_t errlen)
{
	struct fault_disk *f = calloc(1, sizeof(*f));
	char *copy = strdup(spec), *rest = copy, *rule, msg[200];
	size_t cap = 1;
	int rc = -ENOMEM;

	for (const char *p = spec; *p; p++)
		cap += *p == ',';
	if (!f || !copy || !(f->rules = calloc(cap, sizeof(*f->rules)))) {
		snprintf(err, errlen, "fault spec: no memory");
		goto fail;
	}
	f->base.ops = &fault_ops;
	pthread_mutex_init(&f->mu, NULL);
	rc = 0;
	while (!rc && (rule = strsep(&rest, ","))) {
		char text[128];

		snprintf(text, sizeof(text), "%s", rule);
		if (!*rule) {
			snprintf(msg, sizeof(msg), "empty (rules are separated by one comma)");
			rc = -EINVAL;
		} else {
			rc = parse_rule(rule, &f->rules[f->n_rules], msg, sizeof(msg));
		}
		if (rc)
			snprintf(err, errlen, "fault rule %zu \"%s\": %s", f->n_rules + 1, text, msg);
		else
			f->n_rules++;
	}
	if (rc)
		goto fail;
	free(copy);
	f->inner = inner;
	*out = &f->base;
	return 0;
fail:
	free(copy);
	if (f) {
		free(f->rules);
		if (f->base.ops)
			pthread_mutex_destroy(&f->mu);
	}
	free(f);
	return rc;
}
