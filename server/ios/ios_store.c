/*
 * ios_store.c - objects as local files, with a cache of open descriptors,
 * block checksums beside them and a registry of the objects held
 * (ios_registry.c). Every disk call goes through the store's struct
 * ios_disk. Its store file is in ios_store_file.c, its counters in
 * ios_counter.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_crc.h"
#include "tp_objfmt.h"
#include "ios_disk.h"
#include "ios_registry.h"
#include "ios_spare.h"
#include "ios_store.h"
#include "ios_store_int.h"

static int mkdir_p(struct ios_disk *d, const char *path, int *existed)
{
	int rc = d->ops->mkdir(d, path, 0700);

	if (existed)
		*existed = rc == -EEXIST;
	return rc == -EEXIST ? 0 : rc;
}

/* What ios_store_open can refuse before touching the disk: a disk whose
 * ops table is older than this store's, a checksum block no store can
 * have. 0, or -EINVAL with *errmsg (if errmsg) saying why. */
static int open_args_check(const char *dir, uint32_t csum_block, const struct ios_disk *disk,
			   char **errmsg)
{
	char why[200];

	if (disk->ops->size < sizeof(struct ios_disk_ops)) /* some op would be missing */
		snprintf(why, sizeof(why), "the disk's ops table has %zu bytes, this store needs %zu",
			 disk->ops->size, sizeof(struct ios_disk_ops));
	else if (csum_block && !tp_obj_block_valid(csum_block))
		snprintf(why, sizeof(why), "csum_block %" PRIu32 " is not a power of two from %u "
			 "to %u bytes", csum_block, TP_OBJ_BLOCK_MIN, TP_OBJ_BLOCK_MAX);
	else
		return 0;
	if (errmsg && asprintf(errmsg, "storage directory %s: %s", dir, why) < 0)
		*errmsg = NULL;
	return -EINVAL;
}

/* A store's memory (not yet on disk) for directory dir: *out, or
 * -ENOMEM. */
static int store_alloc(const char *dir, unsigned max_open, struct ios_disk *disk,
		       struct ios_store **out)
{
	struct ios_store *st = calloc(1, sizeof(*st));
	char path[4096];

	*out = st;
	if (!st)
		return -ENOMEM;
	if (!(st->sh = calloc(1, sizeof(*st->sh)))) {
		free(st);
		*out = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&st->sh->mu, NULL);
	st->disk = disk;
	st->sh->max_open = max_open ? max_open : 1;
	st->sh->sieve_gap = IOS_SIEVE_GAP;
	st->sh->sieve_span = IOS_SIEVE_SPAN;
	st->sh->fds = calloc(st->sh->max_open, sizeof(*st->sh->fds));
	if (!st->sh->fds)
		return -ENOMEM;
	for (unsigned i = 0; i < st->sh->max_open; i++)
		st->sh->fds[i].fd = st->sh->fds[i].sums = -1;
	snprintf(path, sizeof(path), "%s/objects", dir);
	if (!(st->dir = strdup(path)) || !(st->root = strdup(dir)))
		return -ENOMEM;
	return 0;
}

/* DIR, DIR/objects and its IOS_STORE_DIRS subdirectories, made where
 * missing; *existed: DIR was there. */
static int make_dirs(struct ios_store *st, int *existed)
{
	char path[4096];
	int rc;

	if ((rc = mkdir_p(st->disk, st->root, existed)) || (rc = mkdir_p(st->disk, st->dir, NULL)))
		return rc;
	for (unsigned i = 0; i < IOS_STORE_DIRS; i++) {
		snprintf(path, sizeof(path), "%s/%02x", st->dir, i);
		if ((rc = mkdir_p(st->disk, path, NULL)))
			return rc;
	}
	return 0;
}

int ios_store_open(const char *dir, unsigned max_open, unsigned flags, uint32_t csum_block,
		   struct ios_disk *disk, struct ios_store **out, char **notice, char **errmsg)
{
	struct ios_store *st;
	char err[600] = "";
	int rc, existed;

	if (notice)
		*notice = NULL;
	if ((rc = open_args_check(dir, csum_block, disk, errmsg)))
		return rc;
	if (!(rc = store_alloc(dir, max_open, disk, &st)) && !(rc = make_dirs(st, &existed)) &&
	    !(rc = store_init(st, existed, flags, csum_block, notice, err, sizeof(err)))) {
		*out = st;
		return 0;
	}
	if (errmsg && asprintf(errmsg, "storage directory %s: %s", dir,
			       err[0] ? err : strerror(-rc)) < 0)
		*errmsg = NULL;
	if (notice) {
		free(*notice);
		*notice = NULL;
	}
	ios_store_close(st);
	return rc;
}

