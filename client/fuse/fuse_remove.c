/*
 * fuse_remove.c - removes answered before the metadata daemon has them
 * (remove-behind), so that `rm -rf` does not wait for one synced write
 * per file.
 *
 * op_unlink hands a removal here when what this mount holds under lease
 * says it will succeed (tf_removable): the name is of a file, not a
 * directory, with one link, that this mount does not have open for
 * writing, and the caller may remove names from its directory (write and
 * search permission, and the sticky bit's rule). The kernel has checked
 * the same with its own attributes (default_permissions). The unlink is
 * answered at once, and REMOVE_SENDERS threads send the queued removals,
 * several at a time, so that the metadata daemon commits them together
 * (its group commit). The queue holds REMOVE_QUEUE removals; an unlink
 * beyond waits for room.
 *
 * What this mount does next sees the removal:
 *   - a getattr of a name still queued or on its way (the kernel's
 *     lookup) waits until it is answered, and finds nothing;
 *   - every other request that names a path or lists a directory waits
 *     until nothing is queued or on its way (tf_removes_settle): creates,
 *     renames, rmdir, opendir and readdir, opens, statfs, xattrs... So
 *     `rm f; echo > f` and `rm -rf d` behave as before;
 *   - another unlink, the getattr of other names (their directory's too:
 *     its times show the removals once they are answered) and the reads,
 *     writes, syncs and locks of open files do not wait.
 * Other mounts see a removal when it is sent: at once, or behind at most
 * REMOVE_QUEUE others.
 *
 * A removal that fails when sent (the daemon refused it, or could not be
 * reached) is logged with the library's message, which names the file
 * and the server; the name is still there (the kernel, which forgot it
 * when the unlink was answered, asks the daemon again, as does the
 * library's cache, which drops it), and the next fsync of a
 * directory on this mount fails with that error, once. A removal that
 * finds the name gone already (another client removed it) is no error.
 * Unmounting (op_destroy) sends what is queued first. A mount killed with removals
 * queued never sends them: those files stay, as names do on a local file
 * system that crashed before its journal's commit; fsync of the directory
 * is the point after which they are gone for good.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_int.h"

/* The caller may remove a name from directory d whose file is f: search
 * and write permission on d, and with d's sticky bit, the caller owns d
 * or f. Root may always. */
static int may_remove(const struct tessera_cred *c, const struct tessera_stat *d,
		      const struct tessera_stat *f)
{
	unsigned shift = 0;

	if (c->uid == 0)
		return 1;
	if (c->uid == d->uid) {
		shift = 6;
	} else {
		for (uint32_t i = 0; i < c->ngids && i < TESSERA_MAX_GROUPS; i++)
			if (c->gids[i] == d->gid)
				shift = 3;
	}
	if (((d->mode >> shift) & 3) != 3)
		return 0;
	return !(d->mode & S_ISVTX) || c->uid == d->uid || c->uid == f->uid;
}

int tf_removable(struct tfuse *t, const char *path, const struct tessera_cred *cred)
{
	struct tessera_stat f, d;
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!t->removes.on || !slash || n >= sizeof(parent))
		return 0;
	if (tessera_stat(t->fs, path, &f) || S_ISDIR(f.mode) || f.nlink > 1 ||
	    tf_writing(t, f.handle))
		return 0;
	memcpy(parent, path, n);
	strcpy(parent + n, n ? "" : "/");
	if (tessera_stat(t->fs, parent, &d))
		return 0;
	return may_remove(cred, &d, &f);
}

/* A slot to queue a removal in (r->lock held): waits for one while the
 * queue is full. NULL once the senders stop. */
static struct tf_removal *free_slot(struct tf_removes *r)
{
	for (;;) {
		if (!r->on)
			return NULL;
		for (unsigned i = 0; i < REMOVE_QUEUE; i++)
			if (r->slot[i].state == TF_REMOVAL_FREE)
				return &r->slot[i];
		pthread_cond_wait(&r->done, &r->lock);
	}
}

