/*
 * ios_spare.c - empty files kept ready for a store's new objects (see
 * ios_spare.h).
 *
 * Spares are files named by number in DIR/spare. A name is free, in
 * flight (being made or emptied, outside the lock) or ready; `free_ids`
 * and `ready_ids` are stacks of the free and ready names. The thread makes
 * spares while fewer than `want` are ready or on their way; removed
 * objects' files are taken back while fewer than IOS_SPARES_MAX are (a
 * remove of many files followed by as many creates, as in a benchmark's
 * rounds or a build tree made again, reuses them all). There are twice as
 * many names, so a free one is always there to begin with.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ios_disk.h"
#include "ios_spare.h"

#define IOS_SPARE_NAMES (2 * IOS_SPARES_MAX)
/* After a failed make, the thread waits this long before the next try. */
#define IOS_SPARE_RETRY_MS 1000

struct ios_spares {
	pthread_mutex_t mu;
	pthread_cond_t wake;   /* the maker: a spare was taken, or stop */
	struct ios_disk *disk;
	char *dir;             /* ROOT/spare */
	unsigned want;
	unsigned free_ids[IOS_SPARE_NAMES], n_free;
	unsigned ready_ids[IOS_SPARES_MAX], n_ready;
	unsigned in_flight;
	uint64_t made, taken, missed, reused;
	int last_error;
	int stop;
	int running;           /* the thread was started */
	pthread_t thread;
};

static void spare_path(const struct ios_spares *sp, unsigned id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u", sp->dir, id);
}

/* Under mu: a free name for a spare about to be made or taken back, or
 * -ENOSPC if `limit` are ready or on their way. */
static int begin_locked(struct ios_spares *sp, unsigned limit, unsigned *id)
{
	if (sp->n_ready + sp->in_flight >= limit || !sp->n_free)
		return -ENOSPC; /* (no name free: only with more takes in flight than names) */
	*id = sp->free_ids[--sp->n_free];
	sp->in_flight++;
	return 0;
}

/* Under mu: the spare `id` is ready (ok) or its name free again. */
static void end_locked(struct ios_spares *sp, unsigned id, int ok)
{
	sp->in_flight--;
	if (ok)
		sp->ready_ids[sp->n_ready++] = id;
	else
		sp->free_ids[sp->n_free++] = id;
}

/* Where the thread makes a spare: a directory of its own, because a
 * creation holds its directory's lock for the whole (slow) allocation, and
 * the renames that take spares need the lock of theirs. */
static void staging_path(const struct ios_spares *sp, char *buf, size_t len)
{
	snprintf(buf, len, "%s/new/next", sp->dir);
}

/* Make spare `id`: an empty file made aside (a file left there is
 * removed first), then renamed to its name. */
static int make_one(struct ios_spares *sp, unsigned id)
{
	char path[4200], aside[4200];
	int fd, rc;

	staging_path(sp, aside, sizeof(aside));
	for (int tries = 0;; tries++) {
		fd = sp->disk->ops->open(sp->disk, 0, IOS_FILE_STORE, aside,
					 O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, IOS_SPARE_MODE);
		if (fd != -EEXIST || tries)
			break;
		(void)sp->disk->ops->unlink(sp->disk, 0, IOS_FILE_STORE, aside);
	}
	if (fd < 0)
		return fd;
	if ((rc = sp->disk->ops->close(sp->disk, fd)))
		return rc;
	spare_path(sp, id, path, sizeof(path));
	return sp->disk->ops->rename(sp->disk, aside, path, IOS_RENAME_REPLACE);
}

static void wait_retry(struct ios_spares *sp)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += IOS_SPARE_RETRY_MS / 1000;
	until.tv_nsec += (long)(IOS_SPARE_RETRY_MS % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	(void)pthread_cond_timedwait(&sp->wake, &sp->mu, &until);
}

/* The thread: keeps `want` spares ready, making one file at a time
 * outside the lock; after a failure it waits (a full disk frees up, or
 * not: the store then creates its files itself). */