void ios_store_close(struct ios_store *st)
{
	if (!st)
		return;
	if (st->is_lane) {
		pthread_mutex_lock(&st->sh->mu);
		st->sh->lanes--;
		pthread_mutex_unlock(&st->sh->mu);
		free(st->buf);
		free(st->block);
		free(st);
		return;
	}
	ios_spares_close(st->sh->spares);
	if (st->sh->fds)
		for (unsigned i = 0; i < st->sh->max_open; i++) {
			if (st->sh->fds[i].fd >= 0)
				st->disk->ops->close(st->disk, st->sh->fds[i].fd);
			if (st->sh->fds[i].sums >= 0)
				st->disk->ops->close(st->disk, st->sh->fds[i].sums);
		}
	ios_registry_close(st->sh->reg);
	free(st->sh->fds);
	pthread_mutex_destroy(&st->sh->mu);
	free(st->sh);
	free(st->buf);
	free(st->block);
	free(st->dir);
	free(st->root);
	free(st);
}

int ios_store_lane(struct ios_store *st, struct ios_store **out)
{
	struct ios_store *lane;

	pthread_mutex_lock(&st->sh->mu);
	/* Each lane holds at most one slot busy; eviction needs one free. */
	if (st->sh->lanes + 2 >= st->sh->max_open) {
		pthread_mutex_unlock(&st->sh->mu);
		return -EMFILE;
	}
	st->sh->lanes++;
	pthread_mutex_unlock(&st->sh->mu);
	if (!(lane = calloc(1, sizeof(*lane)))) {
		pthread_mutex_lock(&st->sh->mu);
		st->sh->lanes--;
		pthread_mutex_unlock(&st->sh->mu);
		return -ENOMEM;
	}
	lane->sh = st->sh;
	lane->is_lane = 1;
	lane->disk = st->disk;
	lane->root = st->root;
	lane->dir = st->dir;
	lane->remade = st->remade;
	lane->made_s = st->made_s;
	*out = lane;
	return 0;
}

uint32_t ios_store_csum_block(const struct ios_store *st)
{
	return st->sh->csum_block;
}

int ios_store_csum_check(uint64_t block, char *err, size_t errlen)
{
	if (tp_obj_block_valid(block))
		return 0;
	snprintf(err, errlen, "csum_block (%llu bytes) is not a power of two from %u to %u bytes",
		 (unsigned long long)block, TP_OBJ_BLOCK_MIN, TP_OBJ_BLOCK_MAX);
	return -EINVAL;
}

const char *ios_store_why(const struct ios_store *st)
{
	return st->why;
}

void ios_store_faults(const struct ios_store *st, struct ios_store_faults *out)
{
	pthread_mutex_lock(&st->sh->mu);
	*out = st->sh->faults;
	pthread_mutex_unlock(&st->sh->mu);
}

int ios_store_list(struct ios_store *st, uint64_t after, uint64_t *handles, size_t max,
		   size_t *n)
{
	pthread_mutex_lock(&st->sh->mu);
	*n = ios_registry_list(st->sh->reg, after, handles, max);
	pthread_mutex_unlock(&st->sh->mu);
	return 0;
}

int ios_store_holds(const struct ios_store *st, uint64_t handle)
{
	int held;

	pthread_mutex_lock(&st->sh->mu);
	held = ios_registry_holds(st->sh->reg, handle);
	pthread_mutex_unlock(&st->sh->mu);
	return held;
}

void store_object_path(const struct ios_store *st, uint64_t handle, const char *suffix,
		       char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64 "%s", st->dir, (unsigned)(handle & 0xff), handle,
		 suffix);
}

static struct ios_fd *cached(struct ios_store *st, uint64_t handle)
{
	for (unsigned i = 0; i < st->sh->max_open; i++)
		if (st->sh->fds[i].fd >= 0 && st->sh->fds[i].handle == handle) {
			st->sh->fds[i].used = ++st->sh->clock;
			return &st->sh->fds[i];
		}
	return NULL;
}

static void slot_close(struct ios_store *st, struct ios_fd *slot)
{
	st->disk->ops->close(st->disk, slot->fd);
	if (slot->sums >= 0)
		st->disk->ops->close(st->disk, slot->sums);
	slot->fd = slot->sums = -1;
}

/* How object_get finds an object: as it is (a missing one has no slot),
 * or made if missing (a write's). */
enum obj_get { OBJ_EXISTING, OBJ_CREATE };

/* Open file `file` of object `handle` at `path` for reading and writing,
 * made if missing: a spare moved into place when one is ready (*fresh
 * set), else made by the open itself. */
static int open_made(struct ios_store *st, uint64_t handle, enum ios_file file, const char *path,
		     int *fresh)
{
	struct ios_disk *d = st->disk;
	int rc = st->sh->spares ? ios_spares_take(st->sh->spares, path) : -ENOENT, fd = -ENOENT;

	*fresh = 0;
	if (rc != -ENOENT)
		fd = d->ops->open(d, handle, file, path, O_RDWR | O_CLOEXEC, 0);
	if (fd >= 0) {
		*fresh = !rc;
		return fd;
	}
	if (!rc && fd != -ENOENT) { /* moved in, not opened: as if never made */
		(void)d->ops->unlink(d, handle, file, path);
		return fd;
	}
	/* No spare, or the file went between (a fault disk's lost object). */
	return d->ops->open(d, handle, file, path, O_RDWR | O_CLOEXEC | O_CREAT, 0600);
}

/* The slot of an object's open data file; OBJ_CREATE makes the file if
 * missing, else -ENOENT. */
