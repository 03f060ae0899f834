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

/* Count tf as a writer of its file (if it is one). 0 or -ENOMEM. */
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
 * is setting the kernel's attributes (tf_sync_kernel_attrs): such a
 * truncate or utimens is answered at once, without asking the servers.
 * The kernel fills in the requester's thread id, which no other process
 * can forge. */
int tf_is_fixup(void)
{
	struct fuse_context *c = fuse_get_context();
	struct tfuse *t = c->private_data;
	int found = 0;

	if (!t->writeback)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (struct tfixer *x = t->fixers; x && !found; x = x->next)
		found = x->tid == c->pid;
	pthread_mutex_unlock(&t->lock);
	return found;
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

/* Wait, under t->lock, until fewer than max_fixers threads set the
 * kernel's attributes, at most FIX_WAIT_MS: bounded, since the threads
 * those wait for may all be taken by waiters like this one. 1 when there
 * is room. */
static int fixer_slot_wait(struct tfuse *t)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FIX_WAIT_MS / 1000;
	while (t->nfixers >= t->max_fixers)
		if (pthread_cond_timedwait(&t->fixed, &t->lock, &until) == ETIMEDOUT)
			return t->nfixers < t->max_fixers;
	return 1;
}

/* Whether the kernel's size or mtime (sx) are not the servers' (ts). */
static int kernel_differs(const struct statx *sx, const struct tessera_stat *ts)
{
	return sx->stx_size != ts->size || sx->stx_mtime.tv_sec != ts->mtime.tv_sec ||
	       sx->stx_mtime.tv_nsec != (uint32_t)ts->mtime.tv_nsec;
}

/* Set the kernel's size (kernel_size now) and mtime of the file at full
 * (path in Tessera) to the servers' (ts), unless this mount has it open
 * for writing or another thread is at it. */
static void set_kernel_attrs(struct tfuse *t, const char *full, const char *path,
			     off_t kernel_size, const struct tessera_stat *ts)
{
	const struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, ts->mtime };
	struct tinode *n;
	int go;

	pthread_mutex_lock(&t->lock);
	n = tinode_get(t, ts->handle, 1);
	go = n && !n->writers && !n->fixing;
	if (go)
		n->fixing = 1;
	else if (n)
		tinode_put(t, n);
	pthread_mutex_unlock(&t->lock);
	if (!go)
		return;
	if ((uint64_t)kernel_size != ts->size && truncate(full, (off_t)ts->size))
		fprintf(stderr, "tessera-fuse: open %s: cannot set the kernel's size to the "
			"servers' %llu: %s\n", path, (unsigned long long)ts->size, strerror(errno));
	else if (utimensat(AT_FDCWD, full, times, 0))
		fprintf(stderr, "tessera-fuse: open %s: cannot set the kernel's mtime to the "
			"servers': %s\n", path, strerror(errno));
	pthread_mutex_lock(&t->lock);
	n->fixing = 0;
	tinode_put(t, n);
	pthread_mutex_unlock(&t->lock);
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
 * (and sets the size to 0 itself). Every system call here on the mount
 * (the stat that reads the kernel's view too) waits for requests other
 * threads serve, so at most max_fixers threads are in here at once.
 * Failures leave the kernel's cached attributes as they were, and are
 * logged. */
void tf_sync_kernel_attrs(struct tfuse *t, const char *path, const struct tessera_stat *ts)
{
	struct tfixer me = { .tid = gettid() };
	char full[PATH_MAX];
	struct statx sx;

	if (!t->writeback || !t->mount_dir ||
	    snprintf(full, sizeof(full), "%s%s", t->mount_dir, path) >= (int)sizeof(full))
		return;
	pthread_mutex_lock(&t->lock);
	if (!fixer_slot_wait(t)) {
		pthread_mutex_unlock(&t->lock);
		fprintf(stderr, "tessera-fuse: open %s: %u opens set the kernel's attributes "
			"for %d s; this one may see an older size (raise -o max_threads)\n",
			path, t->max_fixers, FIX_WAIT_MS / 1000);
		return;
	}
	t->nfixers++;
	me.next = t->fixers;
	t->fixers = &me;
	pthread_mutex_unlock(&t->lock);
	/* What the kernel holds (the opener keeps its inode cached), as it
	 * holds it: under the writeback cache a getattr would not change its
	 * size and mtime, and asking one could wait forever. libfuse serves
	 * this request only after a rename of the file queued behind the
	 * open (which holds the file's path until it is answered). The
	 * truncate and utimensat of set_kernel_attrs still wait for such a
	 * rename: a known limit (docs/user-guide.md, the writeback cache). */
	if (!statx(AT_FDCWD, full, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_SIZE | STATX_MTIME, &sx) &&
	    S_ISREG(sx.stx_mode) && kernel_differs(&sx, ts))
		set_kernel_attrs(t, full, path, (off_t)sx.stx_size, ts);
	pthread_mutex_lock(&t->lock);
	for (struct tfixer **p = &t->fixers; *p; p = &(*p)->next)
		if (*p == &me) {
			*p = me.next;
			break;
		}
	t->nfixers--;
	pthread_cond_broadcast(&t->fixed);
	pthread_mutex_unlock(&t->lock);
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

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (FLUSH_TICK_MS % 1000) * 1000000L;
		until.tv_sec += FLUSH_TICK_MS / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
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
