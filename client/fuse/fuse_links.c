/*
 * fuse_links.c - hard links under the kernel's writeback cache.
 *
 * libfuse's path-based API gives each name its own node, so the kernel
 * holds one inode per name of a hard-linked file. Under the writeback
 * cache it keeps its own ctime (and mtime and size) of a regular file's
 * inode, never taking the server's (fuse_get_cache_mask), and it updates
 * only the inode of the name a link or unlink went through. So after
 * `ln a b; rm b`, `stat a` showed the ctime (and, for attr_timeout, the
 * link count) from before the unlink.
 *
 * The mount therefore remembers the names of hard-linked regular files
 * that the kernel looked up (tf_links_seen, from getattr), and when a
 * link, unlink or rename over one changes such a file's link count, it
 * sets the kernel's attributes of the file's other names
 * (fix_other_names): a utimensat(2) of each through the mount, which
 * keeps the kernel's mtime, sets its ctime to now (the kernel's clock:
 * just after the servers made the change) and takes the link count from
 * the reply (that setattr and its getattr are this mount's own fix-ups,
 * tf_is_fixup, answered without changing anything on the servers).
 *
 * The kernel still holds the parent directory's lock while the unlink
 * waits for its answer, and a name it does not have cached must be
 * looked up under that lock: so each fix is a job (fuse_job.c),
 * and the unlink waits for it at most FIX_NAME_WAIT_MS. A fix that has
 * not ended by then finds the name looked up afresh (with the servers'
 * attributes) once the unlink is answered. Names forgotten (a slot
 * reused, more than LINK_SLOTS hard-linked names) or remembered by
 * another mount keep their older ctime until attr_timeout and their next
 * open, as before.
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

#define FIX_NAME_WAIT_MS 250
#define FIX_NAMES_MAX 16     /* names fixed per change; more keep their ctime */

static unsigned slot_of(const char *path)
{
	uint32_t h = 2166136261u;   /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % LINK_SLOTS;
}

/* Remember path as a name of handle. Under l->lock. */
static void put_name(struct link_names *l, const char *path, uint64_t handle)
{
	unsigned i = slot_of(path);

	if (l->slot[i].path && !strcmp(l->slot[i].path, path)) {
		l->slot[i].handle = handle;
		return;
	}
	char *copy = strdup(path);

	if (!copy)
		return;      /* only a cache */
	free(l->slot[i].path);
	l->slot[i].path = copy;
	l->slot[i].handle = handle;
}

/* Forget path; its handle, or 0 when it was not remembered. Under
 * l->lock. */
static uint64_t take_name(struct link_names *l, const char *path)
{
	unsigned i = slot_of(path);
	uint64_t h;

	if (!l->slot[i].path || strcmp(l->slot[i].path, path))
		return 0;
	h = l->slot[i].handle;
	free(l->slot[i].path);
	l->slot[i].path = NULL;
	return h;
}

void tf_links_seen(struct tfuse *t, const char *path, const struct tessera_stat *ts)
{
	struct link_names *l = &t->links;

	if (!t->writeback || !S_ISREG(ts->mode))
		return;
	pthread_mutex_lock(&l->lock);
	if (ts->nlink > 1)
		put_name(l, path, ts->handle);
	else
		take_name(l, path);
	pthread_mutex_unlock(&l->lock);
}

/* One name's fix (see the header), a job of its own (fuse_job.c). */
struct name_fix {
	uint64_t handle;
	char full[PATH_MAX];
};

static int fix_name(struct tfuse *t, void *arg)
{
	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	const struct name_fix *x = arg;
	struct stat st;
	int fd = open(x->full, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	(void)t;
	if (fd < 0)
		return 0;   /* gone, or renamed: nothing of it is cached */
	/* the same file still (st_ino is the handle), and the kernel's own
	 * mtime kept: only its ctime and link count change */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == x->handle) {
		times[1] = st.st_mtim;
		if (utimensat(fd, "", times, AT_EMPTY_PATH))
			fprintf(stderr, "tessera-fuse: cannot set the kernel's ctime of %s, "
				"a hard link: %s\n", x->full, strerror(errno));
	}
	close(fd);
	return 0;
}

/* Start the fix of name (a path in Tessera); NULL when it could not be
 * started (no memory, no thread, a path too long). */
static struct tf_job *fix_start(struct tfuse *t, const char *name, uint64_t handle)
{
	struct name_fix x = { .handle = handle };

	if (snprintf(x.full, sizeof(x.full), "%s%s", t->mount_dir, name) >= (int)sizeof(x.full))
		return NULL;
	return tf_job_start(t, fix_name, &x, sizeof(x), NULL);
}

/* The link count of handle changed through `changed`: fix the kernel's
 * attributes of the file's other remembered names. */
static void fix_other_names(struct tfuse *t, uint64_t handle, const char *changed)
{
	struct link_names *l = &t->links;
	struct tf_job *fix[FIX_NAMES_MAX];
	char *names[FIX_NAMES_MAX];
	struct timespec until;
	unsigned n = 0;

	if (!handle || !t->mount_dir)
		return;
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < LINK_SLOTS && n < FIX_NAMES_MAX; i++)
		if (l->slot[i].path && l->slot[i].handle == handle &&
		    (!changed || strcmp(l->slot[i].path, changed)) &&
		    (names[n] = strdup(l->slot[i].path)))
			n++;
	pthread_mutex_unlock(&l->lock);
	for (unsigned i = 0; i < n; i++) {
		fix[i] = fix_start(t, names[i], handle);
		free(names[i]);
	}
	tf_deadline(&until, FIX_NAME_WAIT_MS);
	for (unsigned i = 0; i < n; i++)
		if (fix[i])
			(void)tf_job_wait(fix[i], &until);
}

void tf_links_linked(struct tfuse *t, const char *from, const char *to,
		     const struct tessera_stat *ts)
{
	struct link_names *l = &t->links;

	if (!t->writeback || !S_ISREG(ts->mode))
		return;
	pthread_mutex_lock(&l->lock);
	put_name(l, from, ts->handle);
	put_name(l, to, ts->handle);
	pthread_mutex_unlock(&l->lock);
	/* from's own inode the kernel updates (fuse_link); to is new */
	fix_other_names(t, ts->handle, from);
}

void tf_links_unlinked(struct tfuse *t, const char *path)
{
	struct link_names *l = &t->links;
	uint64_t h;

	if (!t->writeback)
		return;
	pthread_mutex_lock(&l->lock);
	h = take_name(l, path);
	pthread_mutex_unlock(&l->lock);
	fix_other_names(t, h, NULL);
}

void tf_links_renamed(struct tfuse *t, const char *from, const char *to,
		      enum tf_rename_kind kind)
{
	struct link_names *l = &t->links;
	uint64_t moved, replaced;

	if (!t->writeback)
		return;
	pthread_mutex_lock(&l->lock);
	moved = take_name(l, from);
	replaced = take_name(l, to);
	if (moved)
		put_name(l, to, moved);
	if (replaced && kind == TF_RENAME_SWAP)
		put_name(l, from, replaced);
	pthread_mutex_unlock(&l->lock);
	/* a file replaced by the rename lost a name */
	if (kind == TF_RENAME_MOVE && replaced != moved)
		fix_other_names(t, replaced, NULL);
}

void tf_links_clear(struct tfuse *t)
{
	struct link_names *l = &t->links;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < LINK_SLOTS; i++) {
		free(l->slot[i].path);
		l->slot[i].path = NULL;
	}
	pthread_mutex_unlock(&l->lock);
}