static void *maker(void *arg)
{
	struct ios_spares *sp = arg;

	pthread_mutex_lock(&sp->mu);
	while (!sp->stop) {
		unsigned id;
		int rc;

		if (begin_locked(sp, sp->want, &id)) {
			pthread_cond_wait(&sp->wake, &sp->mu);
			continue;
		}
		pthread_mutex_unlock(&sp->mu);
		rc = make_one(sp, id);
		pthread_mutex_lock(&sp->mu);
		end_locked(sp, id, !rc);
		if (!rc) {
			sp->made++;
			continue;
		}
		sp->last_error = rc;
		if (!sp->stop)
			wait_retry(sp);
	}
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

/* Remove every name and the file being made (what an earlier daemon
 * left); all names free. */
static int clear_names(struct ios_spares *sp, char *err, size_t errlen)
{
	char path[4200];

	for (unsigned i = 0; i <= IOS_SPARE_NAMES; i++) {
		int rc;

		if (i < IOS_SPARE_NAMES) {
			spare_path(sp, i, path, sizeof(path));
			sp->free_ids[sp->n_free++] = IOS_SPARE_NAMES - 1 - i;
		} else {
			staging_path(sp, path, sizeof(path));
		}
		rc = sp->disk->ops->unlink(sp->disk, 0, IOS_FILE_STORE, path);
		if (rc && rc != -ENOENT) {
			snprintf(err, errlen, "spare file %s: unlink: %s", path, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Directory `path` of the spares, made if missing. */
static int make_dir(struct ios_spares *sp, const char *path, char *err, size_t errlen)
{
	int rc = sp->disk->ops->mkdir(sp->disk, path, 0700);

	if (!rc || rc == -EEXIST)
		return 0;
	snprintf(err, errlen, "spare files: mkdir %s: %s", path, strerror(-rc));
	return rc;
}

int ios_spares_open(struct ios_disk *disk, const char *root, unsigned want,
		    struct ios_spares **out, char *err, size_t errlen)
{
	struct ios_spares *sp;
	char aside[4200];
	int rc;

	*out = NULL;
	if (want > IOS_SPARES_MAX) {
		snprintf(err, errlen, "spare files: %u asked, at most %u", want, IOS_SPARES_MAX);
		return -EINVAL;
	}
	if (!(sp = calloc(1, sizeof(*sp))) || asprintf(&sp->dir, "%s/spare", root) < 0) {
		free(sp);
		snprintf(err, errlen, "spare files of %s: out of memory", root);
		return -ENOMEM;
	}
	pthread_mutex_init(&sp->mu, NULL);
	pthread_cond_init(&sp->wake, NULL);
	sp->disk = disk;
	sp->want = want;
	snprintf(aside, sizeof(aside), "%s/new", sp->dir);
	if (!(rc = make_dir(sp, sp->dir, err, errlen)) && !(rc = make_dir(sp, aside, err, errlen)) &&
	    !(rc = clear_names(sp, err, errlen)) && want &&
	    (rc = -pthread_create(&sp->thread, NULL, maker, sp)))
		snprintf(err, errlen, "spare files of %s: no thread: %s", root, strerror(-rc));
	if (rc) {
		ios_spares_close(sp);
		return rc;
	}
	sp->running = want > 0;
	*out = sp;
	return 0;
}

void ios_spares_close(struct ios_spares *sp)
{
	if (!sp)
		return;
	if (sp->running) {
		pthread_mutex_lock(&sp->mu);
		sp->stop = 1;
		pthread_cond_signal(&sp->wake);
		pthread_mutex_unlock(&sp->mu);
		pthread_join(sp->thread, NULL);
	}
	pthread_cond_destroy(&sp->wake);
	pthread_mutex_destroy(&sp->mu);
	free(sp->dir);
	free(sp);
}

int ios_spares_take(struct ios_spares *sp, const char *path)
{
	char from[4200];
	unsigned id;
	int rc;

	pthread_mutex_lock(&sp->mu);
	if (!sp->n_ready) {
		sp->missed++;
		pthread_mutex_unlock(&sp->mu);
		return -ENOENT;
	}
	id = sp->ready_ids[--sp->n_ready];
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->mu);
	spare_path(sp, id, from, sizeof(from));
	rc = sp->disk->ops->rename(sp->disk, from, path, IOS_RENAME_NEW);
	if (rc)
		(void)sp->disk->ops->unlink(sp->disk, 0, IOS_FILE_STORE, from);
	pthread_mutex_lock(&sp->mu);
	sp->free_ids[sp->n_free++] = id;
	sp->taken += (uint64_t)!rc;
	pthread_mutex_unlock(&sp->mu);
	/* Any other failure (the spare gone, path's directory gone): the
	 * caller's own creation meets the cause and reports it. */
	return !rc || rc == -EEXIST ? rc : -ENOENT;
}

int ios_spares_reclaim(struct ios_spares *sp, const char *path, struct ios_spare_claim *c)
{
	struct ios_disk *d = sp->disk;
	char to[4200];
	struct stat sb;
	int rc;

	c->fd = -1;
	c->reuse = 0;
	pthread_mutex_lock(&sp->mu);
	rc = sp->want ? begin_locked(sp, IOS_SPARES_MAX, &c->id) : -ENOSPC;
	pthread_mutex_unlock(&sp->mu);
	if (rc)
		return rc;
	spare_path(sp, c->id, to, sizeof(to));
	if ((rc = d->ops->rename(d, path, to, IOS_RENAME_REPLACE))) {
		pthread_mutex_lock(&sp->mu);
		end_locked(sp, c->id, 0);
		pthread_mutex_unlock(&sp->mu);
		return rc;
	}
	/* Kept only if it is a spare's file no reader was lent. */
	c->fd = d->ops->open(d, 0, IOS_FILE_STORE, to, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	c->reuse = c->fd >= 0 && !d->ops->fstat(d, c->fd, &sb) && S_ISREG(sb.st_mode) &&
		   (sb.st_mode & 07777) == IOS_SPARE_MODE;
	return 0;
}

void ios_spares_reclaim_end(struct ios_spares *sp, struct ios_spare_claim *c)
{
	struct ios_disk *d = sp->disk;
	char path[4200];
	int ok = c->reuse && !d->ops->ftruncate(d, c->fd, 0);

	if (c->fd >= 0)
		(void)d->ops->close(d, c->fd);
	spare_path(sp, c->id, path, sizeof(path));
	if (!ok)
		(void)d->ops->unlink(d, 0, IOS_FILE_STORE, path);
	pthread_mutex_lock(&sp->mu);
	end_locked(sp, c->id, ok);
	sp->reused += (uint64_t)ok;
	pthread_mutex_unlock(&sp->mu);
}

void ios_spares_stats(struct ios_spares *sp, struct ios_spares_stats *out)
{
	pthread_mutex_lock(&sp->mu);
	out->made = sp->made;
	out->taken = sp->taken;
	out->missed = sp->missed;
	out->reused = sp->reused;
	out->ready = sp->n_ready;
	out->last_error = sp->last_error;
	pthread_mutex_unlock(&sp->mu);
}
