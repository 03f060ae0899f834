/*
 * fuse_answer.c - the attributes a change left, kept for the question
 * that follows it: libfuse's after a setattr, the kernel's about a
 * directory whose entries changed.
 *
 * libfuse's high-level setattr runs the change (chmod, chown, utimens,
 * in that order, each stopping the chain if it fails) and then, in the
 * same thread, getattr of the same path, whose answer goes back to the
 * kernel. The metadata daemon's reply to the change already holds those
 * attributes (tessera_setattr_stat), so that getattr needs no request:
 * one LOOKUP fewer per chmod, chown or touch, and while the file is open
 * for writing (its size unknown to the metadata daemon) no size request
 * to every storage daemon either. `tar xf` makes four such changes per
 * file.
 *
 * One slot per request thread (by its thread id, hashed; a thread whose
 * slot another holds just asks the servers). A change empties the
 * thread's slot before it starts and fills it only if it succeeded; the
 * getattr that follows takes it (path and thread must match), so a slot
 * never answers for anything but the change just made. A truncate blocks
 * the slot until that getattr: the kernel takes the size from its answer
 * (it ignores it after other changes, under the writeback cache), which
 * only the storage daemons know while the file is open for writing. A
 * slot older than ANSWER_TTL_NS is not used (a chain libfuse ended
 * without a getattr).
 *
 * Directories the same way: a create, mkdir, mknod, symlink, link,
 * unlink or rmdir makes the kernel drop its attributes of the directory,
 * and ask them (GETATTR) before its next permission check there: the
 * next create or unlink of `tar xf` or `rm -rf`. The metadata daemon's
 * reply to the change holds them (tessera_dir_watch); kept by the
 * directory's path, taken once, within ANSWER_TTL_NS; forgotten when this
 * mount removes or renames the directory or changes its attributes.
 * Another client's change of the directory in that time is seen at the
 * kernel's next question, as for any attributes the kernel caches
 * (attr_timeout).
 */
#define FUSE_USE_VERSION 312
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuse_int.h"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned slot_of(pid_t tid)
{
	return (unsigned)tid % ANSWER_SLOTS;
}

static void empty(struct tf_answer *a)
{
	free(a->path);
	a->path = NULL;
	a->tid = 0;
	a->blocked = 0;
}

/* Whether `a` is me's block, still in force. */
static int blocked_for(const struct tf_answer *a, pid_t me)
{
	return a->tid == me && a->blocked && mono_ns() - a->at_ns < ANSWER_TTL_NS;
}

void tf_answer_clear(struct tfuse *t)
{
	pid_t me = gettid();
	struct tf_answer *a = &t->answers.slot[slot_of(me)];

	pthread_mutex_lock(&t->answers.lock);
	if (a->tid == me && !blocked_for(a, me))
		empty(a);
	pthread_mutex_unlock(&t->answers.lock);
}

void tf_answer_block(struct tfuse *t)
{
	pid_t me = gettid();
	struct tf_answer *a = &t->answers.slot[slot_of(me)];

	pthread_mutex_lock(&t->answers.lock);
	empty(a);
	a->tid = me;
	a->blocked = 1;
	a->at_ns = mono_ns();
	pthread_mutex_unlock(&t->answers.lock);
}

void tf_answer_keep(struct tfuse *t, const char *path, const struct tessera_stat *st,
		    int sized)
{
	pid_t me = gettid();
	struct tf_answer *a = &t->answers.slot[slot_of(me)];
	char *copy = strdup(path);

	if (!copy)
		return;
	pthread_mutex_lock(&t->answers.lock);
	if (blocked_for(a, me) ||
	    (a->tid && a->tid != me && mono_ns() - a->at_ns < ANSWER_TTL_NS)) {
		/* a truncate in this chain, or another thread's slot still
		 * fresh: leave it (our getattr asks) */
		pthread_mutex_unlock(&t->answers.lock);
		free(copy);
		return;
	}
	empty(a);
	a->tid = me;
	a->path = copy;
	a->st = *st;
	a->sized = sized;
	a->at_ns = mono_ns();
	pthread_mutex_unlock(&t->answers.lock);
}

int tf_answer_take(struct tfuse *t, const char *path, struct tessera_stat *st,
		   int *sized)
{
	pid_t me = gettid();
	struct tf_answer *a = &t->answers.slot[slot_of(me)];
	int found = 0;

	pthread_mutex_lock(&t->answers.lock);
	if (a->tid == me) {
		found = a->path && !strcmp(a->path, path) && mono_ns() - a->at_ns < ANSWER_TTL_NS;
		if (found) {
			*st = a->st;
			*sized = a->sized;
		}
		empty(a);
	}
	pthread_mutex_unlock(&t->answers.lock);
	return found;
}

static unsigned dir_slot(const char *path)
{
	unsigned h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % DIR_SLOTS;
}

void tf_dir_changed(const char *dir, const struct tessera_stat *st, void *arg)
{
	struct tfuse *t = arg;
	unsigned i = dir_slot(dir);
	char *copy = strdup(dir);

	if (!copy)
		return;
	pthread_mutex_lock(&t->dirs.lock);
	free(t->dirs.slot[i].path);
	t->dirs.slot[i].path = copy;
	t->dirs.slot[i].st = *st;
	t->dirs.slot[i].at_ns = mono_ns();
	pthread_mutex_unlock(&t->dirs.lock);
}

/* path names dir or something under it */
static int within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/' || !strcmp(dir, "/"));
}

void tf_dir_forget(struct tfuse *t, const char *path)
{
	pthread_mutex_lock(&t->dirs.lock);
	for (unsigned i = 0; i < DIR_SLOTS; i++)
		if (t->dirs.slot[i].path && within(t->dirs.slot[i].path, path)) {
			free(t->dirs.slot[i].path);
			t->dirs.slot[i].path = NULL;
		}
	pthread_mutex_unlock(&t->dirs.lock);
}

int tf_dir_take(struct tfuse *t, const char *path, struct tessera_stat *st)
{
	unsigned i = dir_slot(path);
	int found = 0;

	pthread_mutex_lock(&t->dirs.lock);
	if (t->dirs.slot[i].path && !strcmp(t->dirs.slot[i].path, path)) {
		found = mono_ns() - t->dirs.slot[i].at_ns < ANSWER_TTL_NS;
		if (found)
			*st = t->dirs.slot[i].st;
		free(t->dirs.slot[i].path);
		t->dirs.slot[i].path = NULL;
	}
	pthread_mutex_unlock(&t->dirs.lock);
	return found;
}

void tf_answers_clear(struct tfuse *t)
{
	pthread_mutex_lock(&t->answers.lock);
	for (unsigned i = 0; i < ANSWER_SLOTS; i++)
		empty(&t->answers.slot[i]);
	pthread_mutex_unlock(&t->answers.lock);
	pthread_mutex_lock(&t->dirs.lock);
	for (unsigned i = 0; i < DIR_SLOTS; i++) {
		free(t->dirs.slot[i].path);
		t->dirs.slot[i].path = NULL;
	}
	pthread_mutex_unlock(&t->dirs.lock);
}
