/*
 * ios_store.c - objects as local files, with a cache of open descriptors.
 * Every disk call goes through the store's struct ios_disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ios_disk.h"
#include "ios_store.h"

struct ios_fd {
	uint64_t handle;
	int fd;            /* -1: slot free */
	uint64_t used;     /* clock of last use, for eviction */
};

struct ios_store {
	struct ios_disk *disk;  /* the caller's; every disk call goes here */
	char *dir;         /* DIR/objects */
	unsigned max_open;
	struct ios_fd *fds;
	uint64_t clock;
	uint8_t *gap;      /* IOS_SIEVE_GAP bytes: where sieved reads drop gaps */
};

static int mkdir_p(struct ios_disk *d, const char *path)
{
	int rc = d->ops->mkdir(d, path, 0755);

	return rc == -EEXIST ? 0 : rc;
}

int ios_store_open(const char *dir, unsigned max_open, struct ios_disk *disk,
		   struct ios_store **out, char **errmsg)
{
	struct ios_store *st;
	char path[4096];
	int rc = -ENOMEM;

	if (disk->ops->size < sizeof(struct ios_disk_ops)) {
		/* made against an older table: some op would be missing */
		if (errmsg && asprintf(errmsg, "storage directory %s: the disk's ops table has %zu "
				       "bytes, this store needs %zu", dir, disk->ops->size,
				       sizeof(struct ios_disk_ops)) < 0)
			*errmsg = NULL;
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto fail;
	st->disk = disk;
	st->max_open = max_open ? max_open : 1;
	st->fds = calloc(st->max_open, sizeof(*st->fds));
	if (!st->fds)
		goto fail;
	for (unsigned i = 0; i < st->max_open; i++)
		st->fds[i].fd = -1;
	st->gap = malloc(IOS_SIEVE_GAP);
	if (!st->gap)
		goto fail;
	snprintf(path, sizeof(path), "%s/objects", dir);
	st->dir = strdup(path);
	if (!st->dir)
		goto fail;
	if ((rc = mkdir_p(disk, dir)) || (rc = mkdir_p(disk, st->dir)))
		goto fail;
	for (unsigned i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%02x", st->dir, i);
		if ((rc = mkdir_p(disk, path)))
			goto fail;
	}
	*out = st;
	return 0;
fail:
	if (errmsg && asprintf(errmsg, "storage directory %s: %s", dir, strerror(-rc)) < 0)
		*errmsg = NULL;
	ios_store_close(st);
	return rc;
}

void ios_store_close(struct ios_store *st)
{
	if (!st)
		return;
	if (st->fds)
		for (unsigned i = 0; i < st->max_open; i++)
			if (st->fds[i].fd >= 0)
				st->disk->ops->close(st->disk, st->fds[i].fd);
	free(st->fds);
	free(st->gap);
	free(st->dir);
	free(st);
}

static void object_path(const struct ios_store *st, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64, st->dir, (unsigned)(handle & 0xff), handle);
}

/* The side file of an object's counters (ios_counter). */
static void counter_path(const struct ios_store *st, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64 ".ctr", st->dir, (unsigned)(handle & 0xff),
		 handle);
}

static struct ios_fd *cached(struct ios_store *st, uint64_t handle)
{
	for (unsigned i = 0; i < st->max_open; i++)
		if (st->fds[i].fd >= 0 && st->fds[i].handle == handle) {
			st->fds[i].used = ++st->clock;
			return &st->fds[i];
		}
	return NULL;
}

/* The descriptor of an object; with `create` it is made if missing, else
 * -ENOENT. */
