/*
 * fuse_wback.c - the mount's writeback bookkeeping: which files this
 * mount has open for writing, the fix-up that makes the kernel's cached
 * size and mtime the servers' at open (close-to-open under the kernel's
 * writeback cache), and the flusher's timer. tessera_fuse.c's header
 * says what the mount promises; this file is how the writeback cache
 * keeps it.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuse_int.h"

#define FIX_OPEN_WAIT_MS 2000 /* an open's wait for its fix-up (a job) */
#define FIX_TRIES 3           /* a stale fix-up: the servers asked again */

/*
 * The kernel's writeback cache (FUSE_CAP_WRITEBACK_CACHE) holds writes
 * in the page cache and sends them in up to 1 MiB requests: at close
 * (flush) and fsync, when the mount's dirty pages pass the kernel's limit
 * for it (/sys/class/bdi/DEV/max_bytes), and on the flusher's timer
 * (FLUSH_TICK_MS). A write that fails there (a storage daemon down) is
 * kept by the kernel and returned by the next fsync or close of the file.
 *
 * The price: the kernel then trusts its own size and mtime of a regular
 * file over what getattr answers, for as long as it caches the inode,
 * even when no page is dirty. Close-to-open is kept by tf_sync_kernel_attrs
 * at each open. (Measured: without the cache each write(2) is a round
 * trip to the storage daemons, 2.2 MB/s in 400-byte writes; a write-
 * behind buffer in this process still costs a FUSE round trip per
 * write(2), 11 MB/s; the kernel's cache 121 to 132 MB/s.)
 */

/* Remember a change of the kernel's size or mtime of handle (0: a file
 * not known, which counts for every file) through this mount. Under
 * t->lock. */
static void attrs_changed(struct tfuse *t, uint64_t handle)
{
	t->attr_epoch++;
	t->attr_changed[t->attr_epoch % ATTR_CHANGES] = handle;
}

/* Whether a change of handle, or of a file not known, was remembered
 * after attr_epoch was `seen` (or too many since to tell). Under t->lock. */
static int changed_since(const struct tfuse *t, uint64_t seen, uint64_t handle)
{
	if (t->attr_epoch - seen >= ATTR_CHANGES)
		return 1;
	for (uint64_t e = seen + 1; e <= t->attr_epoch; e++) {
		uint64_t h = t->attr_changed[e % ATTR_CHANGES];

		if (!h || h == handle)
			return 1;
	}
	return 0;
}

/* The bookkeeping of handle; created if `create`. Under t->lock. */
static struct tinode *tinode_get(struct tfuse *t, uint64_t handle, int create)
{
	struct tinode *n;

	for (n = t->inodes; n; n = n->next)
		if (n->handle == handle)
			return n;
	if (!create || !(n = calloc(1, sizeof(*n))))
		return NULL;
	n->handle = handle;
	n->next = t->inodes;
	t->inodes = n;
	return n;
}

/* Drop n if nothing refers to it any more. Under t->lock. */
static void tinode_put(struct tfuse *t, struct tinode *n)
{
	struct tinode **p;

	if (n->writers || n->fixing)
		return;
	for (p = &t->inodes; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			free(n);
			return;
		}
}

/* tf on or off the mount's list of open files. Under t->lock. */
static void open_link(struct tfuse *t, struct tfile *tf)
{
	tf->prev = NULL;
	tf->next = t->open;
	if (t->open)
		t->open->prev = tf;
	t->open = tf;
}

static void open_unlink(struct tfuse *t, struct tfile *tf)
{
	if (tf->prev)
		tf->prev->next = tf->next;
	else if (t->open == tf)
		t->open = tf->next;
	if (tf->next)
		tf->next->prev = tf->prev;
	tf->prev = tf->next = NULL;
}