static int object_open(struct ios_store *st, uint64_t handle, enum obj_get how,
		       struct ios_fd **out)
{
	struct ios_fd *slot;
	char path[4096];
	int fd, fresh = 0;

	store_object_path(st, handle, "", path, sizeof(path));
	if (how == OBJ_CREATE)
		fd = open_made(st, handle, IOS_FILE_DATA, path, &fresh);
	else
		fd = st->disk->ops->open(st->disk, handle, IOS_FILE_DATA, path,
					 O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	slot = NULL;
	for (unsigned i = 0; i < st->sh->max_open; i++) {
		if (st->sh->fds[i].fd < 0) {
			slot = &st->sh->fds[i];
			break;
		}
		if (!st->sh->fds[i].busy && (!slot || st->sh->fds[i].used < slot->used))
			slot = &st->sh->fds[i];
	}
	/* ios_store_lane keeps more slots than lanes: one is never busy */
	if (slot->fd >= 0)
		slot_close(st, slot);
	slot->fd = fd;
	slot->handle = handle;
	slot->fresh = fresh;
	slot->used = ++st->sh->clock;
	*out = slot;
	return 0;
}

static void forget(struct ios_store *st, uint64_t handle)
{
	struct ios_fd *slot = cached(st, handle);

	if (slot)
		slot_close(st, slot);
}

/* A missing object the store must not take for a hole: -EIO, saying why. */
static int lost(struct ios_store *st, uint64_t handle)
{
	char path[4096], when[64];
	struct tm tm;
	time_t t = (time_t)st->made_s;

	if (!st->quiet)
		st->sh->faults.lost_objects++;
	store_object_path(st, handle, "", path, sizeof(path));
	if (ios_registry_holds(st->sh->reg, handle)) {
		snprintf(st->why, sizeof(st->why), "the object is lost: this storage daemon made "
			 "it, but its file %s is gone", path);
	} else {
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
		snprintf(st->why, sizeof(st->why), "the object is not here, and this storage "
			 "daemon cannot tell whether it held it: its store was remade on %s in a "
			 "directory that held none (a lost or emptied disk), so the objects it "
			 "held before are lost", when);
	}
	return -EIO;
}

/* An object's slot, size and time. A missing object has no slot (NULL)
 * and size 0 if the store never held it; with OBJ_CREATE it is made, its
 * record first. One the store holds whose file is gone (or was removed
 * behind the daemon's back, while open) is lost: -EIO, and not made again
 * (the rest of it would read as zeros). */
static int object_get_locked(struct ios_store *st, uint64_t handle, enum obj_get how,
			     struct ios_fd **slot, uint64_t *size, int64_t *mtime_ns)
{
	int held = ios_registry_holds(st->sh->reg, handle), rc;
	int make = how == OBJ_CREATE && !held;
	struct stat sb;

	*size = 0;
	*mtime_ns = 0;
	st->why[0] = 0;
	*slot = cached(st, handle);
	if (*slot) {
		if ((rc = st->disk->ops->fstat(st->disk, (*slot)->fd, &sb)))
			return rc;
		if (sb.st_nlink == 0) { /* unlinked while open: gone */
			if (!(*slot)->busy) /* else a later lookup closes it */
				slot_close(st, *slot);
			*slot = NULL;
		}
	}
	if (!*slot) {
		if (make && (rc = ios_registry_add(st->sh->reg, handle)))
			return rc;
		rc = object_open(st, handle, make ? OBJ_CREATE : OBJ_EXISTING, slot);
		if (rc == -ENOENT) {
			*slot = NULL;
			if (held || st->remade)
				return lost(st, handle);
			return 0; /* never held: a hole */
		}
		if (rc) {
			if (make)
				(void)ios_registry_drop(st->sh->reg, handle); /* not made after all */
			return rc;
		}
		if (how == OBJ_CREATE)
			return 0; /* just opened: there, and a write needs no size */
		if ((rc = st->disk->ops->fstat(st->disk, (*slot)->fd, &sb)))
			return rc;
	} else if (make && (rc = ios_registry_add(st->sh->reg, handle))) {
		return rc; /* a file the registry did not know: record it */
	}
	*size = (uint64_t)sb.st_size;
	*mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	return 0;
}

/* object_get_locked under the store's lock; the slot it gives is busy
 * (kept from eviction) until object_put. */
static int object_get(struct ios_store *st, uint64_t handle, enum obj_get how,
		      struct ios_fd **slot, uint64_t *size, int64_t *mtime_ns)
{
	int rc;