static int object_fd(struct ios_store *st, uint64_t handle, int create)
{
	struct ios_fd *slot = cached(st, handle);
	char path[4096];
	int fd;

	if (slot)
		return slot->fd;
	object_path(st, handle, path, sizeof(path));
	fd = st->disk->ops->open(st->disk, handle, path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0),
				 0644);
	if (fd < 0)
		return fd;
	slot = &st->fds[0];
	for (unsigned i = 0; i < st->max_open; i++) {
		if (st->fds[i].fd < 0) {
			slot = &st->fds[i];
			break;
		}
		if (st->fds[i].used < slot->used)
			slot = &st->fds[i];
	}
	if (slot->fd >= 0)
		st->disk->ops->close(st->disk, slot->fd);
	slot->fd = fd;
	slot->handle = handle;
	slot->used = ++st->clock;
	return fd;
}

static void forget(struct ios_store *st, uint64_t handle)
{
	struct ios_fd *slot = cached(st, handle);

	if (slot) {
		st->disk->ops->close(st->disk, slot->fd);
		slot->fd = -1;
	}
}

/* An object's descriptor and size; a missing object has size 0 and no
 * descriptor (-1). */
static int object_sized(struct ios_store *st, uint64_t handle, int *fd, uint64_t *size,
			int64_t *mtime_ns)
{
	struct stat sb;
	int rc;

	*size = 0;
	*mtime_ns = 0;
	*fd = object_fd(st, handle, 0);
	if (*fd == -ENOENT)
		*fd = -1;
	else if (*fd < 0)
		return *fd;
	else if ((rc = st->disk->ops->fstat(st->disk, *fd, &sb)))
		return rc;
	else {
		*size = (uint64_t)sb.st_size;
		*mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	}
	return 0;
}

int ios_size(struct ios_store *st, uint64_t handle, uint64_t *size, int64_t *mtime_ns)
{
	int fd;

	return object_sized(st, handle, &fd, size, mtime_ns);
}

/* The whole of iov[0..n) at offset, retrying short transfers; reads stop
 * at end of file. Returns bytes moved or -errno. */
static ssize_t full_iov(struct ios_store *st, int fd, struct iovec *iov, int n, uint64_t offset,
			int write, uint64_t *syscalls)
{
	struct ios_disk *d = st->disk;
	size_t done = 0;

	while (n > 0) {
		ssize_t k = write ? d->ops->pwritev(d, fd, iov, n, (off_t)offset)
				  : d->ops->preadv(d, fd, iov, n, (off_t)offset);

		(*syscalls)++;
		if (k == -EINTR)
			continue;
		if (k < 0)
			return k;
		if (k == 0)
			break; /* reads: end of file */
		done += (size_t)k;
		offset += (uint64_t)k;
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return (ssize_t)done;
}

/* Pieces i.. that go in one sieved write: ascending, gaps of at most
 * IOS_SIEVE_GAP, spanning at most IOS_SIEVE_SPAN. Returns how many. */
static size_t sieve_group(const struct ios_piece *pieces, size_t n, size_t i, uint64_t *span)
{
	uint64_t start = pieces[i].offset, end = start + pieces[i].length;
	size_t j = i + 1;

	while (j < n && pieces[j].offset >= end && pieces[j].offset - end <= IOS_SIEVE_GAP &&
	       pieces[j].offset + pieces[j].length - start <= IOS_SIEVE_SPAN) {
		/* An empty piece joins the group but writes nothing: the span
		 * ends at the last byte written, or the write would grow the
		 * object to where no byte went. */
		if (pieces[j].length)
			end = pieces[j].offset + pieces[j].length;
		j++;
	}
	*span = end - start;
	return j - i;
}

ssize_t ios_write_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			 size_t n, const uint8_t *data, uint64_t *syscalls)
{
	int fd = object_fd(st, handle, 1);
	size_t i = 0, pos = 0;
	uint8_t *span_buf = NULL;
	ssize_t rc = 0;

	if (fd < 0)
		return fd;
	while (i < n && rc >= 0) {
		uint64_t span, start = pieces[i].offset;
		size_t k = sieve_group(pieces, n, i, &span);
		uint64_t sum = 0;
		struct iovec iov;

		for (size_t j = i; j < i + k; j++)
			sum += pieces[j].length;
		if (sum < span) {
			/* Data sieving: read the span, lay the pieces over it,
			 * write it back. Safe without locks: this daemon is the
			 * only writer of its objects and serves one request at a
			 * time. Bytes past the object's end read as zeros, which
			 * is what they would read as anyway. */
			ssize_t got;

			if (!span_buf && !(span_buf = malloc(IOS_SIEVE_SPAN))) {
				rc = -ENOMEM;
				break;
			}
			iov.iov_base = span_buf;
			iov.iov_len = span;
			got = full_iov(st, fd, &iov, 1, start, 0, syscalls);
			if (got < 0) {
				rc = got;
				break;
			}
			memset(span_buf + got, 0, span - (uint64_t)got);
			for (size_t j = i; j < i + k; j++) {
				if (pieces[j].length) /* an empty one may lie past the span */
					memcpy(span_buf + (pieces[j].offset - start), data + pos,
					       pieces[j].length);
				pos += pieces[j].length;
			}
			iov.iov_base = span_buf;
		} else {
			/* adjacent pieces: their data is contiguous too */
			iov.iov_base = (void *)(data + pos);
			pos += span;
		}
		iov.iov_len = span;
		if (span)
			rc = full_iov(st, fd, &iov, 1, start, 1, syscalls);
		i += k;
	}
	free(span_buf);
	return rc < 0 ? rc : (ssize_t)pos;
}