int tf_writer_add(struct tfuse *t, struct tfile *tf)
{
	struct tinode *n;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (tf->writer) {
		n = tinode_get(t, tf->handle, 1);
		if (n) {
			n->writers++;
			t->nwriters++;
			attrs_changed(t, tf->handle);
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc)
		open_link(t, tf);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void tf_writer_remove(struct tfuse *t, struct tfile *tf)
{
	struct tinode *n;

	pthread_mutex_lock(&t->lock);
	open_unlink(t, tf);
	n = tf->writer ? tinode_get(t, tf->handle, 0) : NULL;
	if (n && n->writers) {
		n->writers--;
		t->nwriters--;
		attrs_changed(t, tf->handle);
		tinode_put(t, n);
	}
	pthread_mutex_unlock(&t->lock);
}

struct tfile *tf_open_take(struct tfuse *t)
{
	struct tfile *tf;

	pthread_mutex_lock(&t->lock);
	tf = t->open;
	pthread_mutex_unlock(&t->lock);
	if (tf)
		tf_writer_remove(t, tf);
	return tf;
}

int tf_writing(struct tfuse *t, uint64_t handle)
{
	struct tinode *n;
	int writing;

	pthread_mutex_lock(&t->lock);
	n = tinode_get(t, handle, 0);
	writing = n && n->writers;
	pthread_mutex_unlock(&t->lock);
	return writing;
}

/* Whether the current request comes from a thread of this process that
 * is setting the kernel's attributes (tf_sync_kernel_attrs, fuse_links.c):
 * such a truncate or utimens is answered at once, without asking the
 * servers. The kernel fills in the requester's thread id, which no other
 * process can forge. It sends the request holding the inode's lock, so a
 * change another thread made of the same inode was served (tf_attrs_set)
 * before this, or will be after. */
int tf_is_fixup(int *answer)
{
	struct fuse_context *c = fuse_get_context();
	struct tfuse *t = c->private_data;
	struct tfixer *x;

	if (!t->writeback)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (x = t->fixers; x && x->tid != c->pid; x = x->next)
		;
	if (x)
		*answer = x->mode == TF_FIX_UNLESS_CHANGED &&
			  changed_since(t, x->seen, x->handle) ? -EAGAIN : 0;
	pthread_mutex_unlock(&t->lock);
	return x != NULL;
}

int tf_attrs_set(int rc, const char *path, const struct fuse_file_info *fi)
{
	struct tfuse *t = fuse_get_context()->private_data;
	struct tessera_stat ts;
	uint64_t handle = 0;

	if (!t->writeback || rc < 0)
		return rc;
	/* the file: its handle's, or the name cache's (which never asks) */
	if (fi && fi->fh)
		handle = ((const struct tfile *)(uintptr_t)fi->fh)->handle;
	else if (!tessera_stat_held(t->fs, path, &ts))
		handle = ts.handle;
	pthread_mutex_lock(&t->lock);
	attrs_changed(t, handle);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

uint64_t tf_attr_epoch(struct tfuse *t)
{
	uint64_t e;

	pthread_mutex_lock(&t->lock);
	e = t->attr_epoch;
	pthread_mutex_unlock(&t->lock);
	return e;
}

/* Count `me` (its tid set) among the threads whose requests are this
 * mount's own fix-ups (tf_is_fixup), or stop counting it. */
void tf_fixer_enter(struct tfuse *t, struct tfixer *me)
{
	pthread_mutex_lock(&t->lock);
	me->next = t->fixers;
	t->fixers = me;
	pthread_mutex_unlock(&t->lock);
}

void tf_fixer_leave(struct tfuse *t, struct tfixer *me)
{
	pthread_mutex_lock(&t->lock);
	for (struct tfixer **p = &t->fixers; *p; p = &(*p)->next)
		if (*p == me) {
			*p = me->next;
			break;
		}
	pthread_mutex_unlock(&t->lock);
}

/* Take one of max_fixers places for an open that sets the kernel's
 * attributes, waiting at most FIX_WAIT_MS: bounded, since the requests it
 * waits for need threads that may all be taken by opens like this one.
 * 0, or -EBUSY (logged) when none came. */
static int fixer_join(struct tfuse *t, const char *path)
{
	struct timespec until;
	int room = 1;

	tf_deadline(&until, FIX_WAIT_MS);
	pthread_mutex_lock(&t->lock);
	while (room && t->nfixers >= t->max_fixers)
		if (pthread_cond_timedwait(&t->fixed, &t->lock, &until) == ETIMEDOUT)
			room = t->nfixers < t->max_fixers;
	if (room)
		t->nfixers++;
	pthread_mutex_unlock(&t->lock);
	if (!room)
		fprintf(stderr, "tessera-fuse: open %s: %u opens set the kernel's attributes "
			"for %d s; this one may see an older size (raise -o max_threads)\n",
			path, t->max_fixers, FIX_WAIT_MS / 1000);
	return room ? 0 : -EBUSY;
}

static void fixer_part(struct tfuse *t)
{
	pthread_mutex_lock(&t->lock);
	t->nfixers--;
	pthread_cond_broadcast(&t->fixed);
	pthread_mutex_unlock(&t->lock);
}

/* Mark handle as being fixed: 0 when this mount has the file open for
 * writing or another fix of it runs (or no memory), 1 when marked. */
static int fixing_mark(struct tfuse *t, uint64_t handle)
{
	struct tinode *n;
	int go;

	pthread_mutex_lock(&t->lock);
	n = tinode_get(t, handle, 1);
	go = n && !n->writers && !n->fixing;
	if (go)
		n->fixing = 1;
	else if (n)
		tinode_put(t, n);
	pthread_mutex_unlock(&t->lock);
	return go;
}

static void fixing_unmark(struct tfuse *t, uint64_t handle)
{
	struct tinode *n;

	pthread_mutex_lock(&t->lock);
	n = tinode_get(t, handle, 0);
	if (n) {
		n->fixing = 0;
		tinode_put(t, n);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Whether the kernel's size or mtime (sx) are not the servers' (ts). */
static int kernel_differs(const struct statx *sx, const struct tessera_stat *ts)
{
	return sx->stx_size != ts->size || sx->stx_mtime.tv_sec != ts->mtime.tv_sec ||
	       sx->stx_mtime.tv_nsec != (uint32_t)ts->mtime.tv_nsec;
}

/* A fix-up: the servers' size and mtime (ts) of the file at full, asked
 * after attr_epoch was `seen`; a job's copy (fuse_job.c). */
struct kattr_fix {
	struct tessera_stat ts;
	uint64_t seen;
	char full[PATH_MAX];
};

/* A fix-up's truncate(2) or utimensat(2) failed with err: logged unless
 * refused as stale (EAGAIN: the servers are asked again). -err. */
static int fix_failed(const char *full, const char *what, int err)
{
	if (err != EAGAIN)
		fprintf(stderr, "tessera-fuse: open %s: cannot set the kernel's %s to the "
			"servers': %s\n", full, what, strerror(err));
	return -err;
}

/* The fix-up through fd (O_PATH), if it is still the file the open found
 * (its inode number is the handle) and the kernel's attributes still
 * differ. The truncate goes through /proc/self/fd, which names the inode,
 * not whatever file has the name by then. */
static int fix_fd(int fd, const struct kattr_fix *x)
{
	const struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, x->ts.mtime };
	char proc[32];
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MTIME, &sx) ||
	    !S_ISREG(sx.stx_mode) || sx.stx_ino != x->ts.handle || !kernel_differs(&sx, &x->ts))
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (sx.stx_size != x->ts.size && truncate(proc, (off_t)x->ts.size))
		return fix_failed(x->full, "size", errno);
	if (utimensat(fd, "", times, AT_EMPTY_PATH))
		return fix_failed(x->full, "mtime", errno);
	return 0;
}

static int fix_job(struct tfuse *t, void *arg)
{
	const struct kattr_fix *x = arg;
	int fd = open(x->full, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int rc = 0;

	if (fd >= 0) {   /* (gone: nothing of it is cached) */
		rc = fix_fd(fd, x);
		close(fd);
	}
	fixing_unmark(t, x->ts.handle);
	return rc;
}

/* One try of tf_sync_kernel_attrs: a job when the kernel's attributes
 * differ, waited for until `until`. 0, -EAGAIN (stale), -ETIMEDOUT (the
 * job goes on) or another negative errno. */
static int fix_try(struct tfuse *t, const struct kattr_fix *x, const struct timespec *until)
{
	const struct tfixer as = { .mode = TF_FIX_UNLESS_CHANGED, .seen = x->seen,
				   .handle = x->ts.handle };
	struct statx sx;
	struct tf_job *j;

	/* What the kernel holds (the opener keeps its inode cached), as it
	 * holds it: under the writeback cache a getattr would not change its
	 * size and mtime, and asking one could wait for a rename of the file
	 * that libfuse queued behind this open. */
	if (statx(AT_FDCWD, x->full, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_SIZE | STATX_MTIME,
		  &sx) || !S_ISREG(sx.stx_mode) || !kernel_differs(&sx, &x->ts) ||
	    !fixing_mark(t, x->ts.handle))
		return 0;
	j = tf_job_start(t, fix_job, x, sizeof(*x), &as);
	if (j)
		return tf_job_wait(j, until);
	fixing_unmark(t, x->ts.handle);
	return -ENOMEM;
}

/* Make the kernel's size and mtime of the file at path those of the
 * servers (ts), through the mount itself: a truncate(2) sets the kernel's
 * size to what the truncate request answers (the only attribute reply it
 * takes the size from under the writeback cache), and a utimensat(2) sets
 * its mtime. Both requests come back to this process (tf_is_fixup) and
 * change nothing on the servers. Only while no handle of this mount has
 * the file open for writing: then the kernel holds no dirty page of it
 * (close writes them all back) and the servers' attributes are the newer.
 * Never for an O_TRUNC open, for which the kernel holds the inode's lock
 * (and sets the size to 0 itself).
 *
 * The two calls are a job (fuse_job.c) that the open waits for at most
 * FIX_OPEN_WAIT_MS: libfuse holds the file's path until the open is
 * answered, and a rename of it queued behind the open holds the inode's
 * lock that they need. Such an open returns with the older attributes,
 * and the job sets them once the rename is done.
 *
 * ts may be older than what the kernel holds by the time it is set:
 * another process's utimensat or truncate through this mount, served
 * after the servers were asked, or a writer's open or close since. Then
 * the request is refused (changed_since `seen`) and the servers
 * are asked again, at most FIX_TRIES times. Failures leave the kernel's
 * cached attributes as they were, and are logged. */
void tf_sync_kernel_attrs(struct tfuse *t, const char *path, tessera_file *f, uint64_t seen,
			  const struct tessera_stat *ts)
{
	struct kattr_fix x = { .ts = *ts, .seen = seen };
	struct timespec until;
	int tries = 1, rc;

	if (!t->writeback || !t->mount_dir ||
	    snprintf(x.full, sizeof(x.full), "%s%s", t->mount_dir, path) >= (int)sizeof(x.full) ||
	    fixer_join(t, path))
		return;
	tf_deadline(&until, FIX_OPEN_WAIT_MS);
	while ((rc = fix_try(t, &x, &until)) == -EAGAIN && tries < FIX_TRIES) {
		tries++;
		x.seen = tf_attr_epoch(t);
		if (tessera_fstat(f, &x.ts))
			break;
	}
	fixer_part(t);
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "tessera-fuse: open %s: setting the kernel's size and mtime to the "
			"servers' waits for more than %d ms (a rename of the file queued behind "
			"this open?); the open returns first\n", path, FIX_OPEN_WAIT_MS);
	else if (rc == -EAGAIN)
		fprintf(stderr, "tessera-fuse: open %s: the kernel's size or mtime changed while "
			"being set to the servers' (%d tries); left as they are\n", path, tries);
}

/* Write back the mount's dirty pages (syncfs on its root). */
static void flush_mount(const struct tfuse *t)
{
	int fd = open(t->mount_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	/* A failed write is kept by the kernel for the file's fsync and
	 * close; syncfs's own error adds nothing. */
	(void)syncfs(fd);
	close(fd);
}

/* The writeback timer: every FLUSH_TICK_MS while a file is open for
 * writing through the mount. Holds no descriptor of the mount while idle,
 * so it never keeps an unmount busy that would otherwise succeed. */
static void *flusher(void *arg)
{
	struct tfuse *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec until;

		tf_deadline(&until, FLUSH_TICK_MS);
		pthread_cond_timedwait(&t->wake, &t->lock, &until);
		if (t->stop || !t->nwriters)
			continue;
		pthread_mutex_unlock(&t->lock);
		flush_mount(t);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void tf_flusher_start(struct tfuse *t)
{
	t->flusher_on = !pthread_create(&t->flusher, NULL, flusher, t);
}

void tf_flusher_stop(struct tfuse *t)
{
	pthread_mutex_lock(&t->lock);
	t->stop = 1;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	if (t->flusher_on)
		pthread_join(t->flusher, NULL);
	t->flusher_on = 0;
}
