/*
 * ios_store.c - objects as local files, with a cache of open descriptors,
 * block checksums beside them and a registry of the objects held
 * (ios_registry.c). Every disk call goes through the store's struct
 * ios_disk.
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
#include "ios_store.h"

struct ios_fd {
	uint64_t handle;
	int fd;            /* the data file; -1: slot free */
	int sums;          /* the checksum file; -1: not open yet (set by the
			    * lane that holds the slot busy) */
	uint64_t used;     /* clock of last use, for eviction */
	unsigned busy;     /* lanes using the descriptors now: not evicted */
};

/* What the lanes of a store share, under `mu`: the descriptor cache, the
 * registry and the counters. The disk calls on an object's descriptors
 * are made outside the lock by the lane holding its slot busy; the caller
 * (ios_pool.c) sees that two lanes never work on one object at once. */
struct ios_store_shared {
	pthread_mutex_t mu;
	unsigned max_open;
	struct ios_fd *fds;
	uint64_t clock;
	struct ios_registry *reg;
	struct ios_store_faults faults;
	unsigned lanes;    /* lanes open besides the store itself */
	uint64_t sieve_gap;  /* ios_store_set_sieve; set before any lane works */
	uint64_t sieve_span;
	uint32_t csum_block; /* the store's checksum block (its store file's;
			      * fixed at open, the same for every lane) */
};

struct ios_store {
	struct ios_store_shared *sh;
	int is_lane;       /* a lane: sh, root and dir are the store's */
	struct ios_disk *disk;  /* the caller's; every disk call goes here */
	char *root;        /* DIR */
	char *dir;         /* DIR/objects */
	int remade;        /* made where a store had been: see ios_store.h */
	int64_t made_s;    /* when the store was made (seconds since 1970) */
	uint8_t *buf;      /* this lane's scratch for reads and sieved writes */
	size_t buf_len;
	uint8_t *block;    /* this lane's one checksum block (a partial block
			    * read, laid over and summed), csum_block bytes */
	int quiet;         /* ios_store_missing: a question, counted nowhere */
	char why[4800];    /* ios_store_why (holds a path), this lane's */
};

static int mkdir_p(struct ios_disk *d, const char *path, int *existed)
{
	int rc = d->ops->mkdir(d, path, 0700);

	if (existed)
		*existed = rc == -EEXIST;
	return rc == -EEXIST ? 0 : rc;
}

/* ------------------------------------------------------- the store file
 *
 * DIR/store, four lines: "tessera-ios store 1", "made SECONDS", "remade
 * 0|1" and "csum_block BYTES". It is written aside and renamed in, last
 * when a store is made, so a directory with this file holds a whole store
 * and its checksum block size (on-disk format: a store's sums are read
 * with the block they were written with, or not at all). A store made
 * before the block was a tunable has no csum_block line: TP_OBJ_BLOCK.
 * A store with another block says "store 2" instead, so that a daemon
 * older than the line refuses it rather than reads its sums as 4 KiB
 * ones. */
#define STORE_MAGIC "tessera-ios store 1\n"
#define STORE_MAGIC2 "tessera-ios store 2\n"

