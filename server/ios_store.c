/* ios_store.c - objects as local files, with a cache of open descriptors. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <limits.h>
#include <unistd.h>

#include "ios_store.h"

struct ios_fd {
	uint64_t handle;
	int fd;            /* -1: slot free */
	uint64_t used;     /* clock of last use, for eviction */
};

struct ios_store {
	char *dir;         /* DIR/objects */
	unsigned max_open;
	struct ios_fd *fds;
	uint64_t clock;
	uint8_t *gap;      /* IOS_SIEVE_GAP bytes: where sieved reads drop gaps */
};

static int mkdir_p(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int ios_store_open(const char *dir, unsigned max_open, struct ios_store **out, char **errmsg)
{
	struct ios_store *st = calloc(1, sizeof(*st));
	char path[4096];
	int rc = -ENOMEM;

	if (!st)
		goto fail;
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
	if ((rc = mkdir_p(dir)) || (rc = mkdir_p(st->dir)))
		goto fail;
	for (unsigned i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%02x", st->dir, i);
		if ((rc = mkdir_p(path)))
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
				close(st->fds[i].fd);
	free(st->fds);
	free(st->gap);
	free(st->dir);
	free(st);
}

static void object_path(const struct ios_store *st, uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64, st->dir, (unsigned)(handle & 0xff), handle);
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
	fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (fd < 0)
		return -errno;
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
		close(slot->fd);
	slot->fd = fd;
	slot->handle = handle;
	slot->used = ++st->clock;
	return fd;
}

static void forget(struct ios_store *st, uint64_t handle)
{
	struct ios_fd *slot = cached(st, handle);

	if (slot) {
		close(slot->fd);
		slot->fd = -1;
	}
}

ssize_t ios_write(struct ios_store *st, uint64_t handle, uint64_t offset, const void *buf,
		  size_t len)
{
	int fd = object_fd(st, handle, 1);
	size_t done = 0;

	if (fd < 0)
		return fd;
	if (offset > (uint64_t)INT64_MAX - len)
		return -EFBIG;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(offset + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t ios_read(struct ios_store *st, uint64_t handle, uint64_t offset, void *buf, size_t len,
		 uint64_t *object_size)
{
	int fd = object_fd(st, handle, 0);
	struct stat sb;
	size_t done = 0;

	*object_size = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &sb))
		return -errno;
	*object_size = (uint64_t)sb.st_size;
	if (offset > (uint64_t)INT64_MAX)
		return 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* The whole of iov[0..n) at offset, retrying short transfers; reads stop
 * at end of file. Returns bytes moved or -errno. */
static ssize_t full_iov(int fd, struct iovec *iov, int n, uint64_t offset, int write,
			uint64_t *syscalls)
{
	size_t done = 0;

	while (n > 0) {
		ssize_t k = write ? pwritev(fd, iov, n, (off_t)offset)
				  : preadv(fd, iov, n, (off_t)offset);

		(*syscalls)++;
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
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
			got = full_iov(fd, &iov, 1, start, 0, syscalls);
			if (got < 0) {
				rc = got;
				break;
			}
			memset(span_buf + got, 0, span - (uint64_t)got);
			for (size_t j = i; j < i + k; j++) {
				memcpy(span_buf + (pieces[j].offset - start), data + pos, pieces[j].length);
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
			rc = full_iov(fd, &iov, 1, start, 1, syscalls);
		i += k;
	}
	free(span_buf);
	return rc < 0 ? rc : (ssize_t)pos;
}

ssize_t ios_read_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			size_t n, uint8_t *data, uint64_t *object_size, uint64_t *syscalls)
{
	struct iovec iov[IOV_MAX];
	size_t i = 0, pos = 0, total = 0;
	uint64_t size;
	int fd = object_fd(st, handle, 0);
	struct stat sb;

	for (size_t j = 0; j < n; j++)
		total += pieces[j].length;
	*object_size = 0;
	if (fd == -ENOENT) {
		memset(data, 0, total);
		return (ssize_t)total;
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, &sb))
		return -errno;
	size = *object_size = (uint64_t)sb.st_size;
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
			got = full_iov(fd, iov, k, start, 0, syscalls);
			if (got < 0)
				return got;
			if ((size_t)got < want) /* the object shrank meanwhile */
				return -EIO;
		}
	}
	return (ssize_t)pos;
}

int ios_size(struct ios_store *st, uint64_t handle, uint64_t *size, int64_t *mtime_ns)
{
	int fd = object_fd(st, handle, 0);
	struct stat sb;

	*size = 0;
	*mtime_ns = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &sb))
		return -errno;
	*size = (uint64_t)sb.st_size;
	*mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	return 0;
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
	return ftruncate(fd, (off_t)size) ? -errno : 0;
}

int ios_remove(struct ios_store *st, uint64_t handle)
{
	char path[4096];

	forget(st, handle);
	object_path(st, handle, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

int ios_sync(struct ios_store *st, uint64_t handle)
{
	char path[4096];
	int fd = object_fd(st, handle, 0), dfd, rc = 0;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (fdatasync(fd))
		return -errno;
	/* The object's name must be durable too. */
	snprintf(path, sizeof(path), "%s/%02x", st->dir, (unsigned)(handle & 0xff));
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd))
		rc = -errno;
	close(dfd);
	return rc;
}

int ios_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail)
{
	struct statvfs sv;

	if (statvfs(st->dir, &sv))
		return -errno;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}