ssize_t ios_read_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			size_t n, uint8_t *data, uint64_t *object_size, uint64_t *syscalls)
{
	struct iovec iov[IOV_MAX];
	size_t i = 0, pos = 0;
	uint64_t size;
	int64_t mtime_ns;
	int fd, rc;

	*object_size = 0;
	if ((rc = object_sized(st, handle, &fd, &size, &mtime_ns)))
		return rc;
	/* A missing object (size 0) is a hole: every piece reads as zeros. */
	*object_size = size;
	while (i < n) {
		/* A group: ascending pieces with small gaps, below the object's
		 * end; the bytes of each piece past the end are zeroed. */
		uint64_t start = pieces[i].offset, end = start;
		int k = 0;

		while (i < n && k < IOV_MAX - 1) {
			const struct ios_piece *p = &pieces[i];
			uint64_t have = p->offset >= size ? 0 : size - p->offset;

			if (k > 0 && (p->offset < end || p->offset - end > IOS_SIEVE_GAP))
				break;
			if (have > p->length)
				have = p->length;
			memset(data + pos + have, 0, p->length - have);
			if (have) {
				if (k > 0 && p->offset > end) {
					iov[k].iov_base = st->gap;
					iov[k++].iov_len = p->offset - end;
				}
				iov[k].iov_base = data + pos;
				iov[k++].iov_len = have;
			}
			end = p->offset + p->length;
			pos += p->length;
			i++;
			if (have < p->length)
				break; /* the object ends in this piece */
		}
		if (k > 0) {
			size_t want = 0;
			ssize_t got;

			for (int j = 0; j < k; j++)
				want += iov[j].iov_len;
			got = full_iov(st, fd, iov, k, start, 0, syscalls);
			if (got < 0)
				return got;
			if ((size_t)got < want) /* the object shrank meanwhile */
				return -EIO;
		}
	}
	return (ssize_t)pos;
}


int ios_truncate(struct ios_store *st, uint64_t handle, uint64_t size)
{
	int fd;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	/* A missing object is created even for size 0: its modification time
	 * is the file's truncate time (clients read it with the size). */
	fd = object_fd(st, handle, 1);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	return st->disk->ops->ftruncate(st->disk, fd, (off_t)size);
}

int ios_remove(struct ios_store *st, uint64_t handle)
{
	char path[4096];
	int rc;

	forget(st, handle);
	object_path(st, handle, path, sizeof(path));
	rc = st->disk->ops->unlink(st->disk, handle, path);
	if (rc && rc != -ENOENT)
		return rc;
	/* Its counters go with it. */
	counter_path(st, handle, path, sizeof(path));
	rc = st->disk->ops->unlink(st->disk, handle, path);
	return rc == -ENOENT ? 0 : rc;
}