int tf_removes_defer(struct tfuse *t, const char *path, const struct tessera_cred *cred)
{
	struct tf_removes *r = &t->removes;
	struct tf_removal *s;
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	s = free_slot(r);
	if (s) {
		s->state = TF_REMOVAL_QUEUED;
		s->path = copy;
		s->cred = *cred;
		r->queued++;
		atomic_fetch_add(&r->busy, 1);
		pthread_cond_signal(&r->work);
	}
	pthread_mutex_unlock(&r->lock);
	if (!s) {
		free(copy);
		return -ESHUTDOWN;
	}
	return 0;
}

/* Whether path is queued or on its way (r->lock held). */
static int removing(const struct tf_removes *r, const char *path)
{
	for (unsigned i = 0; i < REMOVE_QUEUE; i++)
		if (r->slot[i].state != TF_REMOVAL_FREE && !strcmp(r->slot[i].path, path))
			return 1;
	return 0;
}

void tf_removes_settle_name(struct tfuse *t, const char *path)
{
	struct tf_removes *r = &t->removes;

	if (!atomic_load(&r->busy))
		return;
	pthread_mutex_lock(&r->lock);
	while (removing(r, path))
		pthread_cond_wait(&r->done, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void tf_removes_settle(struct tfuse *t)
{
	struct tf_removes *r = &t->removes;

	if (!atomic_load(&r->busy))
		return;
	pthread_mutex_lock(&r->lock);
	while (atomic_load(&r->busy))
		pthread_cond_wait(&r->done, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

int tf_removes_error(struct tfuse *t)
{
	struct tf_removes *r = &t->removes;
	int e;

	tf_removes_settle(t);
	pthread_mutex_lock(&r->lock);
	e = r->error;
	r->error = 0;
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* Send one removal, as the user who asked for it. A failure is logged
 * and kept for the next fsync of a directory. */
static void send_removal(struct tf_removes *r, tessera_fs *fs, struct tf_removal *s)
{
	int rc;

	tessera_set_thread_cred(fs, &s->cred);
	rc = tessera_unlink(fs, s->path);
	if (!rc || rc == -ENOENT)
		return;
	fprintf(stderr, "tessera-fuse: the unlink of %s, answered before it was sent, failed "
		"and the file is still there: %s (%s)\n", s->path, tessera_errmsg(fs),
		strerror(-rc));
	pthread_mutex_lock(&r->lock);
	if (!r->error)
		r->error = tf_errno(rc);
	pthread_mutex_unlock(&r->lock);
}

/* The first queued removal, marked on its way (r->lock held); NULL when
 * none is queued. */
static struct tf_removal *take_queued(struct tf_removes *r)
{
	for (unsigned i = 0; i < REMOVE_QUEUE; i++)
		if (r->slot[i].state == TF_REMOVAL_QUEUED) {
			r->slot[i].state = TF_REMOVAL_SENDING;
			r->queued--;
			return &r->slot[i];
		}
	return NULL;
}

static void *sender(void *arg)
{
	struct tfuse *t = arg;
	struct tf_removes *r = &t->removes;
	struct tf_removal *s;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->queued && !r->stop)
			pthread_cond_wait(&r->work, &r->lock);
		s = take_queued(r);
		if (!s)
			break;           /* stopping, and nothing queued */
		pthread_mutex_unlock(&r->lock);
		send_removal(r, t->fs, s);
		pthread_mutex_lock(&r->lock);
		free(s->path);
		s->path = NULL;
		s->state = TF_REMOVAL_FREE;
		atomic_fetch_sub(&r->busy, 1);
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int tf_removes_start(struct tfuse *t)
{
	struct tf_removes *r = &t->removes;

	for (unsigned i = 0; i < REMOVE_SENDERS; i++) {
		if (pthread_create(&r->thread[i], NULL, sender, t))
			break;
		r->nthreads++;
	}
	r->on = r->nthreads > 0;
	return r->on ? 0 : -EAGAIN;
}

void tf_removes_stop(struct tfuse *t)
{
	struct tf_removes *r = &t->removes;

	if (!r->nthreads)
		return;
	pthread_mutex_lock(&r->lock);
	r->on = 0;               /* unlinks from now on are sent by their caller */
	r->stop = 1;
	pthread_cond_broadcast(&r->work);
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < r->nthreads; i++)
		pthread_join(r->thread[i], NULL);
	r->nthreads = 0;
}
