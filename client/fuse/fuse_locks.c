/*
 * fuse_locks.c - fcntl (POSIX and OFD) and flock(2) locks on the mount,
 * held in the storage daemons' lock tables, so they conflict with the
 * same locks taken through any other mount (another node) and with the
 * library's tessera_lock_* locks (the MPI-IO driver's atomic mode).
 *
 * The POSIX bookkeeping lives here, because a lock owner (the kernel's:
 * a process, or an open file description) belongs to one mount: for each
 * file and owner, the ranges it holds, each one record lock
 * (tessera_lock_record) whose owner is the kernel's lock owner id. Record
 * locks of one owner never conflict with each other at the daemons, so a
 * change (a new lock over old ones, an upgrade, a downgrade, an unlock
 * of part of a range) takes the new locks first, the kept pieces of the
 * old ones next, and only then releases the old: another owner never sees
 * a byte free that this owner keeps, and a change that cannot be had
 * (EAGAIN) changes nothing. Ranges of one owner are not merged: locking
 * bytes one at a time leaves one record lock each.
 *
 * flock(2) locks are record locks on the reserved byte past every file
 * offset (TESSERA_RECORD_FLOCK), owned by the open file description, so
 * they never conflict with fcntl locks, as on Linux; a conversion
 * (shared <-> exclusive) is atomic here (Linux drops the old lock first).
 *
 * Waiting (F_SETLKW, flock without LOCK_NB) asks again after a pause that
 * grows from 1 ms to 50 ms, so it is interrupted by a signal (EINTR, when
 * libfuse sees the kernel's interrupt) and it is not fair. A wait for an
 * fcntl lock that lasts deadlock_ms is taken for a deadlock (two waiters
 * on two mounts, each holding what the other wants, cannot be seen
 * from one mount) and answered EDEADLK, as fcntl(2) documents. flock
 * waits are unbounded, as on Linux.
 *
 * F_GETLK asks the storage daemons (LOCK_TEST; nothing is taken) for the
 * lowest lock the asked one would meet, the asking owner's own locks
 * aside, and reports its mode and range (the range of its piece on the
 * storage object that holds that byte; a whole-file lock shows as one)
 * with l_pid 0: the holder may be on another node. A conflict with
 * another owner of this mount is answered by libfuse itself, from its own
 * record, with the holder's range and pid.
 *
 * OFD locks are the kernel's to drop when their open file description
 * is closed, but FUSE does not pass that unlock on (it leaves unlocks at
 * close to flush, which names the process, not the description), so the
 * mount's release of a description drops every lock still taken through
 * it (tf_locks_forget): by then each process that closed it has had its
 * POSIX locks dropped by its flush, so only OFD locks can be left.
 *
 * Each file with locks is opened once more by the mount (as root when
 * the mount runs as root, else as the caller), and closed with its last
 * lock, so locks outlive the descriptor they were taken through.
 * One mutex orders every change of the mount's locks; no wait holds it.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "fuse_locks.h"

#define PAUSE_MIN_NS 1000000L   /* 1 ms */
#define PAUSE_MAX_NS 50000000L  /* 50 ms */

/* One range an owner holds: [start, end), as one record lock. */
struct tf_seg {
	struct tf_seg *next;
	int mode;                /* TESSERA_LOCK_READ or _WRITE */
	uint64_t start, end;
	tessera_lock *lock;
	const tessera_file *via; /* the open it was taken through (tf_locks_forget) */
};

struct tf_owner {
	struct tf_owner *next;
	uint64_t id;             /* the kernel's lock owner (nonzero) */
	struct tf_seg *segs;     /* not sorted; never overlapping */
};

/* A file with locks. */
struct tf_file {
	struct tf_file *next;
	uint64_t key;            /* the object handle of its slot 0 */
	tessera_file *file;      /* the mount's own open, for its locks */
	struct tf_owner *owners;
};

struct tf_locks {
	tessera_fs *fs;
	uint32_t deadlock_ms;
	enum tf_cache cache;
	pthread_mutex_t mu;      /* everything below */
	struct tf_file *files;
};

/* How a lock change waits for a conflicting lock to go. */
enum tf_wait {
	TF_NOWAIT,       /* F_SETLK, LOCK_NB: EAGAIN */
	TF_WAIT_BOUNDED, /* F_SETLKW: EDEADLK after deadlock_ms */
	TF_WAIT_FOREVER, /* flock: until granted or interrupted */
};