	pthread_mutex_lock(&st->sh->mu);
	rc = object_get_locked(st, handle, how, slot, size, mtime_ns);
	if (rc)
		*slot = NULL;
	if (*slot)
		(*slot)->busy++;
	pthread_mutex_unlock(&st->sh->mu);
	return rc;
}

static void object_put(struct ios_store *st, struct ios_fd *slot)
{
	if (!slot)
		return;
	pthread_mutex_lock(&st->sh->mu);
	slot->busy--;
	pthread_mutex_unlock(&st->sh->mu);
}

int ios_store_missing(struct ios_store *st, uint64_t handle)
{
	struct ios_fd *slot;
	uint64_t size;
	int64_t mtime_ns;
	int rc;

	if (!ios_store_holds(st, handle))
		return 0;
	st->quiet = 1;
	rc = object_get(st, handle, OBJ_EXISTING, &slot, &size, &mtime_ns);
	st->quiet = 0;
	object_put(st, slot);
	st->why[0] = 0;
	return rc == -EIO;
}

int ios_store_size(struct ios_store *st, uint64_t handle, uint64_t *size, int64_t *mtime_ns,
		   uint64_t *blocks)
{
	struct ios_fd *slot;
	struct stat sb;
	int rc = object_get(st, handle, OBJ_EXISTING, &slot, size, mtime_ns);

	if (blocks)
		*blocks = 0;
	/* One more fstat for the allocation: object_get's is shared with
	 * every read and write, which do not want it. */
	if (!rc && slot && blocks && !st->disk->ops->fstat(st->disk, slot->fd, &sb))
		*blocks = (uint64_t)sb.st_blocks;
	object_put(st, slot);
	return rc;
}

/* A file about to be lent is no spare's to reuse (ios_spare.h): its mark
 * goes first. */
static int unmark(struct ios_store *st, int fd)
{
	struct stat sb;
	int rc = st->disk->ops->fstat(st->disk, fd, &sb);

	if (rc || !(sb.st_mode & S_ISVTX))
		return rc;
	return st->disk->ops->fchmod(st->disk, fd, sb.st_mode & 0777);
}

/* ios_store_open_read's opens, under the store's lock (so a remove that
 * takes the files back for spares sees them lent). */
static int open_read_locked(struct ios_store *st, uint64_t handle, int *fd, int *sums)
{
	char path[4096];
	int rc;

	store_object_path(st, handle, "", path, sizeof(path));
	rc = st->disk->ops->open(st->disk, handle, IOS_FILE_DATA, path, O_RDONLY | O_CLOEXEC, 0);
	if (rc < 0)
		return rc;
	*fd = rc;
	store_object_path(st, handle, ".sum", path, sizeof(path));
	rc = st->disk->ops->open(st->disk, handle, IOS_FILE_SUMS, path, O_RDONLY | O_CLOEXEC, 0);
	if (rc >= 0)
		*sums = rc;
	else if (rc != -ENOENT)
		return rc;
	rc = unmark(st, *fd);
	return rc || *sums < 0 ? rc : unmark(st, *sums);
}

int ios_store_open_read(struct ios_store *st, uint64_t handle, int *fd, int *sums)
{
	int held, rc;

	*fd = *sums = -1;
	pthread_mutex_lock(&st->sh->mu);
	held = ios_registry_holds(st->sh->reg, handle) || st->remade;
	rc = open_read_locked(st, handle, fd, sums);
	pthread_mutex_unlock(&st->sh->mu);
	if (rc == -ENOENT && *fd < 0)
		return held ? -EIO : -ENOENT;
	if (rc) {
		if (*fd >= 0)
			st->disk->ops->close(st->disk, *fd);
		if (*sums >= 0)
			st->disk->ops->close(st->disk, *sums);
		*fd = *sums = -1;
	}
	return rc;
}

enum io_dir { IO_READ, IO_WRITE };

/* The whole of iov[0..n) at offset, retrying short transfers; reads stop
 * at end of file. Returns bytes moved or -errno. Callers use
 * store_full_read and store_full_write. */
static ssize_t full_iov(struct ios_store *st, int fd, struct iovec *iov, int n, uint64_t offset,
			enum io_dir dir, uint64_t *syscalls)
{
	struct ios_disk *d = st->disk;
	size_t done = 0;