/* fdatasync an object's counters, if it has any: 1 if it has, 0 if not,
 * or a negative errno. */
static int sync_counters(struct ios_store *st, uint64_t handle)
{
	struct ios_disk *d = st->disk;
	char path[4096];
	int fd, rc;

	counter_path(st, handle, path, sizeof(path));
	fd = d->ops->open(d, handle, path, O_RDWR | O_CLOEXEC, 0644);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	rc = d->ops->fdatasync(d, fd);
	d->ops->close(d, fd);
	return rc ? rc : 1;
}

int ios_sync(struct ios_store *st, uint64_t handle)
{
	char path[4096];
	int fd = object_fd(st, handle, 0), rc, counters;

	if (fd < 0 && fd != -ENOENT)
		return fd;
	if (fd >= 0 && (rc = st->disk->ops->fdatasync(st->disk, fd)))
		return rc;
	counters = sync_counters(st, handle);
	if (counters < 0)
		return counters;
	if (fd == -ENOENT && !counters)
		return 0;
	/* The names of the object and its counters must be durable too. */
	snprintf(path, sizeof(path), "%s/%02x", st->dir, (unsigned)(handle & 0xff));
	return st->disk->ops->syncdir(st->disk, path);
}

/* ------------------------------------------------------------ counters
 *
 * The side file is an array of (key, value) records, 16 bytes each,
 * little-endian, the most recently used first. It is small (1 KiB at most)
 * and read and rewritten whole by each request. */
#define CTR_RECORD 16

static uint64_t le64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

int ios_counter(struct ios_store *st, uint64_t handle, uint64_t key, int set, int64_t value,
		int64_t *old)
{
	struct ios_disk *d = st->disk;
	uint8_t buf[(IOS_COUNTERS + 1) * CTR_RECORD];
	uint64_t syscalls = 0;
	struct iovec iov = { buf + CTR_RECORD, IOS_COUNTERS * CTR_RECORD };
	char path[4096];
	ssize_t got;
	size_t n, at;
	int64_t now = 0;
	int fd, rc = 0;

	counter_path(st, handle, path, sizeof(path));
	fd = d->ops->open(d, handle, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return fd;
	/* Records land one slot in, so the one used now can go first. */
	got = full_iov(st, fd, &iov, 1, 0, 0, &syscalls);
	if (got < 0) {
		rc = (int)got;
		goto out;
	}
	n = (size_t)got / CTR_RECORD; /* a torn last record (a crash) is dropped */
	for (at = 1; at <= n; at++)
		if (le64_get(buf + at * CTR_RECORD) == key)
			break;
	if (at <= n)
		now = (int64_t)le64_get(buf + at * CTR_RECORD + 8);
	else if (n == IOS_COUNTERS)
		at = n; /* full: the one used longest ago makes room */
	else
		at = ++n;
	if (set) {
		*old = now;
		now = value;
	} else if ((value > 0 && now > INT64_MAX - value) ||
		   (value < 0 && now < INT64_MIN - value)) {
		rc = -EOVERFLOW;
		goto out;
	} else {
		*old = now;
		now += value;
	}
	memmove(buf + CTR_RECORD, buf, at * CTR_RECORD); /* shift the ones before it */
	le64_put(buf + CTR_RECORD, key);
	le64_put(buf + CTR_RECORD + 8, (uint64_t)now);
	iov.iov_base = buf + CTR_RECORD;
	iov.iov_len = n * CTR_RECORD;
	got = full_iov(st, fd, &iov, 1, 0, 1, &syscalls);
	if (got < 0)
		rc = (int)got;
out:
	d->ops->close(d, fd);
	return rc;
}

int ios_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail)
{
	struct statvfs sv;
	int rc = st->disk->ops->statvfs(st->disk, st->dir, &sv);

	if (rc)
		return rc;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}