int tf_locks_create(tessera_fs *fs, uint32_t deadlock_ms, enum tf_cache cache,
		    struct tf_locks **out)
{
	struct tf_locks *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->fs = fs;
	l->deadlock_ms = deadlock_ms;
	l->cache = cache;
	pthread_mutex_init(&l->mu, NULL);
	*out = l;
	return 0;
}

static void seg_free(struct tf_seg *s)
{
	tessera_unlock(s->lock);
	free(s);
}

static void file_free(struct tf_file *tf)
{
	while (tf->owners) {
		struct tf_owner *o = tf->owners;

		tf->owners = o->next;
		while (o->segs) {
			struct tf_seg *s = o->segs;

			o->segs = s->next;
			seg_free(s);
		}
		free(o);
	}
	tessera_close(tf->file);
	free(tf);
}

void tf_locks_destroy(struct tf_locks *l)
{
	if (!l)
		return;
	while (l->files) {
		struct tf_file *tf = l->files;

		l->files = tf->next;
		file_free(tf);
	}
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* ------------------------------------------------------------ records */

static uint64_t file_key(tessera_file *f)
{
	struct tessera_layout lay;

	return tessera_file_layout(f, &lay) ? 0 : lay.handles[0];
}

static struct tf_file *file_find(struct tf_locks *l, uint64_t key)
{
	for (struct tf_file *tf = l->files; tf; tf = tf->next)
		if (tf->key == key)
			return tf;
	return NULL;
}

/* The mount's own open of the file at path (see the header comment). */
static int file_open(struct tf_locks *l, const char *path, tessera_file **out)
{
	int rc;

	if (geteuid() == 0) {
		struct tessera_cred root = { 0, 1, { 0 } };

		tessera_set_thread_cred(l->fs, &root);
	}
	rc = tessera_open(l->fs, path, O_RDWR, 0, NULL, out);
	if (rc == -EACCES || rc == -EPERM || rc == -EISDIR)
		rc = tessera_open(l->fs, path, O_RDONLY, 0, NULL, out);
	return rc;
}

/* The file's and owner's records, made if `make` (else NULL when absent). */
static int records(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		   int make, struct tf_file **tfp, struct tf_owner **op)
{
	uint64_t key = file_key(f);
	struct tf_file *tf = file_find(l, key);
	struct tf_owner *o = NULL;
	int rc;

	*tfp = NULL;
	*op = NULL;
	if (!tf && make) {
		if (!(tf = calloc(1, sizeof(*tf))))
			return -ENOMEM;
		if ((rc = file_open(l, path, &tf->file))) {
			free(tf);
			return rc;
		}
		tf->key = key;
		tf->next = l->files;
		l->files = tf;
	}
	*tfp = tf; /* from here on the caller prunes it */
	for (o = tf ? tf->owners : NULL; o && o->id != owner; o = o->next)
		;
	if (tf && !o && make) {
		if (!(o = calloc(1, sizeof(*o))))
			return -ENOMEM;
		o->id = owner;
		o->next = tf->owners;
		tf->owners = o;
	}
	*op = o;
	return 0;
}

/* Owners without locks and files without owners go (the file's open
 * with them). */
static void prune(struct tf_locks *l, struct tf_file *tf)
{
	for (struct tf_owner **op = &tf->owners; *op;) {
		struct tf_owner *o = *op;

		if (o->segs) {
			op = &o->next;
			continue;
		}
		*op = o->next;
		free(o);
	}
	if (tf->owners)
		return;
	for (struct tf_file **fp = &l->files; *fp; fp = &(*fp)->next)
		if (*fp == tf) {
			*fp = tf->next;
			break;
		}
	file_free(tf);
}

/* ------------------------------------------------------------ changes */

static int seg_take(struct tf_file *tf, struct tf_owner *o, int mode, uint64_t start,
		    uint64_t end, const tessera_file *via, struct tf_seg **list)
{
	struct tf_seg *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	rc = tessera_lock_record(tf->file, mode, o->id, start, end, &s->lock);
	if (rc) {
		free(s);
		return rc;
	}
	s->mode = mode;
	s->start = start;
	s->end = end;
	s->via = via;
	s->next = *list;
	*list = s;
	return 0;
}

static void list_free(struct tf_seg *s)
{
	while (s) {
		struct tf_seg *next = s->next;

		seg_free(s);
		s = next;
	}
}

/* The owner holds [start, end) in `mode` already (within one range). */
static int already_held(const struct tf_owner *o, int mode, uint64_t start, uint64_t end)
{
	for (const struct tf_seg *s = o->segs; s; s = s->next)
		if (s->mode == mode && s->start <= start && end <= s->end)
			return 1;
	return 0;
}

/* The pieces of the owner's ranges that stick out of [start, end), each
 * taken as a lock of its own onto *add. */
static int take_kept(struct tf_file *tf, struct tf_owner *o, uint64_t start, uint64_t end,
		     struct tf_seg **add)
{
	int rc = 0;

	for (struct tf_seg *s = o->segs; s && !rc; s = s->next) {
		if (s->end <= start || s->start >= end)
			continue;
		if (s->start < start)
			rc = seg_take(tf, o, s->mode, s->start, start, s->via, add);
		if (!rc && s->end > end)
			rc = seg_take(tf, o, s->mode, end, s->end, s->via, add);
	}
	return rc;
}

/* POSIX: the owner's locks on [start, end) become `mode` (0: none). New
 * first (EAGAIN: nothing changed), then the kept pieces of the ranges it
 * overlaps, then those ranges go. */
static int owner_set(struct tf_file *tf, struct tf_owner *o, int mode, uint64_t start,
		     uint64_t end, const tessera_file *via)
{
	struct tf_seg *add = NULL, **sp;
	int rc = 0;

	if (mode && already_held(o, mode, start, end))
		return 0;
	if (mode && (rc = seg_take(tf, o, mode, start, end, via, &add)))
		return rc;
	if ((rc = take_kept(tf, o, start, end, &add))) {
		list_free(add);
		return rc;
	}
	for (sp = &o->segs; *sp;) {
		struct tf_seg *s = *sp;

		if (s->end <= start || s->start >= end) {
			sp = &s->next;
			continue;
		}
		*sp = s->next;
		seg_free(s);
	}
	while (add) {
		struct tf_seg *s = add;

		add = s->next;
		s->next = o->segs;
		o->segs = s;
	}
	return 0;
}

/* One attempt, under the mutex. */
static int set_once(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		    int mode, uint64_t start, uint64_t end)
{
	struct tf_file *tf = NULL;
	struct tf_owner *o = NULL;
	int rc;

	pthread_mutex_lock(&l->mu);
	rc = records(l, path, f, owner, mode != 0, &tf, &o);
	if (!rc && o)
		rc = owner_set(tf, o, mode, start, end, f);
	if (tf)
		prune(l, tf);
	pthread_mutex_unlock(&l->mu);
	return rc;
}

/* With the kernel's page cache (the writeback cache), dirty pages must
 * reach the daemons before an unlock, and pages cached before a lock must
 * not be read under it: dropping the file's cache does both (the kernel
 * writes dirty pages back as it drops them). */
static void cache_drop(const struct tf_locks *l, const char *path)
{
	struct fuse_context *c = fuse_get_context();

	if (l->cache == TF_CACHE_DROP && c && c->fuse)
		fuse_invalidate_path(c->fuse, path);
}

/* The owner holds a lock on a byte of [start, end) of the file. */
static int holds_any(struct tf_locks *l, tessera_file *f, uint64_t owner, uint64_t start,
		     uint64_t end)
{
	struct tf_file *tf;
	struct tf_owner *o = NULL;
	int found = 0;

	pthread_mutex_lock(&l->mu);
	tf = file_find(l, file_key(f));
	for (o = tf ? tf->owners : NULL; o && o->id != owner; o = o->next)
		;
	for (const struct tf_seg *s = o ? o->segs : NULL; s && !found; s = s->next)
		found = s->start < end && start < s->end;
	pthread_mutex_unlock(&l->mu);
	return found;
}

static int set_lock(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		    int mode, uint64_t start, uint64_t end, enum tf_wait wait)
{
	long pause = PAUSE_MIN_NS;
	uint64_t waited_ns = 0;
	int rc;

	if (!mode) {
		/* Every close unlocks all of its owner's locks: most hold none. */
		if (!holds_any(l, f, owner, start, end))
			return 0;
		cache_drop(l, path);
	}
	for (;;) {
		struct timespec ts = { 0, pause };

		rc = set_once(l, path, f, owner, mode, start, end);
		if (rc != -EAGAIN || wait == TF_NOWAIT)
			break;
		if (fuse_interrupted()) {
			rc = -EINTR;
			break;
		}
		if (wait == TF_WAIT_BOUNDED && waited_ns >= (uint64_t)l->deadlock_ms * 1000000u) {
			fprintf(stderr, "tessera-fuse: lock %s: waited %u ms, taken for a deadlock "
				"(EDEADLK)\n", path, l->deadlock_ms);
			rc = -EDEADLK;
			break;
		}
		nanosleep(&ts, NULL);
		waited_ns += (uint64_t)pause;
		if (pause < PAUSE_MAX_NS)
			pause = pause * 2 > PAUSE_MAX_NS ? PAUSE_MAX_NS : pause * 2;
	}
	if (!rc && mode)
		cache_drop(l, path);
	return rc;
}

/* ------------------------------------------------------------ fcntl */

/* The kernel gives absolute ranges (l_whence SEEK_SET, l_len >= 0, 0 for
 * "to the end"); anything else, or a range past the largest offset, is
 * refused as fcntl refuses it. */
static int range_of(const struct flock *fl, uint64_t *start, uint64_t *end)
{
	if (fl->l_whence != SEEK_SET || fl->l_start < 0 || fl->l_len < 0)
		return -EINVAL;
	*start = (uint64_t)fl->l_start;
	if (!fl->l_len) {
		*end = TESSERA_RECORD_END;
		return 0;
	}
	if ((uint64_t)fl->l_len > TESSERA_RECORD_END - *start)
		return -EOVERFLOW;
	*end = *start + (uint64_t)fl->l_len;
	return 0;
}

static int mode_of(short type)
{
	return type == F_RDLCK ? TESSERA_LOCK_READ : type == F_WRLCK ? TESSERA_LOCK_WRITE : 0;
}

/* F_GETLK: the storage daemons name the lowest conflicting lock (the
 * asking owner's own do not count). */
static int test_lock(tessera_file *f, uint64_t owner, struct flock *fl, uint64_t start,
		     uint64_t end)
{
	struct tessera_lock_conflict cf;
	int rc = tessera_lock_record_test(f, mode_of(fl->l_type), owner, start, end, &cf);

	if (rc)
		return rc;
	if (!cf.mode) {
		fl->l_type = F_UNLCK;
		return 0;
	}
	fl->l_type = cf.mode == TESSERA_LOCK_READ ? F_RDLCK : F_WRLCK;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)cf.start;
	fl->l_len = cf.end >= TESSERA_RECORD_END ? 0 : (off_t)(cf.end - cf.start);
	fl->l_pid = 0; /* the holder may be on another node */
	return 0;
}