	while (n > 0) {
		ssize_t k = dir == IO_WRITE ? d->ops->pwritev(d, fd, iov, n, (off_t)offset)
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

ssize_t store_full_read(struct ios_store *st, int fd, struct iovec *iov, int n, uint64_t offset,
			uint64_t *syscalls)
{
	return full_iov(st, fd, iov, n, offset, IO_READ, syscalls);
}

ssize_t store_full_write(struct ios_store *st, int fd, struct iovec *iov, int n,
			 uint64_t offset, uint64_t *syscalls)
{
	return full_iov(st, fd, iov, n, offset, IO_WRITE, syscalls);
}

/* buf[0..len) from the file at offset, zeros past its end. */
static int read_zeroed(struct ios_store *st, int fd, uint8_t *buf, size_t len, uint64_t offset,
		       uint64_t *syscalls)
{
	struct iovec iov = { buf, len };
	ssize_t got = store_full_read(st, fd, &iov, 1, offset, syscalls);

	if (got < 0)
		return (int)got;
	memset(buf + got, 0, len - (size_t)got);
	return 0;
}

/* The store's scratch buffer, at least len bytes. */
static uint8_t *scratch(struct ios_store *st, size_t len)
{
	if (len > st->buf_len) {
		uint8_t *b = realloc(st->buf, len);

		if (!b)
			return NULL;
		st->buf = b;
		st->buf_len = len;
	}
	return st->buf;
}

/* ------------------------------------------------------------ checksums
 *
 * OBJECT.sum is the checksum file of proto/tp_objfmt.h (local reads read
 * it too): its layout and its rules are there. Its block is the store's
 * csum_block (st->sh->csum_block, `B` below). */

/* This lane's buffer of one checksum block (a partial block's bytes). */
static uint8_t *lane_block(struct ios_store *st)
{
	if (!st->block)
		st->block = malloc(st->sh->csum_block);
	return st->block;
}

static int sums_fd(struct ios_store *st, struct ios_fd *slot, int create)
{
	char path[4096];
	int fresh;

	if (slot->sums >= 0)
		return slot->sums;
	store_object_path(st, slot->handle, ".sum", path, sizeof(path));
	/* A new object has no checksum file yet: no open to look for one. */
	slot->sums = slot->fresh ? -ENOENT
		     : st->disk->ops->open(st->disk, slot->handle, IOS_FILE_SUMS, path,
					   O_RDWR | O_CLOEXEC, 0);
	if (slot->sums == -ENOENT && create)
		slot->sums = open_made(st, slot->handle, IOS_FILE_SUMS, path, &fresh);
	if (slot->sums < 0) {
		int rc = slot->sums;

		slot->sums = -1;
		return rc;
	}
	return slot->sums;
}

/* The stored checksums of blocks [first, first + n): 0 where none is. */
static int sums_read(struct ios_store *st, struct ios_fd *slot, uint64_t first, size_t n,
		     uint32_t *out, uint64_t *syscalls)
{
	uint8_t *raw = (uint8_t *)out; /* decoded in place */
	int fd = sums_fd(st, slot, 0), rc;

	if (fd == -ENOENT) {
		memset(out, 0, n * sizeof(*out));
		return 0;
	}
	if (fd < 0)
		return fd;
	if ((rc = read_zeroed(st, fd, raw, n * TP_OBJ_SUM_SIZE, tp_obj_sums_offset(first), syscalls)))
		return rc;
	tp_obj_sums_decode(out, raw, n);
	return 0;
}

static int sums_write(struct ios_store *st, struct ios_fd *slot, uint64_t first, size_t n,
		      uint32_t *crcs, uint64_t *syscalls)
{
	uint8_t *raw = (uint8_t *)crcs; /* encoded in place */
	struct iovec iov = { raw, n * TP_OBJ_SUM_SIZE };
	int fd = sums_fd(st, slot, 1);
	ssize_t k;

	if (fd < 0)
		return fd;
	tp_obj_sums_encode(raw, crcs, n);
	k = store_full_write(st, fd, &iov, 1, tp_obj_sums_offset(first), syscalls);
	return k < 0 ? (int)k : 0;
}

/* Blocks [first, first + n), in buf, against their stored checksums. */
static int sums_check(struct ios_store *st, struct ios_fd *slot, uint64_t first, size_t n,
		      const uint8_t *buf, uint64_t *syscalls)
{
	uint32_t small[64], *stored = n <= 64 ? small : malloc(n * sizeof(*stored)), c;
	uint64_t B = st->sh->csum_block;
	size_t i;
	int rc;

	if (!stored)
		return -ENOMEM;
	rc = sums_read(st, slot, first, n, stored, syscalls);
	if (!rc && (i = tp_obj_blocks_check(stored, buf, n, n * B, B, &c)) < n) {
		uint64_t at = (first + i) * B;
		char path[4096];

		pthread_mutex_lock(&st->sh->mu);
		st->sh->faults.checksum_failures++;
		pthread_mutex_unlock(&st->sh->mu);
		store_object_path(st, slot->handle, "", path, sizeof(path));
		snprintf(st->why, sizeof(st->why), "the data is damaged: bytes %" PRIu64 " to %"
			 PRIu64 " of %s fail their checksum (stored %08" PRIx32 ", the bytes give %08"
			 PRIx32 ")", at, at + B - 1, path, stored[i], c);
		rc = -EIO;
	}
	if (stored != small)
		free(stored);
	return rc;
}

/* Blocks [first, first + n) of the object into buf (zeros past its end),
 * checked against their checksums. */
static int read_checked(struct ios_store *st, struct ios_fd *slot, uint64_t first, size_t n,
			uint8_t *buf, uint64_t *syscalls)
{
	uint64_t B = st->sh->csum_block;
	int rc = read_zeroed(st, slot->fd, buf, n * B, first * B, syscalls);

	return rc ? rc : sums_check(st, slot, first, n, buf, syscalls);
}

/* Write src[0..len) at `start` with the checksums of the blocks it
 * touches: whole blocks from src, a partial one at either end from the
 * file's bytes (checked first: a damaged block stays reported, never
 * checksummed anew) with src laid over them. `whole`: src lies inside a
 * buffer of those whole blocks, read and checked already (a sieved span),
 * so no partial block is read again. */
static int write_span(struct ios_store *st, struct ios_fd *slot, uint64_t start, uint64_t len,
		      const uint8_t *src, int whole, uint64_t *syscalls)
{
	uint64_t B = st->sh->csum_block, first = start / B, last = (start + len - 1) / B;
	size_t n = (size_t)(last - first + 1);
	uint32_t small[64], *crcs = n <= 64 ? small : malloc(n * sizeof(*crcs));
	uint8_t *block;
	struct iovec iov = { (void *)src, len };
	ssize_t k;
	int rc = 0;

	if (!crcs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t at = (first + i) * B, from, to;

		if (whole || (at >= start && at + B <= start + len)) {
			size_t run = 1; /* whole blocks in src from here, back to back */

			while (i + run < n && (whole || at + (run + 1) * B <= start + len))
				run++;
			tp_crc32c_blocks(at >= start ? src + (at - start) : src - (start - at), run,
					  B, crcs + i);
			i += run - 1;
			continue;
		}
		if (!(block = lane_block(st))) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = read_checked(st, slot, first + i, 1, block, syscalls)))
			goto out;
		from = start > at ? start : at;
		to = start + len < at + B ? start + len : at + B;
		memcpy(block + (from - at), src + (from - start), to - from);
		crcs[i] = tp_crc32c(0, block, B);
	}
	k = store_full_write(st, slot->fd, &iov, 1, start, syscalls);
	if (k < 0) {
		rc = (int)k;
		goto out;
	}
	/* A large write starts its way to the device now, so the disk works
	 * while the rest of a stream arrives and a later SYNC finds little
	 * left to do (by itself the kernel waits for 10% of memory dirty). */
	if (len >= IOS_WRITEBACK_MIN && st->disk->ops->writeback) {
		st->disk->ops->writeback(st->disk, slot->fd, (off_t)start, (off_t)len);
		(*syscalls)++;
	}
	rc = sums_write(st, slot, first, n, crcs, syscalls);
out:
	if (crcs != small)
		free(crcs);
	return rc;
}

/* ---------------------------------------------------------- reads, writes */

int ios_store_sieve_check(uint64_t gap, uint64_t span, char *err, size_t errlen)
{
	if (gap > span) {
		snprintf(err, errlen, "sieve_gap (%llu bytes) exceeds sieve_span (%llu bytes): "
			 "a gap that wide could never be merged; make the span at least the gap",
			 (unsigned long long)gap, (unsigned long long)span);
		return -EINVAL;
	}
	return 0;
}

int ios_store_set_sieve(struct ios_store *st, uint64_t gap, uint64_t span, char *err,
			size_t errlen)
{
	int rc = ios_store_sieve_check(gap, span, err, errlen);

	if (rc)
		return rc;
	st->sh->sieve_gap = gap;
	st->sh->sieve_span = span;
	return 0;
}

int ios_store_set_spares(struct ios_store *st, unsigned want, char *err, size_t errlen)
{
	ios_spares_close(st->sh->spares); /* its thread stops before the names are cleared */
	st->sh->spares = NULL;
	return ios_spares_open(st->disk, st->root, want, &st->sh->spares, err, errlen);
}

int ios_store_spares(struct ios_store *st, struct ios_spares_stats *out)
{
	if (!st->sh->spares)
		return -ENOENT;
	ios_spares_stats(st->sh->spares, out);
	return 0;
}

/* Pieces i.. that go in one span: ascending, gaps of at most the store's
 * sieve gap, spanning at most its sieve span (or one piece). Returns how
 * many. */
static size_t sieve_group(const struct ios_store *st, const struct ios_piece *pieces, size_t n,
			  size_t i, uint64_t *span)
{
	uint64_t start = pieces[i].offset, end = start + pieces[i].length;
	uint64_t gap = st->sh->sieve_gap, most = st->sh->sieve_span;
	size_t j = i + 1;

	while (j < n && pieces[j].offset >= end && pieces[j].offset - end <= gap &&
	       pieces[j].offset + pieces[j].length - start <= most) {
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

ssize_t ios_store_write_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			 size_t n, const uint8_t *data, uint64_t *syscalls)
{
	struct ios_fd *slot;
	size_t i = 0, pos = 0;
	uint64_t size;
	int64_t mtime_ns;
	int rc = object_get(st, handle, OBJ_CREATE, &slot, &size, &mtime_ns);

	while (!rc && i < n) {
		uint64_t span, start = pieces[i].offset;
		size_t k = sieve_group(st, pieces, n, i, &span), sum = 0;
		const uint8_t *src = data + pos;

		for (size_t j = i; j < i + k; j++)
			sum += pieces[j].length;
		if (sum < span) {
			/* Data sieving: read the span (whole blocks, checked),
			 * lay the pieces over it, write it back. Safe without
			 * locks: this daemon is the only writer of its objects
			 * and runs one request on an object at a time. Bytes past the
			 * object's end read as zeros, which is what they would
			 * read as anyway. */
			uint64_t B = st->sh->csum_block, first = start / B;
			size_t blocks = (size_t)((start + span + B - 1) / B - first);
			uint8_t *buf = scratch(st, blocks * B);

			if (!buf) {
				rc = -ENOMEM;
				break;
			}
			if ((rc = read_checked(st, slot, first, blocks, buf, syscalls)))
				break;
			buf += start - first * B;
			for (size_t j = i; j < i + k; j++) {
				if (pieces[j].length) /* an empty one may lie past the span */
					memcpy(buf + (pieces[j].offset - start), data + pos,
					       pieces[j].length);
				pos += pieces[j].length;
			}
			src = buf;
		} else {
			pos += span; /* adjacent pieces: their data is contiguous too */
		}
		if (span)
			rc = write_span(st, slot, start, span, src, sum < span, syscalls);
		i += k;
	}
	object_put(st, slot);
	return rc < 0 ? rc : (ssize_t)pos;
}

static ssize_t read_pieces(struct ios_store *st, struct ios_fd *slot, uint64_t size,
			   const struct ios_piece *pieces, size_t n, uint8_t *data,
			   uint64_t *syscalls)
{
	size_t i = 0, pos = 0;
	uint64_t B = st->sh->csum_block;
	int rc;

	while (i < n) {
		/* A group of pieces read as one span of whole blocks, checked,
		 * then copied out; bytes past the object's end are zeros (all
		 * of a missing object: a hole). */
		uint64_t span, start = pieces[i].offset, first, end;
		size_t k = sieve_group(st, pieces, n, i, &span);
		uint8_t *buf;

		end = start + span < size ? start + span : size;
		if (start >= end) {
			for (size_t j = i; j < i + k; j++) {
				memset(data + pos, 0, pieces[j].length);
				pos += pieces[j].length;
			}
			i += k;
			continue;
		}
		first = start / B;
		if (k == 1 && start % B == 0 && span % B == 0) {
			/* one piece of whole blocks: read and check it in place */
			if ((rc = read_checked(st, slot, first, span / B, data + pos,
					       syscalls)))
				return rc;
			pos += span;
			i++;
			continue;
		}
		end = (end + B - 1) / B * B;
		if (!(buf = scratch(st, end - first * B)))
			return -ENOMEM;
		if ((rc = read_checked(st, slot, first, (end - first * B) / B, buf, syscalls)))
			return rc;
		for (size_t j = i; j < i + k; j++) {
			const struct ios_piece *p = &pieces[j];
			uint64_t have = p->offset >= size ? 0 : size - p->offset;

			if (have > p->length)
				have = p->length;
			memcpy(data + pos, buf + (p->offset - first * B), have);
			memset(data + pos + have, 0, p->length - have);
			pos += p->length;
		}
		i += k;
	}
	return (ssize_t)pos;
}

ssize_t ios_store_read_pieces(struct ios_store *st, uint64_t handle, const struct ios_piece *pieces,
			size_t n, uint8_t *data, uint64_t *object_size, uint64_t *syscalls)
{
	struct ios_fd *slot;
	int64_t mtime_ns;
	uint64_t size;
	ssize_t rc;

	*object_size = 0;
	if ((rc = object_get(st, handle, OBJ_EXISTING, &slot, &size, &mtime_ns)))
		return rc;
	*object_size = size;
	rc = read_pieces(st, slot, size, pieces, n, data, syscalls);
	object_put(st, slot);
	return rc;
}

static int truncate_slot(struct ios_store *st, struct ios_fd *slot, uint64_t size)
{
	uint64_t B = st->sh->csum_block, calls = 0, last = size / B;
	size_t keep = (size_t)(size % B);
	uint8_t *block = keep ? lane_block(st) : NULL;
	uint32_t crc;
	int rc, fd;

	if (keep && !block)
		return -ENOMEM;
	/* The block the new end falls in is checked before it is cut (and
	 * checksummed anew: its bytes past the end become zeros). */
	if ((keep && (rc = read_checked(st, slot, last, 1, block, &calls))) ||
	    (rc = st->disk->ops->ftruncate(st->disk, slot->fd, (off_t)size)))
		return rc;
	/* Checksums of the blocks that remain (growing changes none: bytes
	 * past the end counted as zeros already). */
	if ((fd = sums_fd(st, slot, 1)) < 0)
		return fd;
	if ((rc = st->disk->ops->ftruncate(st->disk, fd,
					   (off_t)tp_obj_sums_offset((size + B - 1) / B))))
		return rc;
	if (!keep)
		return 0;
	crc = tp_obj_block_sum(block, keep, B);
	return sums_write(st, slot, last, 1, &crc, &calls);
}

int ios_store_truncate(struct ios_store *st, uint64_t handle, uint64_t size)
{
	struct ios_fd *slot;
	uint64_t old;
	int64_t mtime_ns;
	int rc;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	/* A missing object is made even for size 0: its modification time
	 * is the file's truncate time (clients read it with the size). */
	if ((rc = object_get(st, handle, OBJ_CREATE, &slot, &old, &mtime_ns)))
		return rc;
	rc = truncate_slot(st, slot, size);
	object_put(st, slot);
	return rc;
}

int ios_store_fallocate(struct ios_store *st, uint64_t handle, uint64_t off, uint64_t len,
			enum ios_alloc_size how)
{
	struct ios_fd *slot;
	uint64_t size;
	int64_t mtime_ns;
	int rc;

	if (len == 0)
		return -EINVAL;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EFBIG;
	if ((rc = object_get(st, handle, OBJ_CREATE, &slot, &size, &mtime_ns)))
		return rc;
	/* Allocation alone (KEEP_SIZE) changes no byte the object holds, so
	 * its checksums stand; the size then grows as a truncate up does,
	 * which is what keeps them right. */
	rc = st->disk->ops->fallocate(st->disk, slot->fd, (off_t)off, (off_t)len);
	if (!rc && how == IOS_ALLOC_EXTEND) {
		struct stat sb;

		if (!(rc = st->disk->ops->fstat(st->disk, slot->fd, &sb)) &&
		    (uint64_t)sb.st_size < off + len)
			rc = truncate_slot(st, slot, off + len);
	}
	object_put(st, slot);
	return rc;
}

/* An object's file taken back as a spare (ios_spare.h): 0 if it is gone
 * from `path`, else the caller unlinks it. Under the store's lock, so a
 * lend (ios_store_open_read) comes before or after, not between. */
static int remove_to_spare(struct ios_store *st, const char *path)
{
	struct ios_spare_claim c;
	int rc;

	if (!st->sh->spares)
		return -ENOSPC;
	pthread_mutex_lock(&st->sh->mu);
	rc = ios_spares_reclaim(st->sh->spares, path, &c);
	pthread_mutex_unlock(&st->sh->mu);
	if (!rc)
		ios_spares_reclaim_end(st->sh->spares, &c);
	return rc;
}

int ios_store_remove(struct ios_store *st, uint64_t handle)
{
	static const struct { const char *suffix; enum ios_file file; } files[] = {
		{ "", IOS_FILE_DATA }, { ".sum", IOS_FILE_SUMS }, { ".ctr", IOS_FILE_COUNTERS },
	};
	char path[4096];
	int rc;

	st->why[0] = 0;
	pthread_mutex_lock(&st->sh->mu);
	forget(st, handle);
	pthread_mutex_unlock(&st->sh->mu);
	/* Its checksums and counters go with it, then its record. */
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		store_object_path(st, handle, files[i].suffix, path, sizeof(path));
		if (files[i].file != IOS_FILE_COUNTERS && !remove_to_spare(st, path))
			continue;
		rc = st->disk->ops->unlink(st->disk, handle, files[i].file, path);
		if (rc && rc != -ENOENT)
			return rc;
	}
	pthread_mutex_lock(&st->sh->mu);
	rc = ios_registry_drop(st->sh->reg, handle);
	pthread_mutex_unlock(&st->sh->mu);
	return rc;
}

/* fdatasync one of an object's side files, if it has it: 1 if it has, 0
 * if not, or a negative errno. */
static int sync_side(struct ios_store *st, uint64_t handle, const char *suffix,
		     enum ios_file file)
{
	struct ios_disk *d = st->disk;
	char path[4096];
	int fd, rc;