static int store_file_write(struct ios_store *st)
{
	struct ios_disk *d = st->disk;
	char path[4200], tmp[4200], text[128];
	struct iovec iov = { text, 0 };
	int fd, rc;

	snprintf(path, sizeof(path), "%s/store", st->root);
	snprintf(tmp, sizeof(tmp), "%s/store.new", st->root);
	iov.iov_len = (size_t)snprintf(text, sizeof(text), "%smade %" PRId64 "\nremade %d\n"
				       "csum_block %" PRIu32 "\n",
				       st->sh->csum_block == TP_OBJ_BLOCK ? STORE_MAGIC : STORE_MAGIC2,
				       st->made_s, st->remade, st->sh->csum_block);
	fd = d->ops->open(d, 0, IOS_FILE_STORE, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	rc = d->ops->pwritev(d, fd, &iov, 1, 0);
	rc = rc < 0 ? rc : (size_t)rc == iov.iov_len ? 0 : -EIO;
	if (!rc)
		rc = d->ops->fdatasync(d, fd);
	d->ops->close(d, fd);
	if (!rc)
		rc = d->ops->rename(d, tmp, path);
	return rc ? rc : d->ops->syncdir(d, st->root);
}

/* The store file's text to the store's fields (csum_block into *block);
 * -EINVAL if it is not one. */
static int store_file_parse(struct ios_store *st, const char *text, uint32_t *block)
{
	int v2 = !strncmp(text, STORE_MAGIC2, strlen(STORE_MAGIC2));
	unsigned long long b = TP_OBJ_BLOCK;
	const char *line = strstr(text, "\ncsum_block ");

	if (!v2 && strncmp(text, STORE_MAGIC, strlen(STORE_MAGIC)))
		return -EINVAL;
	if (sscanf(text + strlen(STORE_MAGIC), "made %" SCNd64 "\nremade %d", &st->made_s,
		   &st->remade) != 2)
		return -EINVAL;
	/* No line: a store 1 made before it, the old constant. */
	if ((line && sscanf(line + 1, "csum_block %llu", &b) != 1) || (!line && v2) ||
	    !tp_obj_block_valid(b))
		return -EINVAL;
	*block = (uint32_t)b;
	return 0;
}

/* 0 and the store's fields (its checksum block into *block), -ENOENT if
 * DIR has no store file, -EINVAL if it is not one. */
static int store_file_read(struct ios_store *st, uint32_t *block)
{
	struct ios_disk *d = st->disk;
	char path[4200], text[128] = { 0 };
	struct iovec iov = { text, sizeof(text) - 1 };
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/store", st->root);
	fd = d->ops->open(d, 0, IOS_FILE_STORE, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	k = d->ops->preadv(d, fd, &iov, 1, 0);
	d->ops->close(d, fd);
	if (k < 0)
		return (int)k;
	return store_file_parse(st, text, block);
}

/* An existing store's checksum block `block` against the one asked for
 * (0: any). Sums are never read with another block than they were
 * written with: all would fail, or a partial write would sum anew bytes
 * never checked. */
static int store_block_check(const struct ios_store *st, uint32_t block, uint32_t want,
			     char *err, size_t errlen)
{
	if (!want || block == want)
		return 0;
	snprintf(err, errlen, "the store was made with csum_block %" PRIu32 " (%s/store), the "
		 "config says csum_block %" PRIu32 ": its checksums cannot be read with another "
		 "block size; set csum_block = %" PRIu32 " or give this daemon a new directory",
		 block, st->root, want, block);
	return -EINVAL;
}

/* Find or make the store in DIR (see IOS_STORE_NEW), with checksum
 * blocks of `want` bytes (0: the store's own; TP_OBJ_BLOCK for a new one).
 * A store made with another block is refused: its sums would all fail,
 * or worse, be rewritten by another rule. */
static int store_init(struct ios_store *st, int existed, unsigned flags, uint32_t want,
		      char **notice, char *err, size_t errlen)
{
	char path[4200];
	uint32_t block = want ? want : TP_OBJ_BLOCK;
	int rc = store_file_read(st, &block), made = 0;

	if (rc == -EINVAL) {
		snprintf(err, errlen, "%s/store is not a storage daemon's store file", st->root);
		return rc;
	}
	if (rc && rc != -ENOENT) {
		snprintf(err, errlen, "%s/store: %s", st->root, strerror(-rc));
		return rc;
	}
	if (!rc && (rc = store_block_check(st, block, want, err, errlen)))
		return rc;
	st->sh->csum_block = block;
	if (rc == -ENOENT) {
		made = 1;
		st->made_s = (int64_t)time(NULL);
		st->remade = existed && !(flags & IOS_STORE_NEW);
	}
	snprintf(path, sizeof(path), "%s/registry", st->root);
	if ((rc = ios_registry_open(st->disk, path,
				     made ? IOS_REGISTRY_CREATE : IOS_REGISTRY_LOAD, &st->sh->reg,
				     err, errlen)))
		return rc;
	if (made || (st->remade && (flags & IOS_STORE_NEW))) {
		int was_remade = st->remade;

		if (!made)
			st->remade = 0;
		if ((rc = store_file_write(st))) {
			snprintf(err, errlen, "%s/store: %s", st->root, strerror(-rc));
			return rc;
		}
		if (notice && (st->remade || was_remade) &&
		    asprintf(notice, st->remade
			     ? "storage directory %s held no store: made one, remade: it "
			       "cannot tell the objects it held before from holes, so it reports "
			       "every missing object it has not made since as lost (once the files "
			       "on it are dealt with, start once with -N)"
			     : "storage directory %s: the remade store is declared whole (-N): "
			       "missing objects it never held read as holes again", st->root) < 0)
			*notice = NULL;
	}
	return 0;
}

int ios_store_open(const char *dir, unsigned max_open, unsigned flags, uint32_t csum_block,
		   struct ios_disk *disk, struct ios_store **out, char **notice, char **errmsg)
{
	struct ios_store *st;
	char path[4096], err[600] = "";
	int rc = -ENOMEM, existed;

	if (notice)
		*notice = NULL;
	if (disk->ops->size < sizeof(struct ios_disk_ops)) {
		/* made against an older table: some op would be missing */
		if (errmsg && asprintf(errmsg, "storage directory %s: the disk's ops table has %zu "
				       "bytes, this store needs %zu", dir, disk->ops->size,
				       sizeof(struct ios_disk_ops)) < 0)
			*errmsg = NULL;
		return -EINVAL;
	}
	if (csum_block && !tp_obj_block_valid(csum_block)) {
		if (errmsg && asprintf(errmsg, "storage directory %s: csum_block %" PRIu32 " is not "
				       "a power of two from %u to %u bytes", dir, csum_block,
				       TP_OBJ_BLOCK_MIN, TP_OBJ_BLOCK_MAX) < 0)
			*errmsg = NULL;
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->sh = calloc(1, sizeof(*st->sh)))) {
		free(st);
		st = NULL;
		goto fail;
	}
	pthread_mutex_init(&st->sh->mu, NULL);
	st->disk = disk;
	st->sh->max_open = max_open ? max_open : 1;
	st->sh->sieve_gap = IOS_SIEVE_GAP;
	st->sh->sieve_span = IOS_SIEVE_SPAN;
	st->sh->fds = calloc(st->sh->max_open, sizeof(*st->sh->fds));
	if (!st->sh->fds)
		goto fail;
	for (unsigned i = 0; i < st->sh->max_open; i++)
		st->sh->fds[i].fd = st->sh->fds[i].sums = -1;
	snprintf(path, sizeof(path), "%s/objects", dir);
	if (!(st->dir = strdup(path)) || !(st->root = strdup(dir)))
		goto fail;
	if ((rc = mkdir_p(disk, dir, &existed)) || (rc = mkdir_p(disk, st->dir, NULL)))
		goto fail;
	for (unsigned i = 0; i < IOS_STORE_DIRS; i++) {
		snprintf(path, sizeof(path), "%s/%02x", st->dir, i);
		if ((rc = mkdir_p(disk, path, NULL)))
			goto fail;
	}
	if ((rc = store_init(st, existed, flags, csum_block, notice, err, sizeof(err))))
		goto fail;
	*out = st;
	return 0;
fail:
	if (errmsg && (err[0] ? asprintf(errmsg, "storage directory %s: %s", dir, err)
			      : asprintf(errmsg, "storage directory %s: %s", dir,
					 strerror(-rc))) < 0)
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

/* The file of object `handle` with `suffix` ("", ".sum", ".ctr"). */
static void object_path(const struct ios_store *st, uint64_t handle, const char *suffix,
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

/* The slot of an object's open data file; OBJ_CREATE makes the file if
 * missing, else -ENOENT. */
static int object_open(struct ios_store *st, uint64_t handle, enum obj_get how,
		       struct ios_fd **out)
{
	struct ios_fd *slot;
	char path[4096];
	int fd;

	object_path(st, handle, "", path, sizeof(path));
	fd = st->disk->ops->open(st->disk, handle, IOS_FILE_DATA, path,
				 O_RDWR | O_CLOEXEC | (how == OBJ_CREATE ? O_CREAT : 0), 0600);
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
	object_path(st, handle, "", path, sizeof(path));
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

int ios_store_open_read(struct ios_store *st, uint64_t handle, int *fd, int *sums)
{
	char path[4096];
	int held, rc;

	*fd = *sums = -1;
	pthread_mutex_lock(&st->sh->mu);
	held = ios_registry_holds(st->sh->reg, handle) || st->remade;
	pthread_mutex_unlock(&st->sh->mu);
	object_path(st, handle, "", path, sizeof(path));
	rc = st->disk->ops->open(st->disk, handle, IOS_FILE_DATA, path, O_RDONLY | O_CLOEXEC, 0);
	if (rc == -ENOENT)
		return held ? -EIO : -ENOENT;
	if (rc < 0)
		return rc;
	*fd = rc;
	object_path(st, handle, ".sum", path, sizeof(path));
	rc = st->disk->ops->open(st->disk, handle, IOS_FILE_SUMS, path, O_RDONLY | O_CLOEXEC, 0);
	if (rc >= 0)
		*sums = rc;
	else if (rc != -ENOENT) {
		st->disk->ops->close(st->disk, *fd);
		*fd = -1;
		return rc;
	}
	return 0;
}

enum io_dir { IO_READ, IO_WRITE };

/* The whole of iov[0..n) at offset, retrying short transfers; reads stop
 * at end of file. Returns bytes moved or -errno. Callers use full_read
 * and full_write. */
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

static ssize_t full_read(struct ios_store *st, int fd, struct iovec *iov, int n, uint64_t offset,
			 uint64_t *syscalls)
{
	return full_iov(st, fd, iov, n, offset, IO_READ, syscalls);
}

static ssize_t full_write(struct ios_store *st, int fd, struct iovec *iov, int n,
			  uint64_t offset, uint64_t *syscalls)
{
	return full_iov(st, fd, iov, n, offset, IO_WRITE, syscalls);
}

/* buf[0..len) from the file at offset, zeros past its end. */
static int read_zeroed(struct ios_store *st, int fd, uint8_t *buf, size_t len, uint64_t offset,
		       uint64_t *syscalls)
{
	struct iovec iov = { buf, len };
	ssize_t got = full_read(st, fd, &iov, 1, offset, syscalls);

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

	if (slot->sums >= 0)
		return slot->sums;
	object_path(st, slot->handle, ".sum", path, sizeof(path));
	slot->sums = st->disk->ops->open(st->disk, slot->handle, IOS_FILE_SUMS, path,
					 O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
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
	k = full_write(st, fd, &iov, 1, tp_obj_sums_offset(first), syscalls);
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
		object_path(st, slot->handle, "", path, sizeof(path));
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
	k = full_write(st, slot->fd, &iov, 1, start, syscalls);
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
		object_path(st, handle, files[i].suffix, path, sizeof(path));
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

	object_path(st, handle, suffix, path, sizeof(path));
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

/* ------------------------------------------------------------ counters
 *
 * The side file is CTR_MAGIC (8 bytes) then (key, value, owner uid, zero)
 * records of 24 bytes each, little-endian, the most recently used first.
 * A file without the magic is the older format: records of (key, value),
 * 16 bytes, whose owner is unknown (CTR_UNKNOWN); it is rewritten in the
 * new one at its next change. It is small (1.5 KiB at most) and read and
 * rewritten whole by each request. */
#define CTR_MAGIC 0x0000000252544354ull /* "TCTR", version 2 */
#define CTR_OLD_RECORD 16
#define CTR_RECORD 24
#define CTR_UNKNOWN UINT32_MAX

struct ctr {
	uint64_t key;
	int64_t value;
	uint32_t uid;
};

/* The records in buf (got bytes); a torn last record (a crash) is dropped. */
static size_t ctr_parse(const uint8_t *buf, size_t got, struct ctr *c)
{
	int v2 = got >= 8 && ios_le_get(buf, 8) == CTR_MAGIC;
	size_t size = v2 ? CTR_RECORD : CTR_OLD_RECORD, n;

	if (v2) {
		buf += 8;
		got -= 8;
	}
	n = got / size;
	if (n > IOS_COUNTERS)
		n = IOS_COUNTERS;
	for (size_t i = 0; i < n; i++, buf += size) {
		c[i].key = ios_le_get(buf, 8);
		c[i].value = (int64_t)ios_le_get(buf + 8, 8);
		c[i].uid = v2 ? (uint32_t)ios_le_get(buf + 16, 4) : CTR_UNKNOWN;
	}
	return n;
}

static size_t ctr_format(uint8_t *buf, const struct ctr *c, size_t n)
{
	memset(buf, 0, 8 + n * CTR_RECORD);
	ios_le_put(buf, 8, CTR_MAGIC);
	for (size_t i = 0; i < n; i++) {
		uint8_t *r = buf + 8 + i * CTR_RECORD;

		ios_le_put(r, 8, c[i].key);
		ios_le_put(r + 8, 8, (uint64_t)c[i].value);
		ios_le_put(r + 16, 4, c[i].uid);
	}
	return 8 + n * CTR_RECORD;
}

/* The least recently used record of the uid holding the most records
 * (owners unknown count as one uid). */
static size_t ctr_victim(const struct ctr *c, size_t n)
{
	uint32_t hog = c[n - 1].uid;
	size_t most = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		for (size_t j = 0; j < n; j++)
			k += c[j].uid == c[i].uid;
		if (k > most) {
			most = k;
			hog = c[i].uid;
		}
	}
	for (size_t i = n; i-- > 0;)
		if (c[i].uid == hog)
			return i;
	return n - 1;
}

/* key's record in c[0..*n), made for uid if there is none: its index, or
 * -EDQUOT when uid (not root) holds `share` records already. A full table
 * drops the least recently used record of the uid holding the most, so
 * one uid's keys push out only its own, not another user's counter. */
static long ctr_find(struct ctr *c, size_t *n, uint64_t key, uint32_t uid, uint32_t share)
{
	size_t mine = 0, at;

	for (size_t i = 0; i < *n; i++) {
		if (c[i].key == key)
			return (long)i;
		mine += c[i].uid == uid;
	}
	if (uid != 0 && mine >= share)
		return -EDQUOT;
	at = *n < IOS_COUNTERS ? (*n)++ : ctr_victim(c, *n);
	c[at] = (struct ctr){ key, 0, uid };
	return (long)at;
}

int ios_store_counter(struct ios_store *st, uint64_t handle, uint64_t key, enum ios_counter_op op,
		int64_t value, int64_t *old)
{
	return ios_store_counter_as(st, handle, key, op, value, NULL, old);
}

int ios_store_counter_as(struct ios_store *st, uint64_t handle, uint64_t key,
			 enum ios_counter_op op, int64_t value,
			 const struct ios_counter_owner *who, int64_t *old)
{
	struct ios_disk *d = st->disk;
	uint8_t buf[8 + IOS_COUNTERS * CTR_RECORD];
	struct ctr c[IOS_COUNTERS], mine;
	uint64_t syscalls = 0;
	struct iovec iov = { buf, sizeof(buf) };
	char path[4096];
	ssize_t got;
	size_t n;
	long at;
	int fd, rc = 0;

	object_path(st, handle, ".ctr", path, sizeof(path));
	fd = d->ops->open(d, handle, IOS_FILE_COUNTERS, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	got = full_read(st, fd, &iov, 1, 0, &syscalls);
	if (got < 0) {
		rc = (int)got;
		goto out;
	}
	n = ctr_parse(buf, (size_t)got, c);
	at = ctr_find(c, &n, key, who ? who->uid : 0, who ? who->share : IOS_COUNTERS);
	if (at < 0) {
		rc = (int)at;
		goto out;
	}
	mine = c[at];
	if (op == IOS_COUNTER_SET) {
		*old = mine.value;
		mine.value = value;
	} else if ((value > 0 && mine.value > INT64_MAX - value) ||
		   (value < 0 && mine.value < INT64_MIN - value)) {
		rc = -EOVERFLOW;
		goto out;
	} else {
		*old = mine.value;
		mine.value += value;
	}
	memmove(c + 1, c, (size_t)at * sizeof(*c)); /* the one used now goes first */
	c[0] = mine;
	iov.iov_base = buf;
	iov.iov_len = ctr_format(buf, c, n);
	got = full_write(st, fd, &iov, 1, 0, &syscalls);
	if (got < 0)
		rc = (int)got;
out:
	d->ops->close(d, fd);
	return rc;
}

int ios_store_statfs(struct ios_store *st, uint64_t *total, uint64_t *avail, uint64_t *fsid)
{
	struct statvfs sv;
	int rc = st->disk->ops->statvfs(st->disk, st->dir, &sv);

	if (rc)
		return rc;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*fsid = (uint64_t)sv.f_fsid;
	return 0;
}

const char *ios_store_dir(const struct ios_store *st)
{
	return st->dir;
}