int tf_locks_fcntl(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		   int cmd, struct flock *fl)
{
	uint64_t start, end;
	int rc = range_of(fl, &start, &end), mode = mode_of(fl->l_type);

	if (rc)
		return rc;
	if (!mode && fl->l_type != F_UNLCK)
		return -EINVAL;
	if (!owner)
		owner = 1; /* record owners are nonzero; the kernel's id is a hash */
	switch (cmd) {
	case F_GETLK:
		return mode ? test_lock(f, owner, fl, start, end) : -EINVAL;
	case F_SETLK:
		return set_lock(l, path, f, owner, mode, start, end, TF_NOWAIT);
	case F_SETLKW:
		return set_lock(l, path, f, owner, mode, start, end, TF_WAIT_BOUNDED);
	default:
		return -EINVAL;
	}
}

/* ------------------------------------------------------------ flock */

int tf_locks_flock(struct tf_locks *l, const char *path, tessera_file *f, uint64_t owner,
		   int op)
{
	int what = op & ~LOCK_NB, mode;

	mode = what == LOCK_SH ? TESSERA_LOCK_READ : what == LOCK_EX ? TESSERA_LOCK_WRITE : 0;
	if (!mode && what != LOCK_UN)
		return -EINVAL;
	if (!owner)
		owner = 1;
	return set_lock(l, path, f, owner, mode, TESSERA_RECORD_FLOCK, TESSERA_RECORD_FLOCK + 1,
			op & LOCK_NB ? TF_NOWAIT : TF_WAIT_FOREVER);
}

/* ------------------------------------------------------------ release */

void tf_locks_forget(struct tf_locks *l, const tessera_file *via)
{
	pthread_mutex_lock(&l->mu);
	for (struct tf_file *tf = l->files, *next; tf; tf = next) {
		next = tf->next;
		for (struct tf_owner *o = tf->owners; o; o = o->next)
			for (struct tf_seg **sp = &o->segs; *sp;) {
				struct tf_seg *s = *sp;

				if (s->via != via) {
					sp = &s->next;
					continue;
				}
				*sp = s->next;
				seg_free(s);
			}
		prune(l, tf);
	}
	pthread_mutex_unlock(&l->mu);
}