	store_object_path(st, handle, suffix, path, sizeof(path));
	fd = d->ops->open(d, handle, file, path, O_RDWR | O_CLOEXEC, 0600);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	rc = d->ops->fdatasync(d, fd);
	d->ops->close(d, fd);
	return rc ? rc : 1;
}

static int sync_slot(struct ios_store *st, uint64_t handle, struct ios_fd *slot)
{
	char path[4096];
	int rc, sums = 0, counters;

	if (slot && (rc = st->disk->ops->fdatasync(st->disk, slot->fd)))
		return rc;
	if (slot && slot->sums >= 0 && (rc = st->disk->ops->fdatasync(st->disk, slot->sums)))
		return rc;
	if (slot && slot->sums < 0 && (sums = sync_side(st, handle, ".sum", IOS_FILE_SUMS)) < 0)
		return sums;
	counters = sync_side(st, handle, ".ctr", IOS_FILE_COUNTERS);
	if (counters < 0)
		return counters;
	/* The record of an object synced is at least as durable as its data. */
	pthread_mutex_lock(&st->sh->mu);
	rc = ios_registry_sync(st->sh->reg);
	pthread_mutex_unlock(&st->sh->mu);
	if (rc)
		return rc;
	if (!slot && !counters)
		return 0;
	/* The names of the object and its side files must be durable too. */
	snprintf(path, sizeof(path), "%s/%02x", st->dir, (unsigned)(handle & 0xff));
	return st->disk->ops->syncdir(st->disk, path);
}

int ios_store_sync(struct ios_store *st, uint64_t handle)
{
	struct ios_fd *slot;
	uint64_t size;
	int64_t mtime_ns;
	int rc;

	/* A lost object cannot be made durable: say so. */
	if ((rc = object_get(st, handle, OBJ_EXISTING, &slot, &size, &mtime_ns)))
		return rc;
	rc = sync_slot(st, handle, slot);
	object_put(st, slot);
	return rc;
}

int ios_store_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail, uint64_t *fsid)
{
	struct statvfs sv;
	int rc = st->disk->ops->statvfs(st->disk, st->dir, &sv);

	if (rc)
		return rc;
	/* The size is what is used plus what is available: the blocks
	 * reserved for root are neither, so `df` through a mount shows the
	 * local disk's Used and Avail (and Use%), not the reserve as used. */
	*total = ((uint64_t)sv.f_blocks - sv.f_bfree + sv.f_bavail) * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*fsid = (uint64_t)sv.f_fsid;
	return 0;
}

const char *ios_store_dir(const struct ios_store *st)
{
	return st->dir;
}
